"""Where a component check's folder comes from: a real directory, or the listing lines of a case.

A real directory is walked (within limits, links not followed) and its manifest read; a
case supplies what the listing parser found (``Case.files_listed``) and any manifest
artifact (``engine-component.json``, ``manifest.json``, ``BUILD.json``).
"""

from __future__ import annotations

import os
from pathlib import Path

from triage.inspect.component import Folder, library, read_manifest
from triage.model import Case, Where

MAX_NAMES = 50_000
MANIFEST_NAMES = ("engine-component.json", "component.json", "manifest.json")


def is_manifest(name: str) -> bool:
    return name.rsplit("/", 1)[-1].lower() in MANIFEST_NAMES


def walk(root: Path) -> Folder:
    """Every file and folder under ``root`` (relative, folders ending in ``/``)."""
    names: list[str] = []
    for top, dirs, files in os.walk(root, followlinks=False):
        rel = Path(top).relative_to(root).as_posix()
        prefix = "" if rel == "." else rel + "/"
        names.extend(prefix + d + "/" for d in sorted(dirs))
        names.extend(prefix + f for f in sorted(files))
        if len(names) >= MAX_NAMES:
            break
    folder = Folder(names=names[:MAX_NAMES], complete=len(names) < MAX_NAMES)
    for name in MANIFEST_NAMES:
        path = root / name
        if path.is_file() and path.stat().st_size < 16 << 20:
            folder.manifest = read_manifest(path.read_text(encoding="utf-8", errors="replace"))
            folder.manifest_name = name
            break
    return folder


def _manifest_only(case: Case) -> tuple[Folder, Where] | None:
    """A manifest sent without a listing: its file list stands for the folder."""
    from triage.inspect.component import manifest_files

    for artifact in case.artifacts:
        if is_manifest(artifact.name) and artifact.text and (data := read_manifest(artifact.text)) is not None:
            names = manifest_files(data)
            if names:
                line = next((n for n, text in enumerate(artifact.lines, 1) if "amdhip64" in text), 1)
                name = artifact.name.rsplit("/", 1)[-1]
                return Folder(names=names, complete=False, manifest=data, manifest_name=name), Where(artifact.name, line)
    return None


def from_case(case: Case) -> tuple[Folder, Where] | None:
    """The listing in ``case`` that shows a ROCm runtime library (else the longest), with the
    line of its HIP library; None without a listing."""
    blocks: dict[str, list[tuple[Where, str]]] = {}
    for where, name in case.files_listed:
        blocks.setdefault(where.artifact, []).append((where, name))
    if not blocks:
        return _manifest_only(case)

    def rank(entries: list[tuple[Where, str]]) -> tuple[int, int]:
        return (sum(1 for _, n in entries if (lib := library(n)) and lib.kind == "HIP"), len(entries))

    entries = max(blocks.values(), key=rank)
    artifact = next(a for a in case.artifacts if a.name == entries[0][0].artifact)
    last = entries[-1][0].line
    cut = any(n == "..." for _, n in entries) or artifact.lines[last - 1].rstrip().endswith("...")
    folder = Folder(names=[n for _, n in entries], complete=False, cut=cut)
    for other in case.artifacts:
        if is_manifest(other.name) and other.text:
            folder.manifest = read_manifest(other.text)
            folder.manifest_name = other.name.rsplit("/", 1)[-1]
            break
    hip_line = next((w for w, n in entries if (lib := library(n)) and lib.kind == "HIP"), entries[0][0])
    return folder, hip_line
