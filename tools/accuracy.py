"""Top-class accuracy of hip-triage on real users' logs (../shared/realworld), dev and holdout apart.

    python tools/accuracy.py [REALWORLD_DIR] [--verbose]

Every third case folder by name (index 2, 5, 8, ...) is the holdout: signatures are designed
from the other two thirds only, and never from the holdout's text. The gap between the two
scores tells how the database will do on logs nobody has seen. A positive case is right when
the top class equals its label; a `neg-` case is right when the top class is not a GPU-stack
class (`outside-gpu-stack` or `unknown`).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import yaml

from triage.pipeline import triage

ROOT = Path(__file__).resolve().parent.parent
NOT_GPU_STACK = {"outside-gpu-stack", "unknown"}


def split(folders: list[Path]) -> dict[str, list[Path]]:
    return {"dev": [f for i, f in enumerate(folders) if i % 3 != 2],
            "holdout": [f for i, f in enumerate(folders) if i % 3 == 2]}


def judge(folder: Path) -> tuple[str, str, bool, float]:
    label = yaml.safe_load((folder / "label.yaml").read_text())["class"]
    top = triage([str(folder / "input.txt")]).top
    if folder.name.startswith("neg-"):
        ok = top.klass in NOT_GPU_STACK
    else:
        ok = top.klass == label
    return label, top.klass, ok, top.confidence


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("realworld", nargs="?", default=str(ROOT.parent / "shared" / "realworld"))
    parser.add_argument("--verbose", action="store_true", help="list every case, not only the wrong ones")
    parser.add_argument("--part", choices=("dev", "holdout", "all"), default="all",
                        help="score only one part (design signatures looking at dev only)")
    args = parser.parse_args()
    base = Path(args.realworld)
    folders = sorted(p.parent for p in base.glob("*/label.yaml"))
    if not folders:
        print(f"no labelled cases under {base}", file=sys.stderr)
        return 2
    confusion: Counter[tuple[str, str]] = Counter()
    for part, cases in split(folders).items():
        if args.part not in ("all", part):
            continue
        tally = {"pos": [0, 0], "neg": [0, 0]}
        wrong = []
        for folder in cases:
            label, got, ok, confidence = judge(folder)
            kind = "neg" if folder.name.startswith("neg-") else "pos"
            tally[kind][0] += ok
            tally[kind][1] += 1
            confusion[(label, got)] += 1
            if not ok or args.verbose:
                wrong.append(f"  {'ok ' if ok else 'BAD'} {folder.name}: label {label}, got {got} ({confidence:.2f})")
        total = [tally["pos"][0] + tally["neg"][0], tally["pos"][1] + tally["neg"][1]]
        print(f"{part}: {total[0]}/{total[1]} right ({100 * total[0] / max(total[1], 1):.0f}%); "
              f"positives {tally['pos'][0]}/{tally['pos'][1]}, negatives {tally['neg'][0]}/{tally['neg'][1]}")
        print("\n".join(wrong))
    print("\nconfusion (label -> top class: count):")
    for (label, got), n in sorted(confusion.items()):
        print(f"  {label:<26} -> {got:<26} {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
