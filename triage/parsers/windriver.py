"""The Windows display driver's version and the HIP runtime DLL's (``amdhip64*.dll``) version, as programs print them.

On Windows the HIP runtime comes with the display driver (``C:\\Windows\\System32\\amdhip64_6.dll``), so which
driver is installed decides which HIP runtime an application runs on. Examples::

    Driver Version: 31.0.24027.1012                          dxdiag, Device Manager (AMD's WDDM version)
    DriverVersion : 31.0.24027.1012                          PowerShell's Win32_VideoController
    Radeon Software Version: 24.3.1                          AMD Software's system information (its release)
      Driver version                                  3614.0 (PAL,LC)            clinfo on Windows
    msg="AMD Driver: 50422970"                                ollama: hipDriverGetVersion of the driver's amdhip64
    msg=hipDriverGetVersion version=60342134                  the same, newer ollama
    6.2.41512.0      6.2.41512.0      C:\\WINDOWS\\system32\\amdhip64_6.dll        PowerShell's VersionInfo table
    P4: amdhip64_6.dll / P5: 6.2.41512.0                      a WER report's fault module and its version
    amdhip64_6.dll                                            the DLL's name: its major only

Facts: ``driver_version_windows`` (the WDDM version; else AMD Software's release, else clinfo's PAL build, each
written as what it is) and ``hip_dll_version`` (a file version beats ``hipDriverGetVersion``'s number, which
beats the major the name of a DLL that was loaded implies). Event Viewer's ``Faulting module name: amdhip64_6.dll,
version: ...`` is read by parsers/windows.py; ``finish`` turns its version into the same fact.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles
from triage.parsers.windows import is_hip_release

# AMD's WDDM driver versions have a five-digit third part (31.0.24027.1012, 27.20.22025.1006); NVIDIA's
# (31.0.15.5222) and Intel's (31.0.101.4502) have two or three digits, and audio drivers start with 10.
_WDDM = r"(?P<v>(?:2\d|3\d)\.\d{1,2}\.\d{5}\.\d{3,5})\b"
# Each run of white space is matched one way only: a pattern like \s*[:\t]\s* takes a fifth of a second to fail
# on a line of 4,000 tabs or spaces, as every split of the run is tried.
_DRIVER_VERSION = lazy(r"(?i:\bDriver\s*Version)(?:\s*[:=]\s*|\s+)" + _WDDM)
_AMD_SOFTWARE = lazy(r"\b(?:Radeon Software Version|AMD Software Version|Adrenalin(?: Edition)?(?: Version)?)"
                     r"\s*(?:[:\-]\s*)?(?P<v>2\d\.\d{1,2}\.\d{1,2})\b")
_CLINFO = lazy(r"^\s*Driver version(?:\s*:)?\s+(?P<v>\d{4}\.\d+) \(PAL(?:,[\w.]+)*\)")
_HIP_DRIVER_NUMBER = lazy(r"\bAMD Driver: (?P<n>\d{8})\b|\bhipDriverGetVersion\"? version=(?P<m>\d{8})\b")
_VERSION_TABLE = lazy(r"^\s*(?:\d+\.\d+\.\d+\.\d+\s+)?(?P<v>\d+\.\d+\.\d+\.\d+)\s+(?P<p>\S.*?amdhip64\w*\.dll)\s*$",
                      re.IGNORECASE)
_LABEL_SEP = r"(?:[ \t]*:\s*|[ ]*\t\s*)"  # a colon or a tab between a WER label and its value
_WER_MODULE = lazy(r"^\s*(?:P4|Fault Module Name)" + _LABEL_SEP + r"(?P<m>amdhip64\w*\.dll)\s*$", re.IGNORECASE)
_WER_VERSION = lazy(r"^\s*(?:P5|Fault Module Version)" + _LABEL_SEP + r"(?P<v>\d+\.\d+\.\d+\.\d+)\s*$", re.IGNORECASE)
_DLL_NAME = lazy(r"\bamdhip64_(?P<d>\d+)\.dll\b", re.IGNORECASE)
# A DLL the program looked for and did not get says which HIP it was built for, not which one the driver has.
_NOT_LOADED = lazy(r"not (?:be )?found|unable to load|could not|cannot|can't|failed to load|missing|no such",
                   re.IGNORECASE)
_FILE_VERSION = lazy(r"\d+\.\d+\.\d+\.\d+")
_NEEDLES = Needles(_DRIVER_VERSION, _AMD_SOFTWARE, _CLINFO, _HIP_DRIVER_NUMBER, _VERSION_TABLE, _WER_MODULE, _WER_VERSION,
                   _DLL_NAME)


def hip_driver_version(number: int) -> str:
    """``hipDriverGetVersion``'s number as a version: major * 10,000,000 + minor * 100,000 + patch."""
    return f"{number // 10_000_000}.{number % 10_000_000 // 100_000}.{number % 100_000}"


def parse(artifact: Artifact, case: Case) -> None:
    """Add the driver and HIP DLL versions the artifact's machine lines state."""
    wer_module_at = -10  # the line of the last WER fault-module line naming amdhip64
    for where, text in _NEEDLES.machine_lines(artifact, case):
        quoted = text.strip()

        def fact(name: str, value: str, score: int) -> None:
            case.add_fact(name, value, where, quoted, score)
            case.add_fact("os", "windows", where, quoted, 10)

        if m := _DRIVER_VERSION.search(text):
            fact("driver_version_windows", m["v"], 60)
        elif m := _AMD_SOFTWARE.search(text):
            fact("driver_version_windows", f"AMD Software {m['v']}", 50)
        elif m := _CLINFO.match(text):
            fact("driver_version_windows", f"OpenCL {m['v']} (PAL)", 30)
        if m := _HIP_DRIVER_NUMBER.search(text):
            fact("hip_dll_version", hip_driver_version(int(m["n"] or m["m"])), 60)
        if m := _WER_MODULE.match(text):
            wer_module_at = where.line
        elif (m := _WER_VERSION.match(text)) and 0 < where.line - wer_module_at <= 3:
            fact("hip_dll_version", m["v"], 70)
        if m := _VERSION_TABLE.match(text):
            fact("hip_dll_version", m["v"], 70)
        elif (m := _DLL_NAME.search(text)) and not _NOT_LOADED.search(text):
            fact("hip_dll_version", m["d"], 20)


def finish(case: Case) -> None:
    """Event Viewer's and WER's version of the faulting amdhip64 DLL (parsers/windows.py reads those records); a
    Windows driver version is not the amdgpu kernel driver's, which the environment parser took the same line for."""
    for name, facts in list(case.facts.items()):
        if name.startswith("module_version:amdhip64"):
            for f in facts:
                if is_hip_release(name.split(":", 1)[1], f.value):  # not a driver's own numbering (10.0.3581.0)
                    case.add_fact("hip_dll_version", f.value, f.where, f.text, 80)
    if case.facts.get("driver_version_windows") and "driver" in case.facts:
        # dxdiag and Device Manager list every device's "Driver Version" as a Windows file version (four parts)
        case.facts["driver"] = [f for f in case.facts["driver"] if not _FILE_VERSION.fullmatch(f.value)]
        if not case.facts["driver"]:
            del case.facts["driver"]
