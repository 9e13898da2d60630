"""The crash reports of omnitrace / rocprofiler-systems (timemory's signal handler): signal, address and stacks.

Forms (ROCm/omnitrace#259 and #308)::

    [omnitrace][85176][0] Signal 11 caught : Segmentation fault (Address not mapped to object [0x100])
    ### ERROR ### [omnitrace][PID=85174][TID=0] signal=11 (SIGSEGV) segmentation violation. code: 1 (SEGV_MAPERR ::
        Address not mapped), address of faulting memory reference: 0x100
    Backtrace (demangled):
    [PID=1236084][TID=0][0/8] __restore_rt
    [PID=1236084][TID=0][4/8] omnitrace::roctx_api_callback(unsigned int, unsigned int, void const*, void*) +0x245
    Backtrace (lineinfo):
    [PID=11012][TID=505][1/7]
        [/opt/rocm-5.7.0/lib/libroctracer64.so.4.1.0:?] roctracer_open_pool

and glibc's ``/lib.so(sym+0xOFF) [0xADDR]`` after the same prefix. The handler prints one stack several times
(raw, demangled, with line info); each block is a stack, and the one that names modules (else the first) after a
caught signal is the crashing one. Frames up to the signal trampoline (``__restore_rt``) are the handler's and are
left out.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles
from triage.parsers.mpistack import CAUSES, SIGNALS, glibc_frame

_TOOL = r"\[(?:omnitrace|rocprof-sys|rocprofsys|rocprofiler-systems)\]"
_CAUGHT = lazy(_TOOL + r"\[\d+\](?:\[\d+\])? Signal (?P<n>\d+) caught : [^(\n]*?(?:\((?P<why>[^()\[]*?)\s*"
               r"(?:\[(?P<addr>0x[0-9a-fA-F]+)\])?\))?\s*$")
_ERROR = lazy(_TOOL + r"\[PID=\d+\]\[TID=\d+\] signal=(?P<n>\d+) \(SIG[A-Z]+\)")
_ERROR_CODE = lazy(r"\bcode: -?\d+ \((?P<code>[A-Z]+_[A-Z]+)")
_ERROR_ADDRESS = lazy(r"\baddress of faulting memory reference: (?P<addr>0x[0-9a-fA-F]+)")
_HEADER = lazy(r"^\s*Backtrace(?: \((?P<kind>[\w ]+)\))?:\s*$")
_FRAME = lazy(r"^\s*\[PID=(?P<pid>\d+)\]\[TID=(?P<tid>-?\d+)\]\[(?P<i>\d+)/\d+\]\s*(?P<rest>.*?)\s*$")
_LINEINFO = lazy(r"^\s+\[(?P<f>[^\]:]+?)(?::(?P<l>\d+|\?))?\]\s+(?P<s>\S.*?)\s*$")
_SYMBOL_OFFSET = lazy(r"^(?P<s>\S.*?)\s+\+(?P<o>0x[0-9a-fA-F]+)$")
_NEEDLES = Needles(_CAUGHT, _ERROR, _HEADER, r"^\s*\[PID=\d+\]\[TID=-?\d+\]\[\d+/\d+\]")
_TRAMPOLINE = "__restore_rt"


def _frame(index: int, where: Where, text: str, rest: str, below: str | None) -> Frame | None:
    if not rest:  # lineinfo: the frame's text is on the next line
        if below is None or not (m := _LINEINFO.match(below)):
            return None
        path, symbol = m["f"], m["s"]
        library = ".so" in path.rsplit("/", 1)[-1]
        return Frame(index=index, where=where, text=f"{text.strip()} {below.strip()}", module=path if library else None,
                     file=None if library else path, file_line=int(m["l"]) if m["l"] and m["l"].isdigit() else None,
                     symbol=symbol, symbol_source="input")
    if "[0x" in rest:
        return glibc_frame(index, where, text, rest)
    m = _SYMBOL_OFFSET.match(rest)
    symbol, offset = (m["s"], int(m["o"], 16)) if m else (rest, None)
    return Frame(index=index, where=where, text=text.strip(), symbol=symbol, symbol_offset=offset, symbol_source="input")


def parse(artifact: Artifact, case: Case) -> None:
    """Add the signal facts and the backtrace blocks of omnitrace's / rocprofiler-systems' crash reports."""
    blocks: list[list[Frame]] = []
    current: list[Frame] | None = None
    caught = False
    lines = artifact.lines
    for index, where, text in _NEEDLES.readable_lines(artifact):
        quoted = text.strip()
        if m := _CAUGHT.search(text) or _ERROR.search(text):
            caught = True
            if signal := SIGNALS.get(m["n"]):
                case.add_fact("signal", signal, where, quoted, 85)
            named = _ERROR_CODE.search(text)
            code = named["code"] if named else CAUSES.get((m.groupdict().get("why") or "").strip().lower())
            if code:
                case.add_fact("si_code", code, where, quoted, 85)
            address = m.groupdict().get("addr") or ((a := _ERROR_ADDRESS.search(text)) and a["addr"])
            if address:
                case.add_fact("fault_address", f"0x{int(address, 16):x}", where, quoted, 85)
            case.claim(where, "signal", "fault")
            continue
        if _HEADER.match(text):
            current = []
            blocks.append(current)
            case.claim(where, "stack-header", "stack")
            continue
        if not (m := _FRAME.match(text)):
            continue
        if current is None:
            current = []
            blocks.append(current)
        below = lines[index + 1] if index + 1 < len(lines) else None
        frame = _frame(int(m["i"]), where, text, m["rest"], below)
        if frame is not None:
            current.append(frame)
            case.claim(where, "frame", "stack")
    stacks = [_from_trampoline(frames) for frames in blocks]
    stacks = [frames for frames in stacks if frames]
    if not stacks:
        return
    best = next((frames for frames in stacks if any(f.module for f in frames)), stacks[0])
    for frames in stacks:
        crashing = caught and frames is best and not any(s.crashing for s in case.stacks)
        case.stacks.append(Stack(frames=frames, where=frames[0].where, form="omnitrace", crashing=crashing))


def _from_trampoline(frames: list[Frame]) -> list[Frame]:
    """The frames after the signal trampoline (all of them when it is not there), renumbered from 0."""
    at = next((n for n, f in enumerate(frames) if (f.symbol or "").split("(")[0] == _TRAMPOLINE), -1)
    kept = frames[at + 1:]
    for number, frame in enumerate(kept):
        frame.index = number
    return kept
