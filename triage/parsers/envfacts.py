"""Environment facts from free text: GPU and gfx arch, OS, kernel, driver, ROCm/HIP/COMGR versions.

Users write these in many ways (``GPU: AMD Radeon AI PRO R9700 (gfx1201)``,
``GPU 0: AMD Radeon RX 9070 XT (gfx1201)``, ``arch gfx1201``, rocminfo's ``Name: gfx1100``,
``OS / kernel  NixOS 26.11, Linux 7.1.3``). Each mention becomes a scored candidate; the
runtime log's own values (parsers/amdlog.py) outrank anything read from prose.
"""

from __future__ import annotations

from pathlib import PurePosixPath, PureWindowsPath

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.amdlog import is_system_path
from triage.parsers.lines import Needles, is_sentence, readable
from triage.parsers.vendor import CPU_NAME

GFX = lazy(r"(?<![\w])gfx(?P<n>\d{3,4}|\d{2,3}[a-f])(?![\w])")
_GENERIC = lazy(r"(?<![\w-])gfx\d+(?:-\d+)?-generic\b")
LISTED = 3  # distinct gfx names on one line that make it a list of targets
_TARGET_LIST = lazy(r"gfx\w+['\"]?\s*[;, ]\s*['\"]?gfx\w+['\"]?\s*[;, ]\s*['\"]?gfx|offload-arch|AMDGPU_TARGETS"
                          r"|GPU_TARGETS|^\s*\d+\s+hip|supported types", re.I)
# A build's own settings name what it compiles for, never the GPU of the machine (parsers/buildtargets.py reads
# them as build targets): CMake, environment and Makefile variables (PYTORCH_ROCM_ARCH=gfx90a;gfx942,
# -DAMDGPU_TARGETS:STRING=, HCC_AMDGPU_TARGET=, CMAKE_HIP_ARCHITECTURES, GFX_ARCH ?= gfx906, AMDGPU_TARGET := gfx90a,
# AdaptiveCpp's -DHIPSYCL_TARGETS='hip:gfx908' and ACPP_TARGETS=) and compiler flags (--amdgpu-target=,
# --acpp-targets=, --hipsycl-targets=, --cuda-gpu-arch=). A gfx name from the first of them on is no machine's arch;
# one before it still is ("GPU: gfx1100 ... PYTORCH_ROCM_ARCH=gfx1030"). Variables as they are spelt, in capitals
# ("gfx_arch" is no setting). Not -mcpu=: comgr, hiprtc and MIOpen compile at run time for the GPU in use.
_BUILD_SETTING = lazy(r"(?:ROCM_ARCH|AMDGPU_TARGETS?|GPU_TARGETS?|HIP_ARCHITECTURES|(?:HIPSYCL|ACPP|OPENSYCL)_TARGETS"
                      r"|GFX_ARCHS?|AMDGPU_ARCHS?|GPU_ARCHS?)(?![A-Za-z0-9])"
                      r"|--(?:amdgpu-target|offload-arch|cuda-gpu-arch|(?:acpp|hipsycl|opensycl)-targets)\b")
# A requirement is no machine's arch either: TensorFlow's "... with AMDGPU ISA gfx801. The minimum required AMDGPU ISA
# is gfx803." names the GPU first and what it lacks after; TensorFlow 1.x on ROCm 1.9 wrote the GPU's "gfx 701" spaced.
_REQUIREMENT = lazy(r"\b(?:minimum|at least)\b", re.I)
_SPACED_ISA = lazy(r"\bISA(?: version)?:?\s+gfx (?P<n>\d{3,4})\b")
# ollama's own record of the GPU it uses: "inference compute ... compute=gfx1100", "amdgpu is supported gpu_type=gfx1030".
_GPU_IN_USE = lazy(r"\b(?:gpu_type|compute)=(?P<g>gfx[0-9a-f]{3,4})\b")
_SECONDARY = lazy(r"\b(?:second|other|integrated|iGPU|APU|device 1|GPU 1|not used)\b", re.I)
_GPU_LABEL = lazy(r"(?:^|[\s*•|-])(?:\*\*)?(?:GPU|Graphics(?: card)?|Marketing Name)(?:\*\*)?\s*(?:0\s*)?[:\t]\s*(?:\*\*)?\s*(?P<name>[^(\n,]*[A-Za-z0-9][^(\n,]*)", re.I)
# rocminfo's ISA of an agent: "Name:  amdgcn-amd-amdhsa--gfx902:xnack+" (not a bundle's hipv4-amdgcn-... entry).
_ISA_NAME = lazy(r"^\s*Name:\s+amdgcn-amd-amdhsa--gfx")
# ComfyUI's start-up line "AMD arch: gfx1103" prints the device's gcnArchName (as PyTorch reports it).
_ARCH_LINE = lazy(r"\bAMD arch:\s*gfx[0-9a-f]{3,4}\b")
_PRIMARY = lazy(r"\b(?:GPU 0|device 0|HIP device 0)\b|^\s*Name:\s*gfx|\barch gfx", re.I)

