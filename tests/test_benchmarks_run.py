"""The benchmark scripts still run to their figures after a change to what they measure.

A benchmark imports the project's internals (a memo to clear, the lazy patterns to list), so a
refactor can stop it before its first figure, unnoticed until someone needs the numbers: twice
it did (a memo renamed, a pattern of the regex module listed as one of ``re``). Each script runs
here on a tiny input; no time is asserted (timings belong to the benchmarks, never to tests).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "bench"


def _run(script: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout


def test_hostile_lines_benchmark_lists_and_times_every_lazy_pattern() -> None:
    out = _run("bench_hostile_lines.py", "--chars", "200", "--runs", "1", "--top", "400")
    header = out.splitlines()[0]
    assert header.split()[1] == "patterns,", header
    # the engine's escape of hidden characters is a pattern of the regex module (\p{...}): listed and timed
    assert "triage.match.engine._HIDDEN" in out


def test_symbolize_benchmark_indexes_a_real_library(tmp_path: Path) -> None:
    libraries = [p for p in (Path("/usr/lib/x86_64-linux-gnu/libamd_comgr.so.2"),
                             Path("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5")) if p.exists()]
    if not libraries:
        pytest.skip("no ROCm library to index here: apt-get install libamdhip64-5 (.ci/apt-packages lists it)")
    out = _run("bench_symbolize.py", "--library", str(libraries[0]), "--runs", "1", "--lookups", "1000")
    assert "index, cold" in out and "index, cached" in out and "lookups" in out


def test_shapes_benchmark_times_every_shape_beside_a_baseline(tmp_path: Path) -> None:
    out = _run("bench_shapes.py", "--rounds", "1", "--runs", "1", "--workdir", str(tmp_path), "--baseline", str(ROOT))
    rows = {line.split()[0]: line.split() for line in out.splitlines()[2:]}
    assert set(rows) == {"repeated-error", "progress-bars", "tab-separated", "runtime-log", "prose-thread"}, out
    assert all(len(row) == 7 and float(row[-1]) > 0 for row in rows.values()), out
