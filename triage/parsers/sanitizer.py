"""Sanitizer reports (AddressSanitizer, UBSan, HWASan, MSan): the fault they caught and its stack.

A program built with ``-fsanitize=address`` prints its own crash report instead of dying
quietly::

    ==4242==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000010 (pc 0x7f.. bp .. sp .. T0)
    ==4242==The signal is caused by a READ memory access.
    ==4242==Hint: address points to the zero page.
        #0 0x7f3a1c2b4d5e  (/opt/rocm/lib/libamdhip64.so.6+0x2b4d5e)
    SUMMARY: AddressSanitizer: SEGV (/opt/rocm/lib/libamdhip64.so.6+0x2b4d5e) in hipModuleLaunchKernel

A deadly signal (SEGV, BUS, FPE, ILL, ABRT, TRAP; a stack overflow is a SEGV) becomes the
``signal`` fact; the address, unless the hint says the sanitizer could not know it (a general
protection fault on a high address reports 0x0), the ``fault_address``; a memory error
(heap-use-after-free, double-free...) the ``sanitizer_error`` fact, its access the
``fault_access``. The frames are the backtrace parser's; the first stack after the report's
first line is marked as the crashing one. Where the report's stack was cut away, its SUMMARY
line still names the module and offset of the top frame.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles

_TOOLS = r"(?:Address|UndefinedBehavior|HWAddress|Memory|Leak|Thread)Sanitizer"
# MemorySanitizer reports its errors as a WARNING and then stops the program; ASan's "attempting double-free on 0x..."
# and "attempting free on address which was not malloc()-ed" are its SUMMARY's double-free and bad-free.
_ERROR = lazy(
    r"==\d+==\s*(?:ERROR|WARNING(?=: MemorySanitizer)): (?P<tool>" + _TOOLS + r"): (?:attempting )?(?P<what>[\w-]+)"
    r"(?: on (?:unknown )?address(?: (?P<addr>0x[0-9a-fA-F]+))?| on (?P<addr2>0x[0-9a-fA-F]+))?")
_CAUSE = lazy(r"==\d+==The signal is caused by a (?P<rw>READ|WRITE|UNKNOWN) memory access")
_HIGH_ADDRESS = lazy(r"==\d+==Hint: this fault was caused by a dereference of a high value address")
_ACCESS = lazy(r"^\s*(?P<rw>READ|WRITE) of size \d+ at (?P<addr>0x[0-9a-fA-F]+)")
_SUMMARY = lazy(r"^\s*SUMMARY: (?P<tool>" + _TOOLS + r"): (?P<what>[\w-]+) \((?P<module>[^()\s]+)\+(?P<off>0x[0-9a-fA-F]+)\)"
                      r"(?: in (?P<symbol>\S+))?")
_NEEDLES = Needles(_ERROR, _CAUSE, _HIGH_ADDRESS, _ACCESS, _SUMMARY)

# The sanitizers' deadly signals; a stack overflow is a SEGV on the guard page.
_SIGNALS = {"SEGV": "SEGV", "BUS": "BUS", "FPE": "FPE", "ILL": "ILL", "ABRT": "ABRT", "TRAP": "TRAP",
            "stack-overflow": "SEGV"}
# A leak report or a data race comes at exit or while running: no crash (a deadly signal under either tool is one).
_NO_CRASH = {"LeakSanitizer", "ThreadSanitizer"}
# How far after the report's first line its stack starts.
_STACK_WITHIN = 12


def parse(artifact: Artifact, case: Case) -> None:
    """Add the fault facts of each sanitizer report in the artifact and mark its stack as the crashing one."""
    report_at: int | None = None  # the 1-based line of the current report's ERROR line
    address: tuple[str, Where, str] | None = None
    summary: Frame | None = None
    for index, where, text in _NEEDLES.readable_lines(artifact):
        quoted = text.strip()
        if m := _ERROR.search(text):
            if report_at is not None:  # only the first report of an artifact is the crash
                break
            what = "bad-free" if m["what"] == "free" else m["what"]
            if m["tool"] in _NO_CRASH and what not in _SIGNALS:
                continue
            report_at = index + 1
            case.claim(where, "signal", "fault")
            if what in _SIGNALS:
                case.add_fact("signal", _SIGNALS[what], where, quoted, 85)
            else:
                case.add_fact("sanitizer_error", what, where, quoted, 85)
            if addr := m["addr"] or m["addr2"]:
                address = (addr, where, quoted)
        elif report_at is None:
            continue
        elif m := _CAUSE.search(text):
            if m["rw"] != "UNKNOWN":
                case.add_fact("fault_access", m["rw"].lower(), where, quoted, 85)
        elif _HIGH_ADDRESS.search(text):
            address = None  # the sanitizer reports 0x0 for a fault whose address it cannot know
        elif m := _ACCESS.match(text):
            address = (m["addr"], where, quoted)
            case.add_fact("fault_access", m["rw"].lower(), where, quoted, 85)
        elif m := _SUMMARY.match(text):
            case.claim(where, "signal", "fault")
            summary = Frame(index=0, where=where, text=quoted, module=m["module"], offset=int(m["off"], 16),
                            symbol=m["symbol"], symbol_source="input" if m["symbol"] else None)
    if report_at is None:
        return
    if address is not None:
        value, where, quoted = address
        case.add_fact("fault_address", f"0x{int(value, 16):x}", where, quoted, 85)
    _mark_crashing(case, artifact.name, report_at, summary)


def _mark_crashing(case: Case, artifact: str, report_at: int, summary: Frame | None) -> None:
    """The report's own stack (the first to start within a few lines after its first line) is the crashing
    one; without one, the SUMMARY line's module and offset stand for its top frame."""
    if any(s.crashing for s in case.stacks):
        return
    for stack in case.stacks:
        start = stack.frames[0].where
        if start.artifact == artifact and report_at < start.line <= report_at + _STACK_WITHIN and stack.frames[0].index == 0:
            stack.crashing = True
            return
    if summary is not None:
        case.stacks.append(Stack(frames=[summary], where=summary.where, form="summary", crashing=True))
