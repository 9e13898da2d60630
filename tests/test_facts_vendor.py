"""gpu_vendor from NVIDIA's GPU names and the HIP platform a run was set up for, and CuPy's NVIDIA names on ROCm
(parsers/vendor.py votes, derive/vendor.py counts)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import derived_case

FIXTURES = Path(__file__).parent / "fixtures" / "facts"


def _vendor(text: str) -> str | None:
    return derived_case(text).value("gpu_vendor")


def _votes(text: str) -> list[tuple[str, int]]:
    return [(f.value, f.score) for f in derived_case(text).facts.get("vendor_vote", [])]


def test_cupy_on_rocm_is_amd_although_its_error_is_nvrtcerror() -> None:
    # CuPy built for ROCm on an MI50: https://github.com/cupy/cupy/issues/4216
    text = (FIXTURES / "cupy-rocm-hiprtc-error.txt").read_text()
    assert _vendor(text) == "amd"
    assert ("nvidia", 3) not in _votes(text)


def test_cupy_on_cuda_stays_nvidia() -> None:
    # the same traceback from CuPy on CUDA: https://github.com/mritools/cupyimg/issues/17
    assert _vendor((FIXTURES / "cupy-cuda-nvrtc-error.txt").read_text()) == "nvidia"


def test_cupy_show_config_nvrtc_line_counts_only_without_rocm() -> None:
    # cp.show_config() of CuPy 10 on ROCm 4.5 (gfx906): https://github.com/cupy/cupy/issues/5961
    text = (FIXTURES / "cupy-rocm-show-config.txt").read_text()
    assert _vendor(text) == "amd"
    platform, nvrtc = (next(line for line in text.splitlines() if line.startswith(key)) + "\n"
                       for key in ("CuPy Platform", "NVRTC Version"))
    assert _vendor(platform + nvrtc) == "amd"  # one AMD vote against CuPy's name for hipRTC: no tie
    assert _vendor(nvrtc) == "nvidia"  # CuPy on CUDA prints the same line


def test_hip_platform_nvidia_in_the_environment_votes_nvidia() -> None:
    # HIP on a V100 set up by hand: https://github.com/ROCm/hip/issues/2573
    text = (FIXTURES / "hip-platform-nvidia-v100.txt").read_text()
    assert ("nvidia", 3) in _votes("export HIP_PLATFORM=nvidia\n")
    assert _vendor(text) == "nvidia"


def test_hipconfig_platform_lines() -> None:
    # hipconfig of ROCm 6.2: https://github.com/ROCm/hip/issues/3521
    assert ("amd", 3) in _votes((FIXTURES / "hipconfig-platform-amd.txt").read_text())
    # hipconfig of HIP 3.5 for NVIDIA (Arch's hip-nvcc): https://github.com/rocm-arch/rocm-arch/issues/266 -- "nvcc",
    # which that hipconfig also chose by itself on an AMD machine whose GPU it could not see, is a weak vote only
    text = (FIXTURES / "hipconfig-platform-nvcc.txt").read_text()
    platform = [f for f in derived_case(text).facts["vendor_vote"] if "HIP_PLATFORM" in f.text]
    assert [(f.value, f.score) for f in platform] == [("nvidia", 1)]


def test_a_sentence_about_hip_platform_is_no_vote() -> None:
    assert _votes("I think you should try setting HIP_PLATFORM=nvidia before you run hipcc again\n") == []


def test_datacenter_gpu_named_without_nvidia() -> None:
    # nvidia-smi -L of a driver that did not print the brand, as quoted in the README of NVIDIA's k8s-dra-driver
    assert _vendor((FIXTURES / "nvidia-smi-l-a100.txt").read_text()) == "nvidia"
    assert _vendor("  Device 0: AMD Instinct MI100, gfx908:sramecc+:xnack- (0x908)\n") == "amd"
    assert _votes("Model A100 results: 10% faster\n") == []  # a bare model number is no device line


def test_hiprtc_status_votes_amd_and_llama_cuda_wording_does_not_vote() -> None:
    assert ("amd", 3) in _votes("hiprtc error: HIPRTC_ERROR_COMPILATION\n")
    assert _votes("CUDA error: invalid device function\n") == []


def test_a_processors_integrated_radeon_is_a_weak_vote() -> None:
    # a laptop's Ryzen with a Radeon iGPU beside the NVIDIA card the program ran on: the processor's name is no GPU
    cpu = "system_info: n_threads = 8 / 16 | CPU : AMD Ryzen 7 7840HS w/ Radeon 780M Graphics\n"
    assert _votes(cpu) == [("amd", 1)]
    assert _vendor(cpu + "  Device 0: NVIDIA GeForce RTX 4060 Laptop GPU, compute capability 8.9, VMM: yes\n") == "nvidia"
    assert _votes("CPU: AMD Ryzen 5 5600G with Radeon Graphics\n") == [("amd", 1)]
    # the same line with a strong AMD word of its own still votes strong, and a card's name is a GPU's
    assert _votes("Ryzen 9 7940HS w/ Radeon 780M Graphics, gfx1103\n") == [("amd", 3)]
    assert _votes("GPU: AMD Radeon RX 7900 XTX\n") == [("amd", 3)]


@pytest.mark.parametrize("line", [
    # ollama's server log names the GPU library it loaded: https://github.com/ollama/ollama/issues/5929 (its form)
    'time=2024-07-24T16:07:57.350+02:00 level=INFO source=server.go:168 msg=offload library=rocm layers.requested=-1\n',
    # ggml's ROCm buffer names
    'error loading model: unable to allocate ROCm0 buffer\n',
    'llm_load_tensors:  ROCm_Host buffer size =   281.81 MiB\n',
    # a ROCm library's own test client under gdb
    'Thread 1 "hipblas-test" received signal SIGABRT, Aborted.\n',
    'rocblas-bench -f gemm -r f32_r -m 4096 -n 4096 -k 4096\n',
])
def test_rocm_builds_own_names_say_amd(line: str) -> None:
    assert _vendor(line) == "amd"


def test_cuda_library_in_ollama_is_not_amd() -> None:
    assert _vendor('msg="inference compute" id=GPU-1 library=cuda compute=8.6 name="NVIDIA GeForce RTX 3080"\n') == "nvidia"


def test_pytorch_cudnn_version_check_naming_miopen_versions_is_amd() -> None:
    # PyTorch built on ROCm 5.0 run on ROCm 5.1: https://github.com/xuhuisheng/rocm-gfx803/issues/13 -- ROCm builds call
    # MIOpen "cuDNN", and MIOpen's versions (2.x, 3.x) are not cuDNN's
    miopen = "cuDNN version incompatibility: PyTorch was compiled against (2, 15, 0) but linked against (2, 16, 0)\n"
    assert _vendor(miopen) == "amd"
    assert ("nvidia", 3) not in _votes(miopen)
    # the current wording goes on to say "cuDNN" again: MIOpen's versions still make it AMD's
    current = ("cuDNN version incompatibility: PyTorch was compiled  against (3, 1, 0) but found runtime version (2, 19, 0)."
               " PyTorch already comes bundled with cuDNN.\n")
    assert _vendor(current) == "amd"
    # the same check on CUDA: https://github.com/RaleLee/Co-GAT/issues/2
    cudnn = ("cuDNN version incompatibility: PyTorch was compiled  against (8, 5, 0) but found runtime version (8, 3, 3)."
             " PyTorch already comes bundled with cuDNN.\n")
    assert _vendor(cudnn) == "nvidia"


@pytest.mark.parametrize(("line", "vendor"), [
    # a LAMMPS Kokkos build for CUDA stopped in its own code under gdb: https://github.com/lammps/lammps/issues/272
    ("LAMMPS_NS::PairTersoffKokkos<Kokkos::Cuda>::setup_params (this=0xe2aa5d0) at ../pair_tersoff_kokkos.cpp:130\n",
     "nvidia"),
    ("#3  0x00005555 in Kokkos::Impl::SharedAllocationRecord<Kokkos::CudaUVMSpace, void>::allocate ()\n", "nvidia"),
    # Julia's CUDA.jl crashing in its __init__: https://github.com/SpeedyWeather/SpeedyWeather.jl/issues/334
    ("__init__ at /home/u/.julia/packages/CUDA/ZdCxS/src/initialization.jl:42\n", "nvidia"),
    # NVIDIA's PTX assembler and an architecture-specific target (sm_90a, sm_120a): Inductor's Triton build on a
    # Blackwell GPU, https://github.com/NixOS/nixpkgs/issues/406675
    ("ptxas /tmp/tmpmwke15zw.ptx, line 6; error   : PTX .version 8.4 does not support .target sm_120a\n", "nvidia"),
    # XLA's CUDA stream executor in its glog line: https://github.com/jax-ml/jax/issues/22416
    ("E0715 18:02:17.586518  591934 cuda_dnn.cc:523] Loaded runtime CuDNN library: 9.0.0 but source was compiled with: "
     "9.1.1.\n", "nvidia"),
    # AMD's counterparts are no NVIDIA vote
    ("E0715 18:02:17.586518  591934 rocm_dnn.cc:523] MIOpen status: miopenStatusUnknownError\n", None),
    ("#3  0x00005555 in Kokkos::Impl::SharedAllocationRecord<Kokkos::HIPSpace, void>::allocate ()\n", None),
    ("wait! at /home/u/.julia/packages/AMDGPU/PtNLZ/src/sync.jl:20\n", None),
])
def test_backends_only_built_for_nvidia_vote_nvidia(line: str, vendor: str | None) -> None:
    assert ("nvidia", 3) in _votes(line) if vendor else all(v != "nvidia" for v, _ in _votes(line))


def test_numba_roc_probe_saying_rocm_is_absent_is_no_amd_vote() -> None:
    # numba -s's warning log on a machine without ROCm (an NVIDIA one): https://github.com/numba/numba/issues/8006
    probe = ("Warning (roc): Error initialising ROC: No ROC toolchains found.\n"
             "Warning (roc): No HSA Agents found, encountered exception when searching: Error at driver init: \n"
             "NUMBA_HSA_DRIVER /opt/rocm/lib/libhsa-runtime64.so is not a valid file path.  Note it must be a filepath"
             " of the .so/.dll/.dylib or the driver:\n")
    assert _vendor(probe) is None
    assert _vendor(probe + "GPU 0: NVIDIA GeForce RTX 3060 (UUID: GPU-1234)\n") == "nvidia"
    # a ROCm path on another line still votes AMD
    assert _vendor(probe + "ROCm version: 6.2.0\nhipErrorNoBinaryForGpu\n") == "amd"


_MOJO_SUPPORTED_LIST = (
    "oss/modular/mojo/stdlib/std/gpu/host/info.mojo:2169:5: note: constraint failed: Unknown GPU architecture detected.\n"
    "\n"
    "Supported GPU architectures:\n"
    "\n"
    "  NVIDIA: sm_52 (Maxwell), sm_60/sm_61 (Pascal), sm_75 (Turing), sm_80 (Ampere A100), sm_89 (Ada L4/RTX4090),"
    " sm_90/sm_90a (Hopper H100), sm_120/sm_120a (Blackwell RTX5090)\n"
)


def test_a_programs_list_of_supported_cuda_targets_is_no_nvidia_vote() -> None:
    # Mojo prints its supported targets after its GPU check fails, whatever the GPU: https://github.com/modular/modular/issues/6807
    assert [v for v, _ in _votes(_MOJO_SUPPORTED_LIST) if v == "nvidia"] == []
    assert _vendor(_MOJO_SUPPORTED_LIST) != "nvidia"


def test_one_cuda_target_beside_an_nvidia_device_still_votes_nvidia() -> None:
    text = "ptxas fatal   : Value 'sm_52' is not defined for option 'gpu-name' (NVIDIA GeForce GTX 970)\n"
    assert "nvidia" in [v for v, _ in _votes(text)]
