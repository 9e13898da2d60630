"""ROCm and HIP versions wherever programs print them, each kept with what kind of mention it is.

Examples::

    torch 2.3.0+rocm6.0                                          a wheel built for ROCm 6.0
    /usr/lib/ollama/runners/rocm_v60102/ollama_llama_server      ollama's runner built for ROCm 6.1.2
    ROCM used to build PyTorch: 6.2.41133-dd7f95766              the same, from torch's collect_env
    HIP runtime version: 6.2.41133                               collect_env: the HIP the wheel was built with (6.2)
    >>> torch.version.hip  /  '6.2.41133-dd7f95766'              the wheel's ROCm release (6.2), on the next line
    HIP version: 6.2.41133-dd7f95766                             hipconfig: the runtime installed
    /opt/rocm-6.4.1/lib/libamdhip64.so.6                         an installed ROCm tree (and a major by soname)
    ii  rocm-core  6.2.0.60200-66~22.04  amd64                   a package manager's listing
    librocblas.so.4 => /usr/lib/librocblas.so.4 (0x00007f...)   a math library's soname major: ROCm 6
    C:\\Windows\\System32\\amdhip64_7.dll                           a HIP major on Windows, by DLL name
    rocm-sdk-core==7.0.0rc20250612                               a TheRock wheel: release 7.0.0, built 2025-06-12
    therock-dist-linux-gfx110X-dgpu-6.5.0rc20250610.tar.gz       a TheRock tarball, the same
    torch 2.9.0+rocmsdk20251116                                  a wheel that names only its ROCm SDK's build date
    torch-2.7.0a0%2Brocmsdk20250620-cp312-cp312-linux_x86_64.whl  the same in pip's download line (percent-encoded)
    torch==2.7.1+devrocm7.12.0.dev0.7c398039...                  a TheRock development build for ROCm 7.12
    ROCm version: (7, 1)                                         ComfyUI's banner: torch.version.hip's release
    pytorch  2.3.1  rocm5.7_py311_0                              conda's build string: a build for ROCm 5.7
    tensorflow-rocm==2.14.0.600                                  TensorFlow 2.14.0 built for ROCm 6.0.0
    docker run ... rocm/pytorch:rocm6.1_ubuntu22.04_py3.10_pytorch_2.1.2   AMD's image for ROCm 6.1 (rocm_version_image)
    Linux gpu-box 6.8.0-40-generic #40-Ubuntu SMP PREEMPT_DYNAMIC  uname -a: the kernel release (kernel_uname)
    $ uname -r  /  6.8.0-40-generic                              the same, on the line after the command
    [pip3] torchvision==0.25.0.dev20250930+rocm7.0                torch_version, torchvision_version, torchaudio_version
    Module libhsa-runtime64.so.1 from rpm rocm-runtime-6.2.0-2.fc40.x86_64    systemd-coredump: a loaded ROCm
    Module libamd_comgr.so.2 from rpm rocm-compilersupport-18-2.rocm6.2.0.fc40.x86_64   library's package and release
    Package: rocclr/6.2.0-1.fc40                                  coredumpctl info: the program's package
    Found module libamdhip64.so.6 with build-id: 1fe1a0...        a module's build-id (build_id:libamdhip64.so.6)

derive/versions.py compares them; this parser only says what each line states.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.libloads import library_name
from triage.parsers.lines import Needles, is_sentence

# A wheel's local version: "+rocm6.1", in a URL or pip's download line percent-encoded ("torch-2.5.1%2Brocm6.2-cp310-...whl");
# TheRock's development builds name the release as "+devrocm7.12.0.dev0.<commit>" (rocm_version_wheel 7.12).
_WHEEL = lazy(r"(?:\+|%2[Bb])(?:dev)?rocm(?P<v>\d+\.\d+(?:\.\d+)?)(?=\b|rc|a\d|b\d|\.dev)"
                    r"|/whl/(?:nightly/|test/)?rocm(?P<w>\d+\.\d+(?:\.\d+)?)\b"
                    r"|ROCM used to build PyTorch:\s*(?P<b>\d+\.\d+(?:\.\d+)?)"
                    r"|\brocm_v(?P<o>\d+(?:\.\d+)?)\b"  # ollama's runner built for a ROCm release (rocm_v6, rocm_v60102)
                    r"|\srocm(?P<c>\d+\.\d+(?:\.\d+)?)_py\d{2,3}"  # a conda build string (pytorch 2.3.1 rocm5.7_py311_0)
                    # tensorflow-rocm numbers its wheels TF's version and the ROCm release's three digits:
                    # 2.14.0.600 is TensorFlow 2.14.0 for ROCm 6.0.0 (pip freeze, pip list's columns, a wheel's name)
                    r"|\btensorflow[-_]rocm(?:==|-|\s+)\d+\.\d+\.\d+\.(?P<t>[1-9]\d\d)(?![\w.])")
# AMD's container images name their ROCm release in the tag: rocm/pytorch:rocm6.1_ubuntu22.04_py3.10_pytorch_2.1.2,
# rocm/vllm:rocm6.3.1_instinct_..., rocm/tensorflow:rocm5.7-tf2.13-dev; the base images rocm/dev-ubuntu-22.04:6.2 and
# rocm/rocm-terminal:5.7 by the version alone.
_IMAGE = lazy(r"(?<![\w.-])(?:[\w.-]+/)?rocm/(?:[\w.-]+:rocm|(?:dev-[\w.-]+|rocm-terminal):)(?P<v>\d+\.\d+(?:\.\d+)?)"
              r"(?![.\d])")
_RUNTIME = lazy(r"\bHIP (?:runtime )?version\s*[:=]\s*(?P<v>\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)
# PyTorch's collect_env prints "HIP runtime version:" from torch._C._show_config()'s "HIP Runtime" line: the HIP the
# wheel was built with and carries, not one the process loaded (its "ROCM used to build PyTorch:" is torch.version.hip).
_COLLECT_HIP = lazy(r"^\s*HIP runtime version:\s*(?P<v>\d+\.\d+)\.\d+\s*$")
# torch.version.hip (`6.2.41133-dd7f95766`, `'7.1.25424'`, `'6.1.2'` in a REPL) on the line that asks for it, or on the
# line after (a REPL's `>>> torch.version.hip`, `python -c "import torch; print(torch.version.hip)"`). A HIP build
# number (a five-digit patch) may come a few lines later when the command printed other values first.
_TORCH_HIP = lazy(r"\btorch\.version\.hip\b(?:\s*\)?\s*(?:[:=,]|->)\s*['\"]?(?P<v>\d+\.\d+)(?:\.\d+)?(?:-[0-9a-f]+)?['\"]?(?!\S))?")
_HIP_VALUE = lazy(r"^\s*['\"]?(?P<v>\d+\.\d+)(?P<p>\.\d+)?(?:-[0-9a-f]{6,})?['\"]?\s*$")
# A command that prints other values too (torch.__version__, is_available()) leaves only a HIP build number certain.
_PRINTS_MORE = lazy(r"__version__|torch\.cuda\.|print\(.*print\(|torch\.version\.hip\s*,|,\s*torch\.version\.hip")
_HIP_BUILD = lazy(r"^\s*['\"]?(?P<v>\d+\.\d+)\.\d{5}(?:-[0-9a-f]{6,})?['\"]?\s*$")
_PATH = lazy(r"(?<![\w.-])/opt/rocm-(?P<v>\d+\.\d+(?:\.\d+)?)(?=[/\s\"'`),:;]|$)"
                   r"|\\AMD\\ROCm\\(?P<w>\d+\.\d+)\\", re.IGNORECASE)  # and the HIP SDK's C:\Program Files\AMD\ROCm\6.1\
_PACKAGE = lazy(
    r"(?<![\w-])(?:rocm-core|rocm-hip-runtime|rocm-hip-sdk|rocm-libs|rocm-dev|rocm-language-runtime|hip-runtime-amd"
    r"|rocm-opencl-runtime|rocm-hip-libraries)(?:/\S+)?(?:[ \t]+|-)(?:\d+:)?(?P<v>\d+\.\d+\.\d+)")
# `apt show rocm-core` / `dpkg -s`: "Package: rocm-core" and, a few lines on, "Version: 6.4.0.60400-47~22.04".
_PACKAGE_NAME = lazy(r"^Package:\s*(?:rocm-core|rocm-hip-runtime|hip-runtime-amd|rocm-libs|rocm-dev|rocm-hip-sdk)\s*$")
_PACKAGE_VERSION = lazy(r"^Version:\s*(?:\d+:)?(?P<v>\d+\.\d+\.\d+)")
# `cat /opt/rocm/.info/version` prints the release on a line of its own.
_INFO_VERSION = lazy(r"\.info/version\b")
_BARE_VERSION = lazy(r"^\s*(?P<v>\d+\.\d+\.\d+)(?:[-.]\w+)*\s*$")
_LIBRARY = lazy(r"\bamdhip64_(?P<d>\d+)\.dll\b|\blibamdhip64\.so\.(?P<s>\d+)\b", re.IGNORECASE)
# Math libraries whose soname major tells the ROCm major (tables/rocm-library-sonames.yaml; derive/versions.py maps it).
_SONAME = lazy(r"\blib(?:rocblas|hipblaslt|hipblas)\.so\.\d+\b")

# TheRock's wheels and tarballs (pip freeze's rocm-sdk-core==7.0.0rc20250612, pip list's aligned columns, a wheel's
# or sdist's file name rocm_sdk_core-7.0.0rc20250825-py3-none-win_amd64.whl, rocm-7.0.0rc20250825.tar.gz): the release,
# and the build date of a nightly (rc / a / b + YYYYMMDD). The bare name `rocm` counts with == or - only, or with a
# nightly's date (`rocm 7.10.0a20251030` in pip list), not in a sentence's "ROCm 6.2".
_THEROCK = lazy(
    r"(?<![\w.\\-])(?:rocm[-_]sdk(?:[-_](?:core|devel|libraries|device)(?:[-_][\w-]+?)?)?(?:==|-|\s+)"
    r"|(?<!/)rocm(?:\[[\w,]+\])?(?:==|-)|rocm(?:\s+|-)(?=\d+\.\d+\.\d+(?:rc|a|b)20\d{6})"
    r"|therock-dist-(?:linux|windows)-\S*?-)"
    r"(?P<v>\d+\.\d+\.\d+)(?:(?:rc|a|b)(?P<d>20\d{6})|\.dev0\b)?(?!\d|\.\d)", re.IGNORECASE)
# A local version that names a nightly's date (torch 2.10.0+rocm7.13.0a20260513) or only its SDK's (2.9.0+rocmsdk20251116).
_WHEEL_DATE = lazy(r"(?:\+|%2[Bb])rocm\d+\.\d+\.\d+(?:rc|a|b)(?P<d>20\d{6})\b|(?:\+|%2[Bb])rocmsdk(?P<s>20\d{6})\b")
# ComfyUI prints torch.version.hip's major and minor as a tuple.
_COMFY = lazy(r"^\s*ROCm version:\s*\((?P<maj>\d+),\s*(?P<min>\d+)\)")
# uname -a: "Linux HOST RELEASE #BUILD ..." (envfacts reads "Linux version X" and "Kernel: X" as the fact kernel; this one
# is kernel_uname, which derive/gpu.py reads beside it).
_UNAME = lazy(r"^\s*Linux\s+\S+\s+(?P<v>\d\.\d+\.\d+[-\w.+~]*)\s+#\d+")
# `uname -r` prints the release alone on the next line ("6.8.0-40-generic").
_UNAME_R = lazy(r"(?:^|[$#>]\s*)uname\s+-r\s*$")
_KERNEL_RELEASE = lazy(r"^\s*(?P<v>\d\.\d+\.\d+[-\w.+~]*)\s*$")
# systemd-coredump's module list (coredumpctl info, the journal's message): a loaded ELF object and the package note
# distributions stamp their builds with (Fedora, RHEL and others: "from rpm NAME-VERSION-RELEASE.ARCH"; "from deb ...";
# systemd prints "package" for another type), else its build-id ("Module X, build-id=..."; before systemd 249
# "Found module X with build-id: ..."), or that it has none.
_MODULE = lazy(r"^\s*(?:Found module|Module)\s+(?P<m>[^\s,]+),?\s+(?:from\s+[\w-]+\s+(?P<p>\S+?)"
               r"(?:,\s*build-id=(?P<c>[0-9a-f]{16,128}))?|build-id=(?P<d>[0-9a-f]{16,128})"
               r"|with build-id:?\s+(?P<b>[0-9a-f]{16,128})|without build-id\.?)\s*$")
# coredumpctl info's package of the program that dumped core ("Package: rocclr/6.2.0-1.fc40"; apt's "Package:" has no /).
_PROGRAM_PACKAGE = lazy(r"^\s*Package:\s*(?P<p>[\w.+-]+/\d[\w.~+:-]*)\s*$")
# A package reference's ROCm release: a rocmX.Y.Z tag in its release (Fedora's hsakmt-1.0.6-41.rocm6.2.0.fc40,
# rocm-compilersupport-18-2.rocm6.2.0.fc40, whose own versions are not ROCm's), else the version of a package ROCm
# numbers (rocm-runtime-6.2.0, rocclr-6.2.0, rocblas-6.1.2, Debian's libamdhip64-5-5.2.3): one of ROCm's releases,
# whose majors are single digits (an LLVM-numbered package, 17 or 18, is not one).
_RELEASE_TAG = lazy(r"[.-]rocm(?P<v>\d+\.\d+(?:\.\d+)?)(?=[.~+_-]|$)")
_PACKAGE_RELEASE = lazy(r"^[\w.+-]+?[-/](?:\d+:)?(?P<v>[1-9]\.\d+(?:\.\d+)?)(?=[-~+.]|$)")
# Packages whose own version is the ROCm release when the module they ship is no ROCm library (the program's package).
_ROCM_PACKAGE = lazy(r"^(?:rocm-(?!compilersupport|device-libs|llvm)[\w-]+|rocclr|rocminfo|hip-runtime-amd)$")

# The torch family's versions, with a local tag when there is one (+rocm6.1, +git..., .dev2025...): pip freeze's
# torch==2.4.1+rocm6.1, pip list's aligned columns, collect_env's "[pip3] torch==..." and "[conda] pytorch 2.0.1 ...",
# its "PyTorch version: ...", pip's "Successfully installed ... torch-2.4.0+rocm6.1" and `pip show`'s Name/Version.
_TORCH_VERSION = r"(?P<{}>\d+\.\d+(?:\.\d+)?(?:(?:a|b|rc)\d+)?(?:\.(?:dev|post)\d+)?(?:\+[\w.]+)?)"
_TORCH_LISTED = lazy(r"^\s*(?:\[(?:pip3?|conda)\]\s+)?(?P<n>torch|torchvision|torchaudio|pytorch)"
                     r"(?:==|\s+(?=\d+\.\d+\.\d))" + _TORCH_VERSION.format("v") + r"(?=\s|$)"
                     r"|^\s*(?P<p>PyTorch) version:\s*" + _TORCH_VERSION.format("w") + r"\s*$")
_TORCH_INSTALLED = lazy(r"(?<=\s)(?P<n>torch|torchvision|torchaudio)-" + _TORCH_VERSION.format("v") + r"(?=\s|$)")
_PIP_SHOW_VERSION = lazy(r"^Version:\s*" + _TORCH_VERSION.format("v") + r"\s*$")
_PIP_SHOW = lazy(r"^Name:\s*(?P<n>torch|torchvision|torchaudio)\s*$")
_TORCH_NAMES = {"torch": "torch_version", "pytorch": "torch_version", "torchvision": "torchvision_version",
                "torchaudio": "torchaudio_version"}

_NEEDLES = Needles(_MODULE, _PROGRAM_PACKAGE, _TORCH_LISTED, r"Successfully installed", _PIP_SHOW, _WHEEL, _IMAGE, _RUNTIME, _TORCH_HIP, _HIP_VALUE, _PATH, _PACKAGE, _LIBRARY, _SONAME, _PACKAGE_NAME, _PACKAGE_VERSION, _INFO_VERSION,
                   _BARE_VERSION, _THEROCK, _WHEEL_DATE, _COMFY, _UNAME, _UNAME_R)

# What each kind of mention says of the process, for derive/versions.py.
KINDS = {"wheel": "rocm_version_wheel", "runtime": "hip_version_runtime", "path": "rocm_version_path",
         "package": "rocm_version_package", "image": "rocm_version_image", "library": "rocm_version_library"}


def _unpacked(version: str) -> str:
    """ROCm's packed number (``60102``, as in ollama's ``rocm_v60102`` and package versions) as ``6.1.2``."""
    if version.isdigit() and 5 <= len(version) <= 6:
        return f"{int(version[:-4])}.{int(version[-4:-2])}.{int(version[-2:])}"
    return version


def _date(stamp: str) -> str:
    """``20250612`` -> ``2025-06-12``."""
    return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:]}"


def _therock(text: str, where: Where, case: Case) -> None:
    """TheRock's release names and nightly dates; a wheel that names only a date leaves the release to
    derive/versions.py (tables/rocm-wheels.yaml)."""
    quoted = text.strip()
    for m in _THEROCK.finditer(text):
        case.add_fact(KINDS["wheel"], m["v"], where, quoted, 40)
        if m["d"]:
            case.add_fact("rocm_build_date", _date(m["d"]), where, quoted, 40)
    for m in _WHEEL_DATE.finditer(text):
        if m["s"]:
            case.add_fact("rocm_sdk_date", _date(m["s"]), where, quoted, 40)
        case.add_fact("rocm_build_date", _date(m["d"] or m["s"]), where, quoted, 40)
    if m := _COMFY.match(text):
        case.add_fact(KINDS["wheel"], f"{m['maj']}.{m['min']}", where, quoted, 40)
    if m := _UNAME.match(text):
        case.add_fact("kernel_uname", m["v"], where, quoted, 45)


def package_release(package: str) -> str | None:
    """The ROCm release a package reference names (``rocm-runtime-6.2.0-2.fc40.x86_64`` -> ``6.2.0``), from its
    release's rocm tag or its own version (None where it names none)."""
    if m := _RELEASE_TAG.search(package):
        return m["v"]
    m = _PACKAGE_RELEASE.match(package)
    return m["v"] if m else None


