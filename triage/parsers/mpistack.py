"""The crash reports MPI and communication libraries print from their own signal handlers: frames, signal, address.

HPC jobs rarely run under a debugger; when a rank dies, Open MPI or UCX catches the signal and
prints the stack with glibc's ``backtrace_symbols`` (module, symbol or module offset, address) or,
in UCX builds with BFD, with symbols and source lines. Real forms read here (openucx/ucx#5611,
#8483; NVIDIA/nccl#817)::

    [host:151176:0:151176] Caught signal 8 (Floating point exception: floating-point overflow)    UCX
    ==== backtrace (tid: 151176) ====
     0  /sw/ucx/1.8.1/lib/libucs.so.0(ucs_handle_error+0x19c) [0x2aaab169cabc]
     3  /opt/rocm/lib/librccl.so.1(+0x120057) [0x7ff1c18c1057]
     0 0x000000000087a40c test_ucp_mmap_rereg_Test::test_body()  /src/test_ucp_mmap.cc:449          (with BFD)
     1  0x000000000004c4d3 ucs_debug_print_backtrace()  ???:0
    =================================

    [host:2287443] *** Process received signal ***                                                Open MPI
    [host:2287443] Signal: Segmentation fault (11)
    [host:2287443] Signal code: Address not mapped (1)
    [host:2287443] Failing at address: 0x10
    [host:2287443] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f9382842520]
    [host:2287443] [ 1] /opt/rocm/lib/libhsa-runtime64.so.1(+0x4857d)[0x2ac05b33357d]
    [host:2287443] *** End of error message ***

Their first frames are the handler's, not the crash's: UCX's own (``ucs_handle_error``,
``ucs_debug_print_backtrace``, anything in libucs) and then the kernel's signal trampoline in
libc or libpthread (Open MPI starts there). Those are left out, so frame 0 of the stack is where
the fault happened, as it is for a debugger's. A ``+0xOFF`` in brackets is the offset in the
module (glibc prints it when it has no symbol); ``sym+0xOFF`` is an offset from the symbol.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles

SIGNALS = {"4": "ILL", "6": "ABRT", "7": "BUS", "8": "FPE", "11": "SEGV"}
# What the handlers say of si_code (UCX names the cause, Open MPI names it and gives its number), as <signal.h> has it.
CAUSES = {"address not mapped to object": "SEGV_MAPERR", "invalid permissions for mapped object": "SEGV_ACCERR",
           "integer divide by zero": "FPE_INTDIV", "floating-point divide by zero": "FPE_FLTDIV",
           "floating-point overflow": "FPE_FLTOVF", "floating-point underflow": "FPE_FLTUND",
           "floating-point invalid operation": "FPE_FLTINV", "illegal opcode": "ILL_ILLOPC",
           "illegal operand": "ILL_ILLOPN", "invalid address alignment": "BUS_ADRALN",
           "nonexistent physical address": "BUS_ADRERR"}
_OMPI_CODES = {("SEGV", "1"): "SEGV_MAPERR", ("SEGV", "2"): "SEGV_ACCERR", ("BUS", "1"): "BUS_ADRALN",
               ("BUS", "2"): "BUS_ADRERR", ("FPE", "1"): "FPE_INTDIV", ("FPE", "3"): "FPE_FLTDIV"}

# mpirun --tag-output puts "RANK: " before each line of a rank; a timestamp may come first.
_TAG = r"^(?:\d+:\s?)?"
_HOST = r"\[[\w.-]+:\s*\d+\s*(?::\s*\d+)*\]"  # UCX: [host:pid:thread:tid] (pid padded); Open MPI: [host:pid]
_UCX_SIGNAL = lazy(_TAG + r".*?" + _HOST + r"\s+Caught signal (?P<n>\d+) \((?P<what>[^:()]+)(?::\s*(?P<why>[^()]*?)"
                   r"(?: at address (?P<addr>0x[0-9a-fA-F]+|\(nil\)))?)?\)")
_UCX_HEADER = lazy(_TAG + r"==== backtrace \(tid:\s*(?P<t>\d+)\) ====\s*$")
_UCX_END = lazy(_TAG + r"={20,}\s*$")
# " 0  PATH(SYM+0xOFF) [0xADDR]" (glibc's form) or " 0 0xADDR SYM()  FILE:LINE" (UCX's own, with BFD)
_UCX_FRAME = lazy(_TAG + r"\s*(?P<i>\d{1,3})\s+(?:(?P<glibc>\S.*?\[0x[0-9a-fA-F]+\])"
                  r"|(?P<a>0x[0-9a-fA-F]+)\s+(?P<s>\S.*?)\(\)\s+(?P<f>\S*?):(?P<l>\d+))\s*$")
_OMPI_RECEIVED = lazy(_TAG + _HOST + r" \*\*\* Process received signal \*\*\*")
_OMPI_SIGNAL = lazy(_TAG + _HOST + r" Signal: (?P<what>[^()]+?) \((?P<n>\d+)\)\s*$")
_OMPI_CODE = lazy(_TAG + _HOST + r" Signal code: (?P<what>[^()]*?)\s*\((?P<n>-?\d+)\)\s*$")
_OMPI_ADDRESS = lazy(_TAG + _HOST + r" Failing at address: (?P<addr>0x[0-9a-fA-F]+|\(nil\))")
_OMPI_FRAME = lazy(_TAG + _HOST + r" \[\s*(?P<i>\d{1,3})\] (?P<glibc>\S.*)$")
_OMPI_END = lazy(_TAG + _HOST + r" \*\*\* End of error message \*\*\*")
# glibc's backtrace_symbols: "PATH(SYM+0xOFF) [0xADDR]", "PATH(+0xOFF)[0xADDR]", "PATH[0xADDR]", "[0xADDR]"
_GLIBC = lazy(r"^(?P<m>[^\s()\[\]][^()\[\]]*?)?(?:\((?P<s>[^()+]*)(?:(?P<sign>[+-])(?P<o>0x[0-9a-fA-F]+))?\))?\s*"
              r"\[(?P<a>0x[0-9a-fA-F]+)\]\s*$")

_NEEDLES = Needles(r"Caught signal \d+ \(", r"==== backtrace \(tid:", r"^(?:\d+:\s?)?={20,}\s*$", _UCX_FRAME,
                   r"\] \*\*\* (?:Process received signal|End of error message) \*\*\*", r"\] Signal(?: code)?: ",
                   r"\] Failing at address: ", r"\] \[\s*\d{1,3}\] ")

_TRAMPOLINE_LIBS = ("libc.so", "libc-", "libpthread.so", "libpthread-")
MAX_FRAMES = 512  # frames kept of one report (UCX stops at 64 and Open MPI's are as short)


def _basename(path: str | None) -> str:
    return (path or "").replace("\\", "/").rsplit("/", 1)[-1]


def glibc_frame(index: int, where: Where, text: str, body: str) -> Frame | None:
    if not (m := _GLIBC.match(body.strip())):
        return None
    module = m["m"].strip() if m["m"] else None
    symbol = (m["s"] or "").strip() or None
    offset = int(m["o"], 16) if m["o"] and m["sign"] == "+" else None
    frame = Frame(index=index, where=where, text=text.strip(), address=int(m["a"], 16), module=module)
    if symbol:
        frame.symbol, frame.symbol_offset, frame.symbol_source = symbol, offset, "input"
    else:
        frame.offset = offset  # glibc's "+0xOFF" without a symbol: from the module's base
    return frame


def _ucx_frame(index: int, where: Where, text: str, m: object) -> Frame | None:
    if m["glibc"]:  # type: ignore[index]
        return glibc_frame(index, where, text, m["glibc"])  # type: ignore[index]
    symbol = None if m["s"].strip() in ("???", "") else m["s"].strip()  # type: ignore[index]
    path = m["f"]  # type: ignore[index]
    line = int(m["l"])  # type: ignore[index]
    frame = Frame(index=index, where=where, text=text.strip(), address=int(m["a"], 16), symbol=symbol,  # type: ignore[index]
                  file=path if path and path != "???" and line else None, file_line=line or None)
    if symbol:
        frame.symbol_source = "input"
    return frame


def _is_handler(frame: Frame) -> bool:
    """UCX's own signal-handling frames."""
    return _basename(frame.module).startswith("libucs.") or (frame.symbol or "").startswith("ucs_")


