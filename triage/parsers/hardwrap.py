"""Read a paste that a mail client, a forum or a terminal hard-wrapped at a fixed width.

A long runtime-log record, gdb frame or Python exception line pasted through such a program
arrives split over two or three lines, and no parser or signature sees it whole. Two ways of
splitting happen: at exactly the width, in the middle of a word (a terminal's copy, ``fold -w
80``), and at the last space that fits (mail and forum editors, ``fmt``, Python's ``textwrap``:
the space is dropped, the next line starts with the next word, and a word longer than the width
is left whole).

A paste is taken as wrapped only when its lines say so together: three or more distinct lines
end at the width (exactly, for the first way, where no line is longer and few end a little short
of it as a word wrap's would; for the second, at one of the widths editors use, so near it that
the next line's first word would not have fitted, and most lines that near it are such) and each
is followed by a line that goes on rather than starting a record of its own. A line never goes
on a record when it starts one of the usual forms (a runtime-log line, a frame, a clock, a
traceback, a log level), starts as the record did or as this paste's records do (its leading
word, its form: ``key = value``, ``[Mon Sep 25 ...]``), is indented after a word wrap, or follows
a rule or a box's row.

``rejoin`` gives the artifact with each wrapped record on one line (what parsers read) and, for
each line of it, the index of the line it started on; ``spread`` puts the records back on the
lines the user sent, one per first line, so that every line number is the user's, and quotes
each record's lines as given; ``renumber`` moves what the parsers recorded onto those numbers.
Nothing is joined in a paste that is not wrapped: its artifact is returned as it is.

Example: in a runtime log copied from a terminal 80 columns wide, the record ::

    :1:hip_code_object.cpp      :624 : 0245987123 us: [pid:3321  tid:0x7f36c2bff640]
     hipErrorNoBinaryForGpu: Unable to find code object for all current devices!

reads as the one line ``:1:hip_code_object.cpp ... tid:0x7f36c2bff640] hipErrorNoBinaryForGpu: ...``
at the first line's number, its evidence quoting both lines.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from itertools import compress, count, pairwise, repeat
from typing import Any

from triage.lazy import dataclass, lazy
from triage.model import Artifact, Case, Where

# Widths people and programs wrap at lie well inside these (mail 72-78, terminals 80-200).
MIN_WIDTH = 40
MAX_WIDTH = 250
# Lines that end at the width and go on in the next one, distinct ones, before a paste counts as wrapped: two can
# be a coincidence of a fixed-format log; a single long record split in three has two as well, so a paste of only
# that is read only where both ends of the record show the wrap (see _few).
MIN_BREAKS = 3
# The widths terminals are usually left at (and Windows' console buffers): a paste of a single record cut once is
# taken as a terminal's wrap only at one of these, and only when it has this many lines at most (see _split_once).
TERMINAL_WIDTHS = (80, 100, 120, 132)
SPLIT_ONCE_LINES = 3
# A terminal's wrap has more lines ending exactly at the width than ending short of it as a word wrap would, by this.
FOLD_RATIO = 2
# The widths mail and forum editors and text tools wrap words at (a word wrap leaves its lines up to a word short
# of the width, so the longest line does not say it).
WORD_WIDTHS = (66, 70, 72, 74, 75, 76, 78, 79, 80, 100, 120, 132)
# A word wrap's line ends within this many characters of the width seven times in ten (textwrap at 80 over the
# design cases' long lines: words of logs are often long paths and numbers), ...
WORD_NEAR = 10
# ... and in a word-wrapped paste most lines that near the width are broken ones; a log of one record per line
# near the width has its next records there.
WORD_SHARE = 0.6
# A paste shows its wrap in its first lines; past them only the joining reads (a long log costs no more to look at).
DETECT_LINES = 2000
# Lines joined at most (about 50 microseconds a break): past them a paste's lines are read as they are.
JOIN_LINES = 100_000
# A broken line is at most a long word short of the width; a shorter one is taken as whole.
WORD_SLACK = 30
# The start of a record of its own: never the rest of the line before.
_RECORD = lazy(
    r"^(?::\d:|\s*#\d+\s|\s*\[\s*\d+\.\d+\]|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d|[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d "
    r"|Traceback \(most recent call last\)|\s*File \"|\s*0x[0-9A-Fa-f]{6,16},\s|Thread \d+ |Stack trace of thread"
    r"|==\d+==|\s*frame #\d+:|\s*\* thread #|\[pid:|[A-Z]\w*(?:Error|Exception|Warning):\s|\s*at 0x[0-9A-Fa-f]+:"
    r"|\s*by 0x[0-9A-Fa-f]+:|\s*\d+ 0x[0-9a-f]{8,16} in |\S+\[\d+\]: |\s*0x[0-9a-fA-F]{8,16} in "
    r"|\[[A-Z][a-z]{2} [A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d \d{4}\]|time=\d{4}-|\d+\.\d\d\.\d{3}\.\d{3} [IWED] "
    r"|(?:DEBUG|INFO|WARN|WARNING|ERROR|CRITICAL|FATAL)\b[\s:]|[\w.-]+@[\w.-]+:\S*[$#] )")
_RULE = lazy(r"^\s*(\S)\1{7,}\s*$")  # a rule of ===== or -----
# A row of a drawn box or table (Rich's tracebacks, amd-smi): as wide as the terminal by design, and whole.
_BOX_END = frozenset("|│┃║╮╯┐┘╗╝┤┫╣+")
_BOX_START = frozenset("│┃║╰╭└┌╚╔├┣╠")
_FIRST_WORD = lazy(r"\S+")
_LEAD = lazy(r"\s*(\W*[\w.-]*)")  # a line's leading word, with what comes before it: "amdgpu", "[drm", "clang-9"
# The form of a line's start: the leading word as "w" between what comes before and after it ("w = ", "[w]", "w: ").
_FORM = lazy(r"\s*(\W{0,3}?)([\w.-]*)([^\w.-]{0,3})")
_SPACES = lazy(r"\s+")
_PLAIN_FORMS = frozenset({"w", "w "})  # a word: how sentences and the rest of a broken one start alike


@dataclass(frozen=True)
class Wrap:
    """How a paste was wrapped: at ``width`` characters, mid-word (``exact``) or at spaces; ``starts`` are the
    leading words of its lines that surely start a record (after a blank or short line), twice or more."""

    width: int
    exact: bool
    starts: frozenset[str] = frozenset()


def _lead(line: str) -> str:
    return _LEAD.match(line).group(1)  # type: ignore[union-attr]  # it matches any text


def _sure_starts(lines: list[str], width: int, exact: bool) -> list[str]:
    """The lines that surely start a record: after a blank line, or one that a wrap at ``width`` did not break (shorter
    than the width; for a word wrap, with room left for the line's first word)."""
    if exact:  # the filled lines after a shorter or a blank one (most lines are: each test made in C)
        filled = list(map(bool, map(str.strip, lines)))
        after = [True, *(len(line) < width or not full for line, full in zip(lines, filled))]
        return list(compress(lines, map(bool.__and__, filled, after)))
    out = []
    for line, nxt in zip([""] + lines, lines):
        if not nxt.strip() or nxt[0].isspace() and not exact:
            continue
        room = width - len(line) if exact else width - len(line) - 1 - len(_FIRST_WORD.match(nxt).group(0))  # type: ignore[union-attr]
        if not line.strip() or room >= (1 if exact else 0):
            out.append(nxt)
    return out


def _starts(starts: list[str]) -> frozenset[str]:
    """The leading words of records' starts, twice or more."""
    counts = Counter(map(re.Match.group, map(_LEAD.match, starts), repeat(1)))  # _lead of each, in C
    return frozenset(word for word, n in counts.items() if n >= 2 and word)


def _form(line: str) -> str:
    m = _FORM.match(line)
    return _SPACES.sub(" ", m.group(1) + ("w" if m.group(2) else "") + m.group(3))  # type: ignore[union-attr]


def _start_forms(starts: list[str]) -> frozenset[str]:
    """The forms of records' starts, twice or more, but a word's."""
    counts = Counter(_form(line) for line in starts)
    return frozenset(form for form, n in counts.items() if n >= 2 and form not in _PLAIN_FORMS)


def _goes_on(wrap: Wrap, first: str, line: str, nxt: str) -> bool:
    """Whether ``nxt`` may be the rest of ``line``, of the record that started with ``first``: not blank, not the
    start of a record (one of the usual forms, or one that starts as this record did or as records of this paste
    do), not a rule, not after a rule or a box's row."""
    if not nxt.strip() or _RECORD.match(nxt) or _RULE.match(line) or _RULE.match(nxt):
        return False
    if line.rstrip()[-1:] in _BOX_END or nxt.lstrip()[:1] in _BOX_START:
        return False
    lead = _lead(nxt)
    return not lead or lead != _lead(first) and lead not in wrap.starts and not _kin(first, nxt)


def _kin(first: str, nxt: str) -> bool:
    """Whether ``nxt`` starts as ``first`` does in form: ``[Mon Sep 25 ...]``, ``0.00.042.171 I``, ``(w``: the next
    record of the same program, not the rest of this one (a plain word or ``word:`` starts both alike)."""
    form = _form(first)
    if form == _form(nxt) and (form[:1] != "w" or _indent(first) == _indent(nxt) > 0):
        return True  # an indented ``key: value`` after one of the same indent is the next field (rocminfo, lscpu)
    lead = _lead(first)
    return len(lead) >= 4 and any(c.isdigit() for c in lead) and _shape(lead) == _shape(_lead(nxt))


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip())


