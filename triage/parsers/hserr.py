"""Java HotSpot fatal error reports: an ``hs_err_pid*.log`` file, or its header as the JVM prints it on the console.

A Java program that calls ROCm through JNI or Panama (TornadoVM, Aparapi, DJL, a JCuda-like binding) dies with
one of these instead of a gdb stack. The lines read::

    #  SIGSEGV (0xb) at pc=0x00007f3c2a7a1b2c, pid=48211, tid=48236
    #  EXCEPTION_ACCESS_VIOLATION (0xc0000005) at pc=0x00007ffb1c2d3e4f, pid=9120, tid=7344
    # Java VM: OpenJDK 64-Bit Server VM (21.0.5+11-LTS, mixed mode, sharing, tiered, g1 gc, linux-amd64)
    # Problematic frame:
    # C  [libamdhip64.so.6+0x3a1b2c]  hipMemcpyWithStream+0x4c
    Native frames: (J=compiled Java code, j=interpreted, Vv=VM code, C=native code)
    C  [libhsa-runtime64.so.1+0x6f2d1]  hsa_signal_wait_scacquire+0x91
    V  [libjvm.so+0x8a1b2c]  JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, JavaThread*)+0x2cc
    j  uk.ac.manchester.tornado.drivers.opencl.OCLCommandQueue.finish()V+0
    J 2210 c2 ai.djl.ndarray.NDArray.toArray()[Ljava/lang/Number; ai.djl.api (98 bytes) @ 0x00007f3c1d2e4a10 [0x00007f3c1d2e4980+0x90]
    v  ~StubRoutines::call_stub 0x00007f3c1d1a0d21
    siginfo: si_signo: 11 (SIGSEGV), si_code: 1 (SEGV_MAPERR), si_addr: 0x0000000000000010
    siginfo: EXCEPTION_ACCESS_VIOLATION (0xc0000005), reading address 0x0000000000000010

They become the records every stack format gives: the signal or exception code, its fault address and access, and
the crashing thread's frames (``C``/``V`` frames with module + offset and the nearest symbol, ``j``/``J`` frames
with the Java method as the symbol), marked as the crashing stack so that the fault's module is the native library
the JVM names, not the JVM. Only the ``Native frames:`` section is read as a stack (``Java frames:`` repeats its Java
part); without it, the header's problematic frame stands alone. Users often quote the header without its ``#``.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles

_HEADER_SIGNAL = lazy(r"^\s*(?:#\s+)?SIG(?P<name>[A-Z]+) \((?P<n>0x[0-9a-fA-F]+)\) at pc=(?P<pc>0x[0-9a-fA-F]+)")
_HEADER_EXCEPTION = lazy(r"^\s*(?:#\s+)?(?P<name>EXCEPTION_[A-Z_]+) \((?P<c>0x[0-9a-fA-F]{8})\) at pc=(?P<pc>0x[0-9a-fA-F]+)")
_JAVA_VM = lazy(r"^\s*#\s+Java VM: .*\b(?P<os>linux|windows|bsd|macosx|aix)-(?:amd64|x86_64|aarch64|x86|ppc64le|riscv64)\b")
_PROBLEMATIC = lazy(r"^\s*(?:#\s+)?Problematic frame:\s*$")
_NATIVE_FRAMES = lazy(r"^\s*Native frames: \(")
# One frame line: the kind letter, then [module+0xOFF] and an optional symbol+0xOFF, a bare pc, or a Java method.
_FRAME = lazy(r"^\s*(?:#\s+)?(?P<k>[CVvjJA])\s+(?P<rest>\S.*)$")
# "[module+0xOFF]", then the symbol and its offset and, from JDK 16 on with debug info, the source:
# "...+0x61  (g1ParScanThreadState.cpp:476)". The tail is split from its right end (_split_symbol): one regex
# for it, its symbol lazy and its spaces optional, took a quarter of a second on a line of spaces.
_NATIVE = lazy(r"^\[(?P<m>[^\[\]+]+)\+(?P<o>0x[0-9a-fA-F]+)\](?P<tail>(?:\s.*)?)$")
_SOURCE = lazy(r"\((?P<f>[^()\s]+):(?P<l>\d+)\)")
_SYMBOL_OFFSET = lazy(r"\+(?P<so>0x[0-9a-fA-F]+)")
_BARE_PC = lazy(r"^(?P<a>0x[0-9a-fA-F]+)\s*$")
# "J 2210 c2 pkg.Class.method(args)ret module (98 bytes) @ 0xPC [0xSTART+0xOFF]"; JDK 8 has no compiler level word.
_COMPILED = lazy(r"^\d+\s+(?:[cC][12]\s+|jvmci\s+)?(?P<s>[\w$.<>/]+)\(.*?@ (?P<a>0x[0-9a-fA-F]+)")
_INTERPRETED = lazy(r"^(?P<s>[\w$.<>/]+)\(")
_SIGINFO = lazy(r"^\s*siginfo: si_signo: \d+ \(SIG(?P<name>[A-Z]+)\), si_code: \d+ \((?P<code>[A-Z_]+)\)"
                r"(?:, si_addr: (?P<addr>0x[0-9a-fA-F]+))?")
_WINDOWS_SIGINFO = lazy(r"^\s*siginfo: (?:EXCEPTION_[A-Z_]+ \(0x[0-9a-fA-F]{8}\)|ExceptionCode=0x[0-9a-fA-F]{8}),"
                        r" (?P<rw>reading|writing) address (?P<addr>0x[0-9a-fA-F]+)")
# The Windows report's "Dynamic libraries:" section lists every loaded module (Linux's is /proc/PID/maps, which the
# environment parser reads): the HIP runtime's line says which amdhip64 DLL the process loaded, and from where.
_LOADED_HIP_DLL = lazy(r"^\s*0x[0-9a-fA-F]{8,16} - 0x[0-9a-fA-F]{8,16}\s+(?P<p>[A-Za-z]:\\[^\t]*?\\amdhip64\w*\.dll)\s*$",
                       re.IGNORECASE)
_NEEDLES = Needles(_HEADER_SIGNAL, _HEADER_EXCEPTION, _JAVA_VM, _PROBLEMATIC, _NATIVE_FRAMES, r"^\s*(?:#\s+)?[CVvjJA]\s+\S",
                   r"^\s*siginfo: ", _LOADED_HIP_DLL)
_OS = {"linux": "linux", "windows": "windows"}
_ACCESS = {"reading": "read", "writing": "write"}


def parse_frame(kind: str, rest: str, where: Where, text: str) -> Frame | None:
    """One hs_err frame line after its kind letter; None when the rest is no frame of that kind."""
    frame = Frame(index=0, where=where, text=text.strip())
    if kind in "CV":
        if m := _NATIVE.match(rest):
            frame.module, frame.offset = m["m"].strip(), int(m["o"], 16)
            _split_symbol(m["tail"].strip(), frame)
            return frame
        if m := _BARE_PC.match(rest):  # a native pc in no library the JVM knows (generated code, a freed library)
            frame.address = int(m["a"], 16)
            return frame
        return None
    if kind == "J":
        if m := _COMPILED.match(rest):
            frame.symbol, frame.symbol_source, frame.address = m["s"], "input", int(m["a"], 16)
            return frame
        return None
    if kind == "j":
        if m := _INTERPRETED.match(rest):
            frame.symbol, frame.symbol_source = m["s"], "input"
            return frame
        return None
    # "v  ~StubRoutines::call_stub", "A 12 ..." (AOT code): a JVM stub, named as printed
    if rest.startswith("~") or kind == "A":
        frame.symbol, frame.symbol_source = rest.split()[0], "input"
        return frame
    return None


def _split_symbol(tail: str, frame: Frame) -> None:
    """``symbol+0xOFF  (file.cpp:476)`` after a native frame's module, each part optional, read from the right."""
    at = tail.rfind("(")
    if at > 0 and tail[at - 1].isspace() and (source := _SOURCE.fullmatch(tail, at)):
        frame.file, frame.file_line = source["f"], int(source["l"])
        tail = tail[:at].rstrip()
    at = tail.rfind("+")
    if at > 0 and (offset := _SYMBOL_OFFSET.fullmatch(tail, at)):
        frame.symbol_offset = int(offset["so"], 16)
        tail = tail[:at].rstrip()
    if tail:
        frame.symbol, frame.symbol_source = tail, "input"
    else:
        frame.symbol_offset = None


