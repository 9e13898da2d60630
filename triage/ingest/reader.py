"""Read files, folders, archives and stdin into artifacts, in memory and within limits.

Archives (``.zip``, ``.tar``, and ``.gz`` / ``.bz2`` / ``.xz`` wrapping a file or a tar) are
recognised by their content, never by their name, and are never extracted to disk: members are
read through bounded streams, and members with absolute or ``..`` paths, links, devices, or
sizes past the limits are reported and skipped. A corrupt or truncated archive keeps the
members read before the damage. A text line longer than ``Limits.line_chars`` is cut, with a
warning, so that one huge line cannot make the line parsers slow.
"""

from __future__ import annotations

import io
import os
import re
import stat
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from triage.ingest.decode import decode, looks_binary
from triage.model import Artifact

if TYPE_CHECKING:
    import tarfile
    import zipfile

# A labelled case folder's label (this project's corpus/ and the labelled real-world set): never evidence.
CASE_LABELS = ("expected.yaml", "label.yaml")

_CHUNK = 1 << 20
_LONG_LINE_WARNINGS = 5  # per artifact; the rest are counted in one more warning


class IngestError(Exception):
    """The input cannot be read at all (missing path, unreadable file)."""


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 256 * 1024 * 1024
    member_bytes: int = 128 * 1024 * 1024
    total_bytes: int = 512 * 1024 * 1024
    members: int = 10_000  # archive members read, over all archives and nesting levels
    ratio: int = 200
    depth: int = 5  # archive and compression levels (a .tar.gz is two)
    line_chars: int = 1 << 20


def _mib(n: int) -> str:
    return f"{n >> 20} MiB" if n >= 1 << 20 else f"{n} bytes"


def _unsafe_path(raw: str) -> bool:
    path = raw.replace("\\", "/")
    return (
        path.startswith("/")
        or re.match(r"[A-Za-z]:", path) is not None
        or ".." in PurePosixPath(path).parts
        or "\x00" in path
    )


def _unpacked_name(name: str, suffixes: tuple[str, ...]) -> str:
    """``log.gz`` -> ``log``, ``x.tgz`` -> ``x.tar``; other names stay as they are."""
    lower = name.lower()
    for suffix in suffixes:
        if lower.endswith(suffix):
            return name[: -len(suffix)] + (".tar" if suffix.startswith(".t") else "")
    return name


def _is_tar(data: bytes) -> bool:
    return len(data) >= 512 and data[257:262] == b"ustar"


