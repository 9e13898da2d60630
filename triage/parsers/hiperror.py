"""HIP error codes, by name or by number: the fact ``hip_error`` (a ``hipError_t`` name), and
``hip_error_number`` for an error a line gives only as a number.

Real forms::

    hipGetDeviceCount failed: hipErrorNoDevice                       =>  hipErrorNoDevice
    HIPError(code hipErrorNoBinaryForGpu, 209)                       =>  hipErrorNoBinaryForGpu
    RuntimeError: HIP error 98: invalid device function              =>  hipErrorInvalidDeviceFunction
    RuntimeError: HIP error: no kernel image is available for ...    =>  hipErrorNoBinaryForGpu
    hipModuleLoadData failed with error 218                          =>  hipErrorInvalidKernelFile
    ERROR: HIP call failed with status 209                           =>  hipErrorNoBinaryForGpu
    ... could not create module (error code = HIP:218)               =>  hipErrorInvalidKernelFile (AdaptiveCpp)
    UR HIP ERROR:  /  Value:           209                           =>  hipErrorNoBinaryForGpu (DPC++'s HIP plugin)
    Failed to launch ROCm kernel: ... hipError_t(719)                =>  hipErrorLaunchFailure (XLA)
    Check failed: err == hipSuccess (98 vs. 0)                       =>  hipErrorInvalidDeviceFunction (TensorFlow)

XLA's ROCm driver prints an error it has no text for as ``hipError_t(N)``; TensorFlow's check macro compares the
result with ``hipSuccess`` and prints both numbers. AdaptiveCpp (formerly hipSYCL, Open SYCL) ends an error with its backend and number, ``(error code = HIP:218)``;
DPC++'s HIP plugin prints a block whose header (``PI HIP ERROR:``, since the Unified Runtime ``UR HIP ERROR:``) is
followed by ``Value: <n>`` and ``Name: <hipError_t name>`` lines. Under the same header the plugin reports a failure
of the code object manager (comgr) with comgr's own status number and an ``AMD_COMGR_STATUS_*`` name: that number is
no HIP error. A block's number is given "only as a number" when no line of the block names the error.

Otherwise a number counts only next to a HIP word on the same line (``hip``-prefixed calls, ``HIP``, ``ROCm``),
so an exit code or a line number of other software is not read as a HIP error, and a user's
sentence about an error is not read at all. Signatures then test
the error by name, whatever form the program printed it in.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.codes import HIP_ERROR_TEXTS, HIP_ERRORS
from triage.parsers.lines import Needles

_NAME = lazy(r"\bhipError(?!_t\b)(?P<name>[A-Z]\w{2,40})\b")
# "<HIP word> ... error|code|status|returned|failed with N" within one clause of the line.
_HIP_WORD = r"(?:\bhip[A-Z]\w{2,40}\b|\bHIP\b|\bROCm\b|\bhip\b)"  # a HIP call, or HIP / ROCm named
_NUMBER = lazy(
    _HIP_WORD + r"[^\n;]{0,60}?\b(?:error(?:\s+code)?|err|code|status|returned|result|failed\s+with(?:\s+error)?)"
    r"\s*[:=#]?\s*\(?(?P<n>\d{1,4})\b(?!\.\d|\s*(?:MiB|GiB|MB|GB|bytes|%|s\b|ms\b))"  # "code: 2." ends a sentence
)
# "HIP error: invalid device function", "hipMalloc failed: out of memory", "ROCm error: ..."
_TEXT = lazy(_HIP_WORD + r"[^\n]{0,40}?\b(?:error|failed)\b[^\n:]{0,20}:\s*(?P<text>"
                   + "|".join(re.escape(t) for t in sorted(HIP_ERROR_TEXTS, key=len, reverse=True)) + r")\b",
                   re.IGNORECASE)
_BY_TEXT = {t.lower(): name for t, name in HIP_ERROR_TEXTS.items()}
# AdaptiveCpp's error code, backend and number: "(error code = HIP:218)" (CUDA's is "CU:218", not read).
_ACPP = lazy(r"\berror code = HIP:(?P<n>\d{1,4})\b")
# XLA's "hipError_t(719)" and TensorFlow's "Check failed: err == hipSuccess (98 vs. 0)": HIP's own type names it.
_TYPED = lazy(r"\bhipError_t\((?P<n>\d{1,4})\)|==\s*hipSuccess\s*\((?P<m>\d{1,4}) vs\. 0\)")
# DPC++'s HIP plugin: the block's header, its number and its name, each on a line of its own, perhaps behind a
# logger's or a test runner's prefix ("<HIP>[ERROR]: ", lit's "# | ").
_BLOCK = lazy(r"\b(?:PI|UR) HIP ERROR:\s*$")
_VALUE = lazy(r"^[\s#|>]*Value:\s+(?P<n>\d{1,4})\s*$")
_BLOCK_NAME = lazy(r"^[\s#|>]*Name:\s+(?P<name>\S+)")
_BLOCK_LINES = 4  # the Value and Name lines follow the header at once
# The parser's own patterns choose its lines (a HIP word alone is on most lines of a HIP log).
_NEEDLES = Needles(_NAME, _NUMBER, _TEXT, _ACPP, _TYPED)
_BLOCKS = Needles(_BLOCK)


def parse(artifact: Artifact, case: Case) -> None:
    for where, text in _NEEDLES.machine_lines(artifact, case):  # a user's sentence about an error is not the error
        named = [f"hipError{m['name']}" for m in _NAME.finditer(text)]
        named += [_BY_TEXT[m["text"].lower()] for m in _TEXT.finditer(text)]
        numbers = [int(m["n"]) for pattern in (_NUMBER, _ACPP) for m in pattern.finditer(text)]
        numbers += [int(m["n"] or m["m"]) for m in _TYPED.finditer(text)]
        numbered = [HIP_ERRORS[n] for n in numbers if n in HIP_ERRORS]
        for name in dict.fromkeys(named + numbered):
            if name != "hipErrorSuccess":
                case.add_fact("hip_error", name, where, text.strip(), 40)
        lowered = text.lower()
        worded = set(named) | {name for words, name in _BY_TEXT.items() if words in lowered}
        for name in dict.fromkeys(numbered):
            if name not in worded:  # only the number says it: what patterns of its name or text cannot see
                case.add_fact("hip_error_number", name, where, text.strip(), 40)
    _plugin_blocks(artifact, case)


def _plugin_blocks(artifact: Artifact, case: Case) -> None:
    """DPC++'s ``PI HIP ERROR:`` / ``UR HIP ERROR:`` blocks: the number of the Value line, unless the block's Name
    line says it is comgr's status; ``hip_error_number`` when no Name line names the error."""
    lines = artifact.lines
    for index, where, header in _BLOCKS.readable_lines(artifact):
        value = name = None
        for offset in range(index + 1, min(index + 1 + _BLOCK_LINES, len(lines))):
            text = lines[offset]
            if value is None and (m := _VALUE.match(text)):
                value = (int(m["n"]), Where(artifact.name, offset + 1), text.strip())
            elif name is None and (m := _BLOCK_NAME.match(text)):
                name = m["name"]
        if value is None or value[0] not in HIP_ERRORS or (name and not name.startswith("hipError")):
            continue
        number, at, quoted = value
        error = HIP_ERRORS[number]
        if error == "hipErrorSuccess":
            continue
        case.add_fact("hip_error", error, at, quoted, 40)
        if name != error:
            case.add_fact("hip_error_number", error, at, quoted, 40)
