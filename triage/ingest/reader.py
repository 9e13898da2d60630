"""Read files, folders, archives and stdin into artifacts, in memory and within limits.

Archives (``.zip``, ``.tar``, and ``.gz`` / ``.bz2`` / ``.xz`` wrapping a file or a tar) are
recognised by their content, never by their name, and are never extracted to disk. An archive
given as a file is read from the file, not loaded whole; each member is unpacked in steps of at
most ``_CHUNK`` bytes, and every step is counted before the next is taken:

- against the member's own limit and, in a zip, the size its header gives;
- against the input's ratio: everything the archives of one input (a file given, or stdin)
  unpack, at every nesting level, may come to ``Limits.ratio`` times the input's size (or
  ``Limits.ratio_floor``). Crossing it stops the input: a bomb;
- against ``Limits.total_bytes``, all that is read from files and out of archives in one
  analysis. Crossing it stops the analysis' reading.

A zip whose central directory lists entries that overlap (two entries with the same local
header, or one's header and data inside another's) is a zip bomb and is not read at all; the
directory is read by this module, at most ``Limits.members`` entries of it.

What is kept is held to ``Limits.memory``, an estimate of what the analysis will hold: a binary
file its size, a text ``TEXT_COST`` times its size as Python holds it (one byte a character for
ASCII, up to four for wide characters) plus ``LINE_COST`` a line. A binary file past what is left
is skipped; a text past it keeps its first and last parts, and later files are skipped.

Members with absolute or ``..`` paths, links and devices are reported and skipped. A corrupt
or truncated archive keeps the members read before the damage. A text line longer than
``Limits.line_chars`` is cut, with a warning, so that one huge line cannot make the line
parsers slow. A line that is a log escaped into one string (a JSON field, a Python repr of captured
output, an rsyslog message with #012 for its newlines) is first opened into its lines (ingest/escaped.py), with
a warning that says so.
"""

from __future__ import annotations

import io
import os
import re
import stat
import struct
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, BinaryIO

from triage.ingest.decode import decode, looks_binary, text_encoding
from triage.ingest.escaped import open_escaped
from triage.lazy import dataclass
from triage.model import Artifact

if TYPE_CHECKING:
    import tarfile

# A labelled case folder's label (this project's corpus/ and the labelled real-world set): never evidence.
CASE_LABELS = ("expected.yaml", "label.yaml")

_CHUNK = 1 << 20  # the most one unpacking step gives
_PACKED = 64 << 10  # compressed bytes fed to a decompressor at a time
_HEAD = 4096  # what is read of a file to tell what it is
_LONG_LINE_WARNINGS = 5  # per artifact; the rest are counted in one more warning

# What the analysis holds for kept text, measured (resource.getrusage over `triage FILE -f json`) on
# AMD_LOG_LEVEL logs and short-line files: the text, its lines and what the parsers and the report
# make of them, about five times the text as Python holds it, and some 64 bytes a line.
TEXT_COST = 5
LINE_COST = 64


class IngestError(Exception):
    """The input cannot be read at all (missing path, unreadable file)."""


@dataclass(frozen=True)
class Limits:
    """How much a run reads and unpacks at most: hostile inputs stop at these, with a warning."""
    file_bytes: int = 256 * 1024 * 1024  # a binary file or an archive given as a path or stdin
    member_bytes: int = 128 * 1024 * 1024  # one archive member, or one compressed stream, unpacked
    total_bytes: int = 256 * 1024 * 1024  # read from files and unpacked from archives, over all inputs
    memory: int = 320 * 1024 * 1024  # what is kept, by the estimate above (about 64 MiB of log)
    members: int = 10_000  # archive members read, over all archives and nesting levels
    ratio: int = 200  # what one input's archives unpack, in all, to the input's size
    ratio_floor: int = 1024 * 1024  # ... though any input may unpack this much
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


def _archive_kind(head: bytes, size: int) -> str | None:
    if head[:4] == b"PK\x03\x04" or (head[:4] == b"PK\x05\x06" and size == 22):
        return "zip"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if head[:3] == b"BZh" and head[3:4].isdigit() and head[4:10] in (b"1AY&SY", b"\x17rE8P\x90"):
        return "bzip2"
    if head[:6] == b"\xfd7zXZ\x00":
        return "xz"
    if size >= 512 and head[257:262] == b"ustar":
        return "tar"
    return None


