"""Literals a regex cannot match without: the keys of the prefilter where Hyperscan is not installed.

``required_literals(r"Couldn'?t create blit|BlitManager", re.IGNORECASE)`` is
``{("t create blit", True), ("blitmanager", True)}``: every match contains at least one of them.
A literal is ``(text, caseless)``; a caseless one is in lower case, to be looked for in the
case-folded text, and a cased one (a pattern's ``HIP``, outside any ``(?i)``) as it is, which
finds far fewer lines. A small character class is spelled out (``:[0-2]:`` gives ``:0:``,
``:1:``, ``:2:``). ``None`` means no such set exists (``.*``, a lone character), and the pattern
must be tried on every line. The set is sound by construction, so a prefilter built on it never
hides a match.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import sys
from collections.abc import Iterable
from pathlib import Path
from re import _constants as C  # the AST vocabulary of re's own parser
from re import _parser

MIN_LITERAL = 2
_MAX_VARIANTS = 8  # spelled-out classes multiply a literal's variants; past this many the literal ends
_MAX_CLASS = 52  # a class of more characters than this is not spelled out
# Literals of only these are everywhere in a log (0x, 12:34): of two sets, one of words wins.
_COMMON = frozenset("0123456789abcdefx._-/ ")
REPEATS = (C.MAX_REPEAT, C.MIN_REPEAT, getattr(C, "POSSESSIVE_REPEAT", C.MAX_REPEAT))

Literal = tuple[str, bool]


def ignores_case(subpattern: tuple, ignorecase: bool) -> bool:
    """Whether case is ignored inside a group with inline flags (``(?i:...)``, ``(?-i:...)``)."""
    _group, add, remove, _body = subpattern
    return False if remove & re.IGNORECASE else True if add & re.IGNORECASE else ignorecase


def _better(a: set[Literal] | None, b: set[Literal] | None) -> set[Literal] | None:
    """Of two sufficient literal sets, the more selective one: words rather than numbers, then the
    longest shortest member, then cased, then fewest."""
    if a is None:
        return b
    if b is None:
        return a

    def rank(s: set[Literal]) -> tuple:
        return _informative(s), min(len(t) for t, _ in s), -sum(c for _, c in s), -len(s)

    return max(a, b, key=rank)


def _chars(items: list, ignorecase: bool) -> set[str] | None:
    """The characters of a small positive class (``[0-2]``, ``[abcd]``, ``\\d``), or None."""
    out: set[str] = set()
    for op, av in items:
        if op == C.LITERAL:
            out.add(chr(av))
        elif op == C.RANGE and av[1] - av[0] < _MAX_CLASS:
            out.update(chr(c) for c in range(av[0], av[1] + 1))
        elif op == C.CATEGORY and av == C.CATEGORY_DIGIT:
            out.update("0123456789")
        else:
            return None
    if ignorecase:
        out = {c.lower() for c in out}
    return out if len(out) <= _MAX_CLASS and all(c.isascii() for c in out) else None


def _fixed(items, ignorecase: bool) -> set[str] | None:
    """The strings a sequence can match when they are few and fixed (``r(?:8|9|1[0-5])``), else None."""
    out = {""}
    for op, av in _items(items):
        if op == C.LITERAL:  # one character: each string goes on with it
            if len(out) > _MAX_VARIANTS:
                return None
            char = chr(av).lower() if ignorecase else chr(av)
            out = {a + char for a in out}
            continue
        options: set[str] | None
        if op == C.IN:
            options = _chars(av, ignorecase)
        elif op == C.SUBPATTERN:
            _group, add, remove, body = av
            # A group that turns case-blindness on or off is no part of a literal of one case.
            options = None if (add | remove) & re.IGNORECASE else _fixed(body, ignorecase)
        elif op == C.BRANCH:
            branches = [_fixed(branch, ignorecase) for branch in av[1]]
            options = None if any(b is None for b in branches) else set().union(*branches)  # type: ignore[arg-type]
        else:
            return None
        if options is None or len(out) * len(options) > _MAX_VARIANTS:
            return None
        out = {a + b for a in out for b in options}
    return out


def _one(item: tuple, ignorecase: bool) -> set[str] | None:
    """The characters one item can be, when it is one literal character or a small class."""
    op, av = item
    if op == C.LITERAL:
        return {chr(av).lower() if ignorecase else chr(av)}
    return _chars(av, ignorecase) if op == C.IN else None


def _items(items) -> list:
    """The items of a parsed sequence as a list: iterating re's ``SubPattern`` itself calls its Python
    ``__getitem__`` once an item, most of the time this module took."""
    return items.data if isinstance(items, _parser.SubPattern) else items


def sequence_literals(items, ignorecase: bool) -> set[Literal] | None:
    """A set of literals one of which every match of a parsed sequence (items of re's parser) contains, or None."""
    best: set[Literal] | None = None
    run: list[str] = [""]  # the variants of the literal being read

    def close() -> None:
        nonlocal best, run
        if min(map(len, run)) >= MIN_LITERAL and all(v.isascii() for v in run):
            best = _better(best, {(v.lower(), True) if ignorecase else (v, False) for v in run})
        run = [""]

    def extend(strings: set[str]) -> None:
        nonlocal run
        if len(run) * len(strings) > _MAX_VARIANTS:
            close()
        run = [v + c for v in run for c in sorted(strings)]

    for op, av in _items(items):
        if op == C.LITERAL:  # the commonest item, one character: added to each variant in place
            if len(run) > _MAX_VARIANTS:
                close()
            char = chr(av).lower() if ignorecase else chr(av)
            run = [v + char for v in run]
            continue
        if op == C.IN and (chars := _chars(av, ignorecase)) is not None:
            extend(chars)
            continue
        if op in REPEATS and av[0] >= 1 and len(av[2]) == 1 and (chars := _one(av[2][0], ignorecase)) is not None:
            extend(chars)  # the repeat's first character (``#\d{1,3}`` gives ``#0`` ... ``#9``) ends the literal
            close()
            continue
        if op in (C.SUBPATTERN, C.BRANCH) and (strings := _fixed([(op, av)], ignorecase)) is not None:
            extend(strings)  # a group of a few fixed strings goes on the literal (``r(?:ax|bx)``)
            continue
        close()
        if op == C.SUBPATTERN:
            best = _better(best, sequence_literals(av[3], ignores_case(av, ignorecase)))
        elif op == C.BRANCH:
            options = [sequence_literals(branch, ignorecase) for branch in av[1]]
            if all(o is not None for o in options):
                best = _better(best, set().union(*options))
        elif op in REPEATS and av[0] >= 1:
            best = _better(best, sequence_literals(av[2], ignorecase))
        elif op == getattr(C, "ATOMIC_GROUP", None):
            best = _better(best, sequence_literals(av, ignorecase))
    close()
    return best


def required_literals(pattern: str, flags: int = 0) -> set[Literal] | None:
    """A set of literals one of which every match of ``pattern`` (compiled with ``flags``) contains, or None.

    None too when the only set is of short common tokens (``0x``, ``:1:``): they stand in most lines
    of a log, and trying the pattern on each line costs less than a candidate line each.
    """
    try:
        tree = _parser.parse(pattern, flags & (re.IGNORECASE | re.VERBOSE))
    except (re.error, ValueError, RecursionError, OverflowError):
        return None
    found = sequence_literals(tree, bool((flags | tree.state.flags) & re.IGNORECASE))
    return found if found is None or _informative(found) else None


def _informative(literals: set[Literal]) -> bool:
    return all(len(t) >= 4 or not set(t.lower()) <= _COMMON for t, _ in literals)


# -- the shipped table ---------------------------------------------------------------------------------------------
# Working the literals out parses each pattern with re's parser in Python: some 0.2 s for the shipped signatures'
# anchors, most of what a first run on a machine (an empty per-user cache, as on a fresh CI runner) spends matching.
# The answers for the shipped patterns ship beside this module, made by ``python3 -m triage.scan.literals``; a
# pattern the table lacks (a signature added or changed since) is worked out as before. The table holds only when it
# was made by this very module under the same Python minor version (its key says so), so it can never disagree with
# ``required_literals``.

TABLE = Path(__file__).with_name("literals.json")


def table_key() -> str:
    """What the table's answers depend on: this module's code and Python's minor version (re's parser)."""
    digest = hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:16]
    return f"{digest}-py{sys.version_info[0]}.{sys.version_info[1]}"


