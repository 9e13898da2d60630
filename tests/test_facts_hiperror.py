"""hip_error_number from programs that give a HIP error only as a number: AdaptiveCpp's ``error code = HIP:<n>`` and
the ``Value:`` line of DPC++'s ``PI HIP ERROR:`` / ``UR HIP ERROR:`` block (parsers/hiperror.py)."""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse

FIXTURES = Path(__file__).parent / "fixtures" / "facts"


def _facts(text: str) -> dict[str, list[str]]:
    case = parse([Artifact(name="log.txt", text=text, size=len(text))])
    return {name: [f.value for f in case.facts.get(name, [])] for name in ("hip_error", "hip_error_number")}


def test_adaptivecpp_error_code_is_read_as_the_hip_error() -> None:
    # AdaptiveCpp on a Radeon RX 7600 (Windows, explicit multipass): https://github.com/AdaptiveCpp/AdaptiveCpp/issues/1447
    got = _facts((FIXTURES / "adaptivecpp-hip-error-code.txt").read_text())
    assert got == {"hip_error": ["hipErrorInvalidKernelFile"], "hip_error_number": ["hipErrorInvalidKernelFile"]}


def test_adaptivecpp_cuda_backend_code_is_not_a_hip_error() -> None:
    # the same report form for the CUDA backend: https://github.com/AdaptiveCpp/AdaptiveCpp/pull/1118
    line = ("[hipSYCL Error] from /home/bate/Codes/OpenSYCL/src/runtime/cuda/cuda_code_object.cpp:96 @ "
            "build_cuda_module_from_ptx(): cuda_executable_object: could not load module (error code = CU:218)\n")
    assert _facts(line) == {"hip_error": [], "hip_error_number": []}


def test_dpcpp_block_with_its_name_gives_the_error_and_no_bare_number() -> None:
    # DPC++'s HIP adapter in a lit run on gfx1031: https://github.com/intel/llvm/pull/15055
    got = _facts((FIXTURES / "dpcpp-ur-hip-error-block.txt").read_text())
    assert set(got["hip_error"]) == {"hipErrorNoBinaryForGpu"}
    assert got["hip_error_number"] == []


def test_dpcpp_block_cut_before_its_name_gives_the_number() -> None:
    # the same block as far as its Value line (a paste that kept the first lines only)
    text = "".join((FIXTURES / "dpcpp-ur-hip-error-block.txt").read_text().splitlines(keepends=True)[:3])
    assert _facts(text) == {"hip_error": ["hipErrorNoBinaryForGpu"], "hip_error_number": ["hipErrorNoBinaryForGpu"]}
    older = "PI HIP ERROR:\n\tValue:           98\n"  # the plugin before the Unified Runtime: same block, PI header
    assert _facts(older)["hip_error_number"] == ["hipErrorInvalidDeviceFunction"]


def test_dpcpp_block_of_a_comgr_status_is_no_hip_error() -> None:
    # the adapter prints comgr's failures in the same block, with comgr's number (AMD_COMGR_STATUS_ERROR is 1, which
    # as a hipError_t would be hipErrorInvalidValue)
    text = ("UR HIP ERROR:\n\tValue:           1\n\tName:            AMD_COMGR_STATUS_ERROR\n"
            "\tDescription:     Generic error\n")
    assert _facts(text) == {"hip_error": [], "hip_error_number": []}


def test_a_value_line_without_the_header_is_nothing() -> None:
    assert _facts("Total Count: 3\n\tValue:           209\n") == {"hip_error": [], "hip_error_number": []}


def test_tensorflow_check_macro_and_xla_type_give_the_number() -> None:
    # TensorFlow 2.x on ROCm: https://github.com/ROCm/tensorflow-upstream/issues/2163 (tests/fixtures/failure-wordings)
    line = (Path(__file__).parent / "fixtures" / "failure-wordings" / "S-01-tf-check-failed-hipsuccess-98.txt").read_text()
    assert _facts(line) == {"hip_error": ["hipErrorInvalidDeviceFunction"],
                            "hip_error_number": ["hipErrorInvalidDeviceFunction"]}
    # XLA's ROCm driver names an error it has no text for by its type and number
    assert _facts("Failed to launch ROCm kernel: fusion_3 with block dimensions: 256x1x1: hipError_t(719)\n") == {
        "hip_error": ["hipErrorLaunchFailure"], "hip_error_number": ["hipErrorLaunchFailure"]}
    # CUDA's check macro with the same number is no HIP error
    assert _facts("Check failed: err == cudaSuccess (98 vs. 0)\n") == {"hip_error": [], "hip_error_number": []}
