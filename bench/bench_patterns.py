"""Which patterns a Hyperscan pass spends its time on: each scanner's MB/s on synthetic cases, and its costliest
patterns, each timed alone and by what the whole pass saves without it.

    python3 bench/bench_patterns.py [--cases 30] [--size-kb 90] [--top 8] [--runs 5] [--pass anchors]

The passes are those a triage reads (README, "Scanning"): the parsers' needles, the signatures' anchors, and the
one pass of every signature's other patterns. Each pattern's Hyperscan expression and flags, the ones the
scanner's database is built from (``LineScanner.expressions``), are compiled alone: the ones slowest alone are the
candidates, and the pass is compiled again without each of them, which says what it really costs beside the
others (Hyperscan shares work between patterns, so the two differ). A pattern whose start is in most lines of a
log (``hip``, a runtime log's ``:3:``) followed by a long run, or one asked for its start of match, shows here.
Medians of ``--runs`` scans of all the cases' texts; the figures move by some 10% between runs on a busy machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import timeit
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.synth import reuse_or_generate  # noqa: E402
from triage.ingest import read_inputs  # noqa: E402
from triage.match import load  # noqa: E402
from triage.parsers import lines as parser_lines  # noqa: E402
from triage.resources import data_dir  # noqa: E402
from triage.scan import scanner as scan  # noqa: E402


def _texts(folder: Path, cases: int, size_kb: float) -> list[bytes]:
    """The text of every file of the synthetic cases, as Hyperscan reads it."""
    texts = []
    for case in reuse_or_generate(folder, cases, seed=7, size_kb=size_kb)[0]:
        artifacts, _ = read_inputs([str(case)])
        texts += [a.text.encode("utf-8", "surrogatepass") + b"\n" for a in artifacts if a.text]
    return texts


def _time(chosen: list[tuple[int, bytes]], flags: list[int], texts: list[bytes], runs: int) -> float:
    """The median time of one scan of every text with a database of ``chosen`` (with ``flags``)."""
    database = scan._hyperscan_database(chosen, flags)
    scratch = scan.hyperscan.Scratch(database)

    def scan_all() -> None:
        for text in texts:
            database.scan(text, match_event_handler=lambda *_: None, scratch=scratch)

    return statistics.median(timeit.repeat(scan_all, number=1, repeat=runs))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--cases", type=int, default=30)
    parser.add_argument("--size-kb", type=float, default=90)
    parser.add_argument("--top", type=int, default=8, help="patterns shown for each pass")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--pass", dest="passes", action="append", choices=("parsers", "anchors", "others"),
                        help="only these passes (default: all three)")
    parser.add_argument("--workdir", type=Path, default=Path(tempfile.gettempdir()) / "hip-triage-bench-patterns")
    args = parser.parse_args()
    if scan.hyperscan is None:
        parser.error("this measures Hyperscan's passes: pip install 'hip-triage[fast]'")
    db = load(data_dir("signatures"))
    scanners = {"parsers": parser_lines._WHOLE.scanner(), "anchors": db.prefilters.groups[0],
                "others": db.prefilters.together}
    texts = _texts(args.workdir, args.cases, args.size_kb)
    mb = sum(map(len, texts)) / 1e6
    print(f"{args.cases} synthetic cases, {mb:.1f} MB of text; medians of {args.runs} scans")
    for name in args.passes or list(scanners):
        scanner = scanners[name]
        chosen, flags = scanner.expressions()
        whole = _time(chosen, flags, texts, args.runs)
        print(f"\n{name}: {len(chosen)} expressions, {whole * 1000:.1f} ms, {mb / whole:.1f} MB/s")
        alone = sorted(((_time([item], [f], texts, args.runs), at) for at, (item, f) in enumerate(zip(chosen, flags))),
                       reverse=True)
        print(f"  {'alone ms':>8} {'saved ms':>8} {'saved':>6}  pattern (start of match asked: *)")
        for took, at in alone[:args.top]:
            rest = [i for i in range(len(chosen)) if i != at]
            saved = whole - _time([chosen[i] for i in rest], [flags[i] for i in rest], texts, args.runs)
            source = scanner.patterns[chosen[at][0]]
            som = "*" if flags[at] & scan.hyperscan.HS_FLAG_SOM_LEFTMOST else " "
            print(f"  {took * 1000:8.2f} {saved * 1000:8.2f} {saved / whole:6.0%}  "
                  f"{som}{source[:110]}{'...' if len(source) > 110 else ''}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
