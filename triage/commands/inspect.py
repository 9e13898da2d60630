"""``triage inspect PATH [--gpu gfxNNNN]``: the offload bundles of a binary, the check of a runtime folder.

PATH is a fat binary (executable, shared library, extracted ``.hip_fatbin``, also inside a
zip or tar), a runtime folder an application ships, or what a user sent about one (an ``ls``
listing, ``engine-component.json``, logs). With ``--gpu`` it answers whether every bundle has
code for that GPU. Exit status: 0, or 1 when ``--gpu`` is given and some binary cannot run on
it, 2 for bad input.
"""

from __future__ import annotations

import json
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from triage.commands import fail

if TYPE_CHECKING:
    from triage.inspect.bundle import FatBinary
    from triage.inspect.component import ComponentCheck
    from triage.inspect.gpu import GpuAnswer
    from triage.inspect.targets import TargetId


class InspectFormat(str, Enum):
    text = "text"
    json = "json"


def register(app: typer.Typer) -> None:
    app.command("inspect")(inspect)


def inspect(
    path: Path = typer.Argument(..., help="A fat binary, a runtime folder, or a listing/manifest/logs of one."),
    gpu: Optional[str] = typer.Option(None, "--gpu", help="Answer whether it can run on this GPU (gfx1151, gfx90a:xnack+)."),
    fmt: InspectFormat = typer.Option(InspectFormat.text, "--format", "-f", help="text or json."),
) -> None:
    """Offload bundles of a binary (targets, outliers, --gpu verdict) or the check of a runtime folder."""
    from triage.inspect.gpu import BadGpu, answer_for, gpu_target

    try:
        target = gpu_target(gpu) if gpu else None
    except BadGpu as err:
        raise fail(str(err)) from None
    if not path.exists():
        raise fail(f"{path}: no such file or folder")
    binaries, component, warnings = _read(path, target)
    answers = [answer_for(fat, target) for fat in binaries] if target else []
    if fmt == InspectFormat.json:
        typer.echo(json.dumps(_json(binaries, answers, component, warnings), indent=2))
    else:
        typer.echo(_text(binaries, answers, component, warnings))
    raise typer.Exit(1 if any(a.can_run == "no" for a in answers) else 0)


def _read(path: Path, target: TargetId | None) -> tuple[list[FatBinary], tuple[str, ComponentCheck] | None, list[str]]:
    """The binaries' bundles and the component check, from a real folder or from what was sent."""
    from triage.inspect.bundle import inspect_bytes
    from triage.inspect.component import check, library
    from triage.inspect.folder import from_case, walk
    from triage.ingest import IngestError, read_inputs
    from triage.parsers import parse

    arch = target.processor if target else None
    if path.is_dir():
        folder = walk(path)
        if any(library(n) for n in folder.names):  # a real runtime folder: check it, do not read every byte
            return [], (str(path), check(folder, arch)), []
    try:
        artifacts, warnings = read_inputs([str(path)])
    except IngestError as err:
        raise fail(str(err)) from None
    binaries = [inspect_bytes(a.name, a.data) for a in artifacts if a.data is not None]
    warnings += [w for fat in binaries for w in fat.warnings]
    component = None
    if any(a.data is None for a in artifacts):
        case = parse([a for a in artifacts if a.data is None])
        if found := from_case(case):
            folder, where = found
            hip = case.value("hip_version") if case.value("hip_runtime") != "system" else ""
            component = (where.artifact, check(folder, arch or case.value("gfx_arch"), hip or ""))
    return binaries, component, warnings


def _groups(fat: FatBinary) -> list[str]:
    """Bundles grouped by their target set: ``2 bundles (0x1000, 0xb000): gfx1100 gfx90a``."""
    groups: dict[tuple[str, ...], list[int]] = {}
    for bundle in fat.bundles:
        groups.setdefault(tuple(bundle.targets), []).append(bundle.offset)
    lines = []
    for targets, offsets in sorted(groups.items(), key=lambda g: -len(g[1])):
        shown = ", ".join(f"{o:#x}" for o in offsets[:4]) + (", ..." if len(offsets) > 4 else "")
        what = " ".join(targets) or "no GPU target read"
        lines.append(f"{len(offsets)} bundle{'s' * (len(offsets) != 1)} ({shown}): {what}")
    return lines


def _text(binaries: list[FatBinary], answers: list[GpuAnswer], component: tuple[str, ComponentCheck] | None,
          warnings: list[str]) -> str:
    from triage.inspect.describe import component_lines, fat_lines, fat_summary

    out: list[str] = []
    for number, fat in enumerate(binaries):
        out.append(f"{fat.name}: {fat_summary(fat)}")
        out.extend(f"  {line}" for line in _groups(fat) + fat_lines(fat, answers[number] if answers else None))
    if component:
        name, result = component
        out.append(f"{name}: {result.summary}")
        out.extend(f"  {line}" for line in component_lines(result))
    if not binaries and not component:
        out.append("nothing to inspect: no binary with offload bundles, no runtime folder or listing of one")
    out.extend(f"! {w}" for w in warnings)
    return "\n".join(out)


def _json(binaries: list[FatBinary], answers: list[GpuAnswer], component: tuple[str, ComponentCheck] | None,
          warnings: list[str]) -> dict:
    from collections import Counter

    from triage.inspect.describe import component_json, fat_json
    from triage.inspect.gpu import RANK

    files = [fat_json(fat, answers[n] if answers else None) for n, fat in enumerate(binaries)]
    targets: Counter[str] = Counter()
    for fat in binaries:
        targets.update(fat.counts())
    out: dict = {
        "bundles": [dict(b, file=f["file"]) for f in files for b in f["bundles"]],
        "targets": dict(sorted(targets.items(), key=lambda kv: (-kv[1], kv[0]))),
        "files": files,
        "component": component_json(component[1], component[0]) if component else None,
        "warnings": warnings,
    }
    if answers:
        worst = max(answers, key=lambda a: RANK.index(a.level))
        out["gpu"] = {"gpu": worst.gpu, "can_run": worst.can_run}
    return out