_OS_LABEL = lazy(r"(?:^|[\s*•|-])(?:\*\*)?OS(?: / kernel)?(?:\*\*)?\s*[:\t]\s*(?:\*\*)?\s*(?P<v>[^,(\n]+?)\s*(?:[,(]|$)")
_WINDOWS_NAME = lazy(r"\bWindows (?:1[01]|Server \d{4})(?:[ -](?:64-bit|Pro|Home|\d{2}H\d))*", re.I)
_KERNEL = lazy(r"\b(?:kernel|Linux)(?: version)?[ :]+(?P<v>\d+\.\d+(?:\.\d+)*(?:-[\w.]+)*)")
# (A white-space run matched one way only: \s*[:\s]\s* took half a second to fail on a line of 4,000 spaces.)
_DRIVER = lazy(r"\b(?:amdgpu(?: driver)?|Driver(?: version)?)(?:\s*:\s*|\s+)`?(?P<v>\d+\.\d+(?:\.\d+)*)", re.I)
# "ROCm 6.1" or "System ROCm version: 6.1.2" as a word of its own: not the end of a package's name ("tensorflow-rocm
# 2.14.0.600" in pip list's columns is TensorFlow's version, parsers/versions.py reads the ROCm release from it).
_ROCM = lazy(r"(?<![\w.-])(?:System )?ROCm(?: version)?(?:\s*:\s*|\s+)(?P<v>\d+\.\d+(?:\.\d+)?)\b", re.I)
_ROCM_PATH = lazy(r"(?<![\w/.-])(?P<p>/opt/rocm(?:-\d+\.\d+(?:\.\d+)?)?)(?=[/\s\"'`),:;]|$)")
_COMPONENT_VERSIONS = lazy(r"\b(?P<what>HIP|COMGR|LLVM)\s+(?P<v>\d+\.\d+[\w.+-]*)")
_BUNDLED = lazy(r"\b(?:bundled|ships?|shipped|component|packaged|engine/)\b", re.I)
_SYSTEM = lazy(r"/opt/rocm|/usr/lib|\bsystem\b|System32", re.I)
# The path is tried once per word, from the word's first root (C:\, / or ./): tried from every '/' of a
# long word that names no runtime, the lazy scan to the word's end took 0.6 s on a line of 4,000 slashes.
_HIP_RUNTIME_PATH = lazy(r"(?<![^\s\"'`])(?:(?![A-Za-z]:\\|\.?/)[^\s\"'`])*"
                         r"(?P<p>(?:[A-Za-z]:\\|/|\./)[^\s\"'`]*?(?:lib)?amdhip64(?:_\d+)?\.(?:dll|so(?:\.\d+)*))")
_ENV_KEYS = (r"LD_LIBRARY_PATH|LD_PRELOAD|HSA_OVERRIDE_GFX_VERSION|HIP_VISIBLE_DEVICES|ROCR_VISIBLE_DEVICES"
             r"|CUDA_VISIBLE_DEVICES|HIP_DEVICE_LIB_PATH|ROCM_PATH|HIP_PATH|HSA_ENABLE_DXG_DETECTION|GPU_DEVICE_ORDINAL"
             r"|HSA_ENABLE_SDMA|HIP_LAUNCH_BLOCKING|AMD_SERIALIZE_KERNEL")
