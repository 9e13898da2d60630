"""How much of what the tool names right hangs on one signature: the design positives matched again without it.

    python3 tools/ablation.py [--corpus DIR | --fixtures] [--jobs N] [--json] [--list]

Every positive case of the design part that the tool names right is matched twice more:

- ``top``: without the signature that gave the top answer;
- ``class``: without every specific (not ``fallback: true``) signature of the top answer's class that
  held on the case, so that only that class's fallbacks, or another class, can answer.

Per class it prints how many are still right (another signature or a fallback of the class catches
them), how many become ``unknown`` and how many become wrong. A class whose cases all hang on one
specific signature each will miss the next user's wording of the same failure; this shows it from
design cases alone. ``--list`` names the cases that the ``class`` run loses, with the signature each
hung on. Held-out cases are never matched here. ``--fixtures`` does the same on the failure-wording
fixtures (tests/fixtures/failure-wordings, each with the class its index gives; those indexed
``unknown`` or ``outside-gpu-stack`` are not positives and are left out): more than a thousand real
wordings, so a class's fallback coverage is measured on many more apps and releases than the design part has.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import Label, design_labels, read_label  # noqa: E402
from triage.match import Database, match  # noqa: E402
from triage.model import Case  # noqa: E402

RUNS = ("top", "class")
OUTCOMES = ("right", "unknown", "wrong")


@dataclass(frozen=True)
class Answer:
    """The top answer of one run: its class and signature, and whether it was a class-level fallback."""
    klass: str
    signature: str
    fallback: bool = False


@dataclass(frozen=True)
class Ablation:
    """One case the tool names right, and what it answers once the signatures that named it are left out."""
    case: str
    label: str
    answer: Answer  # with every signature
    left_out: dict[str, tuple[str, ...]]  # run -> the signatures left out
    without: dict[str, Answer]  # run -> the answer without them


def outcome(label: Label, answer: Answer) -> str:
    """right, unknown or wrong, as tools/accuracy.py counts a positive."""
    if label.right(answer.klass):
        return "right"
    return "unknown" if answer.klass == "unknown" else "wrong"


def _top(case: Case, db: Database) -> tuple[Answer, list[tuple[str, str]]]:
    """The top answer of ``db`` on ``case``, and every candidate's (signature, class)."""
    diagnoses = match(case, db)
    fallbacks = {sig.id for sig in db.signatures if sig.fallback}
    top = diagnoses[0]
    return Answer(top.klass, top.id, top.id in fallbacks), [(d.id, d.klass) for d in diagnoses if d.id != "unknown"]


def ablate(case: Case, label: Label, db: Database) -> Ablation | None:
    """Match a parsed and derived case with every signature, then without its top one and without its top
    class's specific ones; None when the full database does not name it right (nothing to take away)."""
    answer, found = _top(case, db)
    if outcome(label, answer) != "right":
        return None
    fallbacks = {sig.id for sig in db.signatures if sig.fallback}
    left_out = {
        "top": (answer.signature,),
        "class": tuple(sig for sig, klass in found if klass == answer.klass and sig not in fallbacks),
    }
    without = {run: _top(case, db.without(ids))[0] for run, ids in left_out.items()}
    return Ablation(str(label.folder.name), label.klass, answer, left_out, without)


FIXTURES = ROOT / "tests" / "fixtures" / "failure-wordings"
NOT_POSITIVE = ("unknown", "outside-gpu-stack")


def _run(path: str, klass: str | None = None) -> Ablation | None:
    """Parse, symbolize and derive one case folder (or one fixture file of class ``klass``) as a triage
    does, then ablate it."""
    from triage.ingest import read_inputs
    from triage.match import load
    from triage.pipeline import analyze
    from triage.resources import data_dir

    signatures = data_dir("signatures")
    db = load(signatures)
    artifacts, warnings = read_inputs([path])
    case = analyze(artifacts, db, signatures, warnings).case
    label = read_label(Path(path)) if klass is None else fixture_label(Path(path), klass)
    return ablate(case, label, db)


def fixture_label(path: Path, klass: str) -> Label:
    """A fixture's index row as a label: the class must be named exactly."""
    return Label(path, klass, "", "", "", "", "yes")


