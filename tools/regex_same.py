"""Whether a rewritten regex matches the same text as the one it replaces, and how fast each fails on hostile lines.

    python3 tools/regex_same.py OLD NEW [--method search|match|sub] [--ignore-case] [--groups p,s] [--random 200000]

A regex that backtracks on a long line is fixed by rewriting it, and a rewrite must not change what
it matches. This compares OLD and NEW (``re`` syntax) on every line of corpus/realworld/*/input.txt,
tests/fixtures and ../shared/realworld, on those lines with a few characters inserted, deleted or
changed, and on short random strings over the characters of the two patterns (plus white space, a
letter, a digit, a character outside ASCII and each ``--token``). ``search`` and ``match`` compare the span and every
named group (or only ``--groups``); ``sub`` compares the text with each match replaced. Prints the
first differences and their count (the exit status is 1 when there is one), then the median time
of each pattern on lines of 4,000 spaces, tabs, dots, letters, digits, slashes and dashes, with and
without a suffix that makes most patterns fail late (after each ``--prefix``).
"""

from __future__ import annotations

import argparse
import random
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCES = [ROOT / "corpus" / "realworld", ROOT / "tests" / "fixtures", ROOT.parent / "shared" / "realworld"]
FILLERS = (" ", "\t", ".", "a", "0", "/", "-", " \t", "a.", "0a")
SUFFIXES = ("", "!", "(", "\x01")
LONG = 4000


def real_lines() -> list[str]:
    """Every distinct line (cut at 4,096 characters) of the real logs and fixtures."""
    found: set[str] = set()
    for source in SOURCES:
        files = source.glob("*/input.txt") if source.name == "realworld" and source.parent.name == "corpus" \
            else source.rglob("*")
        for path in files:
            if not path.is_file():
                continue
            try:
                found.update(line[:4096] for line in path.read_text(encoding="utf-8", errors="replace").splitlines())
            except OSError:
                continue
    return sorted(found)


def outcome(pattern: re.Pattern[str], method: str, groups: list[str] | None) -> Callable[[str], object]:
    """What the code reads of one call: the replaced text for ``sub``, else the span and the groups."""
    if method == "sub":
        return lambda text: pattern.sub("\x00", text)
    names = groups if groups is not None else list(pattern.groupindex)
    call = getattr(pattern, method)

    def read(text: str) -> object:
        m = call(text)
        if m is None:
            return None
        return (m.span() if groups is None else None), tuple((m.span(g), m[g]) for g in names)
    return read


def mutate(rng: random.Random, text: str, alphabet: list[str]) -> str:
    chars = list(text)
    for _ in range(rng.randint(1, 4)):
        i = rng.randint(0, len(chars))
        op = rng.random()
        if op < 0.4 or not chars:
            chars.insert(i, rng.choice(alphabet))
        elif op < 0.7:
            del chars[min(i, len(chars) - 1)]
        else:
            chars[min(i, len(chars) - 1)] = rng.choice(alphabet)
    return "".join(chars)


def seconds(pattern: re.Pattern[str], method: str, text: str, runs: int = 3) -> float:
    call = (lambda: pattern.sub("", text)) if method == "sub" else (lambda: getattr(pattern, method)(text))
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("old")
    parser.add_argument("new")
    parser.add_argument("--method", choices=("search", "match", "fullmatch", "sub"), default="search")
    parser.add_argument("--ignore-case", action="store_true")
    parser.add_argument("--groups", help="compare only these named groups (comma-separated), not the whole span")
    parser.add_argument("--prefix", action="append", default=[""],
                        help="also time the long lines after this text (a match's start, such as 'x.dll!f'); repeatable")
    parser.add_argument("--token", action="append", default=[],
                        help="a piece of text the random strings are also made of (such as '(%%' or ' Line '); repeatable")
    parser.add_argument("--random", type=int, default=200_000, help="mutated lines and random strings, in all")
    args = parser.parse_args()
    flags = re.IGNORECASE if args.ignore_case else 0
    old, new = re.compile(args.old, flags), re.compile(args.new, flags)
    groups = args.groups.split(",") if args.groups else None
    read_old, read_new = outcome(old, args.method, groups), outcome(new, args.method, groups)
    alphabet = sorted(set(args.old + args.new) | set(" \ta0é")) + args.token
    rng = random.Random(1)
    real = real_lines()
    samples = [("real", t) for t in real]
    samples += [("mutated", mutate(rng, rng.choice(real), alphabet)) for _ in range(args.random // 2)] if real else []
    samples += [("random", "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30))))
                for _ in range(args.random // 2)]
    differences, matched = 0, dict.fromkeys(("real", "mutated", "random"), 0)
    for kind, text in samples:
        a, b = read_old(text), read_new(text)
        matched[kind] += a is not None and a != text
        if a != b:
            differences += 1
            if differences <= 5:
                print(f"differs on {text[:160]!r}:\n  old {a!r}\n  new {b!r}")
    counts = ", ".join(f"{sum(1 for k, _ in samples if k == kind)} {kind} ({n} matched)" for kind, n in matched.items())
    print(f"{differences} differences over {counts}")
    print(f"{'line':28} {'old ms':>9} {'new ms':>9}")
    for prefix in args.prefix:
        for filler in FILLERS:
            for suffix in SUFFIXES:
                text = prefix + filler * (LONG // len(filler)) + suffix
                shown = repr(prefix + (filler * 3)[:6] + "..." + suffix)
                print(f"{shown:28} {seconds(old, args.method, text) * 1000:9.2f} {seconds(new, args.method, text) * 1000:9.2f}")
    return 1 if differences else 0


if __name__ == "__main__":
    sys.exit(main())
