"""How many folders a process loaded the HIP runtime from (triage/derive/runtimes.py's ``hip_runtime_dir`` and
``hip_runtime_dirs``), with the load shown by lsof and glibc's LD_DEBUG (triage/parsers/ldd.py).

The line formats are real: lsof's memory-mapped rows ("COMMAND PID USER mem REG DEVICE SIZE NODE NAME", as pasted
in public threads about a process's open files) and LD_DEBUG=libs's "PID:<tab>calling init: PATH" (as a ROCm
report quotes it for librccl from /opt/rocm-7.0.0/lib); the folders are a PyTorch wheel's torch/lib and /opt/rocm."""

from __future__ import annotations

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)
WHEEL = "/home/u/venv/lib/python3.12/site-packages/torch/lib"


def case_of(text: str):
    return analyze([Artifact(name="log.txt", text=text, size=len(text))], DB, FOLDER).case


LSOF_TWO = (
    "COMMAND   PID USER   FD   TYPE DEVICE SIZE/OFF    NODE NAME\n"
    "python3 40213 u    mem    REG  259,2  6543210 1234567 /opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200\n"
    f"python3 40213 u    mem    REG  259,2  6598112 7654321 {WHEEL}/libamdhip64.so\n"
)
LD_DEBUG_TWO = (
    f"     40213:\tcalling init: {WHEEL}/libamdhip64.so\n"
    "     40213:\tcalling init: /opt/rocm/lib/libamdhip64.so.6\n"
)


@pytest.mark.parametrize("text, folders", [
    (LSOF_TWO, ["/opt/rocm-6.2.0/lib", WHEEL]),
    (LD_DEBUG_TWO, [WHEEL, "/opt/rocm/lib"]),
    # a file deleted since it was mapped (an upgrade under a running process) is still loaded
    ("ollama  1777 ollama  DEL    REG  8,2      1048602 /opt/rocm/lib/libamdhip64.so.6.1.60102\n", ["/opt/rocm/lib"]),
    # dlopen by path, LD_DEBUG=files
    (("     40213:\tfile=/opt/rocm/lib/libamdhip64.so.6 [0];  dynamically loaded by "
     "/usr/lib/x86_64-linux-gnu/libc.so.6 [0]\n"), ["/opt/rocm/lib"]),
    # the loader's search is no load
    ("     40213:\t  trying file=/opt/rocm/lib/libamdhip64.so.6\n", []),
    # lsof's other rows (a device file, another library) name no runtime
    (("python3 40213 u    mem    REG  259,2  2216304 1313 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
     "python3 40213 u    9u     CHR  226,128     0t0  666 /dev/dri/renderD128\n"), []),
])
def test_loaded_runtime_folders(text: str, folders: list[str]) -> None:
    case = case_of(text)
    assert [f.value for f in case.facts.get("hip_runtime_dir", [])] == folders
    assert case.flat_facts().get("hip_runtime_dirs") == (str(len(folders)) if folders else None)


def test_one_install_under_two_names_is_one_folder() -> None:
    text = LD_DEBUG_TWO.replace(f"{WHEEL}/libamdhip64.so", "/opt/rocm-6.2.0/lib64/libamdhip64.so.6")
    assert case_of(text).flat_facts()["hip_runtime_dirs"] == "1"


def test_two_copies_and_a_crash_name_the_runtime_mix() -> None:
    """The runtime-mismatch signature tests hip_runtime_dir with count_at_least: 2."""
    text = LD_DEBUG_TWO + "Segmentation fault (core dumped)\n"
    result = analyze([Artifact(name="log.txt", text=text, size=len(text))], DB, FOLDER)
    mix = next(d for d in result.diagnoses if d.id == "rocm-two-releases-in-one-process")
    assert mix.captures["hip_runtime_dir"] == f"{WHEEL}, /opt/rocm/lib"
    assert result.top.klass == "runtime-mismatch"
