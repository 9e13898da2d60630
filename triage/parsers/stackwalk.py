"""Breakpad's and rust-minidump's ``minidump_stackwalk`` text: the crash reason and address, and each thread's frames.

Crash reporters built on Breakpad or Crashpad (Electron and Qt applications, game engines, plug-in hosts) send
this text instead of the dump. Real form (RedisDesktop/rdm-debug-symbols#47)::

    Crash reason:  EXCEPTION_ACCESS_VIOLATION_READ
    Crash address: 0x1

    Thread 0 (crashed)
     0  rdm.exe + 0x27896
        eip = 0x00427896   esp = 0x0028d7c0   ebp = 0x0028d858   ebx = 0x06d1e6a8
        Found by: given as instruction pointer in context
     1  rdm.exe + 0x84248
     4  0x33c950
     2  libamdhip64.so.6!hipMemcpy [hip_memory.cpp : 123 + 0x5]            (with symbols)

On Linux the reason is the signal (``SIGSEGV /SEGV_MAPERR``). Frames are read only under a ``Thread N`` header; the
one marked ``(crashed)`` is the crashing stack.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles
from triage.parsers.windows import PLAUSIBLE_FUNCTION_BYTES

# Breakpad's names of Windows exceptions (processor/minidump_processor.cc) -> NTSTATUS and the access
_EXCEPTIONS = {"EXCEPTION_ACCESS_VIOLATION_READ": ("0xC0000005", "read"),
               "EXCEPTION_ACCESS_VIOLATION_WRITE": ("0xC0000005", "write"),
               "EXCEPTION_ACCESS_VIOLATION_EXEC": ("0xC0000005", "execute"),
               "EXCEPTION_ACCESS_VIOLATION": ("0xC0000005", None),
               "EXCEPTION_ILLEGAL_INSTRUCTION": ("0xC000001D", None),
               "EXCEPTION_INT_DIVIDE_BY_ZERO": ("0xC0000094", None),
               "EXCEPTION_STACK_OVERFLOW": ("0xC00000FD", None),
               "EXCEPTION_STACK_BUFFER_OVERRUN": ("0xC0000409", None),
               "EXCEPTION_BREAKPOINT": ("0x80000003", None)}
_REASON = lazy(r"^\s*Crash reason:\s+(?P<r>[A-Z_]+)(?:\s*/\s*(?P<code>[A-Z]+_[A-Z]+))?")
_ADDRESS = lazy(r"^\s*Crash address:\s+(?P<a>0x[0-9a-fA-F]+)")
# (Both end in a greedy run to the line's end, stripped after: a lazy run before "\s*$" was quadratic on trailing spaces.)
_THREAD = lazy(r"^\s*Thread (?P<t>\d+)\b(?P<rest>.*)$")
_FRAME = lazy(r"^\s{0,3}(?P<i>\d{1,4})\s{1,3}(?P<rest>(?:0x[0-9a-fA-F]+|[\w.+-]+(?:!|\s\+\s0x)).*)$")
_SITE = lazy(r"^(?P<m>[\w.+-]+?)(?:!(?P<s>.+?))?(?:\s\+\s(?P<o>0x[0-9a-fA-F]+))?(?:\s+\[(?P<f>[^\]:]+?)\s*:\s*(?P<l>\d+)"
             r"(?:\s*\+\s*0x[0-9a-fA-F]+)?\])?$")
_WINDOWS_MODULE = lazy(r"\.(?:dll|exe|sys|pyd)$", re.IGNORECASE)
_NEEDLES = Needles(_REASON, _ADDRESS, r"^\s*Thread \d+", r"^\s{0,3}\d{1,4}\s{1,3}(?:0x[0-9a-fA-F]+|[\w.+-]+(?:!|\s\+\s0x))")
MAX_FRAMES = 4096


def _frame(index: int, where: Where, text: str, rest: str) -> Frame | None:
    if rest.startswith("0x") and " " not in rest:
        return Frame(index=index, where=where, text=text.strip(), address=int(rest, 16))
    if not (m := _SITE.match(rest)):
        return None
    offset = int(m["o"], 16) if m["o"] else None
    symbol = m["s"]
    frame = Frame(index=index, where=where, text=text.strip(), module=m["m"], symbol=symbol,
                  offset=None if symbol else offset, symbol_offset=offset if symbol else None,
                  file=m["f"], file_line=int(m["l"]) if m["l"] else None)
    if symbol:
        frame.symbol_source = "input" if m["f"] else "nearest-export"
        if not m["f"] and offset is not None and offset > PLAUSIBLE_FUNCTION_BYTES:
            frame.symbol_note = (f"unreliable: 0x{offset:X} bytes past the export, more than any plausible function; "
                                 "the real function is unknown without symbols")
    return frame


def parse(artifact: Artifact, case: Case) -> None:
    """Add the crash reason, address and the threads' stacks of minidump_stackwalk's text in the artifact."""
    frames: list[Frame] = []
    thread: str | None = None
    crashed = False
    read = 0
    for _, where, text in _NEEDLES.readable_lines(artifact):
        quoted = text.strip()
        if m := _REASON.match(text):
            _reason(case, where, quoted, m["r"], m["code"])
        elif m := _ADDRESS.match(text):
            case.add_fact("fault_address", f"0x{int(m['a'], 16):x}", where, quoted, 80)
            case.claim(where, "fault")
        elif m := _THREAD.match(text):
            _close(case, frames, thread, crashed)
            frames, thread, crashed = [], m["t"], "(crashed)" in m["rest"]
            case.claim(where, "stack-header", "stack")
        elif thread is not None and (m := _FRAME.match(text)) and read < MAX_FRAMES:
            frame = _frame(int(m["i"]), where, text, m["rest"].rstrip())
            if frame is None or (frames and frame.index != frames[-1].index + 1) or (not frames and frame.index):
                continue
            frames.append(frame)
            read += 1
            case.claim(where, "frame", "stack")
    _close(case, frames, thread, crashed)


def _reason(case: Case, where: Where, quoted: str, reason: str, code: str | None) -> None:
    if reason in _EXCEPTIONS:
        status, access = _EXCEPTIONS[reason]
        case.add_fact("exception_code", status, where, quoted, 85)
        if access:
            case.add_fact("fault_access", access, where, quoted, 80)
        case.add_fact("os", "windows", where, quoted, 20)
    elif reason.startswith("SIG") and reason[3:].isalpha():
        case.add_fact("signal", reason[3:], where, quoted, 85)
        if code:
            case.add_fact("si_code", code, where, quoted, 85)
    else:
        return
    case.claim(where, "signal", "fault")


def _close(case: Case, frames: list[Frame], thread: str | None, crashed: bool) -> None:
    if not frames:
        return
    windows = any(_WINDOWS_MODULE.search(f.module or "") for f in frames)
    case.stacks.append(Stack(frames=frames, where=frames[0].where, form="windows" if windows else "stackwalk",
                             thread=thread, crashing=crashed and not any(s.crashing for s in case.stacks)))