class _Stop(Exception):
    """Reading ends: of the current input (a bomb), or of every input (a limit over all of them).

    What was read before is kept; the message, when there is one, is the warning."""


class _Held(io.BytesIO):
    """Bytes already unpacked and counted: reading them again counts nothing."""


# -- zip, read here: the central directory, overlaps, and each member unpacked in steps ------------

class _BadZip(Exception):
    pass


@dataclass
class _Entry:
    """A zip member as its central directory describes it."""
    name: str
    flags: int
    method: int
    crc: int
    packed: int
    size: int
    mode: int
    offset: int  # of the local header, in the file
    data: int | None = None  # where the packed data starts; None when the local header is not one

    @property
    def is_dir(self) -> bool:
        return self.name.endswith("/")


def _read_at(f: BinaryIO, at: int, n: int) -> bytes:
    f.seek(at)
    return f.read(n)


def _zip_directory(f: BinaryIO, size: int, most: int) -> tuple[list[_Entry], int | None]:
    """The first ``most`` entries of a zip's central directory, each with where its data starts, and
    when there are more, how many the directory says it has (None when there are no more). Prepended data (a self-extractor) is allowed for, as
    zipfile does. Raises _BadZip (or struct.error) when there is no readable directory."""
    tail_at = max(0, size - 22 - 0xFFFF)
    tail = _read_at(f, tail_at, size - tail_at)
    at = tail.rfind(b"PK\x05\x06")
    while at >= 0 and at + 22 > len(tail):
        at = tail.rfind(b"PK\x05\x06", 0, at)
    if at < 0:
        raise _BadZip("no end of central directory")
    _, _, _, _, count, cd_size, cd_offset, _ = struct.unpack_from("<4s4H2LH", tail, at)
    end = tail_at + at  # where the directory should end
    if end >= 20:
        locator = _read_at(f, end - 20, 20)
        if locator[:4] == b"PK\x06\x07":
            record = _read_at(f, end - 20 - 56, 56)
            if len(record) == 56 and record[:4] == b"PK\x06\x06":
                count, cd_size, cd_offset = struct.unpack_from("<3Q", record, 32)
                end -= 20 + 56
    concat = end - cd_size - cd_offset
    if concat < 0 or cd_offset + concat < 0:
        raise _BadZip("bad offset for central directory")
    at, stop = cd_offset + concat, end
    entries: list[_Entry] = []
    while at < stop and len(entries) < most:
        fixed = _read_at(f, at, 46)
        if len(fixed) < 46 or fixed[:4] != b"PK\x01\x02":
            raise _BadZip("bad central directory entry")
        (flags, method, crc, packed, unpacked, name_len, extra_len, comment_len, external,
         offset) = struct.unpack_from("<8xHH4xLLLHHH4xLL", fixed)
        variable = _read_at(f, at + 46, name_len + extra_len)
        raw = variable[:name_len]
        extra = variable[name_len:]
        # Zip64: the 8-byte values of the fields that are all ones, in this order.
        wide = [field for field, value in (("size", unpacked), ("packed", packed), ("offset", offset))
                if value == 0xFFFFFFFF]
        i = 0
        while wide and i + 4 <= len(extra):
            tag, length = struct.unpack_from("<HH", extra, i)
            if tag == 1:
                values = struct.unpack_from(f"<{min(len(wide), length // 8)}Q", extra, i + 4)
                found = dict(zip(wide, values))
                unpacked = found.get("size", unpacked)
                packed = found.get("packed", packed)
                offset = found.get("offset", offset)
                break
            i += 4 + length
        entries.append(_Entry(
            name=raw.decode("utf-8" if flags & 0x800 else "cp437", "replace"), flags=flags, method=method,
            crc=crc, packed=packed, size=unpacked, mode=external >> 16, offset=offset + concat,
        ))
        at += 46 + name_len + extra_len + comment_len
    for entry in entries:
        local = _read_at(f, entry.offset, 30) if 0 <= entry.offset < size else b""
        if len(local) == 30 and local[:4] == b"PK\x03\x04":
            name_len, extra_len = struct.unpack_from("<HH", local, 26)
            entry.data = entry.offset + 30 + name_len + extra_len
    return entries, (max(count, len(entries) + 1) if at < stop else None)


