"""Corpus analysis speed: cases/s and MB/s on a synthetic corpus, 1 and 2 local processes and Dask local,
growth from a tenth of the corpus to all of it, the warm re-run with the cache, and the DataFrame work for 100,000 rows.

    python3 bench/bench_corpus.py                          # 10,000 cases of ~100 KiB (about 1 GB): long
    python3 bench/bench_corpus.py --cases 1000 --size-kb 10 # a quick run

The synthetic cases (triage/corpus/synth.py) vary the real ones; they are for speed only.
Cold runs use a fresh cache folder each; the warm run re-reads the cache the 2-process run wrote.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

import triage.corpus
from triage.corpus import analyze
from triage.corpus.clusters import cluster
from triage.corpus.rows import frame
from triage.corpus.synth import reuse_or_generate

if TYPE_CHECKING:
    import pandas


def _corpus(folder: Path, cases: int, size_kb: float, seed: int) -> int:
    """Generate (or reuse) a corpus; return its size in bytes."""
    started = time.perf_counter()
    if reuse_or_generate(folder, cases, seed=seed, size_kb=size_kb)[1]:
        print(f"generated {cases} cases in {folder} ({time.perf_counter() - started:.1f} s)")
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and f.name != ".params")


def _timed(label: str, folder: Path, size: int, cases: int, **options: object) -> tuple[float, "pandas.DataFrame"]:
    started = time.perf_counter()
    table = analyze([folder], progress=False, **options)
    took = time.perf_counter() - started
    assert len(table) == cases
    print(f"{label:<34} {took:8.2f} s  {cases / took:8.1f} cases/s  {size / took / 1e6:7.2f} MB/s  {table.attrs['cache']}")
    return took, table


def _median(runs: int, action) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=10_000)
    parser.add_argument("--size-kb", type=float, default=100)
    parser.add_argument("--rows", type=int, default=100_000, help="rows for the DataFrame measurements")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hip-triage-bench")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()

    small_n = max(args.cases // 10, 1)
    big = args.workdir / f"corpus-{args.cases}"
    small = args.workdir / f"corpus-{small_n}"
    big_size = _corpus(big, args.cases, args.size_kb, args.seed)
    small_size = _corpus(small, small_n, args.size_kb, args.seed + 1)
    print(f"corpus: {args.cases} cases, {big_size / 1e6:.0f} MB; growth corpus {small_n} cases, "
          f"{small_size / 1e6:.0f} MB; {os.cpu_count()} CPUs")

    # The cache is keyed by the tool's files; pin the key so that an edit elsewhere in a shared
    # checkout during the run does not empty the cache between the cold and the warm run.
    triage.corpus.code_key = lambda: "bench"

    def fresh(name: str) -> Path:
        folder = args.workdir / f"cache-{name}"
        shutil.rmtree(folder, ignore_errors=True)
        return folder

    # What a process pays once (compiling the patterns it meets, reading the database): paid here, so
    # that the growth from the small corpus to the large one compares the work a case costs.
    analyze(sorted(p for p in small.iterdir() if not p.name.startswith("."))[:50], progress=False, jobs=1, cache=None)
    # The small run is short enough to be thrown off by the machine: the median of three.
    t_small = statistics.median(_timed(f"cold, 1 process, {small_n} cases", small, small_size, small_n, jobs=1,
                                       cache=fresh("s1"))[0] for _ in range(3))
    t_one, _ = _timed(f"cold, 1 process, {args.cases} cases", big, big_size, args.cases, jobs=1, cache=fresh("b1"))
    warm_cache = fresh("b2")
    t_two, _ = _timed(f"cold, 2 processes, {args.cases} cases", big, big_size, args.cases, jobs=2, cache=warm_cache)
    # Right after the cold run: the cache is keyed by the tool's files, so an edit in between would empty it.
    t_warm, table = _timed(f"warm, 2 processes, {args.cases} cases", big, big_size, args.cases, jobs=2,
                           cache=warm_cache)
    t_dask = None
    if not args.no_dask:
        t_dask, _ = _timed(f"cold, Dask local (2), {args.cases} cases", big, big_size, args.cases, dask="local",
                           jobs=2, cache=fresh("d2"))
    print(f"growth {small_n} -> {args.cases} cases (1 process): time x{t_one / t_small:.2f} "
          f"for x{args.cases / small_n:.0f} cases (x{big_size / small_size:.2f} bytes)")
    print(f"2 processes vs 1: x{t_one / t_two:.2f} faster"
          + (f"; Dask local vs 2 processes: x{t_two / t_dask:.2f}" if t_dask else ""))
    print(f"warm re-run vs cold (2 processes): x{t_two / t_warm:.1f} faster")

    records = table.to_dict("records")
    rows = [dict(records[i % len(records)], case=f"case-{i}") for i in range(args.rows)]
    out = args.workdir / "rows.parquet"
    built = frame(rows)
    t_build = _median(3, lambda: frame(rows))
    t_parquet = _median(3, lambda: built.to_parquet(out, index=False))
    t_group = _median(3, lambda: (built.groupby(["signature", "class"], observed=True).size(),
                                   built.groupby("stack_hash").size(),
                                   built.groupby(["gfx_arch", "class"], observed=True).size()))
    unknown = built[built["class"] == "unknown"]
    t_cluster = _median(3, lambda: cluster(unknown))
    print(f"{args.rows} rows x {built.shape[1]} columns: build {t_build:.3f} s, parquet {t_parquet:.3f} s "
          f"({out.stat().st_size / 1e6:.1f} MB), group by signature/stack/arch {t_group:.3f} s, "
          f"cluster {len(unknown)} unknown {t_cluster:.3f} s (medians of 3)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
