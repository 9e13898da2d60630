"""How often hip-triage names the right class on real users' logs, design and held-out parts apart.

    python3 tools/accuracy.py [--json] [--corpus DIR ...] [--verbose]

Cases: corpus/realworld, split by a hash of each thread into a design part and a held-out
third (triage/corpus/labels.py); threads listed in its SEEN file were read while signatures
were written and count as design. ``--corpus ../shared/realworld`` scores the older set
(labels of its own format, all design).

For each part it prints positives and negatives right, recall and precision per class, a
confusion table, how often positives got `unknown`, a calibration table (per confidence band,
how many answers and the share right) and the wrong answers of the design part. Of the
held-out part only counts are printed, so that nobody reads those cases by accident. The same
figures for the grep floor (tools/grep_floor.yaml: a dozen strings a support engineer would
grep for) show what the tool adds.

A positive is right when the top class is its label or a class the label accepts; a negative
(`outside-gpu-stack`) is right when the top class is not a GPU-stack class.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import (  # noqa: E402
    CLASSES, Label, LabelError, case_folders, held_out, read_label, read_seen,
)

SHARED = ROOT.parent / "shared" / "realworld"
BANDS = ((0.45, 0.6), (0.6, 0.8), (0.8, 1.01))
CONFIDENT = 0.8


@dataclass(frozen=True)
class Answer:
    label: Label
    part: str
    klass: str
    confidence: float

    @property
    def right(self) -> bool:
        return self.label.right(self.klass)


def load_cases(corpora: list[Path]) -> tuple[list[tuple[Label, str]], list[str]]:
    """Every labelled case with its part; the shared set is all design."""
    cases, problems = [], []
    for corpus in corpora:
        shared = corpus.resolve() == SHARED.resolve()
        seen = read_seen(corpus)
        for folder in case_folders(corpus):
            try:
                label = read_label(folder, strict=not shared)
            except LabelError as exc:
                problems.append(str(exc))
                continue
            cases.append((label, "design" if shared or not held_out(label.source, seen) else "holdout"))
    return cases, problems


def _triage(folder: str) -> tuple[str, float]:
    from triage.pipeline import triage

    top = triage([folder]).top
    return top.klass, top.confidence


def grep_floor(folder: Path, rules: list[dict]) -> tuple[str, float]:
    """The first floor rule with a string in any input file (case-blind), else unknown."""
    text = "\n".join(p.read_text(encoding="utf-8", errors="replace").lower()
                     for p in sorted(folder.iterdir()) if p.is_file() and p.name != "label.yaml")
    for rule in rules:
        if any(s.lower() in text for s in rule["any"]):
            return rule["class"], 1.0
    return "unknown", 0.0


def score(answers: list[Answer]) -> dict:
    """The figures of one part."""
    pos = [a for a in answers if not a.label.negative]
    neg = [a for a in answers if a.label.negative]
    answerable = [a for a in pos if a.label.answerable in ("yes", "partly", "")]
    classes = sorted(set(CLASSES) | {a.klass for a in answers} - {"unknown"})
    per_class = {}
    for c in classes:
        labelled = [a for a in answers if a.label.klass == c]
        said = [a for a in answers if a.klass == c]
        if labelled or said:
            per_class[c] = {"cases": len(labelled), "recall": _share(sum(a.right for a in labelled), len(labelled)),
                            "answers": len(said), "precision": _share(sum(a.right for a in said), len(said))}
    calibration = []
    for low, high in BANDS:
        band = [a for a in answers if a.klass != "unknown" and low <= a.confidence < high]
        calibration.append({"band": f"{low:.2f}-{min(high, 1.0):.2f}", "answers": len(band),
                            "right": sum(a.right for a in band), "share_right": _share(sum(a.right for a in band), len(band))})
    confusion = Counter((a.label.klass, a.klass) for a in answers)
    return {
        "cases": len(answers),
        "positives": len(pos), "positives_right": sum(a.right for a in pos),
        "negatives": len(neg), "negatives_right": sum(a.right for a in neg),
        "answerable_positives": len(answerable), "answerable_positives_right": sum(a.right for a in answerable),
        "abstained": sum(a.klass == "unknown" for a in pos),
        "abstention_rate": _share(sum(a.klass == "unknown" for a in pos), len(pos)),
        "confident_wrong": sum(not a.right and a.klass != "unknown" and a.confidence >= CONFIDENT for a in answers),
        "per_class": per_class,
        "calibration": calibration,
        "confusion": [{"label": label, "got": got, "count": n} for (label, got), n in sorted(confusion.items())],
    }


def _share(right: int, total: int) -> float | None:
    return round(right / total, 3) if total else None


def _percent(share: float | None) -> str:
    return "-" if share is None else f"{100 * share:.0f}%"


def _pct(right: int, total: int) -> str:
    return f"{right}/{total} ({100 * right / total:.0f}%)" if total else "0/0"


def print_part(name: str, figures: dict, wrong: list[Answer] | None) -> None:
    f = figures
    print(f"\n== {name}: {f['cases']} cases")
    print(f"  positives right  {_pct(f['positives_right'], f['positives'])}"
          f"   (answerable from the text: {_pct(f['answerable_positives_right'], f['answerable_positives'])})")
    print(f"  negatives right  {_pct(f['negatives_right'], f['negatives'])}")
    print(f"  unknown on positives {_pct(f['abstained'], f['positives'])};  wrong at >= {CONFIDENT}: {f['confident_wrong']}")
    print("  calibration (band: answers, share right):  " + ";  ".join(
        f"{b['band']}: {b['answers']}, {_percent(b['share_right'])}" for b in f["calibration"]))
    print(f"  {'class':<26} {'cases':>5} {'recall':>7} {'answers':>8} {'precision':>9}")
    for c, row in f["per_class"].items():
        print(f"  {c:<26} {row['cases']:>5} {_percent(row['recall']):>7} {row['answers']:>8} "
              f"{_percent(row['precision']):>9}")
    print("  confusion (label -> answer: count, off-diagonal):")
    for row in f["confusion"]:
        if row["label"] != row["got"]:
            print(f"    {row['label']:<26} -> {row['got']:<26} {row['count']}")
    if wrong is not None:
        print("  wrong answers:")
        for a in sorted(wrong, key=lambda a: (-a.confidence, a.label.folder.name)):
            print(f"    {a.label.folder.parent.name}/{a.label.folder.name}: label {a.label.klass}, "
                  f"got {a.klass} ({a.confidence:.2f})")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", action="append", type=Path,
                        help="a real-world corpus folder (default: corpus/realworld)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    parser.add_argument("--jobs", type=int, default=None, help="processes (default: all cores)")
    args = parser.parse_args()
    corpora = args.corpus or [ROOT / "corpus" / "realworld"]
    cases, problems = load_cases(corpora)
    for p in problems:
        print(f"skipped: {p}", file=sys.stderr)
    if not cases:
        print(f"no labelled cases under {', '.join(map(str, corpora))}", file=sys.stderr)
        return 2
    import yaml

    rules = yaml.safe_load((ROOT / "tools" / "grep_floor.yaml").read_text())["rules"]
    with ProcessPoolExecutor(args.jobs) as pool:
        tool = list(pool.map(_triage, [str(label.folder) for label, _ in cases], chunksize=8))
    results = {"tool": [Answer(label, part, *got) for (label, part), got in zip(cases, tool)],
               "floor": [Answer(label, part, *grep_floor(label.folder, rules)) for label, part in cases]}
    figures = {who: {part: score([a for a in answers if a.part == part]) for part in ("design", "holdout")}
               for who, answers in results.items()}
    if args.json:
        print(json.dumps({"cases": len(cases), "parts": figures["tool"], "floor": figures["floor"]}, indent=1))
        return 0
    print(f"{len(cases)} cases from {', '.join(str(c) for c in corpora)}")
    for part in ("design", "holdout"):
        wrong = None if part == "holdout" else [a for a in results["tool"] if a.part == part and not a.right]
        print_part(f"hip-triage, {part}", figures["tool"][part], wrong)
    for part in ("design", "holdout"):
        f = figures["floor"][part]
        print(f"\n== grep floor, {part}: positives right {_pct(f['positives_right'], f['positives'])}, "
              f"negatives right {_pct(f['negatives_right'], f['negatives'])}, wrong: "
              f"{f['cases'] - f['positives_right'] - f['negatives_right'] - f['abstained']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
