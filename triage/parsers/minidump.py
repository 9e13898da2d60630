"""Windows and Linux (Breakpad/Crashpad) minidumps, read with the PyPI ``minidump`` package.

What comes out: the exception code (Windows NTSTATUS) or signal (Linux), the fault address
and access type, the crashing thread's registers from the exception-stream CONTEXT (which the
package locates but does not decode: decoded here with ``struct``), frame 0 as module + offset
and frames 1..N from a bounded scan of the crashing thread's stack memory.

The scan is not an unwind: a value on the stack that points into a module is listed whether or
not it is a return address, so frames 1..N say so in ``symbol_note``.

A corrupt dump never raises: the package raises ``ValueError`` on some (unknown stream types),
and "succeeds" with no streams on others; both become a warning.
"""

from __future__ import annotations

import bisect
import io
import re
import struct

from triage.errors import BadInput, data_errors
from triage.lazy import dataclass
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.codes import FAULT_SIGNALS, signal_name

SIGNATURE = b"MDMP"
MAX_STREAMS = 4096
MAX_FRAMES = 64
MAX_SCAN_BYTES = 64 * 1024  # of the crashing thread's stack, from the stack pointer up
SCAN_NOTE = "found by stack scan, not unwound"

# Streams handed to the package (thread list, module list, exception, system info), and for the
# lists, (count field + padding, entry size) to check a count against the stream size.
_READ_STREAMS = {3, 4, 6, 7}
_LIST_ENTRY = {3: (4, 48), 4: (4, 108)}
# MINIDUMP_SYSTEM_INFO.PlatformId values
_WINDOWS_PLATFORMS = {0, 1, 2, 3}  # Win32s, 9x, NT, CE
_LINUX_PLATFORMS = {0x8201, 0x8203}  # Linux (Breakpad and Crashpad), Android
# MINIDUMP_SYSTEM_INFO.ProcessorArchitecture values
_AMD64, _X86 = 9, 0

# Signals whose exception address is si_addr (a memory address). For others (ABRT, a
# kill(2)-sent signal) Breakpad stores si_pid/si_uid there, which is no address.
_ACCESS = {0: "read", 1: "write", 8: "execute"}
_ACCESS_CODES = {0xC0000005, 0xC0000006}  # ACCESS_VIOLATION, IN_PAGE_ERROR

# x86-64 CONTEXT (winnt.h): Rax at 0x78 ... R15 at 0xF0, Rip at 0xF8; 0x4D0 bytes in all.
_AMD64_REGS = ("rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
               "r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip")
_AMD64_OFFSET, _AMD64_SIZE = 0x78, 0x100
# x86 CONTEXT: Edi at 0x9C ... Esp at 0xC4 (SegCs and EFlags in between); 0x2CC bytes in all.
_X86_LAYOUT = (("edi", 0x9C), ("esi", 0xA0), ("ebx", 0xA4), ("edx", 0xA8), ("ecx", 0xAC),
               ("eax", 0xB0), ("ebp", 0xB4), ("eip", 0xB8), ("esp", 0xC4))
_X86_SIZE = 0xC8


class CorruptDump(BadInput):
    """The bytes start like a minidump but cannot be read as one."""


class _Buffer(io.BytesIO):
    """The dump as the package sees it: a short read is an error (a corrupt count must not make
    the package loop past the end), and the stream directory is read from a patched copy."""

    def __init__(self, data: bytes, directory: bytes, directory_at: int) -> None:
        super().__init__(data)
        self._dir, self._dir_at = directory, directory_at

    def read(self, size: int | None = -1) -> bytes:
        at = self.tell()
        data = super().read(size)
        if size is not None and size > 0 and len(data) < size:
            raise EOFError(f"read of {size} bytes at offset {at:#x} runs past the end")
        lo, hi = max(at, self._dir_at), min(at + len(data), self._dir_at + len(self._dir))
        if lo < hi:  # splice in the patched directory
            data = data[: lo - at] + self._dir[lo - self._dir_at: hi - self._dir_at] + data[hi - at:]
        return data


@dataclass
class _Module:
    name: str
    base: int
    size: int


def parse(artifact: Artifact, case: Case) -> None:
    data = artifact.data
    if not data or not data.startswith(SIGNATURE):
        return
    where = Where(artifact.name, 0)
    try:
        _read(artifact.name, data, case, where)
    except data_errors() as err:  # a damaged dump is a warning; any other error is a bug (errors.py)
        case.claim(where, "minidump")
        reason = str(err) if isinstance(err, CorruptDump) else f"{type(err).__name__}: {err}"
        case.warnings.append(f"{artifact.name}: corrupt minidump ({reason}); nothing was read from it")