def fixture_positives(folder: Path = FIXTURES) -> list[tuple[Path, str]]:
    """(file, class) of every fixture whose index row names a GPU-stack class."""
    rows = []
    for line in (folder / "index.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, klass, _source = line.split("\t")
            if klass not in NOT_POSITIVE:
                rows.append((folder / name, klass))
    return rows


def design_positives(corpus: Path) -> list[Label]:
    """The positive cases of the design part (the split of triage/corpus/labels.py)."""
    return [label for label in design_labels(corpus) if not label.negative]


def tally(results: list[Ablation], labels: dict[str, Label]) -> dict[str, dict[str, Counter]]:
    """class -> run -> outcome counts (and ``fallback``: right by a class-level fallback)."""
    table: dict[str, dict[str, Counter]] = {}
    for r in results:
        row = table.setdefault(r.label, {run: Counter() for run in RUNS})
        for run in RUNS:
            got = r.without[run]
            said = outcome(labels[r.case], got)
            row[run][said] += 1
            row[run]["fallback"] += said == "right" and got.fallback
    return dict(sorted(table.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus" / "realworld")
    parser.add_argument("--jobs", type=int, default=None, help="processes (default: all cores)")
    parser.add_argument("--fixtures", action="store_true",
                        help="the failure-wording fixtures instead of the design part of the corpus")
    parser.add_argument("--json", action="store_true", help="every ablated case as JSON")
    parser.add_argument("--list", action="store_true", help="the cases the class run loses, and what they hung on")
    args = parser.parse_args()
    if args.fixtures:
        work = [(str(path), klass) for path, klass in fixture_positives()]
        labels = {Path(path).name: fixture_label(Path(path), klass) for path, klass in work}
        what = "failure-wording fixtures"
    else:
        if not args.corpus.is_dir():
            parser.error(f"no corpus folder {args.corpus}")
        positives = design_positives(args.corpus)
        labels = {label.folder.name: label for label in positives}
        work = [(str(label.folder), None) for label in positives]
        what = "design positives"
    with ProcessPoolExecutor(args.jobs) as pool:
        paths, classes = [path for path, _ in work], [klass for _, klass in work]
        results = [r for r in pool.map(_run, paths, classes, chunksize=4) if r]
    if args.json:
        print(json.dumps([asdict(r) for r in results], indent=1))
        return 0
    table = tally(results, labels)
    print(f"{len(results)} of {len(work)} {what} right with every signature; still right, unknown, wrong without")
    print(f"  {'':26} {'the top signature':>26}   {'the class specific ones':>32}")
    print(f"  {'class':<26} {'cases':>5} {'right':>7} {'unknown':>8} {'wrong':>6}   "
          f"{'right (fallback)':>17} {'unknown':>8} {'wrong':>6}")
    total = {run: Counter() for run in RUNS}
    for klass, row in table.items():
        top, cls = row["top"], row["class"]
        for run in RUNS:
            total[run].update(row[run])
        print(f"  {klass:<26} {sum(top[o] for o in OUTCOMES):>5} {top['right']:>7} {top['unknown']:>8} {top['wrong']:>6}   "
              f"{cls['right']:>7} ({cls['fallback']:>3})     {cls['unknown']:>8} {cls['wrong']:>6}")
    top, cls = total["top"], total["class"]
    print(f"  {'all':<26} {len(results):>5} {top['right']:>7} {top['unknown']:>8} {top['wrong']:>6}   "
          f"{cls['right']:>7} ({cls['fallback']:>3})     {cls['unknown']:>8} {cls['wrong']:>6}")
    hung = Counter(r.answer.signature for r in results if outcome(labels[r.case], r.without["class"]) != "right")
    print("  signatures the most cases hang on (lost in the class run): " + ", ".join(
        f"{sig} {n}" for sig, n in hung.most_common(8)))
    if args.list:
        for r in sorted(results, key=lambda r: (r.label, r.case)):
            got = r.without["class"]
            if outcome(labels[r.case], got) != "right":
                print(f"    {r.label:<24} {r.case}: {r.answer.signature} -> {got.klass} ({got.signature})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