class _Reader:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.artifacts: list[Artifact] = []
        self.warnings: list[str] = []
        self.total = 0
        self.members = 0
        self._members_warned = False
        self._total_warned = False

    # -- leaves -----------------------------------------------------------------------------

    def add_bytes(self, name: str, data: bytes, depth: int = 0) -> None:
        kind = self._archive_kind(data)
        if kind:
            if depth >= self.limits.depth:
                self.warnings.append(
                    f"{name}: {kind} data nested deeper than {self.limits.depth} levels, skipped"
                )
                return
            handler = getattr(self, f"_{kind}")
            try:
                handler(name, data, depth)
            except (MemoryError, RecursionError) as err:
                self.warnings.append(f"{name}: {kind} data too large or too deep to read ({type(err).__name__}); skipped")
            except Exception as err:  # a hostile archive must not stop the triage
                self.warnings.append(
                    f"{name}: {kind} data could not be read ({type(err).__name__}: {err}); "
                    "members read before the damage are kept"
                )
            return
        if not self._room(name, len(data)):
            return
        self.total += len(data)
        if looks_binary(data):
            self.artifacts.append(Artifact(name=name, text="", size=len(data), data=data))
            return
        self.artifacts.append(Artifact(name=name, text=self._cut_long_lines(name, decode(data)), size=len(data)))

    @staticmethod
    def _archive_kind(data: bytes) -> str | None:
        if data[:4] == b"PK\x03\x04" or (data[:4] == b"PK\x05\x06" and len(data) == 22):
            return "zip"
        if data[:2] == b"\x1f\x8b":
            return "gzip"
        if data[:3] == b"BZh" and data[3:4].isdigit() and data[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
            return "bzip2"
        if data[:6] == b"\xfd7zXZ\x00":
            return "xz"
        if _is_tar(data):
            return "tar"
        return None

    def _member_bytes(self, member: str, read: Callable[[], bytes], depth: int, damage: str) -> None:
        """Read one archive member through a bounded stream and take it in; damage is a warning."""
        try:
            data = read()
        except Exception as err:
            self.warnings.append(f"{member}: {damage} ({type(err).__name__}: {err}), skipped")
            return
        if len(data) > self.limits.member_bytes:
            self.warnings.append(f"{member}: larger than its header says, skipped")
            return
        self.add_bytes(member, data, depth + 1)

    def _room(self, name: str, size: int) -> bool:
        """True if ``size`` more bytes fit in the total limit; warn (once) when they do not."""
        if self.total + size <= self.limits.total_bytes:
            return True
        if not self._total_warned:
            self._total_warned = True
            self.warnings.append(
                f"{name}: skipped, the input is over {_mib(self.limits.total_bytes)} in all; "
                "send the logs of the failing run only (later files past the limit are skipped too)"
            )
        return False

    def _count_member(self, name: str) -> bool:
        """Count one archive member against the limit over all archives."""
        if self.members >= self.limits.members:
            if not self._members_warned:
                self._members_warned = True
                self.warnings.append(
                    f"{name}: more than {self.limits.members} archive members in all; the rest skipped"
                )
            return False
        self.members += 1
        return True

    def _cut_long_lines(self, name: str, text: str) -> str:
        limit = self.limits.line_chars
        if len(text) <= limit:
            return text
        lines = text.split("\n")
        if max(map(len, lines)) <= limit:
            return text
        cut = 0
        for number, line in enumerate(lines, 1):
            if len(line) > limit:
                cut += 1
                if cut <= _LONG_LINE_WARNINGS:
                    self.warnings.append(
                        f"{name}: line {number} cut at {_mib(limit)} (it was {len(line)} characters long)"
                    )
                lines[number - 1] = line[:limit]
        if cut > _LONG_LINE_WARNINGS:
            self.warnings.append(f"{name}: {cut - _LONG_LINE_WARNINGS} more lines cut at {_mib(limit)}")
        return "\n".join(lines)

    # -- compressed single streams ----------------------------------------------------------

    def _gzip(self, name: str, data: bytes, depth: int) -> None:
        import gzip

        self._unpack(name, data, depth, lambda f: gzip.GzipFile(fileobj=f), "gzip", (".gz", ".tgz"))

    def _bzip2(self, name: str, data: bytes, depth: int) -> None:
        import bz2

        self._unpack(name, data, depth, lambda f: bz2.BZ2File(f), "bzip2", (".bz2", ".tbz2", ".tbz"))

    def _xz(self, name: str, data: bytes, depth: int) -> None:
        import lzma

        self._unpack(name, data, depth, lambda f: lzma.LZMAFile(f), "xz", (".xz", ".txz"))

    def _unpack(self, name: str, data: bytes, depth: int, opener, kind: str, suffixes: tuple[str, ...]) -> None:
        """One compressed stream: read in chunks, within the member size and ratio limits.

        A truncated or corrupt stream keeps what was unpacked before the damage.
        """
        limit = self.limits.member_bytes
        bomb = max(self.limits.ratio * len(data), 1 << 20)
        chunks: list[bytes] = []
        size = 0
        damage = None
        try:
            with opener(io.BytesIO(data)) as stream:
                while True:
                    chunk = stream.read1(_CHUNK)  # read1: what came before a damaged block is kept
                    if not chunk:
                        break
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > limit:
                        self.warnings.append(f"{name}: over {_mib(limit)} when unpacked; skipped")
                        return
                    if size > bomb:
                        self.warnings.append(
                            f"{name}: compression ratio over {self.limits.ratio}:1 (a {kind} bomb?), skipped"
                        )
                        return
        except Exception as err:  # EOFError, OSError, zlib.error, lzma.LZMAError, ValueError...
            damage = f"{type(err).__name__}: {err}"
        inner = b"".join(chunks)
        del chunks
        if damage is not None:
            if not inner:
                self.warnings.append(f"{name}: not a readable {kind} file ({damage}); nothing read from it")
                return
            self.warnings.append(
                f"{name}: truncated or corrupt {kind} data ({damage}); the {len(inner)} bytes unpacked before it are kept"
            )
        self.add_bytes(_unpacked_name(name, suffixes), inner, depth + 1)

    # -- zip ----------------------------------------------------------------------------------

    def _zip(self, name: str, data: bytes, depth: int) -> None:
        import zipfile  # only when a zip is given: it costs start-up time

        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            members = archive.infolist()
        except Exception as err:  # BadZipFile, OSError, ValueError, struct.error, EOFError...
            self._zip_salvage(name, data, depth, f"{type(err).__name__}: {err}")
            return
        if len(members) > self.limits.members:
            self.warnings.append(
                f"{name}: {len(members)} members, more than the {self.limits.members} read; the rest skipped"
            )
            members = members[: self.limits.members]
        for info in members:
            if not info.filename:  # zipfile's is_dir() raises on it
                self.warnings.append(f"{name}: a member with an empty name, skipped")
                continue
            if info.is_dir():
                continue
            if not self._count_member(name):
                return
            self._zip_member(name, archive, info, depth)

    def _zip_salvage(self, name: str, data: bytes, depth: int, damage: str) -> None:
        """A zip without a readable central directory (a cut download): walk the local headers
        from the start and keep the members that can still be unpacked."""
        import struct
        import zlib

        at = 0
        kept = 0
        while data[at: at + 4] == b"PK\x03\x04" and at + 30 <= len(data):
            flags, method = struct.unpack_from("<HH", data, at + 6)
            packed, size, name_len, extra_len = struct.unpack_from("<IIHH", data, at + 18)
            filename = data[at + 30: at + 30 + name_len].decode("utf-8" if flags & 0x800 else "cp437", "replace")
            start = at + 30 + name_len + extra_len
            member = f"{name}!{filename}"
            if start > len(data) or not self._count_member(name):
                break
            end = None
            blob = b""
            if flags & 0x1:
                self.warnings.append(f"{member}: encrypted, skipped")
            elif _unsafe_path(filename):
                self.warnings.append(f"{member}: unsafe member path, skipped")
            elif method == 0 and not flags & 0x8:
                end = start + packed
                blob = data[start: min(end, len(data))]
            elif method == 8:
                inflate = zlib.decompressobj(-15)
                try:
                    blob = inflate.decompress(data[start:], self.limits.member_bytes + 1)
                except zlib.error:
                    blob = b""
                if inflate.eof:
                    end = len(data) - len(inflate.unused_data)
            else:
                self.warnings.append(f"{member}: compression method {method} in a damaged zip, skipped")
            if blob and not filename.endswith("/"):
                if len(blob) > self.limits.member_bytes:
                    self.warnings.append(f"{member}: over the {_mib(self.limits.member_bytes)} member limit; skipped")
                elif len(blob) > 1 << 20 and len(blob) > self.limits.ratio * max((end or len(data)) - start, 1):
                    self.warnings.append(f"{member}: compression ratio over {self.limits.ratio}:1 (a zip bomb?), skipped")
                else:
                    kept += 1
                    self.add_bytes(member, blob, depth + 1)
            if end is None:
                break
            if flags & 0x8:  # a data descriptor follows: its signature is optional
                end += 16 if data[end: end + 4] == b"PK\x07\x08" else 12
            at = end
        self.warnings.append(
            f"{name}: damaged zip ({damage}); {kept} members recovered from its local headers"
            if kept else f"{name}: not a readable zip ({damage}); nothing read from it"
        )

    def _zip_member(self, name: str, archive: "zipfile.ZipFile", info: "zipfile.ZipInfo", depth: int) -> None:
        member = f"{name}!{info.filename}"
        if _unsafe_path(info.filename):
            self.warnings.append(f"{member}: unsafe member path, skipped")
            return
        mode = info.external_attr >> 16
        if stat.S_ISLNK(mode):
            self.warnings.append(f"{member}: symbolic link, not followed")
            return
        if mode and stat.S_IFMT(mode) and not stat.S_ISREG(mode):
            self.warnings.append(f"{member}: not a regular file (a device, fifo or socket), skipped")
            return
        if info.flag_bits & 0x1:
            self.warnings.append(f"{member}: encrypted, skipped")
            return
        if info.file_size > self.limits.member_bytes:
            self.warnings.append(
                f"{member}: {info.file_size} bytes unpacked, over the {_mib(self.limits.member_bytes)} "
                "member limit; skipped"
            )
            return
        if info.file_size > 1 << 20 and info.file_size > self.limits.ratio * max(info.compress_size, 1):
            self.warnings.append(f"{member}: compression ratio over {self.limits.ratio}:1 (a zip bomb?), skipped")
            return
        if not self._room(member, info.file_size):
            return
        def read() -> bytes:
            with archive.open(info) as stream:
                return stream.read(self.limits.member_bytes + 1)

        # BadZipFile, OSError, NotImplementedError, zlib.error, EOFError...
        self._member_bytes(member, read, depth, "corrupt member")

    # -- tar ----------------------------------------------------------------------------------

    def _tar(self, name: str, data: bytes, depth: int) -> None:
        import tarfile

        try:
            archive = tarfile.open(fileobj=io.BytesIO(data), mode="r:")
        except Exception as err:  # ReadError, EOFError, ValueError...
            self.warnings.append(f"{name}: not a readable tar ({type(err).__name__}: {err}); nothing read from it")
            return
        seen = 0
        with archive:
            while True:
                try:
                    info = archive.next()
                except Exception as err:
                    self.warnings.append(
                        f"{name}: truncated or corrupt tar ({type(err).__name__}: {err}); "
                        f"the {seen} members before it are kept"
                    )
                    return
                if info is None:
                    return
                archive.members.clear()  # keep memory flat for archives of many members
                if info.isdir():
                    continue
                seen += 1
                if seen > self.limits.members:
                    self.warnings.append(
                        f"{name}: more than {self.limits.members} members; the rest skipped"
                    )
                    return
                if not self._count_member(name):
                    return
                self._tar_member(name, archive, info, depth)

    def _tar_member(self, name: str, archive: "tarfile.TarFile", info: "tarfile.TarInfo", depth: int) -> None:
        member = f"{name}!{info.name}"
        if _unsafe_path(info.name):
            self.warnings.append(f"{member}: unsafe member path, skipped")
            return
        if info.issym() or info.islnk():
            kind = "symbolic" if info.issym() else "hard"
            self.warnings.append(f"{member}: {kind} link to {info.linkname!r}, not followed")
            return
        if not info.isreg():
            self.warnings.append(f"{member}: not a regular file (a device, fifo or other special member), skipped")
            return
        if info.size > self.limits.member_bytes:
            self.warnings.append(
                f"{member}: {info.size} bytes, over the {_mib(self.limits.member_bytes)} member limit; skipped"
            )
            return
        if not self._room(member, info.size):
            return
        def read() -> bytes:
            stream = archive.extractfile(info)
            return stream.read(self.limits.member_bytes + 1) if stream is not None else b""

        # ReadError on truncated data, ValueError on sparse maps...
        self._member_bytes(member, read, depth, "truncated or corrupt member")

    # -- the file system ------------------------------------------------------------------------

    def add_path(self, path: Path) -> None:
        if path.is_dir():
            files, links = case_files(path)
            for name in links:
                self.warnings.append(f"{name}: a link, not followed (copy what it points to into the folder to have it read)")
            for name, child in files:
                self._file(child, name)
        elif path.is_file():
            self._file(path, path.name)
        elif path.exists():
            raise IngestError(f"{path}: not a regular file or folder")
        else:
            raise IngestError(f"{path}: no such file or folder")

    def _file(self, path: Path, name: str) -> None:
        try:
            size = path.stat().st_size
            if size > self.limits.file_bytes:
                self.warnings.append(f"{name}: {size} bytes, over the {_mib(self.limits.file_bytes)} limit; skipped")
                return
            with path.open("rb") as handle:
                data = handle.read(self.limits.file_bytes + 1)
        except OSError as err:
            raise IngestError(f"{path}: cannot be read ({err.strerror or err})") from err
        if len(data) > self.limits.file_bytes:
            self.warnings.append(f"{name}: over the {_mib(self.limits.file_bytes)} limit; skipped")
            return
        self.add_bytes(name, data)


def case_files(folder: Path) -> tuple[list[tuple[str, Path]], list[str]]:
    """The files a folder of input holds, as the reader takes them: every regular file under it, in name
    order, named relative to it, and apart the names of the links in it, which are neither followed
    nor read (they may point anywhere); its top-level label (``CASE_LABELS``) is left out."""
    found: list[tuple[tuple[str, ...], str]] = []
    links: list[tuple[str, ...]] = []

    def walk(directory: str, parts: tuple[str, ...]) -> None:
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_symlink():
                    links.append(parts + (entry.name,))
                elif entry.is_dir():
                    walk(entry.path, parts + (entry.name,))
                elif entry.is_file() and (parts or entry.name not in CASE_LABELS):
                    found.append((parts + (entry.name,), entry.path))

    walk(str(folder), ())
    return [("/".join(parts), Path(full)) for parts, full in sorted(found)], ["/".join(p) for p in sorted(links)]


def read_inputs(
    paths: list[str], stdin: BinaryIO | None = None, limits: Limits | None = None
) -> tuple[list[Artifact], list[str]]:
    """Read every path (``-`` is stdin) into artifacts; also return warnings about skipped input."""
    reader = _Reader(limits or Limits())
    for raw in paths:
        if raw == "-":
            if stdin is None:
                raise IngestError("'-' given but there is no standard input")
            data = stdin.read(reader.limits.file_bytes + 1)
            if len(data) > reader.limits.file_bytes:
                reader.warnings.append(
                    f"<stdin>: over the {_mib(reader.limits.file_bytes)} limit; only the first "
                    f"{_mib(reader.limits.file_bytes)} read"
                )
                data = data[: reader.limits.file_bytes]
            reader.add_bytes("<stdin>", data)
        else:
            reader.add_path(Path(raw))
    return reader.artifacts, reader.warnings
