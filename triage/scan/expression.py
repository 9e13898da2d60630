"""A Python regex as a Hyperscan expression that matches, on a line of ASCII text, wherever the regex may.

Hyperscan reads bytes with ASCII classes and PCRE's syntax; the patterns of this tool are
Python's (``re`` for the parsers, ``regex`` for the signatures), searched one line at a time.
So the pattern is parsed with Python's own parser and written out again, item by item:

- every character item (a literal, ``.``, a class, ``\\w``) becomes the explicit set of ASCII
  bytes that Python itself matches with it under the flags in force (worked out by asking the
  module the pattern is for), never a newline: case folding and class meanings are Python's,
  and no match crosses a line;
- ``^`` and ``\\A`` are the start of a line, and a line's end (``$``, ``\\Z``) that ends the
  pattern is the newline; ``\\b`` and ``\\B`` are kept;
- what Hyperscan lacks is widened to something that matches more: a lookaround becomes
  nothing, so does a line's end inside the pattern, a back-reference any run of the line, a
  huge repeat count an open one;
- a start of the pattern whose literals are short and common (``hip``, ``gfx``), cut off by a long run
  of any characters from a part with literals no shorter, is left out (``leading``): the rest finds the
  same lines and more, and Hyperscan does not follow the start through every line of a log.

On ASCII lines the result matches every line the regex matches, and no other line when
nothing was widened (``expression`` says which); a line with other characters must be
searched another way (scanner.py does). ``None`` means the pattern cannot be read by Python's
``re`` parser (a ``regex``-only construct).
"""

from __future__ import annotations

import re
from functools import lru_cache
from re import _constants as C  # the AST vocabulary of re's own parser
from re import _parser
from typing import NamedTuple

import regex

from triage.scan.literals import REPEATS, ignores_case, sequence_literals
from triage.scan.symbols import REPRESENTATIVE, SYMBOL

_ASCII = [chr(c) for c in range(128) if c != 10]  # every ASCII character but the newline
_NEVER = rb"\xff"  # a byte that valid UTF-8 never holds: an item no ASCII character can match
_LINE = rb"[^\n]*"
_REST = rb"[^\n]*\n"  # what follows a match: the rest of its line, so that a line is reported once, at its end
_MAX_COUNT = 64  # repeat counts above this become open-ended (Hyperscan pays for every counted step)
_SHORT_LITERAL = 4  # a pattern's start whose literals are this short or shorter (hip, gfx, GPU) is in most log lines
_LONG_RUN = 16  # a run of any characters at least this long may separate a pattern's start from its telling part
_CATEGORIES = {
    C.CATEGORY_DIGIT: r"\d", C.CATEGORY_NOT_DIGIT: r"\D", C.CATEGORY_SPACE: r"\s", C.CATEGORY_NOT_SPACE: r"\S",
    C.CATEGORY_WORD: r"\w", C.CATEGORY_NOT_WORD: r"\W",
}
_LINE_START = (C.AT_BEGINNING, C.AT_BEGINNING_STRING, C.AT_BEGINNING_LINE)
_LINE_END = (C.AT_END, C.AT_END_STRING, C.AT_END_LINE)


class Unsupported(ValueError):
    """A construct this module cannot widen soundly."""


@lru_cache(maxsize=4096)
def _matched(item: str, ignorecase: bool, module: str) -> tuple[frozenset[int], bool]:
    """The ASCII characters (newline excepted) that ``item``, a one-character regex, matches in ``module``, and
    whether it matches a symbol outside ASCII (symbols.py: an item that names no character outside ASCII matches
    every symbol or none)."""
    engine = re if module == "re" else regex
    try:
        pattern = engine.compile(item, engine.IGNORECASE if ignorecase else 0)
    except (re.error, regex.error) as err:
        raise Unsupported(f"item {item!r}: {err}") from err
    return frozenset(ord(ch) for ch in _ASCII if pattern.fullmatch(ch)), pattern.fullmatch(REPRESENTATIVE) is not None


def _byte_class(codes: frozenset[int]) -> bytes:
    if not codes:
        return _NEVER
    if len(codes) == 1:
        return b"\\x%02x" % next(iter(codes))
    ranges: list[tuple[int, int]] = []
    for code in sorted(codes):
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1] = (ranges[-1][0], code)
        else:
            ranges.append((code, code))
    body = b"".join(b"\\x%02x" % a if a == b else b"\\x%02x-\\x%02x" % (a, b) for a, b in ranges)
    return b"[" + body + b"]"


