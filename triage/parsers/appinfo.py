"""The application or engine that crashed and its version, from what users and programs print.

Real lines (the seed reports and ../shared/realworld) and what each yields; tests run them::

    - **Strata version**: `0.1.44.1` (latest on `main` at the time of this report)  =>  app_version=0.1.44.1 app_name=Strata
    Run `run-iq2_xs.bat`. Engine starts, reaches `session is up (engine 0.1.44.1)`.  =>  app_version=0.1.44.1 engine_version=0.1.44.1
    Strata 0.2.7 · engine 0.1.52 · variant rx9070 · build_id f-amd-vision a42cc3d7df70+rocm  =>  app_version=0.1.52 product_version=0.2.7 app_name=Strata
    Engine 0.1.52-linux-x86_64-hip-rx9070 dies with SIGSEGV a few seconds after it starts  =>  app_version=0.1.52
    Desktop app (Windows, Linux or Mac) — Linux AppImage 0.2.7, engine installed through Update engine.  =>  app_version=0.2.7
    mesh-llm	0.74.0 (release artifact, not a source build)  =>  app_version=0.74.0 app_name=mesh-llm
    ollama version is 0.5.8  =>  app_version=0.5.8 app_name=ollama
    libobs version: 20.0.1  =>  app_version=20.0.1 app_name=libobs
    Faulting application name: kodi.exe, version: 20.1.0.0, time stamp: 0x640d1ad6  =>  app_version=20.1.0.0 app_name=kodi
    build: 4567 (abc1234) with cc (GCC) 13.2.0 for x86_64-linux-gnu  =>  app_version=4567
    ComfyUI version: 0.3.10  =>  app_version=0.3.10 app_name=ComfyUI
    PyTorch version: 2.4.0+rocm6.1  =>  app_version=2.4.0+rocm6.1 framework_version=2.4.0+rocm6.1 app_name=PyTorch
    Welcome to KoboldCpp - Version 1.80  =>  app_version=1.80 app_name=KoboldCpp

The forms: a labelled field (``X version: V``, ``X version is V``, ``X - Version V``, a
``Version:`` line under ``Name: X``, llama.cpp's ``build: N (commit)``), a product name followed
by its version (``Blender 4.2.0``, ``LM Studio 0.3.5``, ``torch 2.5.1+rocm6.2``, ``X v1.2``), a
pip pin (``torch==2.4.0``) and a file-style name (``koboldcpp-1.80``).

What crashed has up to three roles, each kept as its own fact: the engine (``engine 0.1.52``:
``engine_version``), the product the user installed (``Strata 0.2.7``: ``product_version``) and
the framework under it (torch, TensorFlow, JAX, ONNX Runtime: ``framework_version``).
``app_version`` is the engine's when the input names one, else the product's, else the
framework's: the engine is the process that died, and one app release ships many engine
builds, so it groups crashes best. Within a role a labelled field outranks a name and version,
which outranks a file-style name; ``app_name`` is the name given with the best candidate that has one.

Not read: the versions of the GPU stack and the platform (HIP, ROCm, HSA, COMGR, LLVM, clang,
amdgpu and other drivers, the kernel, the OS, Python, compilers, CUDA, Mesa: envfacts.py reads
those), library files (``amdxx64.dll, version: ...`` names a module, not the program), package
listings (lines of ``name==version`` or ``name  version`` one after another: only a framework's
line counts there), and lines that another parser claimed as machine records (stack frames,
runtime-log records, kernel log, strace, listings, the collect manifest), or that carry a
kernel-log prefix (the kernel prints its drivers' and firmware's versions, never the app's).
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable

# Dotted numbers with a pre-release and a local part (2.4.0+rocm6.1). A platform tag after them
# (0.1.52-linux-x86_64) is not part of the version; letters right after them (22.0git, 3.30GHz) or
# more numbers (libamdhip64.so.7.2.53211, 7.2.53210.41ce572d55) make it no version at all.
_VERSION = lazy(
    r"(?<![\w.+])(?P<v>v)?(?P<n>\d+(?:\.\d+){1,3}(?:[-.]?(?:rc|alpha|beta|dev|post|pre)\d*|[ab]\d+)?"
    r"(?:\+[A-Za-z0-9]+(?:\.[A-Za-z0-9]+)*)?)(?!\w|\.\d)"
)
# llama.cpp's ``build: 4567 (abc1234)`` and its ``--version``'s ``version: 4567 (abc1234)``: a build and its commit.
_BUILD = lazy(r"(?i:\b(?:build|version))\s*[:=]\s*(?P<n>\d{1,7})\s*\([0-9a-f]{7,40}\)")
_LABEL = lazy(r"(?i:\b(?:version|ver\.?|release|build))\s*(?:is\s+|[:=]\s*)?$")
_NAME_LINE = lazy(r"^\s*(?i:name|package)\s*:\s*(?P<name>\S+)\s*$")
# One row of a package listing (pip freeze, pip list, pacman -Q): a name and a version, nothing else.
_ROW = lazy(r"^\W*(?:\[\w+\]\s*)?(?P<name>[A-Za-z][\w.-]*)(?P<pin>==|\s+)v?\d[\w.+~:-]*\s*$")
_KERNEL_LOG = lazy(r"^[>\s]*(?:<\d>)?\[\s*\d+\.\d+\]|^[>\s]*\[(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) |\bkernel: ")
_ADDRESS = lazy(r"^(?:127|10)\.\d+\.\d+\.\d+$|^(?:192\.168|172\.\d+|169\.254)\.\d+\.\d+$|^[0.]+$")
_MODULE = lazy(r"\.(?:dll|so|sys|ko|dylib)(?:\.\d+)*$", re.I)
_TOKEN_EDGES = "[](){}<>\"'*;"
_BEFORE = 160  # characters before a version that can hold its label and name (and bound the work per version)

# Machine records whose versions are libraries' or the kernel's, never the application's.
_MACHINE_KINDS = frozenset({"frame", "amdlog", "kernel", "strace", "listing", "offload", "collect-manifest"})

# Names (or parts of names: xf86-video-amdgpu, rocm-bin) of the GPU stack, the platform and the tools
# around them: their versions are other facts (envfacts.py), or no one's app.
_STACK_PREFIXES = (
    "hip", "roc", "hsa", "amd", "comgr", "llvm", "clang", "cuda", "cudnn", "nvidia", "mesa", "vulkan", "opencl",
    "opengl", "gfx", "radeon", "ryzen", "miopen", "rccl", "directx", "d3d", "python", "win", "linux", "kernel",
    "driver", "firmware", "gcc", "glibc", "wsl", "ubuntu", "debian", "fedora", "nixos", "cachyos", "manjaro",
    "gentoo", "opensuse", "intel", "xf86", "xorg", "adrenalin", "catalyst", "dkms",
)
_STACK = frozenset("""
    os cc g++ libc musl cmake make ninja meson gdb lldb lld ld msvc egl gl glx drm kms bios vbios uefi smu psp mes sdma
    vcn dmub dcn smi isa api abi sdk runtime edition software wayland xwayland gnome kde plasma macos darwin ios
    android freebsd mint pop suse rhel centos alma almalinux alpine arch archlinux endeavouros bazzite steamos
    microsoft apple arm x86 x86_64 amd64 aarch64 cpu gpu apu npu vram ram pci pcie usb node nodejs npm java jdk jre
    go golang rust rustc cargo julia perl ruby php conda mamba pip pip3 cpython pypy docker podman git nvcc triton
    zluda directml metal tensile tensilelite magma nccl spirv library lib module system platform ext
    framework toolkit compiler shader microcode ucode dx11 dx12 dxgi
