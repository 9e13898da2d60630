"""Regexes compiled on first use: a parser's patterns cost nothing in a run whose input has none of its lines.

Importing every parser used to compile some 250 regexes, a fifth of a warm single run, although
a typical log reaches a handful of parsers. ``lazy(pattern, flags)`` stands for ``re.compile``
at module level: ``pattern`` and ``flags`` are there at once (the line prefilter reads them),
the compiled regex is made on the first search and its methods then become the object's own
attributes, so later calls cost what a compiled pattern's do. Two threads racing to the first
search both compile the same regex; either result serves.
"""

from __future__ import annotations

import re
from typing import Any

_METHODS = ("search", "match", "fullmatch", "finditer", "findall", "sub", "subn", "split", "groupindex", "groups")


class LazyPattern:
    """A ``re.Pattern`` that is compiled when first used."""

    def __init__(self, pattern: str, flags: int = 0) -> None:
        self.pattern = pattern
        self.flags = flags

    def __getattr__(self, name: str) -> Any:  # only for what the instance does not have yet
        if name.startswith("__"):
            raise AttributeError(name)
        compiled = re.compile(self.pattern, self.flags)
        for method in _METHODS:
            setattr(self, method, getattr(compiled, method))
        return getattr(compiled, name)

    def __repr__(self) -> str:
        return f"lazy({self.pattern!r}, {self.flags})"


def lazy(pattern: str, flags: int = 0) -> Any:
    """``re.compile(pattern, flags)``, compiled when first used (typed Any: it answers as a ``re.Pattern``)."""
    return LazyPattern(pattern, flags)
