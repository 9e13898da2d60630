"""Read files, folders, zips and stdin into artifacts, in memory and within limits.

Archives are never extracted to disk: members are read through bounded streams, and members
with absolute or ``..`` paths, links, or sizes past the limits are reported and skipped.
"""

from __future__ import annotations

import io
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

from triage.ingest.decode import decode, looks_binary
from triage.model import Artifact

if TYPE_CHECKING:
    import zipfile

# A corpus case folder keeps its label here; it is never evidence.
CASE_LABEL = "expected.yaml"


class IngestError(Exception):
    """The input cannot be read at all (missing path, unreadable file)."""


@dataclass(frozen=True)
class Limits:
    file_bytes: int = 256 * 1024 * 1024
    member_bytes: int = 128 * 1024 * 1024
    total_bytes: int = 512 * 1024 * 1024
    members: int = 10_000
    ratio: int = 200
    depth: int = 3


class _Reader:
    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.artifacts: list[Artifact] = []
        self.warnings: list[str] = []
        self.total = 0

    def add_bytes(self, name: str, data: bytes, depth: int = 0) -> None:
        if data[:4] == b"PK\x03\x04" or (data[:4] == b"PK\x05\x06" and len(data) == 22):
            self._zip(name, data, depth)
            return
        if data[:2] == b"\x1f\x8b":
            self._gunzip(name, data, depth)
            return
        self.total += len(data)
        if self.total > self.limits.total_bytes:
            self.warnings.append(
                f"{name}: skipped, the input is over {self.limits.total_bytes >> 20} MiB in all; "
                "send the logs of the failing run only"
            )
            return
        if looks_binary(data):
            self.artifacts.append(Artifact(name=name, text="", size=len(data), data=data))
            return
        self.artifacts.append(Artifact(name=name, text=decode(data), size=len(data)))

    def _gunzip(self, name: str, data: bytes, depth: int) -> None:
        """A .gz file is one member: read it through a bounded stream, never whole into memory first."""
        import gzip
        import zlib

        if depth >= self.limits.depth:
            self.warnings.append(f"{name}: compressed data nested deeper than {self.limits.depth} levels, skipped")
            return
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(data)) as stream:
                inner = stream.read(self.limits.member_bytes + 1)
        except (OSError, EOFError, zlib.error) as err:
            self.warnings.append(f"{name}: not a readable gzip file ({err}); nothing read from it")
            return
        if len(inner) > self.limits.member_bytes:
            self.warnings.append(f"{name}: over {self.limits.member_bytes >> 20} MiB when unpacked; skipped")
            return
        if len(data) and len(inner) / len(data) > self.limits.ratio and len(inner) > 1 << 20:
            self.warnings.append(f"{name}: compression ratio over {self.limits.ratio}:1 (a gzip bomb?), skipped")
            return
        self.add_bytes(name.removesuffix(".gz"), inner, depth + 1)

    def _zip(self, name: str, data: bytes, depth: int) -> None:
        import zipfile  # only when a zip is given: it costs start-up time

        if depth >= self.limits.depth:
            self.warnings.append(f"{name}: archive nested deeper than {self.limits.depth} levels, skipped")
            return
        try:
            archive = zipfile.ZipFile(io.BytesIO(data))
            members = archive.infolist()
        except (zipfile.BadZipFile, OSError, ValueError) as err:
            self.warnings.append(f"{name}: not a readable zip ({err}); nothing read from it")
            return
        if len(members) > self.limits.members:
            self.warnings.append(
                f"{name}: {len(members)} members, more than the {self.limits.members} read; the rest skipped"
            )
            members = members[: self.limits.members]
        for info in members:
            self._member(name, archive, info, depth)

    def _member(self, name: str, archive: "zipfile.ZipFile", info: "zipfile.ZipInfo", depth: int) -> None:
        import zipfile

        member = f"{name}!{info.filename}"
        if info.is_dir():
            return
        parts = Path(info.filename.replace("\\", "/")).parts
        if info.filename.startswith(("/", "\\")) or ".." in parts:
            self.warnings.append(f"{member}: unsafe member path, skipped")
            return
        if stat.S_ISLNK(info.external_attr >> 16):
            self.warnings.append(f"{member}: symbolic link, not followed")
            return
        if info.flag_bits & 0x1:
            self.warnings.append(f"{member}: encrypted, skipped")
            return
        if info.file_size > self.limits.member_bytes:
            self.warnings.append(
                f"{member}: {info.file_size} bytes unpacked, over the {self.limits.member_bytes >> 20} MiB "
                "member limit; skipped"
            )
            return
        if info.compress_size and info.file_size / info.compress_size > self.limits.ratio:
            self.warnings.append(f"{member}: compression ratio over {self.limits.ratio}:1 (a zip bomb?), skipped")
            return
        try:
            with archive.open(info) as stream:
                data = stream.read(self.limits.member_bytes + 1)
        except (zipfile.BadZipFile, OSError, ValueError, RuntimeError, EOFError) as err:
            self.warnings.append(f"{member}: corrupt member ({err}), skipped")
            return
        if len(data) > self.limits.member_bytes:
            self.warnings.append(f"{member}: larger than its header says, skipped")
            return
        self.add_bytes(member, data, depth + 1)

    def add_path(self, path: Path) -> None:
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
                if child.name == CASE_LABEL and child.parent == path:
                    continue
                self._file(child, child.relative_to(path).as_posix())
        elif path.is_file():
            self._file(path, path.name)
        else:
            raise IngestError(f"{path}: no such file or folder")

    def _file(self, path: Path, name: str) -> None:
        try:
            size = path.stat().st_size
            if size > self.limits.file_bytes:
                self.warnings.append(f"{name}: {size} bytes, over the {self.limits.file_bytes >> 20} MiB limit; skipped")
                return
            data = path.read_bytes()
        except OSError as err:
            raise IngestError(f"{path}: cannot be read ({err.strerror or err})") from err
        self.add_bytes(name, data)


def read_inputs(
    paths: list[str], stdin: BinaryIO | None = None, limits: Limits | None = None
) -> tuple[list[Artifact], list[str]]:
    """Read every path (``-`` is stdin) into artifacts; also return warnings about skipped input."""
    reader = _Reader(limits or Limits())
    for raw in paths:
        if raw == "-":
            if stdin is None:
                raise IngestError("'-' given but there is no standard input")
            reader.add_bytes("<stdin>", stdin.read(reader.limits.file_bytes + 1))
        else:
            reader.add_path(Path(raw))
    return reader.artifacts, reader.warnings
