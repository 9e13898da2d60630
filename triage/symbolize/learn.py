"""Learn known frames from cases whose stacks a debugger already named.

A frame that carries both a name from the input and ``module + offset`` teaches the name of
that offset in exactly that library build (its version, and its build-id when a core gave
one). ``update`` adds what is new to a store folder without ever replacing a different name:
a disagreement is a conflict for a person to settle. Existing files are edited in place, line
by line, so their comments survive; every edit is checked by reading the result back.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from triage.lazy import lazy
from triage.model import Case
from triage.symbolize.known_frames import Build, find, load, module_build_id, module_version, split_module

_TOP_LEVEL_KEY = lazy(r"^[^\s#][^:]*:")
_FRAMES_KEY = lazy(r"^frames:\s*(?P<empty>\{\s*\})?\s*(?:#.*)?$")


class LearnError(Exception):
    """A store file could not be updated safely."""


@dataclass
class Learned:
    """Names seen for one library build, and the kernel-offset delta when one crash showed both offsets."""

    library: str
    version: str
    build_id: str | None
    frames: dict[int, str] = field(default_factory=dict)
    seen_in: dict[int, str] = field(default_factory=dict)  # offset -> "artifact:line" it came from
    delta: int | None = None


@dataclass
class Outcome:
    """What ``update`` did to one build's file."""

    path: Path
    build: str
    added: int = 0
    known: int = 0
    conflicts: list[str] = field(default_factory=list)


def same_name(a: str, b: str) -> bool:
    """Two spellings of one function: with and without its parameter list count as the same."""
    return a == b or a.split("(", 1)[0].strip() == b.split("(", 1)[0].strip()


def collect(case: Case, learned: list[Learned]) -> tuple[list[str], list[str]]:
    """Add the case's input-named frames to ``learned``; return (skipped notes, conflicts)."""
    skipped: dict[str, int] = {}
    conflicts: list[str] = []
    for stack in case.stacks:
        for frame in stack.frames:
            if frame.symbol_source != "input" or not frame.symbol or not frame.module or frame.offset is None:
                continue
            library = split_module(frame.module)[0]
            version, build_id = module_version(case, frame.module), module_build_id(case, frame.module)
            if not version and not build_id:
                skipped[frame.module] = skipped.get(frame.module, 0) + 1
                continue
            entry = _entry(learned, library, version or "", build_id)
            where = f"{frame.where.artifact}:{frame.where.line}"
            known = entry.frames.setdefault(frame.offset, frame.symbol)
            if not same_name(known, frame.symbol):
                conflicts.append(f"{library} {entry.version or entry.build_id} 0x{frame.offset:x}: "
                                 f"{known!r} at {entry.seen_in[frame.offset]} but {frame.symbol!r} at {where}")
            entry.seen_in.setdefault(frame.offset, where)
    _delta(case, learned)
    notes = [f"skipped {n} named frame{'s' * (n != 1)} of {module}: no version or build-id of it is known"
             for module, n in skipped.items()]
    return notes, conflicts


def _entry(learned: list[Learned], library: str, version: str, build_id: str | None) -> Learned:
    for entry in learned:
        if entry.library == library and entry.version == version and entry.build_id == build_id:
            return entry
    learned.append(Learned(library, version, build_id))
    return learned[-1]


def _delta(case: Case, learned: list[Learned]) -> None:
    """module offset - kernel file offset of the same crash, when it is a whole number of pages."""
    fault = case.fault
    if fault is None or fault.offset is None or not fault.module:
        return
    library = split_module(fault.module)[0]
    for kf in case.kernel_faults:
        if kf.file_offset is None or split_module(kf.module or "")[0] != library:
            continue
        delta = fault.offset - kf.file_offset
        if delta >= 0 and delta & 0xFFF == 0:
            version = module_version(case, fault.module) or ""
            for entry in learned:
                if entry.library == library and entry.version == version and entry.delta is None:
                    entry.delta = delta
        return


def update(folder: Path, learned: list[Learned], source: str) -> list[Outcome]:
    """Write what is new into ``folder`` (created if needed); conflicting offsets are left as they were."""
    folder.mkdir(parents=True, exist_ok=True)
    builds, problems = load(folder)
    if problems:
        raise LearnError("; ".join(problems) + " (fix or move the file before learning into this folder)")
    outcomes = []
    for entry in learned:
        build = find(builds, entry.library, entry.version, entry.build_id)
        outcomes.append(_update_one(folder, build, entry, source))
    return outcomes