def _shape(word: str) -> str:
    """A word's runs of letters, digits and each other character: ``0.00.042.171`` is ``9.9.9.9``."""
    out: list[str] = []
    for char in word:
        kind = "a" if char.isalpha() else "9" if char.isdigit() else char
        if not out or out[-1] != kind:
            out.append(kind)
    return "".join(out)


def _word_break(wrap: Wrap, first: str, line: str, nxt: str) -> bool:
    """Whether a word wrap broke ``line`` before ``nxt``: the next word did not fit (a word longer than the
    width is left whole on a line of its own), and ``nxt`` goes on (``_goes_on``)."""
    if not nxt or nxt[0].isspace() or not line.strip():
        return False
    word = len(_FIRST_WORD.match(nxt).group(0))  # type: ignore[union-attr]  # nxt starts with no space
    if len(line) > wrap.width and _spaced(line.strip()):
        return False
    if len(line) < wrap.width - WORD_SLACK and word < wrap.width - WORD_SLACK:
        return False  # short of the width by more than a long word, unless a word as long as a path comes next
    gap = 0 if line.endswith(" ") else 1  # format=flowed and ``fold -s`` keep the space on the line
    return len(line) + gap + word > wrap.width and _goes_on(wrap, first, line, nxt)


def detect(lines: list[str]) -> Wrap | None:
    """The wrap of a paste's lines, or None when they are not hard-wrapped (see the module's docstring)."""
    if len(lines) < 2:
        return None
    head = lines[:DETECT_LINES]
    width = max(map(len, lines))
    stripped = list(map(str.strip, lines))
    holding = map(bool.__or__, map(str.__contains__, stripped, repeat(" ")),
                  map(str.__contains__, stripped, repeat("\t")))  # _spaced of each, in C
    spaced = max(map(len, compress(lines, holding)), default=0)
    return _terminal(head, width) or _word_wrap(head, spaced)


