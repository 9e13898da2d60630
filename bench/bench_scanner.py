"""Matching throughput of the signature database on a large log, as the database grows.

    python bench/bench_scanner.py [--mb 64] [--runs 3]

Builds a log of MB megabytes from the corpus and fixture logs mixed with ordinary application
noise, then times the log conditions of the real database, and of the database padded with
generated patterns to 10x its size: the one-pass prefilter with Hyperscan (if installed) and
with the pure-Python trie, a naive loop over every pattern on every line (on a sample), and
`rg -j1 -i -f PATTERNS` (the patterns its engine accepts) and `rg -j1 -i -P -f PATTERNS`
(PCRE2, all of them), if ripgrep is installed. Prints medians in MB/s.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import regex

from triage.match import load
from triage.match.scanner import Scanner, hyperscan

ROOT = Path(__file__).resolve().parent.parent
WORDS = ("queue device stream kernel buffer module context memory fence signal event copy launch "
         "tensor layer batch token cache loader worker thread alloc plan solver").split()


def build_log(megabytes: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    real = [line for path in sorted((ROOT / "corpus").rglob("*.*")) if path.suffix in (".log", ".txt")
            for line in path.read_text(errors="replace").splitlines() if line.strip()]
    lines, size = [], 0
    while size < megabytes << 20:
        if rng.random() < 0.02:
            line = rng.choice(real)
        else:
            line = (f"[{rng.randint(0, 99999):05d}.{rng.randint(0, 999999):06d}] INFO {rng.choice(WORDS)}: "
                    f"step {rng.randint(0, 10**6)} {' '.join(rng.choices(WORDS, k=8))} took {rng.random():.4f}s")
        lines.append(line)
        size += len(line) + 1
    return lines


def padded(patterns: list[str], factor: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    extra = []
    while len(patterns) + len(extra) < len(patterns) * factor:
        a, b = rng.sample(WORDS, 2)
        extra.append(rf"{a}_{rng.randint(0, 10**6)} (?:failed|error) in {b}: code (?P<code>\d+)")
    return patterns + extra


def prefilter_seconds(patterns: list[str], lines: list[str], engine: str) -> float:
    scanner = Scanner(patterns, engine)
    compiled = [regex.compile(p, regex.IGNORECASE) for p in patterns]
    start = time.perf_counter()
    for index, candidates in enumerate(scanner.scan(lines)):
        for line in candidates:
            compiled[index].search(lines[line])
    return time.perf_counter() - start


def naive_seconds(patterns: list[str], lines: list[str]) -> float:
    compiled = [regex.compile(p, regex.IGNORECASE) for p in patterns]
    start = time.perf_counter()
    for line in lines:
        for pattern in compiled:
            pattern.search(line)
    return time.perf_counter() - start


def rg_seconds(patterns: list[str], path: Path, pcre2: bool) -> tuple[float | None, int]:
    """Seconds for rg over the log, and how many patterns it was given (its default engine rejects lookarounds)."""
    rg = shutil.which("rg")
    if rg is None:
        return None, 0
    engine = ["-P"] if pcre2 else []
    # rg joins the patterns into one, where the same capture name twice is an error.
    plain = [regex.sub(r"\(\?P<\w+>", "(", p) for p in patterns]
    if not pcre2:
        plain = [p for p in plain if subprocess.run([rg, "-e", p, "--", "/dev/null"], capture_output=True).returncode != 2]
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write("\n".join(plain) + "\n")
    start = time.perf_counter()
    done = subprocess.run([rg, "-j1", "-i", *engine, "-c", "-f", f.name, str(path)], capture_output=True)
    elapsed = time.perf_counter() - start
    Path(f.name).unlink()
    return (elapsed if done.returncode in (0, 1) else None), len(plain)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=int, default=64)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lines = build_log(args.mb)
    megabytes = sum(len(line) + 1 for line in lines) / (1 << 20)
    db = load(ROOT / "signatures")
    real = [c.sources["log"] for s in db.signatures for c in s.conditions if c.kind == "log"]
    sample = lines[: max(1, len(lines) // 50)]
    sample_mb = sum(len(line) + 1 for line in sample) / (1 << 20)
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write("\n".join(lines) + "\n")
        log_path = Path(f.name)
    print(f"log: {megabytes:.0f} MB, {len(lines)} lines; real database: {len(real)} log patterns")
    print(f"{'method':<34} {'patterns':>8} {'MB/s':>9}")
    for label, patterns in (("real", real), ("10x", padded(real, 10))):
        rows = []
        engines = (["hyperscan"] if hyperscan is not None else []) + ["python"]
        for engine in engines:
            secs = statistics.median(prefilter_seconds(patterns, lines, engine) for _ in range(args.runs))
            rows.append((f"prefilter ({engine}) {label}", len(patterns), megabytes / secs))
        rows.append((f"naive regex loop {label} (sample)", len(patterns), sample_mb / naive_seconds(patterns, sample)))
        for pcre2 in (False, True):
            seconds, given = rg_seconds(patterns, log_path, pcre2)
            rows.append((f"rg -j1 -i {'-P ' if pcre2 else ''}-f {label}", given, megabytes / seconds if seconds else float("nan")))
        for name, count, rate in rows:
            print(f"{name:<34} {count:>8} {rate:>9.1f}")
    log_path.unlink()


if __name__ == "__main__":
    main()
