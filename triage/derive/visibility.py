"""Whether the device-visibility variables of a case select no GPU at all: ``visible_devices_select_none``.

ROCr applies ``ROCR_VISIBLE_DEVICES`` first; HIP then numbers only the GPUs ROCr left, from 0, and applies
``HIP_VISIBLE_DEVICES`` (``CUDA_VISIBLE_DEVICES`` where that is unset, as job launchers and PyTorch set it) to them.
So ``ROCR_VISIBLE_DEVICES=1 HIP_VISIBLE_DEVICES=1`` leaves nothing: ROCr keeps one GPU, HIP's index 1 names a
second. The fact is ``yes`` when every HIP index is at or past the number of GPUs ROCr kept (or negative), ``no``
when one of them names a kept GPU, and absent when the pair cannot be read (a UUID in the HIP list, no pair).

Variables set on one line (a command's prefix, a subprocess environment) are paired there; a case that sets each
variable once, on lines of their own (two ``export`` lines), pairs those. One pair that selects nothing is enough
for ``yes``: the case shows that setting.
"""

from __future__ import annotations

from triage.model import Case, Fact


def _selects_none(rocr: str, hip: str) -> bool | None:
    """Whether HIP's list ``hip`` names none of the GPUs that ROCr's list ``rocr`` keeps; None when unreadable."""
    kept = [item for item in rocr.split(",") if item.strip()]
    try:
        indexes = [int(item) for item in hip.split(",") if item.strip()]
    except ValueError:
        return None
    if not kept or not indexes:
        return None  # an empty list hides everything by itself: the signatures test that value directly
    return all(index < 0 or index >= len(kept) for index in indexes)


def _pairs(case: Case) -> list[tuple[Fact, Fact]]:
    """(ROCr's setting, HIP's setting) pairs of the case: by line, else the one value of each."""
    rocr = case.facts.get("env_ROCR_VISIBLE_DEVICES", [])
    if not rocr:
        return []
    hip = case.facts.get("env_HIP_VISIBLE_DEVICES", [])
    cuda = case.facts.get("env_CUDA_VISIBLE_DEVICES", [])
    by_line = {f.where: f for f in cuda} | {f.where: f for f in hip}  # HIP's own variable wins on its line
    pairs = [(r, by_line[r.where]) for r in rocr if r.where in by_line]
    if pairs:
        return pairs
    chosen = hip or cuda
    if len({f.value for f in rocr}) == 1 and len({f.value for f in chosen}) == 1:
        return [(rocr[0], chosen[0])]
    return []


def derive(case: Case) -> None:
    verdicts = [(verdict, hip) for rocr, hip in _pairs(case)
                if (verdict := _selects_none(rocr.value, hip.value)) is not None]
    if verdicts:
        verdict, hip = max(verdicts, key=lambda v: v[0])  # a pair that selects nothing decides
        case.add_fact("visible_devices_select_none", "yes" if verdict else "no", hip.where, hip.text, 60)