def _spaced(text: str) -> bool:
    """Whether a (stripped) line holds more than one word: a word wrap breaks at a tab as at a space (a table's
    tab-separated row longer than the width is no long word left whole)."""
    return " " in text or "\t" in text


def _terminal(lines: list[str], width: int) -> Wrap | None:
    """A wrap at exactly the longest line's width, if the lines show one. A word wrap whose breaks fell at the width
    (a log of one format wraps its records at the same place) looks the same; joining its lines without the space
    it dropped leaves a word longer, where joining a terminal's with one would cut a word in two."""
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        return None
    if list(map(len, lines)).count(width) < 2:
        return _split_once(lines, width)
    wrap = Wrap(width, True, _starts(_sure_starts(lines, width, True)))
    lengths = list(map(len, lines[:-1]))  # a line followed by another (the lines at a length chosen in C)
    # (a table's row padded with spaces to its width, the next row indented, says nothing)
    full = {lines[i] for i in compress(count(), map(width.__eq__, lengths))
            if _goes_on(wrap, lines[i], lines[i], lines[i + 1]) and not (lines[i].endswith("  ") and lines[i + 1][:1].isspace())}
    if len(full) < MIN_BREAKS and not (len(full) == 2 and _few(lines, width)):
        return None
    # a word wrap at this width ends most of its lines short of it; a terminal's wrap ends none
    words = Wrap(width, False, wrap.starts)
    short = sum(1 for i in compress(count(), map(range(width - WORD_NEAR, width).__contains__, lengths))
                if _word_break(words, lines[i], lines[i], lines[i + 1]))
    return wrap if len(full) > FOLD_RATIO * short else None


