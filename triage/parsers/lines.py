"""How long a line the line parsers read, and which lines they need to read at all.

Stack frames, environment lines, strace calls and the like are short. A longer line is a
dump of data, not one of those records, and some of their regexes would cost time
quadratic in its length, so the line parsers pass over it (the runtime-log and kernel-log
parsers, whose patterns are anchored, still read it).

Most lines of a real log concern no given parser, so each parser first finds the lines that
hold something its patterns cannot match without (``lines_with``): a few
C-level searches over the whole text instead of Python-level regexes on every line.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

MAX_LINE = 4096

# The lines last joined and their text: the parsers of one artifact search the same text in turn.
_last: tuple[list[str], int, str] = ([], 0, "\n")


def readable(text: str) -> bool:
    return len(text) <= MAX_LINE


def _joined(lines: list[str]) -> str:
    """The lines as one text that starts with a newline: each line is preceded by exactly one."""
    global _last
    cached = _last
    if cached[0] is lines and cached[1] == len(lines):
        return cached[2]
    text = "\n" + "\n".join(lines)
    _last = (lines, len(lines), text)
    return text


# Characters that re.IGNORECASE matches to an ASCII letter but str.casefold() does not turn into
# one ("ı", and "İ" folded to "i" and a combining dot, for "i"): a line holding one is read by a
# parser whose needles are lowered, as its case-blind regexes may match there.
_FOLDS = ("\u0131", "\u0307")


def lines_with(lines: list[str], needles: Iterable[str | re.Pattern[str]], lowered: tuple[str, ...] = ()) -> list[int]:
    """Indexes of the lines holding one of ``needles`` or, in any case, one of the lower-case ``lowered``, in order.

    A needle is a literal or a pattern, searched in the lines joined into one text that starts
    with a newline, so a needle may begin with ``\\n`` to anchor at the start of a line; a match
    belongs to the line it starts in (or, when it starts with that newline, to the line after
    it). A parser gives needles that every line it acts on holds and then reads only those
    lines, in order and with their numbers, so blocks of consecutive lines stay as they were.
    Needles that begin with a literal (``\\n`` included) are found fastest.
    """
    text = _joined(lines)
    found = _line_indexes(text, needles)
    if lowered:
        # casefold() keeps every newline (lines are still counted right) and takes "ſ" for "s" as
        # re.IGNORECASE does; _FOLDS catches the other letters a case-blind regex may match.
        found = sorted(set(found).union(_line_indexes(text.casefold(), lowered + _FOLDS)))
    return found


class _LineCounter:
    """The index of the line each position of a joined text falls in, for positions in increasing order."""

    def __init__(self, text: str) -> None:
        self._text, self._index, self._counted = text, -1, 0

    def at(self, position: int) -> int:
        self._index += self._text.count("\n", self._counted, position + 1)
        self._counted = position + 1
        return self._index


def _line_indexes(text: str, needles: Iterable[str | re.Pattern[str]]) -> list[int]:
    """``lines_with`` on an already joined (or case-folded) text: newlines are counted, not positions."""
    starts: list[int] = []
    for needle in needles:
        find = text.find if isinstance(needle, str) else None
        at = find(needle) if find else (m.start() if (m := needle.search(text)) else -1)
        while at >= 0:
            starts.append(at)
            end = text.find("\n", at + 1)  # one hit is enough for a line: go on from the next
            if end < 0:
                break
            at = find(needle, end) if find else (m.start() if (m := needle.search(text, end)) else -1)
    counter = _LineCounter(text)
    out: list[int] = []
    for at in sorted(starts):
        index = counter.at(at)
        if not out or out[-1] != index:
            out.append(index)
    return out


def records(lines: list[str], pattern: re.Pattern[str]) -> Iterator[tuple[int, re.Match[str]]]:
    """Each match of ``pattern`` in the text ``lines_with`` searches, with the index of the line it starts in.

    For one-line records whose pattern cannot cross a newline (``[^\\S\\n]`` for ``\\s``, ``re.M``
    for ``^`` and ``$``): one C-level scan finds them all, instead of a search on every line.
    """
    text = _joined(lines)
    counter = _LineCounter(text)
    for m in pattern.finditer(text):
        yield counter.at(m.start()), m


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
