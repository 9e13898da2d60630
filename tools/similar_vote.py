"""Would the labelled cases most like a case name its class when no signature does? Measured on the design part
of corpus/realworld, one thread left out at a time.

    python3 tools/similar_vote.py [--k 1 3 5] [--minimum 0.12] [--bar 0.6] [--least 10] [--jobs N]

Every DESIGN case is triaged once and described by the features reports compare cases on
(triage/match/similar.py). Then each case is compared with an index of the design cases of OTHER
threads only (the feature weights worked out from those alone), and its k nearest vote: each
neighbour's label counts its similarity, and `outside-gpu-stack` is a class like the others (a vote
for "no GPU class"). The vote's strength is the winner's summed similarity divided by k, so close
and agreeing neighbours make a strong vote.

A fallback from the vote would answer only where the signatures answer `unknown`, and only with a
GPU class. So what decides is, per strength threshold, the GPU-class votes on the design cases the
signatures leave unknown, at or above it: how many, the share right, and how many would turn a
negative into a GPU class. A threshold qualifies when the share right reaches --bar (the least a
low-confidence answer should be right) with at least --least votes (fewer cannot be trusted). The
same figures over all design cases are printed for comparison: there the signatures' own features
(candidate signatures, top class) carry most of the similarity. Held-out cases are never read.

With the corpus and signatures of December 2026 no threshold qualifies, at any k, and at a minimum
similarity of 0 as well: most unknown cases share no error line with any other case, and those that
do have neighbours of another class. The pipeline has therefore no fallback from similar cases.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import NEGATIVE, Label, design_labels, read_label  # noqa: E402
from triage.match.similar import MINIMUM, Similar, features, index_of, nearest  # noqa: E402

THRESHOLDS = (0.1, 0.2, 0.3, 0.4, 0.5, 0.6)
BANDS = ((0.0, 0.2), (0.2, 0.4), (0.4, 0.6), (0.6, 1.01))


@dataclass(frozen=True)
class Described:
    """One design case as the vote sees it: its label, what the signatures answered, its features."""
    label: Label
    answered: str  # the top class of the tool's own diagnosis
    feats: frozenset[str]

    @property
    def name(self) -> str:
        return self.label.folder.name

    @property
    def thread(self) -> str:
        return self.label.thread


@dataclass(frozen=True)
class Vote:
    """The class the nearest cases name, and how strongly (0-1)."""
    klass: str
    strength: float


def describe(folder: str) -> Described:
    """Triage one labelled case and describe it (run in a worker process)."""
    from triage.pipeline import triage

    result = triage([folder])
    return Described(read_label(Path(folder)), result.top.klass, features(result.case, result.diagnoses))


def design_folders(corpus: Path) -> list[str]:
    """The design part of a real-world corpus: held-out cases are left out by their thread's hash alone."""
    return [str(label.folder) for label in design_labels(corpus)]


def left_out_neighbours(cases: list[Described], shown: int, minimum: float) -> dict[str, list[Similar]]:
    """Each case's nearest cases among those of other threads, the index (and its weights) made without its
    thread: a case never finds itself, nor a case from the same thread."""
    by_thread: dict[str, list[Described]] = defaultdict(list)
    for case in cases:
        by_thread[case.thread].append(case)
    out = {}
    for thread, members in by_thread.items():
        index = index_of(tuple((c.name, c.label.klass, c.label.conclusion, c.label.source, c.feats)
                               for c in cases if c.thread != thread))
        for case in members:
            out[case.name] = nearest(case.feats, index, shown, minimum)
    return out


def vote(neighbours: list[Similar], k: int) -> Vote | None:
    """The similarity-weighted vote of the k nearest (None when there is none); strength is the winner's summed
    similarity over k. A tie goes to the class of the nearer case."""
    nearest_k = neighbours[:k]
    if not nearest_k:
        return None
    weight: dict[str, float] = defaultdict(float)
    for n in nearest_k:
        weight[n.klass] += n.score
    rank = {n.klass: i for i, n in reversed(list(enumerate(nearest_k)))}
    klass = max(weight, key=lambda c: (weight[c], -rank[c]))
    return Vote(klass, round(weight[klass] / k, 3))