def _word_wrap(lines: list[str], spaced: int) -> Wrap | None:
    """A wrap at the spaces, if the lines show one (see the module's docstring); ``spaced`` is the longest line that
    holds a space or a tab (a word wrap leaves a longer word whole, alone on its line)."""
    last = len(lines) - 1
    width = next((w for w in WORD_WIDTHS if w >= spaced), 0)
    if not width or sum(1 for line in lines if len(line) >= width - WORD_NEAR) < 2:
        return None
    starts = _sure_starts(lines, width, False)
    wrap = Wrap(width, False, _starts(starts))
    # lines that end near the width, and a word longer than the width alone on its line with the lines around it
    near = sorted({i for i, line in enumerate(lines) if width - WORD_NEAR <= len(line) <= width}
                  | {j for i, line in enumerate(lines) if len(line) > width for j in (i - 1, i) if j >= 0})
    # A break counts only where the next line does not start as this paste's records do (``key = value`` lines of
    # a config, ``label: value`` lines), although the joining takes it.
    forms = _start_forms(starts)
    breaks = {lines[i] for i in near if i < last and _word_break(wrap, lines[i], lines[i], lines[i + 1])
              and _form(lines[i + 1]) not in forms}
    # (a line followed by an indented or a blank one, or the last, ends where it ends in any paste: it says nothing)
    going = [i for i in near if i < last and lines[i + 1][:1].strip()]
    if len(breaks) >= MIN_BREAKS and len(breaks) >= WORD_SHARE * len(going):
        return wrap
    return None


def _split_once(lines: list[str], width: int) -> Wrap | None:
    """A paste of one or two records, one of them cut once by a terminal: the line ends at a terminal's usual width
    in the middle of a word and the next goes on with it. One such line says nothing in a longer paste."""
    filled = [line for line in lines if line.strip()]
    if len(filled) > SPLIT_ONCE_LINES or width not in TERMINAL_WIDTHS:
        return None
    wrap = Wrap(width, True, frozenset())
    cut = [(line, nxt) for line, nxt in pairwise(lines) if len(line) == width and _goes_on(wrap, line, line, nxt)]
    return wrap if len(cut) == 1 and _mid_word(cut[0][0][-1], cut[0][1][0]) else None


def _mid_word(last: str, first: str) -> bool:
    """Whether a line ending in ``last`` and the next starting with ``first`` read as one word or path cut in two: the
    next line goes on in a lower-case letter, a digit or ``_`` (a new record most often starts with a capital:
    ``Reason:``, ``HIP error``), after a letter or digit of either case or a path's ``/ \\ _ . -``
    (``TensileL|ibrary.dat``, ``rocblas/|library``)."""
    return (first.isdigit() or first == "_" or first.isalpha() and first.islower()) and (last.isalnum() or last in "/\\_.-")


def _few(lines: list[str], width: int) -> bool:
    """A short paste of one record split in three: two full lines in a row, then its end."""
    filled = [line for line in lines if line.strip()]
    return len(filled) <= 4 and any(len(a) == len(b) == width for a, b in pairwise(lines))


def records(lines: list[str], wrap: Wrap) -> list[tuple[int, int]]:
    """Each record as (index of its first line, how many lines it spans), in order."""
    out: list[tuple[int, int]] = []
    index = 0
    joined = min(len(lines), JOIN_LINES)
    while index < len(lines):
        start = index
        while index + 1 < joined and _breaks(wrap, lines[start], lines[index], lines[index + 1]):
            index += 1
        out.append((start, index - start + 1))
        index += 1
    return out


