"""The GPU: its real architecture beside the one an override names, family, APU or discrete, and
whether the ROCm release in use supports it and the kernel it runs on.

With ``HSA_OVERRIDE_GFX_VERSION`` set, the runtime (and rocminfo, and every log built on it)
reports the overriding architecture: only a product name still tells the real one. An
override fits when it names a processor of the GPU's own family (tables/gpus.yaml), and is known when it names a
processor at all (``override_known``). ROCm 6.2+ also takes one override per device,
``HSA_OVERRIDE_GFX_VERSION_<n>`` for KFD node n (see ``_override``): any of them counts as an override set, and the
one of the GPU's node gives the override facts.

``gfx_arch_real`` comes from the best evidence the case holds, in this order:

1. a product name (``Radeon RX 6800``) when an override is set, or when no gfx name is reported
   (or the reported one is the override's);
1b. the integrated GPU that rocminfo's agent names beside another gfx name it reports, with no override in the log
   (``Name: gfx900`` over ``Marketing Name: Renoir``): a release that does not know the iGPU runs it as a kin
   processor, or an override the log does not show does; either way the agent's own name is the chip, and
   ``arch_reported_as`` keeps the stand-in; not when a discrete card's agent reports the same name (that name is the
   card's). A discrete card paired with another name (an RX 6700 XT as gfx1030) is left as reported: that is an
   unseen override far more often, and the reported processor is what ran;
2. the gfx arch the runtime or a tool reports, when it is not the override's;
3. a product name;
4. the processor HIP's loader found no code object for (``missing_code_object_arch``: "No compatible code objects
   found for: gfx1030", ROCm 7's "Rebuild the application with option --offload-arch=gfx1201"), when every such line
   names the same one and it is not the override's: the loader names the device's ISA as the runtime reports it,
   which under an override is the override's own (no word of the real GPU then);
5. a PCI device id (lspci -nn, Windows' device instance, rocminfo's Chip ID; tables/gpu-ids.yaml),
   when every id of the case that the table knows names the same processor;
6. a chip codename on an AMD device line (lspci's ``Navi 21``, rocm-smi's Card series), the same;
7. library files the runtime looked for and could not read or load (``TensileLibrary_lazy_gfx1031.dat``,
   MIOpen's ``gfx1030_36.kdb``), the same, and only without an override (the runtime then looks for the
   override's files).

5 to 7 are indirect: they fill the fact only when 1 to 4 say nothing. A build target (parsers/buildtargets.py) is never
evidence: it names what a program was built for, not the GPU it runs on.

``kernel_supported``: whether AMD's compatibility matrix lists the running kernel (major.minor) for the
ROCm release (tables/kernel-support.yaml), for the distribution family the kernel's name or the OS name
shows, else for any family. ``no`` when the kernel is older or newer than every kernel listed, or, for a
family the matrix lists, not among that family's kernels; ``kernel_fit`` says which (``older``,
``newer``, ``listed``, ``unlisted``). Nothing for a release the table does not cover, under WSL (no
amdgpu kernel driver), or for a kernel that only a user's sentence or a requirement names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator

from triage.derive.tables import Tables, version_tuple
from triage.lazy import lazy
from triage.model import Case, Fact, Where

MENTIONED = 30  # envfacts scores a gfx name in passing 10, a labelled GPU or ISA 30, the GPU in use 60

_OVERRIDE = lazy(r"^\s*(?P<maj>\d{1,2})\.(?P<min>\d)\.(?P<step>\d{1,2})\s*$")


# ROCm 6.2+ also reads one override per device, HSA_OVERRIDE_GFX_VERSION_<n> (which the parsers, knowing only the
# plain name, do not record): as a shell, env-file or listing assignment, or a Dockerfile's space-separated ENV line.
# <n> is the device's KFD node, the N of "GPU node-N" and rocm-smi's Node column: GPUs count from 1, node 0 is the CPU.
_PER_DEVICE = lazy(r"\bHSA_OVERRIDE_GFX_VERSION_(?P<n>\d{1,2})(?:[\"']\]?)?(?:[ \t]*[=:,][ \t]*|[ \t]+)[\"']?"
                   r"(?P<v>\d{1,2}(?:\.\d{1,2}){0,2}|gfx[0-9a-f]{3,4})(?![\w.])")
_PER_DEVICE_NAME = "HSA_OVERRIDE_GFX_VERSION_"
_GPU_NODE = lazy(r"\bGPU node-(?P<n>\d{1,2})\b")

# rocminfo's agent block prints "Name:" (the gfx processor for a GPU agent), "Uuid:", then "Marketing Name:"; a
# grep for both keeps the two lines next to each other.
_AGENT_NAME = lazy(r"^\s*Name:\s+(?P<arch>gfx[0-9a-f]{3,4})\s*$")
_AGENT_ANY_NAME = lazy(r"^\s*(?:Name|Agent \d+|\*{3,})\b")
_MARKETING = lazy(r"^\s*Marketing Name:\s+(?P<name>\S.*?)\s*$")


def override_arch(value: str) -> str | None:
    """``10.3.0`` -> ``gfx1030``; ``9.0.10`` -> ``gfx90a`` (the stepping is one hex digit)."""
    m = _OVERRIDE.match(value)
    if not m or int(m["step"]) > 15:
        return None
    return f"gfx{int(m['maj'])}{int(m['min'])}{int(m['step']):x}"


# A running kernel's release as uname and dmesg print it: three numbers (5.15.0) or two and a build (6.8-arch1),
# Linux 2.6 to 7.x; "kernel 3.2 or later" in a requirement and an NVIDIA module's "kernel version 515.48.7" are not.
_KERNEL = lazy(r"^(?P<maj>[2-7])\.(?P<min>\d{1,2})(?:\.\d+(?:[-+~.]\S*)?|[-+~]\S+)$")
_FAMILY_OF_KERNEL = (  # the distribution's mark in its kernels' names
    (lazy(r"uek", re.IGNORECASE), "oracle"), (lazy(r"\.el\d+|\.rhel"), "rhel"),
    (lazy(r"-(?:generic|lowlatency|oem|aws|gcp|azure|kvm|raspi|nvidia)\b|~\d\d\.\d\d"), "ubuntu"),
    (lazy(r"\.azl\d|\.cm2"), "azure"), (lazy(r"-default$|^\d+\.\d+\.\d+-150\d{3}"), "sles"),
    (lazy(r"\+deb\d+|-amd64$|-cloud-amd64$"), "debian"))
_FAMILY_OF_OS = (  # and in an OS name
    (lazy(r"(?i)\bubuntu\b|\bkubuntu\b|\bxubuntu\b"), "ubuntu"),
    (lazy(r"(?i)\boracle\b"), "oracle"),
    (lazy(r"(?i)\brhel\b|red hat|\brocky\b|\balma|\bcentos\b"), "rhel"),
    (lazy(r"(?i)\bsles\b|\bsuse linux enterprise\b"), "sles"),
    (lazy(r"(?i)\bdebian\b"), "debian"), (lazy(r"(?i)\bazure linux\b"), "azure"))


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


def _unanimous(facts: Iterable[Fact], arch_of: Callable[[Fact], str | None]) -> tuple[str, Fact] | None:
    """The one processor every mapped fact names (a machine with an iGPU and a card, or a listing of
    several libraries' files, names two: no answer)."""
    found = [(arch, fact) for fact in facts if (arch := arch_of(fact))]
    if not found or len({arch for arch, _ in found}) > 1:
        return None
    return max(found, key=lambda item: item[1].score)


def _indirect(case: Case, tables: Tables, overriding: str | None) -> tuple[str, Fact] | None:
    """The arch by PCI id, then by codename, then by the library files the runtime wanted (see the module)."""
    def pci(fact: Fact) -> str | None:
        device, _, revision = fact.value.partition(":")
        return tables.arch_of_pci_id(device, revision or None)

    found = (_unanimous(case.facts.get("gpu_pci_id", []), pci)
             or _unanimous(case.facts.get("gpu_device", []), lambda f: tables.arch_of_codename(f.value)))
    if found is None and not overriding:
        found = _unanimous(case.facts.get("gfx_arch_file", []), lambda f: f.value if tables.arch(f.value) else None)
    return found


def _lacking(case: Case, overriding: str | None) -> tuple[str, Fact] | None:
    """The processor the loader found no code object for (see the module): its target id's processor
    (``gfx90a:sramecc+:xnack-`` is gfx90a), when every such line names the same one and it is not the override's."""
    found = _unanimous(case.facts.get("missing_code_object_arch", []), lambda f: f.value.split(":")[0])
    return found if found and found[0] != overriding else None


def _agent_arch(lines: list[str], number: int) -> str | None:
    """The gfx name of the agent whose "Marketing Name:" is line ``number``: the nearest "Name:" line at most three
    lines above, with no other agent's header between."""
    for i in range(number - 1, max(number - 4, -1), -1):
        if m := _AGENT_NAME.match(lines[i]):
            return m["arch"]
        if _AGENT_ANY_NAME.match(lines[i]):
            return None
    return None


def _stand_in(case: Case, tables: Tables, reported: Fact) -> tuple[str, Fact] | None:
    """The integrated GPU rocminfo's agent names when it differs from the reported gfx name of that agent (see 1b):
    every such agent of the case must name the same pair, and the reported fact must be that agent's gfx name."""
    pairs = set()
    discrete = set()  # gfx names an agent reports beside a discrete card's product: that name is the card's own
    hit = None
    for artifact in case.artifacts:
        if "Marketing Name" not in artifact.text:
            continue
        lines = artifact.lines
        for number, line in enumerate(lines):
            if not (m := _MARKETING.match(line)):
                continue
            name = m["name"]
            named = tables.arch_of_product(name) or tables.arch_of_codename(name)
            agent = _agent_arch(lines, number)
            chip = tables.arch(named) if named else None
            if chip is not None and not chip.apu and agent is not None:
                discrete.add(agent)
            if chip is None or not chip.apu or agent is None or agent == named or tables.arch(agent) is None:
                continue
            pairs.add((agent, named))
            hit = Fact("gpu_product", name, Where(artifact.name, number + 1), line.strip(), 60)
    if len(pairs) != 1 or hit is None:
        return None
    (shown, named), = pairs
    # A discrete card reported under the same name (a 7900 XTX and a 780M both as gfx1100, an override in a profile
    # the log does not show): the reported name is the card's, and the iGPU is the second GPU, not this case's.
    return (named, hit) if shown == reported.value and shown not in discrete else None


def _family(case: Case, kernel: str) -> str | None:
    for pattern, family in _FAMILY_OF_KERNEL:
        if pattern.search(kernel):
            return family
    for fact in case.facts.get("os_name", []):
        for pattern, family in _FAMILY_OF_OS:
            if pattern.search(fact.value):
                return family
    return None


def _kernel(case: Case, tables: Tables) -> None:
    """kernel_supported and kernel_fit (see the module)."""
    rocm = case.fact("rocm_version")
    if rocm is None or case.value("os") == "windows" or case.value("wsl") == "yes":
        return
    kernels = sorted((f for f in case.facts.get("kernel", []) + case.facts.get("kernel_uname", []) if _KERNEL.match(f.value)
                      and "microsoft" not in f.value.lower()), key=lambda f: -f.score)
    if not kernels:
        return
    fact = kernels[0]
    m = _KERNEL.match(fact.value)
    running = (int(m["maj"]), int(m["min"]))
    families = tables.listed_kernels(version_tuple(rocm.value))
    if not families:
        return
    everywhere = frozenset().union(*families.values())
    own = families.get(_family(case, fact.value) or "")
    if running in (own if own is not None else everywhere):
        fit = "listed"
    elif running < min(everywhere):
        fit = "older"
    elif running > max(everywhere):
        fit = "newer"
    elif own is not None:
        fit = "unlisted"  # between the kernels the matrix lists, none of them this family's
    else:
        return  # a distribution the matrix does not list, with a kernel between others': no verdict
    _add(case, "kernel_fit", fit, fact, 60)
    _add(case, "kernel_supported", "yes" if fit == "listed" else "no", fact, 60)


def _lines_with(case: Case, needle: str) -> Iterator[tuple[Where, str]]:
    """The lines of the case that contain ``needle`` (most cases have none: one search per artifact then)."""
    for artifact in case.artifacts:
        if needle in artifact.text:
            for number, line in enumerate(artifact.lines, 1):
                if needle in line:
                    yield Where(artifact.name, number), line


def _per_device_overrides(case: Case) -> dict[int, Fact]:
    """Record each ``HSA_OVERRIDE_GFX_VERSION_<n>`` as an override (``env_HSA_OVERRIDE_GFX_VERSION``, so that every
    "no override set" test sees it); return them by node (a later setting of a node replaces an earlier one)."""
    found: dict[int, Fact] = {}
    for where, line in _lines_with(case, _PER_DEVICE_NAME):
        for m in _PER_DEVICE.finditer(line):
            found[int(m["n"])] = Fact("env_HSA_OVERRIDE_GFX_VERSION", m["v"], where, line.strip(), 20)
            case.add_fact("env_HSA_OVERRIDE_GFX_VERSION", m["v"], where, line.strip(), 20)
    return found


def _override(case: Case) -> Fact | None:
    """The override the GPU of the case runs under: a per-device one for its node, which the runtime reads before the
    plain variable (libhsakmt's topology), else the plain variable's. The GPU's node is the one a fault names ("GPU node-1"); with none
    named, a per-device override of a GPU node (1 and up) is taken when there is one value only. ``override_device``
    says which node's override was taken."""
    plain = case.fact("env_HSA_OVERRIDE_GFX_VERSION")
    per_device = _per_device_overrides(case)
    if not per_device:
        return plain
    nodes = {int(m["n"]) for _, line in _lines_with(case, "GPU node-") for m in _GPU_NODE.finditer(line)}
    taken = {n: f for n, f in per_device.items() if (n in nodes if nodes else n > 0)}
    if len({f.value for f in taken.values()}) != 1:
        return plain
    node, fact = min(taken.items())
    _add(case, "override_device", str(node), fact, 60)
    return fact


def derive(case: Case, tables: Tables) -> None:
    _kernel(case, tables)
    reported = case.fact("gfx_arch")
    if reported and reported.score < MENTIONED:  # a gfx name in passing is not the GPU of this case
        reported = None
    override = _override(case)
    overriding = override_arch(override.value) if override else None
    product = None
    for fact in sorted(case.facts.get("gpu_product", []) + case.facts.get("gpu_name", []), key=lambda f: -f.score):
        if arch := tables.arch_of_product(fact.value):
            product = (arch, fact)
            break
    real = None
    stand_in = _stand_in(case, tables, reported) if reported and not override else None
    if product and (overriding or not reported or reported.value == overriding):
        real = product
    elif stand_in:
        real = stand_in
        _add(case, "arch_reported_as", reported.value, reported, 60)
    elif reported and reported.value != overriding:
        real = (reported.value, reported)
    elif product:
        real = product
    else:
        real = _lacking(case, overriding) or _indirect(case, tables, overriding)
    if overriding and override:
        _add(case, "override_arch", overriding, override, 60)
        # whether it names a processor at all (8.3.0 is no gfx830 but 8.0.3 transposed)
        _add(case, "override_known", "yes" if tables.arch(overriding) else "no", override, 60)
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
