"""HIP error codes, by name or by number: the fact ``hip_error`` (a ``hipError_t`` name), and
``hip_error_number`` for an error a line gives only as a number.

Real forms::

    hipGetDeviceCount failed: hipErrorNoDevice                       =>  hipErrorNoDevice
    HIPError(code hipErrorNoBinaryForGpu, 209)                       =>  hipErrorNoBinaryForGpu
    RuntimeError: HIP error 98: invalid device function              =>  hipErrorInvalidDeviceFunction
    RuntimeError: HIP error: no kernel image is available for ...    =>  hipErrorNoBinaryForGpu
    hipModuleLoadData failed with error 218                          =>  hipErrorInvalidKernelFile
    ERROR: HIP call failed with status 209                           =>  hipErrorNoBinaryForGpu

A number counts only next to a HIP word on the same line (``hip``-prefixed calls, ``HIP``, ``ROCm``),
so an exit code or a line number of other software is not read as a HIP error, and a user's
sentence about an error is not read at all. Signatures then test
the error by name, whatever form the program printed it in.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.codes import HIP_ERROR_TEXTS, HIP_ERRORS
from triage.parsers.lines import Needles

_NAME = lazy(r"\bhipError(?!_t\b)(?P<name>[A-Z]\w{2,40})\b")
# "<HIP word> ... error|code|status|returned|failed with N" within one clause of the line.
_HIP_WORD = r"(?:\bhip[A-Z]\w{2,40}\b|\bHIP\b|\bROCm\b|\bhip\b)"  # a HIP call, or HIP / ROCm named
_NUMBER = lazy(
    _HIP_WORD + r"[^\n;]{0,60}?\b(?:error(?:\s+code)?|err|code|status|returned|result|failed\s+with(?:\s+error)?)"
    r"\s*[:=#]?\s*\(?(?P<n>\d{1,4})\b(?![.\d]|\s*(?:MiB|GiB|MB|GB|bytes|%|s\b|ms\b))"
)
# "HIP error: invalid device function", "hipMalloc failed: out of memory", "ROCm error: ..."
_TEXT = lazy(_HIP_WORD + r"[^\n]{0,40}?\b(?:error|failed)\b[^\n:]{0,20}:\s*(?P<text>"
                   + "|".join(re.escape(t) for t in sorted(HIP_ERROR_TEXTS, key=len, reverse=True)) + r")\b",
                   re.IGNORECASE)
_BY_TEXT = {t.lower(): name for t, name in HIP_ERROR_TEXTS.items()}
# The parser's own patterns choose its lines (a HIP word alone is on most lines of a HIP log).
_NEEDLES = Needles(_NAME, _NUMBER, _TEXT)


def parse(artifact: Artifact, case: Case) -> None:
    for where, text in _NEEDLES.machine_lines(artifact, case):  # a user's sentence about an error is not the error
        named = [f"hipError{m['name']}" for m in _NAME.finditer(text)]
        named += [_BY_TEXT[m["text"].lower()] for m in _TEXT.finditer(text)]
        numbered = [HIP_ERRORS[int(m["n"])] for m in _NUMBER.finditer(text) if int(m["n"]) in HIP_ERRORS]
        for name in dict.fromkeys(named + numbered):
            if name != "hipErrorSuccess":
                case.add_fact("hip_error", name, where, text.strip(), 40)
        lowered = text.lower()
        worded = set(named) | {name for words, name in _BY_TEXT.items() if words in lowered}
        for name in dict.fromkeys(numbered):
            if name not in worded:  # only the number says it: what patterns of its name or text cannot see
                case.add_fact("hip_error_number", name, where, text.strip(), 40)
