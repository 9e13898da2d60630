"""coredumpctl info and gdb output: signal, stacks, ``info registers`` and ``x/i``.

Frame forms read (one per line, innermost first)::

    #0  0x00007f3c2a4b71c9 n/a (libamdhip64.so.7 + 0x4b71c9)          coredumpctl
    #0  libamdhip64.so.7 + 0x4b71c9                                   shortened paste
    #0  amd::Symbol::getDeviceKernel(amd::Device const&)   (libamdhip64.so.7 + 0x48a610)
    #6  main (strata)
    #9  ggml_backend_cuda_buffer_set_tensor
    #0  0x00007ffff7a3c1c9 in amd::Foo::bar (this=0x0) at rocvirtual.cpp:1725    gdb
    #1  0x00007ffff7a3c1c9 in ?? () from /opt/rocm/lib/libamdhip64.so.5
    #0 0x7f3a1c2b4d5e  (/opt/rocm/lib/libamdhip64.so.6+0x2b4d5e) (BuildId: 4f..)   sanitizers (ASan, UBSan)
    #2 0x55d1c0a01234 in main /home/u/app/main.cpp:42:7
    #0  0x00007fffa6ed9cd8 in  () at /opt/rocm/hip/lib/libamdhip64.so.5    gdb, no function name: the object file
    owner/repo#5  0x00007fffec2b0b45 in ?? () from /opt/rocm-7.0.2/lib/libamdhip64.so.7
                                              copied from a GitHub page, where "#5" had become an issue link

A program that installs its own signal handler (an HPC runtime's freeze-on-error, Python's faulthandler, a
crash reporter) shows gdb the handler's frames, then ``<signal handler called>`` (in some builds with the
trampoline's address and library: ``#2 0x... in <signal handler called> () at /usr/lib/libc.so.6``), then the
frames that received the signal. The stack keeps only those: the frame after the marker is frame 0, where the fault
happened (and its address is the faulting instruction's, not a return address), and the stack is the
crashing one. The handler's own frames (``sleep``, ``abort``) are no fault and are left out of it.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles

# "owner/repo#N": GitHub renders "#N" as a link to an issue, and a copy of the page keeps the repository's name
_FRAME = lazy(r"^\s*(?P<repo>[A-Za-z0-9][A-Za-z0-9-]{0,38}/[\w.-]{1,100})?#(?P<i>\d{1,3})\s+(?P<rest>\S.*)")
# gdb's marker of the frame a signal handler was called on: bare in a live backtrace, with the trampoline's address and
# library in some builds and crash handlers ("#2  0x00007fc9... in <signal handler called> () at /usr/lib/libc.so.6").
_HANDLER_CALLED = lazy(r"^(?:0x[0-9a-fA-F]+\s+in\s+)?<signal handler called>(?:\s*\(\))?(?:\s+(?:at|from)\s+\S+)?\s*$")
_ADDRESS = lazy(r"^(?P<a>0x[0-9a-fA-F]+)(?:\s+in\s+|\s+)")
# The frame's tail parts are tried where a run of white space starts (from inside it they match only where its start
# does): tried from each space of a long run, each took 0.05-0.07 s to fail on a frame line of 4,000 spaces.
# "+ 0xOFF" at the end; the module is the word before it (found from the right: a regex that
# searched for the module first was quadratic on long words).
_OFFSET_END = lazy(r"(?<!\s)\s*\+\s*(?P<o>0x[0-9a-fA-F]+)\)?$")
_AT_FILE = lazy(r"(?<!\s)\s+at\s+(?P<f>\S+?):(?P<l>\d+)$")
# the sanitizers' symbolizer: "func /src/file.cpp:42:7" (a path, a line, perhaps a column) and "(BuildId: hex)".
# Tried only where a run of spaces starts, the path's slash looked for once: a path taken apart at each of its
# slashes, at each space of a run, took most of a second on a long frame line.
_SANITIZER_FILE = lazy(r"(?<!\s)\s+(?P<f>(?=\S*[/\\])\S+?|[\w.-]+\.\w{1,4}):(?P<l>\d+)(?::\d+)?$")
_BUILD_ID = lazy(r"(?<!\s)\s+\(BuildId: [0-9a-fA-F]+\)$")
_FROM = lazy(r"(?<!\s)\s+from\s+(?P<m>\S+)$")
# gdb names the object file with "at" when it knows no function there: "in  () at /usr/lib/libfoo.so.5"
_AT_OBJECT = lazy(r"(?<!\s)\s+at\s+(?P<m>[^\s:]*/[^\s:]*)$")
_MODULE_ONLY = lazy(r"(?<!\s)\s+\((?P<m>[^\s()=,]+)\)$")
_BRACKETED = lazy(r"\([^()]*\)|<[^<>]*>|\[[^\[\]]*\]|\{[^{}]*\}")  # "{lambda()#1}" too
# C++ operators in a name ("operator->", "operator()", "operator<<", "operator delete[]"): read as the word "operator"
_OPERATOR = lazy(r"\boperator(?:\s+(?:new|delete)(?:\[\])?|\(\)|\[\]|->\*?|<=>|<<=?|>>=?|&&|\|\||\+\+|--|[-+*/%^&|~!=<>,]=?)")
_SYMBOL = lazy(r"^[A-Za-z_~$.][\w:~$.@*&]*(?:\s+const)?$")
# GCC's suffix for a specialised copy of a function, which gdb prints after the name: "f(int) [clone .constprop.0]"
_CLONE = lazy(r"(?:\s*\[clone \.[\w.]+\])+$")
_WINDOWS_MODULE = lazy(r"^[\w.-]+\.(?:dll|exe|sys|pyd)$", re.IGNORECASE)
_THREAD = lazy(r"Stack trace of thread (?P<t>\d+):|^Thread (?P<g>\d+(?:\.\d+)?) \(")

_SIGNAL = lazy(r"\bSignal:\s*(?P<n>\d+)\s*\((?P<name>[A-Z]+)\)(?:.*?si_code:\s*(?P<code>[A-Z_0-9]+))?")
_SI_CODE = lazy(r"\bsi_code\s*[:=]\s*(?P<code>[A-Z]+_[A-Z]+|\d+)")
# folly / glog: "*** Signal 11 (SIGSEGV) (0x0) received by PID 4242 (pthread TID ...) ... stack trace: ***"
_FOLLY_SIGNAL = lazy(r"\*\*\* (?:Signal \d+ \(SIG(?P<name>[A-Z]+)\)|SIG(?P<alt>[A-Z]+) \(@0x[0-9a-f]+\)) .*received by PID")
_GDB_SIGNAL = lazy(r"(?:terminated with|received) signal SIG(?P<name>[A-Z]+)")
# A shell's word for the signal that killed the program (glibc's strsignal text), in English and in the translations
# glibc ships for SIGSEGV, with the shell's "(core dumped)" in any language after it.
_SHELL_NAMES = {"Segmentation fault": "SEGV", "Aborted": "ABRT", "Bus error": "BUS",
                "Illegal instruction": "ILL", "Floating point exception": "FPE",
                "Speicherzugriffsfehler": "SEGV", "Erreur de segmentation": "SEGV", "Violación de segmento": "SEGV",
                "Errore di segmentazione": "SEGV", "Falha de segmentação": "SEGV", "Ошибка сегментирования": "SEGV",
                "段错误": "SEGV", "セグメンテーション違反です": "SEGV"}
_SHELL_SIGNAL = lazy(r"^(?:.*:\s)?(?P<msg>" + "|".join(_SHELL_NAMES) + r")(?: \((?:core dumped|[^()\n]{1,60})\))?\s*$")
_EXECUTABLE = lazy(r"^\s*Executable:\s*(?P<p>\S+)")
_REGISTER = lazy(
    r"^\s*(?:\(gdb\)\s*)?(?P<r>r[abcd]x|r[sd]i|r[bs]p|r(?:8|9|1[0-5])|rip|eflags)\s+(?P<v>0x[0-9a-fA-F]+)\b"
)
# gdb, in a terminal of limited width, moves "from LIB", "at FILE:LINE" and long argument lists of a
# frame to the next line, indented; a pasted stack keeps those line breaks.
# A long name pushes the whole argument list to the next line: "    (this=0x0, n=4)" or "    ()".
_CONTINUATION = lazy(r"^\s{2,}(?:from\s+\S+|at\s+\S+:\d+|[\w<>@.]+=\S.*|<optimized out>.*|\((?:\)|[\w<>@.]+=.*\)))$")
# gdb's stop line after "... received signal SIGSEGV": where the program stopped, like frame #0 without the number.
_STOP = lazy(r"^(?P<rest>0x[0-9a-fA-F]+ in \S.*|[A-Za-z_][\w:~<>]* \(.*)$")
# Which thread gdb stopped in: its number on the stop line ('Thread 66 "python" received signal SIGSEGV'), and the
# "[Switching to thread 66 (...)]" that gdb may print between that line and where the thread stopped. A later
# "thread apply all bt" lists that thread's stack among the others, seldom first.
# The name is left out where gdb does not know it; "1.3" is thread 3 of inferior 1 when there are several. gdb prints
# the switch as "[Switching to thread 66 (Thread 0x... (LWP n))]" or, older, "[Switching to Thread 0x... (LWP n)]".
_GDB_STOP_THREAD = lazy(r'^\s*Thread (?P<t>\d+(?:\.\d+)?)(?: "[^"\n]*")? received signal SIG')
_SWITCHING = lazy(r"^\s*\[Switching to [Tt]hread \S")
_CURRENT_INSN = lazy(r"^\s*=>\s*(?:0x[0-9a-fA-F]+\s*(?:<[^>]*>)?:?\s*)?(?P<insn>.+?)\s*(?:<--.*|#.*)?$")
# A line none of the patterns above matches says nothing here.
_NEEDLES = Needles(_FRAME, _THREAD, _SIGNAL, _SI_CODE, _GDB_SIGNAL, _FOLLY_SIGNAL, _SHELL_SIGNAL, _EXECUTABLE, _REGISTER, _CURRENT_INSN,
                   _CONTINUATION, _STOP, _SWITCHING)

MAX_FRAMES = 20_000  # in one analysis: a few hundred threads' stacks; a dump of frames past it costs memory, not insight


def is_symbol(text: str) -> bool:
    """A function name as debuggers print it: no spaces outside brackets, argument lists or templates."""
    if len(text) > 2000 or not text or text[0] in "([<":
        return False
    text = _OPERATOR.sub("operator", text)
    for _ in range(20):
        text, n = _BRACKETED.subn("", text)
        if not n:
            break
    return _SYMBOL.match(text) is not None


def _module_offset(rest: str) -> tuple[str, int, str] | None:
    """``lib.so + 0x10`` or ``(lib.so + 0x10)`` at the end of ``rest``: (module, offset, what is before)."""
    if not (m := _OFFSET_END.search(rest)):
        return None
    head = rest[: m.start()]
    cut = max(head.rfind(" "), head.rfind("\t"), head.rfind("("), head.rfind(")"))
    opened = head.rfind("(")
    if m[0].endswith(")") and 0 <= opened < cut and ("\\" in head[opened:] or "/" in head[opened:]):
        cut = opened  # "(C:\Users\me\Stable Diffusion\...\amdhip64_7.dll+0x18eb4)": a path with spaces, whole
    module = head[cut + 1:].strip()
    if not module:
        return None
    return module, int(m["o"], 16), head[: cut if cut >= 0 and head[cut] == "(" else cut + 1]


def _argument_list(rest: str) -> int | None:
    """Where gdb's argument list at the end of ``rest`` starts: `` (a=1, s=0x1 "text (in parens)", c=40 '(')``
    or `` ()``, after a space (a C++ signature's own list has none); None if the end is not one. Parentheses in
    quoted strings and characters do not count."""
    if not rest.endswith(")"):
        return None
    depth, quoted, at = 0, False, len(rest) - 1
    while at >= 0:
        char = rest[at]
        if char == '"' and (at == 0 or rest[at - 1] != "\\"):
            quoted = not quoted
        elif quoted:
            pass
        elif char == "'" and at >= 2 and rest[at - 2] == "'":
            at -= 2  # a character: '(' or ')'
        elif char == ")":
            depth += 1
        elif char == "(":
            depth -= 1
            if depth == 0:
                args = rest[at + 1:-1]
                if at and rest[at - 1] in " \t" and rest[:at].strip() and (not args or "=" in args):
                    return len(rest[:at].rstrip())
                return None
        at -= 1
    return None


def parse_frame_text(rest: str) -> dict | None:
    """Split the text after ``#N`` into address, symbol, module, offset, file; None if not a frame."""
    out: dict = {}
    rest = rest.strip()
    if m := _ADDRESS.match(rest):
        out["address"] = int(m["a"], 16)
        rest = rest[m.end():]
    if m := _BUILD_ID.search(rest):
        rest = rest[: m.start()]
    if m := _AT_FILE.search(rest) or _SANITIZER_FILE.search(rest):
        out["file"], out["file_line"] = m["f"], int(m["l"])
        rest = rest[: m.start()]
    if m := _FROM.search(rest) or ("file" not in out and _AT_OBJECT.search(rest)):
        out["module"] = m["m"]
        rest = rest[: m.start()]
    if found := _module_offset(rest):
        out["module"], out["offset"], rest = found
    elif (m := _MODULE_ONLY.search(rest)) and "module" not in out:
        out["module"] = m["m"]
        rest = rest[: m.start()]
    if (cut := _argument_list(rest)) is not None:
        rest = rest[:cut]
    rest = rest.strip()
    if rest.endswith("]") and "[clone ." in rest:  # looked for only then: a long joined record is costly to search
        rest = _CLONE.sub("", rest)
    if rest in ("n/a", "??", "", "()"):  # "()": gdb's frame of a function without a name
        return out if ("address" in out or "module" in out) else None
    if "address" in out and "module" not in out and _WINDOWS_MODULE.match(rest):
        out["module"] = rest  # a Windows handler's "#0 0x00007FF6CE317351  app.exe": the module, no symbol
        return out
    if not is_symbol(rest):
        return None
    out["symbol"] = rest
    return out


def _records(artifact: Artifact) -> list[tuple[int, str]]:
    """The needle lines of the artifact, a frame's (or gdb's stop line's) continuation lines joined to it."""
    out: list[tuple[int, str]] = []
    signal_at = -10
    joinable = -10  # the index of the last line a continuation may join
    for index, _, text in _NEEDLES.readable_lines(artifact):
        if index == joinable + 1 and out and _CONTINUATION.match(text):
            out[-1] = (out[-1][0], f"{out[-1][1]} {text.strip()}")
            joinable = index
            continue
        if _GDB_SIGNAL.search(text):
            signal_at = index
        elif index == signal_at + 1 and _SWITCHING.match(text):
            signal_at = index  # the stop line follows it
            continue
        elif index == signal_at + 1 and (m := _STOP.match(text)):
            text = f"#0  {m['rest']}"  # read as frame #0; dropped in _close when gdb's bt repeats it
        out.append((index, text))
        joinable = index if _FRAME.match(text) else -10
    return out


def parse(artifact: Artifact, case: Case) -> None:
    """Add stacks, signal facts, registers and the current instruction found in the artifact."""
    current: list[Frame] = []
    start = thread = None
    handler: int | None = None  # in the open stack, how many frames a signal handler's are
    signalled: str | None = None  # the gdb thread number the stop line named
    stopped = False  # whether the open stack is that thread's
    last = -10
    room = MAX_FRAMES - sum(len(s.frames) for s in case.stacks)
    for index, text in _records(artifact):
        number = index + 1
        where = Where(artifact.name, number)
        if m := _THREAD.search(text):
            _close(case, current, start, thread, handler, stopped)
            current, start, thread, handler = [], None, m["t"] or m["g"], None
            stopped = m["g"] is not None and m["g"] == signalled
            case.claim(where, "stack-header")
            continue
        m = _FRAME.match(text)
        fields = _fields(m)
        if fields is not None:
            if room <= 0:
                case.warnings.append(f"{artifact.name}: over {MAX_FRAMES} stack frames in all; frames from line "
                                     f"{number} on not read")
                break
            room -= 1
            index = int(m["i"])
            if current and (index <= current[-1].index or number - last > 3):
                _close(case, current, start, thread, handler, stopped)
                current, thread, handler, stopped = [], None, None, False
            if fields.get("handler"):
                handler = len(current)
            else:
                if not current:
                    start = where
                current.append(Frame(index=index, where=where, text=text.strip(), **fields))
                if fields.get("symbol"):
                    current[-1].symbol_source = "input"
            case.claim(where, "frame", "stack")
            last = number
            continue
        if _GDB_SIGNAL.search(text):  # each stop or termination names its thread, or none (a core's)
            signalled = m["t"] if (m := _GDB_STOP_THREAD.match(text)) else None
        _signal_lines(text, where, case)
    _close(case, current, start, thread, handler, stopped)


def _fields(m: re.Match[str] | None) -> dict | None:
    """A frame line's fields, ``{"handler": True}`` for gdb's ``<signal handler called>``, None if not a frame.
    Past an ``owner/repo`` prefix only a frame with an address, a module or a source file is one: ``org/repo#12
    word`` is as likely a sentence that starts with an issue reference."""
    if m is None:
        return None
    if _HANDLER_CALLED.match(m["rest"].strip()):
        return {"handler": True}
    fields = parse_frame_text(m["rest"])
    if fields is not None and m["repo"] and not fields.keys() & {"address", "module", "file"}:
        return None
    return fields


def _close(case: Case, frames: list[Frame], start: Where | None, thread: str | None, handler: int | None,
           stopped: bool = False) -> None:
    """Add the stack; past a signal handler's frames, only the frames that received the signal, renumbered
    from 0, as the crashing stack; ``stopped``: the thread gdb's stop line named, the crashing stack too."""
    if not frames or start is None:
        return
    if any(_WINDOWS_MODULE.match((f.module or "").replace("\\", "/").rsplit("/", 1)[-1]) for f in frames):
        form = "windows"  # "#N 0xADDR (module.dll+0xOFF)" and "#N 0xADDR  module.exe" from Windows crash handlers
    else:
        form = "gdb" if any(f.file or " in " in f.text for f in frames) else "coredump"
    previous = case.stacks[-1] if case.stacks else None
    if (previous and len(previous.frames) == 1 and previous.frames[0].index == 0 and frames[0].index == 0
            and previous.frames[0].address == frames[0].address and previous.form == form):
        case.stacks.pop()  # gdb's stop line, which its bt repeats as frame #0
    crashing = False
    if handler is not None and handler < len(frames):
        frames = frames[handler:]
        for number, frame in enumerate(frames):
            frame.index = number
        start, crashing = frames[0].where, not any(s.crashing for s in case.stacks)
    elif stopped:
        crashing = not any(s.crashing for s in case.stacks)
    case.stacks.append(Stack(frames=frames, where=start, form=form, thread=thread, crashing=crashing))


def _signal_lines(text: str, where: Where, case: Case) -> None:
    if m := _SIGNAL.search(text):
        case.add_fact("signal", m["name"], where, text, 90)
        if m["code"]:
            case.add_fact("si_code", m["code"], where, text, 90)
        case.claim(where, "signal", "fault")
    elif m := _GDB_SIGNAL.search(text):
        case.add_fact("signal", m["name"], where, text, 90)
        case.claim(where, "signal", "fault")
    elif m := _FOLLY_SIGNAL.search(text):
        case.add_fact("signal", m["name"] or m["alt"], where, text, 80)
        case.claim(where, "signal", "fault")
    elif m := _SHELL_SIGNAL.match(text):
        case.add_fact("signal", _SHELL_NAMES[m["msg"]], where, text, 50)
        case.claim(where, "signal", "fault")
    if (m := _SI_CODE.search(text)) and not _SIGNAL.search(text):
        case.add_fact("si_code", m["code"], where, text, 80)
    if m := _EXECUTABLE.match(text):
        case.add_fact("program", m["p"], where, text, 80)
    if m := _REGISTER.match(text):
        case.registers[m["r"]] = int(m["v"], 16)
        case.claim(where, "register")
    elif m := _CURRENT_INSN.match(text):
        case.instructions.append((where, m["insn"].strip()))
        case.claim(where, "instruction", "fault")
