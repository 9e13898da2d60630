"""Linux ELF core files (x86-64): signal, registers, mapped modules and the crashing thread's stack.

pyelftools finds the PT_NOTE notes and decodes NT_FILE (and NT_PRPSINFO); NT_SIGINFO and
NT_PRSTATUS are decoded here with ``struct``. Memory is read from the core's PT_LOAD
segments (the kernel dumps the stack, the heap, writable data and each ELF mapping's first
page, not the text). The stack is a frame-pointer walk from rbp; where that fails early (code
built without frame pointers, such as libc), the stack is scanned from rsp for values inside
executable module mappings, and the frame-pointer walk resumes at the first frame record found.

Nothing here raises: a malformed core becomes a ``case.warnings`` entry.
"""

from __future__ import annotations

import bisect
import io
import os
import struct

from triage.elf import elf_type, mapped_build_id
from triage.errors import BadInput, data_errors
from triage.lazy import dataclass
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.codes import FAULT_SIGNALS, signal_name

EM_X86_64 = 62
PF_X = 1
MAX_FRAMES = 256
MAX_SCAN_WORDS = 16384  # 128 KiB of stack scanned at most

REGISTERS = ("r15", "r14", "r13", "r12", "rbp", "rbx", "r11", "r10", "r9", "r8", "rax", "rcx", "rdx",
             "rsi", "rdi", "orig_rax", "rip", "cs", "eflags", "rsp", "ss", "fs_base", "gs_base",
             "ds", "es", "fs", "gs")
_PR_REG_OFFSET = 112  # struct elf_prstatus on x86-64: pr_info, cursig, sigpend, sighold, pids, 4 timevals
_PR_PID_OFFSET = 32

SI_CODES = {
    4: {1: "ILL_ILLOPC", 2: "ILL_ILLOPN", 3: "ILL_ILLADR", 4: "ILL_ILLTRP", 5: "ILL_PRVOPC",
        6: "ILL_PRVREG", 7: "ILL_COPROC", 8: "ILL_BADSTK"},
    5: {1: "TRAP_BRKPT", 2: "TRAP_TRACE", 3: "TRAP_BRANCH", 4: "TRAP_HWBKPT"},
    7: {1: "BUS_ADRALN", 2: "BUS_ADRERR", 3: "BUS_OBJERR", 4: "BUS_MCEERR_AR", 5: "BUS_MCEERR_AO"},
    8: {1: "FPE_INTDIV", 2: "FPE_INTOVF", 3: "FPE_FLTDIV", 4: "FPE_FLTOVF", 5: "FPE_FLTUND",
        6: "FPE_FLTRES", 7: "FPE_FLTINV", 8: "FPE_FLTSUB"},
    11: {1: "SEGV_MAPERR", 2: "SEGV_ACCERR", 3: "SEGV_BNDERR", 4: "SEGV_PKUERR"},
}
SI_GENERIC = {0: "SI_USER", 0x80: "SI_KERNEL", -1: "SI_QUEUE", -2: "SI_TIMER", -3: "SI_MESGQ",
              -4: "SI_ASYNCIO", -5: "SI_SIGIO", -6: "SI_TKILL"}


class CoreError(BadInput):
    """The core is malformed in a way that stops reading it."""


def si_code_name(signo: int, code: int) -> str:
    if code > 0 and code != 0x80:
        return SI_CODES.get(signo, {}).get(code, str(code))
    return SI_GENERIC.get(code, str(code))


@dataclass
class Mapping:
    start: int
    end: int
    offset: int  # file offset in bytes
    path: str


@dataclass
class Segment:
    vaddr: int
    memsz: int
    offset: int
    filesz: int  # bytes of contents actually present in the core (clamped to the data)
    flags: int


class Memory:
    """The process memory the core holds, read bounded and without exceptions."""

    def __init__(self, data: bytes, segments: list[Segment]) -> None:
        self.data = data
        self.segments = sorted(segments, key=lambda s: s.vaddr)
        self.starts = [s.vaddr for s in self.segments]

    def segment(self, address: int) -> Segment | None:
        index = bisect.bisect_right(self.starts, address) - 1
        if index >= 0 and address < self.segments[index].vaddr + self.segments[index].memsz:
            return self.segments[index]
        return None

    def read(self, address: int, size: int) -> bytes | None:
        seg = self.segment(address)
        if seg is None or size < 0:
            return None
        rel = address - seg.vaddr
        if rel + size > seg.filesz:
            return None
        start = seg.offset + rel
        return self.data[start:start + size]

    def u64(self, address: int) -> int | None:
        raw = self.read(address, 8)
        return struct.unpack("<Q", raw)[0] if raw else None

    def executable(self, address: int) -> bool:
        seg = self.segment(address)
        return bool(seg and seg.flags & PF_X)


