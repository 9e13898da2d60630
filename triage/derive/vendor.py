"""Whose GPU stack the case is about: AMD's, NVIDIA's or Intel's, by the weight of the lines that say so.

A gfx architecture or an AMD product name is strong evidence on its own; so is an NVIDIA
device name. CUDA wording is no evidence (HIP backends print it on AMD GPUs). Under ZLUDA a CUDA
program runs on an AMD GPU, so there NVIDIA's files and switches (nvcuda.dll, CUDA_LAUNCH_BLOCKING)
are no vote either: only an NVIDIA device's name is.

Intel's GPU stack is read here, from the lines themselves. What only an Intel GPU prints is strong:
Level Zero (``ZE_RESULT_ERROR_*``, ``level_zero backend failed``, ``[level_zero:gpu:0]``, its loader
and driver libraries, its ``ZE_*`` switches), PyTorch's XPU device (``torch.xpu``, ``xpu:0``,
``XPU out of memory``, a ``+xpu`` wheel), Intel's extension for PyTorch, and a discrete Intel GPU's
name (``Intel(R) Arc(TM) A770 Graphics``, ``Intel(R) Data Center GPU Max 1550``). Many AMD machines
have an Intel processor with its integrated GPU, and SYCL runs on AMD GPUs too (DPC++'s HIP
backend, AdaptiveCpp), so what such a machine or such a program prints is weak and counts only
beside strong Intel evidence: an integrated GPU's name (UHD, Iris Xe, HD Graphics), the i915 and xe
kernel drivers, SYCL's runtime errors (``UR_RESULT_ERROR_*``, ``PI_ERROR_*``, printed on every
backend), the word SYCL. A library that was looked for and not found is no vote (ollama looks for
Intel's on every machine); oneAPI alone is none (oneDNN's banner is on every TensorFlow log).
CuPy's nvrtc names (``NVRTCError``, ``cupy_backends.cuda.libs.nvrtc``) are CuPy's on ROCm too: a vote that rests on
them alone counts only in a case without AMD votes. The HIP platform a run was set up for (``HIP_PLATFORM=nvidia``)
votes like a device name (parsers/vendor.py).
A line that both names Level Zero and has AMD's words is chipStar's HIP on an Intel GPU, and so is a line of
chipStar's logger (``CHIP error [TID ...] : hipErrorTbd``): beside strong Intel evidence their AMD votes are dropped.
"""

from __future__ import annotations

import functools
import re

from triage.lazy import lazy
from triage.model import FACT_REPEATS, Case, Where
from triage.parsers.lines import is_sentence, readable
from triage.parsers.vendor import NVIDIA_DEVICE, cupy_only
from triage.scan.scanner import LineScanner

# A vendor wins when its votes are at least this many times any other's.
MARGIN = 2
STRONG, WEAK = 3, 1

# A discrete Intel GPU's name (lspci, sycl-ls, xpu-smi, clinfo, PyTorch's device name): evidence even on a line that
# says a library was not found.
INTEL_DEVICE = lazy(
    r"\bIntel(?:\(R\)|®)? Arc(?:\(TM\)|™)?(?: Pro)? (?:[AB]\d{2,3}[A-Z]?|\d{3}V)\b|\[Arc (?:Pro )?[AB]\d{2,3}[A-Z]?\]"
    r"|\bIntel(?:\(R\)|®)? Data Center GPU (?:Max|Flex)\b|\bIntel Corporation (?:DG[12]|Alchemist|Battlemage)\b"
    r"|\bIntel(?:\(R\)|®)? Arc(?:\(TM\)|™)? Graphics\b")
# Level Zero, which only Intel's GPUs implement: a line naming it is Intel's even where HIP words share it (chipStar).
_LEVEL_ZERO = lazy(
    r"\bZE_RESULT_\w+|\b(?:ext_oneapi_)?level[_ -]zero\b|\bLevel0\b|\blibze_(?:loader|intel_gpu)\b|\bze_loader\b"
    r"|\bze_intel_gpu\w*\.dll\b|\bZE_AFFINITY_MASK\b|\bZES_ENABLE_SYSMAN\b|\bSYCL_PI_LEVEL_ZERO_\w+|\bUR_L0_\w+",
    re.IGNORECASE)
_INTEL_STRONG = lazy(
    r"\bintel_extension_for_pytorch\b|\bipex[-_]llm\b|\btorch\.xpu\b|\btorch\._C\._xpu_\w+|\bxpu:\d+\b"
    r"|\bdevice\s*=\s*['\"]xpu\b|\bdevice\(type='xpu'|\bXPU out of memory\b|\b\d+\.\d+(?:\.\d+)?\+xpu\b"
    r"|\bxpu-smi\b")
_INTEL_WEAK = lazy(
    r"\bIntel(?:\(R\)|®)? (?:UHD|Iris|HD)(?:\(R\)|®)?(?: Xe)? Graphics\b|\bIris(?:\(R\)|®)? Xe\b"
    r"|(?:VGA compatible|Display|3D) controller[^\n]*\bIntel Corporation\b|\bi915\b|^\s*(?:\[[\d. ]+\]\s*)?xe 0000:"
    r"|Kernel driver in use: xe\b|\bUR_RESULT_\w+|\bPI_ERROR_\w+|\bSYCL\b|\bONEAPI_DEVICE_SELECTOR\b")
