"""Windows exception blocks, stack lines, WinDbg `k`, Event Viewer records and exit codes."""

from __future__ import annotations

from pathlib import Path

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
    ("-1", None),  # a program's own failure, no NTSTATUS
    ("18446744073709551615", None),  # -1 as an unsigned 64-bit number
    ("18446744072635809797", ("exception", "0xC0000005")),  # sign-extended, exact
    ("18446744072635812000", None),  # the same through a JavaScript double (LM Studio): the code is lost
    ("0xE06D7363", ("exception", "0xE06D7363")),  # an uncaught C++ exception
])
def test_exit_status(raw: str, expected: tuple | None) -> None:
    assert exit_status(raw) == expected


def test_exit_code_in_launcher_output() -> None:
    case = parse([artifact("the engine stopped unexpectedly (exit code 3221225477)\n")])
    assert case.value("exception_code") == "0xC0000005"
    assert case.fault.code_name == "ACCESS_VIOLATION"


FIXTURES = Path(__file__).parent / "fixtures" / "windows"
ZH = Path(__file__).parent.parent / "corpus" / "realworld" / "windowsml-15-amdhip64_7-access-violation-migraphx" / "input.txt"


@pytest.mark.parametrize("path, module, code, offset", [
    (FIXTURES / "event-de.txt", "MSVCR120.dll", "0xC0000409", "0x0000000000074a30"),
    (FIXTURES / "event-fr.txt", "ntdll.dll", "0xC0000374", "0x00000000000f7143"),
    (FIXTURES / "event-es.txt", "ntdll.dll", "0xC00000FD", "0x000000000003c43a"),
    (FIXTURES / "wer-es.txt", "ConstraintIndex.Search.dll", "0xC0000005", "0x00000000000bb2b3"),
    (FIXTURES / "wer-zh.txt", "ntdll.dll", "0xC0000005", "0x0002aabb"),
    (FIXTURES / "wer-de.txt", "ntdll.dll", "0xC0000005", "0x0003d968"),
    (FIXTURES / "event-ja.txt", "arrow.dll", "0xC0000005", "0x0000000000bc221b"),
    (FIXTURES / "event-ru.txt", "lmadmin.exe", "0xC0000005", "0x0005e222"),
    (FIXTURES / "event-ko.txt", "unknown", "0x80131623", "0x00007ffd47facf2c"),
    (ZH, "amdhip64_7.dll", "0xC0000005", "0x0000000000465007"),
], ids=lambda v: v.name if isinstance(v, Path) else None)
def test_event_viewer_and_wer_records_in_other_languages(path: Path, module: str, code: str, offset: str) -> None:
    case = parse([artifact(path.read_text(encoding="utf-8"))])
    assert case.value("faulting_module") == module
    assert case.fault.kind == "exception" and case.fault.code == code
    assert case.value("fault_offset") == offset
    assert case.value("os") == "windows"


def test_visual_studio_call_stack_without_and_with_symbols() -> None:
    case = parse([artifact((FIXTURES / "vs-stack.txt").read_text())])
    frames = case.stacks[0].frames
    assert [f.index for f in frames] == [0, 1, 2, 3]
    assert (frames[0].module, frames[0].address, frames[0].symbol) == ("torch_cpu.dll", 0x7FF91753806F, None)
    case = parse([artifact((FIXTURES / "vs-stack-symbols.txt").read_text())])
    top = case.stacks[0].frames[0]
    assert (top.module, top.symbol, top.file_line, top.symbol_source) == ("sos.dll", "PrintException", 2848, "input")
    assert case.stacks[0].frames[1].symbol is None


def test_debugger_output_lines_are_not_frames() -> None:
    text = r"TensorValidator.h(203)\DirectML.dll!00007FF83D25ADC9: (caller: 00007FF83D267523) Exception(1) tid(3b54) 80070057 The parameter is incorrect." + "\n"
    assert parse([artifact(text)]).stacks == []


def test_one_line_crash_summary() -> None:
    """The shape of a real report (its thread is kept for unseen evaluation, so the values here are made up)."""
    text = "amdhip64_6.dll -> hipModuleLaunchKernel + 91244 - Access Violation reading location 0x00000018\n"
    case = parse([artifact(text)])
    top = case.stacks[0].frames[0]
    assert (top.module, top.symbol, top.symbol_offset) == ("amdhip64_6.dll", "hipModuleLaunchKernel", 91244)
    assert top.symbol_note.startswith("unreliable")
    assert (case.fault.code, case.fault.module, case.fault.address, case.fault.access) == (
        "0xC0000005", "amdhip64_6.dll", 0x18, "read")


def test_python_reports_of_a_native_access_violation() -> None:
    case = parse([artifact((FIXTURES / "oserror.txt").read_text())])
    assert (case.fault.code, case.fault.address, case.fault.access) == ("0xC0000005", 0, "read")
    text = "Windows fatal exception: access violation\n\nThread 0x0000286c (most recent call first):\n"
    assert parse([artifact(text)]).fault.code == "0xC0000005"


def test_pytorch_crash_handler_stack_on_windows() -> None:
    """PyTorch's Windows crash handler: frame lines "ADDR, module + 0xOFF byte(s)" with the symbol indented below."""
    path = ZH.parent.parent / "rocm-pytorch-3132-windows-scaled-mm-v2-av-torch-hip-null-call" / "input.txt"
    case = parse([artifact(path.read_text())])
    frames = case.stacks[0].frames
    assert [(f.module, f.offset) for f in frames[:2]] == [("torch_hip.dll", 0), ("torch_hip.dll", 0x25BCDE7)]
    assert (frames[1].symbol, frames[1].symbol_offset) == ("at::cuda::_scaled_mm_v2", 0x487)
    assert frames[2].symbol == "at::_ops::_scaled_mm_v2::call"
    assert case.fault.code == "0xC0000005" and case.fault.module == "torch_hip.dll"


def test_faulting_module_version_from_the_event_record() -> None:
    """The Chinese record's "出错模块名称： amdhip64_7.dll， 版本： 7.2.2606.20": the HIP runtime's own version."""
    facts = parse([artifact(ZH.read_text(encoding="utf-8"))]).flat_facts()
    assert facts["module_version:amdhip64_7.dll"] == "7.2.2606.20"
    assert facts["hip_version_runtime"] == "7.2.2606.20"
    facts = parse([artifact((FIXTURES / "event-de.txt").read_text(encoding="utf-8"))]).flat_facts()
    assert facts["module_version:msvcr120.dll"] == "12.0.21005.1" and "hip_version_runtime" not in facts
