"""Build signatures/similar-cases.json: every labelled case of corpus/realworld with the features
reports compare a new case on (triage/match/similar.py).

    python3 tools/build_similar_index.py [--jobs N]

Run it after the corpus or the signatures change; the index only feeds the "similar real
cases" list of reports, never a diagnosis.
"""

from __future__ import annotations

import argparse
import json
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from triage.corpus.labels import case_folders, read_label  # noqa: E402
from triage.match.similar import INDEX, features, make_index  # noqa: E402


def _entry(folder: str) -> tuple[str, str, str, str, frozenset[str]]:
    from triage.pipeline import triage

    label = read_label(Path(folder))
    result = triage([folder])
    return Path(folder).name, label.klass, label.conclusion, label.source, features(result.case, result.diagnoses)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args()
    folders = [str(f) for f in case_folders(ROOT / "corpus" / "realworld")]
    with ProcessPoolExecutor(args.jobs) as pool:
        entries = list(pool.map(_entry, folders, chunksize=8))
    out = ROOT / "signatures" / INDEX
    out.write_text(json.dumps(make_index(entries), indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{len(entries)} cases -> {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
