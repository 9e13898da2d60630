"""omnitrace / rocprofiler-systems crash reports (triage/parsers/profstack.py).

Fixtures in tests/data/profstack/ are the backtraces posted in ROCm/omnitrace#259 (demangled) and
#308 (the end of one block, then line info with the ROCm tracer's library). The signal lines are
omnitrace's own formats as this project's profiler signature quotes them.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse

DATA = Path(__file__).parent / "data" / "profstack"
CAUGHT = "[omnitrace][85176][0] Signal 11 caught : Segmentation fault (Address not mapped to object [0x100])\n"
ERROR = ("### ERROR ### [omnitrace][PID=85174][TID=0] signal=11 (SIGSEGV) segmentation violation. code: 1 "
         "(SEGV_MAPERR :: Address not mapped), address of faulting memory reference: 0x100\n")


def _case(text: str):
    return parse([Artifact(name="omnitrace.log", text=text, size=len(text))])


def test_demangled_block_leaves_out_the_trampoline_and_keeps_symbol_offsets() -> None:
    case = _case((DATA / "omnitrace-259-demangled.txt").read_text())
    [stack] = case.stacks
    assert stack.form == "omnitrace" and not stack.crashing  # no caught-signal line in the paste
    assert stack.frames[0].symbol == "std::char_traits<char>::length(char const*)" and stack.frames[0].symbol_offset == 0x37
    assert [f.index for f in stack.frames] == list(range(7))
    assert stack.frames[5].symbol == "roctxRangePop"


def test_lineinfo_block_names_the_modules_and_is_the_crashing_one_after_a_caught_signal() -> None:
    case = _case(CAUGHT + (DATA / "omnitrace-308-lineinfo.txt").read_text())
    crashing = [s for s in case.stacks if s.crashing]
    assert len(case.stacks) == 2 and len(crashing) == 1
    top = crashing[0].frames[0]
    assert top.module == "/opt/rocm-5.7.0/lib/libroctracer64.so.4.1.0" and top.symbol == "roctracer_open_pool"
    fault = case.fault
    assert fault.signal == "SEGV" and fault.si_code == "SEGV_MAPERR" and fault.address == 0x100
    assert fault.module.endswith("libroctracer64.so.4.1.0")


def test_the_error_line_gives_signal_code_and_address() -> None:
    case = _case(ERROR)
    assert case.fact("signal").value == "SEGV" and case.fact("si_code").value == "SEGV_MAPERR"
    assert case.fact("fault_address").value == "0x100" and not case.stacks


def test_glibc_frames_after_the_prefix() -> None:
    text = CAUGHT + ("Backtrace:\n[PID=4242][TID=0][0/3] /lib/x86_64-linux-gnu/libc.so.6(__restore_rt+0x0) [0x7f0000042520]\n"
                     "[PID=4242][TID=0][1/3] /opt/rocm/lib/libamdhip64.so.6(+0x2b4d5e) [0x7f3a1c2b4d5e]\n")
    case = _case(text)
    [stack] = case.stacks
    assert stack.crashing and stack.frames[0].module == "/opt/rocm/lib/libamdhip64.so.6"
    assert stack.frames[0].offset == 0x2B4D5E and case.fault.module == "/opt/rocm/lib/libamdhip64.so.6"


def test_instrumentation_lines_are_no_crash() -> None:
    case = _case("[omnitrace][dl][11012] omnitrace_main\n[omnitrace][11012][omnitrace_init_tooling] Instrumentation mode: "
                 "Sampling\n")
    assert case.fact("signal") is None and not case.stacks
