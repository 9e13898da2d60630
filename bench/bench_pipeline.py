"""In-process pipeline speed on one core: MB/s of ingest -> parse -> symbolize -> match, and where the time goes.

    python3 bench/bench_pipeline.py [--cases 300] [--size-kb 100] [--runs 3]

The synthetic cases (triage/corpus/synth.py) are written once under --workdir and read from
there. Each run triages every case in this process (one core); the figure is the median run.
A last run times each stage and each line parser apart, and the JSON report build (which
fills every candidate's texts), which is not part of the pipeline figure.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import triage.parsers
from triage.corpus.synth import reuse_or_generate
from triage.ingest import read_inputs
from triage.match import load, match
from triage.pipeline import Result, analyze
from triage.report import build
from triage.resources import data_dir
from triage.symbolize import symbolize
from triage.symbolize.known_frames import stores


class _Timed:
    """A line parser that adds the time it takes to a table (stands in for the module in LINE_PARSERS)."""

    def __init__(self, module: object, spent: dict[str, float]) -> None:
        self.module, self.spent = module, spent
        self.__name__ = module.__name__  # type: ignore[attr-defined]

    def parse(self, artifact: object, case: object) -> None:
        started = time.perf_counter()
        try:
            self.module.parse(artifact, case)  # type: ignore[attr-defined]
        finally:
            self.spent["parse: " + self.__name__.rsplit(".", 1)[-1]] += time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=300)
    parser.add_argument("--size-kb", type=float, default=100)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hip-triage-bench-pipeline")
    args = parser.parse_args()

    paths, _ = reuse_or_generate(args.workdir / f"corpus-{args.cases}-{args.size_kb:g}", args.cases, args.seed, args.size_kb)
    folder = data_dir("signatures")
    db = load(folder)
    read = [read_inputs([str(p)], None) for p in paths]
    size = sum(a.size for artifacts, _ in read for a in artifacts)
    print(f"{len(paths)} cases, {size / 1e6:.1f} MB of text")

    times = []
    for _ in range(args.runs):
        started = time.perf_counter()
        for p in paths:
            artifacts, warnings = read_inputs([str(p)], None)
            analyze(artifacts, db, folder, warnings)
        times.append(time.perf_counter() - started)
    took = statistics.median(times)
    print(f"pipeline (ingest, parse, symbolize, match): {size / took / 1e6:.2f} MB/s per core, "
          f"{len(paths) / took:.1f} cases/s (median of {args.runs} runs: {took:.2f} s)")

    spent: dict[str, float] = defaultdict(float)
    original = triage.parsers.LINE_PARSERS
    triage.parsers.LINE_PARSERS = tuple(_Timed(m, spent) for m in original)
    try:
        for p in paths:
            started = time.perf_counter()
            artifacts, warnings = read_inputs([str(p)], None)
            spent["ingest"] += time.perf_counter() - started
            started = time.perf_counter()
            for artifact in artifacts:
                triage.parsers.lines.scan(artifact)  # kept: the parsers below read it
            spent["parse: the passes for all needles"] += time.perf_counter() - started
            case = triage.parsers.parse(artifacts, warnings + db.problems)
            spent["parse (all)"] += time.perf_counter() - started
            started = time.perf_counter()
            symbolize(case, stores(folder / "frames"), None)
            spent["symbolize"] += time.perf_counter() - started
            started = time.perf_counter()
            diagnoses = match(case, db)
            spent["match"] += time.perf_counter() - started
            started = time.perf_counter()
            build(Result(case=case, diagnoses=diagnoses))
            spent["report build (not in the figure)"] += time.perf_counter() - started
    finally:
        triage.parsers.LINE_PARSERS = original
    parsers = sum(v for k, v in spent.items() if k.startswith("parse: "))
    spent["parse: finishers and the rest"] = spent["parse (all)"] - parsers
    print("where the time goes (one run, seconds):")
    for name, seconds in sorted(spent.items(), key=lambda kv: -kv[1]):
        print(f"  {name:<36} {seconds:7.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
