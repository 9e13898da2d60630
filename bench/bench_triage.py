"""Wall time of a single `triage` run, warm (the per-user cache filled) and cold (an empty cache), next to
baselines measured in the same run.

    python3 bench/bench_triage.py [--runs 11] [--all-seeds] [--baseline DIR]

Each command runs ``--runs`` times as a new process ("compiled": in a cache that ``triage signatures
compile`` filled, every scanner's Hyperscan database built ahead); the table shows the median, the fastest and
the ratio of the median to ``python -c pass``; beside them the median CPU time (user + system) of
the process and its ratio, which a busy machine disturbs less than the wall time. Cold runs get a
new empty cache folder each time (``TRIAGE_CACHE``), as on a fresh CI runner; warm runs share one
that a first run filled. The rows' runs are interleaved (every row once, then again), so that a change
in the machine's load falls on all of them; ``--baseline DIR`` adds the warm and cold rows of an earlier
checkout (``git worktree add DIR REV``) beside this one's. Every command runs in an empty folder.

Every process runs with Python's bytecode cache on (in a temporary ``PYTHONPYCACHEPREFIX``,
written by an untimed first run), as after ``pip install``: a checkout run with
``PYTHONDONTWRITEBYTECODE=1`` also compiles every module from source on every start, some 0.1 s
more (``--no-bytecode`` measures that instead). A benchmark, not a test: read medians and ratios
on a busy machine, not single figures.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SEED = ROOT / "corpus" / "seed-000-blit-kernels-device-libs-missing"
TARGETS = {"warm": 0.2, "cold": 0.8}  # seconds, from the project's speed goals


def timed(cmd: list[str], env: dict[str, str], cwd: Path, fresh_cache: Path | None = None) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of ``cmd`` in the folder ``cwd``; with ``fresh_cache``,
    in that new empty cache folder."""
    if fresh_cache is not None:
        env = {**env, "TRIAGE_CACHE": str(fresh_cache)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False, cwd=cwd)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode(errors='replace')[-500:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--all-seeds", action="store_true", help="also every other seed case, warm, -f json and -f html")
    parser.add_argument("--no-bytecode", action="store_true", help="compile every module from source on each start")
    parser.add_argument("--baseline", type=Path, help="a checkout of an earlier version (git worktree add DIR REV) whose "
                        "warm and cold runs are timed beside, in the same run")
    args = parser.parse_args()
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bench-triage-"))
    # Every command runs in an empty folder of its own: ``-m`` puts the working folder first on sys.path, and in a
    # busy one (the system's temporary folder: 20,000 entries here, changing all the time) each import lists it
    # again, some 0.1-0.3 s a run that no user's run pays. Not a checkout either: ``-m triage`` imports the
    # installed package (or ``PYTHONPATH``'s).
    cwd = work / "cwd"
    cwd.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("TRIAGE_CACHE", "TRIAGE_SCANNER")}
    if args.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    else:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = str(work / "pycache")
    warm = {**env, "TRIAGE_CACHE": str(work / "warm")}
    compiled = {**env, "TRIAGE_CACHE": str(work / "compiled")}
    triage = [py, "-m", "triage"]
    # Untimed: the bytecode of every module a run imports, the warm cache, and a cache `signatures compile` built.
    for cmd, cache in (([py, "-c", "import typer, jinja2, regex, yaml, hyperscan"], warm), ([*triage, str(SEED)], warm),
                       ([*triage, str(SEED), "-f", "html"], warm), ([*triage, str(SEED), "-f", "json"], warm),
                       ([*triage, "signatures", "compile"], compiled), ([*triage, str(SEED)], compiled)):
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cache, check=False, cwd=cwd)

    rows: list[tuple[str, list[str], dict[str, str], Path | None, str]] = [
        ("python -c pass", [py, "-c", "pass"], env, None, ""),
        ("python -c 'import typer, jinja2, regex'", [py, "-c", "import typer, jinja2, regex"], env, None, ""),
        ("triage --version", [*triage, "--version"], warm, None, ""),
        (f"triage {SEED.name[:22]}, warm", [*triage, str(SEED)], warm, None, "warm"),
        (f"triage {SEED.name[:22]}, warm, compiled", [*triage, str(SEED)], compiled, None, "warm"),
        (f"triage {SEED.name[:22]}, cold", [*triage, str(SEED)], env, work / "cold", "cold"),
        (f"triage {SEED.name[:22]} -f html, warm", [*triage, str(SEED), "-f", "html"], warm, None, ""),
    ]
    if args.baseline:
        older = {**env, "PYTHONPATH": str(args.baseline.resolve())}
        older_warm = {**older, "TRIAGE_CACHE": str(work / "baseline-warm")}
        for _ in range(2):
            subprocess.run([*triage, str(SEED)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=older_warm,
                           check=False, cwd=cwd)
        rows[4:4] = [(f"baseline {SEED.name[:13]}, warm", [*triage, str(SEED)], older_warm, None, "warm"),
                     (f"baseline {SEED.name[:13]}, cold", [*triage, str(SEED)], older, work / "baseline-cold", "cold")]
    if args.all_seeds:
        for case in sorted(p.parent for p in (ROOT / "corpus").glob("seed-*/expected.yaml")):
            for fmt in ("json", "html"):
                rows.append((f"triage {case.name[:26]} -f {fmt}, warm", [*triage, str(case), "-f", fmt], warm, None, ""))
    where = subprocess.run([py, "-c", "import triage; print(triage.__file__)"], capture_output=True, text=True, env=env,
                           cwd=cwd).stdout.strip()
    print(f"{where}; {sys.version.split()[0]} {py}; {os.cpu_count()} CPUs; {args.runs} runs each; "
          f"{'no bytecode cache' if args.no_bytecode else 'bytecode cached'}")
    print(f"{'command':<52} {'median s':>9} {'fastest':>8} {'x pass':>7} {'cpu s':>7} {'x pass':>7} {'target':>7}")
    # The runs interleaved (each row once, then again): a machine whose load changes disturbs every row alike.
    walls: list[list[float]] = [[] for _ in rows]
    cpus: list[list[float]] = [[] for _ in rows]
    for number in range(args.runs):
        for at, (_, cmd, cmd_env, fresh, _) in enumerate(rows):
            wall, cpu = timed(cmd, cmd_env, cwd, fresh / f"{at}-{number}" if fresh else None)
            walls[at].append(wall)
            cpus[at].append(cpu)
    base, base_cpu = statistics.median(walls[0]), statistics.median(cpus[0])
    for (label, _, _, _, target), wall, cpu_times in zip(rows, walls, cpus):
        median, cpu = statistics.median(wall), statistics.median(cpu_times)
        goal = f"{TARGETS[target]:.2f}" if target else ""
        print(f"{label:<52} {median:>9.3f} {min(wall):>8.3f} {median / base:>7.1f} {cpu:>7.3f} {cpu / base_cpu:>7.1f} "
              f"{goal:>7}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
