"""Differential check of the whole pipeline: record every input's JSON report, then compare after a change.

    python3 tools/parse_diff.py record /tmp/parse-diff      # before a change (keep it out of the repository)
    python3 tools/parse_diff.py compare /tmp/parse-diff     # after: lists every input whose report differs

A speed-up of a parser or of matching must not change any answer. The inputs are every file
(and every case folder) under corpus/, tests/fixtures/, the small files of tests/adversarial/,
../shared/realworld and ../shared/seeds when present (read, never written), synthetic cases
(triage/corpus/synth.py) and line mixtures: lines of all the text inputs shuffled into runs,
so that block parsers (stacks, registers) meet their lines next to, and apart from, each other.
The synthetic cases and mixtures are written once under the record folder and re-read by
``compare``, so both sides read the same bytes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SMALL = 256 * 1024  # adversarial files above this are left out: they test limits, not parsers


def _files(folder: Path, limit: int | None = None) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*") if p.is_file() and (limit is None or p.stat().st_size <= limit))


def _mixtures(texts: list[str], count: int, seed: int) -> list[str]:
    """Texts made of runs of lines taken from the inputs, with single lines and blank lines between."""
    rng = random.Random(seed)
    pool = [t.split("\n") for t in texts if t]
    out = []
    for _ in range(count):
        lines: list[str] = []
        while len(lines) < rng.randint(20, 400):
            source = rng.choice(pool)
            start = rng.randrange(len(source))
            lines.extend(source[start: start + rng.choice((1, 1, 2, 3, 8, 40))])
            if rng.random() < 0.3:
                lines.append(rng.choice(("", "   ", "noise line", "#", "0x", " + 0x")))
        out.append("\n".join(lines) + "\n")
    return out


def _name(path: Path) -> str:
    """The same name for an input in any two checkouts (a worktree of the old code beside this one)."""
    if path.is_relative_to(SHARED):
        return "shared/" + path.relative_to(SHARED).as_posix()
    return path.relative_to(ROOT).as_posix()


def inputs(folder: Path, synthetic: int, mixtures: int) -> dict[str, list[str]]:
    """Input name -> the paths one triage reads; writes the generated inputs under ``folder`` when absent."""
    out: dict[str, list[str]] = {}
    roots = [ROOT / "corpus", ROOT / "tests" / "fixtures", SHARED / "realworld", SHARED / "seeds"]
    for root in roots:
        for path in _files(root):
            out[_name(path)] = [str(path)]
    for case in sorted({p.parent for p in (ROOT / "corpus").glob("*/expected.yaml")}):
        out[_name(case) + "/"] = [str(case)]
    for path in _files(ROOT / "tests" / "adversarial", SMALL):
        out[_name(path)] = [str(path)]
    generated = folder / "inputs"
    if not generated.is_dir():
        from triage.corpus.synth import generate

        generate(generated / "synth-small", synthetic // 2, seed=11, size_kb=5)
        generate(generated / "synth-large", synthetic - synthetic // 2, seed=12, size_kb=60)
        texts = [p.read_text(encoding="utf-8", errors="replace") for paths in out.values() for p in map(Path, paths)
                 if p.is_file() and p.suffix in (".txt", ".log", ".md", "")]
        (generated / "mix").mkdir(parents=True)
        for number, text in enumerate(_mixtures(texts, mixtures, seed=13)):
            (generated / "mix" / f"mix-{number:04d}.txt").write_text(text, encoding="utf-8")
    for kind in sorted(generated.iterdir()):
        for entry in sorted(kind.iterdir()):
            out[f"{kind.name}/{entry.name}"] = [str(entry)]
    return out


def _report(paths: list[str]) -> str:
    from triage.ingest import IngestError
    from triage.pipeline import triage
    from triage.report import build

    try:
        return json.dumps(build(triage(paths)), sort_keys=True, ensure_ascii=False)
    except IngestError as err:
        return json.dumps({"ingest_error": str(err)})


def _run(named: dict[str, list[str]], jobs: int) -> dict[str, str]:
    names = sorted(named)
    with ProcessPoolExecutor(jobs) as pool:
        return dict(zip(names, pool.map(_report, [named[n] for n in names], chunksize=8)))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("action", choices=("record", "compare"))
    parser.add_argument("folder", type=Path)
    parser.add_argument("--synthetic", type=int, default=300)
    parser.add_argument("--mixtures", type=int, default=300)
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args(argv)
    baseline = args.folder / "reports.json"
    named = inputs(args.folder, args.synthetic, args.mixtures)
    reports = _run(named, args.jobs)
    if args.action == "record":
        baseline.write_text(json.dumps(reports, indent=0, sort_keys=True), encoding="utf-8")
        print(f"recorded {len(reports)} reports in {baseline}")
        return 0
    before = json.loads(baseline.read_text(encoding="utf-8"))
    changed = sorted(n for n in reports if before.get(n) != reports[n])
    absent = sorted(set(before) ^ set(reports))
    for name in changed:
        print(f"DIFFERS: {name}")
    for name in absent:
        print(f"ONLY ON ONE SIDE: {name}")
    print(f"{len(reports)} inputs: {len(reports) - len(changed)} identical, {len(changed)} differ, "
          f"{len(absent)} on one side only")
    return 1 if changed or absent else 0


if __name__ == "__main__":
    sys.exit(main())
