"""Turn a kernel log's location of a crash into the module offset debuggers print.

The kernel prints ``lib[OFFSET,VMSTART+SIZE]`` (newer kernels: OFFSET is the faulting
instruction's file offset) or ``lib[VMSTART+SIZE]`` (older ones: VMSTART is where the
executable mapping starts, not the load base). gdb and coredumpctl print ``lib + MOD``, an
offset from the load base. With the library's program headers at hand::

    MOD = OFFSET - p_offset + p_vaddr                 (the LOAD segment holding OFFSET)
    MOD = ip - VMSTART + page_down(p_vaddr)           (the executable LOAD segment; old form)

Without them, the delta recorded for that build in the known-frames store serves (new form
only), or the debugger's frame #0 of the same crash. The fault's ``offset_note`` says which.
"""

from __future__ import annotations

from triage.model import Case, Fault, KernelFault
from triage.symbolize.elf import SymbolIndex
from triage.symbolize.known_frames import Build, find, module_build_id, module_version, split_module
from triage.symbolize.symbols import Locator, Match

PAGE = 0x1000


def from_program_headers(index: SymbolIndex, kf: KernelFault) -> tuple[int, str] | None:
    """The module offset of a kernel fault line and how it was computed, from the ELF's LOAD segments."""
    if kf.file_offset is not None:
        segment = index.load_segment(kf.file_offset)
        if segment is None:
            return None
        offset = kf.file_offset - segment.offset + segment.vaddr
        return offset, (f"kernel file offset 0x{kf.file_offset:x} - p_offset 0x{segment.offset:x} + p_vaddr "
                        f"0x{segment.vaddr:x} of the LOAD segment holding it")
    if kf.ip is None or kf.vm_start is None:
        return None
    executable = [s for s in index.segments if s.executable]
    if len(executable) > 1 and kf.vm_size is not None:  # several code segments: the one the mapping's size fits
        executable = [s for s in executable if -(-(s.vaddr % PAGE + s.memsz) // PAGE) * PAGE == kf.vm_size] or executable
    if len(executable) != 1:
        return None
    segment = executable[0]
    offset = kf.ip - kf.vm_start + (segment.vaddr & ~(PAGE - 1))
    return offset, (f"ip 0x{kf.ip:x} - mapping start 0x{kf.vm_start:x} + page-aligned p_vaddr "
                    f"0x{segment.vaddr & ~(PAGE - 1):x} of the executable LOAD segment")


def convert(case: Case, builds: list[Build], locator: Locator) -> None:
    """Fill the fault's module offset from the kernel log when no debugger frame gave one, or check it."""
    fault = case.fault
    if fault is None or fault.kind != "signal":
        return
    for kf in case.kernel_faults:
        if kf.module is None or (kf.file_offset is None and kf.vm_start is None):
            continue
        library, _ = split_module(kf.module)
        if fault.module and split_module(fault.module)[0] != library:
            continue
        _convert_one(case, fault, kf, builds, locator)
        return


def _convert_one(case: Case, fault: Fault, kf: KernelFault, builds: list[Build], locator: Locator) -> None:
    library, _ = split_module(kf.module or "")
    version = module_version(case, kf.module or "")
    build_id = module_build_id(case, kf.module or "") or module_build_id(case, fault.module or "")
    match: Match | None = locator.find(kf.module or "", version, build_id)
    converted = from_program_headers(match.index, kf) if match else None
    build = find(builds, library, version, build_id)
    if converted is not None and match is not None:
        offset, how = converted
        how = f"{how}, from the program headers of {match.label}"
    elif kf.file_offset is not None and build and build.file_offset_delta is not None:
        offset = kf.file_offset + build.file_offset_delta
        how = (f"kernel file offset 0x{kf.file_offset:x} + 0x{build.file_offset_delta:x}, "
               f"the delta recorded for {library} {build.version or build.build_id}")
    elif kf.file_offset is not None and fault.offset is not None and (fault.offset - kf.file_offset) & (PAGE - 1) == 0:
        offset = fault.offset
        how = (f"kernel file offset 0x{kf.file_offset:x} + 0x{fault.offset - kf.file_offset:x}, "
               "paired with the debugger's frame #0 of the same crash")
    else:
        given = (f"file offset 0x{kf.file_offset:x}" if kf.file_offset is not None
                 else f"only the executable mapping's start 0x{kf.vm_start:x}")
        fault.offset_note = (f"the kernel gives {given}; the module offset needs the library's program headers "
                             "(send the library or its build-id)")
        return
    if fault.offset is None:
        fault.module, fault.offset = fault.module or kf.module, offset
    elif fault.offset != offset:
        fault.offset_note = f"the kernel log disagrees: {how} = 0x{offset:x}"
        return
    fault.offset_note = how