def _share(right: int, total: int) -> str:
    return f"{right}/{total} ({100 * right / total:.0f}%)" if total else "0/0"


def report(cases: list[Described], neighbours: dict[str, list[Similar]], ks: list[int], bar: float,
           least: int) -> list[tuple[int, float]]:
    """Print the figures; return the (k, threshold) pairs that qualify."""
    unknown = [c for c in cases if c.answered == "unknown"]
    print(f"{len(cases)} design cases from {len({c.thread for c in cases})} threads; the signatures answer unknown on "
          f"{len(unknown)} ({sum(not c.label.negative for c in unknown)} positives, "
          f"{sum(c.label.negative for c in unknown)} negatives); of those, {sum(not c.feats for c in unknown)} have no "
          f"error line the tool reads (no feature) and {sum(not neighbours[c.name] for c in unknown)} no neighbour at "
          f"the minimum similarity")
    qualifying = []
    for k in ks:
        votes = {c.name: vote(neighbours[c.name], k) for c in cases}
        print(f"\n== k = {k}")
        print("  all design cases, per vote strength (right/votes):  " + ";  ".join(
            f"{low:.1f}-{min(high, 1.0):.1f}: {_share(*_right(cases, votes, low, high))}" for low, high in BANDS))
        print("  GPU-class votes on the unknown cases at or above a strength (right/votes; negatives made GPU)")
        for t in THRESHOLDS:
            gpu = [(c, v) for c in unknown if (v := votes[c.name]) is not None and v.klass != NEGATIVE and v.strength >= t]
            right = sum(c.label.right(v.klass) for c, v in gpu)
            ok = len(gpu) >= least and right >= bar * len(gpu)
            if ok:
                qualifying.append((k, t))
            print(f"    >= {t:.1f}: {_share(right, len(gpu)):<12} {sum(c.label.negative for c, _ in gpu)} negatives"
                  f"{'   qualifies' if ok else ''}")
    print("\nthe unknown design cases: label; votes per k; nearest three (class, similarity)")
    for c in sorted(unknown, key=lambda c: (c.label.negative, c.name)):
        said = ", ".join(f"k={k}: {v.klass} {v.strength:.2f}" if (v := vote(neighbours[c.name], k)) else f"k={k}: -"
                         for k in ks)
        near = ", ".join(f"{n.klass} {n.score:.2f}" for n in neighbours[c.name][:3]) or "none"
        print(f"  {c.name}\n    {c.label.klass}; {said}; {near}")
    return qualifying


def _right(cases: list[Described], votes: dict[str, Vote | None], low: float, high: float) -> tuple[int, int]:
    band = [(c, v) for c in cases if (v := votes[c.name]) is not None and low <= v.strength < high]
    return sum(c.label.right(v.klass) for c, v in band), len(band)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--k", type=int, nargs="+", default=[1, 3, 5], help="how many nearest cases vote")
    parser.add_argument("--minimum", type=float, default=MINIMUM, help="the least similarity of a voting case")
    parser.add_argument("--bar", type=float, default=0.6, help="the share right a threshold must reach")
    parser.add_argument("--least", type=int, default=10, help="the fewest votes a qualifying threshold rests on")
    parser.add_argument("--jobs", type=int, default=None, help="processes (default: all cores)")
    args = parser.parse_args()
    if min(args.k) < 1 or not 0.0 <= args.minimum <= 1.0:
        parser.error("--k must be at least 1 and --minimum between 0 and 1")
    folders = design_folders(ROOT / "corpus" / "realworld")
    if not folders:
        print("no design cases under corpus/realworld", file=sys.stderr)
        return 2
    with ProcessPoolExecutor(args.jobs) as pool:
        cases = list(pool.map(describe, folders, chunksize=8))
    neighbours = left_out_neighbours(cases, max(args.k), args.minimum)
    qualifying = report(cases, neighbours, sorted(set(args.k)), args.bar, args.least)
    print("\nqualifying (k, threshold): " + (", ".join(f"({k}, {t:.1f})" for k, t in qualifying) or
                                            "none: a fallback from similar cases is not supported by the design cases"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
