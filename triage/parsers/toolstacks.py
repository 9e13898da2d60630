"""Crash stacks in the forms lldb, Valgrind and Julia print: frames, the signal and the fault address.

gdb's and coredumpctl's ``#N`` frames are the backtrace parser's; these three print theirs
otherwise, and users of the Julia GPU packages, of macOS-style toolchains and of memory
checkers paste them::

    * thread #1, name = 'python3', stop reason = signal SIGSEGV: invalid address (fault address: 0x18)
      * frame #0: 0x00007fffe6a3b2c4 libamdhip64.so.6`hipLaunchKernel + 36            lldb
        frame #1: 0x000055555555517 main`main at main.c:10:5

    ==4242== Process terminating with default action of signal 11 (SIGSEGV)              Valgrind
    ==4242==  Access not within mapped region at address 0x18
    ==4242==    at 0x4853121: ??? (in /opt/rocm/lib/libamdhip64.so.6.1.60100)
    ==4242==    by 0x4853177: hipLaunchKernel (in /opt/rocm/lib/libamdhip64.so.6.1.60100)

    [8887] signal 11 (1): Segmentation fault                                              Julia
    in expression starting at REPL[2]:1
    unknown function (ip: 0x7f0a5662e915) at /usr/lib64/libamdhip64.so
    hipStreamSynchronize at /opt/rocm/lib/libamdhip64.so (unknown line)
    wait! at /home/u/.julia/packages/AMDGPU/PtNLZ/src/sync.jl:20

The stack that follows the crash's own line (lldb's stop reason, Valgrind's "Process terminating",
Julia's signal line) is the crashing one. lldb's "+ 36" is an offset from the symbol, not from the
module, so it is not kept as the frame's module offset.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles

_SIGNAL_NUMBERS = {"4": "ILL", "6": "ABRT", "7": "BUS", "8": "FPE", "11": "SEGV"}

# lldb
_LLDB_THREAD = lazy(r"^\s*\*?\s*thread #(?P<t>\d+)(?:, name = '[^']*')?(?:, stop reason = (?P<why>.*))?$")
_LLDB_SIGNAL = lazy(r"signal SIG(?P<name>[A-Z]+)(?:: [^(]*\(fault address: (?P<addr>0x[0-9a-fA-F]+)\))?")
_LLDB_FRAME = lazy(r"^\s*\*?\s*frame #(?P<i>\d{1,5}): (?P<a>0x[0-9a-fA-F]+) (?P<m>[^`\s]+)`(?P<s>.*?)"
                   r"(?: at (?P<f>[^\s:]+):(?P<l>\d+)(?::\d+)?)?$")
_LLDB_SYMBOL_OFFSET = lazy(r"\s\+\s\d+$")
_LLDB_ARGS = lazy(r"\((?:[^()]|\([^()]*\))*\)$")

# Valgrind
_VG = r"^==\d+=="  # the process id Valgrind puts before each of its lines
_VG_FRAME = lazy(_VG + r"\s+(?P<kind>at|by) (?P<a>0x[0-9A-Fa-f]+): (?P<s>.+?) \((?:in (?P<m>[^()]+)|(?P<f>[^():]+):(?P<l>\d+))\)$")
_VG_TERMINATING = lazy(_VG + r"\s*Process terminating with default action of signal (?P<n>\d+) \(SIG(?P<name>[A-Z]+)\)")
_VG_ADDRESS = lazy(_VG + r"\s+(?:Access not within mapped region|Bad permissions for mapped region|"
                   r"General Protection Fault).*?(?: at address (?P<addr>0x[0-9A-Fa-f]+))?$")
_VG_ERROR = lazy(_VG + r"\s*Invalid (?P<rw>read|write) of size \d+")

# Julia
# indented when pasted inside a Markdown list or quote: the needle must choose the line under every scanner engine
_JL_SIGNAL = lazy(r"^\s*(?:\[\d+\] )?signal (?:\((?P<a>\d+)(?:\.-?\d+)?\)|(?P<b>\d+) \(-?\d+\)): \S")
_JL_FRAME = lazy(r"^(?:unknown function \(ip: (?P<ip>0x[0-9a-fA-F]+)\)(?: at (?P<m>\S+))?|"
                 r"(?P<s>\S.*?) at (?P<p>\S+?)(?: \(unknown line\)|:(?P<l>\d+)(?: \[inlined\])?))$")
_JL_SKIP = lazy(r"^in expression starting at ")

_NEEDLES = Needles(_LLDB_THREAD, r"^\s*\*?\s*frame #\d", r"^==\d+==\s+(?:at|by) 0x", _VG_TERMINATING, _VG_ADDRESS,
                   _VG_ERROR, _JL_SIGNAL, _JL_SKIP)
JULIA_STACK_LINES = 400  # a Julia stack is read up to this many lines after its signal line


def parse(artifact: Artifact, case: Case) -> None:
    """Add the stacks, signals and fault addresses of lldb, Valgrind and Julia output in the artifact."""
    stack: list[Frame] = []
    crashing = False
    thread: str | None = None
    last = -10
    julia_until = -1
    for index, where, text in _NEEDLES.readable_lines(artifact):
        if index <= julia_until:
            continue
        if m := _JL_SIGNAL.match(text):
            _close(case, stack, crashing, thread)
            stack, crashing, thread = [], False, None
            julia_until = _julia(artifact, index, case, _SIGNAL_NUMBERS.get(m["a"] or m["b"] or ""))
            continue
        if _JL_SKIP.match(text.strip()) and _julia_frame_follows(artifact, index):
            # Julia's crash report pasted from its second line: "in expression starting at" is followed by the
            # report's unnumbered frames only there (an uncaught error prints "Stacktrace:" and numbered frames)
            _close(case, stack, crashing, thread)
            stack, crashing, thread = [], False, None
            julia_until = _julia(artifact, index, case, None)
            continue
        frame = _lldb_frame(text, where) or _valgrind_frame(text, where)
        if frame is not None and frame.index < 0:  # Valgrind's "by": the next frame of the open stack
            frame.index = stack[-1].index + 1 if stack and index - last <= 2 else -1
        if frame is not None:
            starts = frame.index == 0 or (stack and frame.index <= stack[-1].index) or index - last > 2
            if starts and stack:
                _close(case, stack, crashing, thread)
                stack, crashing, thread = [], False, None
            if not stack and frame.index != 0:
                continue  # a frame list read from its middle says nothing of the crash
            stack.append(frame)
            case.claim(where, "frame", "stack")
            last = index
            continue
        if m := _LLDB_THREAD.match(text):
            _close(case, stack, crashing, thread)
            stack, thread = [], m["t"]
            signal = _LLDB_SIGNAL.search(m["why"] or "")
            crashing = bool(signal) and not any(s.crashing for s in case.stacks)
            if signal:
                case.add_fact("signal", signal["name"], where, text.strip(), 90)
                if signal["addr"]:
                    case.add_fact("fault_address", f"0x{int(signal['addr'], 16):x}", where, text.strip(), 90)
                case.claim(where, "signal", "fault")
        elif m := _VG_TERMINATING.match(text):
            _close(case, stack, crashing, thread)
            stack, thread = [], None
            crashing = not any(s.crashing for s in case.stacks)
            case.add_fact("signal", m["name"], where, text.strip(), 85)
            case.claim(where, "signal", "fault")
        elif m := _VG_ADDRESS.match(text):
            if m["addr"]:
                case.add_fact("fault_address", f"0x{int(m['addr'], 16):x}", where, text.strip(), 85)
            case.claim(where, "fault")
        elif m := _VG_ERROR.match(text):
            case.add_fact("fault_access", m["rw"], where, text.strip(), 40)
    _close(case, stack, crashing, thread)


def _lldb_frame(text: str, where: Where) -> Frame | None:
    if not (m := _LLDB_FRAME.match(text)):
        return None
    symbol = _LLDB_SYMBOL_OFFSET.sub("", m["s"]).strip()
    if symbol.endswith(")"):
        symbol = _LLDB_ARGS.sub("", symbol).strip()
    named = symbol and not symbol.startswith("___lldb_unnamed_symbol")
    frame = Frame(index=int(m["i"]), where=where, text=text.strip(), address=int(m["a"], 16), module=m["m"],
                  symbol=symbol if named else None, file=m["f"], file_line=int(m["l"]) if m["l"] else None)
    if named:
        frame.symbol_source = "input"
    return frame


def _valgrind_frame(text: str, where: Where) -> Frame | None:
    """Valgrind numbers no frames: ``at`` opens a stack (frame 0), each ``by`` is the next."""
    if not (m := _VG_FRAME.match(text)):
        return None
    symbol = None if m["s"] == "???" else m["s"]
    frame = Frame(index=0 if m["kind"] == "at" else -1, where=where, text=text.strip(), address=int(m["a"], 16),
                  module=m["m"].strip() if m["m"] else None, symbol=symbol, file=m["f"],
                  file_line=int(m["l"]) if m["l"] else None)
    if symbol:
        frame.symbol_source = "input"
    return frame


def _julia_frame_follows(artifact: Artifact, index: int) -> bool:
    """Whether the line after ``index`` is a frame of Julia's crash report."""
    if index + 1 >= len(artifact.lines):
        return False
    line = artifact.lines[index + 1].strip()
    return bool(_JL_FRAME.match(line)) and not _JL_SKIP.match(line)


