"""Evaluate one signature condition against a Case: did it hold, on which lines, with what captures.

Evidence from machine output counts in full. A line that no parser claimed and that reads
like a sentence (a user retelling an error in prose, or saying it is gone) counts half.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from itertools import repeat

import regex

from triage.match.database import Condition, Prefilters
from triage.model import Artifact, Case, Evidence, OffloadTargets, Where
from triage.scan.scanner import LineScanner

PROSE_FACTOR = 0.5
MAX_EVIDENCE = 3

_WORD = re.compile(r"[A-Za-z][a-z']+")
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have i in is it its my no not of on or so that the this to "
    "was were which with without we you instead because when then also only still".split()
)
_MACHINE_MARK = re.compile(
    r"^\s*[\w.\[\]-]+:\s|^\W*[\w.]+ (?:error|warning)\s*:|\b(?:hip|hsa|cuda)Error[A-Z]\w*|HSA_STATUS_\w+"
    r"|[/\\][\w.-]+[/\\]|0x[0-9a-fA-F]{4,}|=>|\b[A-Z_]{4,}="
)


def is_prose(text: str) -> bool:
    """A sentence a person wrote, as opposed to a line a program printed."""
    words = _WORD.findall(text)
    if len(words) < 8 or _MACHINE_MARK.search(text):
        return False
    return sum(1 for w in words if w.lower() in _STOPWORDS) * 4 >= len(words)


@dataclass
class Hit:
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
        self._prefilters = prefilters
        # per group, when first asked: pattern -> (artifact, line index) of each candidate line, in input order
        self._candidates: list[dict[int, list[tuple[Artifact, int]]] | None] = [None] * len(prefilters.groups)

    def _read(self, scanner: LineScanner, places: Sequence[tuple[int, int]]) -> None:
        """Scan every artifact; pattern ``i`` of the scanner is pattern ``places[i]`` of its group."""
        for artifact in self.case.artifacts:
            if artifact.lines:
                for index, lines in enumerate(scanner.scan(artifact.lines, artifact.text)):
                    if lines:
                        group, pattern = places[index]
                        self._candidates[group].setdefault(pattern, []).extend(zip(repeat(artifact), lines))  # type: ignore[union-attr]

    def _group(self, group: int) -> dict[int, list[tuple[Artifact, int]]]:
        """A group's candidates, pattern -> lines (its scanner reads every artifact the first time)."""
        found = self._candidates[group]
        if found is None:
            found = self._candidates[group] = {}
            scanner = self._prefilters.groups[group]
            self._read(scanner, [(group, i) for i in range(len(scanner.patterns))])
        return found

    def candidates(self, scan: tuple[int, int]) -> list[tuple[Artifact, int]]:
        """The candidate lines of a condition's pattern."""
        group, pattern = scan
        return self._group(group).get(pattern, [])

    def read_together(self) -> None:
        """Read every signature's other log conditions in one pass (many signatures are candidates)."""
        unread = [g for g in range(1, len(self._candidates)) if self._candidates[g] is None]
        for group in unread:
            self._candidates[group] = {}
        if unread:
            self._read(self._prefilters.together, self._prefilters.places)

    def anchored(self) -> set[int]:
        """The patterns of the anchors' group (the first) with a candidate line."""
        return set(self._group(0))

    def of(self, scan: tuple[int, int]) -> Iterator[tuple[Where, str]]:
        """The non-blank candidate lines of a condition's pattern and where they are."""
        for artifact, index in self.candidates(scan):
            text = artifact.lines[index]
            if text.strip():
                yield Where(artifact.name, index + 1), text

    def weight(self, where: Where, text: str) -> float:
        return 1.0 if self.case.kind_of(where) or not is_prose(text) else PROSE_FACTOR

    def line(self, where: Where) -> str:
        lines = self.by_name.get(where.artifact, [])
        return lines[where.line - 1] if 0 < where.line <= len(lines) else ""

    def evidence(self, where: Where, condition: str) -> Evidence:
        return Evidence(where.artifact, where.line, self.line(where).strip(), condition)


def evaluate(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    return _KINDS[cond.kind](cond, case, lines)


def _log(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    if not lines.candidates(cond.scan):
        return None
    pattern = cond.pattern("log")
    found: list[tuple[float, Where, regex.Match]] = []
    for where, text in lines.of(cond.scan):
        if m := pattern.search(text):
            found.append((lines.weight(where, text), where, m))
    if not found:
        return None
    found.sort(key=lambda f: (-f[0], case.kind_of(f[1]) is None))
    best_weight, _, best = found[0]
    captures = {k: v for k, v in best.groupdict().items() if v is not None}
    evidence = [lines.evidence(w, cond.id) for _, w, _ in found[:MAX_EVIDENCE]]
    return Hit(best_weight, evidence, captures)


def _frame(cond: Condition, case: Case, lines: Lines) -> Hit | None:
    spec = cond.spec
    within = int(spec.get("within", 10))
    symbol, module = cond.pattern("symbol"), cond.pattern("module")
    for stack in case.stacks:
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
    fact = case.fact(str(cond.spec["name"]))
    if fact is None:
        return None
    if "equals" in cond.spec and fact.value != str(cond.spec["equals"]):
        return None
    if "matches" in cond.sources and not cond.pattern("matches").search(fact.value):
        return None
    return Hit(1.0, [lines.evidence(fact.where, cond.id)], {cond.spec["name"]: fact.value})


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
    arch = case.value("gfx_arch")
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


_KINDS = {"log": _log, "frame": _frame, "fault": _fault, "fact": _fact, "binary": _binary, "listing": _listing}
