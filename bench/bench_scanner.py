"""Matching throughput of the signature database on a large log, as the database grows, beside ripgrep on the same file.

    python3 bench/bench_scanner.py [--mb 32] [--runs 3] [--engines hyperscan,python]

Builds a log of MB megabytes from the corpus logs mixed with ordinary application noise and
times the match stage (every signature against every line, as `triage` runs it) with the real
database and with the database padded to 10x its size by generated signatures. The padding's
patterns are made of word pairs that stand in the noise lines (``\\bqueue device\\b[^\\n]{0,30}\\bkernel
buffer\\b``): their literals occur in about one line in a hundred and the whole pattern in fewer,
so the prefilter has real work, not the best case of literals that never occur.

Each match row also gives its first run, right after the build (cold: the conditions' regexes are compiled in
it, as in a new process), beside the median of the later (warm) runs that the rate is taken from. Compiling is
timed apart and left out of the rates: our scanners' build (the literals, and the
Hyperscan databases) before the timed runs; ripgrep's start and pattern compile as the median
of ``rg`` over an empty file with the same patterns, taken off its time over the log. ripgrep
reads the same whole file (``rg -j1 -i -c -f PATTERNS FILE``, and with ``--no-unicode``, which
reads classes and case as ASCII like Hyperscan does; its engine refuses lookarounds, so it gets
the patterns it accepts; PCRE2 refuses the whole set as too large). A ripgrep run is stopped
after ``--rg-cap`` seconds and its rate shown as a bound (``<``). One literal through ``rg -F`` is
the speed of reading the file. For scale, a naive loop of every pattern over every line on a
1/500 sample.

ripgrep: ``apt-get install ripgrep`` (or ``cargo install ripgrep``); without it those rows are skipped.
Prints medians in MB/s and each rate as a ratio to ripgrep's on the same patterns.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
os.environ.setdefault("TRIAGE_CACHE", tempfile.mkdtemp(prefix="bench-scanner-"))  # compile here, not read a user's

import regex  # noqa: E402

from triage.match import load, match  # noqa: E402
from triage.match.database import Condition, Database, Signature, index  # noqa: E402
from triage.model import Artifact, Case  # noqa: E402
from triage.scan.scanner import hyperscan  # noqa: E402

RG_LIMITS = ["--regex-size-limit", "4G", "--dfa-size-limit", "4G"]
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
    """The database plus generated signatures (one log anchor each, of word pairs the noise lines hold) up to
    factor times its size."""
    rng = random.Random(seed)
    template = db.signatures[0]
    extra = []
    while len(db.signatures) + len(extra) < len(db.signatures) * factor:
        a, b, c, d = rng.sample(WORDS, 4)
        pattern = rf"\b{a} {b}\b[^\n]{{0,30}}\b{c} (?P<what>{d})\b"
        cond = Condition(id="generated", kind="log", spec=pattern, strength=0.6, description="", input="text",
                         sources={"log": pattern})
        extra.append(dataclasses.replace(template, id=f"generated-{len(extra)}", conditions=[cond], tests={}))
    signatures: list[Signature] = db.signatures + extra
    return dataclasses.replace(db, signatures=signatures, prefilters=index(signatures, db.anchor_strength, engine))


def built(db: Database) -> None:
    """Build every scanner of the database now (what the timed runs must not pay)."""
    for scanner in (*db.prefilters.groups, db.prefilters.together):
        scanner.by_hyperscan  # noqa: B018 - compiles (or reads) the Hyperscan database
        getattr(scanner, "_literals", lambda: None)()  # built at once by older versions


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


def rg_patterns(rg: str, patterns: list[str], flags: list[str]) -> list[str]:
    """The patterns as rg takes them: without capture names (rg joins the patterns into one, where the same
    name twice is an error), and only those its engine accepts (its default one refuses lookarounds)."""
    plain = [regex.sub(r"\(\?P<\w+>", "(", p) for p in patterns]
    return [p for p in plain if subprocess.run([rg, *flags, "-e", p, "--", "/dev/null"], capture_output=True).returncode != 2]


def rg_seconds(cmd: list[str], path: Path, empty: Path, runs: int, cap: float) -> tuple[float | None, float]:
    """Median seconds of ``cmd`` over ``path`` (None past ``cap`` seconds), and over an empty file (its start
    and pattern compile)."""

    def once(target: Path) -> float | None:
        start = time.perf_counter()
        try:
            done = subprocess.run([*cmd, str(target)], capture_output=True, timeout=cap)
        except subprocess.TimeoutExpired:
            return None
        if done.returncode not in (0, 1):
            raise SystemExit(f"{' '.join(cmd)} failed: {done.stderr.decode(errors='replace')[:300]}")
        return time.perf_counter() - start

    start = statistics.median(once(empty) or cap for _ in range(runs))
    first = once(path)
    if first is None:
        return None, start
    return statistics.median([first] + [once(path) or cap for _ in range(runs - 1)]), start


def rg_rows(rg: str, label: str, patterns: list[str], log: Path, empty: Path, megabytes: float, runs: int,
            cap: float) -> tuple[float, bool] | None:
    """Print ripgrep's rows for these patterns; return the rate of its default engine, and whether that is only
    a bound (the run was stopped at the cap)."""
    out = None
    for flags in ([], ["--no-unicode"]):
        given = rg_patterns(rg, patterns, flags)
        with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
            f.write("\n".join(given) + "\n")
        try:
            # rg refuses the 10x set under its default 100 MB regex size limit: the limits are raised, not the set cut
            full, start = rg_seconds([rg, "-j1", "-i", *flags, *RG_LIMITS, "-c", "-f", f.name], log, empty, runs, cap)
        finally:
            Path(f.name).unlink()
        name = f"rg -j1 -i {' '.join(flags) + ' ' if flags else ''}-f, {label}"
        if full is None:
            out = (megabytes / cap, True) if not flags else out
            print(f"{name:<44} {len(given):>8} {start:>9.3f} {'>' + format(cap, '.0f'):>8} {'<' + format(megabytes / cap, '.2f'):>9} "
                  f"{'':>6}  (stopped)", flush=True)
        else:
            rate = megabytes / max(full - start, 1e-3)
            out = (rate, False) if not flags else out
            print(f"{name:<44} {len(given):>8} {start:>9.3f} {full - start:>8.3f} {rate:>9.1f} {'':>6}", flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--mb", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--rg-cap", type=float, default=60.0, help="seconds after which a ripgrep run is stopped")
    parser.add_argument("--engines", default=",".join((["hyperscan"] if hyperscan is not None else []) + ["python"]))
    args = parser.parse_args()
    lines = build_log(args.mb)
    text = "\n".join(lines) + "\n"
    megabytes = len(text.encode()) / (1 << 20)
    work = Path(tempfile.mkdtemp(prefix="bench-scanner-log-"))
    log, empty = work / "big.log", work / "empty.log"
    log.write_text(text)
    empty.write_text("")
    base = load(ROOT / "signatures")
    rg = shutil.which("rg")
    print(f"log: {megabytes:.0f} MB, {len(lines)} lines; real database: {len(base.signatures)} signatures, "
          f"{len(log_patterns(base))} log patterns; {args.runs} runs each, medians"
          + ("" if rg else "; ripgrep not installed (apt-get install ripgrep): its rows are skipped"), flush=True)
    print(f"{'method':<44} {'patterns':>8} {'compile s':>9} {'scan s':>8} {'MB/s':>9} {'x rg':>6}", flush=True)
    if rg:
        full, start = rg_seconds([rg, "-j1", "-c", "-F", "-e", "hipErrorNoBinaryForGpu"], log, empty, args.runs, args.rg_cap)
        took = full or args.rg_cap  # its start left in: reading the file takes about as long as starting
        print(f"{'rg -j1 -F one literal, start included':<44} {1:>8} {start:>9.3f} {took:>8.3f} {megabytes / took:>9.1f}",
              flush=True)
    for label, factor in (("real", 1), ("10x", 10)):
        patterns = log_patterns(padded(base, factor, "python"))
        rg_rate = rg_rows(rg, label, patterns, log, empty, megabytes, args.runs, args.rg_cap) if rg else None

        def ratio(rate: float) -> str:
            if rg_rate is None:
                return f"{'':>6}"
            return f"{('>' if rg_rate[1] else '') + format(rate / rg_rate[0], '.1f'):>6}"

        for engine in args.engines.split(","):
            started = time.perf_counter()
            db = padded(base, factor, engine)
            built(db)
            compile_s = time.perf_counter() - started
            first = match_seconds(db, text)  # cold: the conditions' regexes compiled, Hyperscan's scratch made
            seconds = statistics.median(match_seconds(db, text) for _ in range(args.runs))
            rate = megabytes / seconds
            print(f"{'match, ' + engine + ' scanner, ' + label:<44} {len(patterns):>8} {compile_s:>9.3f} {seconds:>8.3f} "
                  f"{rate:>9.1f} {ratio(rate)}  first run {first:.3f} s, {megabytes / first:.1f} MB/s",
                  flush=True)
        tiny = lines[: max(1, len(lines) // 500)]
        tiny_mb = sum(len(line) + 1 for line in tiny) / (1 << 20)
        naive = naive_seconds(patterns, tiny)
        rate = tiny_mb / naive
        print(f"{'naive regex loop, ' + label + ' (1/500 of the log)':<44} {len(patterns):>8} {'':>9} {naive:>8.3f} "
              f"{rate:>9.1f} {ratio(rate)}",
              flush=True)
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
