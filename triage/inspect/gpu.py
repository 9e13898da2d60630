"""Can this binary run on that GPU? Per bundle, then overall: a binary is as good as its worst bundle.

A kernel lives in the bundle of the translation unit that defined it; the runtime finds it
only if that bundle has a code object the GPU can load, so one bundle without one is
enough for the launch of its kernels to fail (``hipErrorNoBinaryForGpu``, or a null from
``amd::Symbol::getDeviceKernel``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from triage.inspect.bundle import FatBinary
from triage.inspect.targets import Fit, TargetId, best_fit, parse_target

# Worst last; "unknown" is a bundle whose targets could not be read (e.g. zstd without zstandard).
RANK = ("exact", "generic", "if-feature", "unknown", "no")
_ANSWER = {"exact": "yes", "generic": "yes", "if-feature": "only if", "unknown": "unknown", "no": "no"}


@dataclass
class BundleFit:
    offset: int
    targets: list[str]
    fit: Fit


@dataclass
class GpuAnswer:
    """The verdict for one GPU: ``level`` is the worst bundle's, ``fits`` one per bundle."""

    gpu: str
    level: str
    fits: list[BundleFit] = field(default_factory=list)

    @property
    def can_run(self) -> str:
        """``yes``, ``no``, ``only if`` (a feature setting decides) or ``unknown``."""
        return _ANSWER[self.level]

    def failing(self) -> list[BundleFit]:
        return [f for f in self.fits if f.fit.level == "no"]


class BadGpu(ValueError):
    """The GPU was not given as a target id (``gfx1151``, ``gfx90a:xnack+``)."""


def gpu_target(text: str) -> TargetId:
    """``gfx1151``, ``gfx90a:xnack+`` or rocminfo's ``amdgcn-amd-amdhsa--gfx90a:sramecc+:xnack-``."""
    target = parse_target(text)
    if target is None or not target.known or target.processor.endswith("-generic"):
        raise BadGpu(f"{text!r} is not a GPU this version knows (give its processor, e.g. gfx1151 or gfx90a:xnack+)")
    return target


def answer(sets: list[tuple[int, list[str]]], gpu: TargetId, unread: list[tuple[int, str]] | None = None) -> GpuAnswer:
    """Check each bundle's target ids (``(offset, targets)``) against ``gpu``; ``unread``
    bundles (offset, why) count as unknown."""
    fits = [BundleFit(offset, targets, best_fit([t for x in targets if (t := parse_target(x))], gpu))
            for offset, targets in sets]
    fits.extend(BundleFit(offset, [], Fit("unknown", "", why)) for offset, why in unread or [])
    fits.sort(key=lambda f: f.offset)
    level = max((f.fit.level for f in fits), key=RANK.index, default="unknown")
    return GpuAnswer(str(gpu), level, fits)


def answer_for(fat: FatBinary, gpu: TargetId) -> GpuAnswer:
    """``answer`` for every bundle of a file (bundles with only a host entry carry no GPU code)."""
    return answer([(b.offset, b.targets) for b in fat.bundles if b.targets], gpu,
                  [(b.offset, b.note) for b in fat.bundles if not b.entries])
