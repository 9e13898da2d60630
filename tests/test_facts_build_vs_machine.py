"""What a program was built for is no fact of the machine's GPU (parsers/envfacts.py leaves build settings to
parsers/buildtargets.py); the GPU HIP's loader found no code object for is the machine's, as the runtime reports it,
and derive/gpu.py takes it for ``gfx_arch_real`` when nothing stronger names the arch, never under its own override."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import derived_case, fact_values

FIXTURES = Path(__file__).parent / "fixtures" / "facts"

# The fat-binary loader's error (level 1), in the wording of ROCm 7 and of the release before, as
# https://github.com/ROCm/rocm-systems/pull/5164 changed it
ADVICE = (":1:hip_fatbin.cpp           :631 : 2406918375 us: [pid:41711 tid:0x7f3c5a9ff740] No compatible code objects "
          "with HIP_FORCE_SPIRV_CODEOBJECT: 0. Rebuild the application with option --offload-arch=gfx1201\n")
BEFORE = (":1:hip_fatbin.cpp           :639 : 2406918375 us: [pid:41711 tid:0x7f3c5a9ff740] No compatible code objects "
          "found for: {arch}, value of HIP_FORCE_SPIRV_CODEOBJECT: 0\n")
# rocminfo's ISA line of an agent: https://github.com/ROCm/legacy-rocm-build/issues/1180
ROCMINFO_ISA = "      Name:                    amdgcn-amd-amdhsa--gfx1030         \n"


# --- build settings are build targets, never the machine's arch -------------------------------------------------

def test_acpp_targets_of_a_compile_command() -> None:
    # AdaptiveCpp's compiler run for an RX 6000 GPU: https://github.com/AdaptiveCpp/AdaptiveCpp/issues/1459
    case = derived_case((FIXTURES / "acpp-targets-hip-gfx1030.txt").read_text())
    assert fact_values(case, "build_targets") == ["gfx1030"]
    assert fact_values(case, "gfx_arch") == [] and case.value("gfx_arch_real") is None


def test_acpp_targets_after_an_environment_prefix() -> None:
    # on an MI100: https://github.com/AdaptiveCpp/AdaptiveCpp/issues/1211
    case = derived_case("LD_PRELOAD=/opt/rocm/lib/libamdhip64.so acpp --acpp-targets=hip:gfx908 -v test.cpp\n")
    assert fact_values(case, "build_targets") == ["gfx908"]
    assert fact_values(case, "gfx_arch") == []


def test_hipsycl_targets_and_the_clang_line_they_make() -> None:
    # syclcc's dry run, HIP and CUDA targets, and the clang++ command it prints (--cuda-gpu-arch=gfx1032, the kernel
    # file named hipfb-gfx1032): https://github.com/AdaptiveCpp/AdaptiveCpp/issues/830
    case = derived_case((FIXTURES / "hipsycl-targets-dryrun.txt").read_text())
    assert set(fact_values(case, "build_targets")) == {"gfx1032"}  # one per line
    assert fact_values(case, "gfx_arch") == [] and fact_values(case, "gfx_archs") == []


@pytest.mark.parametrize("line, targets", [
    # https://github.com/evshiron/rocm_lab scripts/build_torch.sh
    ("export PYTORCH_ROCM_ARCH=gfx1100\n", ["gfx1100"]),
    # https://github.com/jmheder/gfx803-Rocm-Fedora scripts/51-pythontorch.sh
    ('export PYTORCH_ROCM_ARCH="gfx803"   # Important for correct HIP target\n', ["gfx803"]),
    # https://github.com/jacazek/rocm-build scripts/pytorch-build.sh (flash-attention's GPU_ARCHS beside PyTorch's)
    ("export PYTORCH_ROCM_ARCH=gfx908\nexport GPU_ARCHS=gfx908\n", ["gfx908"]),
])
def test_pytorch_rocm_arch_of_a_build_script(line: str, targets: list[str]) -> None:
    case = derived_case(line)
    assert sorted(set(fact_values(case, "build_targets"))) == targets
    assert fact_values(case, "gfx_arch") == []


def test_docker_build_argument() -> None:
    # https://github.com/AMD-AGI/Primus-SaFE Bench/pytorch/build_rocm6.4.3_gfx942.sh
    case = derived_case('docker buildx build . -f pytorch/Dockerfile \\\n  --build-arg GPU_ARCHS="gfx942" \\\n')
    assert fact_values(case, "gfx_arch") == []


@pytest.mark.parametrize("line", [
    "export HCC_AMDGPU_TARGET=gfx803",                      # hcc's variable
    "HCC_AMDGPU_TARGETS=gfx900,gfx906 make",
    "cmake -DCMAKE_HIP_ARCHITECTURES=gfx90a ..",            # CMake's HIP language
    "set(CMAKE_HIP_ARCHITECTURES gfx1030)",
    "GFX_ARCH ?= gfx906",                                   # Makefile settings
    "AMDGPU_TARGET := gfx90a",
    "AMDGPU_ARCH?=gfx90a",
    "ROCM_ARCH=gfx1030 python setup.py install",            # an unprefixed ROCM_ARCH and Torch's own name for it
    "TORCH_ROCM_ARCH=gfx1030",
    "hipcc --amdgpu-target=gfx906 -o saxpy saxpy.cpp",      # hipcc's flag before --offload-arch
    "ACPP_TARGETS=hip:gfx90a cmake ..",
    "OPENSYCL_TARGETS='hip:gfx1100'",
])
def test_build_settings_name_no_machine_arch(line: str) -> None:
    case = derived_case(line + "\n")
    assert fact_values(case, "gfx_arch") == [], line
    assert fact_values(case, "gfx_archs") == [], line


def test_the_machine_gpu_beside_a_build_setting_is_kept() -> None:
    # collect_env's device line (https://github.com/vllm-project/vllm/issues/34154) and a build script's setting
    # (evshiron/rocm_lab, as above; a GPU named before the setting on its line is the machine's)
    text = ("GPU models and configuration : AMD Radeon RX 7900 XTX (gfx1100)\n"
            "export PYTORCH_ROCM_ARCH=gfx1030\n"
            "GPU: gfx1100 (built with PYTORCH_ROCM_ARCH=gfx1030)\n")
    case = derived_case(text)
    assert set(fact_values(case, "gfx_arch")) == {"gfx1100"}
    assert case.value("gfx_arch_real") == "gfx1100"
    assert "gfx1030" in fact_values(case, "build_targets")
    assert case.value("arch_in_build_targets") == "no"


def test_a_lower_case_word_is_no_setting() -> None:
    # hip-triage's own field name, and rocminfo's agent name, are not build settings
    case = derived_case("gfx_arch: gfx1100\n  Name:                    gfx1100\n")
    assert case.value("gfx_arch") == "gfx1100"


# --- the GPU the loader found no code object for ---------------------------------------------------------------

def test_the_loaders_gpu_is_the_real_arch_when_nothing_else_names_it() -> None:
    # OpenVX's HIP backend on a GPU its kernels were not built for: https://github.com/ROCm/MIVisionX/issues/1437
    case = derived_case((FIXTURES / "openvx-no-compatible-code-object.txt").read_text())
    assert fact_values(case, "missing_code_object_arch") == ["gfx1030"]
    assert case.value("gfx_arch_real") == "gfx1030"
    assert case.value("gpu_family") is not None  # the tables know gfx1030: family, APU and support follow


def test_rocm7_advice_and_a_target_ids_features() -> None:
    assert derived_case(ADVICE).value("gfx_arch_real") == "gfx1201"
    assert derived_case(BEFORE.format(arch="gfx90a:sramecc+:xnack-")).value("gfx_arch_real") == "gfx90a"


def test_an_agent_line_outranks_the_loader() -> None:
    # rocminfo names the agent; the loader's line may be another device's (an iGPU the build lacks)
    case = derived_case(ROCMINFO_ISA + ADVICE)
    assert case.value("gfx_arch_real") == "gfx1030"


def test_a_device_name_outranks_the_loader() -> None:
    case = derived_case("GPU models and configuration : AMD Radeon RX 7900 XTX (gfx1100)\n" + ADVICE)
    assert case.value("gfx_arch_real") == "gfx1100"
    case = derived_case("GPU: AMD Radeon RX 7900 XTX\n" + ADVICE)
    assert case.value("gfx_arch_real") == "gfx1100"


def test_loader_lines_of_two_gpus_say_nothing() -> None:
    # a machine whose iGPU and card both lack code objects names two processors: no answer
    case = derived_case(BEFORE.format(arch="gfx1036") + ADVICE)
    assert case.value("gfx_arch_real") is None


def test_under_an_override_the_loader_names_the_overrides_arch() -> None:
    # a Raphael iGPU run as gfx1030: the loader looked for gfx1030 code objects
    # (https://vmafx.github.io/vmafx/adr/0561-hip-gfx-targets-fallback-widening/)
    text = "export HSA_OVERRIDE_GFX_VERSION=10.3.0\nhip_fatbin.cpp: No compatible code objects found for: gfx1030\n"
    case = derived_case(text)
    assert fact_values(case, "missing_code_object_arch") == ["gfx1030"]
    assert case.value("override_arch") == "gfx1030"
    assert case.value("gfx_arch_real") is None
    # the product still names the real GPU, and the loader's line does not overrule it nor the override
    case = derived_case("GPU: AMD Radeon RX 6700 XT\nexport HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
                 + BEFORE.format(arch="gfx1030"))
    assert case.value("gfx_arch_real") == "gfx1031"
    assert case.value("override_arch") == "gfx1030"


def test_a_loader_gpu_other_than_the_overrides_is_the_device_without_it() -> None:
    # the override advised for gfx1151 (https://github.com/pytorch/pytorch/issues/164346) not in effect: the loader
    # still names the device's own processor; the override's arch stays the one it names
    case = derived_case("export HSA_OVERRIDE_GFX_VERSION=11.0.0\n" + BEFORE.format(arch="gfx1151"))
    assert case.value("gfx_arch_real") == "gfx1151"
    assert case.value("override_arch") == "gfx1100"


def test_a_run_time_compile_for_the_gpu_in_use_still_names_it() -> None:
    # comgr's arguments when hiprtc compiles a kernel for the device at run time (-mcpu is no build setting):
    # https://github.com/ROCm/hip/issues/3410
    line = '    Compilation Args:  "-target" "amdgcn-amd-amdhsa" "-mcpu=gfx1030" "-c" "-mllvm" "-amdgpu-internalize-symbols"\n'
    assert fact_values(derived_case(line), "gfx_arch") == ["gfx1030"]