def parse(artifact: Artifact, case: Case) -> None:
    """Add the fault facts and the crashing stack of each JVM fatal error report in the artifact."""
    problematic: Frame | None = None
    stacks: list[list[Frame]] = []
    expect_problem = -10  # the index of the "# Problematic frame:" line
    in_native = False
    last = -10  # the index of the section's last line read
    for index, where, text in _NEEDLES.readable_lines(artifact):
        quoted = text.strip()
        if in_native and index != last + 1:
            in_native = False  # the section ends at its first line that is no frame
        if m := _HEADER_SIGNAL.match(text):
            case.add_fact("signal", m["name"], where, quoted, 90)
            case.claim(where, "signal", "fault")
        elif m := _HEADER_EXCEPTION.match(text):
            case.add_fact("exception_code", f"0x{m['c'][2:].upper()}", where, quoted, 90)
            case.add_fact("os", "windows", where, quoted, 20)
            case.claim(where, "exception", "fault")
        elif m := _JAVA_VM.match(text):
            if m["os"] in _OS:
                case.add_fact("os", _OS[m["os"]], where, quoted, 20)
        elif _PROBLEMATIC.match(text):
            expect_problem = index
        elif _NATIVE_FRAMES.match(text):
            in_native, last = True, index
            stacks.append([])
            case.claim(where, "stack-header", "stack")
        elif m := _SIGINFO.match(text):
            case.add_fact("si_code", m["code"], where, quoted, 90)
            if m["addr"]:
                case.add_fact("fault_address", f"0x{int(m['addr'], 16):x}", where, quoted, 90)
            case.claim(where, "signal", "fault")
        elif m := _WINDOWS_SIGINFO.match(text):
            case.add_fact("fault_address", f"0x{int(m['addr'], 16):x}", where, quoted, 90)
            case.add_fact("fault_access", _ACCESS[m["rw"]], where, quoted, 90)
            case.claim(where, "exception", "fault")
        elif m := _LOADED_HIP_DLL.match(text):
            case.add_fact("hip_library_path", m["p"], where, quoted, 50)
        elif m := _FRAME.match(text):
            header_frame = index == expect_problem + 1
            if in_native:
                last = index  # a frame line this version cannot split still belongs to the section
            elif not header_frame:
                continue
            frame = parse_frame(m["k"], m["rest"], where, text)
            if frame is None:
                continue
            case.claim(where, "frame", "stack")
            if header_frame:
                problematic = problematic or frame
            else:
                frame.index = len(stacks[-1])
                stacks[-1].append(frame)
    # The first report's native stack is the crashing thread's (the header's problematic frame is its top); without
    # that section, the problematic frame alone.
    crashing = not any(s.crashing for s in case.stacks)
    for frames in stacks:
        if frames:
            case.stacks.append(Stack(frames=frames, where=frames[0].where, form="hotspot", crashing=crashing))
            crashing = False
    if problematic is not None and not any(stacks):
        case.stacks.append(Stack(frames=[problematic], where=problematic.where, form="hotspot", crashing=crashing))
