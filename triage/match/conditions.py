"""Evaluate one signature condition against a Case: did it hold, on which lines, with what captures.

Evidence from machine output counts in full. A line that no parser claimed and that reads
like a sentence (a user retelling an error in prose, or saying it is gone) counts half.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Sequence
from dataclasses import field
from itertools import accumulate, compress
from operator import not_
from typing import TYPE_CHECKING

from triage import deadline
from triage.derive.tables import version_tuple
from triage.lazy import dataclass
from triage.match.database import Condition, Prefilters, SignatureError
from triage.model import Artifact, Case, Evidence, OffloadTargets, Where
from triage.parsers.lines import is_prose
from triage.scan.scanner import LineScanner

if TYPE_CHECKING:
    import regex

PROSE_FACTOR = 0.5
LINE_S = 2.0  # the most one regex may take on one line
# A line is matched on its first this many characters: a longer "line" is a data dump (a base64 blob, a
# minified file), and a message worth quoting starts well before its end.
MATCH_CHARS = 16_384
MAX_EVIDENCE = 3
# Signatures' own groups of log conditions read one pass each before the rest are read in one pass of them all
# (when Hyperscan reads that pass: see Lines._together_pays); the engine reads it at once past this many candidates
# with such groups. Trying a signature reads only the anchors' scanner, so a group is read for a candidate (or an
# anchor whose needed line was found) only, and a case has a few. 100
# synthetic 90 KB cases in one process took 1.17 s so, 1.39 s when the one pass came from the second group on.
SEPARATE_READS = 6
# Past this many characters of input the groups are read one by one again: one pass of them all keeps every group's
# candidate lines at once, which on a long log of lines that many patterns' literals hit (190,000 gdb frames in a
# ROCm library) doubled the peak memory, and there the passes' cost is no longer the part that matters.
TOGETHER_MAX_CHARS = 4 << 20

@dataclass
class Hit:
    """How far a condition holds on a case, with the evidence that says so and the values it captured."""
    factor: float
    evidence: list[Evidence] = field(default_factory=list)
    captures: dict[str, str] = field(default_factory=dict)


class Lines:
    """The case's lines, and the lines each log pattern may match.

    Each artifact is scanned once for all patterns (triage/scan/); how much a line weighs as
    evidence is worked out only for the lines that matched something.
    """

    def __init__(self, case: Case, prefilters: Prefilters) -> None:
        self.case = case
        self.by_name = {artifact.name: artifact.lines for artifact in case.artifacts}
        # what evidence quotes: the lines as the user sent them
        self.given = {artifact.name: artifact.given or artifact.lines for artifact in case.artifacts}
        self._prefilters = prefilters
        # per group, when first asked: pattern -> its candidate lines, in input order, as runs of one artifact's line
        # indexes (a compact array: a pattern whose literal is on every line of a large log keeps 8 bytes a line)
        self._candidates: list[dict[int, list[tuple[Artifact, array]]] | None] = [None] * len(prefilters.groups)
        self._separate = 0  # signatures' own groups read one by one so far
        self._together: bool | None = None  # whether the rest are read in one pass (see _together_pays)
        self._joined: list[tuple[list[str], str, list[int], list[Artifact]]] | None = None  # see _texts

    def _texts(self) -> list[tuple[list[str], str, list[int], list[Artifact]]]:
        """What the scanners read, made once: the artifacts' lines as one text (a scan's cost is much per text:
        the Python way's search for each literal, a call into Hyperscan), each with the first line of each of its
        artifacts; past ``TOGETHER_MAX_CHARS`` each artifact apart, so that a large input is not copied."""
        if self._joined is None:
            readable = [artifact for artifact in self.case.artifacts if artifact.lines]
            if len(readable) > 1 and sum(len(artifact.text) for artifact in readable) <= TOGETHER_MAX_CHARS:
                lines = [line for artifact in readable for line in artifact.lines]
                starts = list(accumulate((len(artifact.lines) for artifact in readable[:-1]), initial=0))
                self._joined = [(lines, "\n".join(lines), starts, readable)]
            else:
                self._joined = [(artifact.lines, artifact.text, [0], [artifact]) for artifact in readable]
        return self._joined

    def _read(self, scanner: LineScanner, places: Sequence[tuple[int, int]] | None, groups: set[int]) -> None:
        """Scan every artifact; pattern ``i`` of the scanner is pattern ``places[i]`` of its group (None: pattern
        ``i`` of the one group given, without a list of its thousand places made on every read). Only the given
        groups take what was found (a group read before keeps its lines, not a second copy of them)."""
        own = next(iter(groups)) if places is None else -1
        for lines, text, starts, artifacts in self._texts():
            for index, found in enumerate(scanner.scan(lines, text)):
                if found:
                    group, pattern = (own, index) if places is None else places[index]
                    if group in groups:
                        into = self._candidates[group].setdefault(pattern, [])  # type: ignore[union-attr]
                        # the joined text's lines back to their artifacts and their lines there (found is sorted)
                        bounds = [bisect_left(found, start) for start in starts] + [len(found)]
                        for at, artifact in enumerate(artifacts):
                            if bounds[at] < bounds[at + 1]:
                                into.append((artifact, array("q", (line - starts[at] for line in found[bounds[at]:bounds[at + 1]]))
                                             if starts[at] else array("q", found[bounds[at]:bounds[at + 1]])))

    def _group(self, group: int) -> dict[int, list[tuple[Artifact, array]]]:
        """A group's candidates, pattern -> lines (its scanner reads every artifact the first time)."""
        found = self._candidates[group]
        if found is None and group and self._separate >= SEPARATE_READS and self._together_pays():
            self.read_together()
            found = self._candidates[group]
        if found is None:
            self._separate += group > 0
            found = self._candidates[group] = {}
            scanner = self._prefilters.groups[group]
            self._read(scanner, None, {group})
        return found

    def _together_pays(self) -> bool:
        """Past ``SEPARATE_READS`` signatures' own groups (read for candidates, and for anchors whose needed line was
        found), whether one pass of them all costs less than a pass each: when Hyperscan reads them in one pass.
        The Python way looks for each group's literals, so there one pass of all costs what the passes do (and a
        single small triage would pay for the literals of them all)."""
        if self._together is None:
            size = sum(len(artifact.text or "") for artifact in self.case.artifacts)
            self._together = size <= TOGETHER_MAX_CHARS and self._prefilters.together.hyperscan_ready(size)
        return self._together

    def candidates(self, scan: tuple[int, int]) -> list[tuple[Artifact, array]]:
        """The candidate lines of a condition's pattern: runs of one artifact's line indexes (none: empty)."""
        group, pattern = scan
        return self._group(group).get(pattern, [])

    def read_together(self) -> None:
        """Read every signature's other log conditions in one pass (many signatures are candidates), when that pays
        (``_together_pays``); else each group is read when first needed."""
        if not self._together_pays():
            return
        unread = [g for g in range(1, len(self._candidates)) if self._candidates[g] is None]
        for group in unread:
            self._candidates[group] = {}
        if unread:
            self._read(self._prefilters.together, self._prefilters.places, set(unread))

    def anchored(self) -> set[int]:
        """The patterns of the anchors' group (the first) with a candidate line."""
        return set(self._group(0))

    def of(self, scan: tuple[int, int]) -> Iterator[tuple[Where, str]]:
        """The non-blank candidate lines of a condition's pattern and where they are."""
        for artifact, indexes in self.candidates(scan):
            for index in indexes:
                text = artifact.lines[index]
                if text.strip():
                    yield Where(artifact.name, index + 1), text

    def weight(self, where: Where, text: str, span: tuple[int, int] | None = None) -> float:
        """Full weight for a program's line, less for a person's sentence; a sentence-worded line that came
        with a logger's prefix (``ERROR:app.module:...``, cut by the wrappers) was a program's all the same, and
        so is what a sentence quotes (``I get "hipErrorNoBinaryForGpu" when...``: the match inside the quotes)."""
        if self.case.kind_of(where) or not is_prose(text):
            return 1.0
        if span is not None and quoted(text, *span):
            return 1.0
        given = _nth(self.given.get(where.artifact, []), where.line)
        return 1.0 if given and given != text and not is_prose(given) else PROSE_FACTOR

    def line(self, where: Where) -> str:
        return _nth(self.by_name.get(where.artifact, []), where.line)

    def evidence(self, where: Where, condition: str) -> Evidence:
        """The line quoted as the user sent it (a collector's prefix included)."""
        text = _nth(self.given.get(where.artifact, []), where.line)
        return Evidence(where.artifact, where.line, text.strip(), condition)


