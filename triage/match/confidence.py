"""How sure an answer is: the hand-set strengths of the signatures as a prior, and weights fitted
on the design part of the real-world corpus on top of them.

Every candidate has an evidence score, a noisy-OR of the strengths of its conditions that held:
``S = (1 - prod(1 - strength_i * factor_i)) * prod(1 - strength_j * factor_j)`` (``j``:
counter-evidence). The score ranks the candidates and decides whether any is sure enough; the
signatures' own examples pin it down.

The answer (the top candidate) then gets a confidence: the probability, fitted on labelled real
cases, that an answer with this evidence is right. A logistic regression on the answer's score,
its lead over the runner-up, its signature and the conditions of it that held::

    confidence = sigmoid(intercept + logit(S1) + lead * (logit(S1) - logit(S2)) + delta_sig + sum(delta_k * factor_k))

The weights carry an L2 penalty: a signature or condition moves its answers' confidence away from
the score only as far as the real answers it gave support (``intercept`` is 0: one common shift
would lift every answer by the success of the design part, from which the signatures were written). ``signatures/_weights.yaml`` holds the fitted numbers and how
they were made (``python3 tools/fit_weights.py``); without it the score is the confidence. The
other candidates show their scores: they are what the answer was preferred to, not answers.
"""

from __future__ import annotations

import math
from dataclasses import field
from pathlib import Path
from typing import Any

from triage.lazy import dataclass
from triage.resources import load_yaml

CLIP = 1e-3  # scores are clipped to [CLIP, 1 - CLIP] before their logit is taken

Held = dict[str, tuple[float, float, bool]]  # condition id -> (strength, factor, against)


@dataclass(frozen=True)
class Weights:
    """The fitted numbers of ``signatures/_weights.yaml``; all zero (the score is the confidence) without it."""

    intercept: float = 0.0
    lead: float = 0.0
    deltas: dict[str, dict[str, float]] = field(default_factory=dict)  # signature id -> condition id -> delta
    fitted: bool = False


def read_weights(path: Path) -> tuple[Weights, list[str]]:
    """The fitted weights in ``path`` (none when the file is absent); problems as text."""
    if not path.is_file():
        return Weights(), []
    try:
        data = load_yaml(path) or {}
        deltas = {str(sig): {str(c): float(v) for c, v in (conds or {}).items()}
                  for sig, conds in (data.get("deltas") or {}).items()}
        return Weights(float(data["intercept"]), float(data["lead"]), deltas, True), []
    except Exception as err:  # noqa: BLE001 - a broken weights file falls back to the scores, with a warning
        return Weights(), [f"{path.name} unreadable ({type(err).__name__}: {err}); confidences are the evidence scores"]


def score(held: Held) -> float:
    """The noisy-OR of the conditions that held."""
    remaining = kept = 1.0
    for strength, factor, against in held.values():
        if against:
            kept *= 1 - strength * factor
        else:
            remaining *= 1 - strength * factor
    return (1 - remaining) * kept


def logit(p: float) -> float:
    p = min(max(p, CLIP), 1 - CLIP)
    return math.log(p / (1 - p))


def features(signature: str, held: Held, runner_up: float) -> tuple[float, float, dict[str, float]]:
    """The model's inputs for an answer: logit of its score, its lead over the runner-up's score, and
    the factor of each of its conditions that held (keyed ``signature/condition``)."""
    first = logit(score(held))
    return first, first - logit(runner_up), {f"{signature}/{c}": f for c, (_, f, _) in held.items()}


def confidence(weights: Weights, signature: str, held: Held, runner_up: float) -> float:
    """The answer's confidence (its score when no weights were fitted)."""
    if not weights.fitted:
        return score(held)
    first, lead, factors = features(signature, held, runner_up)
    deltas = weights.deltas.get(signature, {})
    z = weights.intercept + first + weights.lead * lead + deltas.get("*", 0.0) + sum(
        deltas.get(key.split("/", 1)[1], 0.0) * f for key, f in factors.items())
    return 1 / (1 + math.exp(-max(min(z, 40.0), -40.0)))


def as_yaml(weights: Weights, about: dict[str, Any]) -> str:
    """The weights file's text: what it is and how it was made, then the numbers."""
    import json

    import yaml

    lines = ["# Fitted confidence weights (triage/match/confidence.py). Do not edit by hand:",
             "#   python3 tools/fit_weights.py",
             "# regenerates them from the design part of corpus/realworld and the signatures' own examples.",
             yaml.safe_dump(about, sort_keys=False, allow_unicode=True).rstrip(),
             f"intercept: {weights.intercept:.4f}", f"lead: {weights.lead:.4f}", "deltas:"]
    for sig in sorted(weights.deltas):
        conds = {c: round(d, 3) for c, d in sorted(weights.deltas[sig].items()) if abs(d) >= 0.005}
        if conds:
            lines.append(f"  {sig}:")
            lines.extend(f"    {json.dumps(c)}: {d}" for c, d in conds.items())
    return "\n".join(lines) + "\n"