def _directory(data: bytes) -> tuple[bytes, int]:
    """The stream directory with every stream this parser does not read turned into UnusedStream,
    after checking the sizes and counts of those it does: the package trusts both, and loops
    over a corrupt count (or a cycle in the handle stream's object list) for ever."""
    if len(data) < 32:
        raise CorruptDump(f"{len(data)} bytes is shorter than a minidump header")
    count, rva = struct.unpack_from("<II", data, 8)
    if count > MAX_STREAMS or rva + 12 * count > len(data):
        raise CorruptDump(f"header claims {count} streams at offset {rva:#x} in {len(data)} bytes")
    if count and rva < 32:
        raise CorruptDump(f"stream directory at offset {rva:#x} overlaps the 32-byte header")
    directory = bytearray(data[rva: rva + 12 * count])
    for i in range(count):
        kind, size, at = struct.unpack_from("<III", directory, 12 * i)
        if kind not in _READ_STREAMS:
            struct.pack_into("<I", directory, 12 * i, 0)
            continue
        if at + size > len(data):
            raise CorruptDump(f"stream {kind} at {at:#x}+{size:#x} runs past the end of the file")
        if kind in _LIST_ENTRY:
            header, entry = _LIST_ENTRY[kind]
            entries = struct.unpack_from("<I", data, at)[0] if size >= 4 else 0
            if header + entries * entry > size:
                raise CorruptDump(f"stream {kind} claims {entries} entries in {size} bytes")
    return bytes(directory), rva


def _parse_package(data: bytes):
    import logging  # here, with the package: a triage without a minidump does not load it

    from minidump.minidumpfile import MinidumpFile

    directory, at = _directory(data)
    previous = logging.root.manager.disable
    logging.disable(logging.CRITICAL)  # the package logs tracebacks (PEB parsing) through the root logger
    try:
        return MinidumpFile.parse_buff(_Buffer(data, directory, at))
    finally:
        logging.disable(previous)


def _read(name: str, data: bytes, case: Case, where: Where) -> None:
    mf = _parse_package(data)
    if mf.sysinfo is None and mf.threads is None and mf.exception is None:
        raise CorruptDump("no system info, thread list or exception stream")
    case.claim(where, "minidump", "fault")

    arch = platform = None
    if mf.sysinfo is not None:
        arch = _enum_value(mf.sysinfo.ProcessorArchitecture)
        platform = _enum_value(mf.sysinfo.PlatformId)
    linux = platform in _LINUX_PLATFORMS
    if platform in _WINDOWS_PLATFORMS:
        case.add_fact("os", "windows", where, f"minidump system info: platform id {platform}", 60)
    elif linux:
        case.add_fact("os", "linux", where, f"minidump system info: platform id {platform:#x}", 60)
    if arch is not None and arch not in (_AMD64, _X86):
        case.add_fact("cpu_arch", str(mf.sysinfo.ProcessorArchitecture).split(".")[-1].lower(), where,
                      "minidump system info", 60)

    modules = _modules(mf)
    _module_versions(mf, where, case)
    records = mf.exception.exception_records if mf.exception is not None else []
    if not records:
        case.warnings.append(f"{name}: minidump without an exception stream: no crashing thread or fault to read")
        return
    exc = records[0]
    record = exc.ExceptionRecord
    code = record.ExceptionCode_raw & 0xFFFFFFFF
    params = list(record.ExceptionInformation or [])[: record.NumberParameters or 0]
    tid = exc.ThreadId

    if linux:
        signame = signal_name(code)
        case.add_fact("signal", signame, where, f"minidump exception stream: signal {code} in thread {tid}", 95)
        if signame in FAULT_SIGNALS:
            case.add_fact("fault_address", f"{record.ExceptionAddress:#x}", where,
                          "minidump exception stream: si_addr", 90)
    elif platform in _WINDOWS_PLATFORMS or platform is None:
        case.add_fact("exception_code", f"0x{code:08X}", where,
                      f"minidump exception stream: code 0x{code:08X} in thread {tid}", 95)
        if code in _ACCESS_CODES and len(params) >= 2:
            # For a non-canonical address (a #GP, not a page fault) Windows writes all-ones and
            # "read" whatever the access; Breakpad recovers the real address by disassembling the
            # instruction, which this parser does not do: the address is kept raw, the access dropped.
            case.add_fact("fault_address", f"{params[1]:#x}", where,
                          "minidump exception stream: ExceptionInformation[1]", 90)
            if params[0] in _ACCESS and not (code == 0xC0000005 and params[1] == 0xFFFFFFFFFFFFFFFF):
                case.add_fact("fault_access", _ACCESS[params[0]], where,
                              "minidump exception stream: ExceptionInformation[0]", 90)
        elif record.ExceptionAddress:  # what Breakpad reports as the crash address: the faulting IP
            case.add_fact("fault_address", f"{record.ExceptionAddress:#x}", where,
                          "minidump exception stream: ExceptionAddress", 60)
    else:
        case.warnings.append(f"{name}: minidump from platform {platform:#x}: its exception code "
                             f"{code:#x} is not read")

    try:
        registers, word = _context(data, exc, arch)
    except CorruptDump as err:  # the exception record above is still good
        case.warnings.append(f"{name}: corrupt minidump ({err}); no registers or frames were read")
        return
    if registers is None:
        case.warnings.append(f"{name}: minidump CPU architecture {arch} is not decoded: "
                             "no registers, frames or stack scan")
        return
    case.registers.update(registers)
    ip = registers["rip" if word == 8 else "eip"]
    sp = registers["rsp" if word == 8 else "esp"]
    frames = [_frame(0, ip, modules, where)]
    frames.extend(_scan(data, mf, tid, sp, word, modules, where))
    case.stacks.append(Stack(frames=frames, where=where, form="minidump", thread=str(tid), crashing=True))
    case.inputs.add("stack")


