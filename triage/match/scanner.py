"""Find, in one pass over the input, the lines each log pattern of the database could match.

Every pattern is reduced to literals it cannot match without (literals.py). One scan for all
literals of all signatures gives each pattern its candidate lines; the full ``regex`` pattern
(captures and all) then runs on those lines only, so the cost of a line that matches nothing
hardly grows with the size of the database. The scan uses Hyperscan when the optional
``hyperscan`` package is installed and a trie-shaped ``re`` pattern otherwise; both report
every occurrence of every literal, so both give the same candidates and the same answers.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from triage.match.literals import required_literals

try:  # optional: pip install 'hip-triage[fast]'
    import hyperscan
except ImportError:  # pragma: no cover - depends on the machine
    hyperscan = None


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


class Scanner:
    """Candidate lines per pattern for a fixed list of patterns (a pattern index -> set of line indexes)."""

    def __init__(self, patterns: Sequence[str], engine: str | None = None) -> None:
        self.count = len(patterns)
        self.always: list[int] = []
        owners: dict[str, list[int]] = {}
        for index, pattern in enumerate(patterns):
            literals = required_literals(pattern)
            if literals is None:
                self.always.append(index)
            else:
                for literal in literals:
                    owners.setdefault(literal, []).append(index)
        self.literals = sorted(owners)
        self.owners = [owners[w] for w in self.literals]
        self.engine = engine or ("hyperscan" if hyperscan is not None else "python")
        index = {w: i for i, w in enumerate(self.literals)}
        self._prefixes = {w: [index[w[:k]] for k in range(1, len(w) + 1) if w[:k] in index] for w in self.literals}
        self._build()

    def __getstate__(self) -> dict:
        """The literal tables only; the matchers are rebuilt (Hyperscan databases do not pickle)."""
        return {k: v for k, v in self.__dict__.items() if k not in ("_trie", "_hs")}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)
        if self.engine == "hyperscan" and hyperscan is None:
            self.engine = "python"
        self._build()

    def _build(self) -> None:
        self._trie = self._hs = None
        if self.engine == "python" and self.literals:
            self._trie = re.compile("(?=(" + _trie_regex(self.literals) + "))")
        if self.engine == "hyperscan" and self.literals:
            self._hs = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            self._hs.compile(
                expressions=[re.escape(w).encode() for w in self.literals],
                ids=list(range(len(self.literals))),
                elements=len(self.literals),
                flags=[hyperscan.HS_FLAG_CASELESS] * len(self.literals),
            )

    def scan(self, lines: Sequence[str]) -> list[set[int]]:
        """For each pattern, the indexes of the lines that contain one of its literals."""
        out: list[set[int]] = [set() for _ in range(self.count)]
        everything = set(range(len(lines)))
        for index in self.always:
            out[index] = set(everything)
        if not self.literals or not lines:
            return out
        text = "\n".join(lines)
        if self._hs is not None:
            buffer: str | bytes = text.encode("utf-8", "surrogatepass")
            newline: str | bytes = b"\n"
            occurrences = self._hyperscan(buffer)
        else:
            buffer = text.lower()
            if len(buffer) != len(text):  # a character whose lower case is longer: keep the lines apart
                buffer = "\n".join(line.lower() for line in lines)
            newline = "\n"
            occurrences = self._python(buffer)
        line = previous = 0
        for offset, literal in occurrences:  # in increasing offset order
            line += buffer.count(newline, previous, offset)
            previous = offset
            for index in self.owners[literal]:
                out[index].add(line)
        return out

    def _hyperscan(self, data: bytes) -> list[tuple[int, int]]:
        found: list[tuple[int, int]] = []
        self._hs.scan(data, match_event_handler=lambda literal, start, end, flags, context:
                      found.append((end - 1, literal)))
        found.sort()
        return found

    def _python(self, lowered: str) -> list[tuple[int, int]]:
        found = []
        for m in self._trie.finditer(lowered):
            found.extend((m.start(), literal) for literal in self._prefixes[m.group(1)])
        return found
