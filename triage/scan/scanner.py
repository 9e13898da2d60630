"""Which lines of a text each of many regexes may match, found in one pass: the prefilter of parsers and signatures.

Most lines of a real log concern no parser and no signature, so nothing should look at them
one by one in Python. A ``LineScanner`` is built once for a fixed list of patterns; ``scan``
gives, for each pattern, the indexes of the lines it may match (every line it does match, and
perhaps a few more). The caller then runs the real pattern, captures and all, on those lines.

Two engines give the same answers downstream:

- ``hyperscan`` (the optional ``hyperscan`` package): each pattern is written as a Hyperscan
  expression that matches at least where Python's regex does on ASCII lines and goes on to the
  line's end (expression.py), so that each pattern reports a line once, at its newline (a pattern
  written as two expressions may report it twice: its lines are made unique). One scan of the
  bytes finds every pattern's lines. A line holding other characters, which Hyperscan
  reads with other case rules and classes, is also searched the Python way below.
- ``python``: the literals each pattern cannot match without (literals.py) are searched for,
  the caseless ones in the case-folded text (see ``_Literals``); a pattern without such
  literals is tried on every line itself (a C-level ``map``). A line holding a character that
  case-blind matching pairs with an ASCII letter in a way case folding does not (``İ``, ``ı``,
  ``ſ``, the Kelvin sign) counts for every literal.

A pattern may also be asked for exactly (``exact``): its candidates are then checked with the
pattern itself, on a line's first ``WIDE_CHARS`` characters as every reader reads it, wherever the
scan alone cannot vouch for them.

``TRIAGE_SCANNER=python`` (or ``hyperscan``) chooses the engine where the caller does not.
"""

from __future__ import annotations

import functools
import os
import re
import threading
from bisect import bisect_left
from collections import Counter, defaultdict
from collections.abc import Callable, Mapping, Sequence
from itertools import accumulate, compress, count, repeat
from operator import add, not_
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from triage.digest import sha256
from triage.lazy import compile_re, lazy
from triage.resources import cache_dir, read_cached, source_key, write_cached
from triage.scan.symbols import SYMBOL, is_symbol

if TYPE_CHECKING:
    from triage.scan.literals import Literal

try:  # optional: pip install 'hip-triage[fast]'
    import hyperscan
except ImportError:  # pragma: no cover - depends on the machine
    hyperscan = None

# Characters that re or regex, ignoring case, match to an ASCII letter in ways str.casefold()
# does not show (tests/test_scan.py finds them all by trying every code point).
CASE_EXOTIC = "\u0130\u0131\u017f\u212a"
_EXOTIC = lazy("[" + CASE_EXOTIC + "]")  # compiled when first used: most logs are ASCII
_OUTSIDE_ASCII = lazy(r"[^\x00-\x7f]")
# Example lines are checked behind this too (as logs carry it; a line is then read well into the text): see
# LineScanner._recovered
PROBE_PREFIX = "Dec 06 08:00:00 node01 build.sh[20417]: "


@functools.cache
def build_key() -> str:
    """What a scanner kept on disk depends on besides its patterns: this package's code and Hyperscan's version
    (read once a process: the code does not change under a running tool)."""
    return f"{source_key('scan')}-{getattr(hyperscan, '__version__', hyperscan is not None)}"


def _line_of(text: str | bytes, newline: str | bytes) -> Callable[[int], int]:
    """The index of the line each offset of ``text`` falls in, for offsets given in increasing order."""
    state = [0, 0]  # offset counted up to, newlines before it

    def at(offset: int) -> int:
        state[1] += text.count(newline, state[0], offset)  # type: ignore[arg-type]
        state[0] = offset
        return state[1]

    return at


