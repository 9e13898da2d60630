"""Find and read every clang offload bundle in a file: the GPU code objects a HIP binary carries.

A HIP fat binary keeps one bundle per translation unit, usually in the ELF section
``.hip_fatbin``. An uncompressed bundle is the magic ``__CLANG_OFFLOAD_BUNDLE__``, a
little-endian u64 entry count, then per entry u64 offset (from the bundle's start), u64
size, u64 id length and the id (``hipv4-amdgcn-amd-amdhsa--gfx1100``,
``host-x86_64-unknown-linux--``). ``--offload-compress`` wraps a bundle in a ``CCOB`` header
(u16 version, u16 method: 0 zlib, 1 zstd; then sizes and a hash, by version) and the
compressed bytes.

The magic also occurs as a plain string (the HIP runtime itself carries it): a marker whose
entry table does not read as one is counted, not reported as a bundle. Everything is read
within limits; damage becomes a warning on the result, never an exception.
"""

from __future__ import annotations

import io
import struct
import zlib
from collections import Counter
from dataclasses import dataclass, field

from triage.elf import sections as elf_sections
from triage.inspect.targets import TargetId, parse_target

MAGIC = b"__CLANG_OFFLOAD_BUNDLE__"
CCOB = b"CCOB"
MAX_ENTRIES = 4096
MAX_ID = 1024
MAX_BUNDLES = 100_000
MAX_UNPACKED = 256 << 20
_METHODS = {0: "zlib", 1: "zstd"}
# CCOB header layout per version: (header size, offset of the file size or None, its format,
# offset of the uncompressed size, its format).
_CCOB_LAYOUT = {1: (20, None, "", 8, "<I"), 2: (24, 8, "<I", 12, "<I"), 3: (32, 8, "<Q", 16, "<Q")}


@dataclass
class Entry:
    """One code object (or the empty host entry) of a bundle."""

    id: str
    offset: int
    size: int

    @property
    def kind(self) -> str:
        return self.id.split("-", 1)[0]

    @property
    def target(self) -> TargetId | None:
        return None if self.kind == "host" else parse_target(self.id)


@dataclass
class Bundle:
    """A bundle found at ``offset`` in the file (its magic, or its CCOB header)."""

    offset: int
    entries: list[Entry] = field(default_factory=list)
    compression: str | None = None
    section: str | None = None
    note: str = ""

    @property
    def targets(self) -> list[str]:
        """The device target ids, each once, sorted."""
        return sorted({str(t) for e in self.entries if (t := e.target)})