def _escape(code: int) -> str:
    return "\\x%02x" % code if code < 256 else "\\u%04x" % code if code < 0x10000 else "\\U%08x" % code


def _class_source(items: list) -> str:
    """A ``[...]`` class in Python syntax from the parser's items of an IN node."""
    parts, negate = [], False
    for op, av in items:
        if op == C.NEGATE:
            negate = True
        elif op == C.LITERAL:
            parts.append(_escape(av))
        elif op == C.RANGE:
            parts.append(f"{_escape(av[0])}-{_escape(av[1])}")
        elif op == C.CATEGORY and av in _CATEGORIES:
            parts.append(_CATEGORIES[av])
        else:
            raise Unsupported(f"class item {op}")
    return "[" + "^" * negate + "".join(parts) + "]"


class _Writer:
    """Writes one parsed pattern out; ``exact`` stays true while nothing had to be widened."""

    def __init__(self, module: str) -> None:
        self.module = module
        self.exact = True
        self.symbolic = True

    def chars(self, item: str, ignorecase: bool, wide: bool = False) -> bytes:
        """The byte class of a one-character item; ``wide``: the item names a character outside ASCII."""
        codes, symbol = _matched(item, ignorecase, self.module)
        if wide or symbol != (SYMBOL in codes):
            self.symbolic = False
        return _byte_class(codes)

    def literal(self, code: int, ignorecase: bool) -> bytes:
        if code >= 128:
            return self.chars(_escape(code), ignorecase, wide=True)
        char = chr(code)  # an ASCII letter folds only to its other case, in re and regex alike
        return _byte_class(frozenset({ord(char.lower()), ord(char.upper())} if ignorecase else {code}) - {10})

    def widened(self, text: bytes) -> bytes:
        self.exact = False
        return text

    def item(self, op, av, ignorecase: bool) -> bytes:
        """One item of a sequence, not at its end."""
        if op == C.LITERAL:
            return self.literal(av, ignorecase)
        if op == C.NOT_LITERAL:
            return self.chars(f"[^{_escape(av)}]", ignorecase, wide=av >= 128)
        if op == C.ANY:
            return self.chars(".", ignorecase)
        if op == C.IN:
            wide = any(o == C.LITERAL and a >= 128 or o == C.RANGE and a[1] >= 128 for o, a in av)
            return self.chars(_class_source(av), ignorecase, wide)
        if op == C.AT:
            if av in _LINE_START:
                return b"^"
            if av in (C.AT_BOUNDARY, C.AT_NON_BOUNDARY):
                return b"\\b" if av == C.AT_BOUNDARY else b"\\B"
            # A line's end that does not end the pattern is left out (Hyperscan takes no end anchor
            # inside an expression); at the end, sequence() makes it the newline.
            return self.widened(b"")
        if op == C.BRANCH:
            return b"(?:" + b"|".join(self.sequence(branch, ignorecase, b"") for branch in av[1]) + b")"
        if op == C.SUBPATTERN:
            return b"(?:" + self.sequence(av[3], ignores_case(av, ignorecase), b"") + b")"
        if op in REPEATS:
            low, high, body = av
            if op != C.MAX_REPEAT and op != C.MIN_REPEAT:
                self.exact = False  # possessive: Python may fail where a plain repeat matches
            return b"(?:" + self.sequence(body, ignorecase, b"") + b")" + self.count(low, high)
        if op == getattr(C, "ATOMIC_GROUP", None):
            return self.widened(b"(?:" + self.sequence(av, ignorecase, b"") + b")")
        if op == C.GROUPREF:
            return self.widened(_LINE)
        if op == C.GROUPREF_EXISTS:
            _group, yes, no = av
            return self.widened(b"(?:" + self.sequence(yes, ignorecase, b"") + b"|"
                                + (self.sequence(no, ignorecase, b"") if no else b"") + b")")
        raise Unsupported(f"regex item {op}")

    def last(self, op, av, ignorecase: bool, tail: bytes) -> bytes:
        """The last item of a sequence followed by ``tail``: into a group's every branch, so that a line's
        end there becomes the newline itself."""
        if op == C.AT and av in _LINE_END:
            return b"\\n" if tail else self.widened(b"")
        if op == C.BRANCH:
            return b"(?:" + b"|".join(self.sequence(branch, ignorecase, tail) for branch in av[1]) + b")"
        if op == C.SUBPATTERN:
            return b"(?:" + self.sequence(av[3], ignores_case(av, ignorecase), tail) + b")"
        return self.item(op, av, ignorecase) + tail

    def unanchored(self, items: list, ignorecase: bool) -> list:
        """A pattern's items without a leading ``^.*`` (or ``^[^\\n]*?``, a lookahead between them or not): a line
        holds such a match wherever it holds the rest, and Hyperscan pays dearly for a run from every line's start
        (it is asked for the start of such a match, see scanner.py)."""
        at = [i for i, (op, _) in enumerate(items) if op not in (C.ASSERT, C.ASSERT_NOT)][:2]
        if len(at) < 2 or items[at[0]][0] != C.AT or items[at[0]][1] not in _LINE_START:
            return items
        if not self._run_of_any(*items[at[1]], ignorecase, C.MAXREPEAT):
            return items
        return [item for i, item in enumerate(items) if i not in at]

    def leading(self, items: list, ignorecase: bool) -> list:
        """A pattern's items from its telling part on. Where a long run of any characters follows a start whose
        literals are short (``hip_\\w+\\.cpp:\\d+:[^\\n]*fatal error``: ``hip_`` stands in every line of a runtime
        log) and the rest holds literals no shorter, the start and the run are left out: Hyperscan would otherwise
        follow the start on nearly every line. The same in each branch of a group the pattern starts with. A line
        holds such a match wherever it holds the rest, so the result matches more, and is no longer exact. A start
        anchored at the line's start is kept: Hyperscan tries it once a line."""
        items = list(items)
        for at, (op, av) in enumerate(items):
            if at and self._run_of_any(op, av, ignorecase, _LONG_RUN):
                if any(o == C.AT and a in _LINE_START for o, a in items[:at]):
                    return items
                before, after = sequence_literals(items[:at], ignorecase), sequence_literals(items[at + 1:], ignorecase)
                if after is None or after == before or (before is not None and _shortest(before) > _SHORT_LITERAL):
                    return items
                if before is None or _shortest(after) >= _shortest(before):
                    self.exact = False
                    return items[at + 1:]
                return items
        skip = _first_item(items)
        if skip == len(items):
            return items
        op, av = items[skip]
        if op == C.SUBPATTERN:
            inner = self.leading(list(av[3]), ignores_case(av, ignorecase))
            changed, first = inner != list(av[3]), (op, (av[0], av[1], av[2], inner))
        elif op == C.BRANCH:
            branches = [self.leading(list(branch), ignorecase) for branch in av[1]]
            changed, first = branches != [list(branch) for branch in av[1]], (op, (av[0], branches))
        else:
            return items
        # a \\b or ^ before a shortened branch held at its old start, not its new one: left out as well
        return [first, *items[skip + 1:]] if changed else items

    def _run_of_any(self, op, av, ignorecase: bool, longest: int) -> bool:
        """Whether an item is a run of any characters of a line, from none up to ``longest`` or more (C.MAXREPEAT:
        an open run only)."""
        return (op in (C.MAX_REPEAT, C.MIN_REPEAT) and av[0] == 0 and av[1] >= longest and len(av[2]) == 1
                and self.item(*av[2][0], ignorecase) == self.chars(".", False))

    def sequence(self, items, ignorecase: bool, tail: bytes) -> bytes:
        """A sequence of items followed by ``tail`` (the rest of the line, for the whole pattern; else nothing)."""
        kept = [(op, av) for op, av in items if op not in (C.ASSERT, C.ASSERT_NOT)]
        if len(kept) < len(items):
            self.exact = False  # conditions on the text around, dropped: without them the pattern matches more
        if not kept:
            return tail
        *body, (op, av) = kept
        return b"".join(self.item(o, a, ignorecase) for o, a in body) + self.last(op, av, ignorecase, tail)

    def count(self, low: int, high: int) -> bytes:
        if low > _MAX_COUNT or (high != C.MAXREPEAT and high > _MAX_COUNT):
            self.exact = False
        low = min(low, _MAX_COUNT)
        if high == C.MAXREPEAT or high > _MAX_COUNT:
            return b"*" if low == 0 else b"+" if low == 1 else b"{%d,}" % low
        if (low, high) == (0, 1):
            return b"?"
        return b"{%d}" % low if low == high else b"{%d,%d}" % (low, high)


