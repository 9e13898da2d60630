"""Kernel segfault lines with every prefix, and both bracket shapes."""

from __future__ import annotations

import pytest

from tests.conftest import artifact
from triage.model import Case
from triage.parsers import kernel

LINES = [
    ("kernel: strata-vision-h[<pid>]: segfault at 8 ip ...c9 error 6 in libamdhip64.so.7[4b61c9,...]",
     dict(comm="strata-vision-h", pid=None, address=8, ip=None, error=6, module="libamdhip64.so.7", file_offset=0x4B61C9)),
    ("mesh-llm[45729]: segfault at 8a ip 00007c7def28a610 error 4 in libamdhip64.so.7.2.53211[489610,...]",
     dict(comm="mesh-llm", pid=45729, address=0x8A, ip=0x7C7DEF28A610, error=4, file_offset=0x489610)),
    ("[  412.034511] app[123]: segfault at 0 ip 00007f44be1e61c9 sp 00007ffd1c2e5a10 error 4 in libX.so[7f44bde00000+3f3000]",
     dict(comm="app", pid=123, address=0, file_offset=None, vm_start=0x7F44BDE00000, vm_size=0x3F3000)),
    ("Nov 29 21:03:11 host kernel: python3[2231]: segfault at 10 ip 00007f3c2a4b71c9 sp 00007ffd5e1c9e40 error 6 "
     "in libamdhip64.so.6.2.60200[7f3c2a4b0000+5f3000] likely on CPU 3 (core 3, socket 0)",
     dict(comm="python3", pid=2231, address=0x10, module="libamdhip64.so.6.2.60200", vm_start=0x7F3C2A4B0000)),
    ("[Sun Nov 29 21:03:11 2026] python3[2231]: segfault at 0 ip 00007f3c2a4b71c9 sp 00007ffd error 14 "
     "in libamdhip64.so.6[14b61c9,7f3c2a000000+5f3000] likely on CPU 3 (core 3, socket 0)",
     dict(file_offset=0x14B61C9, vm_start=0x7F3C2A000000, vm_size=0x5F3000, error=14)),
    ("traps: llama-server[77] general protection fault ip:7f1c0a0b sp:7ffd0a0b error:0 in libggml-hip.so[7f1c0000+1000]",
     dict(comm="llama-server", pid=77, ip=0x7F1C0A0B, error=0, module="libggml-hip.so")),
]


@pytest.mark.parametrize("line,expected", LINES, ids=[str(i) for i in range(len(LINES))])
def test_segfault_lines(line: str, expected: dict) -> None:
    case = Case()
    kernel.parse(artifact(line), case)
    assert len(case.kernel_faults) == 1
    fault = case.kernel_faults[0]
    for key, value in expected.items():
        assert getattr(fault, key) == value, key


def test_access_from_error_code() -> None:
    assert kernel.access_from_error(6) == "write"
    assert kernel.access_from_error(4) == "read"
    assert kernel.access_from_error(0x15) == "execute"