def _overlap(entries: list[_Entry]) -> bool:
    """True when two entries share a local header, or one's header and packed data run into another's:
    the many-names-one-stream zip bomb (David Fifield's, 2019). No zip writer does this."""
    spans = sorted((e.offset, e.data + e.packed if e.data is not None else e.offset + 30) for e in entries)
    return any(start < spans[i - 1][1] for i, (start, _) in enumerate(spans) if i)


def _zip_stream(method: int, read: Callable[[int], bytes], ended: list[int]) -> Iterator[bytes]:
    """Unpack one zip member's packed data, got through ``read(n)`` (``b""`` at its end), in steps
    of at most ``_CHUNK`` bytes. ``ended`` gets the count of packed bytes left unread when the
    compressed stream ends first (a zip read without its directory needs it to find the next member)."""
    if method == 0:
        while chunk := read(_CHUNK):
            yield chunk
        return
    if method == 8:
        inflate = zlib.decompressobj(-15)
        while not inflate.eof:
            data = inflate.unconsumed_tail or read(_PACKED)
            if not data:  # the packed data ended before the stream did: the size and CRC tell
                if rest := inflate.flush():
                    yield rest
                return
            if out := inflate.decompress(data, _CHUNK):
                yield out
        ended.append(len(inflate.unused_data))
        return
    if method == 12:
        import bz2

        unpacker = bz2.BZ2Decompressor()
    elif method == 14:
        import lzma

        head = read(4)
        if len(head) < 4:
            raise EOFError("no LZMA properties")
        props = read(struct.unpack_from("<H", head, 2)[0])
        unpacker = lzma.LZMADecompressor(
            lzma.FORMAT_RAW, filters=[lzma._decode_filter_properties(lzma.FILTER_LZMA1, props)])
    else:
        raise NotImplementedError(f"compression method {method}")
    # zipfile gives bzip2 and LZMA all the packed data it reads at once, with no bound on what
    # comes out: a few hundred bytes of bzip2 unpack to gigabytes. Here, at most _CHUNK a step.
    while not unpacker.eof:
        if unpacker.needs_input:
            data = read(_PACKED)
            if not data:
                return
        else:
            data = b""
        if out := unpacker.decompress(data, _CHUNK):
            yield out
    ended.append(len(unpacker.unused_data))


class _Window:
    """``read(n)`` over ``length`` bytes of ``f`` from ``start`` (to its end when None); ``at`` is
    where the next read starts. Each read seeks: a nested reader may have moved the file."""

    def __init__(self, f: BinaryIO, start: int, length: int | None) -> None:
        self.f, self.at, self.left = f, start, length

    def read(self, n: int) -> bytes:
        if self.left is not None:
            n = min(n, self.left)
        if n <= 0:
            return b""
        data = _read_at(self.f, self.at, n)
        self.at += len(data)
        if self.left is not None:
            self.left -= len(data)
        return data


# -- text: what is kept of a long one --------------------------------------------------------------

def _lines(data: bytes, start: int = 0, end: int | None = None) -> int:
    """Lines ``decode`` will make of ``data[start:end]``: LF, CR and CRLF each end one."""
    end = len(data) if end is None else end
    return data.count(b"\n", start, end) + data.count(b"\r", start, end) - data.count(b"\r\n", start, end)


_BELOW_F0 = bytes(range(0xF0))  # the bytes that start no four-byte UTF-8 character (a regex class read 4 MB in 14 ms)


def _width(data: bytes, encoding: str) -> int:
    """At most how many bytes Python will hold a character of ``data`` in, per byte of it."""
    if encoding != "utf-8":
        return 2  # two bytes a character, four at most in a str
    if data.isascii():
        return 1
    return 4 if data.translate(None, _BELOW_F0) else 2  # a byte that starts a 4-byte character is left (in C)


def _cost(data: bytes, encoding: str) -> int:
    return TEXT_COST * _width(data, encoding) * len(data) + LINE_COST * _lines(data)


