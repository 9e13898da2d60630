"""Whose GPU stack the case is about: AMD's or NVIDIA's, by the weight of the lines that say so.

A gfx architecture or an AMD product name is strong evidence on its own; so is an NVIDIA
device name. CUDA wording is no evidence (HIP backends print it on AMD GPUs). Under ZLUDA a CUDA
program runs on an AMD GPU, so there NVIDIA's files and switches (nvcuda.dll, CUDA_LAUNCH_BLOCKING)
are no vote either: only an NVIDIA device's name is.
"""

from __future__ import annotations

from triage.model import Case
from triage.parsers.vendor import NVIDIA_DEVICE

# A vendor wins when its votes are at least this many times the other's.
MARGIN = 2


def derive(case: Case) -> None:
    votes = {"amd": 0, "nvidia": 0}
    best = {}
    zluda = case.fact("zluda") is not None
    for fact in case.facts.get("vendor_vote", []):
        if zluda and fact.value == "nvidia" and not NVIDIA_DEVICE.search(fact.text):
            continue
        votes[fact.value] += fact.score
        if fact.value not in best or fact.score > best[fact.value].score:
            best[fact.value] = fact
    for fact in case.facts.get("gfx_arch", []):
        votes["amd"] += 3
        best.setdefault("amd", fact)
    winner = max(votes, key=votes.get)
    loser = "nvidia" if winner == "amd" else "amd"
    if votes[winner] and votes[winner] >= MARGIN * votes[loser]:
        chosen = best[winner]
        case.add_fact("gpu_vendor", winner, chosen.where, chosen.text, votes[winner])
