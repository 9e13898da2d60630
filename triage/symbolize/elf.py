"""A symbol index of one ELF library: function names with their sizes, keyed by GNU build-id.

triage.elf reads the headers and notes (with pyelftools); the symbol table itself
is read with ``struct`` in one pass, since a large library (libLLVM: ~46,000 exports) would
take seconds symbol by symbol. The index is a few flat ``array`` columns sorted by address,
so that a lookup is a binary search and the per-user cache (``cache_dir("symbols")``) is a
small pickle that loads in milliseconds: the second lookup into a library never re-reads it.

Only function symbols (``STT_FUNC``, ``STT_GNU_IFUNC``) are indexed: frames are code addresses.
"""

from __future__ import annotations

import io
import os
import struct
from array import array
from bisect import bisect_right
from functools import lru_cache
from pathlib import Path
from typing import BinaryIO

from triage.digest import sha256
from triage.elf import ElfError, open_elf, program_headers, section_headers
from triage.elf import build_id as read_notes_build_id
from triage.lazy import dataclass
from triage.resources import cache_dir, read_cached, write_cached

FORMAT = 1  # bump when the pickled layout changes
_STT_FUNC, _STT_GNU_IFUNC = 2, 10
_SHN_UNDEF, _SHN_LORESERVE = 0, 0xFF00
_BIND_RANK = {1: 0, 2: 1, 0: 2}  # GLOBAL before WEAK before LOCAL when several names share an address
_PF_X = 1


@dataclass(frozen=True)
class Segment:
    """A PT_LOAD program header: where the file's bytes land in the module's address space."""

    offset: int
    vaddr: int
    filesz: int
    memsz: int
    executable: bool


@dataclass(frozen=True)
class Hit:
    """The symbol a lookup found: ``inside`` is False when the address lies past its size."""

    name: str
    start: int
    size: int
    inside: bool


@dataclass
class SymbolIndex:
    """Sorted function symbols of one ELF (``table`` is ``symtab``, ``dynsym`` or None) and its LOAD segments."""

    build_id: str | None
    elf_type: str
    table: str | None
    segments: tuple[Segment, ...]
    starts: array
    sizes: array
    reach: array  # reach[i] = the largest end address of symbols 0..i
    name_offsets: array
    strings: bytes

    def __len__(self) -> int:
        return len(self.starts)

    def name(self, i: int) -> str:
        start = self.name_offsets[i]
        end = self.strings.find(b"\0", start)
        return self.strings[start:end if end >= 0 else len(self.strings)].decode("utf-8", "replace")

    def lookup(self, address: int) -> Hit | None:
        """The sized symbol holding ``address``, else the nearest symbol before it (``inside=False``)."""
        i = bisect_right(self.starts, address) - 1
        if i < 0:
            return None
        j = i
        while j >= 0 and self.reach[j] > address:  # some symbol at or before j still covers the address
            if self.starts[j] + self.sizes[j] > address:
                return Hit(self.name(j), self.starts[j], self.sizes[j], True)
            j -= 1
        return Hit(self.name(i), self.starts[i], self.sizes[i], False)

    def mapped(self, address: int) -> bool:
        """Whether a module offset falls inside any LOAD segment (else the library is not the one that ran)."""
        return any(s.vaddr <= address < s.vaddr + s.memsz for s in self.segments)

    def load_segment(self, file_offset: int) -> Segment | None:
        """The LOAD segment whose file bytes hold ``file_offset``."""
        return next((s for s in self.segments if s.offset <= file_offset < s.offset + s.filesz), None)


def read_build_id(stream: BinaryIO) -> str | None:
    """The GNU build-id of an ELF file, read from its PT_NOTE segments or note sections."""
    try:
        return read_notes_build_id(open_elf(stream), stream)
    except ElfError:
        return None


def load_index(source: Path | bytes) -> SymbolIndex:
    """The symbol index of a file or of an ELF held in memory, from the cache when it was built before.

    Raises ElfError when the bytes are not a readable ELF.
    """
    with _open(source) as stream:
        elf = open_elf(stream)
        build_id = read_notes_build_id(elf, stream)
        key = _key(source, build_id, stream.seek(0, io.SEEK_END))
    return _index(key, source, build_id)


@lru_cache(maxsize=32)
def _index(key: str, source: Path | bytes, build_id: str | None) -> SymbolIndex:
    """One index a process (an index never changes once built: shared by every thread), else the per-user
    cache's, else built."""
    folder = cache_dir("symbols")
    cached = folder / f"{key}.v{FORMAT}.pickle" if folder else None
    index = read_cached(cached) if cached else None
    if not isinstance(index, SymbolIndex):
        with _open(source) as stream:
            index = build(open_elf(stream), stream, build_id)
        if cached:
            write_cached(cached, index)
    return index


