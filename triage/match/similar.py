"""The labelled real cases that look most like this one, for the support engineer: class, what
the thread concluded, and its link. Shown apart from the diagnosis and never part of it: where no
signature answers, their vote names the right class too rarely to be an answer (measured on the
design cases, each with its own thread left out, by ``python3 tools/similar_vote.py``).

A case is described by features: the templates of its error lines (numbers, addresses and
paths made placeholders), the words of those templates, the signatures that were candidates
and the top class. Two cases are compared by weighted Jaccard similarity, each feature weighted
by how rare it is in the index (a template most cases share says little). The index
(``signatures/similar-cases.json``) is made from corpus/realworld by
``python3 tools/build_similar_index.py``.
"""

from __future__ import annotations

import functools
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

from triage.digest import sha256
from triage.lazy import dataclass, lazy
from triage.match.templates import key_lines, template
from triage.model import Case, Diagnosis
from triage.resources import cache_dir, read_cached, source_key, write_cached

INDEX = "similar-cases.json"
SHOWN = 3
MINIMUM = 0.12  # below this similarity a case is not "similar" at all
_WORD = lazy(r"[A-Za-z_][A-Za-z_]{3,}")
_FEATURE_WEIGHT = {"t": 1.0, "w": 0.25, "s": 1.5, "c": 1.0}  # template, word, signature, class


@dataclass(frozen=True)
class Similar:
    """One labelled case like this one, with its similarity (0-1)."""
    case: str
    klass: str
    conclusion: str
    source: str
    score: float


@dataclass(frozen=True)
class Index:
    """The labelled cases and their features, as ``nearest`` compares against them."""
    cases: tuple[tuple[str, str, str, str, frozenset[str]], ...]  # name, class, conclusion, source, features
    weight: dict[str, float]
    # Worked out at load: each case's summed weight (in the order a sum over its features always took). Which cases
    # hold each feature (``postings``) is worked out in the process: read from the cache, that table cost a warm
    # single triage more than making it does.
    totals: tuple[float, ...] = ()
    heaviest: float = 1.0  # the weight of a feature no case has

    @functools.cached_property
    def postings(self) -> dict[str, tuple[int, ...]]:
        """Each feature -> the cases that hold it, in order: made once a process when first asked (a corpus run asks
        for every case), and not kept in the cache (see ``totals``)."""
        holding: dict[str, list[int]] = {}
        for number, (*_, feats) in enumerate(self.cases):
            for feature in feats:
                holding.setdefault(feature, []).append(number)
        return {feature: tuple(numbers) for feature, numbers in holding.items()}

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k != "postings"}


def features(case: Case, diagnoses: list[Diagnosis]) -> frozenset[str]:
    """What a case is compared on (see the module docstring)."""
    out: set[str] = set()
    for line in key_lines(case):
        shape = template(line)
        out.add(f"t:{shape.lower()}")
        out.update(f"w:{w.lower()}" for w in _WORD.findall(shape))
    out.update(f"s:{d.id}" for d in diagnoses if d.klass != "unknown" and d.score >= 0.2)
    top = diagnoses[0] if diagnoses else None
    if top is not None and top.klass != "unknown":
        out.add(f"c:{top.klass}")
    return frozenset(out)


def make_index(entries: list[tuple[str, str, str, str, frozenset[str]]]) -> dict:
    """The index file's content: the cases and their features (sorted, so that the file is stable)."""
    return {"cases": [{"case": name, "class": klass, "conclusion": conclusion, "source": source,
                       "features": sorted(feats)} for name, klass, conclusion, source, feats in sorted(entries)]}


@functools.cache
def _load(path: Path, stamp: tuple[int, int]) -> Index | None:
    """The index as ``nearest`` reads it, from the per-user cache while the file and this code stay the same
    (reading the JSON and working the weights out took some 5 % of a warm single triage)."""
    folder = cache_dir("similar")
    kept = None
    if folder is not None:
        key = repr((str(path.resolve()), stamp, sys.version_info[:2], source_key("match")))
        kept = folder / f"{sha256(key.encode()).hexdigest()[:32]}.pickle"
        found = read_cached(kept)
        if isinstance(found, Index):
            return found
    index = _build(path)
    if index is not None and kept is not None:
        write_cached(kept, index)
    return index


def _build(path: Path) -> Index | None:
    try:
        import json  # only when the index is not in the cache

        data = json.loads(path.read_text(encoding="utf-8"))
        # Interned: the cases' features and the weights' keys are then the same strings, kept once in the cache.
        cases = tuple((str(c["case"]), str(c["class"]), str(c["conclusion"]), str(c["source"]),
                       frozenset(sys.intern(str(f)) for f in c["features"])) for c in data["cases"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return index_of(cases)


def index_of(cases: tuple[tuple[str, str, str, str, frozenset[str]], ...]) -> Index | None:
    """The index of these cases (name, class, conclusion, source, features), each feature weighted by how rare
    it is among them; None when there are none. tools/similar_vote.py makes one per left-out thread."""
    if not cases:
        return None
    counts = Counter(f for *_, feats in cases for f in feats)
    weight = {f: _FEATURE_WEIGHT.get(f[0], 1.0) * math.log(1 + len(cases) / n) for f, n in counts.items()}
    totals = tuple(sum(weight[f] for f in feats) for *_, feats in cases)
    return Index(cases, weight, totals, max(weight.values(), default=1.0))


def load_index(folder: Path) -> Index | None:
    """The index shipped with the signatures (None when there is none, or it cannot be read)."""
    path = folder / INDEX
    try:
        stat = path.stat()
    except OSError:
        return None
    return _load(path, (stat.st_mtime_ns, stat.st_size))


def nearest(feats: frozenset[str], index: Index | None, shown: int = SHOWN, minimum: float = MINIMUM) -> list[Similar]:
    """The most similar labelled cases, best first, at or above the minimum similarity."""
    if index is None or not feats:
        return []
    default = index.heaviest
    weight_of = {f: index.weight.get(f, default) for f in feats}  # looked up once, then summed by C-level maps
    mine = sum(weight_of.values())
    about: defaultdict[int, float] = defaultdict(float)  # each case sharing a feature -> the weight shared, summed
    postings = index.postings
    for feature, weight in weight_of.items():
        for number in postings.get(feature, ()):
            about[number] += weight
    scored = []
    for number in sorted(about):
        if about[number] / (mine + index.totals[number] - about[number]) < minimum - 1e-9:
            continue
        # summed again as it always was: the sums' order decides a score's last bits, and so its rounding
        name, klass, conclusion, source, theirs = index.cases[number]
        shared = sum(map(weight_of.__getitem__, feats & theirs))
        score = shared / (mine + index.totals[number] - shared)
        if score >= minimum:
            scored.append(Similar(name, klass, conclusion, source, round(score, 2)))
    scored.sort(key=lambda s: (-s.score, s.case))
    return scored[:shown]
