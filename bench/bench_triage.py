"""Wall time of one `triage` run per seed case, next to baselines measured in the same run.

    python bench/bench_triage.py [--runs 9]

Prints the median of several runs for each command and its ratio to `python -c pass`.
A benchmark, not a test: these machines are noisy, so read the ratios, not single figures.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CASES = sorted(p.parent for p in (ROOT / "corpus").glob("seed-*/expected.yaml"))


def median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9)
    args = parser.parse_args()
    py = sys.executable
    rows = [
        ("python -c pass", [py, "-c", "pass"]),
        ("import typer, jinja2, regex, yaml", [py, "-c", "import typer, jinja2, regex, yaml"]),
        ("import pandas", [py, "-c", "import pandas"]),
    ]
    for case in CASES:
        for fmt in ("json", "html"):
            rows.append((f"triage {case.name[:32]} -f {fmt}", [py, "-m", "triage", str(case), "-f", fmt]))
    base = None
    print(f"{'command':<60} {'median s':>9} {'x pass':>7}")
    for label, cmd in rows:
        seconds = median_seconds(cmd, args.runs)
        base = base or seconds
        print(f"{label:<60} {seconds:>9.3f} {seconds / base:>7.1f}")


if __name__ == "__main__":
    main()