def build(elf: object, stream: BinaryIO, build_id: str | None) -> SymbolIndex:
    """Read the symbol table (.symtab when it has functions, else .dynsym) and the LOAD segments."""
    try:
        segments = tuple(
            Segment(h["p_offset"], h["p_vaddr"], h["p_filesz"], h["p_memsz"], bool(h["p_flags"] & _PF_X))
            for h in program_headers(elf, stream) if h["p_type"] == "PT_LOAD"
        )
        sections = section_headers(elf, stream)
        found = None
        for kind, table in (("SHT_SYMTAB", "symtab"), ("SHT_DYNSYM", "dynsym")):
            rows, strings = _symbols(elf, stream, sections, kind)
            if rows:
                found = table, rows, strings
                break
        elf_kind = str(elf.header["e_type"])  # type: ignore[attr-defined]
    except ElfError:
        raise
    except Exception as err:  # pyelftools raises many kinds on corrupt headers
        raise ElfError(f"{type(err).__name__}: {err}") from None
    if found is None:
        return SymbolIndex(build_id, elf_kind, None, segments, array("Q"), array("Q"), array("Q"), array("Q"), b"")
    table, rows, strings = found
    rows.sort()
    starts, sizes, reach, names = array("Q"), array("Q"), array("Q"), array("Q")
    furthest, last = 0, None
    for start, _, negative_size, name in rows:
        if start == last:  # an alias of the symbol just kept
            continue
        last = start
        furthest = max(furthest, start - negative_size)
        starts.append(start)
        sizes.append(-negative_size)
        reach.append(furthest)
        names.append(name)
    return SymbolIndex(build_id, elf_kind, table, segments, starts, sizes, reach, names, strings)


def _symbols(elf: object, stream: BinaryIO, sections: list, kind: str) -> tuple[list[tuple[int, int, int, int]], bytes]:
    """Defined function symbols of the first section of this kind, as sortable rows, and its string table."""
    section = next((h for h in sections if h["sh_type"] == kind), None)
    if section is None or not 0 <= section["sh_link"] < len(sections):
        return [], b""
    is64 = elf.elfclass == 64  # type: ignore[attr-defined]
    layout = struct.Struct(("<" if elf.little_endian else ">") + ("IBBHQQ" if is64 else "IIIBBH"))  # type: ignore[attr-defined]
    if section["sh_entsize"] != layout.size:
        raise ElfError(f"{kind} entries of {section['sh_entsize']} bytes, expected {layout.size}")
    raw = _read(stream, section["sh_offset"], section["sh_size"])
    strtab = sections[section["sh_link"]]
    strings = _read(stream, strtab["sh_offset"], strtab["sh_size"])
    rows = []
    for entry in layout.iter_unpack(raw[:len(raw) - len(raw) % layout.size]):
        if is64:
            name, info, _, shndx, value, size = entry
        else:
            name, value, size, info, _, shndx = entry
        if (info & 0xF) not in (_STT_FUNC, _STT_GNU_IFUNC) or shndx == _SHN_UNDEF or shndx >= _SHN_LORESERVE:
            continue
        if value == 0 or name >= len(strings):
            continue
        rows.append((value, _BIND_RANK.get(info >> 4, 3), -size, name))
    return rows, strings


def _read(stream: BinaryIO, offset: int, size: int) -> bytes:
    stream.seek(offset)
    data = stream.read(size)
    if len(data) != size:
        raise ElfError(f"section at 0x{offset:x} runs past the end of the file")
    return data


class _open:
    """A binary stream over a path or over bytes, as a context manager."""

    def __init__(self, source: Path | bytes) -> None:
        self.source = source

    def __enter__(self) -> BinaryIO:
        if isinstance(self.source, (bytes, bytearray)):
            self.stream: BinaryIO = io.BytesIO(self.source)
        else:
            try:
                self.stream = open(self.source, "rb")
            except OSError as err:
                raise ElfError(err.strerror or str(err)) from None
        return self.stream

    def __exit__(self, *exc: object) -> None:
        self.stream.close()


def _key(source: Path | bytes, build_id: str | None, size: int) -> str:
    """Build-id and size (a stripped library and its .debug file share the build-id, not the size)."""
    if build_id:
        return f"{build_id}-{size:x}"
    if isinstance(source, (bytes, bytearray)):
        return "sha-" + sha256(source).hexdigest()[:32]
    stat = os.stat(source)
    return "path-" + sha256(f"{os.path.realpath(source)}|{size}|{stat.st_mtime_ns}".encode()).hexdigest()[:32]
