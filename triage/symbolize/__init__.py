"""Give names and module offsets to frames, and say where each came from.

Sources, best first: the input itself (``input``, never replaced); the library's own ELF,
from the user's bundle or ``--symbols DIR``, matched by build-id or by file name and version
(``symtab`` or ``dynsym``: the offset lies inside the symbol's size); the known-frames store
for exactly the same build (``known-frames``); and the nearest ELF symbol before the offset
when no sized symbol covers it (``nearest-export``, shown but marked unreliable in
``symbol_note``, as the Windows parser marks an export-relative name far from its export).
Kernel-log file offsets become module offsets in ``offsets``.

Frames above #0 hold return addresses, so they are looked up one byte earlier: a call that
ends a function returns to the first byte of the next one.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from triage import deadline
from triage.model import Case, Frame, Stack
from triage.symbolize.known_frames import (Build, find, kernel_versions, load_all, module_build_id, module_version,
                                           split_module)

if TYPE_CHECKING:  # the ELF readers are imported when a case has frames to name: most logs carry no stack
    from triage.symbolize.elf import SymbolIndex
    from triage.symbolize.symbols import Locator

__all__ = ["module_version", "symbolize"]


def symbolize(case: Case, frames_dirs: Path | list[Path], symbols: Path | None = None) -> None:
    """Name the case's frames and fault from the ELF files at hand and the known-frames stores."""
    fault = case.fault
    if not (any(f.module and f.offset is not None and not f.symbol for s in case.stacks for f in s.frames)
            or (fault and fault.module and fault.offset is not None and not fault.symbol)
            or (fault and fault.kind == "signal" and case.kernel_faults)):
        return  # nothing to name: most logs carry no stack
    from triage.symbolize import demangle, offsets
    from triage.symbolize.symbols import Locator

    builds, problems = load_all([frames_dirs] if isinstance(frames_dirs, Path) else list(frames_dirs))
    case.warnings.extend(problems)
    namer = _Namer(case, builds, Locator(case.artifacts, symbols, case.warnings))
    try:
        for stack in case.stacks:
            for frame in stack.frames:
                if frame.module and frame.offset is not None and not frame.symbol:
                    deadline.check("symbolizing")
                    namer.name(frame)
    except deadline.OutOfTime:
        budget = deadline.current()
        case.warnings.append(budget.warning("symbolizing", "naming the stack frames") if budget else
                             "symbolizing stopped: out of time")
    offsets.convert(case, builds, namer.locator)
    if fault and fault.module and fault.offset is not None and not fault.symbol:
        probe = Frame(index=0, where=fault.where, text="", module=fault.module, offset=fault.offset)
        namer.name(probe)
        if probe.symbol:
            fault.symbol, fault.symbol_source = probe.symbol, probe.symbol_source
    if fault and fault.module and fault.offset is not None:
        _crash_site(case, builds)
        _fault_as_frame(case)
    if namer.mangled and not demangle.available():
        case.warnings.append("C++ names are shown mangled: libstdc++'s __cxa_demangle could not be loaded")


def _crash_site(case: Case, builds: list[Build]) -> None:
    """A crash at an offset the known-frames store records as a known crash site of this build."""
    fault = case.fault
    assert fault is not None and fault.module is not None and fault.offset is not None
    library = split_module(fault.module)[0]
    build = find(builds, library, module_version(case, fault.module), module_build_id(case, fault.module))
    if build and (cause := build.crash_sites.get(fault.offset)):
        text = f"{fault.module} + 0x{fault.offset:x}: a known crash site of {library} {build.version} ({build.source})"
        case.add_fact("crash_site", cause, fault.evidence[-1] if fault.evidence else fault.where, text, 80)


def _fault_as_frame(case: Case) -> None:
    """A fault located by a kernel line or a dump, with no stack of a debugger to hold it, is frame 0
    of the crashing stack: frame conditions then read it like any stack (the seeds need this chain)."""
    fault = case.fault
    assert fault is not None
    for stack in case.stacks:
        top = stack.frames[0]
        if top.index == 0 and top.module and split_module(top.module)[0] == split_module(fault.module or "")[0] \
                and top.offset == fault.offset:
            return
    where = fault.evidence[-1] if len(fault.evidence) > 1 else fault.where
    frame = Frame(index=0, where=where, text=f"{fault.module} + 0x{fault.offset:x}", module=fault.module,
                  offset=fault.offset, symbol=fault.symbol, symbol_source=fault.symbol_source)
    case.stacks.insert(0, Stack(frames=[frame], where=where, form="fault", crashing=True))


class _Namer:
    def __init__(self, case: Case, builds: list[Build], locator: Locator) -> None:
        self.case, self.builds, self.locator = case, builds, locator
        self.mangled = False
        self.from_kernel = kernel_versions(case)

    def name(self, frame: Frame) -> None:
        module, offset = frame.module or "", frame.offset or 0
        version, build_id = module_version(self.case, module, self.from_kernel), module_build_id(self.case, module)
        match = self.locator.find(module, version, build_id)
        hit = None
        if match is not None:
            bias = _bias(match.index)
            if not match.index.mapped(offset + bias):
                _note(frame, f"offset 0x{offset:x} lies outside every LOAD segment of {match.label}: "
                      "that file is not the build that ran")
                match = None
            else:
                hit = match.index.lookup(offset + bias - (1 if frame.index > 0 else 0))
        if hit and hit.inside and match:
            self._set(frame, hit.name, offset + bias - hit.start, match.index.table or "")
            if match.how == "file name":
                _note(frame, f"named from {match.label}, matched by file name only: "
                      "its version could not be compared with the one that ran")
            return
        build = find(self.builds, split_module(module)[0], version, build_id)
        if build and offset in build.frames:
            frame.symbol, frame.symbol_offset = build.frames[offset], None
            frame.symbol_source = "known-frames"
            _note(frame, f"named by {build.source}")
            return
        if hit and match:
            self._set(frame, hit.name, offset + bias - hit.start, "nearest-export")
            past = offset + bias - hit.start - hit.size
            _note(frame, f"unreliable: 0x{past:x} bytes past the end of this symbol (0x{hit.size:x} bytes long) "
                  f"in {match.label}; no sized symbol covers the offset")

    def _set(self, frame: Frame, raw: str, symbol_offset: int, source: str) -> None:
        from triage.symbolize import demangle

        self.mangled = self.mangled or raw.startswith("_Z")
        frame.symbol, frame.symbol_offset, frame.symbol_source = demangle.demangle(raw), symbol_offset, source


def _note(frame: Frame, text: str) -> None:
    """Put a caution first, keeping what a parser already noted (a stack-scan label, say)."""
    frame.symbol_note = f"{text}; {frame.symbol_note}" if frame.symbol_note else text


def _bias(index: SymbolIndex) -> int:
    """The ELF address of module offset 0: the page-aligned p_vaddr of the lowest LOAD segment."""
    from triage.symbolize import offsets

    return min((s.vaddr for s in index.segments), default=0) & ~(offsets.PAGE - 1)
