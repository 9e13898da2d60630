"""How sure a diagnosis is: the hand-set strengths of a signature's conditions as a prior, and
weights fitted on the design part of the real-world corpus on top of them.

The prior is a noisy-OR: ``S = (1 - prod(1 - strength_i * factor_i)) * prod(1 - strength_j * factor_j)``
over the conditions that held (``j``: counter-evidence). The fitted model is a logistic
regression with the prior as one input::

    confidence = sigmoid(intercept + slope * logit(S) + sum(delta_k * factor_k))

``intercept`` and ``slope`` calibrate every signature at once; ``delta_k`` moves one condition
away from what its strength says, where the corpus shows it is better or worse evidence (an
L2 penalty keeps it at 0 otherwise). ``signatures/_weights.yaml`` holds the fitted numbers and
says how they were made (``python3 tools/fit_weights.py`` regenerates it); without the file
the prior is the confidence.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from triage.resources import load_yaml

CLIP = 1e-3  # the prior's logit is taken of S clipped to [CLIP, 1 - CLIP]


@dataclass(frozen=True)
class Weights:
    intercept: float = 0.0
    slope: float = 1.0
    deltas: dict[str, dict[str, float]] = field(default_factory=dict)  # signature id -> condition id -> delta
    fitted: bool = False


def read_weights(path: Path) -> tuple[Weights, list[str]]:
    """The fitted weights in ``path`` (the identity model when the file is absent); problems as text."""
    if not path.is_file():
        return Weights(), []
    try:
        data = load_yaml(path) or {}
        deltas = {str(sig): {str(c): float(v) for c, v in (conds or {}).items()}
                  for sig, conds in (data.get("deltas") or {}).items()}
        return Weights(float(data["intercept"]), float(data["slope"]), deltas, True), []
    except Exception as err:  # noqa: BLE001 - a broken weights file falls back to the prior, with a warning
        return Weights(), [f"{path.name} unreadable ({type(err).__name__}: {err}); confidences are the hand-set priors"]


def prior(strengths: list[tuple[float, float, bool]]) -> float:
    """The noisy-OR of (strength, factor, against) over the conditions that held."""
    remaining = kept = 1.0
    for strength, factor, against in strengths:
        if against:
            kept *= 1 - strength * factor
        else:
            remaining *= 1 - strength * factor
    return (1 - remaining) * kept


def logit(p: float) -> float:
    p = min(max(p, CLIP), 1 - CLIP)
    return math.log(p / (1 - p))


def confidence(weights: Weights, signature: str, held: dict[str, tuple[float, float, bool]]) -> float:
    """The diagnosis's confidence from the conditions that held: condition id -> (strength, factor, against)."""
    s = prior(list(held.values()))
    if not weights.fitted:
        return s
    deltas = weights.deltas.get(signature, {})
    z = weights.intercept + weights.slope * logit(s) + sum(deltas.get(c, 0.0) * f for c, (_, f, _) in held.items())
    return 1 / (1 + math.exp(-max(min(z, 40.0), -40.0)))


def as_yaml(weights: Weights, about: dict[str, Any]) -> str:
    """The weights file's text: what it is and how it was made, then the numbers."""
    import yaml

    lines = ["# Fitted confidence weights (triage/match/confidence.py). Do not edit by hand:",
             "#   python3 tools/fit_weights.py",
             "# regenerates them from the design part of corpus/realworld and the signatures' own examples.",
             yaml.safe_dump(about, sort_keys=False, allow_unicode=True).rstrip(),
             f"intercept: {weights.intercept:.4f}", f"slope: {weights.slope:.4f}", "deltas:"]
    for sig in sorted(weights.deltas):
        conds = {c: round(d, 3) for c, d in sorted(weights.deltas[sig].items()) if abs(d) >= 0.005}
        if conds:
            lines.append(f"  {sig}:")
            lines.extend(f"    {c}: {d}" for c, d in conds.items())
    return "\n".join(lines) + "\n"
