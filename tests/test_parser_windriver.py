"""Windows driver and HIP DLL versions (parsers/windriver.py) as dxdiag, PowerShell, clinfo, ollama, Event Viewer
and WER print them, and where they show in the reports."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from triage.match import load
from triage.model import Artifact
from triage.parsers.windriver import hip_driver_version
from triage.pipeline import analyze
from triage.report import render
from triage.resources import data_dir

FIXTURES = Path(__file__).parent / "fixtures" / "windriver"
FOLDER = data_dir("signatures")
DB = load(FOLDER)


def _analyze(text: str):
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], DB, FOLDER)


def facts(text: str) -> dict:
    return _analyze(text).case.flat_facts()


def test_dxdiag_display_driver_not_the_sound_driver() -> None:
    got = facts((FIXTURES / "dxdiag.txt").read_text())
    assert got["driver_version_windows"] == "31.0.24027.1012"
    assert "driver" not in got  # not the amdgpu (Linux) driver
    assert got["os"] == "windows"


@pytest.mark.parametrize("line,expected", [
    ("DriverVersion : 31.0.24027.1012", "31.0.24027.1012"),  # PowerShell Get-CimInstance Win32_VideoController | fl
    ("Driver Version\t32.0.12033.1030", "32.0.12033.1030"),
    ("Radeon Software Version: 24.3.1", "AMD Software 24.3.1"),
    ("  Driver version                                  3614.0 (PAL,LC)", "OpenCL 3614.0 (PAL)"),
])
def test_driver_version_forms(line: str, expected: str) -> None:
    assert facts(line + "\n")["driver_version_windows"] == expected


@pytest.mark.parametrize("line", [
    "Driver Version: 31.0.15.5222",  # NVIDIA's WDDM version
    "Driver Version: 31.0.101.4502",  # Intel's
    "  Driver version                                  3614.0 (HSA1.1,LC)",  # clinfo on Linux (ROCm)
    "I think my driver version is 31.0.24027.1012 but I'm not sure",  # a user's sentence
])
def test_not_an_amd_windows_driver_version(line: str) -> None:
    assert "driver_version_windows" not in facts(line + "\n")


def test_hip_driver_number_decoded() -> None:
    assert hip_driver_version(50422970) == "5.4.22970"
    assert hip_driver_version(60342134) == "6.3.42134"


@pytest.mark.parametrize("text,expected", [
    ('time=2024-04-02T10:11:12.345+02:00 level=INFO source=amd_windows.go:53 msg="AMD Driver: 50422970"\n', "5.4.22970"),
    ("time=2025-02-11T09:01:02.003+01:00 level=DEBUG source=amd_hip_windows.go:88 msg=hipDriverGetVersion version=60342134\n",
     "6.3.42134"),
    ("Faulting application name: python.exe, version: 3.12.7150.1013, time stamp: 0x66fbe8b5\n"
     "Faulting module name: amdhip64_6.dll, version: 6.2.41512.0, time stamp: 0x6706ff6d\n"
     "Exception code: 0xc0000005\n", "6.2.41512.0"),
    ("Event Name: APPCRASH\nP1: ollama_llama_server.exe\nP4: amdhip64_6.dll\nP5: 6.1.40252.0\nP7: c0000005\n", "6.1.40252.0"),
    ("ProductVersion   FileVersion      FileName\n--------------   -----------      --------\n"
     "6.2.41512.0      6.2.41512.0      C:\\WINDOWS\\system32\\amdhip64_6.dll\n", "6.2.41512.0"),
    ("0x00007FFEF984A7FE, C:\\WINDOWS\\SYSTEM32\\amdhip64_7.dll(0x00007FFEF9010000) + 0x83A7FE, hipModuleLoad() + 0x33\n", "7"),
])
def test_hip_dll_version(text: str, expected: str) -> None:
    assert facts(text)["hip_dll_version"] == expected


def test_a_version_table_line_is_a_needle_line() -> None:
    """Hyperscan gives the parser only the lines a needle matches (a small input's literal prefilter gives more):
    an unsuffixed amdhip64.dll (HIP SDK 5.x) in PowerShell's VersionInfo table must be one of them."""
    from triage.parsers import windriver

    needles = [windriver._NEEDLES._pass.patterns[slot] for slot in windriver._NEEDLES.slots]
    line = "5.5.32000.0      5.5.32000.0      C:\\Program Files\\AMD\\ROCm\\5.5\\bin\\amdhip64.dll"
    assert any(re.search(needle, line) for needle in needles)
    assert facts(line + "\n")["hip_dll_version"] == "5.5.32000.0"


def test_a_dll_that_did_not_load_says_nothing_of_the_installed_one() -> None:
    text = 'level=DEBUG source=amd_windows.go:33 msg="unable to load amdhip64_6.dll, please make sure to upgrade to the latest amd driver"\n'
    assert "hip_dll_version" not in facts(text)


def test_versions_in_the_reports() -> None:
    text = (FIXTURES / "dxdiag.txt").read_text() + "P4: amdhip64_6.dll\nP5: 6.2.41512.0\n"
    result = _analyze(text)
    html = render(result, "html")
    assert "driver version windows" in html and "31.0.24027.1012" in html
    assert "hip dll version" in html and "6.2.41512.0" in html
    md = render(result, "md")
    assert "Windows driver `31.0.24027.1012`" in md and "amdhip64 DLL `6.2.41512.0`" in md
    text_summary = render(result, "text")
    assert "Windows driver 31.0.24027.1012" in text_summary