@dataclass
class FatBinary:
    """Every bundle of one file, and what went wrong while reading them."""

    name: str
    size: int
    bundles: list[Bundle] = field(default_factory=list)
    stray_markers: int = 0
    warnings: list[str] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Target id -> number of bundles that carry it."""
        counts: Counter[str] = Counter(t for b in self.bundles for t in b.targets)
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def outliers(self) -> list[tuple[Bundle, list[str]]]:
        """Bundles lacking targets that the most common target set has, with what they lack."""
        sets = Counter(frozenset(b.targets) for b in self.bundles if b.targets)
        if len(sets) < 2:
            return []
        reference = max(sets, key=lambda s: (sets[s], len(s)))
        return [(b, sorted(reference - set(b.targets))) for b in self.bundles
                if b.targets and not reference <= set(b.targets)]


def _ascii(raw: bytes) -> str | None:
    return raw.decode("ascii") if raw and all(32 < c < 127 for c in raw) else None


def _entries(buf: bytes, at: int) -> tuple[list[Entry], str] | None:
    """The entry table of an uncompressed bundle at ``at``; None when it is not one."""
    if at + 32 > len(buf):
        return None
    (count,) = struct.unpack_from("<Q", buf, at + 24)
    if not 0 < count <= MAX_ENTRIES:
        return None
    entries: list[Entry] = []
    cursor = at + 32
    for number in range(count):
        if cursor + 24 > len(buf):
            return (entries, f"entry table cut after {number} of {count} entries") if entries else None
        offset, size, id_len = struct.unpack_from("<QQQ", buf, cursor)
        name = _ascii(buf[cursor + 24: cursor + 24 + id_len]) if 0 < id_len <= MAX_ID else None
        if name is None or cursor + 24 + id_len > len(buf):
            return (entries, f"entry {number + 1} of {count} unreadable") if entries else None
        entries.append(Entry(name, offset, size))
        cursor += 24 + id_len
    cut = [e.id for e in entries if at + e.offset + e.size > len(buf)]
    return entries, (f"code object of {cut[0]} runs past the end of the data" if cut else "")


def _unpack(method: int, blob: bytes, size: int) -> bytes:
    """Decompress one CCOB payload to at most ``size`` bytes: zstd with the standard library's
    ``compression.zstd`` (Python 3.14+), else ``zstandard`` (a dependency below 3.14); ImportError
    only in an install that lacks both."""
    if method == 0:
        return zlib.decompressobj().decompress(blob, size)
    try:
        import compression.zstd as zstd
    except ImportError:
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(io.BytesIO(blob)) as reader:
            return reader.read(size)
    return zstd.ZstdDecompressor().decompress(blob, max_length=size)


def _compressed(buf: bytes, at: int) -> Bundle | None:
    """A CCOB bundle at ``at``, decompressed where possible; None when the header is implausible."""
    if at + 8 > len(buf):
        return None
    version, method = struct.unpack_from("<HH", buf, at + 4)
    layout = _CCOB_LAYOUT.get(version)
    if layout is None or method not in _METHODS or at + layout[0] > len(buf):
        return None
    header, size_at, size_fmt, raw_at, raw_fmt = layout
    (unpacked,) = struct.unpack_from(raw_fmt, buf, at + raw_at)
    total = struct.unpack_from(size_fmt, buf, at + size_at)[0] if size_at is not None else len(buf) - at
    if not 32 <= unpacked <= MAX_UNPACKED or not header < total or total > 2 * MAX_UNPACKED:
        return None
    bundle = Bundle(offset=at, compression=_METHODS[method])
    if at + total > len(buf):
        bundle.note = f"compressed bundle cut: {total} bytes announced, {len(buf) - at} present"
    try:
        inner = _unpack(method, buf[at + header: at + total], unpacked)
    except ImportError:
        bundle.note = "zstd-compressed: targets unknown until `pip install zstandard` (a dependency this install lacks)"
        return bundle
    except Exception as err:  # zlib.error, zstandard.ZstdError: damaged data
        bundle.note = f"cannot decompress ({type(err).__name__}: {err})"
        return bundle
    read = _entries(inner, 0) if inner.startswith(MAGIC) else None
    if read is None:
        bundle.note = bundle.note or "decompressed data is not an offload bundle"
    else:
        bundle.entries, problem = read
        bundle.note = bundle.note or problem
    return bundle


def inspect_bytes(name: str, buf: bytes) -> FatBinary:
    """Every offload bundle in ``buf``, in file order."""
    result = FatBinary(name=name, size=len(buf))
    sections = elf_sections(buf)
    for magic in (MAGIC, CCOB):
        at = buf.find(magic)
        while at >= 0 and len(result.bundles) < MAX_BUNDLES:
            if magic == MAGIC:
                read = _entries(buf, at)
                bundle = Bundle(offset=at, entries=read[0], note=read[1]) if read else None
                if bundle is None:
                    result.stray_markers += 1
            else:
                bundle = _compressed(buf, at)
            if bundle is not None:
                bundle.section = next((n for n, o, s in sections if o <= at < o + s), None)
                result.bundles.append(bundle)
            at = buf.find(magic, at + len(magic))
    if len(result.bundles) >= MAX_BUNDLES:
        result.warnings.append(f"{name}: more than {MAX_BUNDLES} offload bundles; the rest not read")
    result.bundles.sort(key=lambda b: b.offset)
    for bundle in result.bundles:
        if bundle.note:
            result.warnings.append(f"{name}: bundle at {bundle.offset:#x}: {bundle.note}")
    odd = sorted({e.id for b in result.bundles for e in b.entries
                  if e.kind != "host" and not ((t := e.target) and t.known)})
    if odd:
        result.warnings.append(f"{name}: entries for targets this version does not know: {', '.join(odd[:5])}"
                               + (f" and {len(odd) - 5} more" if len(odd) > 5 else ""))
    return result
