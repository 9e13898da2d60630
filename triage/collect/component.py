"""A component folder (an engine or app's bundled runtime): its listing and its manifest files.

The listing is ``ls -lRn``'s shape (numeric owners, so no user name is written), which
triage's listing parser reads: whether a bundled ``libamdhip64`` came with ``amdgcn/bitcode``
is a signature's question. Links are shown, never followed.
"""

from __future__ import annotations

import os
import stat
import time
from pathlib import Path

from triage.collect.items import Found, Item, Missing

LISTING_ENTRIES = 20_000
MANIFEST_BYTES = 1 << 20
MANIFEST_FILES = 20
MANIFEST_SUFFIXES = (".json", ".txt")
_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
_HALF_YEAR_S = 183 * 24 * 3600


def _when(mtime: float, now: float) -> str:
    t = time.localtime(mtime)
    recent = abs(now - mtime) < _HALF_YEAR_S
    return f"{_MONTHS[t.tm_mon - 1]} {t.tm_mday:2d} " + (f"{t.tm_hour:02d}:{t.tm_min:02d}" if recent else f" {t.tm_year}")


def _entry(path: Path, now: float) -> str:
    st = path.lstat()
    line = (f"{stat.filemode(st.st_mode)} {st.st_nlink} {st.st_uid} {st.st_gid} {st.st_size:>9} "
            f"{_when(st.st_mtime, now)} {path.name}")
    if stat.S_ISLNK(st.st_mode):
        line += f" -> {os.readlink(path)}"
    return line


def listing(folder: Path) -> Item:
    """``ls -lRn FOLDER`` in text: every entry with its size, folder by folder, links not followed."""
    now = time.time()
    lines = [f"$ ls -lRn {folder}"]
    count = problems = 0
    for current, dirs, files in os.walk(folder):
        dirs.sort()
        lines += [f"{current}:"] if len(lines) == 1 else ["", f"{current}:"]
        for name in sorted(dirs + files):
            if count >= LISTING_ENTRIES:
                lines.append(f"[triage collect: listing cut at {LISTING_ENTRIES} entries]")
                return Item("component/listing.txt", f"listing of {folder} with sizes (cut)", "\n".join(lines) + "\n")
            try:
                lines.append(_entry(Path(current) / name, now))
            except OSError:
                problems += 1
            count += 1
    if problems:
        lines.append(f"[triage collect: {problems} entries could not be read]")
    return Item("component/listing.txt", f"listing of {folder} with sizes ({count} entries)", "\n".join(lines) + "\n")


def manifests(folder: Path) -> list[Found]:
    """The ``*.json`` / ``*.txt`` files at the folder's top (engine-component.json, BUILD.json, VERSION.txt)."""
    found: list[Found] = []
    try:
        candidates = sorted(p for p in folder.iterdir()
                            if p.suffix.lower() in MANIFEST_SUFFIXES and p.is_file() and not p.is_symlink())
    except OSError as err:
        return [Missing("component manifests", f"{folder} could not be read ({err.strerror or err})")]
    for path in candidates[:MANIFEST_FILES]:
        try:
            size = path.stat().st_size
            if size > MANIFEST_BYTES:
                found.append(Missing(f"component/{path.name}", f"{size} bytes, over the {MANIFEST_BYTES >> 20} MiB kept"))
                continue
            text = path.read_bytes().decode("utf-8", "replace")
        except OSError as err:
            found.append(Missing(f"component/{path.name}", f"could not be read ({err.strerror or err})"))
            continue
        found.append(Item(f"component/{path.name}", f"{path.name} from the top of {folder}", text))
    if len(candidates) > MANIFEST_FILES:
        found.append(Missing("component manifests", f"only the first {MANIFEST_FILES} of {len(candidates)} kept"))
    return found


def component(folder: Path) -> list[Found]:
    """The folder's listing and its manifest files."""
    return [listing(folder), *manifests(folder)]
