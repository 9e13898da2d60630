"""HIP error codes by name, by number and by hipGetErrorString's text become one fact, ``hip_error``."""

from __future__ import annotations

import pytest

from triage.model import Artifact
from triage.parsers import parse


def _errors(text: str) -> list[str]:
    return [f.value for f in parse([Artifact(name="log.txt", text=text, size=len(text))]).facts.get("hip_error", [])]


@pytest.mark.parametrize("line, name", [
    ("hipGetDeviceCount failed: hipErrorNoDevice", "hipErrorNoDevice"),
    ("HIPError(code hipErrorNoBinaryForGpu, 209)", "hipErrorNoBinaryForGpu"),  # AMDGPU.jl
    ("hipGetDeviceCount returned error 100", "hipErrorNoDevice"),
    ("RuntimeError: HIP error 98: invalid device function", "hipErrorInvalidDeviceFunction"),
    ("Error: hipModuleLoadData failed with error 218", "hipErrorInvalidKernelFile"),
    ("ERROR: HIP call failed with status 209", "hipErrorNoBinaryForGpu"),
    ("RuntimeError: HIP error: invalid device function", "hipErrorInvalidDeviceFunction"),
    ("ROCm error: no kernel image is available for execution on the device", "hipErrorNoBinaryForGpu"),
    ("hipMalloc failed: out of memory", "hipErrorOutOfMemory"),
    ("Err: hipHostRegister failed with code: 2.", "hipErrorOutOfMemory"),  # the number ends the sentence
])
def test_every_form_names_the_error(line: str, name: str) -> None:
    assert _errors(line) == [name]


def test_an_error_given_only_by_number_is_marked_so() -> None:
    def numbered(text: str) -> list[str]:
        case = parse([Artifact(name="log.txt", text=text, size=len(text))])
        return [f.value for f in case.facts.get("hip_error_number", [])]

    assert numbered("ERROR: HIP call failed with status 209") == ["hipErrorNoBinaryForGpu"]
    assert numbered("HIPError(code hipErrorNoBinaryForGpu, 209)") == []  # the name is there too
    assert numbered('checkHipErrors() HIP API error = 0100 "no ROCm-capable device is detected"') == []  # and its text


@pytest.mark.parametrize("line", [
    "HIP version 6.2.41133, error 0",  # no such error
    "hipMalloc of 2 GiB: 16 GiB free",  # a size, not a code
    "hipMalloc returned error 2.5 GiB later",  # a decimal, not a code
    "llama runner process has terminated: exit status 2",  # no HIP word
    "CUDA error: invalid device function",  # CUDA's wording: whose GPU it is, is for the derived facts
    "When I run the model I always get hipErrorNoDevice and then it stops, which is strange because rocminfo works",
])
def test_no_error_from_other_numbers_or_prose(line: str) -> None:
    assert _errors(line) == []
