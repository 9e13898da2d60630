"""Where the data that ships with the tool lives: the signature database and report templates.

An installed wheel carries them as ``triage/_data/``; a source checkout or an editable install
finds them at the top of the tree.
"""

from __future__ import annotations

import contextlib
import functools
import itertools
import os
import pickle
import threading
from pathlib import Path
from typing import Any

from triage.digest import sha256
from triage.shipped_yaml import shipped

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the shipped folder ``signatures`` or ``reports``."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"the '{name}' folder that ships with hip-triage is missing (looked in "
        f"{_PACKAGE / '_data'} and {_PACKAGE.parent}); reinstall with `pip install hip-triage`"
    )


def load_yaml(path: Path, keep: bool = True) -> Any:
    """Parse a YAML file safely (raises OSError or yaml.YAMLError).

    With ``keep``, what the file parsed to is kept in the per-user cache under its path, size and
    modification time, and read back while those stay the same: a warm single triage then reads the
    support tables and known frames without importing PyYAML (some 12 ms) or parsing them. Files read
    once into a cache of their own (the signatures, into the database) pass ``keep=False``.
    """
    folder = cache_dir("yaml") if keep else None
    if folder is None:
        return _parse_yaml(path)
    before = _stamp(path)
    file = folder / f"{sha256(repr((before, _yaml_build())).encode()).hexdigest()[:32]}.pickle"
    found = read_cached(file) if before else None
    if isinstance(found, tuple) and len(found) == 1:
        return found[0]
    data = _parse_yaml(path)
    if before and _stamp(path) == before:  # not kept when the file changed while it was read
        write_cached(file, (data,))
    return data


def _parse_yaml(path: Path) -> Any:
    """PyYAML is imported here: a run that finds what it needs in the cache, or a shipped file's parse in the table
    that ships with the tool (triage/shipped_yaml.py), reads no YAML."""
    text = path.read_text(encoding="utf-8")
    known, data = shipped(text)
    if known:
        return data
    import yaml

    # libyaml's parser when PyYAML was built with it: several times faster on the database.
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


def _stamp(path: Path) -> tuple[str, int, int] | None:
    """What tells one version of a file from another: its full path, modification time and size."""
    try:
        stat = path.stat()
        return str(path.resolve()), stat.st_mtime_ns, stat.st_size
    except OSError:
        return None


@functools.cache
def _yaml_build() -> str:
    """Which PyYAML parses (its installed file's stamp, found without importing it): a parse kept by
    another version is not read back."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("yaml")
        origin = Path(spec.origin) if spec and spec.origin else None
        stat = origin.stat() if origin else None
    except (ImportError, ValueError, OSError):
        return "none"
    return f"{origin}:{stat.st_mtime_ns}:{stat.st_size}" if stat else "none"


def cache_dir(name: str) -> Path | None:
    """A per-user cache folder (``$XDG_CACHE_HOME/hip-triage/NAME``), or None when caching is off or impossible.

    ``TRIAGE_CACHE=0`` turns caching off; ``TRIAGE_CACHE=DIR`` puts the cache in DIR.
    """
    setting = os.environ.get("TRIAGE_CACHE", "")
    if setting == "0":
        return None
    base = Path(setting) if setting else Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "hip-triage"
    folder = base / name
    if folder.is_dir():  # one stat: a run asks for its cache folders a few hundred times
        return folder
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    return folder


@functools.cache
def source_key(*packages: str) -> str:
    """A digest of the Python files of these packages of the tool (``"scan"``, ``"match"``): a cache entry
    made by other code is not read back. Read once a process: the code does not change under a running tool.

    Each file counts by its name, size and modification time, as Python's own bytecode cache tells a changed
    source: hashing the files' text was some 3% of a warm single triage."""
    digest = sha256()
    for package in packages:
        with os.scandir(_PACKAGE / package) as entries:
            stats = sorted((entry.name, entry.stat()) for entry in entries if entry.name.endswith(".py"))
        for name, stat in stats:
            digest.update(f"{name}\0{stat.st_size}\0{stat.st_mtime_ns}\0".encode())
    return digest.hexdigest()[:16]


def read_cached(file: Path) -> Any:
    """A cache entry, or None when it is absent, stale or broken (the caller recomputes it)."""
    try:
        return pickle.loads(file.read_bytes())
    except Exception:
        return None


_written = itertools.count()


def write_cached(file: Path, value: Any) -> None:
    """Write a cache entry atomically (readers never see half a file); a cache that cannot be written is no error.

    A corpus run writes two entries a case, so this is a few system calls: a temporary file
    named for this process (created exclusively), renamed over the entry.
    """
    write_bytes(file, pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL))


def write_bytes(file: Path, data: bytes) -> None:
    """Write a cache file atomically (see ``write_cached``); one that cannot be written is no error."""
    for _ in range(3):  # a missing folder is made once; a name taken (another process, same pid) is passed over
        tmp = f"{file}.{os.getpid()}-{next(_written)}.tmp"
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileNotFoundError:
            try:
                file.parent.mkdir(parents=True, exist_ok=True)
            except OSError:
                return
            continue
        except OSError:
            continue
        try:
            with os.fdopen(fd, "wb") as out:
                out.write(data)
            os.replace(tmp, file)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return


class KeptDict:
    """A dict kept in a per-user cache file from one run to the next: read whole when first asked, and what a run
    added merged into the file on ``save`` (other processes may have added theirs meanwhile). Thread-safe."""

    def __init__(self, file: Path | None) -> None:
        self.file = file
        self._known: dict | None = None  # read when first asked for
        self._added = 0
        self._lock = threading.Lock()

    def _loaded(self) -> dict:
        if self._known is None:
            with self._lock:
                if self._known is None:
                    found = read_cached(self.file) if self.file else None
                    self._known = found if isinstance(found, dict) else {}
        return self._known

    def _add(self, key: Any, value: Any) -> None:
        with self._lock:  # another thread's save may be copying the dict
            self._loaded()[key] = value
            self._added += 1

    def save(self) -> None:
        """Add what was added since the last save to the file (merged with what other processes added)."""
        if not self._added or self.file is None or self._known is None:
            return
        with self._lock:  # one save at a time: an older copy written last would drop what a newer one added
            self._added = 0
            ours = dict(self._known)
            on_disk = read_cached(self.file)
            write_cached(self.file, {**on_disk, **ours} if isinstance(on_disk, dict) else ours)
