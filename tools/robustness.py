"""How much of what the tool gets right survives the ways users paste a log.

    python3 tools/robustness.py [--corpus DIR] [--part design|holdout|all] [--jobs N] [NAME ...]

Every positive case of the corpus that the tool names right as it was posted is run again with its
input files passed through one of the alterations a real paste goes through (triage/corpus/pastes.py:
a log collector's prefix on every line, a quoted reply, line numbers, CRLF ends, colour codes, a
page's HTML source, a terminal's or a mail editor's hard wrap...). It prints,
for each transformation, how many of those cases are still right. A signature or parser that
holds only for the bare form shows here before a user's log shows it. The held-out part is
reported as counts only.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import case_folders, held_out, read_label, read_seen  # noqa: E402
from triage.corpus.pastes import TRANSFORMS  # noqa: E402


def _answer(folder: Path, transform: str | None) -> bool:
    """Whether the tool names the case right (as tools/accuracy.py counts it), its input files passed through
    ``transform`` (None: as posted)."""
    from triage.pipeline import triage

    label = read_label(folder)
    if transform is None:
        return label.right(triage([str(folder)]).top.klass)
    tmp = Path(tempfile.mkdtemp(prefix="robustness-"))
    try:
        for path in folder.iterdir():
            if path.name == "label.yaml" or not path.is_file():
                continue
            try:
                text = path.read_bytes().decode("utf-8")
            except UnicodeDecodeError:  # binary inputs (a minidump, a core) go through unchanged
                shutil.copy(path, tmp / path.name)
                continue
            (tmp / path.name).write_text(TRANSFORMS[transform](text), encoding="utf-8", newline="")
        return label.right(triage([str(tmp)]).top.klass)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run(job: tuple[str, str | None]) -> tuple[str, str | None, bool]:
    folder, transform = job
    return folder, transform, _answer(Path(folder), transform)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"transformations (default all: {', '.join(TRANSFORMS)})")
    parser.add_argument("--corpus", type=Path, default=ROOT / "corpus" / "realworld")
    parser.add_argument("--part", choices=("design", "holdout", "all"), default="design")
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    unknown = [n for n in args.names if n not in TRANSFORMS]
    if unknown:
        parser.error(f"no transformation {', '.join(unknown)}; choose from {', '.join(TRANSFORMS)}")
    names = args.names or list(TRANSFORMS)
    seen = read_seen(args.corpus)
    folders = []
    for folder in case_folders(args.corpus):
        label = read_label(folder)
        part = "holdout" if held_out(label.source, seen) else "design"
        if args.part in ("all", part) and not label.negative:
            folders.append(str(folder))
    with ProcessPoolExecutor(args.jobs) as pool:
        right = [f for f, _, ok in pool.map(_run, [(f, None) for f in folders], chunksize=4) if ok]
        results = list(pool.map(_run, [(f, n) for n in names for f in right], chunksize=4))
    print(f"{len(right)} of {len(folders)} positive cases ({args.part}) right as posted; still right after:")
    for name in names:
        kept = [f for f, n, ok in results if n == name and ok]
        lost = sorted(Path(f).name for f, n, ok in results if n == name and not ok)
        print(f"  {name:16} {len(kept):4d} / {len(right)}")
        if args.part == "design":
            for case in lost[:5]:
                print(f"      lost: {case}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