# KEY=v, KEY: v (a listing), os.environ["KEY"] = "v", os.environ.setdefault("KEY", "v") / setenv / putenv; and the
# space-separated forms of a Dockerfile (ENV KEY v), fish (set -x KEY v) and cmd (setx KEY v).
# A bare value stops at a comma (an argument list goes on after it), except a list of device indexes or GPU UUIDs.
_ENV_VALUE = r"(?P<v>\"[^\"]*\"?|'[^']*'?|[^\s`),]*(?:,(?:\d{1,3}|GPU-[0-9a-fA-F]{4,32})(?![\w-]))*)"
_ENV_ASSIGN = lazy(r"\b(?P<k>" + _ENV_KEYS + r")(?:=|:[ \t]?|[\"']\]?[ \t]*[=,][ \t]*)(?![A-Z][A-Z0-9_]*:)"  # not the next key
                   + _ENV_VALUE)
_NEXT_KEY = lazy(r"[A-Z][A-Z0-9]*_[A-Z0-9_]*")  # a variable's name where its value should be
_ENV_SPACED = lazy(r"(?:\bENV|\bset -g?x|\bsetx)[ \t]+(?P<k>" + _ENV_KEYS + r")[ \t]+" + _ENV_VALUE)

# A GPU product named anywhere (derive/gpu.py maps it to its architecture with tables/gpus.yaml).
_PRODUCT = lazy(r"\bRadeon\b|\bInstinct\b|\bMI\d{2,3}[AX]?\b|\bRyzen AI\b|\bSteam Deck\b|\bBC-250\b", re.I)
_IN_NAME = re.compile(r"[./]\w")  # the word inside a host name or a path
# (Arch the distribution by its full name: "Architecture: gfx900" and "arch" in a GPU's description are no Linux.)
_LINUX_HINT = lazy(r"/opt/rocm|\.so(?:\.\d+)*\b|\bLinux\b|coredumpctl|segfault at|\b(?:Ubuntu|Debian|Fedora|Arch ?Linux|"
                   r"archlinux|NixOS)\b", re.I)
_WINDOWS_HINT = lazy(r"\b[A-Z]:\\|\.dll\b|\.exe\b|\bWindows\b", re.I)
# WSL runs Linux programs (ROCm's Linux libraries) on a Windows host: the OS of the process is Linux.
# dxgkrnl's "Dropped Escape call with ulEscapeCode" is WSL's GPU paravirtualisation talking
_WSL = lazy(r"\bWSL2?\b|microsoft-standard-WSL|/dev/dxg|HSA_ENABLE_DXG_DETECTION|/usr/lib/wsl/|Dropped Escape call with ulEscapeCode", re.I)
_OS_NAME_LINUX = lazy(r"(?i)\b(?:linux|ubuntu|debian|fedora|arch|manjaro|opensuse|suse|rhel|red hat|centos|rocky|alma|"
                      r"mint|pop!?_os|gentoo|nixos|bazzite|cachyos|endeavouros|void|kubuntu|xubuntu)\b")


def _gfx_score(text: str, where: Where, case: Case) -> int:
    """60 for the GPU in use (``GPU 0``), 30 for a labelled GPU or ISA (hipInfo's and PyTorch's ``gcnArchName``
    included), 10 for a passing mention."""
    if case.kind_of(where) in ("frame", "amdlog"):
        return 10
    labelled = (_GPU_LABEL.search(text) or "ISA" in text or "gcnArchName" in text
                or _ISA_NAME.match(text) is not None  # rocminfo's "ISA Info" block names the agent's ISA on a line of its own
                or _ARCH_LINE.search(text) is not None)
    return 60 if _PRIMARY.search(text) else 30 if labelled else 10


def parse(artifact: Artifact, case: Case) -> None:
    chosen = [(set(needles.lines(artifact)), read) for needles, read in _FAMILIES]
    for index in sorted(set().union(*(lines for lines, _ in chosen))):
        number, text = index + 1, artifact.lines[index]
        if not text.strip() or not readable(text):
            continue
        where = Where(artifact.name, number)
        if case.kind_of(where) is None and is_sentence(text):  # what a user says is no fact of the system
            continue
        for lines, read in chosen:
            if index in lines:
                read(text, where, case)


def _lists_targets(text: str) -> bool:
    """Whether the line lists targets rather than naming a machine's GPU: a build's target list, or three or more
    processors named on one line (a program's table of the GPUs it supports: "gfx90a (MI250X), gfx942 (MI300X), ...")."""
    return _TARGET_LIST.search(text) is not None or len({m.group(0) for m in GFX.finditer(text)}) >= LISTED


