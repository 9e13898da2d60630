"""Literals a regex cannot match without: the keys of the one-pass prefilter.

``required_literals(r"Couldn'?t create blit|BlitManager")`` is ``{"t create blit", "blitmanager"}``:
every match contains at least one of them (compared in lower case). ``None`` means no such
set exists (``.*``, a short literal), and the pattern must be tried on every line. The set is
sound by construction, so a prefilter built on it never hides a match.
"""

from __future__ import annotations

import re
from re import _constants as C  # the AST vocabulary of re's own parser
from re import _parser

MIN_LITERAL = 3
_BRANCHES = (C.BRANCH,)
_REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))


def _better(a: set[str] | None, b: set[str] | None) -> set[str] | None:
    """Of two sufficient literal sets, the more selective one (longest shortest member, then fewest)."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b, key=lambda s: (min(map(len, s)), -len(s)))


def _sequence(items) -> set[str] | None:
    best: set[str] | None = None
    run: list[str] = []

    def close() -> None:
        nonlocal best, run
        text = "".join(run)
        if len(text) >= MIN_LITERAL and text.isascii():
            best = _better(best, {text.lower()})
        run = []

    for op, av in items:
        if op == C.LITERAL:
            run.append(chr(av))
            continue
        close()
        if op == C.SUBPATTERN:
            best = _better(best, _sequence(av[-1]))
        elif op in _BRANCHES:
            options = [_sequence(branch) for branch in av[1]]
            if all(o is not None for o in options):
                best = _better(best, set().union(*options))
        elif op in _REPEATS and av[0] >= 1:
            best = _better(best, _sequence(av[2]))
        elif op == getattr(C, "ATOMIC_GROUP", None):
            best = _better(best, _sequence(av))
    close()
    return best


def required_literals(pattern: str) -> set[str] | None:
    """A set of lower-case literals one of which every match contains, or None."""
    try:
        tree = _parser.parse(pattern, re.IGNORECASE)
    except (re.error, ValueError, RecursionError, OverflowError):
        return None
    return _sequence(tree)
