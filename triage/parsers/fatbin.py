"""Fat binaries a user sent (their offload bundles), and the component check of a listed runtime folder.

A binary artifact (``Artifact.data``) with clang offload bundles becomes an
``OffloadTargets`` record (per-bundle target ids, counts per target) and a finding; the
``binary`` signature conditions read them. Example finding for seed 003 in miniature::

    mini-seed003: 3 offload bundles in .hip_fatbin; 10 targets; 1 bundle with fewer targets than the rest
      outlier: the bundle at 0x15000 has only gfx906 (lacks gfx1100, ...)
      gfx1151: cannot run: 1 of 3 bundles has no code object for it (0x15000: gfx906); ...

``finish`` adds what needs the whole case: the verdict for the GPU in use, and the
component check of a folder listing (with its manifest) that shows a bundled ROCm runtime,
as the facts ``component_check`` (``bundled HIP 7.2 without device libraries``) and
``device_libs_bundled`` (``present``, ``missing`` or ``unknown``).
"""

from __future__ import annotations

from pathlib import PurePath

from triage.model import Artifact, Case, Finding, OffloadTargets, Where

_MAGICS = (b"__CLANG_OFFLOAD_BUNDLE__", b"CCOB")


def parse(artifact: Artifact, case: Case) -> None:
    data = artifact.data
    if data is None or not any(m in data for m in _MAGICS):
        return
    from triage.inspect.bundle import inspect_bytes
    from triage.inspect.describe import fat_lines, fat_summary

    fat = inspect_bytes(artifact.name, data)
    case.warnings.extend(fat.warnings)
    if not fat.bundles:
        return
    where = Where(artifact.name, 0)
    case.claim(where, "offload-binary", "binary")
    readable = [b for b in fat.bundles if b.targets]
    case.offload.append(OffloadTargets(where=where, targets=fat.counts(), bundles=len(readable),
                                       sets=[(b.offset, b.targets) for b in readable],
                                       binary=PurePath(artifact.name.rsplit("!", 1)[-1]).name))
    case.findings.append(Finding(where, "offload-bundles", f"{artifact.name}: {fat_summary(fat)}", fat_lines(fat)))


def finish(case: Case) -> None:
    """The GPU verdict for each inspected binary, and the component check of a listed folder."""
    arch = case.value("gfx_arch")
    if arch and any(block.sets for block in case.offload):
        _gpu_verdicts(case, arch)
    _component(case, arch)


def _gpu_verdicts(case: Case, arch: str) -> None:
    from triage.inspect.describe import gpu_line
    from triage.inspect.gpu import BadGpu, answer, gpu_target

    try:
        gpu = gpu_target(arch)
    except BadGpu:
        return
    findings = {f.where: f for f in case.findings if f.kind == "offload-bundles"}
    for block in case.offload:
        if block.sets and block.where in findings:
            findings[block.where].details.append(gpu_line(answer(block.sets, gpu)))


def _component(case: Case, arch: str | None) -> None:
    if not case.files_listed and not any(a.name.lower().endswith(".json") for a in case.artifacts):
        return  # nothing to check: spare a plain log the imports
    from triage.inspect.component import check
    from triage.inspect.describe import component_lines
    from triage.inspect.folder import from_case

    found = from_case(case)
    if found is None:
        return
    folder, where = found
    hip = case.value("hip_version") if case.value("hip_runtime") == "bundled" else ""
    result = check(folder, arch, hip or "")
    if not result.bundles_runtime:
        return
    text = case.line(where).strip()
    case.add_fact("component_check", result.summary, where, text, 50)
    if any(lib.kind == "HIP" for lib in result.libraries):
        case.add_fact("device_libs_bundled", result.device_libs, where, text, 50)
    case.findings.append(Finding(where, "component", f"{where.artifact}: {result.summary}", component_lines(result)))
