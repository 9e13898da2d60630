"""The one ELF reader: headers, program and section headers, section names and GNU notes.

pyelftools parses every header here, with its own structures; the symbolizer, the core-file
parser and the fat-binary inspector all read ELF through this module. Two things are done by
hand because pyelftools would be slow or cannot reach them: section objects are never built
(pyelftools decodes a whole hash table when it builds that section: 0.3 s on libLLVM), and a
library mapped in a core file is read from the core's memory, which holds its program headers
but not its section headers, so only the program-header structure is used there.
"""

from __future__ import annotations

import io
from functools import lru_cache
from typing import Any, BinaryIO, Callable

NT_GNU_BUILD_ID = 3
MAX_NOTE_BYTES = 1 << 16
MAX_PROGRAM_HEADERS = 4096
MAX_SECTION_HEADERS = 65535


class ElfError(Exception):
    """The bytes are not an ELF this module can read (truncated, corrupt, not an object file)."""


def elf_type(data: bytes) -> str | None:
    """``ET_DYN``, ``ET_EXEC``, ``ET_CORE`` ... from an ELF header's first bytes; None if it is not ELF."""
    if len(data) < 18 or data[:4] != b"\x7fELF" or data[5] not in (1, 2):
        return None
    kind = int.from_bytes(data[16:18], "little" if data[5] == 1 else "big")
    return {1: "ET_REL", 2: "ET_EXEC", 3: "ET_DYN", 4: "ET_CORE"}.get(kind, f"type {kind}")


def open_elf(stream: BinaryIO) -> Any:
    """pyelftools' ELFFile over ``stream``; ElfError for anything it cannot read."""
    from elftools.elf.elffile import ELFFile

    head = stream.read(64)
    stream.seek(0)
    if elf_type(head) is None:
        raise ElfError("not an ELF file")
    try:
        return ELFFile(stream)
    except Exception as err:  # pyelftools raises many kinds on corrupt headers
        raise ElfError(f"{type(err).__name__}: {err}") from None


def _table(elf: Any, stream: BinaryIO, layout_name: str, prefix: str, limit: int) -> list:
    from elftools.common.utils import struct_parse

    header = elf.header
    count, size, start = header[f"{prefix}num"], header[f"{prefix}entsize"], header[f"{prefix}off"]
    if count > limit:
        raise ElfError(f"{count} entries in the {layout_name} table")
    layout = getattr(elf.structs, layout_name)
    try:
        return [struct_parse(layout, stream, stream_pos=start + i * size) for i in range(count if start else 0)]
    except Exception as err:
        raise ElfError(f"{layout_name} table: {type(err).__name__}: {err}") from None


def program_headers(elf: Any, stream: BinaryIO) -> list:
    """The program header table, as pyelftools containers (``p_type``, ``p_offset`` ...)."""
    return _table(elf, stream, "Elf_Phdr", "e_ph", MAX_PROGRAM_HEADERS)


def section_headers(elf: Any, stream: BinaryIO) -> list:
    """The section header table, as pyelftools containers (``sh_type``, ``sh_offset`` ...)."""
    return _table(elf, stream, "Elf_Shdr", "e_sh", MAX_SECTION_HEADERS)


def sections(data: bytes) -> list[tuple[str, int, int]]:
    """(name, file offset, size) of each section with bytes in the file; [] for anything not ELF or unreadable."""
    stream = io.BytesIO(data)
    try:
        elf = open_elf(stream)
        headers = section_headers(elf, stream)
        index = elf.header["e_shstrndx"]
        if not 0 <= index < len(headers):
            return []
        names_at, names_size = headers[index]["sh_offset"], headers[index]["sh_size"]
    except ElfError:
        return []
    out = []
    for header in headers:
        if header["sh_type"] == "SHT_NOBITS":  # no bytes in the file
            continue
        start = names_at + header["sh_name"]
        end = data.find(b"\0", start, min(start + 256, names_at + names_size))
        name = data[start:end].decode("ascii", "replace") if end >= 0 else "?"
        out.append((name, header["sh_offset"], header["sh_size"]))
    return out


def gnu_build_id(notes: bytes, little_endian: bool = True) -> str | None:
    """The NT_GNU_BUILD_ID in a run of ELF notes, as hex; None when there is none or the run is cut."""
    order = "little" if little_endian else "big"
    position = 0
    while position + 12 <= len(notes):
        namesz, descsz, kind = (int.from_bytes(notes[position + i:position + i + 4], order) for i in (0, 4, 8))
        name_end = position + 12 + ((namesz + 3) & ~3)
        desc_end = name_end + ((descsz + 3) & ~3)
        if desc_end > len(notes):
            return None
        if kind == NT_GNU_BUILD_ID and notes[position + 12:position + 12 + namesz].rstrip(b"\0") == b"GNU":
            return notes[name_end:name_end + descsz].hex()
        position = desc_end
    return None


def build_id(elf: Any, stream: BinaryIO) -> str | None:
    """NT_GNU_BUILD_ID from the PT_NOTE segments, else from the note sections (a debug file's)."""
    try:
        tables = [(h["p_offset"], h["p_filesz"]) for h in program_headers(elf, stream) if h["p_type"] == "PT_NOTE"]
        tables += [(h["sh_offset"], h["sh_size"]) for h in section_headers(elf, stream) if h["sh_type"] == "SHT_NOTE"]
        for offset, size in tables:
            stream.seek(offset)
            if found := gnu_build_id(stream.read(min(size, MAX_NOTE_BYTES)), elf.little_endian):
                return found
    except ElfError:
        raise
    except Exception as err:
        raise ElfError(f"notes unreadable ({type(err).__name__}: {err})") from None
    return None


@lru_cache(maxsize=1)
def _elf64_structs() -> Any:
    """pyelftools' structures of a 64-bit little-endian ELF (read-only once made)."""
    from elftools.elf.structs import ELFStructs

    structs = ELFStructs(little_endian=True, elfclass=64)
    structs.create_basic_structs()
    structs.create_advanced_structs(e_type="ET_DYN", e_machine="EM_X86_64", e_ident_osabi="ELFOSABI_SYSV")
    return structs


def mapped_build_id(read: Callable[[int, int], bytes | None], base: int) -> str | None:
    """The build-id of a 64-bit little-endian ELF mapped at ``base``, read through ``read(address, size)``
    (a core file's memory): its program headers, then the notes they point to."""
    head = read(base, 64)
    if not head or elf_type(head) is None or head[4] != 2 or head[5] != 1:
        return None
    structs = _elf64_structs()
    layout, size = structs.Elf_Phdr, structs.Elf_Phdr.sizeof()
    header = structs.Elf_Ehdr.parse(head)
    phoff, phentsize, phnum = header["e_phoff"], header["e_phentsize"], header["e_phnum"]
    if phentsize < size or phnum > 128:
        return None
    headers = []
    for i in range(phnum):
        raw = read(base + phoff + i * phentsize, size)
        if raw is None:
            return None
        headers.append(layout.parse(raw))
    first_load = next((h for h in headers if h["p_type"] == "PT_LOAD"), None)
    bias = base - (first_load["p_vaddr"] - first_load["p_offset"]) if first_load else base  # vaddr of offset 0
    for header in headers:
        if header["p_type"] != "PT_NOTE":
            continue
        raw = read(bias + header["p_vaddr"], min(header["p_filesz"], MAX_NOTE_BYTES))
        if raw and (found := gnu_build_id(raw)):
            return found
    return None
