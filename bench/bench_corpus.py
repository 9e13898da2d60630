"""Corpus analysis speed on a synthetic corpus: MB/s and MB/s per process with 1, 2 and all CPUs' processes,
beside reading and hashing the same files in the same run, and the warm re-run from the cache.

    python3 bench/bench_corpus.py                            # 1,000 cases of ~100 KiB (about 100 MB)
    python3 bench/bench_corpus.py --cases 200 --size-kb 50   # a quick run
    python3 bench/bench_corpus.py --dask                     # also a Dask LocalCluster of all CPUs

The synthetic cases (triage/corpus/synth.py) vary the real ones; they are for speed only. MB are
the case files' bytes on disk (zips and .gz as they are). Each run with N processes starts from
an empty corpus cache (every case parsed and matched); the scanners' build (literals, Hyperscan
databases) is in the per-user cache, made by an untimed first run, as on any machine that ran
triage before. The baseline reads every file and hashes it (what the corpus cache's key costs),
in one process: the floor no run can go under. Scaling is the 1-process time over the N-process
time; per-process MB/s is the N-process rate over N.
"""

from __future__ import annotations

import argparse
import hashlib
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


def _corpus(folder: Path, cases: int, size_kb: float, seed: int) -> tuple[int, list[Path]]:
    """Generate (or reuse) a corpus; return its size in bytes and its files."""
    started = time.perf_counter()
    if reuse_or_generate(folder, cases, seed=seed, size_kb=size_kb)[1]:
        print(f"generated {cases} cases in {folder} ({time.perf_counter() - started:.1f} s)")
    files = [f for f in folder.rglob("*") if f.is_file() and f.name != ".params"]
    return sum(f.stat().st_size for f in files), files


def _read_and_hash(files: list[Path]) -> float:
    started = time.perf_counter()
    for file in files:
        hashlib.sha256(file.read_bytes()).digest()
    return time.perf_counter() - started


def _build_scanners() -> None:
    """Every scanner of the shipped database and of the parsers, built now (a scanner otherwise builds its
    Hyperscan database once it has read a few MB, in each worker)."""
    from triage.match import load
    from triage.parsers import lines
    from triage.resources import data_dir

    db = load(data_dir("signatures"))
    for scanner in (*db.prefilters.groups, db.prefilters.together, lines._WHOLE.scanner(), lines._HEAD.scanner()):
        scanner.by_hyperscan  # noqa: B018 - builds (or reads) the Hyperscan database
        getattr(scanner, "_literals", lambda: None)()  # built at once by older versions


def _timed(label: str, folder: Path, size: int, cases: int, base: float | None, processes: int,
           **options: object) -> tuple[float, "pandas.DataFrame"]:
    started = time.perf_counter()
    table = analyze([folder], progress=False, **options)
    took = time.perf_counter() - started
    assert len(table) == cases
    rate = size / took / 1e6
    scaling = f"x{base / took:4.2f}" if base else ""
    print(f"{label:<34} {took:8.2f} s {cases / took:8.1f} cases/s {rate:8.2f} MB/s {rate / processes:8.2f} MB/s/proc "
          f"{scaling:>6}  {table.attrs['cache']}", flush=True)
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
    parser.add_argument("--cases", type=int, default=1_000)
    parser.add_argument("--size-kb", type=float, default=100)
    parser.add_argument("--rows", type=int, default=100_000, help="rows for the DataFrame measurements")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hip-triage-bench")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--dask", action="store_true", help="also a Dask LocalCluster of all CPUs")
    args = parser.parse_args()
    # The scanners' build and the corpus caches go here (read by the worker processes too), not the user's.
    os.environ["TRIAGE_CACHE"] = str(args.workdir / "cache")

    big = args.workdir / f"corpus-{args.cases}-{args.size_kb:g}"
    size, files = _corpus(big, args.cases, args.size_kb, args.seed)
    cpus = os.cpu_count() or 1
    print(f"corpus: {args.cases} cases, {size / 1e6:.0f} MB in {len(files)} files; {cpus} CPUs; "
          f"{sys.version.split()[0]}", flush=True)

    # The cache is keyed by the tool's files; pin the key so that an edit elsewhere in a shared
    # checkout during the run does not empty the cache between the cold and the warm run.
    triage.corpus.code_key = lambda: "bench"

    def fresh(name: str) -> Path:
        folder = args.workdir / f"cache-{name}"
        shutil.rmtree(folder, ignore_errors=True)
        return folder

    t_read = statistics.median(_read_and_hash(files) for _ in range(3))
    print(f"{'baseline: read + sha256, 1 process':<34} {t_read:8.2f} s {'':>16} {size / t_read / 1e6:8.2f} MB/s", flush=True)
    # What the first runs on a machine pay (the scanners' literals and Hyperscan databases, kept in the per-user
    # cache): paid here, untimed in the rows below.
    started = time.perf_counter()
    _build_scanners()
    analyze(sorted(p for p in big.iterdir() if not p.name.startswith("."))[:100], progress=False, jobs=1, cache=False)
    print(f"{'build the scanners, 100 cases':<34} {time.perf_counter() - started:8.2f} s  (empty caches; untimed below)",
          flush=True)

    base = None
    last_cache = None
    for processes in sorted({1, 2, cpus}):
        last_cache = fresh(f"p{processes}")
        took, _ = _timed(f"cold, {processes} process{'es' * (processes > 1)}", big, size, args.cases, base, processes,
                         jobs=processes, cache=last_cache)
        base = base or took
    # Right after the cold run: the cache is keyed by the tool's files, so an edit in between would empty it.
    _, table = _timed(f"warm, {cpus} process{'es' * (cpus > 1)}", big, size, args.cases, base, cpus, jobs=cpus,
                      cache=last_cache)
    if args.dask:
        _timed(f"cold, Dask local ({cpus})", big, size, args.cases, base, cpus, dask="local", jobs=cpus, cache=fresh("d"))
    print("x: the 1-process time over this one (near-linear scaling is xN for N processes)")

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