def _coredump_module(text: str, where: Where, case: Case) -> None:
    """A module line of systemd-coredump: the ROCm release and package a ROCm library came from, any module's build-id
    (what symbolize/known_frames.py matches a library build by), and the program's package when ROCm numbers it."""
    quoted = text.strip()
    if m := _MODULE.match(text):
        if build_id := m["b"] or m["c"] or m["d"]:
            case.add_fact(f"build_id:{m['m'].rsplit('/', 1)[-1]}", build_id, where, quoted, 30)
        if m["p"] and library_name(m["m"]) and (version := package_release(m["p"])):
            case.add_fact(KINDS["package"], version, where, quoted, 45)
            case.add_fact("rocm_library_package", m["p"], where, quoted, 45)
    elif (m := _PROGRAM_PACKAGE.match(text)) and (version := package_release(m["p"])):
        if _RELEASE_TAG.search(m["p"]) or _ROCM_PACKAGE.match(m["p"].split("/")[0]):
            case.add_fact(KINDS["package"], version, where, quoted, 40)


def _torch(text: str, where: Where, case: Case) -> None:
    """The torch family's versions a listing, collect_env or pip's install line states."""
    if m := _TORCH_LISTED.match(text):
        case.add_fact(_TORCH_NAMES[(m["n"] or m["p"]).lower()], m["v"] or m["w"], where, text.strip(), 40)
    elif text.lstrip().startswith("Successfully installed"):
        for m in _TORCH_INSTALLED.finditer(text):
            case.add_fact(_TORCH_NAMES[m["n"]], m["v"], where, text.strip(), 30)


