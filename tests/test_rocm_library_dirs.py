"""The folders and installs a process loaded its ROCm libraries from (triage/derive/libraries.py's
``rocm_library_dir(s)`` and ``rocm_library_root(s)``), read from the listings of triage/parsers/libloads.py.

The fixtures under tests/fixtures/libloads/ are the real output of ldd, LD_DEBUG=libs, /proc/PID/maps, lsof and gdb's
``info sharedlibrary`` for one process (tools/make_libload_fixtures.sh builds and runs it): librocblas.so.4 and
libhsa-runtime64.so.1 from an /opt/rocm-6.2.0/lib folder, libamdhip64.so from a PyTorch wheel's torch/lib."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.derive.libraries import root_of
from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)
FIXTURES = Path(__file__).parent / "fixtures" / "libloads"
WHEEL = "/home/u/venv/lib/python3.12/site-packages/torch"


def case_of(text: str):
    return analyze([Artifact(name="log.txt", text=text, size=len(text))], DB, FOLDER).case


def values(case, name: str) -> list[str]:
    return [f.value for f in case.facts.get(name, [])]


@pytest.mark.parametrize("name", ["ldd.txt", "ld-debug-libs.txt", "proc-maps.txt", "lsof.txt", "gdb-sharedlibrary.txt"])
def test_each_listing_shows_two_installs(name: str) -> None:
    case = case_of((FIXTURES / name).read_text())
    assert sorted(values(case, "rocm_library_dir")) == sorted(["/opt/rocm-6.2.0/lib", f"{WHEEL}/lib"])
    assert sorted(values(case, "rocm_library_root")) == sorted(["/opt/rocm-6.2.0", WHEEL])
    assert case.flat_facts()["rocm_library_roots"] == "2"
    loaded = {Path(v).name for v in values(case, "rocm_library_loaded")}
    assert loaded == {"librocblas.so.4", "libhsa-runtime64.so.1", "libamdhip64.so"}


def test_the_loaders_search_is_no_load() -> None:
    lines = [line for line in (FIXTURES / "ld-debug-libs.txt").read_text().splitlines() if "trying file=" in line]
    assert lines
    case = case_of("\n".join(lines) + "\n")
    assert "rocm_library_dir" not in case.facts


def test_one_install_only() -> None:
    text = "\n".join(line for line in (FIXTURES / "ldd.txt").read_text().splitlines() if "torch/lib" not in line)
    case = case_of(text + "\n")
    assert values(case, "rocm_library_root") == ["/opt/rocm-6.2.0"]
    assert case.flat_facts()["rocm_library_roots"] == "1"


def test_the_opt_rocm_link_counts_with_its_one_target() -> None:
    text = (FIXTURES / "ldd.txt").read_text().replace(f"{WHEEL}/lib/libamdhip64.so", "/opt/rocm/lib/libamdhip64.so")
    case = case_of(text)
    assert case.flat_facts()["rocm_library_roots"] == "1"
    assert case.flat_facts()["rocm_library_dirs"] == "1"


def test_two_releases_under_opt_are_two_installs() -> None:
    text = (FIXTURES / "ldd.txt").read_text().replace(f"{WHEEL}/lib/libamdhip64.so", "/opt/rocm-6.4.1/lib/libamdhip64.so")
    case = case_of(text)
    assert sorted(values(case, "rocm_library_root")) == ["/opt/rocm-6.2.0", "/opt/rocm-6.4.1"]


def test_a_frames_path_is_a_load_and_a_bare_name_is_none() -> None:
    text = ("#0  0x00007ffff7fbc10d in rocblas_create_handle () from /opt/rocm-6.2.0/lib/librocblas.so.4\n"
            f"#1  0x00007ffff7dcb0f1 in hipInit () from {WHEEL}/lib/libamdhip64.so\n"
            "#2  0x0000555555555189 in main ()\n")
    assert case_of(text).flat_facts()["rocm_library_roots"] == "2"
    bare = case_of("#0  0x00007ffff7fbc10d in rocblas_create_handle () from librocblas.so.4\n")
    assert "rocm_library_dir" not in bare.facts


def test_other_libraries_are_not_rocm_ones() -> None:
    text = "\n".join(line for line in (FIXTURES / "proc-maps.txt").read_text().splitlines()
                     if "rocm" not in line and "torch" not in line)
    assert "rocm_library_dir" not in case_of(text + "\n").facts


@pytest.mark.parametrize("folder, root", [
    ("/opt/rocm-6.2.0/lib", "/opt/rocm-6.2.0"),
    ("/opt/rocm/lib/llvm/lib", "/opt/rocm"),
    ("/usr/lib/x86_64-linux-gnu", "/usr"),
    ("/usr/lib64", "/usr"),
    ("/usr/lib/ollama/rocm", "/usr/lib/ollama/rocm"),
    ("/home/u/venv/lib/python3.12/site-packages/_rocm_sdk_core/lib", "/home/u/venv/lib/python3.12/site-packages/_rocm_sdk"),
    ("/home/u/venv/lib/python3.12/site-packages/_rocm_sdk_libraries_gfx110X_dgpu/lib",
     "/home/u/venv/lib/python3.12/site-packages/_rocm_sdk"),
    (r"C:\Program Files\AMD\ROCm\6.1\bin", "c:/program files/amd/rocm/6.1"),
    (r"C:\Users\u\venv\Lib\site-packages\torch\lib", "c:/users/u/venv/lib/site-packages/torch"),
    (r"C:\Windows\System32", "c:/windows/system32"),
])
def test_install_roots(folder: str, root: str) -> None:
    assert root_of(folder) == root


def test_windows_module_loads() -> None:
    text = ("ModLoad: 00007ffb`1a2b0000 00007ffb`1c3d4000   C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\rocblas.dll\n"
            "ModLoad: 00007ffb`2a2b0000 00007ffb`2c3d4000   C:\\Users\\u\\venv\\Lib\\site-packages\\torch\\lib\\amdhip64_6.dll\n")
    case = case_of(text)
    assert case.flat_facts()["rocm_library_roots"] == "2"
