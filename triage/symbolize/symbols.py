"""Find the ELF file that names a frame's module: in the user's bundle or in a symbol folder.

Matched by GNU build-id when the case knows the module's (a core file records it), else by
file name and version. A symbol folder is searched recursively and in the layouts debuggers
use: ``.build-id/ab/cdef....debug`` (and the ``.build-id/ab/cdef...`` executable link) and
debuginfod's cache ``BUILDID/debuginfo`` / ``BUILDID/executable``. Every problem (a corrupt
ELF, an unreadable folder) becomes a warning: symbols are a bonus, never a reason to fail.
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path

from triage.lazy import dataclass
from triage.model import Artifact
from triage.elf import ElfError, elf_type
from triage.symbolize.elf import SymbolIndex, load_index, read_build_id
from triage.symbolize.known_frames import split_module, split_module_path

MAX_FOLDER_FILES = 200_000  # files looked at in a symbol folder before the search stops
_LIBRARY_TYPES = ("ET_DYN", "ET_EXEC")


@dataclass(frozen=True)
class Match:
    """The ELF that names a module, and why it is believed to be the one that ran."""

    index: SymbolIndex
    label: str  # where the file is, for notes: "bundle: lib/libamdhip64.so.7"
    how: str  # "build-id", "file name and version" or "file name"


@dataclass(frozen=True, eq=False)  # compared by identity: never hash a library's bytes
class _Candidate:
    """An ELF that may be the library that ran: a file in ``--symbols`` (``path``) or one the input holds (``data``)."""

    label: str
    name: str
    path: Path | None = None
    data: bytes | None = None


def _library_name(file_name: str) -> tuple[str, str | None]:
    """``libamdhip64.so.5.2.21153.debug`` -> (``libamdhip64.so``, ``5.2.21153``)."""
    return split_module(file_name.removesuffix(".debug"))


def _versions_agree(wanted: str | None, found: str | None) -> bool | None:
    """True when one version extends the other (``7`` and ``7.2.53211``), False when they differ, None when unknown."""
    wanted, found = _numeric(wanted), _numeric(found)
    if not wanted or not found:
        return None
    if wanted == found or wanted.startswith(found + ".") or found.startswith(wanted + "."):
        return True
    return False


def _numeric(version: str | None) -> str | None:
    """The dotted numbers a version starts with: ``5.2.21153-0`` -> ``5.2.21153``."""
    m = re.match(r"\d+(?:\.\d+)*", version or "")
    return m[0] if m else None


class Locator:
    """Answers "which ELF is this module?" for one case, reading each file at most once."""

    def __init__(self, artifacts: list[Artifact], symbols: Path | None, warnings: list[str]) -> None:
        self.warnings = warnings
        self.symbols = symbols
        self._bundle = [
            _Candidate(f"bundle: {a.name}", split_module_path(a.name), data=a.data)
            for a in artifacts if a.data is not None and elf_type(a.data) in _LIBRARY_TYPES
        ]
        self._folder: dict[str, list[_Candidate]] | None = None
        self._indexes: dict[_Candidate, SymbolIndex | None] = {}
        self._found: dict[tuple[str, str | None, str | None], Match | None] = {}
        if symbols is not None and not symbols.is_dir():
            warnings.append(f"--symbols {symbols}: no such folder; frames were named without it")
            self.symbols = None

    def find(self, module: str, version: str | None, build_id: str | None) -> Match | None:
        """The ELF for ``module`` (a name such as ``libamdhip64.so.7``) of this version or build-id."""
        key = (module, version, build_id)
        if key not in self._found:
            self._found[key] = self._find(module, version, build_id)
        return self._found[key]

    def _find(self, module: str, version: str | None, build_id: str | None) -> Match | None:
        if build_id:
            for candidate in self._by_build_id(build_id):
                index = self._index(candidate)
                if index is not None and index.build_id == build_id:
                    return Match(index, candidate.label, "build-id")
        library, module_suffix = split_module(module)
        best: Match | None = None
        for candidate in self._bundle + self._named(library):
            file_library, file_version = _library_name(candidate.name)
            agree = _versions_agree(version, file_version)
            if file_library != library or agree is False or _versions_agree(module_suffix, file_version) is False:
                continue
            index = self._index(candidate)
            if index is None:
                continue
            if build_id and index.build_id and index.build_id != build_id:
                continue  # the same name, another build: its offsets mean nothing here
            if build_id and index.build_id == build_id:
                return Match(index, candidate.label, "build-id")
            how = "file name and version" if agree and version and version.count(".") >= 2 else "file name"
            if best is None or (how != "file name" and best.how == "file name"):
                best = Match(index, candidate.label, how)
        return best

    def _index(self, candidate: _Candidate) -> SymbolIndex | None:
        if candidate not in self._indexes:
            try:
                self._indexes[candidate] = load_index(candidate.data if candidate.data is not None else candidate.path)
            except (ElfError, OSError, MemoryError) as err:
                self.warnings.append(f"{candidate.label}: not a readable ELF library ({err}); not used for symbols")
                self._indexes[candidate] = None
        return self._indexes[candidate]

    def _by_build_id(self, build_id: str) -> list[_Candidate]:
        out = []
        for candidate in self._bundle:
            if read_build_id(io.BytesIO(candidate.data or b"")) == build_id:
                out.append(candidate)
        if self.symbols is not None and len(build_id) > 2:
            head, rest = build_id[:2], build_id[2:]
            for path in (self.symbols / ".build-id" / head / f"{rest}.debug", self.symbols / ".build-id" / head / rest,
                         self.symbols / build_id / "debuginfo", self.symbols / build_id / "executable"):
                if path.is_file():
                    out.append(_Candidate(f"symbols: {path}", path.name, path=path))
        return out

    def _named(self, library: str) -> list[_Candidate]:
        """Files in the symbol folder whose name is this library (any version), found in one walk."""
        if self.symbols is None:
            return []
        if self._folder is None:
            self._folder = self._walk(self.symbols)
        return self._folder.get(library, [])

    def _walk(self, root: Path) -> dict[str, list[_Candidate]]:
        found: dict[str, list[_Candidate]] = {}
        count = 0
        for folder, _, files in os.walk(root, onerror=lambda err: self.warnings.append(f"--symbols: {err}")):
            for name in files:
                count += 1
                if count > MAX_FOLDER_FILES:
                    self.warnings.append(f"--symbols {root}: more than {MAX_FOLDER_FILES} files; the rest not searched")
                    return found
                path = Path(folder) / name
                if path.is_file():  # a link to a file counts; a dangling one does not
                    found.setdefault(_library_name(name)[0], []).append(_Candidate(f"symbols: {path}", name, path=path))
        return found
