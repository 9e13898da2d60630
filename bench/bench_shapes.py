"""In-process triage time of log shapes that cost more than their size says, next to a baseline in the same run.

    python3 bench/bench_shapes.py [--rounds 5] [--runs 5] [--baseline DIR] [--workdir DIR]

The synthetic corpus (bench_pipeline.py) is mostly lines a parser claims. Users also send logs whose
cost lies elsewhere, and each shape here is one of them, written out deterministically under --workdir:

- ``repeated-error``: a server that logs the same allocation failure for every request, on lines no
  parser claims (every condition that matches it used to weigh each line);
- ``progress-bars``: a model loader's tqdm bars (block characters: lines outside ASCII, which the
  scanners read the Python way) around a Python traceback;
- ``tab-separated``: a tab-separated listing whose rows are longer than its spaced header (read as a
  word-wrapped paste before 2026-12-06, the whole file one record);
- ``runtime-log``: AMD_LOG_LEVEL=4 output, every line a runtime record;
- ``prose-thread``: a forum thread of sentences that quote runtime lines.

Each round runs every shape in a new process for this checkout and then for ``--baseline`` (a checkout of an
earlier version: ``git worktree add DIR REV``); a process triages each shape once untimed (filling the cache)
and then ``--runs`` times. The table shows, per shape, the median over rounds of each process's median, its
MB/s, and the baseline's median over this one's (above 1: this checkout is faster). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# Run in a new process with the checkout to time on PYTHONPATH: prints {shape: median seconds}.
_MEASURE = """
import json, statistics, sys, time
from pathlib import Path
from triage.ingest import read_inputs
from triage.match import load
from triage.pipeline import analyze
from triage.resources import data_dir
folder = data_dir("signatures")
db = load(folder)
runs = int(sys.argv[2])
out = {}
for path in sorted(Path(sys.argv[1]).glob("*.log")):
    def once():
        artifacts, warnings = read_inputs([str(path)], None)
        analyze(artifacts, db, folder, warnings)
    once()
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        once()
        times.append(time.perf_counter() - started)
    out[path.stem] = statistics.median(times)
