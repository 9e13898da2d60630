"""The GPUs a case lists: whether the one in use is an integrated GPU beside a discrete card, and what the GPU's
hardware can do.

``igpu_in_use`` (``yes``/``no``) is set only when the machine output of the case names both kinds of GPU: an
integrated one (an APU's, tables/gpus.yaml) and a discrete card, by gfx name (rocminfo's agents, a runtime's device
list, ollama's ``compute=``), product name or PCI id. Its value says whether the GPU the runtime reports first (the
device it uses by default: ``gfx_arch``'s best candidate) is the integrated one. An ``HSA_OVERRIDE_GFX_VERSION`` makes
the runtime report the override's name for every GPU, so no answer is given under one.

``old_gcn_gpu_beside_newer`` (the old card's arch) is set when the machine output names a discrete GCN 2-4 card
(gfx7xx/gfx80x: Hawaii, Tonga, Fiji, Polaris) and a discrete GPU of a later generation: ROCm 7's runtime rejects the
old card's doorbells, and with it in the machine the HSA runtime may start for neither.

``gpu_xnack``, ``gpu_mfma``, ``gpu_wmma`` (``yes``/``no``): what the real architecture (``gfx_arch_real``) supports,
from tables/gpu-features.yaml (LLVM's processor table and target definitions).
"""

from __future__ import annotations

from triage.derive.gpu import MENTIONED
from triage.derive.tables import FEATURES, Tables
from triage.model import Case, Fact


def _listed(case: Case, tables: Tables) -> list[tuple[str, Fact]]:
    """Every GPU the case's machine output names, as (arch, the fact that names it)."""
    found = [(f.value, f) for f in case.facts.get("gfx_archs", []) if f.score >= MENTIONED and tables.arch(f.value)]
    for fact in case.facts.get("gpu_product", []) + case.facts.get("gpu_name", []):
        if fact.score >= MENTIONED and (arch := tables.arch_of_product(fact.value)):
            found.append((arch, fact))
    for fact in case.facts.get("gpu_pci_id", []):
        device, _, revision = fact.value.partition(":")
        if arch := tables.arch_of_pci_id(device, revision or None):
            found.append((arch, fact))
    return found


def _igpu(case: Case, tables: Tables) -> None:
    if case.fact("env_HSA_OVERRIDE_GFX_VERSION") is not None:
        return
    used = case.fact("gfx_arch")
    if used is None or used.score < MENTIONED or (info := tables.arch(used.value)) is None:
        return
    kinds = {tables.archs[arch].apu for arch, _ in _listed(case, tables)} | {info.apu}
    if kinds == {True, False}:
        case.add_fact("igpu_in_use", "yes" if info.apu else "no", used.where, used.text, 50)


_OLD_GCN = frozenset({"gcn2", "gcn3", "gcn4"})


def _old_beside_newer(case: Case, tables: Tables) -> None:
    discrete = [(arch, fact) for arch, fact in _listed(case, tables) if not tables.archs[arch].apu]
    old = [(arch, fact) for arch, fact in discrete if tables.archs[arch].family in _OLD_GCN]
    newer = [arch for arch, _ in discrete if tables.archs[arch].family not in _OLD_GCN | {"gcn1"}]
    if old and newer:
        arch, fact = old[0]
        case.add_fact("old_gcn_gpu_beside_newer", arch, fact.where, fact.text, 50)


def _features(case: Case, tables: Tables) -> None:
    real = case.fact("gfx_arch_real")
    if real is None or tables.arch(real.value) is None:
        return
    has = tables.features.get(real.value, frozenset())
    for feature in sorted(FEATURES):
        case.add_fact(f"gpu_{feature}", "yes" if feature in has else "no", real.where, real.text, 50)


def derive(case: Case, tables: Tables) -> None:
    """Add igpu_in_use, an old card beside a newer one, and the GPU's hardware features (after gpu.derive, which
    settles the real arch)."""
    _igpu(case, tables)
    _old_beside_newer(case, tables)
    _features(case, tables)