""".split())
# Words that say a version is wanted, compared or counted, not which program runs: ``compatible with 2.12.0``.
_STOP = frozenset("""
    to from with is was are were be of on in at for by as than since before after until and or but vs via between
    against into onto using use used tried try run running ran upgraded updated downgraded requires require needs
    need supports support only also if when then now still above below over under up down same both all any every
    each per about around approx x version ver build release v commit tag rev revision line step page issue pr
    section chapter table figure number no id size total free ip host address addr port localhost seconds ms
""".split())
# Words a labelled field may give instead of the program's name (``client version is 0.5.7``): the version
# counts, the word is no name.
_GENERIC = frozenset("app application program client server tool package installed current latest new old stable "
                     "nightly this my our your its the a an".split())
# How the program was packaged (``Linux AppImage 0.2.7``): the version is the program's, the word is no name.
_PACKAGING = frozenset("appimage flatpak snap deb rpm msi exe installer setup portable binary binaries artifact wheel "
                       "image container".split())
_FRAMEWORKS = frozenset("torch pytorch tensorflow tensorflow-rocm jax jaxlib onnxruntime onnxruntime-rocm "
                        "onnxruntime-gpu paddlepaddle mxnet".split())
# Model families named like programs (llama-3.1, phi-3.5): a model is no program.
_MODELS = frozenset("llama qwen mistral mixtral gemma phi deepseek falcon gpt sd sdxl flux yolo".split())

# role -> score band: the engine's version wins over the product's, the product's over the framework's.
_BAND = {"engine": 60, "product": 30, "framework": 0}
_FORM = {"labelled": 30, "mention": 20, "pip": 20, "file": 10}

# What every line read holds: a label or the word engine, a pin or a local version part (+rocm6.2)
# anywhere; in a file's first lines, where a program prints its banner, also a name then a version
# (two dots, a v) or a file-style name: those needles are digits and separators, slow to look for
# in every line of a long log.
_NEEDLES = Needles(r"(?i:version|\bver\b|engine|release|build)", r"==", r"\+[A-Za-z]")
_BANNER = Needles(r"\S\s+v?\d+\.\d+(?:\.\d|\+)", r"\sv\d+\.\d", r"[A-Za-z]-\d+\.\d", head=True)


def parse(artifact: Artifact, case: Case) -> None:
    lines = artifact.lines
    for index in sorted(set(_NEEDLES.lines(artifact)).union(_BANNER.lines(artifact))):
        text = lines[index]
        where = Where(artifact.name, index + 1)
        if not readable(text) or case.kind_of(where) in _MACHINE_KINDS or _KERNEL_LOG.search(text):
            continue
        for value, name, role, form in _candidates(lines, index):
            score = _BAND[role] + _FORM[form]
            case.add_fact("app_version", value, where, text.strip(), score)
            case.add_fact(f"{role}_version", value, where, text.strip(), score)
            if name:
                case.add_fact("app_name", name, where, text.strip(), score)


def _candidates(lines: list[str], index: int) -> Iterator[tuple[str, str | None, str, str]]:
    """(version, name, role, form) of each program version on the line."""
    clean = lines[index].replace("*", "").replace("`", "")  # Markdown emphasis and code spans
    listed: bool | None = None
    for m in _BUILD.finditer(clean):
        head = clean[max(0, m.start() - _BEFORE):m.start()]
        # A bare ``build: N (commit)`` is llama.cpp's own line: the commit says enough without a name.
        got = _labelled(head, lines, index) if re.search(r"[A-Za-z]", head) else (None, "product")
        if got:
            yield m["n"], got[0], got[1], "labelled"
    for m in _VERSION.finditer(clean):
        value = m["n"]
        if _ADDRESS.match(value):
            continue
        before, after = clean[max(0, m.start() - _BEFORE):m.start()], clean[m.end():m.end() + 2]
        got = _classify(before, after, bool(m["v"]), value, lines, index)
        if got is None:
            continue
        name, role, form = got
        if form in ("pip", "mention") and role != "framework":
            if listed is None:
                listed = _listed(lines, index)
            if listed:
                continue
        yield value, name, role, form


def _classify(prefix: str, after: str, v: bool, value: str, lines: list[str],
              index: int) -> tuple[str | None, str, str] | None:
    """The name, role and form of the version that follows ``prefix``, or None when it is no program's."""
    if prefix.endswith("=="):
        m = re.search(r"(?:^|[\s\[(\"'])([A-Za-z][\w.-]*)==$", prefix)
        got = _name([m[1]], "pip") if m else None
        return (*got, "pip") if got else None
    if prefix.endswith("-") and not v:
        m = re.search(r"(?:^|[\s(\"'])([A-Za-z][\w.]*[A-Za-z])-$", prefix)
        if m is None or re.match(r"-[A-Za-z0-9]", after):  # a model (llama-3.1-8b) or a platform string
            return None
        got = _name([m[1]], "file")
        return (*got, "file") if got else None
    if label := _LABEL.search(prefix):
        got = _labelled(prefix[:label.start()], lines, index)
        return (*got, "labelled") if got else None
    if not prefix[-1:].isspace():
        return None
    tokens = prefix.split()[-2:]
    if not tokens:
        return None
    engine = tokens[-1].rstrip(":").strip(_TOKEN_EDGES).lower() == "engine"
    form = "labelled" if engine and tokens[-1].endswith(":") else "mention"  # ``Engine: 0.1.44`` is a field
    if not (engine or v or value.count(".") >= 2 or "+" in value):  # x.y alone after a word is a size or a measure
        return None
    got = _name(tokens, form)
    return (*got, form) if got else None


