"""Build targets from build lines (compiler flags, CMake and AdaptiveCpp variables) go to ``build_targets``; the
GPU a ROCm 7 loader names in its advice to rebuild is the arch the build lacks, not a target (parsers/buildtargets.py)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import derived_case, fact_values

FIXTURES = Path(__file__).parent / "fixtures" / "facts"

# ROCm 7's fat-binary loader (level 1, its error level), as its message reads since
# https://github.com/ROCm/rocm-systems/pull/5164, and as it read before that change
ADVICE = (":1:hip_fatbin.cpp           :631 : 2406918375 us: [pid:41711 tid:0x7f3c5a9ff740] No compatible code objects "
          "with HIP_FORCE_SPIRV_CODEOBJECT: 0. Rebuild the application with option --offload-arch=gfx1201\n")
BEFORE = (":1:hip_fatbin.cpp           :639 : 2406918375 us: [pid:41711 tid:0x7f3c5a9ff740] No compatible code objects "
          "found for: gfx90a:sramecc+:xnack-, value of HIP_FORCE_SPIRV_CODEOBJECT: 0\n")


def test_offload_arch_of_a_compile_line_is_a_build_target_not_the_gpu() -> None:
    # DPC++'s lit run compiling for gfx1031: https://github.com/intel/llvm/issues/14989
    case = derived_case((FIXTURES / "clang-offload-arch.txt").read_text())
    assert fact_values(case, "build_targets") == ["gfx1031"]
    assert fact_values(case, "gfx_arch") == [] and case.value("gfx_arch_real") is None


def test_hip_compile_line_of_a_cmake_build() -> None:
    # hiop's HIP sources compiled for gfx90a by spack: https://github.com/spack/spack/issues/30181
    line = "/opt/rocm-4.5.2/include -O2 -g -DNDEBUG -fPIC -x hip --offload-arch=gfx90a -std=gnu++11 -MD -MT src/Optimization/CMakeFiles/hiopOptimization.\n"
    assert fact_values(derived_case(line), "build_targets") == ["gfx90a"]


def test_adaptivecpp_targets_name_the_backend_first() -> None:
    # GROMACS configured with hipSYCL for an MI100: https://github.com/AdaptiveCpp/AdaptiveCpp/pull/770
    assert fact_values(derived_case((FIXTURES / "hipsycl-targets-cmake.txt").read_text()), "build_targets") == ["gfx908"]
    assert fact_values(derived_case('acpp -O3 --acpp-targets="hip:gfx90a,gfx1100" main.cpp\n'), "build_targets") == ["gfx90a", "gfx1100"]


def test_cmake_typed_cache_entry() -> None:
    assert fact_values(derived_case("cmake -DAMDGPU_TARGETS:STRING=gfx1030 -DCMAKE_BUILD_TYPE=Release ..\n"), "build_targets") == ["gfx1030"]


def test_rebuild_advice_names_the_gpu_the_build_lacks() -> None:
    case = derived_case(ADVICE)
    assert fact_values(case, "build_targets") == []
    assert fact_values(case, "missing_code_object_arch") == ["gfx1201"]
    assert fact_values(derived_case(BEFORE), "missing_code_object_arch") == ["gfx90a:sramecc+:xnack-"]
    # beside the targets the build did have, the GPU is not among them
    built = derived_case("hipcc --offload-arch=gfx1100 -o app app.hip\n" + ADVICE + "  Name:                    gfx1201\n")
    assert fact_values(built, "build_targets") == ["gfx1100"]
    assert built.value("arch_in_build_targets") == "no"


def test_rocm6_runtime_log_lists_the_isas_it_has_no_code_object_for() -> None:
    """ROCm 6's runtime log (level 1) names each ISA the fat binary lacks on a record of its own after a header; as
    hip-no-code-object-for-gpu's example shows it. An ISA record without the header is not read."""
    listing = (":1:hip_fatbin.cpp           :140 : 2731446802 us: [pid:1183  tid:0x7f9b0e55f740] Missing CO for these ISAs - \n"
               ":1:hip_fatbin.cpp           :143 : 2731446810 us: [pid:1183  tid:0x7f9b0e55f740]      amdgcn-amd-amdhsa--gfx1151\n")
    case = derived_case(listing)
    assert fact_values(case, "missing_code_object_arch") == ["gfx1151"] and fact_values(case, "build_targets") == []
    assert fact_values(derived_case(listing.split("\n", 1)[1]), "missing_code_object_arch") == []