def _first_item(items: list) -> int:
    """Where a sequence's first item that is no anchor or assertion stands (its length when there is none)."""
    return next((at for at, (op, _) in enumerate(items) if op not in (C.AT, C.ASSERT, C.ASSERT_NOT)), len(items))


def _apart(items: list) -> list[list]:
    """The pattern as parts that together match what it matches: where it starts with a group some of whose
    branches start a line with a run (``^\\s*P4\\s*:``) and others do not, the two kinds apart. Hyperscan must
    be asked for the start of match of the first kind (see scanner.py), which costs it dearly on the others:
    the Windows crash-module pattern took a third of the anchors' pass so."""
    skip = _first_item(items)
    if skip == len(items):
        return [items]
    op, av = items[skip]
    if op == C.SUBPATTERN and len(av[3]) == 1 and av[3][0][0] == C.BRANCH:
        group, branches = av, av[3][0][1][1]  # a group of its own (flags, a capture) around the branches
    elif op == C.BRANCH:
        group, branches = None, av[1]
    else:
        return [items]
    runs = [branch for branch in branches if _starts_line_with_run(branch)]
    if not runs or len(runs) == len(branches):
        return [items]
    rest = [branch for branch in branches if not _starts_line_with_run(branch)]

    def part(kind: list) -> list:
        branch = (C.BRANCH, (None, kind))
        return [*items[:skip], branch if group is None else (op, (*group[:3], [branch])), *items[skip + 1:]]

    return [part(rest), part(runs)]


