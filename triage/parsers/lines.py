"""How long a line the line parsers read, and which lines they need to read at all.

Stack frames, environment lines, strace calls and the like are short. A longer line is a
dump of data, not one of those records, and some of their regexes would cost time
quadratic in its length, so the line parsers pass over it (the runtime-log and kernel-log
parsers, whose patterns are anchored, still read it).

Most lines of a real log concern no given parser, so each parser declares ``Needles``: regexes
one of which every line it acts on holds. The needles of all parsers are found in one pass
over each artifact (triage/scan/, Hyperscan where installed) the first time a parser asks,
and each parser then reads only its lines, in order and with their numbers, so blocks of
consecutive lines stay as they were.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator

from triage.model import Artifact
from triage.resources import cache_dir, read_cached, write_cached
from triage.scan.scanner import LineScanner, build_key, lines_matching

MAX_LINE = 4096


def readable(text: str) -> bool:
    return len(text) <= MAX_LINE


class Needles:
    """What every line a parser acts on holds: one of these regexes, searched in one line.

    A needle is a regex in ``re`` syntax, or a compiled ``re`` pattern (the parser's own: its
    IGNORECASE is kept). Case-blind parts of a text needle say so inline (``(?i:driver)``); ``^``
    is the start of a line. A needle only chooses lines: it may choose more than the parser then
    reads, never fewer. With Hyperscan a parser's own patterns make the best needles: only the
    lines they match reach the parser.
    """

    def __init__(self, *needles: str | re.Pattern[str], exact: bool = False, head: int | None = None) -> None:
        """``exact``: ``lines`` gives exactly the lines a needle matches (no more), so that the parser
        need not search them again. ``head``: only a file's first lines count (the banner a program
        prints as it starts); they are searched apart, which suits needles made of character
        classes (``\\d+\\.\\d+``) that would slow the pass over every line."""
        patterns = [needle if isinstance(needle, str) else (
            f"(?i:{needle.pattern})" if needle.flags & re.IGNORECASE else needle.pattern) for needle in needles]
        self.head = head
        # A broken needle fails at import, in every test run; MULTILINE: a head is searched as one text.
        self._compiled = [re.compile(p, re.MULTILINE) for p in patterns]
        start = len(_PATTERNS)
        if head is None:
            _PATTERNS.extend(patterns)
            if exact:
                _EXACT.extend(range(start, len(_PATTERNS)))
        self.slots = range(start, len(_PATTERNS))

    def lines(self, artifact: Artifact) -> list[int]:
        """Indexes of the artifact's lines holding one of the needles, in order."""
        if self.head is not None:
            text = "\n".join(artifact.lines[:self.head])
            return sorted(set().union(*(lines_matching(p, text) for p in self._compiled)))
        found = scan(artifact)
        if len(self.slots) == 1:
            return found[self.slots[0]]
        return sorted(set().union(*(found[slot] for slot in self.slots)))


# Every needle of every parser, in one list: one scanner finds them all.
_PATTERNS: list[str] = []
_EXACT: list[int] = []
_scanner: LineScanner | None = None
# The artifact last scanned and what was found: the parsers of one artifact ask in turn.
_last: tuple[list[str] | None, int, list[list[int]]] = (None, 0, [])


def _all_needles() -> LineScanner:
    """One scanner for every parser's needles, from the disk cache when built before (Hyperscan takes a while)."""
    global _scanner
    if _scanner is None or len(_scanner.patterns) != len(_PATTERNS):
        key = hashlib.sha256(repr((_PATTERNS, _EXACT, os.environ.get("TRIAGE_SCANNER"), build_key())).encode()).hexdigest()[:24]
        folder = cache_dir("needles")
        file = folder / f"{key}.pickle" if folder else None
        scanner = read_cached(file) if file else None
        if not isinstance(scanner, LineScanner):
            scanner = LineScanner(_PATTERNS, 0, None, "re", _EXACT)
            if file:
                write_cached(file, scanner)
        _scanner = scanner
    return _scanner


def scan(artifact: Artifact) -> list[list[int]]:
    """The one pass over an artifact for every parser's needles: for each needle, its lines (kept for the
    parsers that ask next)."""
    global _last
    lines = artifact.lines
    if _last[0] is lines and _last[1] == len(lines):
        return _last[2]
    found = _all_needles().scan(lines, artifact.text if artifact.text else None)
    _last = (lines, len(lines), found)
    return found


class Walk:
    """Candidate line indexes in order, for a parser whose record may go on in the lines after it.

    ``follow()`` while at a line asks for the next line too, candidate or not: a listing that a
    command introduced goes on over lines that hold none of the parser's needles.
    """

    def __init__(self, candidates: list[int], count: int) -> None:
        self._candidates, self._count, self._follow = candidates, count, False

    def follow(self) -> None:
        self._follow = True

    def __iter__(self) -> Iterator[int]:
        index, at = -1, 0
        while True:
            if self._follow and index + 1 < self._count:
                index += 1
            else:
                while at < len(self._candidates) and self._candidates[at] <= index:
                    at += 1
                if at == len(self._candidates):
                    return
                index = self._candidates[at]
            self._follow = False
            yield index
