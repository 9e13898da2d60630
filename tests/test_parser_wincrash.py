"""Windows crashes as debuggers' one-line messages and applications' crash handlers print them
(triage/parsers/wincrash.py; the ``#N 0xADDR module.exe`` frames are the backtrace parser's).

Fixtures in tests/data/wincrash/ are lines as posted: Visual Studio's "Unhandled exception at"
(ValveSoftware/source-sdk-2013#1260) and "Exception thrown at" without a module (ChaiScript#627),
Delphi's access violation box (HemulGM/ChatGPT#45), a handler's record and raw stack
(xAstroBoy/StreaMonitor#6). The call-site lines below keep the ``module!export+0xOFF`` form with
ROCm's DLL.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse
from triage.pipeline import triage

DATA = Path(__file__).parent / "data" / "wincrash"

CALL_SITES = """\
Unhandled exception: EXCEPTION_ACCESS_VIOLATION
amdhip64_6!hipMemcpy+0x12
amdhip64_6!hipLaunchKernel+0x44
app!main+0x10
"""


def _case(text: str):
    return parse([Artifact(name="crash.txt", text=text, size=len(text))])


def test_visual_studio_unhandled_exception_names_module_program_code_and_address() -> None:
    case = triage([str(DATA / "vs-unhandled-exception.txt")]).case
    fault = case.fault
    assert (fault.kind, fault.code, fault.module) == ("exception", "0xC0000005", "datacache.dll")
    assert fault.address == 0 and fault.access == "read"
    assert case.value("program") == "hl2_win64.exe" and case.value("os") == "windows"


def test_exception_thrown_without_a_module_gives_no_faulting_module() -> None:
    case = triage([str(DATA / "vs-exception-thrown-no-module.txt")]).case
    assert case.fault.code == "0xC0000005" and case.fault.module is None and case.fault.address == 0x18
    assert not case.stacks


def test_delphi_access_violation() -> None:
    case = triage([str(DATA / "delphi-access-violation.txt")]).case
    assert case.fault.module == "ChatGPT.exe" and case.fault.address == 0xC and case.fault.access == "read"


def test_handler_record_and_raw_stack_fault_at_the_frame_of_its_address() -> None:
    case = triage([str(DATA / "crash-handler-raw-stack.txt")]).case
    [stack] = case.stacks
    assert stack.form == "windows" and len(stack.frames) == 15
    assert stack.frames[0].module == "StreaMonitor.exe" and stack.frames[0].symbol is None
    assert case.fault.code == "0xC0000005" and case.fault.module == "MSVCP140.dll"  # frame #7, not the handler's
    assert case.fault.address == 0 and case.fault.access == "read"


def test_call_sites_after_a_crash_line_are_the_crashing_windows_stack() -> None:
    case = _case(CALL_SITES)
    [stack] = case.stacks
    assert stack.crashing and stack.form == "windows"
    assert [(f.module, f.symbol, f.symbol_offset) for f in stack.frames] == [
        ("amdhip64_6", "hipMemcpy", 0x12), ("amdhip64_6", "hipLaunchKernel", 0x44), ("app", "main", 0x10)]
    assert case.fault.code == "0xC0000005" and case.fault.module == "amdhip64_6"


def test_one_call_site_or_an_exclamation_in_prose_is_no_stack() -> None:
    assert not _case("amdhip64_6!hipMemcpy+0x12\n\nthat was all\n").stacks
    assert not _case("It works!great\nReally!nice\n").stacks


def test_hash_frames_with_a_dll_and_offset_are_a_windows_stack() -> None:
    text = ("Exception thrown at 0x00007FFB12345678 (amdhip64_6.dll) in app.exe: 0xC0000005: Access violation reading "
            "location 0x0000000000000010.\n#0 0x00007ffb1234abcd (amdhip64_6.dll+0x1a2b3)\n#1 0x00007ffb1234abce (app.exe+0x1234)\n")
    case = _case(text)
    stacks = [s for s in case.stacks if len(s.frames) == 2]
    assert stacks and stacks[0].form == "windows" and stacks[0].frames[0].offset == 0x1A2B3
    assert case.fault.module == "amdhip64_6.dll" and case.fault.address == 0x10
