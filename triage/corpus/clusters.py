"""Cluster the cases no signature explains: bucket by exact stack hash and templates, then merge similar buckets.

Bucketing first (CASR's all-pairs matrix does not scale): cases with the same stack hash
and the same set of log templates are one bucket. Buckets are then compared only with the
buckets they share a rare feature with (an inverted index), and merged when their weighted
Jaccard similarity is at least ``THRESHOLD``. A feature is a log template or a normalized
frame; its weight is its inverse document frequency, so lines every unknown case prints
(``Segmentation fault``) count for little. Each cluster gets its size, its most typical case
and the lines that set it apart: templates most of its cases have and other unknown cases lack.
Cluster ids (``U1``, ``U2``, ...) follow size, then the typical case's id, so the same table
gives the same ids.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from triage.match.templates import template

if TYPE_CHECKING:
    import pandas

THRESHOLD = 0.5
FRAMES_USED = 5
# A feature in more than this share of unknown buckets is too common to find candidates by.
COMMON = 0.3
DISTINGUISHING = 5


@dataclass
class Cluster:
    id: str
    cases: list[str]
    typical: str
    lines: list[str]                                # the typical case's lines that set the cluster apart
    templates: list[str]                            # the same lines as templates
    frames: list[str] = field(default_factory=list)  # the typical case's normalized frames
    stack_hash: str | None = None                   # the most common stack hash
    hint: str | None = None                         # the most common runner-up signature

    @property
    def size(self) -> int:
        return len(self.cases)


def _strings(column: "pandas.Series") -> list[str | None]:
    import pandas as pd

    return [None if pd.isna(v) else str(v) for v in column.astype("object")]


def _features(templates: list[str], frames: list[str]) -> frozenset[str]:
    return frozenset([f"t:{t}" for t in templates] + [f"f:{f}" for f in frames[:FRAMES_USED]])


def _similarity(a: frozenset[str], b: frozenset[str], weight: dict[str, float]) -> float:
    union = sum(weight[f] for f in a | b)
    return sum(weight[f] for f in a & b) / union if union else 0.0


def _union_find(count: int) -> tuple[list[int], Callable[[int], int]]:
    parent = list(range(count))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    return parent, find


def cluster(table: "pandas.DataFrame") -> list[Cluster]:
    """The clusters of the ``unknown`` rows of a corpus table, largest first."""
    unknown = table[table["class"].astype("object") == "unknown"]
    if unknown.empty:
        return []
    ids = unknown["case"].astype(str).tolist()
    lines = [list(v) for v in unknown["key_lines"]]
    known: dict[str, str] = {}  # the same line in many cases is templated once
    shapes = [[known[line] if line in known else known.setdefault(line, template(line)) for line in case_lines]
              for case_lines in lines]
    frames = [list(v) for v in unknown["stack_frames"]]
    hashes = _strings(unknown["stack_hash"])
    hints = _strings(unknown["second_signature"])
    features = [_features(s, f) for s, f in zip(shapes, frames)]

    buckets: dict[tuple, list[int]] = defaultdict(list)
    for i, feats in enumerate(features):
        buckets[(hashes[i], feats)].append(i)
    keys = list(buckets)
    bucket_features = [key[1] for key in keys]
    frequency = Counter(f for feats in bucket_features for f in feats)
    total = len(keys)
    weight = {f: math.log(1 + total / n) for f, n in frequency.items()}

    index: dict[str, list[int]] = defaultdict(list)
    for b, feats in enumerate(bucket_features):
        for f in feats:
            if frequency[f] <= max(2, COMMON * total):
                index[f].append(b)
    parent, find = _union_find(total)
    for b, feats in enumerate(bucket_features):
        candidates = {c for f in feats for c in index.get(f, ()) if c > b}
        for c in candidates:
            same_stack = keys[b][0] is not None and keys[b][0] == keys[c][0]
            if find(b) != find(c) and (same_stack or _similarity(feats, bucket_features[c], weight) >= THRESHOLD):
                parent[find(c)] = find(b)
    groups: dict[int, list[int]] = defaultdict(list)
    for b, key in enumerate(keys):
        groups[find(b)].extend(buckets[key])

    made = [_describe(sorted(members, key=lambda i: ids[i]), ids, frames, hashes, hints, features)
            for members in groups.values()]
    _distinguish(made, lines, shapes)
    made.sort(key=lambda entry: (-entry[2].size, entry[2].typical))
    for number, (_, _, item) in enumerate(made, 1):
        item.id = f"U{number}"
    return [item for _, _, item in made]


def _describe(members: list[int], ids: list[str], frames: list[list[str]], hashes: list, hints: list,
              features: list[frozenset[str]]) -> tuple[list[int], int, Cluster]:
    """A cluster with its typical case: the member whose features are the most shared within it."""
    share = Counter(f for i in members for f in features[i])
    typical = max(members, key=lambda i: (sum(share[f] for f in features[i]) / max(len(features[i]), 1), -i))
    stack = Counter(h for i in members if (h := hashes[i]))
    hint = Counter(h for i in members if (h := hints[i]))
    return members, typical, Cluster(id="", cases=[ids[i] for i in members], typical=ids[typical], lines=[], templates=[],
                            frames=frames[typical][:FRAMES_USED],
                            stack_hash=stack.most_common(1)[0][0] if stack else None,
                            hint=hint.most_common(1)[0][0] if hint else None)


def _distinguish(made: list[tuple[list[int], int, Cluster]], lines: list[list[str]], shapes: list[list[str]]) -> None:
    """Fill each cluster's lines: templates most members have, scored by share inside minus share outside."""
    everywhere = Counter(s for case_shapes in shapes for s in set(case_shapes))
    for members, typical, item in made:
        own = dict(zip(shapes[typical], lines[typical]))
        inside = Counter(s for i in members for s in set(shapes[i]))
        outside_total = max(len(shapes) - len(members), 1)
        scored = sorted(((n / len(members) - (everywhere[shape] - n) / outside_total, shape)
                         for shape, n in inside.items() if n * 2 >= len(members) and shape in own),
                        key=lambda x: (-x[0], x[1]))
        chosen = {shape for score, shape in scored[:DISTINGUISHING] if score > 0}
        item.templates = [shape for shape in own if shape in chosen]  # in the typical case's order
        item.lines = [own[shape] for shape in item.templates]


def table(clusters: list[Cluster]) -> "pandas.DataFrame":
    """The clusters as a DataFrame: id, size, typical case, distinguishing lines, stack hash, hint, cases."""
    import pandas as pd

    return pd.DataFrame({
        "cluster": [c.id for c in clusters],
        "size": pd.array([c.size for c in clusters], dtype="Int64"),
        "typical_case": [c.typical for c in clusters],
        "lines": [c.lines for c in clusters],
        "stack_hash": pd.array([c.stack_hash for c in clusters], dtype="string"),
        "hint": pd.array([c.hint for c in clusters], dtype="string"),
        "cases": [c.cases for c in clusters],
    })


def membership(clusters: list[Cluster]) -> dict[str, str]:
    """Case id -> cluster id."""
    return {case: c.id for c in clusters for case in c.cases}
