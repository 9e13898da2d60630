"""The GPU: its real architecture beside the one an override names, family, APU or discrete, and
whether the ROCm release in use supports it.

With ``HSA_OVERRIDE_GFX_VERSION`` set, the runtime (and rocminfo, and every log built on it)
reports the overriding architecture: only a product name still tells the real one. An
override fits when it names a processor of the GPU's own family (tables/gpus.yaml).
"""

from __future__ import annotations


from triage.derive.tables import Tables, version_tuple
from triage.lazy import lazy
from triage.model import Case, Fact

MENTIONED = 30  # envfacts scores a gfx name in passing 10, a labelled GPU or ISA 30, the GPU in use 60

_OVERRIDE = lazy(r"^\s*(?P<maj>\d{1,2})\.(?P<min>\d)\.(?P<step>\d{1,2})\s*$")


def override_arch(value: str) -> str | None:
    """``10.3.0`` -> ``gfx1030``; ``9.0.10`` -> ``gfx90a`` (the stepping is one hex digit)."""
    m = _OVERRIDE.match(value)
    if not m or int(m["step"]) > 15:
        return None
    return f"gfx{int(m['maj'])}{int(m['min'])}{int(m['step']):x}"


def _add(case: Case, name: str, value: str, fact: Fact, score: int = 50) -> None:
    case.add_fact(name, value, fact.where, fact.text, score)


def _build_targets(case: Case, tables: Tables, arch: str) -> None:
    """Whether the code was built for the architecture the runtime looks for (the override's, if any):
    the processor itself, any feature variant of it, or a generic target that covers it."""
    targets = case.facts.get("build_targets")
    if not targets:
        return
    covering = {arch} | {g for g, members in tables.generic.items() if arch in members}
    hit = next((f for f in targets if f.value.split(":")[0] in covering), None)
    fact = hit or targets[0]
    _add(case, "arch_in_build_targets", "yes" if hit else "no", fact, 60)


def derive(case: Case, tables: Tables) -> None:
    reported = case.fact("gfx_arch")
    if reported and reported.score < MENTIONED:  # a gfx name in passing is not the GPU of this case
        reported = None
    override = case.fact("env_HSA_OVERRIDE_GFX_VERSION")
    overriding = override_arch(override.value) if override else None
    product = None
    for fact in sorted(case.facts.get("gpu_product", []) + case.facts.get("gpu_name", []), key=lambda f: -f.score):
        if arch := tables.arch_of_product(fact.value):
            product = (arch, fact)
            break
    real = None
    if product and (overriding or not reported or reported.value == overriding):
        real = product
    elif reported and reported.value != overriding:
        real = (reported.value, reported)
    elif product:
        real = product
    if overriding and override:
        _add(case, "override_arch", overriding, override, 60)
    if real is None:
        return
    arch, source = real
    _add(case, "gfx_arch_real", arch, source, 60)
    _build_targets(case, tables, overriding or arch)
    info = tables.arch(arch)
    if info is None:
        return
    _add(case, "gpu_family", info.family, source)
    _add(case, "apu", "yes" if info.apu else "no", source)
    if overriding and override and (other := tables.arch(overriding)):
        _add(case, "override_family", other.family, override)
        _add(case, "override_fits", "yes" if other.family == info.family else "no", override, 60)
    rocm = case.fact("rocm_version")
    if rocm is None:
        return
    release = version_tuple(rocm.value)
    if len(release) >= 2:
        os_name = case.value("os") or "linux"
        supported = tables.supports(arch, release, "windows" if os_name == "windows" else "linux")
        if supported is not None:
            _add(case, "arch_supported", "yes" if supported else "no", rocm)
    known = tables.knows(arch, release)
    if known is not None:
        _add(case, "arch_known", "yes" if known else "no", rocm)