def _enum_value(value) -> int | None:
    if value is None:
        return None
    return value.value if hasattr(value, "value") else int(value)


def file_version(info: object) -> str | None:
    """A module's VS_FIXEDFILEINFO file version as ``a.b.c.d`` (None when the dump holds none)."""
    ms, ls = getattr(info, "dwFileVersionMS", None), getattr(info, "dwFileVersionLS", None)
    if not isinstance(ms, int) or not isinstance(ls, int) or getattr(info, "dwSignature", 0xFEEF04BD) != 0xFEEF04BD:
        return None
    if ms == 0 and ls == 0:
        return None
    return f"{ms >> 16}.{ms & 0xFFFF}.{ls >> 16}.{ls & 0xFFFF}"


def _module_versions(mf, where: Where, case: Case) -> None:
    """``module_version:NAME`` for every module with a version; the HIP runtime's is also the runtime's release."""
    for m in (mf.modules.modules if mf.modules is not None else []):
        version = file_version(m.versioninfo)
        if not version or not m.name:
            continue
        name = re.split(r"[\\/]", m.name)[-1]
        case.add_fact(f"module_version:{name.lower()}", version, where, f"minidump module list: {name} {version}", 80)
        if name.lower().startswith(("amdhip64", "libamdhip64")):
            case.add_fact("hip_version_runtime", version, where, f"minidump module list: {name} {version}", 80)


def _modules(mf) -> list[_Module]:
    out = []
    for m in (mf.modules.modules if mf.modules is not None else []):
        if m.baseaddress is None or not m.size:
            continue
        out.append(_Module(re.split(r"[\\/]", m.name or "?")[-1], m.baseaddress, m.size))
    return sorted(out, key=lambda m: m.base)


def _module_at(modules: list[_Module], address: int) -> _Module | None:
    i = bisect.bisect_right([m.base for m in modules], address) - 1
    if i >= 0 and address < modules[i].base + modules[i].size:
        return modules[i]
    return None


def _context(data: bytes, exc, arch: int | None) -> tuple[dict[str, int] | None, int]:
    """The exception-stream CONTEXT: the registers at the fault (the thread list has the handler's)."""
    loc = exc.ThreadContext
    rva, size = loc.Rva, loc.DataSize
    if rva + size > len(data):
        raise CorruptDump(f"exception context at {rva:#x}+{size:#x} lies past the end")
    if arch == _AMD64 or (arch is None and size >= 0x4D0):
        if size < _AMD64_OFFSET + _AMD64_SIZE:
            raise CorruptDump(f"x86-64 exception context of {size} bytes")
        values = struct.unpack_from("<17Q", data, rva + _AMD64_OFFSET)
        return dict(zip(_AMD64_REGS, values)), 8
    if arch == _X86 or (arch is None and size >= 0x2CC):
        if size < _X86_SIZE:
            raise CorruptDump(f"x86 exception context of {size} bytes")
        return {reg: struct.unpack_from("<I", data, rva + off)[0] for reg, off in _X86_LAYOUT}, 4
    return None, 0


def _frame(index: int, address: int, modules: list[_Module], where: Where) -> Frame:
    module = _module_at(modules, address)
    if module is None:
        return Frame(index=index, where=where, text=f"{address:#x} (in no listed module)", address=address,
                     symbol_note=None if index == 0 else SCAN_NOTE)
    offset = address - module.base
    return Frame(index=index, where=where, text=f"{module.name} + {offset:#x}", address=address,
                 module=module.name, offset=offset, symbol_note=None if index == 0 else SCAN_NOTE)


def _scan(data: bytes, mf, tid: int, sp: int, word: int, modules: list[_Module], where: Where) -> list[Frame]:
    """Frames 1..N: words on the crashing thread's stack, from sp up, that point into a module."""
    if not modules or mf.threads is None:
        return []
    thread = next((t for t in mf.threads.threads if t.ThreadId == tid), None)
    if thread is None or thread.Stack is None:
        return []
    start = thread.Stack.StartOfMemoryRange
    rva, size = thread.Stack.MemoryLocation.Rva, thread.Stack.MemoryLocation.DataSize
    size = min(size, max(0, len(data) - rva))
    if start <= sp < start + size:  # the exception sp lies inside the captured stack
        skip = (sp - start) & ~(word - 1)
    else:
        skip = 0
    begin = rva + skip
    end = min(rva + size, begin + MAX_SCAN_BYTES)
    fmt = "<Q" if word == 8 else "<I"
    frames: list[Frame] = []
    for pos in range(begin, end - word + 1, word):
        value = struct.unpack_from(fmt, data, pos)[0]
        module = _module_at(modules, value)
        if module is None or value - module.base < 0x1000:  # the headers page holds no code
            continue
        frames.append(_frame(len(frames) + 1, value, modules, where))
        if len(frames) >= MAX_FRAMES:
            break
    return frames
