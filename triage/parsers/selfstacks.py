"""Stacks a program's own crash handler prints, without a debugger: glibc's ``backtrace_symbols``
and Abseil's failure signal handler.

A program's own signal or abort handler (llama.cpp's ggml, many C++ tools) prints glibc's form, one
frame a line, module then symbol or module offset, then the address; Abseil's handler (TensorFlow,
JAX/XLA) names the signal and prints each frame's address, stack size and symbol::

    Caught signal 11 (Segmentation fault)                                      a program's handler
    ./build/bin/libggml-base.so(ggml_print_backtrace+0x2f)[0x7f0d2c1d4fa5]
    /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f0d2ba42520]
    /opt/rocm/lib/libamdhip64.so.6(+0x2a1b3c)[0x7f3a2b4c5d6e]

    *** SIGSEGV received at time=1712345678 on cpu 3 ***                        Abseil
    PC: @     0x7f3a2b4c5d6e  (unknown)  hip::Stream::Create()
        @     0x7f3a1a2b3c4d       1024  hip::Stream::Create()

glog's handler (TensorFlow, PaddlePaddle, rocprofiler-sdk's tools) prints the same frames without a stack
size, after a "PC:" line and its own signal line::

    PC: @     0x7f0e47e7291c (unknown)                                          glog
    *** SIGSEGV (@0x10) received by PID 18924 (TID 0x7fed0ac52e40) from PID 16; stack trace: ***
        @     0x7fed0aef3cfe (unknown)
        @     0x7f0e47e7291c crashy_read

A glibc block is the crashing stack when a signal line comes just before it or the C library's
signal trampoline is among its first frames; the frames up to that trampoline are the handler's and
are left out, so frame 0 is where the fault happened. Abseil's block follows its signal line and is
the crashing one, its PC line frame 0. glog's block follows its signal line too; its first frames are the handler's
own, so the stack starts at the frame of the PC line's address when that is among the first few (glog prints a PC
of 0 where it cannot read one, and then every frame is kept). A glibc block needs two frames in a row: one such line alone
is as likely a quoted path. (PyTorch's ``frame #N: ... (0xADDR in lib)`` lines say where an exception
was raised, not where a process crashed: they are not read as a stack, so that no crash condition
takes a HIP error's trace for a crash in the runtime.)
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles
from triage.parsers.mpistack import MAX_FRAMES, SIGNALS, glibc_frame, is_trampoline

# "PATH(SYM+0xOFF) [0xADDR]", "PATH(+0xOFF)[0xADDR]", after an optional frame number ("#3 ", "# 3 " as CPU-X pads it,
# "3: ", "[bt] (3) ")
_GLIBC = lazy(r"^\s*(?:#\s?\d{1,3}\s+|\d{1,3}:?\s+|\[bt\]\s*\(\d{1,3}\)\s+)?(?P<body>[^\s()\[\]][^()\[\]\s]*"
              r"\([^()]*\)\s*\[0x[0-9a-fA-F]+\])\s*$")
# A line that says a signal arrived: a handler's own words, a shell's, glibc's
_SIGNALLED = lazy(r"(?i)\b(?:(?:caught|received|got) signal:? (?:SIG)?(?P<n>\d{1,2}|[A-Z]{3,4})\b|signal (?P<m>\d{1,2})\b"
                  r"|SIG(?P<s>SEGV|ABRT|BUS|FPE|ILL)\b|(?P<segv>segmentation fault)|(?P<bus>bus error)|(?P<abrt>aborted))")
_NAMED = {"segv": "SEGV", "bus": "BUS", "abrt": "ABRT"}
_SIGNAL_WINDOW = 5  # lines between a signal line and the first frame of the stack it caused
_TRAMPOLINE_FRAMES = 4  # a handler prints a few frames of its own before the trampoline

_ABSL_HEADER = lazy(r"^\s*\*\*\* SIG(?P<name>[A-Z]+) received at time=\d+(?: on cpu \d+)? \*\*\*\s*$")
# Abseil's "@ ADDR SIZE SYMBOL" (SIZE or SYMBOL "(unknown)") and glog's "@ ADDR SYMBOL", after "PC: " on the first
_AT_FRAME = lazy(r"^\s*(?P<pc>PC: )?@\s+(?P<a>0x[0-9a-fA-F]+)(?:\s+(?P<size>\(unknown\)|\d+))?\s+(?P<s>(?!\d+\s*$)\S.*?)\s*$")
_GLOG_HEADER = lazy(r"^\s*\*\*\* SIG[A-Z]+ \(@0x[0-9a-fA-F]+\) received by PID \d+")
_GLOG_HANDLER_FRAMES = 6  # glog's own frames and the C library's trampoline before the faulting one

_NEEDLES = Needles(r"\)\s*\[0x[0-9a-fA-F]+\]\s*$", r"received at time=", r"^\s*(?:PC: )?@\s+0x", r"received by PID")


class _Block:
    """One stack being read: its form, frames, and the index of its last line."""

    def __init__(self, form: str, crashing: bool, last: int, pc: int | None = None) -> None:
        self.form, self.crashing, self.last, self.pc = form, crashing, last, pc
        self.frames: list[Frame] = []

    def takes(self, form: str) -> bool:
        """Whether a frame of ``form`` goes on in this block (glog's frames are Abseil's form without a size)."""
        return form == self.form or (self.form == "glog" and form == "abseil")


def parse(artifact: Artifact, case: Case) -> None:
    """Add the stacks a program's own crash handler printed (glibc's, Abseil's and glog's forms) found in the artifact."""
    block: _Block | None = None
    for index, where, text in _NEEDLES.readable_lines(artifact):
        if block is not None and index != block.last + 1:
            _close(case, block)
            block = None
        if m := _ABSL_HEADER.match(text):
            _close(case, block)
            block = _Block("abseil", True, index)
            if m["name"] in SIGNALS.values():
                case.add_fact("signal", m["name"], where, text.strip(), 85)
            case.claim(where, "signal", "fault")
            continue
        if _GLOG_HEADER.match(text):  # its signal is the backtrace parser's; the "PC:" line just before gives frame 0
            pc = _pc_just_before(block, index)
            if pc is None:
                _close(case, block)
            block = _Block("glog", True, index, pc or None)  # glog prints a PC of 0 where it read none
            continue
        if case.kind_of(where) == "frame":  # read already, in a report of its own (Open MPI's, UCX's)
            continue
        frame, form = _frame(text, where)
        if frame is None:
            continue
        pc_line = form == "abseil" and text.lstrip().startswith("PC:")
        if block is None or not block.takes(form) or pc_line:
            _close(case, block)
            signalled = form == "glibc" and _signal_before(artifact, index, case)
            block = _Block(form, form == "abseil" or signalled, index)
        frame.index = len(block.frames)
        if len(block.frames) < MAX_FRAMES:
            block.frames.append(frame)
        block.last = index
    _close(case, block)


def _frame(text: str, where: Where) -> tuple[Frame | None, str]:
    if m := _GLIBC.match(text):
        return glibc_frame(0, where, text, m["body"]), "glibc"
    if m := _AT_FRAME.match(text):
        symbol = None if m["s"] == "(unknown)" else m["s"]
        return Frame(index=0, where=where, text=text.strip(), address=int(m["a"], 16), symbol=symbol,
                     symbol_source="input" if symbol else None), "abseil"
    return None, ""


def _pc_just_before(block: _Block | None, index: int) -> int | None:
    """The address of a block that is only a "PC:" line, on the line before ``index``: glog's PC, printed before its
    signal line."""
    if block is None or block.last != index - 1 or len(block.frames) != 1 or not block.frames[0].text.startswith("PC:"):
        return None
    return block.frames[0].address


def _signal_before(artifact: Artifact, index: int, case: Case) -> bool:
    """Whether a line just before ``index`` says a signal arrived; the signal it names becomes a fact."""
    for at in range(index - 1, max(0, index - _SIGNAL_WINDOW) - 1, -1):
        if m := _SIGNALLED.search(artifact.lines[at]):
            named = next((_NAMED[k] for k in _NAMED if m[k]), None)
            number = m["n"] or m["m"] or m["s"]
            signal = named or SIGNALS.get(number or "") or (number if number in SIGNALS.values() else None)
            if signal:
                case.add_fact("signal", signal, Where(artifact.name, at + 1), artifact.lines[at].strip(), 60)
            return True
    return False


def _close(case: Case, block: _Block | None) -> None:
    if block is None or not block.frames or (len(block.frames) < 2 and block.form == "glibc"):
        return
    frames = block.frames
    crashing = block.crashing
    if block.form == "glibc":
        trampoline = next((i for i, f in enumerate(frames[:_TRAMPOLINE_FRAMES]) if f.module and is_trampoline(f)), None)
        if trampoline is not None and trampoline + 1 < len(frames):
            frames, crashing = frames[trampoline + 1:], True
    elif block.form == "abseil":
        frames = [f for f in frames if not (f.symbol or "").startswith("absl::")] or frames
    elif block.pc is not None:
        at = next((i for i, f in enumerate(frames[:_GLOG_HANDLER_FRAMES]) if f.address == block.pc), 0)
        frames = frames[at:]
    for number, frame in enumerate(frames):
        frame.index = number
    for frame in frames:
        case.claim(frame.where, "frame", "stack")
    crashing = crashing and not any(s.crashing for s in case.stacks)
    case.stacks.append(Stack(frames=frames, where=frames[0].where, form=block.form, crashing=crashing))
