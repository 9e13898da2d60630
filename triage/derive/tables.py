"""The support tables under ``signatures/tables/``: GPU architectures and what each ROCm release supports.

They are data with their sources in the files; this module only reads them into frozen values
that any number of analyses may share.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

from triage.lazy import lazy
from triage.resources import data_dir, load_yaml

_ARCH = lazy(r"^gfx[0-9a-f]{3,4}$")
_TRADEMARK = lazy(r"\((?:tm|r)\)|[\u2122\u00ae]")


class TableError(ValueError):
    """A support table that cannot be used (the message names the file and the entry)."""


@dataclass(frozen=True)
class Arch:
    name: str
    family: str
    apu: bool
    generation: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Tables:
    archs: dict[str, Arch]
    generic: dict[str, frozenset[str]]
    known_since: dict[str, tuple[int, ...]]
    supported: dict[str, tuple[tuple[tuple[int, ...], frozenset[str]], ...]]  # os -> ((release, archs), ...) newest first
    product_names: tuple[tuple[str, str], ...]  # (lower-case name, arch), longest name first

    def arch(self, name: str | None) -> Arch | None:
        return self.archs.get(name or "")

    def arch_of_product(self, text: str) -> str | None:
        """The gfx arch of the first product name found in ``text`` as whole words (longest names first);
        trademark signs are no part of a name (Windows and llama.cpp print "AMD Radeon(TM) 780M Graphics")."""
        low = " ".join(_TRADEMARK.sub(" ", text.lower()).split())
        for name, arch in self.product_names:
            at = low.find(name)
            while at >= 0:
                end = at + len(name)
                if (at == 0 or not low[at - 1].isalnum()) and (end == len(low) or not low[end].isalnum()):
                    return arch
                at = low.find(name, at + 1)
        return None

    def supports(self, arch: str, release: tuple[int, ...], os_name: str) -> bool | None:
        """Whether the ROCm release lists the arch as supported on the OS (None: no table for it)."""
        for since, archs in self.supported.get(os_name, ()):
            if release[:2] >= since[:2]:
                return arch in archs
        return None

    def knows(self, arch: str, release: tuple[int, ...]) -> bool | None:
        """Whether the release's runtime knows the processor at all (a processor of the table without a
        ``known_since`` is older than every release listed; None: not in the table)."""
        since = self.known_since.get(arch)
        if since is None:
            return True if arch in self.archs else None
        return release[:2] >= since[:2]


def version_tuple(text: str) -> tuple[int, ...]:
    """``"6.2.41133"`` -> (6, 2, 41133); stops at the first part that is not a number."""
    parts = []
    for part in str(text).split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        parts.append(int(m.group(0)))
        if m.end() < len(part):
            break
    return tuple(parts)


def _read(folder: Path, name: str) -> dict:
    path = folder / name
    try:
        data = load_yaml(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable table is reported the same way
        raise TableError(f"{path}: cannot be read ({exc}); reinstall hip-triage or fix the file") from None
    if not isinstance(data, dict):
        raise TableError(f"{path}: a support table is a mapping")
    return data


@functools.cache
def load_tables(folder: Path | None = None) -> Tables:
    """Read ``tables/gpus.yaml`` and ``tables/rocm-support.yaml`` of a signature folder; a folder without
    tables (a user's own signatures) uses the shipped ones."""
    base = (folder or data_dir("signatures")) / "tables"
    if not base.is_dir():
        base = data_dir("signatures") / "tables"
    gpus, support = _read(base, "gpus.yaml"), _read(base, "rocm-support.yaml")
    archs = {}
    for name, row in (gpus.get("archs") or {}).items():
        if not _ARCH.match(str(name)) or not isinstance(row, dict):
            raise TableError(f"{base / 'gpus.yaml'}: entry {name!r} is not a gfx processor with its fields")
        archs[str(name)] = Arch(str(name), str(row.get("family", "")), bool(row.get("apu", False)),
                                str(row.get("generation", "")), tuple(str(n) for n in row.get("names") or ()))
    products = sorted(((" ".join(n.lower().split()), a.name) for a in archs.values() for n in a.names),
                      key=lambda item: (-len(item[0]), item[0]))
    supported = {}
    for os_name in ("linux", "windows"):
        rows = [(version_tuple(release), frozenset(map(str, listed)))
                for release, listed in (support.get(os_name) or {}).items()]
        supported[os_name] = tuple(sorted(rows, reverse=True))
    return Tables(
        archs=archs,
        generic={str(g): frozenset(map(str, members)) for g, members in (gpus.get("generic") or {}).items()},
        known_since={str(a): version_tuple(v) for a, v in (support.get("known_since") or {}).items()},
        supported=supported,
        product_names=tuple(products),
    )
