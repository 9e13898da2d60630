"""Wall time of a single `triage` run, warm (the per-user cache filled) and cold (an empty cache), next to
baselines measured in the same run.

    python3 bench/bench_triage.py [--runs 11] [--all-seeds]

Each command runs ``--runs`` times as a new process ("compiled": in a cache that ``triage signatures
compile`` filled, every scanner's Hyperscan database built ahead); the table shows the median, the fastest and
the ratio of the median to ``python -c pass``; beside them the median CPU time (user + system) of
the process and its ratio, which a busy machine disturbs less than the wall time. Cold runs get a
new empty cache folder each time (``TRIAGE_CACHE``), as on a fresh CI runner; warm runs share one
that a first run filled.

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


def timed(cmd: list[str], env: dict[str, str], runs: int, fresh_cache: Path | None = None) -> tuple[list[float], list[float]]:
    """Wall seconds and CPU seconds (user + system) of ``runs`` runs of ``cmd``; with ``fresh_cache``, each in a new
    empty cache folder there. Run from a temporary folder, not a checkout: ``-m triage`` imports the installed
    package (or ``PYTHONPATH``'s)."""
    walls, cpus = [], []
    for number in range(runs):
        if fresh_cache is not None:
            env = {**env, "TRIAGE_CACHE": str(fresh_cache / f"cold-{number}")}
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        start = time.perf_counter()
        done = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env, check=False,
                              cwd=tempfile.gettempdir())
        walls.append(time.perf_counter() - start)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed ({done.returncode}): {done.stderr.decode(errors='replace')[-500:]}")
    return walls, cpus


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--all-seeds", action="store_true", help="also every other seed case, warm, -f json and -f html")
    parser.add_argument("--no-bytecode", action="store_true", help="compile every module from source on each start")
    args = parser.parse_args()
    py = sys.executable
    work = Path(tempfile.mkdtemp(prefix="bench-triage-"))
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
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=cache, check=False,
                       cwd=tempfile.gettempdir())

    rows: list[tuple[str, list[str], dict[str, str], Path | None, str]] = [
        ("python -c pass", [py, "-c", "pass"], env, None, ""),
        ("python -c 'import typer, jinja2, regex'", [py, "-c", "import typer, jinja2, regex"], env, None, ""),
        ("triage --version", [*triage, "--version"], warm, None, ""),
        (f"triage {SEED.name[:22]}, warm", [*triage, str(SEED)], warm, None, "warm"),
        (f"triage {SEED.name[:22]}, warm, compiled", [*triage, str(SEED)], compiled, None, "warm"),
        (f"triage {SEED.name[:22]}, cold", [*triage, str(SEED)], env, work / "cold", "cold"),
        (f"triage {SEED.name[:22]} -f html, warm", [*triage, str(SEED), "-f", "html"], warm, None, ""),
    ]
    if args.all_seeds:
        for case in sorted(p.parent for p in (ROOT / "corpus").glob("seed-*/expected.yaml")):
            for fmt in ("json", "html"):
                rows.append((f"triage {case.name[:26]} -f {fmt}, warm", [*triage, str(case), "-f", fmt], warm, None, ""))
    where = subprocess.run([py, "-c", "import triage; print(triage.__file__)"], capture_output=True, text=True, env=env,
                           cwd=tempfile.gettempdir()).stdout.strip()
    print(f"{where}; {sys.version.split()[0]} {py}; {os.cpu_count()} CPUs; {args.runs} runs each; "
          f"{'no bytecode cache' if args.no_bytecode else 'bytecode cached'}")
    print(f"{'command':<52} {'median s':>9} {'fastest':>8} {'x pass':>7} {'cpu s':>7} {'x pass':>7} {'target':>7}")
    base = base_cpu = None
    for label, cmd, cmd_env, fresh, target in rows:
        walls, cpus = timed(cmd, cmd_env, args.runs, fresh)
        median, cpu = statistics.median(walls), statistics.median(cpus)
        base, base_cpu = base or median, base_cpu or cpu
        goal = f"{TARGETS[target]:.2f}" if target else ""
        print(f"{label:<52} {median:>9.3f} {min(walls):>8.3f} {median / base:>7.1f} {cpu:>7.3f} {cpu / base_cpu:>7.1f} "
              f"{goal:>7}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
