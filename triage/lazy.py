"""Regexes compiled on first use: a parser's patterns cost nothing in a run whose input has none of its lines.

Importing every parser used to compile some 250 regexes, a fifth of a warm single run, although
a typical log reaches a handful of parsers. ``lazy(pattern, flags)`` stands for ``re.compile``
at module level: ``pattern`` and ``flags`` are there at once (the line prefilter reads them),
the compiled regex is made on the first search and its methods then become the object's own
attributes, so later calls cost what a compiled pattern's do. Two threads racing to the first
search both compile the same regex; either result serves.

What a first use compiles is kept from one run to the next (``compile_re``): ``re`` parses a
pattern and writes its code in Python, and that code is the same in every run. So is the code
``dataclasses`` writes for a record's methods (``dataclass``).
"""

from __future__ import annotations

import _imp
import atexit
import builtins
import dataclasses
import functools
import importlib.machinery
import importlib.util
import marshal
import os
import re
import sys
import threading
from pathlib import Path
from types import ModuleType
from typing import Any, TypeVar, dataclass_transform

from triage.resources import KeptDict, cache_dir

_T = TypeVar("_T")
_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "groupindex", "groups")


class LazyPattern:
    """A ``re.Pattern`` that is compiled when first used."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:  # only for what the instance does not have yet
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = self._compile()
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def _compile(self) -> Any:
        return compile_re(self.pattern, self.flags)

    def __reduce__(self) -> tuple:
        """Pickled as its pattern and flags (a kept table holds some): compiled again when first used."""
        return type(self), (self.pattern, self.flags)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self.flags})"


class LazyRegex(LazyPattern):
    """A pattern of the ``regex`` module, compiled when first used (``compile_regex``)."""

    def _compile(self) -> Any:
        return compile_regex(self.pattern, self.flags)

    def __repr__(self) -> str:
        return f"lazy_regex({self.pattern!r}, {self.flags})"


def lazy(pattern: str, flags: int = 0) -> Any:
    """``re.compile(pattern, flags)``, compiled when first used (typed Any: it answers as a ``re.Pattern``)."""
    return LazyPattern(pattern, flags)


def lazy_regex(pattern: str, flags: int = 0) -> Any:
    """``regex.compile(pattern, flags)``, compiled when first used and kept between runs (typed Any: it answers
    as a ``regex.Pattern``)."""
    return LazyRegex(pattern, flags)


class CompiledRe(KeptDict):
    """``re`` patterns with their compiled code kept in a per-user cache file between runs.

    ``re.compile`` parses a pattern and writes its code in Python (most of a warm run's parsing went
    there) and then hands the code to ``_sre.compile``; a pickled ``re.Pattern`` keeps only its text and
    is compiled again when loaded. So this keeps the code itself, per Python build (the code is
    CPython's own, the file is named for the exact version and ``_sre.MAGIC``), and hands it to
    ``_sre.compile`` directly. The first pattern a process takes from the file is compiled the usual
    way too and compared (a ``re.Pattern`` equals another of the same flags and code): a Python whose
    compiler differs disables the file for the process.
    """

    def __init__(self, file: Path | None) -> None:
        super().__init__(file)
        self._trusted: bool | None = None  # unknown until the first pattern read back was checked

    def compile(self, pattern: str, flags: int = 0) -> re.Pattern[str]:
        """``re.compile(pattern, flags)``, from the kept code when there is some."""
        import _sre
        from re import _compiler, _parser

        flags = int(flags)
        known = self._loaded()
        kept = known.get((pattern, flags))
        if kept is not None and self._trusted is not False:
            try:
                made = _sre.compile(pattern, *kept)
            except Exception:  # noqa: BLE001 - a damaged entry: compile as re does
                made = None
            if self._trusted is None and made is not None:
                self._trusted = made == re.compile(pattern, flags)
            if made is not None and self._trusted:
                return made
        if flags & re.DEBUG or kept is not None:
            return re.compile(pattern, flags)
        parsed = _parser.parse(pattern, flags)  # what re._compiler.compile does, keeping the code
        code = list(map(int, _compiler._code(parsed, flags)))  # re's opcodes are named ints, plain ones pickle
        groupindex = parsed.state.groupdict
        indexgroup = [None] * parsed.state.groups
        for name, number in groupindex.items():
            indexgroup[number] = name
        kept = (flags | parsed.state.flags, code, parsed.state.groups - 1, groupindex, tuple(indexgroup))
        made = _sre.compile(pattern, *kept)
        self._add((pattern, flags), kept)
        return made

    def compile_regex(self, pattern: str, flags: int = 0) -> Any:
        """``regex.compile(pattern, flags)``, kept in the same file: ``regex`` parses a pattern in Python (up to a
        millisecond), and its compiled code loads back without being parsed again (``regex_from``), without
        importing the ``regex`` package. Keyed by the installed ``regex`` build as well, whose code it is."""
        key = ("regex", regex_build(), pattern, int(flags))
        found = regex_from(self._loaded().get(key), pattern)
        if found is None:
            import regex

            found = regex.compile(pattern, flags)
            self._add(key, regex_data(found))
        return found


@functools.cache
def _memo(file: Path | None) -> CompiledRe:
    memo = CompiledRe(file)
    if file is not None:  # what a run compiled after its last save (a report's patterns, after matching)
        atexit.register(memo.save)
    return memo


def compiled_re() -> CompiledRe | None:
    """The memo of compiled ``re`` patterns for the per-user cache in use; None off CPython (no ``_sre`` to feed)."""
    if sys.implementation.name != "cpython":
        return None
    # Asked at every first use of a lazy pattern (some 160 times a run): the folder is looked up once for each
    # setting that names it, not with a stat each time (a folder removed meanwhile is made again on saving).
    return _memo_in(os.environ.get("TRIAGE_CACHE", ""), os.environ.get("XDG_CACHE_HOME", ""), os.environ.get("HOME", ""))


@functools.lru_cache(maxsize=8)
def _memo_in(*setting: str) -> CompiledRe:
    """The memo for the cache folder that these environment values (``setting``) name."""
    import _sre

    folder = cache_dir("regex")
    # "-2": regex patterns kept as their code (regex_data), not as pickled patterns that import regex to load
    return _memo(folder / f"re-{sys.version.split()[0]}-{_sre.MAGIC}-2.pickle" if folder else None)


def compile_regex(pattern: str, flags: int = 0) -> Any:
    """``regex.compile(pattern, flags)``, kept between runs where there is a cache."""
    memo = compiled_re()
    if memo is not None:
        try:
            return memo.compile_regex(pattern, flags)
        except Exception:  # noqa: BLE001 - a bad pattern or a damaged cache file: regex itself decides
            pass
    import regex

    return regex.compile(pattern, flags)  # raises as regex does


@functools.cache
def _engine_spec() -> importlib.machinery.ModuleSpec | None:
    """Where ``regex``'s compiled engine (``regex._regex``) is installed, found without running the ``regex`` package
    (a top-level package's spec is found, not run); None without one."""
    try:
        spec = importlib.util.find_spec("regex")
        return importlib.machinery.PathFinder.find_spec("regex._regex", list(spec.submodule_search_locations or ())) \
            if spec else None
    except (ImportError, ValueError, OSError, AttributeError):
        return None


@functools.cache
def regex_build() -> str:
    """Which ``regex`` compiled a kept pattern (its engine's installed file, found without importing the package,
    which costs a tenth of a warm single triage): a pattern's code is that engine's own, and code kept by another
    build is not read back."""
    engine = _engine_spec()
    try:
        stat = Path(engine.origin).stat() if engine and engine.origin else None
    except OSError:
        return "none"
    return f"{engine.origin}:{stat.st_mtime_ns}:{stat.st_size}" if stat else "none"


def regex_engine() -> ModuleType:
    """``regex``'s compiled engine (``regex._regex``), loaded without running the ``regex`` package: a compiled
    pattern is made from its code by the engine alone, and the package's pattern parser (most of its import) is
    needed only to compile a new pattern. Importing ``regex`` later finds this module and uses it."""
    found = sys.modules.get("regex._regex")
    if found is not None:
        return found
    _imp.acquire_lock()  # the import system's own lock: two threads load the engine once
    try:
        found = sys.modules.get("regex._regex")
        if found is None:
            engine = _engine_spec()
            if engine is None or not isinstance(engine.loader, importlib.machinery.ExtensionFileLoader):
                import regex._regex as found  # not an extension file: the package's own import finds it
            else:
                found = importlib.util.module_from_spec(engine)
                engine.loader.exec_module(found)
                sys.modules["regex._regex"] = found
    finally:
        _imp.release_lock()
    return found


def regex_data(pattern: Any) -> tuple:
    """What a compiled ``regex`` pattern is made from (what it pickles as): its text, flags and compiled code."""
    return tuple(pattern._pickled_data)


def regex_from(data: Any, pattern: str) -> Any:
    """The compiled ``regex`` pattern ``regex_data`` gave for ``pattern`` (None when ``data`` is not that, as a damaged
    or foreign cache entry, or the engine refuses it: compiled again)."""
    if not (isinstance(data, tuple) and data[:1] == (pattern,)):
        return None
    try:
        return regex_engine().compile(*data)
    except Exception:  # noqa: BLE001 - data of another engine or a damaged entry
        return None


def compile_re(pattern: str, flags: int = 0) -> re.Pattern[str]:
    """``re.compile(pattern, flags)``, with the code kept between runs where that is possible."""
    memo = compiled_re()
    if memo is None:
        return re.compile(pattern, flags)
    try:
        return memo.compile(pattern, flags)
    except Exception:  # noqa: BLE001 - a bad pattern, or a Python whose re internals differ: re itself decides
        return re.compile(pattern, flags)  # raises as re does


class CompiledCode(KeptDict):
    """The code ``dataclasses`` compiles for records' methods (``__init__``, ``__repr__``, ``__eq__``...), kept per
    Python build: parsing and compiling that source was a tenth of a warm single triage, and for a given class and
    Python it is the same text every run. Entries are the source text -> its ``marshal`` data."""

    def exec(self, source: Any, globals: dict | None = None, locals: dict | None = None) -> None:  # noqa: A002
        """``exec`` as ``dataclasses`` calls it, compiling a source text only when it is not kept."""
        if not isinstance(source, str):
            builtins.exec(source, globals, locals)  # noqa: S102 - what dataclasses passes, run as it would
            return
        kept = self._loaded().get(source)
        code = marshal.loads(kept) if isinstance(kept, bytes) else None
        if code is None:
            code = compile(source, "<string>", "exec")
            self._add(source, marshal.dumps(code))
        builtins.exec(code, globals, locals)  # noqa: S102 - the code dataclasses wrote


@functools.cache
def _code_memo(file: Path | None) -> CompiledCode:
    memo = CompiledCode(file)
    if file is not None:
        atexit.register(memo.save)
    return memo


@functools.lru_cache(maxsize=8)
def _code_memo_in(*setting: str) -> CompiledCode:
    """The kept code for the cache folder that these environment values (``setting``) name: looked up once for each
    setting, not with a stat for each of the some forty records a run defines (as ``_memo_in``)."""
    folder = cache_dir("code") if sys.implementation.name == "cpython" else None
    return _code_memo(folder / f"dataclasses-{sys.implementation.cache_tag}-{sys.version.split()[0]}.pickle"
                      if folder else None)


@functools.cache
def _decorating() -> threading.RLock:
    """Held while ``dataclass`` lends ``dataclasses`` its exec: one class at a time, in any thread."""
    return threading.RLock()


@dataclass_transform(field_specifiers=(dataclasses.field, dataclasses.Field))
def dataclass(cls: type[_T] | None = None, /, **options: Any) -> Any:
    """``dataclasses.dataclass``, with the code it writes for the methods compiled once and kept between runs.

    ``dataclasses`` looks ``exec`` up in its own module before the builtins; for the time one class is made, that
    name is the kept code's (``CompiledCode.exec``), which runs the same code a fresh compile would give.
    """
    def make(klass: type[_T]) -> type[_T]:
        memo = _code_memo_in(os.environ.get("TRIAGE_CACHE", ""), os.environ.get("XDG_CACHE_HOME", ""),
                             os.environ.get("HOME", ""))
        with _decorating():
            dataclasses.exec = memo.exec  # type: ignore[attr-defined]
            try:
                return dataclasses.dataclass(klass, **options)
            finally:
                del dataclasses.exec  # type: ignore[attr-defined]

    return make if cls is None else make(cls)