def _gpu(text: str, where: Where, case: Case) -> None:
    if m := _GPU_IN_USE.search(text):
        case.add_fact("gfx_arch", m["g"], where, text.strip(), 60)
        case.add_fact("gfx_archs", m["g"], where, text.strip(), 60)
        return
    if "gfx" in text and not _lists_targets(text):
        cuts = [m.start() for m in (_BUILD_SETTING.search(text), _REQUIREMENT.search(text)) if m]
        machine = text[:min(cuts)] if cuts else text
        score = _gfx_score(machine, where, case)
        secondary = _SECONDARY.search(machine) is not None
        for m in GFX.finditer(machine):
            case.add_fact("gfx_arch", m.group(0), where, text.strip(), score - 25 if secondary else score)
            if score >= 30:
                case.add_fact("gfx_archs", m.group(0), where, text.strip(), score)
        if m := _SPACED_ISA.search(machine):
            case.add_fact("gfx_arch", f"gfx{m['n']}", where, text.strip(), 30)
            case.add_fact("gfx_archs", f"gfx{m['n']}", where, text.strip(), 30)
    if (m := _GPU_LABEL.search(text)) and not _SECONDARY.search(text):
        name = m["name"].strip(" *`")
        if "marketing name" in m.group(0).lower() and CPU_NAME.search(name):
            return  # rocminfo's CPU agent, whatever Radeon its name also names
        if re.search(r"Radeon|Instinct|AMD|NVIDIA|GeForce|Arc|FirePro", name, re.I):
            case.add_fact("gpu_name", name, where, text.strip(), 60 if _PRIMARY.search(text) else 30)


def _platform(text: str, where: Where, case: Case) -> None:
    if m := _OS_LABEL.search(text):
        case.add_fact("os_name", m["v"].strip(" *`"), where, text.strip(), 50)
    elif m := _WINDOWS_NAME.search(text):
        case.add_fact("os_name", m.group(0), where, text.strip(), 40)
    if m := _KERNEL.search(text):
        case.add_fact("kernel", m["v"], where, text.strip(), 40)
    if m := _DRIVER.search(text):
        case.add_fact("driver", m["v"], where, text.strip(), 40)


# Weak votes for the OS family (a Windows path, a ``.so``), which finish() counts: each read on its own needle's lines.
def _windows_hint(text: str, where: Where, case: Case) -> None:
    if _WINDOWS_HINT.search(text):
        case.add_fact("os", "windows", where, text.strip(), 5)


def _linux_hint(text: str, where: Where, case: Case) -> None:
    if _LINUX_HINT.search(text):
        case.add_fact("os", "linux", where, text.strip(), 5)


def _wsl(text: str, where: Where, case: Case) -> None:
    if _WSL.search(text):
        case.add_fact("wsl", "yes", where, text.strip(), 30)
        case.add_fact("os", "linux", where, text.strip(), 10)


def _versions(text: str, where: Where, case: Case) -> None:
    if m := _ROCM.search(text):
        case.add_fact("rocm_version_system", m["v"], where, text.strip(), 40)
    for m in _ROCM_PATH.finditer(text):
        case.add_fact("rocm_path_system", m["p"], where, text.strip(), 20)
    if "HIP" in text or "COMGR" in text or "LLVM" in text:  # what _COMPONENT_VERSIONS needs
        bundled = _BUNDLED.search(text) is not None
        system = _SYSTEM.search(text) is not None
        if bundled != system:
            suffix = "" if bundled else "_system"
            for m in _COMPONENT_VERSIONS.finditer(text):
                case.add_fact(f"{m['what'].lower()}_version{suffix}", m["v"], where, text.strip(), 50)
    if ("amdhip64" in text and case.kind_of(where) not in ("frame", "amdlog")
            and (m := _HIP_RUNTIME_PATH.search(text))):
        # a line that says the runtime was loaded or used, a debugger's module load, a /proc/PID/maps mapping
        if re.search(r"HIP (?:runtime|library)|loaded|using|ModLoad:|^\s*[0-9a-f]{8,16}-[0-9a-f]{8,16} [r-][w-][x-][ps-] ",
                     text, re.I):
            case.add_fact("hip_library_path", m["p"], where, text.strip(), 50)