@functools.cache
def _table() -> dict[str, list | None]:
    """The shipped answers, keyed ``FLAGS:PATTERN`` (read once a process; empty when absent or made otherwise)."""
    try:
        data = json.loads(TABLE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data.get("literals", {}) if isinstance(data, dict) and data.get("key") == table_key() else {}


_MISSING = object()


def literals_for(pattern: str, flags: int = 0) -> set[Literal] | None:
    """``required_literals(pattern, flags)``, from the shipped table when it has the pattern."""
    found = _table().get(f"{int(flags)}:{pattern}", _MISSING)
    if found is _MISSING:
        return required_literals(pattern, flags)
    return None if found is None else {(text, bool(caseless)) for text, caseless in found}  # type: ignore[union-attr]


def write_table(patterns: Iterable[tuple[str, int]], path: Path = TABLE) -> int:
    """Write the table for these (pattern, flags) pairs; how many it holds."""
    answers = {}
    for pattern, flags in sorted(set(patterns)):
        found = required_literals(pattern, flags)
        answers[f"{int(flags)}:{pattern}"] = None if found is None else sorted([t, c] for t, c in found)
    path.write_text(json.dumps({"key": table_key(), "literals": answers}, indent=0, sort_keys=True) + "\n",
                    encoding="utf-8")
    return len(answers)


def shipped_patterns() -> list[tuple[str, int]]:
    """The patterns of the shipped signatures' scanners and of every parser's needles, with their flags."""
    from triage.match.database import _load  # the signature files themselves, not a cached database
    from triage.parsers.lines import needle_scanners
    from triage.resources import data_dir

    db = _load(data_dir("signatures"))
    return [(p, s.flags) for s in (*db.prefilters.scanners, *needle_scanners()) for p in s.patterns]


if __name__ == "__main__":
    print(f"{write_table(shipped_patterns())} patterns' literals written to {TABLE}")