def _julia(artifact: Artifact, start: int, case: Case, signal: str | None) -> int:
    """Read the frames after Julia's signal line at ``start``; the index of the last line read."""
    where = Where(artifact.name, start + 1)
    text = artifact.lines[start].strip()
    if signal:
        case.add_fact("signal", signal, where, text, 85)
    case.claim(where, "signal", "fault")
    frames: list[Frame] = []
    index = start
    for index in range(start + 1, min(len(artifact.lines), start + 1 + JULIA_STACK_LINES)):
        line = artifact.lines[index].strip()
        if _JL_SKIP.match(line) and not frames:
            continue
        if not (m := _JL_FRAME.match(line)):
            index -= 1
            break
        at = Where(artifact.name, index + 1)
        path = m["m"] or m["p"]
        name = (path or "").rsplit("/", 1)[-1].lower()
        library = path if m["m"] or ".so" in name or name.endswith(".dll") else None
        frame = Frame(index=len(frames), where=at, text=line, address=int(m["ip"], 16) if m["ip"] else None,
                      module=library, symbol=m["s"], file=None if library else path,
                      file_line=int(m["l"]) if m["l"] else None)
        if m["s"]:
            frame.symbol_source = "input"
        frames.append(frame)
        case.claim(at, "frame", "stack")
    if frames:
        case.stacks.append(Stack(frames=frames, where=frames[0].where, form="julia",
                                 crashing=not any(s.crashing for s in case.stacks)))
    return index


def _close(case: Case, frames: list[Frame], crashing: bool, thread: str | None) -> None:
    if not frames:
        return
    form = "valgrind" if frames[0].text.startswith("==") else "lldb"
    for number, frame in enumerate(frames):
        frame.index = number
    previous = case.stacks[-1] if case.stacks else None
    if (previous and previous.form == form and len(previous.frames) == 1
            and previous.frames[0].address == frames[0].address and len(frames) > 1):
        case.stacks.pop()  # lldb's stop shows frame #0 alone; its bt repeats it with the rest
        crashing = crashing or previous.crashing
    case.stacks.append(Stack(frames=frames, where=frames[0].where, form=form, thread=thread, crashing=crashing))
