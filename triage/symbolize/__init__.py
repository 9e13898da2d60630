"""Give names and module offsets to frames, and say where each came from.

Sources here: the input itself (``input``), the known-frames store for exactly the same
library build (``known-frames``), and for Windows names the nearest export (marked
unreliable when far away). Kernel-log file offsets become module offsets with the delta
recorded for the build, or with a frame of the same crash in the same case.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Case, Frame
from triage.symbolize.known_frames import Build, find, load, split_module


def module_version(case: Case, module: str) -> str | None:
    """The version of a library as loaded in this case: from its full file name or the runtime's own log."""
    library, version = split_module(module)
    if version and version.count(".") >= 2:
        return version
    for kf in case.kernel_faults:
        kf_library, kf_version = split_module(kf.module or "")
        if kf_library == library and kf_version and kf_version.count(".") >= 2:
            return kf_version
    hip = case.fact("hip_version")
    if library == "libamdhip64.so" and hip and hip.score >= 100:
        major = hip.value.split(".")[0]
        if version in (None, major):
            return hip.value
    return None


def symbolize(case: Case, frames_dir: Path) -> None:
    builds, problems = load(frames_dir)
    case.warnings.extend(problems)
    for stack in case.stacks:
        for frame in stack.frames:
            if frame.module and frame.offset is not None and not frame.symbol:
                _name(case, builds, frame)
    _kernel_offset(case, builds)
    fault = case.fault
    if fault and fault.module and fault.offset is not None and not fault.symbol:
        library, _ = split_module(fault.module)
        build = find(builds, library, module_version(case, fault.module))
        if build and fault.offset in build.frames:
            fault.symbol, fault.symbol_source = build.frames[fault.offset], "known-frames"


def _name(case: Case, builds: list[Build], frame: Frame) -> None:
    library, _ = split_module(frame.module)
    build = find(builds, library, module_version(case, frame.module))
    if build and frame.offset in build.frames:
        frame.symbol = build.frames[frame.offset]
        frame.symbol_source = "known-frames"
        frame.symbol_note = f"named by {build.source}"


def _kernel_offset(case: Case, builds: list[Build]) -> None:
    """Turn the kernel's file offset into a module offset when no debugger frame gave one."""
    fault = case.fault
    if fault is None or fault.kind != "signal":
        return
    for kf in case.kernel_faults:
        if kf.module is None or kf.file_offset is None:
            continue
        library, _ = split_module(kf.module)
        if fault.module and split_module(fault.module)[0] != library:
            continue
        build = find(builds, library, module_version(case, kf.module))
        if build and build.file_offset_delta is not None:
            offset = kf.file_offset + build.file_offset_delta
            how = f"kernel file offset 0x{kf.file_offset:x} + 0x{build.file_offset_delta:x}, the delta recorded for {library} {build.version}"
        elif fault.offset is not None and (fault.offset - kf.file_offset) & 0xFFF == 0:
            offset = fault.offset
            how = (f"kernel file offset 0x{kf.file_offset:x} + 0x{fault.offset - kf.file_offset:x}, "
                   "paired with the debugger's frame #0 of the same crash")
        else:
            fault.offset_note = (f"the kernel gives file offset 0x{kf.file_offset:x}; the module offset needs "
                                 "the library's program headers (send the library or its build-id)")
            return
        if fault.offset is None:
            fault.module, fault.offset = fault.module or kf.module, offset
        elif fault.offset != offset:
            fault.offset_note = f"the kernel log disagrees: {how} = 0x{offset:x}"
            return
        fault.offset_note = how
        return