def _starts_line_with_run(items) -> bool:
    """Whether a sequence starts at a line's start with a run written open (``^\\s*``, ``^ {2,}``, ``^.{0,80}``),
    itself or in one of the branches it starts with."""
    kept = [(op, av) for op, av in items if op not in (C.ASSERT, C.ASSERT_NOT)]
    if not kept:
        return False
    op, av = kept[0]
    if op == C.AT and av in _LINE_START:
        return len(kept) > 1 and kept[1][0] in REPEATS and kept[1][1][1] > _MAX_COUNT  # C.MAXREPEAT included
    if op == C.SUBPATTERN:
        return _starts_line_with_run(list(av[3]))
    return op == C.BRANCH and any(_starts_line_with_run(list(branch)) for branch in av[1])


def _shortest(literals: set[tuple[str, bool]]) -> int:
    return min(len(text) for text, _ in literals)


class Written(NamedTuple):
    """One Hyperscan expression of a pattern."""

    body: bytes
    line_run: bool  # it starts a line with an open run: Hyperscan must be asked for its start of match (scanner.py)


class Expressions(NamedTuple):
    """A pattern's Hyperscan expressions, and what they are good for."""

    parts: list[Written]
    exact: bool  # they match no ASCII line the pattern does not
    symbolic: bool  # on a line whose every character outside ASCII is a symbol written as SYMBOL (symbols.py), they
    # match wherever the pattern matches the line as it was (every item treats SYMBOL as it treats any symbol)


def expression(pattern: str, flags: int = 0, module: str = "regex") -> Expressions | None:
    """The Hyperscan expressions (MULTILINE, no other flag) for ``pattern`` searched on ASCII lines: usually one,
    two where a part of it is best read apart (``_apart``), which together match what it may; whether
    they are exact there (match no line the pattern does not), and whether they read symbols written as SYMBOL;
    None when it cannot be written.

    Each matches on to the end of the line and its newline, so Hyperscan reports each line once an
    expression, at the same offset for every match in it (it reports an expression once per end offset).
    ``flags`` are the Python flags the pattern is compiled with by ``module`` (``re`` or
    ``regex``); only IGNORECASE changes what a line may match.
    """
    try:
        tree = _parser.parse(pattern, flags & (re.IGNORECASE | re.MULTILINE | re.DOTALL | re.VERBOSE))
        writer = _Writer(module)
        ignorecase = bool((flags | tree.state.flags) & re.IGNORECASE)
        items = writer.leading(writer.unanchored(list(tree), ignorecase), ignorecase)
        written = [Written(writer.sequence(part, ignorecase, _REST), _starts_line_with_run(part))
                   for part in _apart(items)]
    except (re.error, ValueError, RecursionError, OverflowError, Unsupported):
        return None
    return Expressions(written, writer.exact, writer.symbolic)