def _labelled(head: str, lines: list[str], index: int) -> tuple[str | None, str] | None:
    """Name and role for a labelled version whose label follows ``head``; a bare ``Version:`` takes
    its name from a ``Name:`` line just above."""
    head = head.rstrip(" \t,-–—|(")
    tokens = head.split()[-2:]
    if not tokens or not re.search(r"[A-Za-z]", head.strip(" \t-•>#")):
        m = _NAME_LINE.match(lines[index - 1]) if index > 0 else None
        return _name([m["name"]], "labelled") if m else None
    return _name(tokens, "labelled")


def _name(tokens: list[str], form: str) -> tuple[str | None, str] | None:
    """The program's name and role from the one or two words before its version, or None when they
    name no program (the GPU stack, a library, a word like ``with``)."""
    last = tokens[-1].strip(_TOKEN_EDGES).rstrip(",.")
    # A word before a comma or a colon belongs to another phrase (``on Windows, Strata 0.1.44.1``).
    previous = tokens[-2].strip(_TOKEN_EDGES) if len(tokens) > 1 and not tokens[-2].endswith((",", ";", ":")) else None
    low = last.rstrip(":").lower()
    if not last or not last[0].isalpha() or _is_stack(last.rstrip(":")):
        return None
    if low == "engine":  # Strata engine 0.1.52, Unreal Engine 5.3.2; never the HIP or driver's own
        if previous and _is_stack(previous):
            return None
        return (previous if previous and _proper(previous) else None), "engine"
    if low in _PACKAGING:
        return (previous if previous and _proper(previous) else None), "product"
    if low in _STOP:
        return None
    if low in _GENERIC or last.endswith(":"):  # a log's own prefix (``main: build = 1234``) is no name either
        return (None, "product") if form == "labelled" else None
    if previous and _is_stack(previous):  # AMD Software 24.1, Runtime Ext Version
        return None
    name = re.sub(r"(?i)\.exe$", "", last)
    if name.lower() in _MODELS:
        return None
    if previous and re.fullmatch(r"[A-Z]{2,3}", previous) and name[0].isupper():  # LM Studio, OBS Studio
        name = f"{previous} {name}"
    return name, "framework" if name.lower() in _FRAMEWORKS else "product"


