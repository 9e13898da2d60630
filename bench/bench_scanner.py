"""Matching throughput of the signature database on a large log, as the database grows.

    python bench/bench_scanner.py [--mb 32] [--runs 3]

Builds a log of MB megabytes from the corpus logs mixed with ordinary application noise and
times the match stage (every signature against every line, as `triage` runs it) with the real
database and with the database padded by generated signatures to 10x its size: with the
Hyperscan scanner (if installed) and the pure-Python one. For scale, the same log patterns
through a naive loop over every pattern on every line, and through `rg -j1 -i -f` (the
patterns its engine accepts) and `rg -j1 -i -P -f` (PCRE2, all), run on a 1/20 sample when
ripgrep is installed. Prints medians in MB/s.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import regex

from triage.match import load, match
from triage.match.database import Condition, Database, Signature, index
from triage.scan.scanner import hyperscan
from triage.model import Artifact, Case

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


def log_patterns(db: Database) -> list[str]:
    return [c.sources["log"] for s in db.signatures for c in s.conditions if c.kind == "log"]


def padded(db: Database, factor: int, engine: str, seed: int = 11) -> Database:
    """The database plus generated signatures (one distinct log anchor each) up to factor times its size."""
    rng = random.Random(seed)
    template = db.signatures[0]
    extra = []
    while len(db.signatures) + len(extra) < len(db.signatures) * factor:
        a, b = rng.sample(WORDS, 2)
        pattern = rf"{a}_{rng.randint(0, 10**6)} (?:failed|error) in {b}: code (?P<code>\d+)"
        cond = Condition(id="generated", kind="log", spec=pattern, strength=0.6, description="", input="text",
                         sources={"log": pattern})
        extra.append(dataclasses.replace(template, id=f"generated-{len(extra)}", conditions=[cond], tests={}))
    signatures: list[Signature] = db.signatures + extra
    return dataclasses.replace(db, signatures=signatures, prefilters=index(signatures, db.anchor_strength, engine))


def match_seconds(db: Database, text: str) -> float:
    case = Case(artifacts=[Artifact(name="big.log", text=text, size=len(text))])
    start = time.perf_counter()
    match(case, db)
    return time.perf_counter() - start


def naive_seconds(patterns: list[str], lines: list[str]) -> float:
    compiled = [regex.compile(p, regex.IGNORECASE) for p in patterns]
    start = time.perf_counter()
    for line in lines:
        for pattern in compiled:
            pattern.search(line)
    return time.perf_counter() - start


def rg_seconds(patterns: list[str], path: Path, pcre2: bool) -> tuple[float | None, int]:
    """Seconds for rg over the file, and how many patterns it was given (its default engine rejects lookarounds)."""
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
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    lines = build_log(args.mb)
    text = "\n".join(lines) + "\n"
    megabytes = len(text) / (1 << 20)
    sample = lines[: max(1, len(lines) // 20)]
    sample_mb = sum(len(line) + 1 for line in sample) / (1 << 20)
    base = load(ROOT / "signatures")
    with tempfile.NamedTemporaryFile("w", suffix=".log", delete=False) as f:
        f.write("\n".join(sample) + "\n")
        sample_path = Path(f.name)
    print(f"log: {megabytes:.0f} MB, {len(lines)} lines; real database: {len(base.signatures)} signatures, "
          f"{len(log_patterns(base))} log patterns", flush=True)
    print(f"{'method':<40} {'patterns':>8} {'MB/s':>9}", flush=True)
    engines = (["hyperscan"] if hyperscan is not None else []) + ["python"]
    for label, factor in (("real", 1), ("10x", 10)):
        for engine in engines:
            db = padded(base, factor, engine)
            seconds = statistics.median(match_seconds(db, text) for _ in range(args.runs))
            print(f"{'match, ' + engine + ' scanner, ' + label:<40} {len(log_patterns(db)):>8} {megabytes / seconds:>9.1f}", flush=True)
        patterns = log_patterns(padded(base, factor, "python"))
        tiny = sample[: max(1, len(sample) // 25)]
        tiny_mb = sum(len(line) + 1 for line in tiny) / (1 << 20)
        print(f"{'naive regex loop, ' + label + ' (1/500)':<40} {len(patterns):>8} {tiny_mb / naive_seconds(patterns, tiny):>9.1f}", flush=True)
        for pcre2 in (False, True):
            seconds, given = rg_seconds(patterns, sample_path, pcre2)
            rate = sample_mb / seconds if seconds else float("nan")
            print(f"{'rg -j1 -i ' + ('-P ' if pcre2 else '') + '-f, ' + label + ' (1/20)':<40} {given:>8} {rate:>9.1f}", flush=True)
    sample_path.unlink()


if __name__ == "__main__":
    main()
