"""Windows exception blocks, stack lines, WinDbg `k`, Event Viewer records and exit codes."""

from __future__ import annotations

import pytest

from tests.conftest import artifact
from triage.parsers import parse
from triage.parsers.codes import exit_status

STACK = """\
Exception Code: 0xC0000005
0x00007FFEF984A7FE, .../engine/amdhip64_7.dll(0x00007FFEF9010000) + 0x83A7FE, hsa_system_get_major_extension_table() + 0x3AD1DE
0x00007FFEF937FC73, .../engine/amdhip64_7.dll(0x00007FFEF9010000) + 0x36FC73, hipModuleLoad() + 0x33
0x00007FFE46F307C4, .../engine/rocm/bin/rocblas.dll(0x00007FFE46780000) + 0x7B07C4, ... + 0x12564
0x00007FFF38517374, KERNEL32.DLL, BaseThreadInitThunk() + 0x14
"""


def test_exception_stack() -> None:
    case = parse([artifact(STACK)])
    assert case.fault.kind == "exception" and case.fault.code == "0xC0000005"
    assert case.fault.code_name == "ACCESS_VIOLATION"
    frames = case.stacks[0].frames
    assert [f.index for f in frames] == [0, 1, 2, 3]
    assert (frames[0].module, frames[0].offset) == ("amdhip64_7.dll", 0x83A7FE)
    assert frames[0].symbol_source == "nearest-export" and frames[0].symbol_note.startswith("unreliable")
    assert frames[1].symbol == "hipModuleLoad" and frames[1].symbol_note is None
    assert frames[2].symbol is None and frames[2].offset == 0x7B07C4
    assert frames[3].module == "KERNEL32.DLL" and frames[3].offset is None
    assert case.value("os") == "windows"


def test_windbg_k_and_event_viewer() -> None:
    text = """\
 # Child-SP          RetAddr               Call Site
00 0000005f`2b8fe3a0 00007ffe`f937fc73     amdhip64_7+0x83a7fe
01 0000005f`2b8fe3f0 00007ffe`f8b88967     amdhip64_7!hipModuleLoad+0x33
Faulting module name: amdhip64_7.dll, version: 7.1.0.0, time stamp: 0x68f0a1b2
Exception code: 0xc0000005
Fault offset: 0x000000000083a7fe
"""
    case = parse([artifact(text)])
    frames = case.stacks[0].frames
    assert (frames[0].module, frames[0].offset, frames[0].symbol) == ("amdhip64_7", 0x83A7FE, None)
    assert (frames[1].symbol, frames[1].symbol_offset) == ("hipModuleLoad", 0x33)
    assert case.value("faulting_module") == "amdhip64_7.dll"
    assert case.fault.code == "0xC0000005"


@pytest.mark.parametrize("raw,expected", [
    ("3221225477", ("exception", "0xC0000005")),
    ("-1073741819", ("exception", "0xC0000005")),
    ("0xc0000005", ("exception", "0xC0000005")),
    ("3221225725", ("exception", "0xC00000FD")),
    ("139", ("signal", "SEGV")),
    ("134", ("signal", "ABRT")),
    ("1", None),
    ("0", None),
])
def test_exit_status(raw: str, expected: tuple | None) -> None:
    assert exit_status(raw) == expected


def test_exit_code_in_launcher_output() -> None:
    case = parse([artifact("the engine stopped unexpectedly (exit code 3221225477)\n")])
    assert case.value("exception_code") == "0xC0000005"
    assert case.fault.code_name == "ACCESS_VIOLATION"
