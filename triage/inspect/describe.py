"""Inspection results as plain data (JSON) and as short lines (terminal, report findings)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # types only: a report's component lines need none of these modules loaded
    from triage.inspect.bundle import FatBinary
    from triage.inspect.component import ComponentCheck
    from triage.inspect.gpu import GpuAnswer

_SHOWN = 12  # names listed before "and N more"


def _some(names: list[str]) -> str:
    return ", ".join(names[:_SHOWN]) + (f" and {len(names) - _SHOWN} more" if len(names) > _SHOWN else "")


def fat_summary(fat: FatBinary) -> str:
    """``3 offload bundles (1 zstd-compressed) in .hip_fatbin; 10 targets; 1 outlier``."""
    n = len(fat.bundles)
    if not n:
        return "no offload bundles (no HIP GPU code in this file)"
    packed = [b.compression for b in fat.bundles if b.compression]
    where = sorted({b.section for b in fat.bundles if b.section})
    outliers = fat.outliers()
    return (f"{n} offload bundle{'s' * (n != 1)}"
            + (f" ({len(packed)} {'/'.join(sorted(set(packed)))}-compressed)" if packed else "")
            + (f" in {', '.join(where)}" if where else "")
            + f"; {len(fat.counts())} target{'s' * (len(fat.counts()) != 1)}"
            + (f"; {len(outliers)} bundle{'s' * (len(outliers) != 1)} with fewer targets than the rest" if outliers else ""))


def fat_lines(fat: FatBinary, gpu: GpuAnswer | None = None) -> list[str]:
    """The details under the summary: counts, outliers, the GPU verdict."""
    lines = []
    if counts := fat.counts():
        lines.append("bundles per target: " + ", ".join(f"{t} {n}" for t, n in counts.items()))
    for bundle, lacks in fat.outliers():
        lines.append(f"outlier: the bundle at {bundle.offset:#x} has only {', '.join(bundle.targets)} "
                     f"(lacks {_some(lacks)})")
    if gpu is not None:
        lines.append(gpu_line(gpu))
    if fat.stray_markers:
        lines.append(f"{fat.stray_markers} bundle magic string{'s' * (fat.stray_markers != 1)} without an entry table "
                     "(a string constant, not a bundle)")
    return lines


def gpu_line(gpu: GpuAnswer) -> str:
    """``gfx1151: no: 1 of 3 bundles has no code object for it (0x15000: gfx906)``."""
    total = len(gpu.fits)
    failing = gpu.failing()
    if gpu.can_run == "no":
        shown = "; ".join(f"{f.offset:#x}: {', '.join(f.targets)}" for f in failing[:3])
        why = sorted({f.fit.note for f in failing if f.fit.note})
        return (f"{gpu.gpu}: cannot run: {len(failing)} of {total} bundle{'s' * (total != 1)} "
                f"{'has' if len(failing) == 1 else 'have'} no code object for it ({shown})"
                + (f"; {'; '.join(why)}" if why else "") + f"; it needs {' or '.join(serving(gpu.gpu))}")
    used = sorted({f.fit.target for f in gpu.fits if f.fit.target})
    notes = sorted({f.fit.note for f in gpu.fits if f.fit.note})
    verdict = {"yes": "can run", "only if": "can run only if", "unknown": "unknown"}[gpu.can_run]
    return f"{gpu.gpu}: {verdict}: every readable bundle has {_some(used) or 'nothing'}" \
        + (f" ({'; '.join(notes)})" if notes else "")


def serving(gpu: str) -> list[str]:
    """The targets whose code objects would serve ``gpu``: its own, then its generic one."""
    from triage.inspect.targets import GENERIC, parse_target

    target = parse_target(gpu)
    if target is None:
        return [gpu]
    return [str(target)] + [g for g, members in GENERIC.items() if target.processor in members]


def fat_json(fat: FatBinary, gpu: GpuAnswer | None = None) -> dict:
    """The JSON of ``triage inspect FILE``: ``bundles: [{offset, targets}]``, ``targets: {id: n}``."""
    out: dict = {
        "file": fat.name,
        "size": fat.size,
        "summary": fat_summary(fat),
        "bundles": [{"offset": f"{b.offset:#x}", "targets": b.targets, "compression": b.compression,
                     "section": b.section, "entries": [{"id": e.id, "offset": e.offset, "size": e.size} for e in b.entries],
                     "note": b.note} for b in fat.bundles],
        "targets": fat.counts(),
        "outliers": [{"offset": f"{b.offset:#x}", "targets": b.targets, "lacks": lacks} for b, lacks in fat.outliers()],
        "stray_markers": fat.stray_markers,
        "warnings": fat.warnings,
    }
    if gpu is not None:
        out["gpu"] = {"gpu": gpu.gpu, "can_run": gpu.can_run, "level": gpu.level,
                      "bundles": [{"offset": f"{f.offset:#x}", "level": f.fit.level, "target": f.fit.target,
                                   "note": f.fit.note} for f in gpu.fits]}
    return out


def component_lines(check: ComponentCheck) -> list[str]:
    lines = []
    if check.libraries:
        lines.append("libraries: " + ", ".join(
            f"{lib.kind} {(check.hip_version if lib.kind == 'HIP' else '') or lib.version or '?'} ({lib.name})"
            for lib in check.libraries))
    if check.device_libs_note:
        lines.append(f"device libraries: {check.device_libs} ({check.device_libs_note})")
    elif any(lib.kind == "HIP" for lib in check.libraries):
        lines.append(f"device libraries: {check.device_libs}")
    lines.extend(f"{kind}: {state}" for kind, state in check.math.items())
    if check.manifest_missing:
        lines.append(f"in the manifest but missing: {_some(check.manifest_missing)}")
    if check.not_in_manifest:
        lines.append(f"present but not in the manifest: {_some(check.not_in_manifest)}")
    return lines


def component_json(check: ComponentCheck, name: str) -> dict:
    return {
        "folder": name,
        "summary": check.summary,
        "libraries": [{"kind": lib.kind, "name": lib.name, "version": lib.version} for lib in check.libraries],
        "hip_version": check.hip_version,
        "device_libs": check.device_libs,
        "device_libs_note": check.device_libs_note,
        "math_libraries": check.math,
        "manifest_missing": check.manifest_missing,
        "not_in_manifest": check.not_in_manifest,
        "manifest_versions": check.manifest_versions,
    }
