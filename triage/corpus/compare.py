"""Compare two corpora (two releases, two months): which signatures and unknown clusters appeared, grew, shrank or vanished.

Counts are compared as shares of each corpus, since the two rarely have the same size: a
group *grew* when its share rose by at least ``CHANGE`` (relative) and *shrank* when it fell
by as much. Unknown cases of both sides are clustered together, so a cluster means the same
crash on both sides.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from triage.corpus.clusters import cluster, membership
from triage.corpus.rows import typed
from triage.corpus.run import CorpusError

CHANGE = 0.2


def load_table(source: str | Path | pd.DataFrame, **analyze_options: object) -> pd.DataFrame:
    """A corpus table from a DataFrame, a .parquet or .csv written by ``triage corpus -o``, or a corpus folder."""
    if isinstance(source, pd.DataFrame):
        return source
    path = Path(source)
    if path.is_file() and path.suffix.lower() == ".parquet":
        try:
            return typed(pd.read_parquet(path))
        except ImportError:
            raise CorpusError("reading parquet needs pyarrow, which hip-triage depends on: pip install pyarrow") from None
        except Exception as err:
            raise CorpusError(f"{path}: not a readable parquet table ({err})") from None
    if path.is_file() and path.suffix.lower() == ".csv":
        try:
            return typed(pd.read_csv(path, dtype=str, keep_default_na=False, na_values=[""]))
        except Exception as err:
            raise CorpusError(f"{path}: not a readable CSV table ({err})") from None
    from triage.corpus import analyze

    return analyze([path], **analyze_options)  # type: ignore[arg-type]


def _change(old: int, new: int, old_total: int, new_total: int) -> str:
    if old == 0:
        return "appeared"
    if new == 0:
        return "vanished"
    before, after = old / old_total, new / new_total
    if after >= before * (1 + CHANGE):
        return "grew"
    if after <= before * (1 - CHANGE):
        return "shrank"
    return "same"


def compare(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """One row per signature and per unknown cluster: counts and shares on each side and the change."""
    both = pd.concat([old.assign(_side="old"), new.assign(_side="new")], ignore_index=True)
    both["_case"] = both["_side"] + ":" + both["case"].astype(str)
    clusters = cluster(both.assign(case=both["_case"]))
    labels = {c.id: (c.lines[0] if c.lines else ", ".join(c.frames[:2])) for c in clusters}
    member = membership(clusters)
    both["_group"] = both["signature"].astype("object")
    known = both["class"].astype("object") != "unknown"
    both["_kind"] = "signature"
    both.loc[~known, "_kind"] = "cluster"
    both.loc[~known, "_group"] = both.loc[~known, "_case"].map(member)
    both = both[both["_group"].notna()]
    counts = both.groupby(["_kind", "_group", "_side"]).size().unstack("_side", fill_value=0)
    for side in ("old", "new"):
        if side not in counts:
            counts[side] = 0
    totals = {"old": max(len(old), 1), "new": max(len(new), 1)}
    out = pd.DataFrame({
        "kind": [k for k, _ in counts.index],
        "group": [g for _, g in counts.index],
        "old": pd.array(counts["old"].tolist(), dtype="Int64"),
        "new": pd.array(counts["new"].tolist(), dtype="Int64"),
    })
    out["old_share"] = out["old"].astype("float64") / totals["old"]
    out["new_share"] = out["new"].astype("float64") / totals["new"]
    out["change"] = [_change(int(o), int(n), totals["old"], totals["new"]) for o, n in zip(out["old"], out["new"])]
    out["example"] = [labels.get(g, "") if k == "cluster" else "" for k, g in zip(out["kind"], out["group"])]
    order = {"appeared": 0, "grew": 1, "shrank": 2, "vanished": 3, "same": 4}
    out = out.sort_values(by=["change", "new", "group"], key=lambda c: c.map(order) if c.name == "change" else (
        -c if c.name == "new" else c)).reset_index(drop=True)
    out["change"] = out["change"].astype(pd.CategoricalDtype(list(order)))
    return out