def parse(artifact: Artifact, case: Case) -> None:
    shown = ("", -10)  # the package and line of the last `pip show torch...` "Name:" line
    package_at = -10  # the line of the last "Package: rocm-..." of an `apt show` / `dpkg -s`
    info_at = -10  # the line of the last `cat /opt/rocm/.info/version`
    uname_at = -10  # the line of the last `uname -r`
    asked_at = -10  # the line of the last mention of torch.version.hip with no value on it
    alone = False  # whether that line asks for torch.version.hip only (its value is then the next line)
    for index, where, text in _NEEDLES.readable_lines(artifact):
        if case.kind_of(where) is None and is_sentence(text):  # what a user says is no fact of the system
            continue
        quoted = text.strip()
        _therock(text, where, case)
        _torch(text, where, case)
        _coredump_module(text, where, case)
        if m := _PIP_SHOW.match(text):
            shown = (m["n"], index)
        elif index - shown[1] <= 2 and (m := _PIP_SHOW_VERSION.match(text)):
            case.add_fact(_TORCH_NAMES[shown[0]], m["v"], where, quoted, 40)
            shown = ("", -10)
        for m in _WHEEL.finditer(text):
            version = m["v"] or m["w"] or m["b"] or m["c"] or (m["t"] and f"{m['t'][0]}.{m['t'][1]}")
            case.add_fact(KINDS["wheel"], version or _unpacked(m["o"]), where, quoted, 40)
        for m in _IMAGE.finditer(text):
            case.add_fact(KINDS["image"], m["v"], where, quoted, 40)
        if m := _COLLECT_HIP.match(text):
            case.add_fact(KINDS["wheel"], m["v"], where, quoted, 40)
        elif m := _RUNTIME.search(text):
            case.add_fact(KINDS["runtime"], m["v"], where, quoted, 40)
        if m := _TORCH_HIP.search(text):
            if m["v"]:
                case.add_fact(KINDS["wheel"], m["v"], where, quoted, 40)
            else:
                asked_at, alone = index, not _PRINTS_MORE.search(text)
        elif 0 < index - asked_at <= 4 and (m := (_HIP_VALUE if alone and index == asked_at + 1 else _HIP_BUILD).match(text)):
            case.add_fact(KINDS["wheel"], m["v"], where, quoted, 40)
            asked_at = -10
        for m in _PATH.finditer(text):
            case.add_fact(KINDS["path"], m["v"] or m["w"], where, quoted, 30)
        if m := _PACKAGE.search(text):
            case.add_fact(KINDS["package"], m["v"], where, quoted, 40)
        for m in _LIBRARY.finditer(text):
            case.add_fact(KINDS["library"], m["d"] or m["s"], where, quoted, 20)
        for m in _SONAME.finditer(text):
            case.add_fact("rocm_library_soname", m.group(0), where, quoted, 20)
        if _UNAME_R.search(text):
            uname_at = index
        elif index == uname_at + 1 and (m := _KERNEL_RELEASE.match(text)):
            case.add_fact("kernel_uname", m["v"], where, quoted, 45)
        if _INFO_VERSION.search(text):
            info_at = index
        elif index == info_at + 1 and (m := _BARE_VERSION.match(text)):
            case.add_fact(KINDS["package"], m["v"], where, quoted, 40)
        if _PACKAGE_NAME.match(text):
            package_at = index
        elif index - package_at <= 6 and (m := _PACKAGE_VERSION.match(text)):
            case.add_fact(KINDS["package"], m["v"], where, quoted, 40)
            package_at = -10
