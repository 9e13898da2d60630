"""How long each module-level regex of the parsers, derivers and matchers takes to fail on one long hostile line.

    python3 bench/bench_hostile_lines.py [--chars 4000] [--top 25] [--runs 3] [--modules triage.parsers.fault ...]

A single regex call cannot be interrupted by the analysis's deadline (it is checked between
lines), so one pattern that backtracks over a long run of spaces, tabs or dots can stall a
triage. Each line is a prefix, ``--chars`` of one filler character and a suffix chosen to make
most patterns fail late (the fillers are the ones that nested or adjacent quantifiers over
overlapping classes tend to share: white space, dots, word characters, digits, slashes). The
default length is the longest line the line parsers read (``triage.parsers.lines.MAX_LINE``).

For each pattern, prints the median of ``--runs`` timings of ``search`` on its worst line, the line
(shortened), and its ratio to a pattern that reads the line once (``amdhip64_\\d``, case-blind) timed on that
line in the same run, so that figures from different machines compare. Each pattern is screened
on lines a tenth as long and timed on its three worst shapes. A pattern the code calls only
with ``match`` or ``fullmatch`` shows at its cost as a ``search``: see how it is called before
changing it (after the fixes of 2026-12, wrappers._COMPOSE and windriver._FILE_VERSION are such).
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import regex

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.lazy import LazyPattern, LazyRegex
from triage.parsers.lines import MAX_LINE

PACKAGES = ("triage.parsers", "triage.derive", "triage.match")
FILLERS = (" ", "\t", ".", "a", "0", "/", "\\", "-", ":", "x ", ". ", "a.", "0 ", "\t ", "a ")
PREFIXES = ("", "x", "x.dll!f", "/x", "C:\\x", "0x1(", "a=", "`", "#0 ", "[", "(", "a:", "HIP ", "0x")
SUFFIXES = ("", "!", "\x01", "(")
LINEAR = re.compile(r"(?i)amdhip64_\d")  # one pass over the line: the baseline of each ratio


def patterns(modules: list[str]) -> list[tuple[str, Any]]:
    """Every module-level regex (compiled or lazy, of re or regex) of ``modules``, named ``module.NAME``."""
    found = []
    for name in modules:
        module = importlib.import_module(name)
        for attr, value in vars(module).items():
            if isinstance(value, LazyRegex):  # a pattern of the regex module (\p{...} classes): compiled by it
                found.append((f"{name}.{attr}", regex.compile(value.pattern, value.flags)))
            elif isinstance(value, LazyPattern):
                found.append((f"{name}.{attr}", re.compile(value.pattern, value.flags)))
            elif isinstance(value, re.Pattern) and isinstance(value.pattern, str):
                found.append((f"{name}.{attr}", value))
    return found


def all_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        path = ROOT / package.replace(".", "/")
        names += [f"{package}.{m.name}" for m in pkgutil.iter_modules([str(path)])]
    return names


def timed(pattern: re.Pattern[str], line: str) -> float:
    started = time.perf_counter()
    pattern.search(line)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--chars", type=int, default=MAX_LINE - 96)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modules", nargs="*", default=None)
    args = parser.parse_args()
    shapes = [(p, f, s) for f in FILLERS for p in PREFIXES for s in SUFFIXES]

    def line(shape: tuple[str, str, str], chars: int) -> str:
        return shape[0] + shape[1] * (chars // len(shape[1])) + shape[2]

    rows = []
    for name, pattern in patterns(args.modules or all_modules()):
        # screened on lines a tenth as long (a quadratic pattern keeps its worst shapes there), the worst three timed
        screened = sorted(shapes, key=lambda shape: -timed(pattern, line(shape, args.chars // 10)))[:3]
        worst, worst_line = 0.0, ""
        for shape in screened:
            text = line(shape, args.chars)
            seconds = statistics.median(timed(pattern, text) for _ in range(args.runs))
            if seconds >= worst:
                worst, worst_line = seconds, text
        rows.append((worst, name, worst_line))
    rows.sort(reverse=True)
    print(f"{len(rows)} patterns, {len(shapes)} line shapes of about {args.chars} characters, median of {args.runs} runs")
    print(f"{'seconds':>9} {'x linear':>10}  pattern  (worst line)")
    for seconds, name, text in rows[:args.top]:
        baseline = statistics.median(timed(LINEAR, text) for _ in range(args.runs)) or 1e-9
        shown = repr(text[:12] + "..." + text[-4:]) if len(text) > 16 else repr(text)
        print(f"{seconds:9.4f} {seconds / baseline:10.0f}  {name}  {shown}")


if __name__ == "__main__":
    main()
