"""minidump_stackwalk's text (triage/parsers/stackwalk.py).

tests/data/stackwalk/rdm-47-windows-x86.txt is a crash report as posted in
RedisDesktop/rdm-debug-symbols#47 (Windows, no symbols). The Linux report below keeps
stackwalk's format with the HIP runtime in the crashing thread, symbolized.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse
from triage.pipeline import triage

DATA = Path(__file__).parent / "data" / "stackwalk"

LINUX = """\
Operating system: Linux
Crash reason:  SIGSEGV /SEGV_MAPERR
Crash address: 0x10

Thread 3 (crashed)
 0  libamdhip64.so.6!amd::Symbol::getDeviceKernel [rocprogram.cpp : 412 + 0x4]
    rip = 0x00007f3c2a48a610   rsp = 0x00007ffc1a2b3c40
    Found by: given as instruction pointer in context
 1  libamdhip64.so.6 + 0x4b71c9
    Found by: call frame info
 2  python3.11 + 0x1a2b3
    Found by: stack scanning

Thread 0
 0  libc.so.6 + 0x91117
"""


def _case(text: str):
    return parse([Artifact(name="report.txt", text=text, size=len(text))])


def test_windows_report_gives_code_access_address_and_the_crashed_thread() -> None:
    case = triage([str(DATA / "rdm-47-windows-x86.txt")]).case
    [stack] = case.stacks
    assert stack.crashing and stack.thread == "0" and stack.form == "windows" and len(stack.frames) == 7
    assert stack.frames[4].module is None and stack.frames[4].address == 0x33C950
    fault = case.fault
    assert (fault.code, fault.access, fault.address) == ("0xC0000005", "read", 1)
    assert fault.module == "rdm.exe" and fault.offset == 0x27896


def test_linux_report_gives_signal_si_code_and_symbolized_frames() -> None:
    case = _case(LINUX)
    crashed, other = case.stacks
    assert crashed.crashing and not other.crashing and crashed.thread == "3"
    top = crashed.frames[0]
    assert (top.module, top.symbol, top.file, top.file_line) == ("libamdhip64.so.6", "amd::Symbol::getDeviceKernel",
                                                                 "rocprogram.cpp", 412)
    assert crashed.frames[1].offset == 0x4B71C9 and crashed.frames[1].symbol is None
    fault = case.fault
    assert (fault.signal, fault.si_code, fault.address, fault.module) == ("SEGV", "SEGV_MAPERR", 0x10, "libamdhip64.so.6")


def test_numbered_lines_outside_a_thread_block_are_not_frames() -> None:
    case = _case(" 1  apple + 0x10\n 2  pear!stem\nThread safety is discussed below\n")
    assert not case.stacks