def _trie_regex(words: Sequence[str]) -> str:
    """A regex matching the longest of ``words`` at a position (greedy, longest branch first)."""
    trie: dict = {}
    for word in words:
        node = trie
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = True

    def emit(node: dict) -> str:
        ends = "" in node
        branches = [re.escape(ch) + emit(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if ends else body

    return emit(trie)


@functools.lru_cache(maxsize=16)
def _trie(words: tuple[str, ...], caseless: bool) -> tuple[re.Pattern[str], Mapping[str, tuple[Literal, ...]]]:
    """The trie-shaped regex of sorted ``words`` and, for each word, the literals it begins with (itself included).
    A pure function of its arguments, kept once a process and read-only: its build is what the comment below weighs,
    and every analysis in a process (a server's, a desk's, a tool's loop over cases) asks for the same one."""
    known = set(words)
    prefixes = {w: tuple((w[:k], caseless) for k in range(1, len(w) + 1) if w[:k] in known) for w in words}
    first = re.escape("".join(sorted({w[0] for w in words})))  # lets re pass over other characters quickly
    return re.compile(f"(?=[{first}])(?=({_trie_regex(words)}))"), MappingProxyType(prefixes)


# Literals past which one trie-shaped regex over the text beats a search per literal: a str.find
# reads about 2-3 GB/s here, the regex about 5 MB/s whatever the number of literals, but building
# it for the anchors' 1,200 literals takes some 70 ms. So the regex is built once the finds have
# cost about that much, in one search or over several (a 190 KB text against 1,200 literals: 83 ms
# of finds, 74 ms to build the regex and 38 ms to run it): a single small triage never builds it, a
# corpus run builds it after a few cases, and once built it serves every later text.
_MOST_FINDS = 64
# Every reader of a line reads its first this many characters (conditions match there, parsers skip longer lines):
# a pattern asked for exactly is checked there, and a long line outside ASCII is searched the Python way there only
WIDE_CHARS = 16_384
# Characters a scanner reads the Python way before it builds its Hyperscan database (when the cache has none): a
# database takes some 3-4 ms a pattern to compile (the anchors' 1.5 s), in which the Python way reads some 64 KB
# (less for a pattern without literals, tried on every line). So a scanner of a few patterns (the parsers' needles
# in each file's head) builds its own after a few cases of a corpus run, a large one after a few MB, at most.
COMPILE_AFTER = 4 << 20
COMPILE_PER_PATTERN = 64 << 10
_SMALL_SEARCH = 200_000_000


class _Literals:
    """The Python way for some of the patterns: their literals looked for in the text.

    A caseless literal is looked for in the case-folded text, a cased one in the text itself.
    Few literals, or a short text: ``str.find`` for each, with nothing to compile. Many over a long
    text: one pass of a trie-shaped regex of them all, compiled when first needed.
    """

    def __init__(self, literal_sets: dict[int, set[Literal]]) -> None:
        self._owners: dict[Literal, list[int]] = {}
        for index, literals in sorted(literal_sets.items()):
            for literal in literals:
                self._owners.setdefault(literal, []).append(index)
        self._all = sorted(literal_sets)
        self._cased = {caseless: [literal for literal in self._owners if literal[1] == caseless]
                       for caseless in (True, False)}  # the caseless literals, the cased ones
        self._tries: dict[bool, tuple[re.Pattern[str], Mapping[str, tuple[Literal, ...]]]] = {}
        self._spent = {True: 0, False: 0}  # characters x literals searched by finds so far, caseless or not

    def find(self, text: str, which: Sequence[int], found: dict[int, set[int]]) -> None:
        """Add to ``found`` (pattern -> lines) the lines ``which`` (``text`` is them joined) holding a literal."""
        if not self._owners:
            return
        folded = _derived(text).folded() if self._cased[True] else text
        for haystack, caseless in ((folded, True), (text, False)):  # casefold() keeps every newline
            literals = self._cased[caseless]
            if not literals:
                continue
            cost = len(haystack) * len(literals)
            self._spent[caseless] += cost
            if caseless not in self._tries and (len(literals) <= _MOST_FINDS or self._spent[caseless] <= _SMALL_SEARCH):
                hits = self._found(haystack, literals, len(which) // 8, which, found)
            else:
                hits = self._matched(haystack, caseless, literals)
            hits.sort()
            line_of = _line_of(haystack, "\n")
            for at, literal in hits:
                line = which[line_of(at)]
                for index in self._owners[literal]:
                    found.setdefault(index, set()).add(line)
        for exotic in _derived(text).exotic():
            for index in self._all:
                found.setdefault(index, set()).add(which[exotic])

    def _found(self, haystack: str, literals: list[Literal], many: int, which: Sequence[int],
               found: dict[int, set[int]]) -> list[tuple[int, Literal]]:
        """Where each literal first stands in each line, by ``str.find``; a literal in more than ``many``
        lines (a runtime log's ``:3:``) is looked for in the lines after that in one C-level pass."""
        hits = []
        split: list[str] | None = None
        for literal in literals:
            at, seen = haystack.find(literal[0]), 0
            while at >= 0:  # once a line: go on from the next
                seen += 1
                if seen > many:
                    split = split if split is not None else haystack.split("\n")
                    start = haystack.count("\n", 0, at)
                    holding = list(compress(which[start:], map(str.__contains__, split[start:], repeat(literal[0]))))
                    for index in self._owners[literal]:
                        found.setdefault(index, set()).update(holding)
                    break
                hits.append((at, literal))
                end = haystack.find("\n", at)
                at = haystack.find(literal[0], end + 1) if end >= 0 else -1
        return hits

    def _matched(self, haystack: str, caseless: bool, literals: list[Literal]) -> list[tuple[int, Literal]]:
        """Where each literal stands, by one trie-shaped regex: the longest at a position stands for every
        literal it begins with."""
        if caseless not in self._tries:
            self._tries[caseless] = _trie(tuple(sorted(text for text, _ in literals)), caseless)
        trie, prefixes = self._tries[caseless]
        return [(m.start(), literal) for m in trie.finditer(haystack) for literal in prefixes[m.group(1)]]


class _Compiled:
    """A scanner's Hyperscan side: the serialized database and which patterns it reads (picklable). ``copies``:
    each pattern that repeats an earlier one of the scanner (signatures share their AMD-evidence regexes) -> that
    earlier one, which alone is in the database: a repeat is a second report of every line, from C into Python.
    ``apart``: the patterns read by two expressions (see expression.py), whose lines may come twice and out of order.
    ``symbolic``: the patterns whose expressions read a line's symbols written as one ASCII character (symbols.py)."""

    def __init__(self, data: bytes | None, by_hyperscan: list[int], exact_on_ascii: list[int],
                 copies: dict[int, int] | None = None, apart: list[int] | None = None,
                 symbolic: list[int] | None = None) -> None:
        self.data, self.by_hyperscan, self.exact_on_ascii = data, by_hyperscan, exact_on_ascii
        self.copies, self.apart, self.symbolic = copies or {}, apart or [], symbolic or []


class LineScanner:
    """Candidate lines for each of a fixed list of Python regexes, compiled with ``flags`` by ``module`` (re or regex).

    Nothing is built until the first scan, and what is built (the patterns' literals, the
    Hyperscan database) is kept in the per-user cache under a digest of the patterns: a scanner
    that is never asked costs nothing, and one built before is read back, not built again. A
    Hyperscan database of a few hundred patterns takes seconds to compile, more than the Python
    way takes over a few megabytes; so until a scanner has read about what its compile would cost (a few
    MB for hundreds of patterns, some 64 KB a pattern for a few), or finds its database in the cache, it
    scans the Python way, which gives the same lines.
    """

    def __init__(self, patterns: Sequence[str], flags: int = 0, engine: str | None = None, module: str = "regex",
                 exact: Sequence[int] = ()) -> None:
        """``exact``: the patterns whose lines must be exactly the lines they match (checked in Python where
        the scan alone cannot tell); the others' candidates may hold a few more."""
        self.patterns = list(patterns)
        self.flags = flags
        self.module = module
        self.exact = sorted(exact)
        self.engine = engine or os.environ.get("TRIAGE_SCANNER") or ("hyperscan" if hyperscan is not None else "python")
        if self.engine not in ("hyperscan", "python"):
            raise ValueError(f"unknown scanner engine {self.engine!r} (hyperscan or python)")
        if self.engine == "hyperscan" and hyperscan is None:
            raise ValueError("the hyperscan engine needs the hyperscan package: pip install 'hip-triage[fast]'")
        self._literal_sets: list[set[Literal] | None] | None = None
        self._hs_built: _Compiled | None = None
        self.examples_key = ""  # names the examples a checked build was checked on (see check_with)
        self._build()

    # -- building ---------------------------------------------------------------------------------

    def prepare(self) -> bool:
        """Build now, and keep in the per-user cache, what scans need: the patterns' literals and, with the
        Hyperscan engine, its database (which a scan otherwise builds only after a few megabytes). True when
        Hyperscan reads the patterns."""
        self._literals()
        return self._compiled_hyperscan(build=True) is not None

    @property
    def by_hyperscan(self) -> list[int]:
        """The patterns the Hyperscan pass serves (its database built now if need be), a repeated pattern's copies with
        the one it repeats; the rest go the Python way on every line."""
        built = self._compiled_hyperscan(build=True)
        return built.by_hyperscan if built else []

    @property
    def exact_on_ascii(self) -> list[int]:
        """Of ``by_hyperscan``, the patterns whose candidate ASCII lines all match."""
        built = self._compiled_hyperscan(build=True)
        return built.exact_on_ascii if built else []

    def hyperscan_ready(self, reading: int = 0) -> bool:
        """Whether a scan of ``reading`` more characters would be one Hyperscan pass: its database in memory or in
        the cache, or built now once the scanner has been asked about enough characters, as scans build it."""
        self._read += reading
        return self._compiled_hyperscan(build=self._worth_building()) is not None and self._hs is not None

    def _worth_building(self) -> bool:
        """Whether the Python way has read about what compiling this scanner's Hyperscan database would cost."""
        return self._read >= min(COMPILE_AFTER, COMPILE_PER_PATTERN * len(self.patterns))

    def _key(self) -> str:
        """The digest naming what this scanner keeps in the cache (made once: the patterns do not change)."""
        if self._digest is None:
            self._digest = sha256(
                repr((self.patterns, self.flags, self.module, self.exact, build_key())).encode()).hexdigest()[:32]
        return self._digest

    def _cached(self, kind: str, make: Callable[[], Any], accept: type) -> Any:
        """``make()``, or what it made before for these patterns, from the per-user cache."""
        folder = cache_dir("scanners")
        file = folder / f"{self._key()}-{kind}.pickle" if folder else None
        found = read_cached(file) if file else None
        if isinstance(found, accept):
            return found
        made = make()
        if file:
            write_cached(file, made)
        return made

    def keep_literals(self, sets: Sequence[set[Literal] | None]) -> None:
        """Take each pattern's literals from the owner, which works them out once for all its scanners and keeps
        them in a cache entry of its own (the signature database's): a run then reads one file, not one a
        scanner. ``sets[i]`` must be ``literals_for(patterns[i], flags)``."""
        if len(sets) != len(self.patterns):
            raise ValueError(f"{len(sets)} literal sets for {len(self.patterns)} patterns")
        self._literal_sets = list(sets)

    def _literals(self) -> list[set[Literal] | None]:
        """Each pattern's literals (the Python way's keys), computed when first needed."""
        if self._literal_sets is None:
            with self._lock:
                if self._literal_sets is None:
                    self._literal_sets = self._cached("literals", self._work_literals_out, list)
        return self._literal_sets

    def _work_literals_out(self) -> list[set[Literal] | None]:
        """Each pattern's literals, worked out (triage.scan.literals is imported only then: it brings hashlib, and a
        warm run reads the literals kept)."""
        from triage.scan.literals import literals_for

        return [literals_for(p, self.flags) for p in self.patterns]

    def _compiled_hyperscan(self, build: bool) -> _Compiled | None:
        """The Hyperscan side, loaded for scanning: from memory, from the cache, or (``build``) compiled now;
        None with the Python engine, or when it is not worth building yet."""
        if self.engine != "hyperscan":
            return None
        if self._hs_built is None and (build or not self._hs_missed):
            with self._lock:
                if self._hs_built is None:
                    folder = cache_dir("scanners")
                    # one checked on examples is kept apart from one that was not (a parser's scanner has none)
                    kind = ("hyperscan" if self._examples is None else
                            f"hyperscan-checked-{self.examples_key}" if self.examples_key else "hyperscan-checked")
                    file = folder / f"{self._key()}-{kind}.pickle" if folder else None
                    found = read_cached(file) if file else None
                    if not isinstance(found, _Compiled) and build:
                        found = self._compile_hyperscan()
                        if file:
                            write_cached(file, found)
                    if isinstance(found, _Compiled):
                        self._load(found)
                        self._hs_built = found  # last: a scan in another thread that sees it sees it loaded
                    else:
                        self._hs_missed = True
        return self._hs_built

    def _compile_hyperscan(self) -> _Compiled:
        chosen, flags, exact_on_ascii, symbolic, copies = self._written()
        database, chosen, _flags = self._database(chosen, flags, copies)
        if database is None:
            return _Compiled(None, [], [])
        read = {i for i, _ in chosen}
        copies = {copy: original for copy, original in copies.items() if original in read}
        exact = {i for i in exact_on_ascii if i in read}
        symbols = {i for i in symbolic if i in read}
        twice = {index for index, count in Counter(index for index, _ in chosen).items() if count > 1}
        return _Compiled(hyperscan.dumpb(database), sorted(read.union(copies)),
                         sorted(exact.union(c for c, o in copies.items() if o in exact)), copies, sorted(twice),
                         sorted(symbols.union(c for c, o in copies.items() if o in symbols)))

    def expressions(self) -> tuple[list[tuple[int, bytes]], list[int]]:
        """The (pattern, Hyperscan expression) pairs this scanner's database is compiled from, and their flags, as a
        build makes them (for bench/bench_patterns.py, which times them apart)."""
        chosen, flags, _, _, copies = self._written()
        _, chosen, flags = self._database(chosen, flags, copies)
        return chosen, flags

    def _written(self) -> tuple[list[tuple[int, bytes]], list[int], list[int], list[int], dict[int, int]]:
        """(pattern, expression) for each pattern Hyperscan can read (a repeated one once; a few have two), their
        flags (``_SOM`` for those that start a line with a run), the patterns whose expressions are exact on ASCII
        lines, those whose expressions read symbols written as one character, and each repeated pattern's first."""
        from triage.scan.expression import expression  # only to build a database: a run that reads one needs none

        chosen: list[tuple[int, bytes]] = []
        flags: list[int] = []
        exact_on_ascii: list[int] = []
        symbolic: list[int] = []
        first: dict[str, int] = {}
        copies: dict[int, int] = {}
        for index, pattern in enumerate(self.patterns):
            if first.setdefault(pattern, index) != index:
                copies[index] = first[pattern]
                continue
            written = expression(pattern, self.flags, self.module)
            if written is not None:
                chosen.extend((index, part.body) for part in written.parts)
                flags.extend(_SOM if part.line_run else _PLAIN for part in written.parts)
                if written.exact:
                    exact_on_ascii.append(index)
                if written.symbolic:
                    symbolic.append(index)
        return chosen, flags, exact_on_ascii, symbolic, copies

    def _database(self, chosen: list[tuple[int, bytes]], flags: list[int], copies: dict[int, int]
                  ) -> tuple[Any, list[tuple[int, bytes]], list[int]]:
        """The database of the expressions Hyperscan accepts (and that find their examples), with them and their
        flags."""
        database = _hyperscan_database(chosen, flags)
        # Refused (Hyperscan's error does not say which expression): first the few asked for their start are tried
        # alone (one refused is asked plainly), then, if still refused, every one alone (one refused goes the Python way)
        for fallback in (_PLAIN, 0):
            if database is not None:
                break
            flags = [f if (fallback and f != _SOM) or _hyperscan_database([item], [f]) is not None else fallback
                     for item, f in zip(chosen, flags)]
            refused = {index for (index, _), f in zip(chosen, flags) if not f}  # all of a pattern's expressions go
            kept = [at for at, (index, _) in enumerate(chosen) if index not in refused]
            chosen, flags = [chosen[at] for at in kept], [flags[at] for at in kept]
            database = _hyperscan_database(chosen, flags)
        if database is not None and self._examples is not None:
            database, chosen, flags = self._recovered(database, chosen, flags, copies)
        return database, chosen, flags

    def _recovered(self, database: Any, chosen: list[tuple[int, bytes]], flags: list[int], copies: dict[int, int]
                   ) -> tuple[Any, list[tuple[int, bytes]], list[int]]:
        """The database checked on the lines each pattern must find (``check_with``; a repeated pattern's copies
        bring their own): Hyperscan 5.4 loses some expressions' matches that begin some 20 bytes or more into the
        text it scans, in ways no rule of the expression's text predicts, and one expression's loss can depend on
        the others beside it (see ``_SOM``). A pattern that loses a line is asked for its start of match, which
        finds them; one that still loses is left to the Python way; the database is checked again after each
        rebuild. Returns the database, its expressions and their flags."""
        probes = self._probes([index for index, _ in chosen], copies)
        asked: set[int] = set()  # patterns already asked for their start of match
        while database is not None:
            read = {index for index, _ in chosen}
            lost = _lost(database, [probe for probe in probes if probe[0] in read])
            if not lost:
                break
            retry = lost - asked
            asked |= lost
            if retry:
                trial = [_SOM if index in retry else f for (index, _), f in zip(chosen, flags)]
                again = _hyperscan_database(chosen, trial)
                if again is not None:
                    database, flags = again, trial
                    continue
            kept = [at for at, (index, _) in enumerate(chosen) if index not in lost]
            chosen, flags = [chosen[at] for at in kept], [flags[at] for at in kept]
            database = _hyperscan_database(chosen, flags)
        return database, chosen, flags

    def _probes(self, indexes: Sequence[int], copies: dict[int, int]) -> list[tuple[int, str]]:
        """(pattern, line) for each ASCII example line that the pattern, as Python compiles it, matches: the
        examples of the pattern and of its copies, each alone and behind a journal's prefix (so that every line is
        read some way into the text, where the loss shows)."""
        sources: dict[int, list[int]] = {index: [index] for index in indexes}
        for copy, original in copies.items():
            if original in sources:
                sources[original].append(copy)
        probes = []
        for index in indexes:
            compiled = self._compiled(index)
            if compiled is None:
                continue
            lines = dict.fromkeys(line for owner in sources[index] for line in self._examples(owner))  # type: ignore[misc]
            for line in lines:
                for text in (line, PROBE_PREFIX + line):
                    if text.isascii() and compiled.search(text):
                        probes.append((index, text))
        return probes

    def check_with(self, examples: Callable[[int], Sequence[str]]) -> None:
        """Have a Hyperscan build check itself on ``examples(i)``, lines pattern ``i`` must find (its signature's
        test inputs), before it is kept: a signature a user adds loses none of the lines its examples show. The
        owner names the examples in ``examples_key`` (a build checked on other examples is not reused)."""
        self._examples = examples

    def _load(self, built: _Compiled) -> None:
        """Make the loaded Hyperscan side the one scans use (called once, under the lock)."""
        read = set(built.by_hyperscan)
        self._everywhere = [i for i in range(len(self.patterns)) if i not in read]
        self._ascii_exact = set(built.exact_on_ascii)
        self._hs = hyperscan.loadb(built.data, hyperscan.HS_MODE_BLOCK) if built.data else None
        self._copies = built.copies
        self._apart = built.apart
        self._symbolic = frozenset(built.symbolic)

    def _build(self) -> None:
        """The state that does not pickle, made empty: everything is built on first use."""
        self._compile: Callable[[str], Any] | None = None
        self._examples: Callable[[int], Sequence[str]] | None = None
        self._digest: str | None = None
        self._hs = None
        self._hs_missed = False  # the cache had no database when last looked for: do not look on every scan
        self._read = 0  # characters scanned the Python way while Hyperscan was not worth building
        self._lock = threading.Lock()
        self._local = threading.local()  # Hyperscan's scratch space is one thread's at a time: one a thread
        self._everywhere = list(range(len(self.patterns)))
        self._ways: dict[tuple[int, ...], tuple[_Literals, dict[int, Any]]] = {}
        self._checks: dict[int, Any] = {}  # an exact pattern compiled when it first has candidates to check
        self._exact = frozenset(self.exact)
        self._ascii_exact: set[int] = set()
        self._copies: dict[int, int] = {}
        self._apart: list[int] = []
        self._symbolic: frozenset[int] = frozenset()

    def compile_with(self, compile: Callable[[str], Any]) -> None:
        """Have ``compile`` (the owner's memo of compiled patterns, which compiles them as the owner does) give
        the patterns this scanner tries itself, rather than compiling them anew in each process."""
        self._compile = compile

    def _compiled(self, index: int) -> Any:
        """The pattern compiled as its owner compiles it; None when it does not compile."""
        try:
            if self._compile is not None:
                return self._compile(self.patterns[index])
            if self.module == "re":
                return compile_re(self.patterns[index], self.flags)
        except (re.error, ValueError, RecursionError, OverflowError):
            return None
        import regex  # the owner's memo, where there is one, makes regex patterns without importing regex

        try:
            return regex.compile(self.patterns[index], self.flags)
        except (regex.error, ValueError, RecursionError, OverflowError):
            return None

    def __getstate__(self) -> dict:
        # What was built goes with it (a pickle made before the first scan is small), and the digest naming its cache
        # entries with the build it was made for: the anchors' patterns' text is some 100 KB to hash on every run.
        state = {k: v for k, v in self.__dict__.items() if k in ("patterns", "flags", "module", "exact", "engine",
                                                                 "_literal_sets", "_hs_built", "examples_key")}
        state["_keyed"] = (build_key(), self._key())
        return state

    def __setstate__(self, state: dict) -> None:
        keyed = state.pop("_keyed", None)
        self.__dict__.update(state)
        if self.engine == "hyperscan" and hyperscan is None:  # pickled where Hyperscan was installed, read where it is not
            self.__dict__.update(_hs_built=None, engine="python")
        self._build()
        if isinstance(keyed, tuple) and len(keyed) == 2 and keyed[0] == build_key() and state.get("engine") == self.engine:
            self._digest = keyed[1]
        if self.__dict__.get("_hs_built") is not None:
            self._load(self._hs_built)

    def _way(self, patterns: tuple[int, ...]) -> tuple[_Literals, dict[int, Any]]:
        """The Python way for these patterns: their literals, and the patterns without any, compiled."""
        if patterns not in self._ways:
            sets = self._literals()
            # A broken pattern (None) has every line for a candidate: its owner reports it when it compiles it.
            exact = {index: self._compiled(index) for index in patterns if sets[index] is None}
            literals = _Literals({i: sets[i] for i in patterns if sets[i] is not None})
            self._ways[patterns] = (literals, exact)
        return self._ways[patterns]

    # -- scanning ---------------------------------------------------------------------------------

    def scan(self, lines: Sequence[str], text: str | None = None) -> list[Sequence[int]]:
        """For each pattern, the sorted indexes of the lines (``text`` is them joined by newlines) it may match
        (an empty tuple where none: most of a scanner's patterns match no line)."""
        if text is None:
            text = "\n".join(lines)
        out, ascii_exact = self._candidates(lines, text)
        ascii_text = text.isascii()
        for index in [index for index, found in out.items() if found and index in self._exact]:
            if ascii_text and index in ascii_exact:
                continue
            if index not in self._checks:
                self._checks[index] = self._compiled(index)
            if (pattern := self._checks[index]) is None:
                continue
            if index not in ascii_exact:
                out[index] = [i for i in out[index] if pattern.search(lines[i][:WIDE_CHARS])]
            else:  # Hyperscan's answer stands for the ASCII lines
                out[index] = [i for i in out[index] if lines[i].isascii() or pattern.search(lines[i][:WIDE_CHARS])]
        every: list[Sequence[int]] = [()] * len(self.patterns)
        for index, found in out.items():
            if found:
                every[index] = found
        return every

    def _candidates(self, lines: Sequence[str], text: str) -> tuple[defaultdict[int, list[int]], set[int]]:
        """The patterns' candidate lines (pattern -> lines), and the patterns whose ASCII candidates are exact."""
        out: defaultdict[int, list[int]] = defaultdict(list)
        if not lines:
            return out, set()
        self._read += len(text)
        built = self._compiled_hyperscan(build=self._worth_building())
        if built is None or self._hs is None:
            self._python(lines, range(len(lines)), text, tuple(self._everywhere), out)
            return out, set()
        self._hyperscan(lines, text, out)
        if self._everywhere:
            self._python(lines, range(len(lines)), text, tuple(self._everywhere), out)
        if not text.isascii():
            derived = _derived(text)
            wide = derived.wide(lines)
            view = [line[:WIDE_CHARS] for line in lines] if any(len(lines[i]) > WIDE_CHARS for i in wide) else lines
            extra: defaultdict[int, list[int]] = defaultdict(list)
            symbolic = derived.symbolic(view, wide) if self._symbolic else []
            # Hyperscan reads these with their symbols written as one character; Python the patterns it cannot
            if symbolic:
                self._symbols(view, symbolic, extra)
                self._python(view, symbolic, "\n".join(view[i] for i in symbolic),
                             tuple(i for i in built.by_hyperscan if i not in self._symbolic), extra)
                kept = set(symbolic)
                wide = [i for i in wide if i not in kept]
            self._python(view, wide, "\n".join(view[i] for i in wide), tuple(built.by_hyperscan), extra)
            for index, more in extra.items():
                if more:
                    out[index] = sorted(set(out[index]).union(more))
        return out, self._ascii_exact

    def _scratch(self) -> Any:
        """This thread's scratch space for the database (made on the thread's first scan)."""
        scratch = getattr(self._local, "scratch", None)
        if scratch is None:
            scratch = self._local.scratch = hyperscan.Scratch(self._hs)
        return scratch

    def _ends(self, data: bytes) -> defaultdict[int, list[int]]:
        """One Hyperscan pass over ``data``: pattern -> where each of its matches ends, just after its line's newline
        (few of a scanner's patterns match)."""
        ends: defaultdict[int, list[int]] = defaultdict(list)
        self._hs.scan(data, match_event_handler=lambda pattern, start, end, flags, context: ends[pattern].append(end),
                      scratch=self._scratch())
        return ends

    def _hyperscan(self, lines: Sequence[str], text: str, out: defaultdict[int, list[int]]) -> None:
        derived = _derived(text)
        data = derived.data()
        ends = self._ends(data)
        found = sum(map(len, ends.values()))
        if not found:
            return
        if found * 8 > len(lines) or derived.has_ends():  # many, or made before: a table of line ends answers
            line_at = derived.ends(lines)
            for pattern, at in ends.items():
                out[pattern].extend(map(line_at.__getitem__, at))
        else:
            line_of = _line_of(data, b"\n")  # few: count the newlines before each, in one pass
            for end, pattern in sorted((end, pattern) for pattern, at in ends.items() for end in at):
                out[pattern].append(line_of(end) - 1)
        for pattern in self._apart:
            if len(out.get(pattern, ())) > 1:
                out[pattern] = sorted(set(out[pattern]))
        for copy, original in self._copies.items():
            if ends.get(original):
                out[copy].extend(out[original])

    def _symbols(self, lines: Sequence[str], which: list[int], out: defaultdict[int, list[int]]) -> None:
        """Hyperscan's lines among ``which`` (lines whose characters outside ASCII are all symbols, symbols.py), each
        symbol written as SYMBOL, for the patterns whose expressions read them so; adds to ``out``."""
        ends = self._ends(_OUTSIDE_ASCII.sub(chr(SYMBOL), "\n".join(lines[i] for i in which) + "\n").encode("ascii"))
        line_at = dict(zip(accumulate(len(lines[i]) + 1 for i in which), which))
        for pattern, at in ends.items():
            if pattern in self._symbolic:
                out[pattern].extend(map(line_at.__getitem__, at))
        for copy, original in self._copies.items():
            if original in self._symbolic and ends.get(original):
                out[copy].extend(map(line_at.__getitem__, ends[original]))

    def _python(self, lines: Sequence[str], which: Sequence[int], text: str, patterns: tuple[int, ...],
                out: defaultdict[int, list[int]]) -> None:
        """The Python way, on the lines ``which`` (``text`` is them joined) for ``patterns``; adds to ``out``."""
        if not which or not patterns:
            return
        literals, exact = self._way(patterns)
        found: dict[int, set[int]] = {}
        literals.find(text, which, found)
        if exact:
            chosen = lines if len(which) == len(lines) else [lines[i] for i in which]
            for index, pattern in exact.items():
                found.setdefault(index, set()).update(compress(which, map(pattern.search, chosen)) if pattern else which)
        for index, at in found.items():
            out[index].extend(sorted(at))


class _Derived:
    """What the scanners of one text share, each made when first asked: a file's text and its head are
    read by several scanners in turn (the parsers', the anchors', a signature's own)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self._data: bytes | None = None
        self._ends: dict[int, int] | None = None
        self._wide: list[int] | None = None
        self._folded: str | None = None
        self._exotic: list[int] | None = None
        self._symbol_lines: list[int] | None = None

    def data(self) -> bytes:
        """The text as Hyperscan reads it, ending with a newline."""
        if self._data is None:
            data = self.text.encode("utf-8", "surrogatepass")
            self._data = data if data.endswith(b"\n") else data + b"\n"
        return self._data

    def has_ends(self) -> bool:
        return self._ends is not None

    def ends(self, lines: Sequence[str]) -> dict[int, int]:
        """The byte offset just past each line's newline -> the line's index, built in C."""
        if self._ends is None:
            lengths = list(map(len, lines))
            if not self.text.isascii():  # the lines outside ASCII only are measured in bytes
                for index in self.wide(lines):
                    lengths[index] = len(lines[index].encode("utf-8", "surrogatepass"))
            self._ends = dict(zip(map(add, accumulate(lengths), count(1)), count()))
        return self._ends

    def wide(self, lines: Sequence[str]) -> list[int]:
        """The lines holding a character outside ASCII (one C-level test of each line)."""
        if self._wide is None:
            self._wide = list(compress(count(), map(not_, map(str.isascii, lines))))
        return self._wide

    def symbolic(self, lines: Sequence[str], wide: list[int]) -> list[int]:
        """Of the lines ``wide`` (those outside ASCII), the ones whose characters outside ASCII are all symbols."""
        if self._symbol_lines is None:
            known: dict[str, bool] = {}
            self._symbol_lines = [i for i in wide if all(known[c] if c in known else known.setdefault(c, is_symbol(c))
                                                         for c in set(_OUTSIDE_ASCII.findall(lines[i])))]
        return self._symbol_lines

    def folded(self) -> str:
        """The text case-folded (every newline kept, so lines are counted alike)."""
        if self._folded is None:
            self._folded = self.text.casefold()
        return self._folded

    def exotic(self) -> list[int]:
        """The lines holding a character of ``CASE_EXOTIC``."""
        if self._exotic is None:
            self._exotic = lines_matching(_EXOTIC, self.text) if not self.text.isascii() else []
        return self._exotic


# Each thread's last few texts scanned (holding a text keeps its id): the scanners of one analysis
# read the same texts in turn; another thread's analysis keeps its own.
_KEPT = threading.local()


def _derived(text: str) -> _Derived:
    kept: dict[int, _Derived] | None = getattr(_KEPT, "texts", None)
    if kept is None:
        kept = _KEPT.texts = {}
    derived = kept.get(id(text))
    if derived is None or derived.text is not text:
        if len(kept) >= 4:
            del kept[next(iter(kept))]
        derived = kept[id(text)] = _Derived(text)
    return derived


def lines_matching(pattern: re.Pattern[str], text: str) -> list[int]:
    """Indexes of the lines of ``text`` holding a match of ``pattern`` (one search per such line)."""
    out: list[int] = []
    line_of = _line_of(text, "\n")
    m = pattern.search(text)
    while m:
        out.append(line_of(m.start()))
        end = text.find("\n", m.start())
        if end < 0:
            break
        m = pattern.search(text, end + 1)
    return out


# Hyperscan 5.4 (python-hyperscan 0.9.1) loses matches of expressions that start a line with an unbounded run
# (`^\s*lib[\w.+-]+\.so[.\d]* => not found`) when another in the same database does too and is followed by a
# literal of 24 bytes or more (`^\s*torch\.cuda\.is_available\(\)`): each alone matches, together neither does.
# Asked for the leftmost start of match, such expressions are built apart and are found. The run may open any
# alternative, not only the first: `BUILDING bitcode ...|^\s*-> [^\n]*:\s*rocminfo\s*$` lost its second branch
# beside `^\s*make...: \*\*\*|^\s*FAILED: |...`. Only these ask it (about one expression in eight, those that
# expression.py's ``Written.line_run`` says): for every expression it makes a database five times the size and three
# times as slow to build. Only ends are used.
_SOM = (hyperscan.HS_FLAG_MULTILINE | hyperscan.HS_FLAG_SOM_LEFTMOST) if hyperscan is not None else 0
_PLAIN = hyperscan.HS_FLAG_MULTILINE if hyperscan is not None else 0


def _lost(database: Any, probes: list[tuple[int, str]]) -> set[int]:
    """The patterns that ``database`` does not report on one of their probe lines."""
    if not probes:
        return set()
    data = "".join(text + "\n" for _, text in probes).encode()
    ends = list(accumulate(len(text) + 1 for _, text in probes))
    found: set[tuple[int, int]] = set()
    database.scan(data, match_event_handler=lambda pattern, start, end, flags, context:
                  found.add((pattern, bisect_left(ends, end))))
    return {index for line, (index, _) in enumerate(probes) if (index, line) not in found}


def _hyperscan_database(expressions: list[tuple[int, bytes]], flags: list[int]) -> Any:
    """A Hyperscan block-mode database of (id, expression) pairs with their flags, or None when it refuses one of them
    or there are none."""
    if not expressions:
        return None
    database = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    try:
        database.compile(expressions=[e for _, e in expressions], ids=[i for i, _ in expressions],
                         elements=len(expressions), flags=flags)
    except hyperscan.error:
        return None
    return database