# A library looked for and not found, or a search for one: no sign of an Intel GPU (only a device's name there is).
_MISSING = lazy(r"cannot open shared object file|No such file|not found|could not be (?:found|loaded|located)"
                r"|(?:cannot|failed to|unable to|could not) (?:be )?(?:load|open|find)|\bsearch|\bglobs?\b|looking for",
                re.IGNORECASE)
# chipStar's logger: HIP's words on a GPU that runs them through Level Zero or OpenCL, not AMD's.
_CHIPSTAR = lazy(r"^\s*CHIP (?:error|warning|critical|info|debug|trace) \[TID")
# What the scanner looks for in every line (case-blind where the patterns above are).
_NEEDLES = (
    r"(?i:ZE_RESULT_|level[_ -]zero|\bLevel0\b|libze_|ze_loader|ze_intel_gpu|ZE_AFFINITY_MASK|ZES_ENABLE_SYSMAN"
    r"|SYCL_PI_LEVEL_ZERO_|UR_L0_)",
    r"intel_extension_for_pytorch|ipex[-_]llm|torch\.xpu|_xpu_|xpu:\d|'xpu|\"xpu|XPU out of memory|\+xpu\b|xpu-smi",
    r"Intel|\[Arc |\bi915\b|xe 0000:|in use: xe\b|UR_RESULT_|PI_ERROR_|\bSYCL\b|ONEAPI_DEVICE_SELECTOR|Iris",
    r"CHIP (?:error|warning|critical|info|debug|trace) \[TID",
)


@functools.cache
def _intel_scanner() -> LineScanner:
    """The needles' scanner, built once a process on first use and read-only after."""
    return LineScanner(_NEEDLES, 0, None, "re")


def _intel_lines(case: Case) -> list[tuple[Where, str]]:
    """The machine lines of the case that may hold Intel evidence (one scan of each input for the needles)."""
    scanner = _intel_scanner()
    out = []
    for artifact in case.artifacts:
        if not artifact.lines:
            continue
        found = sorted(set().union(*scanner.scan(artifact.lines, artifact.text or None)))
        for index in found:
            text = artifact.lines[index]
            where = Where(artifact.name, index + 1)
            if readable(text) and (case.kind_of(where) is not None or not is_sentence(text)):
                out.append((where, text))
    return out


def _intel_votes(case: Case, amd_lines: set[Where]) -> tuple[list[tuple[int, Where, str]], set[Where]]:
    """Intel's votes (strong ones only with at least one strong), and the lines whose AMD vote Level Zero cancels."""
    votes: list[tuple[int, Where, str]] = []
    cancelled: set[Where] = set()
    counts: dict[int, int] = {}
    for where, text in _intel_lines(case):
        if where in amd_lines and _CHIPSTAR.search(text):
            cancelled.add(where)
        device = INTEL_DEVICE.search(text) is not None
        level_zero = _LEVEL_ZERO.search(text) is not None
        strong = device or level_zero or _INTEL_STRONG.search(text) is not None
        score = STRONG if strong else WEAK if _INTEL_WEAK.search(text) else 0
        if score and not device and _MISSING.search(text):
            score = 0
        if score and where in amd_lines:
            if not level_zero:
                continue
            cancelled.add(where)
        if score and counts.get(score, 0) < FACT_REPEATS:  # as many as the parsers' votes keep (model.FACT_REPEATS)
            counts[score] = counts.get(score, 0) + 1
            votes.append((score, where, text.strip()))
    if not any(score == STRONG for score, _, _ in votes):
        return [], set()
    return votes, cancelled


def derive(case: Case) -> None:
    votes = {"amd": 0, "nvidia": 0, "intel": 0}
    best: dict = {}
    zluda = case.fact("zluda") is not None
    cast = case.facts.get("vendor_vote", [])
    intel, cancelled = _intel_votes(case, {f.where for f in cast if f.value == "amd"})
    amd_cast = any(f.value == "amd" and f.where not in cancelled for f in cast) or "gfx_arch" in case.facts
    for fact in cast:
        if zluda and fact.value == "nvidia" and not NVIDIA_DEVICE.search(fact.text):
            continue
        if fact.value == "amd" and fact.where in cancelled:
            continue
        if fact.value == "nvidia" and amd_cast and cupy_only(fact.text):
            continue  # CuPy's nvrtc names in a case with AMD evidence: CuPy built for ROCm
        votes[fact.value] += fact.score
        if fact.value not in best or fact.score > best[fact.value].score:
            best[fact.value] = fact
    for score, where, text in intel:
        votes["intel"] += score
        if "intel" not in best or score > best["intel"][0]:
            best["intel"] = (score, where, text)
    for fact in case.facts.get("gfx_arch", []):
        votes["amd"] += 3
        best.setdefault("amd", fact)
    winner = max(votes, key=votes.get)
    runner_up = max(v for vendor, v in votes.items() if vendor != winner)
    if votes[winner] and votes[winner] >= MARGIN * runner_up:
        chosen = best[winner]
        where, text = (chosen[1], chosen[2]) if winner == "intel" else (chosen.where, chosen.text)
        case.add_fact("gpu_vendor", winner, where, text, votes[winner])