def _fit(data: bytes, budget: int, width: int, from_end: bool) -> int:
    """The most bytes of ``data``, from its start (or its end), that cost at most ``budget``."""
    n = len(data)
    step = 1 << 20
    kept = 0
    spent = 0
    while kept < n:
        take = min(step, n - kept)
        start, end = (n - kept - take, n - kept) if from_end else (kept, kept + take)
        cost = TEXT_COST * width * take + LINE_COST * _lines(data, start, end)
        if spent + cost <= budget:
            spent += cost
            kept += take
            continue
        if take <= 64:
            break
        step = take // 2  # narrow down within this block
    return kept


def _to_line(data: bytes, at: int, forward: bool, reach: int) -> int:
    """``at`` moved to the nearest line start within ``reach`` bytes (forward: after; else before)."""
    if forward:
        newline = data.find(b"\n", at, at + reach)
        return newline + 1 if newline >= 0 else at
    newline = data.rfind(b"\n", max(0, at - reach), at)
    return newline + 1 if newline >= 0 else at


def _long_line(text: str, start: int, limit: int) -> int:
    """Where the first line longer than ``limit`` at or after ``start`` (a line start) begins, or -1."""
    at = start
    while len(text) - at > limit:
        newline = text.rfind("\n", at, at + limit + 1)
        if newline < 0:
            return at
        at = newline + 1
    return -1