def is_trampoline(frame: Frame) -> bool:
    """The kernel's signal return trampoline, named by the C library's module or, symbolized without it, by one of
    glibc's internal names (``__restore_rt``, or the symbol before it: ``__funlockfile``, ``__sigaction``)."""
    name = _basename(frame.module)
    if name:
        return name.startswith(_TRAMPOLINE_LIBS)
    return (frame.symbol or "").startswith("__") and frame.file is None


def crash_frames(frames: list[Frame]) -> list[Frame]:
    """The frames from where the fault happened on: the handler's own frames and the trampoline left out, the rest
    renumbered from 0."""
    start = 0
    while start < len(frames) and _is_handler(frames[start]):
        start += 1
    if start < len(frames) and is_trampoline(frames[start]):
        start += 1
    kept = frames[start:]
    for number, frame in enumerate(kept):
        frame.index = number
    return kept


class _Report:
    """One handler's report being read: its frames and whether a signal line opened it."""

    def __init__(self, form: str, signalled: bool, thread: str | None = None) -> None:
        self.form, self.signalled, self.thread = form, signalled, thread
        self.frames: list[Frame] = []
        self.last = -10


def parse(artifact: Artifact, case: Case) -> None:
    """Add the stacks, signals, si_codes and fault addresses of Open MPI's and UCX's crash reports in the artifact."""
    report: _Report | None = None
    ucx_signal = -10  # the index of the last UCX "Caught signal" line: its backtrace follows
    ompi_signal: dict[str, str] = {}  # "[host:pid]" -> its signal name, for the code line after it
    for index, where, text in _NEEDLES.readable_lines(artifact):
        if m := _UCX_SIGNAL.match(text):
            signal = _signal(case, where, text, m["n"])
            if signal and m["why"] and (code := CAUSES.get(m["why"].strip().lower())):
                case.add_fact("si_code", code, where, text.strip(), 85)
            if m["addr"]:
                _address(case, where, text, m["addr"])
            ucx_signal = index
            continue
        if m := _UCX_HEADER.match(text):
            _close(case, report)
            report = _Report("ucx", signalled=ucx_signal >= 0, thread=m["t"])
            report.last = index
            case.claim(where, "stack-header", "stack")
            continue
        if m := _OMPI_RECEIVED.match(text):
            _close(case, report)
            report = _Report("open-mpi", signalled=True)
            report.last = index
            case.claim(where, "signal", "fault")
            continue
        if m := _OMPI_SIGNAL.match(text):
            if signal := _signal(case, where, text, m["n"]):
                ompi_signal[text.split("]", 1)[0]] = signal
            continue
        if m := _OMPI_CODE.match(text):
            signal = ompi_signal.get(text.split("]", 1)[0], "")
            if code := _OMPI_CODES.get((signal, m["n"])):
                case.add_fact("si_code", code, where, text.strip(), 85)
            case.claim(where, "signal", "fault")
            continue
        if m := _OMPI_ADDRESS.match(text):
            _address(case, where, text, m["addr"])
            continue
        if _OMPI_END.match(text) or (report and report.form == "ucx" and _UCX_END.match(text)):
            if report is not None:
                case.claim(where, "stack-header")
            _close(case, report)
            report = None
            continue
        frame = None
        if m := _OMPI_FRAME.match(text):
            if report is None or report.form != "open-mpi" or index - report.last > 3:
                _close(case, report)
                report = _Report("open-mpi", signalled=False)
            frame = glibc_frame(int(m["i"]), where, text, m["glibc"])
        elif (m := _UCX_FRAME.match(text)) and report is not None and report.form == "ucx" and index - report.last <= 3:
            frame = _ucx_frame(int(m["i"]), where, text, m)
        if frame is None or report is None:
            continue
        if report.frames and frame.index <= report.frames[-1].index:  # the next rank's report, headers lost
            _close(case, report)
            report = _Report(report.form, signalled=False, thread=None)
        if len(report.frames) < MAX_FRAMES:
            report.frames.append(frame)
        case.claim(where, "frame", "stack")
        report.last = index
    _close(case, report)


def _signal(case: Case, where: Where, text: str, number: str) -> str | None:
    signal = SIGNALS.get(number)
    if signal:
        case.add_fact("signal", signal, where, text.strip(), 85)
    case.claim(where, "signal", "fault")
    return signal


def _address(case: Case, where: Where, text: str, value: str) -> None:
    address = 0 if value == "(nil)" else int(value, 16)
    case.add_fact("fault_address", f"0x{address:x}", where, text.strip(), 85)
    case.claim(where, "fault")


def _close(case: Case, report: _Report | None) -> None:
    if report is None or not report.frames:
        return
    frames = crash_frames(report.frames)
    if not frames:
        return
    crashing = report.signalled and not any(s.crashing for s in case.stacks)
    case.stacks.append(Stack(frames=frames, where=frames[0].where, form=report.form, thread=report.thread,
                             crashing=crashing))