def _product_name(text: str) -> re.Match[str] | None:
    """The first product name of a line that is one: not the kernel driver's lowercase name ("radeon"), nor a word of
    a host name or path (repo.radeon.com, /lib/firmware/radeon)."""
    return next((m for m in _PRODUCT.finditer(text) if m[0] != "radeon" and not _IN_NAME.match(text, m.end())
                 and text[m.start() - 1:m.start()] not in (".", "/")), None)


def _product(text: str, where: Where, case: Case) -> None:
    """The product name with its neighbourhood on the line (a long line's start may be far from it: TensorFlow's
    "Created TensorFlow device (...) -> physical GPU (device: 0, name: Ellesmere [Radeon RX 470/480/...]")."""
    if case.kind_of(where) == "frame" or not (m := _product_name(text)) or ("gfx" in text and _lists_targets(text)):
        return
    line = text.strip()
    if len(line) > 200:  # a window of whole words around the name
        start = text.rfind(" ", 0, max(0, m.start() - 80)) + 1
        end = text.find(" ", min(len(text), start + 200))
        line = text[start:end if end >= 0 else len(text)].strip()
    case.add_fact("gpu_product", line, where, text.strip(), 60 if _PRIMARY.search(text) else 30)


def _environment(text: str, where: Where, case: Case) -> None:
    for m in [*_ENV_ASSIGN.finditer(text), *_ENV_SPACED.finditer(text)]:
        value = m["v"].strip("\"'")
        if not value or _NEXT_KEY.fullmatch(value):  # "HIP_VISIBLE_DEVICES: OLLAMA_HOST:..." in ollama's config: unset
            continue  # (a paste cut inside the next key leaves "HSA_OVERRIDE_GFX_VERSION: HTTPS_P")
        case.add_fact(f"env_{m['k']}", value, where, text.strip(), 20)


# Each family of facts reads only the lines one of its patterns matches (the scan finds them).
_FAMILIES = (
    (Needles(GFX, _GPU_LABEL, _SPACED_ISA), _gpu),
    (Needles(_OS_LABEL, _WINDOWS_NAME, _KERNEL, _DRIVER), _platform),
    (Needles(_WINDOWS_HINT), _windows_hint),
    (Needles(_LINUX_HINT), _linux_hint),
    (Needles(_WSL), _wsl),
    (Needles(_ROCM, _ROCM_PATH, _COMPONENT_VERSIONS, "amdhip64"), _versions),
    (Needles(_ENV_ASSIGN, _ENV_SPACED), _environment),
    (Needles(_PRODUCT), _product),
)


def finish(case: Case) -> None:
    """Facts derived from others: all GPUs seen, the OS family, which runtime was loaded."""
    if "gfx_archs" in case.facts:
        used = case.value("gfx_arch")
        case.facts["gfx_archs"].sort(key=lambda f: (f.value != used, -f.score))
    if case.facts.get("gfx_archs") or case.fact("os_name"):
        case.inputs.add("environment")
    votes: dict[str, int] = {}
    for fact in case.facts.get("os", []):
        votes[fact.value] = votes.get(fact.value, 0) + fact.score
    for fact in case.facts.get("os_name", []):  # "OS: Microsoft Windows 11 Pro" outweighs a path's hint
        linux = _OS_NAME_LINUX.search(fact.value) or _WSL.search(fact.value)  # WSL: Linux under Windows
        family = "linux" if linux else "windows" if _WINDOWS_HINT.search(fact.value) else None
        if family:
            case.add_fact("os", family, fact.where, fact.text, fact.score)
            votes[family] = votes.get(family, 0) + fact.score
    if votes:
        winner = max(votes, key=votes.get)
        first = next(f for f in case.facts["os"] if f.value == winner)
        case.facts["os"] = [first]
        first.score = votes[winner]
    if path := case.fact("hip_library_path"):
        kind = "system" if is_system_path(path.value) else "bundled"
        case.add_fact("hip_runtime", kind, path.where, path.text, path.score)
        name = (PureWindowsPath if "\\" in path.value else PurePosixPath)(path.value).name
        if name.startswith("libamdhip64.so"):
            case.add_fact("hip_soname", name, path.where, path.text, path.score)