class _Reader:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.artifacts: list[Artifact] = []
        self.warnings: list[str] = []
        self.read = 0  # bytes read from files and out of archives
        self.kept = 0  # what the kept artifacts cost, by the estimate
        self.members = 0
        self.done = False  # a limit over all inputs was crossed: nothing more is read
        self._members_warned = False
        self._input = ""  # the input being read: its name and size, and what its archives unpacked
        self._input_size = 0
        self._unpacked = 0

    # -- inputs ------------------------------------------------------------------------------

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
        if self.done:
            return
        try:
            handle = path.open("rb")
        except OSError as err:
            raise IngestError(f"{path}: cannot be read ({err.strerror or err})") from err
        with handle:
            try:
                size = os.fstat(handle.fileno()).st_size
                head = handle.read(_HEAD)
            except OSError as err:
                raise IngestError(f"{path}: cannot be read ({err.strerror or err})") from err
            try:
                self._one_input(name, handle, size, head)
            except OSError as err:  # the file itself, not an archive in it (those are warnings)
                raise IngestError(f"{path}: cannot be read ({err.strerror or err})") from err

    def add_data(self, name: str, data: bytes) -> None:
        """One input held in memory (stdin)."""
        if self.done:
            return
        try:
            self._count_read(name, len(data))
        except _Stop as stop:
            self.warnings.append(str(stop))
            return
        self._one_input(name, _Held(data), len(data), data[:_HEAD])

    def _one_input(self, name: str, f: BinaryIO, size: int, head: bytes) -> None:
        self._input, self._input_size, self._unpacked = name, size, 0
        try:
            self._take(name, f, size, 0, head)
        except _Stop as stop:
            if str(stop):
                self.warnings.append(str(stop))

    # -- the counts --------------------------------------------------------------------------

    def _count_read(self, where: str, n: int) -> None:
        """Count ``n`` bytes read from a file or out of an archive; stop all reading past the total."""
        self.read += n
        if self.read > self.limits.total_bytes:
            self.done = True
            raise _Stop(
                f"{where}: stopped, the input is over {_mib(self.limits.total_bytes)} in all (read from files "
                "and unpacked from archives); send the logs of the failing run only (later files are skipped too)"
            )

    def _count_unpacked(self, where: str, n: int, kind: str) -> None:
        """Count ``n`` bytes a decompressor gave for the current input: its ratio, then the total."""
        self._unpacked += n
        allowed = max(self.limits.ratio * self._input_size, self.limits.ratio_floor)
        if self._unpacked > allowed:
            raise _Stop(
                f"{where}: compression ratio over {self.limits.ratio}:1 (a {kind} bomb?): {self._input} "
                f"({self._input_size} bytes) unpacks to more than {_mib(allowed)}; reading it stopped there"
            )
        self._count_read(where, n)

    def _room_unpacked(self, where: str, n: int, kind: str) -> None:
        """Stop before unpacking a member whose header says it would cross the ratio or the total."""
        allowed = max(self.limits.ratio * self._input_size, self.limits.ratio_floor)
        if self._unpacked + n > allowed:
            raise _Stop(
                f"{where}: compression ratio over {self.limits.ratio}:1 (a {kind} bomb?): {self._input} "
                f"({self._input_size} bytes) would unpack to more than {_mib(allowed)}; reading it stopped there"
            )
        if self.read + n > self.limits.total_bytes:
            self._count_read(where, n)

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

    # -- one file or member ----------------------------------------------------------------------

    def _take(self, name: str, f: BinaryIO, size: int, depth: int, head: bytes | None = None) -> None:
        """Read one file or member: an archive is opened, anything else kept within the budget."""
        if self.done:
            raise _Stop()
        if head is None:
            head = _read_at(f, 0, _HEAD)
        kind = _archive_kind(head, size)
        binary = kind is not None or looks_binary(head)
        if binary and size > self.limits.file_bytes:
            self.warnings.append(f"{name}: {size} bytes, over the {_mib(self.limits.file_bytes)} limit; skipped")
            return
        if not kind:
            self._keep_binary(name, f, size) if binary else self._keep_text(name, f, size, head)
            return
        if depth >= self.limits.depth:
            self.warnings.append(f"{name}: {kind} data nested deeper than {self.limits.depth} levels, skipped")
            return
        try:
            getattr(self, f"_{kind}")(name, f, size, depth)
        except _Stop:
            raise
        except (MemoryError, RecursionError) as err:
            self.warnings.append(f"{name}: {kind} data too large or too deep to read ({type(err).__name__}); skipped")
        except Exception as err:  # a hostile archive must not stop the triage
            self.warnings.append(
                f"{name}: {kind} data could not be read ({type(err).__name__}: {err}); "
                "members read before the damage are kept"
            )

    def _bytes(self, name: str, f: BinaryIO, start: int, n: int) -> bytes:
        """``n`` bytes of ``f`` from ``start``, counted unless they were counted when unpacked."""
        if isinstance(f, _Held):
            held = f.getvalue()  # the bytes it was made of: no copy
            return held if start == 0 and n == len(held) else held[start: start + n]
        self._count_read(name, n)
        return _read_at(f, start, n)

    def _keep_binary(self, name: str, f: BinaryIO, size: int) -> None:
        room = self.limits.memory - self.kept
        if size > room:
            self.warnings.append(
                f"{name}: binary file of {size} bytes, more than the {_mib(room)} left of what one analysis "
                f"keeps ({_mib(self.limits.memory)}); skipped"
            )
            return
        data = self._bytes(name, f, 0, size)
        self.kept += len(data)
        self.artifacts.append(Artifact(name=name, text="", size=len(data), data=data))

    def _keep_text(self, name: str, f: BinaryIO, size: int, head: bytes) -> None:
        """Keep a text whole if it fits in what is left of ``Limits.memory``; else its first and
        last parts that do, and nothing after it. A long file is read only in those parts."""
        encoding = text_encoding(head)
        room = self.limits.memory - self.kept
        most = room // TEXT_COST  # bytes of text that could fit at best (ASCII, no lines)
        if encoding != "utf-8":
            most -= most % 2
        if size <= most:
            data = self._bytes(name, f, 0, size)
            if _cost(data, encoding) <= room:
                self._add_text(name, decode(data, encoding), len(data))
                return
            first, last = data, data
        else:
            half = most // 2
            first = self._bytes(name, f, 0, half)
            last_start = size - half
            if encoding != "utf-8" and last_start % 2:
                last_start += 1
            last = self._bytes(name, f, last_start, size - last_start)
        # Half of the room each (less what the note between them costs), cut to whole lines where one
        # ends near enough.
        reach = self.limits.line_chars
        width = max(_width(first, encoding), _width(last, encoding))
        half = max(0, room - TEXT_COST * 4 * 128 - LINE_COST * 4) // 2
        keep_first = _fit(first, half, width, from_end=False)
        keep_last = _fit(last, half, width, from_end=True)
        if first is last:
            keep_last = min(keep_last, len(data) - keep_first)
        if encoding == "utf-8":
            if keep_first < len(first):
                keep_first = _to_line(first, keep_first, forward=False, reach=reach)
            if keep_last < len(last):
                keep_last = len(last) - _to_line(last, len(last) - keep_last, forward=True, reach=reach)
        else:
            keep_first -= keep_first % 2
            keep_last -= keep_last % 2
        if keep_first + keep_last < 2:
            self.done = True
            self.warnings.append(
                f"{name}: skipped, the input is over what one analysis reads in all (about "
                f"{_mib(self.limits.memory // TEXT_COST)} of text); send the logs of the failing run only "
                "(later files are skipped too)"
            )
            raise _Stop()
        left_out = size - keep_first - keep_last
        text = (decode(first[:keep_first], encoding).rstrip("\n")
                + f"\n[... hip-triage: {left_out} bytes left out here ...]\n"
                + decode(last[len(last) - keep_last:], encoding))
        del first, last
        self.done = True
        self.warnings.append(
            f"{name}: {size} bytes of text; only its first {_mib(keep_first)} and last {_mib(keep_last)} are read, "
            f"the input is over what one analysis reads in all (about {_mib(self.limits.memory // TEXT_COST)} of "
            "text, less with short lines or wide characters); send the logs of the failing run only "
            "(later files are skipped)"
        )
        self._add_text(name, text, keep_first + keep_last)
        raise _Stop()

    def _add_text(self, name: str, text: str, size: int) -> None:
        text, opened = open_escaped(text)
        for number, count in opened[:_LONG_LINE_WARNINGS]:
            self.warnings.append(f"{name}: line {number} holds {count} lines with their newlines escaped (a JSON or Python "
                                 "string's \\n, rsyslog's #012) and is read as those lines; later line numbers are "
                                 "the opened text's")
        text = self._cut_long_lines(name, text)
        self.kept += TEXT_COST * sys.getsizeof(text) + LINE_COST * (text.count("\n") + 1)
        self.artifacts.append(Artifact(name=name, text=text, size=size))

    def _cut_long_lines(self, name: str, text: str) -> str:
        limit = self.limits.line_chars
        start = _long_line(text, 0, limit)
        if start < 0:
            return text
        pieces = []
        copied = 0  # text before this is in pieces
        number, counted = 1, 0  # the line number at ``counted``
        cut = 0
        while start >= 0:
            end = text.find("\n", start)
            end = len(text) if end < 0 else end
            number += text.count("\n", counted, start)
            counted = start
            cut += 1
            if cut <= _LONG_LINE_WARNINGS:
                self.warnings.append(
                    f"{name}: line {number} cut at {_mib(limit)} (it was {end - start} characters long)"
                )
            pieces.append(text[copied: start + limit])
            copied = end
            start = _long_line(text, end + 1, limit) if end < len(text) else -1
        pieces.append(text[copied:])
        if cut > _LONG_LINE_WARNINGS:
            self.warnings.append(f"{name}: {cut - _LONG_LINE_WARNINGS} more lines cut at {_mib(limit)}")
        return "".join(pieces)

    def _unpack_member(self, member: str, chunks: Iterator[bytes], kind: str, most: int,
                       declared: int | None = None) -> bytes | None:
        """Take a member's unpacked data, each step counted, up to ``most`` bytes (and, from a zip's
        header, ``declared``); None, with a warning, when there is more."""
        out = io.BytesIO()
        size = 0
        for chunk in chunks:
            size += len(chunk)
            if declared is not None and size > declared:
                self.warnings.append(f"{member}: larger than its header says, skipped")
                return None
            if size > most:
                self.warnings.append(f"{member}: over the {_mib(most)} member limit when unpacked; skipped")
                return None
            self._count_unpacked(member, len(chunk), kind)
            out.write(chunk)
        return out.getvalue()

    # -- compressed single streams ----------------------------------------------------------

    def _gzip(self, name: str, f: BinaryIO, size: int, depth: int) -> None:
        import gzip

        self._unpack(name, f, depth, lambda raw: gzip.GzipFile(fileobj=raw), "gzip", (".gz", ".tgz"))

    def _bzip2(self, name: str, f: BinaryIO, size: int, depth: int) -> None:
        import bz2

        self._unpack(name, f, depth, lambda raw: bz2.BZ2File(raw), "bzip2", (".bz2", ".tbz2", ".tbz"))

    def _xz(self, name: str, f: BinaryIO, size: int, depth: int) -> None:
        import lzma

        self._unpack(name, f, depth, lambda raw: lzma.LZMAFile(raw), "xz", (".xz", ".txz"))

    def _unpack(self, name: str, f: BinaryIO, depth: int, opener, kind: str, suffixes: tuple[str, ...]) -> None:
        """One compressed stream, unpacked a step at a time within the member limit, the input's ratio
        and the total. A truncated or corrupt stream keeps what was unpacked before the damage."""
        limit = self.limits.member_bytes
        out = io.BytesIO()
        size = 0
        damage = None
        f.seek(0)
        with opener(f) as stream:
            while True:
                try:
                    chunk = stream.read1(_CHUNK)  # read1: what came before a damaged block is kept
                except Exception as err:  # EOFError, OSError, zlib.error, lzma.LZMAError, ValueError...
                    damage = f"{type(err).__name__}: {err}"
                    break
                if not chunk:
                    break
                self._count_unpacked(name, len(chunk), kind)
                size += len(chunk)
                if size > limit:
                    self.warnings.append(f"{name}: over {_mib(limit)} when unpacked; skipped")
                    return
                out.write(chunk)
        inner = out.getvalue()
        del out
        if damage is not None:
            if not inner:
                self.warnings.append(f"{name}: not a readable {kind} file ({damage}); nothing read from it")
                return
            self.warnings.append(
                f"{name}: truncated or corrupt {kind} data ({damage}); the {len(inner)} bytes unpacked before it are kept"
            )
        self._take(_unpacked_name(name, suffixes), _Held(inner), len(inner), depth + 1)

    # -- zip ----------------------------------------------------------------------------------

    def _zip(self, name: str, f: BinaryIO, size: int, depth: int) -> None:
        try:
            entries, listed = _zip_directory(f, size, self.limits.members)
        except (_BadZip, struct.error, OSError, ValueError, EOFError) as err:
            self._zip_salvage(name, f, size, depth, str(err) if isinstance(err, _BadZip) else f"{type(err).__name__}: {err}")
            return
        if _overlap(entries):
            self.warnings.append(f"{name}: entries overlap: a zip bomb; not read")
            return
        if listed is not None:
            self.warnings.append(
                f"{name}: {listed} members, more than the {self.limits.members} read; the rest skipped"
            )
        for entry in entries:
            if not entry.name:
                self.warnings.append(f"{name}: a member with an empty name, skipped")
                continue
            if entry.is_dir:
                continue
            if self.done:
                raise _Stop()
            if not self._count_member(name):
                return
            self._zip_member(name, f, entry, depth)

    def _zip_member(self, name: str, f: BinaryIO, entry: _Entry, depth: int) -> None:
        member = f"{name}!{entry.name}"
        if _unsafe_path(entry.name):
            self.warnings.append(f"{member}: unsafe member path, skipped")
            return
        if stat.S_ISLNK(entry.mode):
            self.warnings.append(f"{member}: symbolic link, not followed")
            return
        if entry.mode and stat.S_IFMT(entry.mode) and not stat.S_ISREG(entry.mode):
            self.warnings.append(f"{member}: not a regular file (a device, fifo or socket), skipped")
            return
        if entry.flags & 0x41:
            self.warnings.append(f"{member}: encrypted, skipped")
            return
        if entry.size > self.limits.member_bytes:
            self.warnings.append(
                f"{member}: {entry.size} bytes unpacked, over the {_mib(self.limits.member_bytes)} "
                "member limit; skipped"
            )
            return
        if entry.size > 1 << 20 and entry.size > self.limits.ratio * max(entry.packed, 1):
            self.warnings.append(f"{member}: compression ratio over {self.limits.ratio}:1 (a zip bomb?), skipped")
            return
        if entry.data is None:
            self.warnings.append(f"{member}: corrupt member (no local header where the directory says), skipped")
            return
        if entry.method not in (0, 8, 12, 14):
            self.warnings.append(f"{member}: compression method {entry.method} is not supported, skipped")
            return
        self._room_unpacked(member, entry.size, "zip")
        try:
            chunks = _zip_stream(entry.method, _Window(f, entry.data, entry.packed).read, [])
            data = self._unpack_member(member, chunks, "zip", self.limits.member_bytes, entry.size)
        except _Stop:
            raise
        except Exception as err:  # zlib.error, OSError, EOFError, LZMAError, ValueError...
            self.warnings.append(f"{member}: corrupt member ({type(err).__name__}: {err}), skipped")
            return
        if data is None:
            return
        if len(data) != entry.size or zlib.crc32(data) != entry.crc:
            self.warnings.append(f"{member}: corrupt member (bad CRC-32 or size), skipped")
            return
        self._take(member, _Held(data), len(data), depth + 1)

    def _zip_salvage(self, name: str, f: BinaryIO, size: int, depth: int, damage: str) -> None:
        """A zip without a readable central directory (a cut download): walk the local headers
        from the start and keep the members that can still be unpacked."""
        at = 0
        kept = 0
        while at + 30 <= size:
            local = _read_at(f, at, 30)
            if local[:4] != b"PK\x03\x04":
                break
            flags, method = struct.unpack_from("<HH", local, 6)
            packed, name_len, extra_len = struct.unpack_from("<I4xHH", local, 18)
            filename = _read_at(f, at + 30, name_len).decode("utf-8" if flags & 0x800 else "cp437", "replace")
            start = at + 30 + name_len + extra_len
            member = f"{name}!{filename}"
            if start > size or self.done or not self._count_member(name):
                break
            end = None
            blob = None
            known = method == 0 and not flags & 0x8
            if flags & 0x1:
                self.warnings.append(f"{member}: encrypted, skipped")
            elif _unsafe_path(filename):
                self.warnings.append(f"{member}: unsafe member path, skipped")
            elif known or method == 8:
                ended: list[int] = []
                window = _Window(f, start, packed if known else None)
                try:
                    blob = self._unpack_member(member, _zip_stream(method, window.read, ended), "zip",
                                               self.limits.member_bytes)
                except _Stop:
                    raise
                except Exception:  # zlib.error, OSError...
                    blob = None
                if known:
                    end = start + packed
                elif ended:
                    end = window.at - ended[0]
            else:
                self.warnings.append(f"{member}: compression method {method} in a damaged zip, skipped")
            if blob and not filename.endswith("/"):
                if len(blob) > 1 << 20 and len(blob) > self.limits.ratio * max((end or size) - start, 1):
                    self.warnings.append(f"{member}: compression ratio over {self.limits.ratio}:1 (a zip bomb?), skipped")
                else:
                    kept += 1
                    self._take(member, _Held(blob), len(blob), depth + 1)
            if end is None or end <= at:
                break
            if flags & 0x8:  # a data descriptor follows: its signature is optional
                end += 16 if _read_at(f, end, 4) == b"PK\x07\x08" else 12
            at = end
        self.warnings.append(
            f"{name}: damaged zip ({damage}); {kept} members recovered from its local headers"
            if kept else f"{name}: not a readable zip ({damage}); nothing read from it"
        )

    # -- tar ----------------------------------------------------------------------------------

    def _tar(self, name: str, f: BinaryIO, size: int, depth: int) -> None:
        import tarfile

        f.seek(0)  # tarfile starts where the file is
        try:
            archive = tarfile.open(fileobj=f, mode="r:")
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
                if self.done:
                    raise _Stop()
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
        if self.read + info.size > self.limits.total_bytes:
            self._count_read(member, info.size)
        try:
            stream = archive.extractfile(info)
            if stream is None:
                return
            if info.issparse():  # holes come out as zeros: unpacked, as from a compressed member
                data = self._unpack_member(member, iter(lambda: stream.read(_CHUNK), b""), "tar",
                                           self.limits.member_bytes)
                if data is None:
                    return
                stream = _Held(data)
            self._take(member, stream, info.size, depth + 1)
        except _Stop:
            raise
        except Exception as err:  # ReadError on truncated data, ValueError on sparse maps...
            self.warnings.append(f"{member}: truncated or corrupt member ({type(err).__name__}: {err}), skipped")


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
            reader.add_data("<stdin>", data)
        else:
            reader.add_path(Path(raw))
    return reader.artifacts, reader.warnings
