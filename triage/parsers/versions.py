"""ROCm and HIP versions wherever programs print them, each kept with what kind of mention it is.

Examples::

    torch 2.3.0+rocm6.0                                          a wheel built for ROCm 6.0
    /usr/lib/ollama/runners/rocm_v60102/ollama_llama_server      ollama's runner built for ROCm 6.1.2
    ROCM used to build PyTorch: 6.2.41133-dd7f95766              the same, from torch's collect_env
    HIP runtime version: 6.2.41133                               the runtime the process loaded
    /opt/rocm-6.4.1/lib/libamdhip64.so.6                         an installed ROCm tree (and a major by soname)
    ii  rocm-core  6.2.0.60200-66~22.04  amd64                   a package manager's listing
    C:\\Windows\\System32\\amdhip64_7.dll                           a HIP major on Windows, by DLL name

derive/versions.py compares them; this parser only says what each line states.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles, is_sentence

_WHEEL = lazy(r"\+rocm(?P<v>\d+\.\d+(?:\.\d+)?)\b|/whl/(?:nightly/|test/)?rocm(?P<w>\d+\.\d+(?:\.\d+)?)\b"
                    r"|ROCM used to build PyTorch:\s*(?P<b>\d+\.\d+(?:\.\d+)?)"
                    r"|\brocm_v(?P<o>\d+(?:\.\d+)?)\b")  # ollama's runner built for a ROCm release (rocm_v6, rocm_v60102)
_RUNTIME = lazy(r"\bHIP (?:runtime )?version\s*[:=]\s*(?P<v>\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)
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

_NEEDLES = Needles(_WHEEL, _RUNTIME, _PATH, _PACKAGE, _LIBRARY, _PACKAGE_NAME, _PACKAGE_VERSION, _INFO_VERSION,
                   _BARE_VERSION)

# What each kind of mention says of the process, for derive/versions.py.
KINDS = {"wheel": "rocm_version_wheel", "runtime": "hip_version_runtime", "path": "rocm_version_path",
         "package": "rocm_version_package", "library": "rocm_version_library"}


def _unpacked(version: str) -> str:
    """ROCm's packed number (``60102``, as in ollama's ``rocm_v60102`` and package versions) as ``6.1.2``."""
    if version.isdigit() and 5 <= len(version) <= 6:
        return f"{int(version[:-4])}.{int(version[-4:-2])}.{int(version[-2:])}"
    return version


def parse(artifact: Artifact, case: Case) -> None:
    package_at = -10  # the line of the last "Package: rocm-..." of an `apt show` / `dpkg -s`
    info_at = -10  # the line of the last `cat /opt/rocm/.info/version`
    for index, where, text in _NEEDLES.readable_lines(artifact):
        if case.kind_of(where) is None and is_sentence(text):  # what a user says is no fact of the system
            continue
        quoted = text.strip()
        for m in _WHEEL.finditer(text):
            case.add_fact(KINDS["wheel"], m["v"] or m["w"] or m["b"] or _unpacked(m["o"]), where, quoted, 40)
        if m := _RUNTIME.search(text):
            case.add_fact(KINDS["runtime"], m["v"], where, quoted, 40)
        for m in _PATH.finditer(text):
            case.add_fact(KINDS["path"], m["v"] or m["w"], where, quoted, 30)
        if m := _PACKAGE.search(text):
            case.add_fact(KINDS["package"], m["v"], where, quoted, 40)
        for m in _LIBRARY.finditer(text):
            case.add_fact(KINDS["library"], m["d"] or m["s"], where, quoted, 20)
        if _INFO_VERSION.search(text):
            info_at = index
        elif index == info_at + 1 and (m := _BARE_VERSION.match(text)):
            case.add_fact(KINDS["package"], m["v"], where, quoted, 40)
        if _PACKAGE_NAME.match(text):
            package_at = index
        elif index - package_at <= 6 and (m := _PACKAGE_VERSION.match(text)):
            case.add_fact(KINDS["package"], m["v"], where, quoted, 40)
            package_at = -10