def _breaks(wrap: Wrap, first: str, line: str, nxt: str) -> bool:
    if wrap.exact:
        return len(line) == wrap.width and _goes_on(wrap, first, line, nxt)
    return _word_break(wrap, first, line, nxt)


def _joined(parts: list[str], wrap: Wrap) -> str:
    """A record from its lines: as they are for a mid-word wrap, the dropped space put back for a word wrap."""
    if wrap.exact:
        return "".join(parts)
    return "".join(part if part.endswith(" ") or n == len(parts) - 1 else part + " " for n, part in enumerate(parts))


@dataclass
class Rejoined:
    """A wrapped artifact read as records: ``packed`` has one line per record, ``starts[k]`` is the index of the
    line record ``k`` started on in ``given`` (the artifact as the user sent it)."""

    given: Artifact
    packed: Artifact
    starts: list[int]
    spans: list[int]
    wrap: Wrap


def rejoin(artifact: Artifact) -> Rejoined | None:
    """The artifact's records joined, when it is hard-wrapped; None when it is not (or is binary)."""
    if artifact.data is not None or not artifact.text:
        return None
    lines = artifact.lines
    wrap = detect(lines)
    if wrap is None:
        return None
    spans = records(lines, wrap)
    if all(count == 1 for _, count in spans):
        return None
    packed_lines = [_joined(lines[start:start + count], wrap) for start, count in spans]
    text = "\n".join(packed_lines) + ("\n" if artifact.text.endswith("\n") else "")
    packed = Artifact(name=artifact.name, text=text, size=artifact.size, lines=packed_lines)
    return Rejoined(artifact, packed, [start for start, _ in spans], [count for _, count in spans], wrap)


def spread(rejoined: Rejoined, plain: Artifact) -> Artifact:
    """``plain`` (the packed artifact as parsers read it) put back on the user's line numbers: each record on
    its first line, the lines that continued it empty; ``given`` quotes a record's first line with the lines
    that continue it, as sent, and every other line as sent."""
    given = rejoined.given.lines
    lines = [""] * len(given)
    quoted = list(given)
    for record, (start, count) in enumerate(zip(rejoined.starts, rejoined.spans)):
        lines[start] = plain.lines[record]
        if count > 1:
            quoted[start] = "\n".join(given[start:start + count])
    text = "\n".join(lines) + ("\n" if rejoined.given.text.endswith("\n") else "")
    return Artifact(name=plain.name, text=text, size=plain.size, lines=lines, given=quoted)


def renumber(case: Case, rejoined: Rejoined) -> None:
    """Move every place the parsers recorded in the packed artifact to the user's line of it."""
    name, starts = rejoined.given.name, rejoined.starts

    def where(w: Where) -> Where:
        return Where(name, starts[w.line - 1] + 1) if w.artifact == name and 0 < w.line <= len(starts) else w

    def visit(value: Any) -> Any:
        if isinstance(value, Where):
            return where(value)
        if isinstance(value, list):
            for n, item in enumerate(value):
                value[n] = visit(item)
            return value
        if isinstance(value, tuple):
            return tuple(visit(item) for item in value)
        if isinstance(value, dict):
            for key in list(value):
                value[key] = visit(value[key])
            return value
        if dataclasses.is_dataclass(value) and not isinstance(value, type) and not value.__dataclass_params__.frozen:
            for f in dataclasses.fields(value):
                item = getattr(value, f.name)
                if isinstance(item, (Where, list, tuple, dict)) or dataclasses.is_dataclass(item):
                    setattr(value, f.name, visit(item))
        return value

    for f in dataclasses.fields(case):
        if f.name not in ("artifacts", "claims", "fact_repeats"):
            setattr(case, f.name, visit(getattr(case, f.name)))
    if claimed := case.claims.get(name):
        case.claims[name] = {(starts[line - 1] + 1 if 0 < line <= len(starts) else line): kind
                             for line, kind in claimed.items()}
