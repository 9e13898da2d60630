"""Check the real-world corpus: every label valid, no thread twice, none reserved; print its spread.

    python3 tools/corpus_check.py [CORPUS_DIR]

Prints cases per class, per OS, per ROCm series and per GPU family, and the parts (design,
held out) by count only. Exit status 1 when a label is invalid, a thread appears twice, or a
link is reserved for the unseen evaluation.
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import (CLASSES, LabelError, case_folders, held_out, read_label, read_seen,  # noqa: E402
                                  same_thread, thread_names)

SHARED = ROOT.parent / "shared"


def family(arch: str) -> str:
    """A gfx name's family, for the spread table (rough, for counting only)."""
    a = str(arch).lower()
    m = re.search(r"gfx(\w+)", a)
    if not m:
        return "unknown" if a in ("", "unknown", "none") else "other"
    n = m.group(1)
    table = [("gfx90c", "APU"), ("gfx1035", "APU"), ("gfx1036", "APU"), ("gfx1103", "APU"),
             ("gfx115", "APU"), ("gfx1013", "APU"), ("gfx94", "Instinct"), ("gfx95", "Instinct"),
             ("gfx908", "Instinct"), ("gfx90a", "Instinct"), ("gfx906", "Vega20/MI50"),
             ("gfx90", "Vega"), ("gfx8", "GCN"), ("gfx7", "GCN"), ("gfx6", "GCN"), ("gfx101", "RDNA1"),
             ("gfx103", "RDNA2"), ("gfx110", "RDNA3"), ("gfx120", "RDNA4")]
    return next((name for prefix, name in table if ("gfx" + n).startswith(prefix)), "other")


def series(version: object) -> str:
    m = re.search(r"(\d+)\.(\d+)", str(version or ""))
    return f"{m.group(1)}.x" if m else "unknown"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("corpus", nargs="?", default=str(ROOT / "corpus" / "realworld"))
    args = parser.parse_args()
    corpus = Path(args.corpus)
    problems: list[str] = []
    labels = []
    for folder in case_folders(corpus):
        try:
            labels.append(read_label(folder))
        except LabelError as exc:
            problems.append(str(exc))
    threads = Counter(same_thread(lab.source) for lab in labels)
    problems += [f"thread {t} is in {n} cases (under one of its names)" for t, n in threads.items() if n > 1]
    reserved = SHARED / "tools" / "reserved.py"
    if reserved.is_file():
        scan = subprocess.run([sys.executable, str(reserved), "--scan", str(corpus)],
                              capture_output=True, text=True)
        problems += [f"reserved: {line}" for line in scan.stdout.splitlines()]
        others = sorted({name for lab in labels for name in thread_names(lab.source)[1:]})
        named = subprocess.run([sys.executable, str(reserved), *others], capture_output=True, text=True)
        problems += [f"reserved under another name of its thread: {line}" for line in named.stdout.splitlines()
                     if line.split()[-1:] == ["reserved"]]
    else:
        print("note: ../shared/tools/reserved.py is absent; reserved threads not checked")
    seen = read_seen(corpus)
    print(f"{len(labels)} cases, {sum(lab.negative for lab in labels)} negatives; "
          f"held out {sum(held_out(lab.source, seen) for lab in labels)}")
    for title, key in (("class", lambda lab: lab.klass),
                       ("os", lambda lab: lab.facts.get("os", "unknown")),
                       ("rocm", lambda lab: series(lab.facts.get("rocm"))),
                       ("gpu family", lambda lab: family(lab.facts.get("gpu_arch", ""))),
                       ("answerable", lambda lab: lab.answerable)):
        counts = Counter(key(lab) for lab in labels)
        if title == "class":
            counts.update({c: 0 for c in CLASSES})
        print(f"\n{title}:")
        for value, n in sorted(counts.items(), key=lambda kv: (-kv[1], str(kv[0]))):
            print(f"  {str(value):<26} {n}")
    for p in problems:
        print(f"PROBLEM {p}")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