print(json.dumps(out))
"""


def _repeated_error(rng: random.Random) -> list[str]:
    out = []
    for n in range(1500):
        out.append(f"got prompt {n}")
        if rng.random() < 0.4:
            size = rng.choice(["20.00 MiB", "1.25 GiB", "512.00 MiB"])
            out.append(f"!!! Exception during processing !!! HIP out of memory. Tried to allocate {size}. GPU 0 has a "
                       f"total capacity of 15.98 GiB of which {rng.randint(0, 900)}.00 MiB is free.")
        else:
            out.append(f"Prompt executed in {rng.uniform(1, 30):.2f} seconds")
    return out


def _progress_bars(rng: random.Random) -> list[str]:
    out = []
    for n in range(900):
        kind = rng.random()
        if kind < 0.3:
            done = rng.randint(0, 40)
            out.append(f"Loading checkpoint shards: {done * 100 // 40:3d}%|{'█' * done}{' ' * (40 - done)}| "
                       f"{done}/40 [00:{done:02d}<00:10, 3.9it/s]")
        elif kind < 0.6:
            out.append(f"INFO 05-01 10:11:{n % 60:02d} worker.py:{n}] step {n} loss={rng.random():.4f} lr=3e-4")
        else:
            out.append(f'  File "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", line {n}, in _call_impl')
    out.append("RuntimeError: HIP error: invalid device function")
    return out


def _tab_separated(rng: random.Random) -> list[str]:
    out = ["# test name\tresult\ttime in seconds\twhere the log of the test was kept"]
    for n in range(3000):
        result = rng.choice(["PASSED", "PASSED", "PASSED", "FAILED", "SKIPPED"])
        out.append(f"hipMemcpy_gfx1100_{n:04d}\t{result}\t{rng.uniform(0, 3):.4f}\t"
                   f"https://ci.example.org/job/{rng.randint(1000, 9999)}/artifact/hipMemcpy_{n:04d}.log")
    return out


def _runtime_log(rng: random.Random) -> list[str]:
    calls = ["hipMalloc ( 0x7ffd1000, 4096 )", "hipMemcpy ( 0x7f0, 0x5e1, 4096, 1 )", "hipLaunchKernel ( 0x4a2f, 1, 1 )",
             "hipStreamSynchronize ( stream:0x0 )"]
    out = []
    for n in range(20000):
        out.append(f":3:hip_{rng.choice(['memory', 'platform', 'stream'])}.cpp          :{rng.randint(100, 999):<4}: "
                   f"{2386409563 + n:010d} us: [pid:25314 tid:0x7f8a] {rng.choice(calls)}")
    out.append(":1:hip_code_object.cpp      :624 : 2386429563 us: [pid:25314 tid:0x7f8a] hipErrorNoBinaryForGpu: "
               "Unable to find code object for all current devices!")
    return out


def _prose_thread(rng: random.Random) -> list[str]:
    quotes = ["hipErrorNoBinaryForGpu: Unable to find code object for all current devices!",
              "Memory access fault by GPU node-1 (Agent handle: 0x55d5dc4ab9c0) on address 0x10",
              "rocBLAS error: Cannot read TensileLibrary.dat: No such file or directory"]
    out = []
    for n in range(800):
        out.append(f"I tried it again with version {rng.randint(5, 7)}.{rng.randint(0, 4)} and I still get "
                   f"`{rng.choice(quotes)}` when the model loads, so I think my card is the problem here")
        out.append("")
    return out


SHAPES = {"repeated-error": _repeated_error, "progress-bars": _progress_bars, "tab-separated": _tab_separated,
          "runtime-log": _runtime_log, "prose-thread": _prose_thread}


def _write(workdir: Path) -> dict[str, int]:
    """Each shape's file under ``workdir`` (written once, the same bytes every time) and its size."""
    workdir.mkdir(parents=True, exist_ok=True)
    sizes = {}
    for name, make in SHAPES.items():
        path = workdir / f"{name}.log"
        path.write_text("\n".join(make(random.Random(name))) + "\n", encoding="utf-8")
        sizes[name] = path.stat().st_size
    return sizes


def _measure(checkout: Path, workdir: Path, runs: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(checkout), "TRIAGE_CACHE": str(workdir / f"cache-{checkout.name}")}
    done = subprocess.run([sys.executable, "-c", _MEASURE, str(workdir), str(runs)], capture_output=True, text=True,
                          env=env, cwd=workdir, check=False)
    if done.returncode:
        raise SystemExit(f"measuring {checkout} failed: {done.stderr[-800:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier version (git worktree add DIR REV)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hip-triage-bench-shapes")
    args = parser.parse_args()
    if args.baseline and not (args.baseline / "triage").is_dir():
        parser.error(f"{args.baseline} holds no triage package: make one with `git worktree add DIR REV`")
    sizes = _write(args.workdir)
    sides = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    times: dict[str, dict[str, list[float]]] = {side: {name: [] for name in SHAPES} for side in sides}
    for _ in range(args.rounds):
        for side, checkout in sides.items():
            for name, took in _measure(checkout, args.workdir, args.runs).items():
                times[side][name].append(took)
    print(f"medians of {args.rounds} processes' medians of {args.runs} runs each (ms, MB/s)")
    header = f"{'shape':<16} {'KB':>7} {'this':>9} {'MB/s':>7}"
    print(header + (f" {'baseline':>9} {'MB/s':>7} {'ratio':>6}" if args.baseline else ""))
    for name in SHAPES:
        this = statistics.median(times["this"][name])
        row = f"{name:<16} {sizes[name] / 1e3:7.0f} {this * 1e3:9.1f} {sizes[name] / this / 1e6:7.2f}"
        if args.baseline:
            base = statistics.median(times["baseline"][name])
            row += f" {base * 1e3:9.1f} {sizes[name] / base / 1e6:7.2f} {base / this:6.2f}"
        print(row)
    return 0


if __name__ == "__main__":
    sys.exit(main())