def _proper(word: str) -> bool:
    """A word that can name the program before ``engine`` or ``AppImage`` (Strata, not Linux or the)."""
    low = word.lower()
    return word[:1].isalpha() and not _is_stack(word) and not (low in _STOP or low in _GENERIC or low in _PACKAGING)


def _is_stack(word: str) -> bool:
    """A word naming the GPU stack, the platform, a tool around them, a library file or a path."""
    if "/" in word or "\\" in word or _MODULE.search(word):
        return True
    for part in re.split(r"[-_.+]", word.lower()):
        if part.startswith("lib") and len(part) > 5:
            part = part[3:]
        if part and (part in _STACK or part.startswith(_STACK_PREFIXES)):
            return True
    return False


def _listed(lines: list[str], index: int) -> bool:
    """Whether the line is one row of a package listing: it and a line beside it are each a name and a
    version. A pin (``name==1.2``) beside it always makes one; a GPU stack row (``ROCm  7.2.3`` under
    ``mesh-llm  0.74.0``) makes an environment table instead."""
    if not _ROW.match(lines[index]):
        return False
    for i in (index - 1, index + 1):
        row = _ROW.match(lines[i]) if 0 <= i < len(lines) and readable(lines[i]) else None
        if row and (row["pin"] == "==" or not _is_stack(row["name"])):
            return True
    return False