def _update_one(folder: Path, build: Build | None, entry: Learned, source: str) -> Outcome:
    label = f"{entry.library} {entry.version or entry.build_id}"
    existing = build.frames if build else {}
    outcome = Outcome(path=build.path if build and build.path else _new_path(folder, entry), build=label)
    new: dict[int, str] = {}
    for offset, name in sorted(entry.frames.items()):
        known = existing.get(offset)
        if known is None:
            new[offset] = name
        elif same_name(known, name):
            outcome.known += 1
        else:
            outcome.conflicts.append(f"{label} 0x{offset:x}: the store has {known!r} ({outcome.path.name}) "
                                     f"but {entry.seen_in.get(offset, 'the input')} says {name!r}")
    delta = entry.delta
    if build and build.file_offset_delta is not None:
        if delta is not None and delta != build.file_offset_delta:
            outcome.conflicts.append(f"{label}: file_offset_delta is 0x{build.file_offset_delta:x} in the store "
                                     f"but 0x{delta:x} in the input")
        delta = None
    if not new and delta is None:
        return outcome
    text = _edit(outcome.path.read_text(encoding="utf-8"), new, delta) if build else _fresh(entry, new, delta, source)
    _check(text, {**existing, **new}, delta)
    _write(outcome.path, text)
    outcome.added = len(new)
    return outcome


def _new_path(folder: Path, entry: Learned) -> Path:
    stem = re.sub(r"[^A-Za-z0-9._+-]", "_", entry.library.removesuffix(".so"))
    tag = re.sub(r"[^A-Za-z0-9._+-]", "_", entry.version or (entry.build_id or "")[:16])
    path, number = folder / f"{stem}-{tag}.yaml", 1
    while path.exists():
        number += 1
        path = folder / f"{stem}-{tag}-{number}.yaml"
    return path


def _frame_line(offset: int, name: str) -> str:
    return f'  "0x{offset:x}": {json.dumps(name)}\n'


def _fresh(entry: Learned, new: dict[int, str], delta: int | None, source: str) -> str:
    lines = [f"# Known frames of {entry.library} {entry.version or entry.build_id}, learned by `triage frames learn`.\n",
             f"library: {json.dumps(entry.library)}\n"]
    if entry.version:
        lines.append(f"version: {json.dumps(entry.version)}\n")
    if entry.build_id:
        lines.append(f"build_id: {json.dumps(entry.build_id)}\n")
    if delta is not None:
        lines.append("# module offset (gdb, coredumpctl) = kernel-log file offset + this delta\n")
        lines.append(f"file_offset_delta: 0x{delta:x}\n")
    lines.append(f"source: {json.dumps(source)}\n")
    lines.append("frames:\n")
    lines.extend(_frame_line(o, n) for o, n in new.items())
    return "".join(lines)


def _edit(text: str, new: dict[int, str], delta: int | None) -> str:
    """Append frame lines at the end of the ``frames:`` block (and a delta line before it), keeping the rest."""
    lines = text.splitlines(keepends=True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    at = next((i for i, line in enumerate(lines) if _FRAMES_KEY.match(line.rstrip("\n"))), None)
    if at is None:
        lines.append("frames:\n")
        at = len(lines) - 1
    elif _FRAMES_KEY.match(lines[at].rstrip("\n"))["empty"]:  # type: ignore[index]
        lines[at] = "frames:\n"
    end = at + 1
    for i in range(at + 1, len(lines)):
        if _TOP_LEVEL_KEY.match(lines[i]):
            break
        if lines[i].strip() and not lines[i].lstrip().startswith("#"):
            end = i + 1
    lines[end:end] = [_frame_line(o, n) for o, n in new.items()]
    if delta is not None:
        lines[at:at] = [f"file_offset_delta: 0x{delta:x}\n"]
    return "".join(lines)


def _check(text: str, frames: dict[int, str], delta: int | None) -> None:
    """Read the new text back: it must hold exactly the expected frames (and delta)."""
    try:
        data = yaml.safe_load(text)
        got = {int(str(k), 16) if not isinstance(k, int) else k: str(v) for k, v in (data.get("frames") or {}).items()}
        got_delta = data.get("file_offset_delta")
    except (yaml.YAMLError, AttributeError, ValueError) as err:
        raise LearnError(f"the edited store file would not read back ({err}); nothing written") from None
    if got != frames or (delta is not None and got_delta != delta):
        raise LearnError("the edited store file would not read back as intended; nothing written")


def _write(path: Path, text: str) -> None:
    try:
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False, suffix=".tmp") as tmp:
            tmp.write(text)
        os.replace(tmp.name, path)
    except OSError as err:
        raise LearnError(f"cannot write {path}: {err.strerror or err}") from None
