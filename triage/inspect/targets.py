"""AMDGPU target ids and which code object a GPU can load: the rules of LLVM's AMDGPU user guide.

A target id is a processor and optional feature settings: ``gfx90a:xnack-``,
``gfx942:sramecc+:xnack-``, ``gfx11-generic``. A code object runs on a GPU when

- its processor is the GPU's, or a generic processor that lists the GPU's (generic code
  objects are code object v6; the runtime prefers an exact match when both exist), and
- every feature it fixes (``+`` on, ``-`` off) is set that way on the GPU; a feature it leaves
  out is ``any`` and runs either way.

xnack follows the process (``HSA_XNACK=1`` turns it on where the GPU supports it); sramecc
is set by the board, MI-series cards usually run with it on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from triage.derive.tables import load_tables

# Generic processors and the processors each one supports (LLVM's "AMDGPU Generic Processors"),
# and every processor of the amdgcn target, to tell a typo from a real target: both from
# signatures/tables/gpus.yaml, where their sources are named.
GENERIC: dict[str, frozenset[str]] = dict(load_tables().generic)
PROCESSORS = frozenset(load_tables().archs) | frozenset(
    "gfx600 gfx601 gfx602 gfx700 gfx701 gfx702 gfx703 gfx704 gfx705 gfx801 gfx802 gfx805 gfx810 gfx1210".split()
) | frozenset(GENERIC)

_TARGET_ID = re.compile(r"(?P<proc>gfx[0-9a-f]+(?:-[0-9]+)?(?:-generic)?)(?P<feats>(?::[a-z]+[+-])*)$")
_FEATURE = re.compile(r":(?P<name>[a-z]+)(?P<on>[+-])")


@dataclass(frozen=True)
class TargetId:
    """A processor with its fixed features (name -> True for ``+``, False for ``-``)."""

    processor: str
    features: tuple[tuple[str, bool], ...] = ()

    def __str__(self) -> str:
        return self.processor + "".join(f":{n}{'+' if on else '-'}" for n, on in self.features)

    @property
    def known(self) -> bool:
        return self.processor in PROCESSORS


def parse_target(text: str) -> TargetId | None:
    """``gfx942:sramecc+:xnack-`` (alone or at the end of a bundle entry id) -> TargetId."""
    m = _TARGET_ID.search(text.strip())
    if not m:
        return None
    features = tuple(sorted((f["name"], f["on"] == "+") for f in _FEATURE.finditer(m["feats"])))
    return TargetId(m["proc"], features)


@dataclass(frozen=True)
class Fit:
    """How one code object fits a GPU: ``exact``, ``generic``, ``if-feature`` or ``no``."""

    level: str
    target: str
    note: str = ""


# Best first: the order the runtime prefers and the order verdicts are ranked in.
LEVELS = ("exact", "generic", "if-feature", "no")


def fit(code_object: TargetId, gpu: TargetId) -> Fit:
    """Can a code object built for ``code_object`` run on ``gpu``?

    The GPU's features are those the user gave (``gfx90a:xnack+``); a feature the user left
    out is unknown, so a code object that fixes it fits only "if" the GPU runs that way.
    """
    name = str(code_object)
    if code_object.processor == gpu.processor:
        level = "exact"
    elif gpu.processor in GENERIC.get(code_object.processor, ()):
        level = "generic"
    else:
        return Fit("no", name)
    have = dict(gpu.features)
    conditions = []
    for feature, on in code_object.features:
        if feature not in have:
            conditions.append(f"{feature} {'on' if on else 'off'}")
        elif have[feature] != on:
            return Fit("no", name, f"built for {feature}{'+' if on else '-'}, the GPU runs {feature}{'+' if have[feature] else '-'}")
    if conditions:
        hint = " (HSA_XNACK=1 turns xnack on)" if "xnack on" in conditions else ""
        return Fit("if-feature", name, f"only if the GPU runs with {' and '.join(conditions)}{hint}")
    note = f"{code_object.processor} covers {gpu.processor}: a code object v6 the runtime loads when it has no {gpu.processor} one" \
        if level == "generic" else ""
    return Fit(level, name, note)


def best_fit(code_objects: list[TargetId], gpu: TargetId) -> Fit:
    """The best of a bundle's code objects for the GPU (exact over generic over conditional)."""
    fits = [fit(c, gpu) for c in code_objects]
    return min(fits, key=lambda f: LEVELS.index(f.level), default=Fit("no", ""))