# Quotes a person puts around what a program printed; a straight single quote is an apostrophe as often.
_QUOTE_PAIRS = (('"', '"'), ("`", "`"), ("\u201c", "\u201d"), ("\u00ab", "\u00bb"), ("\u300c", "\u300d"))


def quoted(text: str, start: int, end: int) -> bool:
    """Whether text[start:end] lies inside one pair of quotes (or backticks) of the line."""
    for opening, closing in _QUOTE_PAIRS:
        if closing in text[start:end] or opening in text[start:end]:
            continue
        if opening == closing:
            inside = text.count(opening, 0, start) % 2 == 1
        else:
            before = text.rfind(opening, 0, start)
            inside = before >= 0 and text.find(closing, before + 1, start) < 0
        if inside and text.find(closing, end) >= 0:
            return True
    return False


def _nth(lines: Sequence[str], number: int) -> str:
    """Line ``number`` (1-based), or "" for one the text does not have."""
    return lines[number - 1] if 0 < number <= len(lines) else ""


def evaluate(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    return _KINDS[cond.kind](cond, case, lines)


def _search(pattern: regex.Pattern, text: str, cond: Condition, case: Case, where: Where) -> regex.Match | None:
    """The pattern's first match on the line's first MATCH_CHARS characters (None past LINE_S: a warning says so)."""
    try:
        return pattern.search(text, 0, MATCH_CHARS, timeout=min(deadline.left(), LINE_S))
    except TimeoutError:
        deadline.check("matching")  # the analysis's time is up; else this line is pathological for the regex
        case.warnings.append(f"condition {cond.id}: its regex ran over {LINE_S:.0f} s on {where.artifact} line "
                             f"{where.line}; that line was skipped")
        return None


class _Followers:
    """A two-line log condition's ``then`` lines: the first line after a given one, within ``cond.within``, that the
    ``then`` regex matches. Each line is searched once however many first lines it follows (the first lines come in
    input order, so only the last window's verdicts are kept): the cost is one search a line at most in each of the
    two runs ``_log`` reads lines in (those a parser claimed, then the others)."""

    def __init__(self, cond: Condition, case: Case, lines: Lines) -> None:
        self.cond, self.case, self.lines = cond, case, lines
        self.pattern = cond.pattern("then")
        self.artifact = ""
        self.seen: dict[int, regex.Match | None] = {}

    def after(self, where: Where) -> tuple[Where, str, regex.Match] | None:
        if where.artifact != self.artifact:
            self.artifact, self.seen = where.artifact, {}
        else:
            self.seen = {n: m for n, m in self.seen.items() if n > where.line}
        text_of = self.lines.by_name.get(where.artifact, [])
        for number in range(where.line + 1, min(where.line + self.cond.within, len(text_of)) + 1):
            text = text_of[number - 1]
            if number not in self.seen:
                self.seen[number] = (self.pattern and text.strip()
                                     and _search(self.pattern, text, self.cond, self.case, Where(where.artifact, number))
                                     ) or None
            if found := self.seen[number]:
                return Where(where.artifact, number), text, found
        return None


def _log(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    """A line the pattern matches; with ``then``, and a line within ``within`` after it that the ``then`` pattern
    matches (both quoted; the pair weighs what its lighter line does)."""
    if not lines.candidates(cond.scan):
        return None
    pattern = cond.pattern("log")
    followers = _Followers(cond, case, lines) if "then" in cond.sources else None
    found: list[tuple[float, Where, regex.Match, tuple[Where, str, regex.Match] | None]] = []
    # The lines sort by weight, then those a parser claimed first, then in input order; they are read in the order of
    # the last two keys, so once MAX_EVIDENCE lines of full weight (the most a line weighs) are found, no line after
    # them can sort before them, and the rest is not read (a log that repeats its error a thousand times)
    candidates = list(lines.of(cond.scan))
    claimed = [case.kind_of(where) is not None for where, _ in candidates]
    full = 0
    for where, text in [*compress(candidates, claimed), *compress(candidates, map(not_, claimed))]:
        m = _search(pattern, text, cond, case, where)
        if not m:
            continue
        weight = lines.weight(where, text, m.span())
        then = None
        if followers is not None:
            if (then := followers.after(where)) is None:
                continue
            weight = min(weight, lines.weight(then[0], then[1], then[2].span()))
        found.append((weight, where, m, then))
        full += weight >= 1.0
        if full == MAX_EVIDENCE:
            break
    if not found:
        return None
    found.sort(key=lambda f: -f[0])  # stable: among equal weights, in the order read
    best_weight, _, best, best_then = found[0]
    captures = {k: v for k, v in best.groupdict().items() if v is not None}
    if best_then is not None:
        captures = {k: v for k, v in best_then[2].groupdict().items() if v is not None} | captures
    if followers is None:
        evidence = [lines.evidence(w, cond.id) for _, w, _, _ in found[:MAX_EVIDENCE]]
    else:  # both lines of each pair, the best pair's first
        wheres = [w for _, first, _, then in found[:MAX_EVIDENCE] for w in (first, then[0])]  # type: ignore[index]
        evidence = [lines.evidence(w, cond.id) for w in list(dict.fromkeys(wheres))[:MAX_EVIDENCE + 1]]
    return Hit(best_weight, evidence, captures)


# Which stacks a frame condition reads: every thread's (a frame anywhere shows the code was reached), or only the
# crashing thread's (the one the parsers or the fault marked; a case with none marked has none).
FRAME_STACKS = ("any", "crashing")


def _frame(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    spec = cond.spec
    within = int(spec.get("within", 10))
    symbol, module = cond.pattern("symbol"), cond.pattern("module")
    which = str(spec.get("stack", "any"))
    if which not in FRAME_STACKS:
        raise SignatureError(f"condition {cond.id}: frame stack {which!r} is not one of {', '.join(FRAME_STACKS)}")
    for stack in case.stacks:
        if which == "crashing" and not stack.crashing:
            continue
        for position, frame in enumerate(stack.frames[:within]):
            if symbol and (not frame.symbol or (frame.symbol_note or "").startswith("unreliable")
                           or not symbol.search(frame.symbol)):
                continue
            if module and not (frame.module and module.search(frame.module)):
                continue
            prefix = str(spec.get("capture", "frame"))
            captures = {f"{prefix}_symbol": frame.symbol or "", f"{prefix}_module": frame.module or "",
                        f"{prefix}_position": str(position)}
            return Hit(1.0, [lines.evidence(frame.where, cond.id)], captures)
    return None


def _fault(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    fault, spec = case.fault, cond.spec
    if fault is None:
        return None
    if "kind" in spec and fault.kind != spec["kind"]:
        return None
    if "signal" in spec and fault.signal not in _as_list(spec["signal"]):
        return None
    if "code" in spec and (fault.code or "").upper() not in [str(c).upper() for c in _as_list(spec["code"])]:
        return None
    if "module" in cond.sources and not (fault.module and cond.pattern("module").search(fault.module)):
        return None
    if "address_below" in spec and (fault.address is None or fault.address >= int(spec["address_below"])):
        return None
    if "instruction" in cond.sources and not (fault.instruction and cond.pattern("instruction").search(fault.instruction)):
        return None
    evidence = [lines.evidence(w, cond.id) for w in dict.fromkeys(fault.evidence)]
    return Hit(1.0, evidence[:MAX_EVIDENCE + 1])


def _fact(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    spec, name = cond.spec, str(cond.spec["name"])
    fact = case.fact(name)
    if spec.get("absent"):
        return Hit(1.0) if fact is None else None
    if fact is None:
        return None
    if "equals" in spec and fact.value != str(spec["equals"]):
        return None
    if "in" in spec and fact.value not in [str(v) for v in _as_list(spec["in"])]:
        return None
    if "matches" in cond.sources and not cond.pattern("matches").search(fact.value):
        return None
    if "count_at_least" in spec:
        values = list(dict.fromkeys(f.value for f in case.facts.get(name, [])))
        if len(values) < int(spec["count_at_least"]):
            return None
        wheres = list(dict.fromkeys(f.where for f in case.facts[name]))
        return Hit(1.0, [lines.evidence(w, cond.id) for w in wheres[:MAX_EVIDENCE]], {name: ", ".join(values)})
    return Hit(1.0, [lines.evidence(fact.where, cond.id)], {name: fact.value})


def _ordered(a: str, b: str, how: str) -> int | None:
    """-1, 0 or 1 as ``a`` is below, equal to or above ``b``; None when they cannot be compared that way."""
    if how == "text":
        return (a > b) - (a < b)
    ta, tb = version_tuple(a), version_tuple(b)
    if not ta or not tb:
        return None
    if how == "release":  # major.minor; a bare major agrees with every minor of it
        n = min(len(ta), len(tb), 2)
        ta, tb = ta[:n], tb[:n]
    return (ta > tb) - (ta < tb)


_OPS = {"eq": (0,), "ne": (-1, 1), "lt": (-1,), "le": (-1, 0), "gt": (1,), "ge": (0, 1)}


def _compare(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    spec = cond.spec
    left = case.fact(str(spec["left"]))
    right = case.fact(str(spec["right"])) if "right" in spec else None
    if left is None or (right is None and "value" not in spec):
        return None
    other = right.value if right else str(spec["value"])
    order = _ordered(left.value, other, str(spec.get("as", "text")))
    if order is None or order not in _OPS[str(spec["op"])]:
        return None
    wheres = [left.where] + ([right.where] if right and right.where != left.where else [])
    captures = {str(spec["left"]): left.value} | ({str(spec["right"]): right.value} if right else {})
    return Hit(1.0, [lines.evidence(w, cond.id) for w in wheres], captures)


def _all_of(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    hits = []
    for part in cond.children:
        hit = evaluate(part, case, lines)
        if hit is None:
            return None
        hits.append(hit)
    evidence = list({(e.artifact, e.line): e for h in hits for e in h.evidence}.values())
    captures = {k: v for h in hits for k, v in h.captures.items()}
    return Hit(min(h.factor for h in hits), evidence[:MAX_EVIDENCE + 1], captures)


def _any_of(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    return next((hit for part in cond.children if (hit := evaluate(part, case, lines))), None)


def _not(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    return None if evaluate(cond.children[0], case, lines) else Hit(1.0)


def _with_arch(block: OffloadTargets, arch: str) -> int:
    """How many bundles of a binary have a code object the GPU can load (its own processor, any
    feature variant, or a generic target that covers it)."""
    from triage.inspect.targets import GENERIC

    covering = {arch} | {g for g, members in GENERIC.items() if arch in members}
    if block.sets:
        return sum(1 for _, targets in block.sets if any(t.split(":")[0] in covering for t in targets))
    return max((n for t, n in block.targets.items() if t.split(":")[0] in covering), default=0)


def _faulting_modules(case: Case) -> set[str]:
    """File names of the modules on the stacks and of the fault's module."""
    names = {f.module for s in case.stacks for f in s.frames if f.module}
    if case.fault and case.fault.module:
        names.add(case.fault.module)
    return {n.replace("\\", "/").rsplit("/", 1)[-1] for n in names}


def _binary(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    """``gpu-arch-missing``: the GPU's arch is absent from at least one offload bundle of a binary;
    ``gpu-arch-missing-in-stack``: and that binary is a module on the crashing stack."""
    arch = case.value("gfx_arch_real")  # the GPU's own arch (derive/gpu.py), not a gfx name in passing
    if cond.spec not in ("gpu-arch-missing", "gpu-arch-missing-in-stack") or not arch:
        return None
    on_stack = _faulting_modules(case) if cond.spec == "gpu-arch-missing-in-stack" else set()
    for block in case.offload:
        if not block.targets or (cond.spec == "gpu-arch-missing-in-stack" and block.binary not in on_stack):
            continue
        counts = {t.split(":")[0]: n for t, n in block.targets.items()}
        bundles = block.bundles or max(counts.values())
        with_arch = _with_arch(block, arch)
        if with_arch >= bundles:
            continue
        typical = max(counts.values())
        outliers = sorted((t for t, n in counts.items() if n < typical and t != arch), key=counts.get)
        captures = {"gfx_arch": arch, "bundles": str(bundles), "bundles_with_arch": str(with_arch),
                    "bundles_without_arch": str(bundles - with_arch),
                    "outlier_targets": ", ".join(f"{t} ({counts[t]} bundle{'s' * (counts[t] != 1)})" for t in outliers)}
        if block.binary:
            captures["binary"] = block.binary
        offload = [Where(block.where.artifact, n) for n, kind in sorted(case.claims.get(block.where.artifact, {}).items())
                   if kind == "offload"]
        evidence = [lines.evidence(w, cond.id) for w in offload
                    if arch in lines.line(w) or any(t in lines.line(w) for t in outliers) or "BUNDLE" in lines.line(w)]
        if block.where.line == 0:  # read from the binary itself: quote the inspector's finding
            evidence = [Evidence(block.where.artifact, 0, f"{with_arch} of {bundles} offload bundles carry code "
                                 f"for {arch}", cond.id)]
        return Hit(1.0, evidence[:MAX_EVIDENCE + 1] or [lines.evidence(block.where, cond.id)], captures)
    return None


def _listing(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    has, lacks = cond.pattern("has"), cond.pattern("lacks")
    by_artifact: dict[str, list[tuple[Where, str]]] = {}
    for where, name in case.files_listed:
        by_artifact.setdefault(where.artifact, []).append((where, name))
    for entries in by_artifact.values():
        hits = [w for w, name in entries if has is None or has.search(name)]
        if not hits or (lacks and any(lacks.search(name) for _, name in entries)):
            continue
        return Hit(1.0, [lines.evidence(w, cond.id) for w in dict.fromkeys(hits)][:MAX_EVIDENCE])
    return None


def _as_list(value: object) -> list:
    return value if isinstance(value, list) else [value]


_KINDS = {"log": _log, "frame": _frame, "fault": _fault, "fact": _fact, "compare": _compare, "binary": _binary,
          "listing": _listing, "all_of": _all_of, "any_of": _any_of, "not": _not}