class Modules:
    """NT_FILE mappings grouped by file; a module's load base is its first mapping's start."""

    def __init__(self, mappings: list[Mapping]) -> None:
        self.mappings = sorted(mappings, key=lambda m: m.start)
        self.starts = [m.start for m in self.mappings]
        self.base: dict[str, int] = {}
        for m in mappings:  # kernel order is ascending address; the first seen is the lowest
            self.base[m.path] = min(self.base.get(m.path, m.start), m.start)

    def find(self, address: int) -> Mapping | None:
        index = bisect.bisect_right(self.starts, address) - 1
        if index >= 0 and address < self.mappings[index].end:
            return self.mappings[index]
        return None

    def resolve(self, address: int) -> tuple[str, int] | None:
        m = self.find(address)
        if m is None:
            return None
        return os.path.basename(m.path), address - self.base[m.path]


def is_core(data: bytes | None) -> bool:
    return bool(data) and elf_type(data[:64]) == "ET_CORE"


def parse(artifact: Artifact, case: Case) -> None:
    data = artifact.data
    if not is_core(data):
        return
    name = artifact.name
    where = Where(name, 0)
    case.claim(where, "core", "fault")
    if data[4] != 2 or data[5] != 1 or len(data) < 64:
        case.warnings.append(f"{name}: corrupt core file (not a 64-bit little-endian ELF core); not read")
        return
    machine = struct.unpack("<H", data[18:20])[0]
    if machine != EM_X86_64:
        case.warnings.append(f"{name}: core file for ELF machine {machine}, not x86-64; not read")
        return
    problems: list[str] = []
    try:
        _read(artifact, case, data, where, problems)
    except data_errors() as err:  # damaged in a way not caught below; any other error is a bug (errors.py)
        problems.append(f"{type(err).__name__}: {err}")
    for problem in dict.fromkeys(problems):
        case.warnings.append(f"{name}: corrupt core file ({problem})")


def _read(artifact: Artifact, case: Case, data: bytes, where: Where, problems: list[str]) -> None:
    from elftools.elf.elffile import ELFFile  # imported here: text-only triage does not pay for it

    try:
        elf = ELFFile(io.BytesIO(data))
    except data_errors() as err:
        problems.append(f"ELF header: {type(err).__name__}: {err}")
        return
    segments: list[Segment] = []
    notes: list = []
    try:
        count = elf.num_segments()
        for index in range(min(count, 65536)):
            try:
                seg = elf.get_segment(index)
            except data_errors() as err:
                problems.append(f"program header {index}: {type(err).__name__}: {err}")
                break
            if seg["p_type"] == "PT_LOAD":
                offset, filesz = seg["p_offset"], seg["p_filesz"]
                present = max(0, min(filesz, len(data) - offset))
                if present < filesz:
                    problems.append(f"truncated: {len(data)} bytes, segments reach past the end")
                segments.append(Segment(seg["p_vaddr"], seg["p_memsz"], offset, present, seg["p_flags"]))
            elif seg["p_type"] == "PT_NOTE":
                try:
                    for note in seg.iter_notes():
                        notes.append(note)
                        if len(notes) > 100_000:
                            break
                except data_errors() as err:
                    problems.append(f"notes: {type(err).__name__}: {err}")
    except data_errors() as err:
        problems.append(f"program headers: {type(err).__name__}: {err}")
    memory = Memory(data, segments)

    siginfo = prstatus = prpsinfo = None
    mappings: list[Mapping] = []
    for note in notes:
        kind = note["n_type"]
        if kind == "NT_SIGINFO" and siginfo is None:
            siginfo = note["n_descdata"]
        elif kind == "NT_PRSTATUS" and prstatus is None:  # the first thread is the signalled one
            prstatus = note["n_descdata"]
        elif kind == "NT_PRPSINFO" and prpsinfo is None:
            prpsinfo = note["n_descdata"]
        elif kind == "NT_FILE" and not mappings:
            try:
                desc = note["n_desc"]
                page = desc["page_size"]
                for entry, path in zip(desc["Elf_Nt_File_Entry"], desc["filename"]):
                    if entry["vm_end"] > entry["vm_start"]:
                        mappings.append(Mapping(entry["vm_start"], entry["vm_end"], entry["page_offset"] * page,
                                                path.decode("utf-8", "replace")))
            except data_errors() as err:
                problems.append(f"NT_FILE: {type(err).__name__}: {err}")
    if not notes:
        problems.append("no notes found")

    _siginfo(case, siginfo, where, problems)
    _prpsinfo(case, prpsinfo, where)
    modules = Modules(mappings)
    _build_ids(case, modules, memory, where)
    regs, pid = _prstatus(prstatus, problems)
    if regs is None:
        return
    case.registers.update(regs)
    frames = unwind(regs, memory, modules, where)
    if frames:
        case.stacks.append(Stack(frames, where=where, form="core",
                                 thread=str(pid) if pid is not None else None, crashing=True))
        case.inputs.add("stack")


def _siginfo(case: Case, raw: bytes | None, where: Where, problems: list[str]) -> None:
    if raw is None:
        return
    if len(raw) < 24:
        problems.append(f"NT_SIGINFO is {len(raw)} bytes")
        return
    signo, errno, code = struct.unpack_from("<iii", raw, 0)
    address = struct.unpack_from("<Q", raw, 16)[0]
    text = f"NT_SIGINFO si_signo={signo} si_errno={errno} si_code={code}"
    case.add_fact("signal", signal_name(signo), where, text, score=95)
    case.add_fact("si_code", si_code_name(signo, code), where, text, score=95)
    if signal_name(signo) in FAULT_SIGNALS:
        case.add_fact("fault_address", f"0x{address:x}", where, f"{text} si_addr=0x{address:x}", score=95)


def _prpsinfo(case: Case, raw: bytes | None, where: Where) -> None:
    if raw is None or len(raw) < 136:
        return
    fname = raw[40:56].split(b"\0", 1)[0].decode("utf-8", "replace")
    psargs = raw[56:136].split(b"\0", 1)[0].decode("utf-8", "replace").strip()
    if fname or psargs:
        case.add_fact("program", fname or psargs.split(" ", 1)[0], where,
                      f"NT_PRPSINFO fname={fname} psargs={psargs}", score=90)
        if psargs:
            case.add_fact("command_line", psargs, where, f"NT_PRPSINFO psargs={psargs}", score=90)


def _prstatus(raw: bytes | None, problems: list[str]) -> tuple[dict[str, int] | None, int | None]:
    if raw is None:
        problems.append("no NT_PRSTATUS note")
        return None, None
    end = _PR_REG_OFFSET + 8 * len(REGISTERS)
    if len(raw) < end:
        problems.append(f"NT_PRSTATUS is {len(raw)} bytes, not an x86-64 one")
        return None, None
    pid = struct.unpack_from("<i", raw, _PR_PID_OFFSET)[0]
    values = struct.unpack_from(f"<{len(REGISTERS)}Q", raw, _PR_REG_OFFSET)
    return dict(zip(REGISTERS, values)), pid


def _build_ids(case: Case, modules: Modules, memory: Memory, where: Where) -> None:
    for path, base in list(modules.base.items())[:512]:
        build_id = mapped_build_id(memory.read, base)
        if build_id:
            module = os.path.basename(path)
            case.add_fact(f"build_id:{module}", build_id, where, f"NT_GNU_BUILD_ID of {path} in core memory")


def _frame(index: int, address: int, modules: Modules, where: Where, note: str | None) -> Frame:
    found = modules.resolve(address)
    if found:
        module, offset = found
        text = f"{module} + 0x{offset:x}"
    else:
        module = offset = None
        text = f"0x{address:x}"
    return Frame(index=index, where=where, text=text, address=address, module=module, offset=offset,
                 symbol_note=note)


def _code(address: int | None, memory: Memory, modules: Modules) -> bool:
    return bool(address) and memory.executable(address) and modules.find(address) is not None


def _record(rbp: int | None, memory: Memory, modules: Modules) -> tuple[int, int] | None:
    """A frame record at rbp: (saved rbp, return address), when both look right."""
    if not rbp or rbp & 7:
        return None
    saved, ret = memory.u64(rbp), memory.u64(rbp + 8)
    if saved is None or ret is None or not _code(ret, memory, modules):
        return None
    return saved, ret


def _walk(rbp: int, memory: Memory, modules: Modules, where: Where, frames: list[Frame]) -> None:
    """Follow the rbp chain, appending frames; stop on a bad, unmapped or non-increasing rbp."""
    while len(frames) < MAX_FRAMES:
        record = _record(rbp, memory, modules)
        if record is None:
            return
        saved, ret = record
        frames.append(_frame(len(frames), ret, modules, where, "frame pointer"))
        if saved <= rbp:
            return
        rbp = saved


def unwind(regs: dict[str, int], memory: Memory, modules: Modules, where: Where) -> list[Frame]:
    rip, rsp, rbp = regs["rip"], regs["rsp"], regs["rbp"]
    frames = [_frame(0, rip, modules, where, None)]
    stack = memory.segment(rsp) or memory.segment(rbp)  # a stack overflow leaves rsp in the guard gap
    # The frame-pointer walk is trusted when rbp is a frame record in the stack above rsp and
    # frame 0 is a function that keeps one (else rbp is a stale or general-purpose value).
    if stack and stack.vaddr <= rbp < stack.vaddr + stack.memsz and rbp >= rsp and _record(rbp, memory, modules):
        _walk(rbp, memory, modules, where, frames)
    if len(frames) > 1 or stack is None:
        return frames
    # Stack scan from rsp; resume the frame-pointer walk at the first frame record found.
    slot = max(rsp, stack.vaddr) & ~7
    end = min(stack.vaddr + stack.filesz, slot + 8 * MAX_SCAN_WORDS)
    while slot + 8 <= end and len(frames) < MAX_FRAMES:
        value = memory.u64(slot)
        if value is not None and _code(value, memory, modules):
            frames.append(_frame(len(frames), value, modules, where, "found by stack scan, not unwound"))
            record = _record(slot - 8, memory, modules)
            if record and record[1] == value and slot < record[0] < end:
                # slot - 8 holds a saved rbp pushed by a frame-pointer prologue: walk from the caller's record
                _walk(record[0], memory, modules, where, frames)
                break
        slot += 8
    return frames
