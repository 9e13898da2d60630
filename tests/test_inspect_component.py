"""The component check: which ROCm libraries a folder ships and whether what a bundled HIP needs is there."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.inspect.component import Folder, check, library
from triage.inspect.folder import walk

SEED_000 = next(CORPUS.glob("seed-000-*"))
DEBIAN_BITCODE = Path("/usr/lib/x86_64-linux-gnu/amdgcn/bitcode")  # Debian's rocm-device-libs


def _tree(root: Path, names: list[str]) -> Path:
    for name in names:
        path = root / name
        if name.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(b"")
    return root


@pytest.mark.parametrize("name, kind, version", [
    ("libamdhip64.so.7", "HIP", "7"),
    ("libamdhip64.so.6.2.41133", "HIP", "6.2.41133"),
    ("amdhip64_6.dll", "HIP", "6"),
    ("libamd_comgr.so.3", "COMGR", "3"),
    ("libhsa-runtime64.so.1.14.0", "HSA runtime", "1.14.0"),
    ("libLLVM.so.22.0git", "LLVM", "22.0git"),
    ("libLLVM-15.so", "LLVM", "15"),
    ("rocblas/", None, None),
    ("strata", None, None),
])
def test_library_names(name: str, kind: str | None, version: str | None) -> None:
    lib = library(name)
    assert (lib.kind, lib.version) == (kind, version) if kind else lib is None


def test_seed_000_folder_is_bundled_hip_without_device_libraries() -> None:
    done = subprocess.run([sys.executable, "-m", "triage", "inspect", str(SEED_000), "-f", "json"],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    component = json.loads(done.stdout)["component"]
    assert component["summary"] == "bundled HIP 7.2 without device libraries"
    assert component["device_libs"] == "missing"
    assert {lib["kind"] for lib in component["libraries"]} >= {"HIP", "COMGR", "HSA runtime", "LLVM", "rocBLAS"}
    assert component["math_libraries"]["rocBLAS"] == "rocblas/ listed, its contents not"


def test_seed_000_triage_report_carries_the_check() -> None:
    from triage.pipeline import triage
    from triage.report import build

    report = build(triage([str(SEED_000)]))
    assert report["facts"]["component_check"] == "bundled HIP 7.2 without device libraries"
    assert report["facts"]["device_libs_bundled"] == "missing"
    assert report["findings"][0]["summary"] == "component-ls.txt: bundled HIP 7.2 without device libraries"
    top = report["diagnoses"][0]
    assert any(e["condition"] == "bundled-runtime-without-bitcode" for e in top["evidence"])


def test_real_folder_with_manifest(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["libamdhip64.so.6.2.41133", "libamd_comgr.so.2", "libhsa-runtime64.so.1", "engine",
                            "amdgcn/bitcode/ockl.bc", "amdgcn/bitcode/ocml.bc", "amdgcn/bitcode/oclc_isa_version_1100.bc",
                            "rocblas/library/TensileLibrary_lazy_gfx1100.dat", "extra.txt"])
    (root / "engine-component.json").write_text(json.dumps(
        {"schema": 2, "versions": {"hip": "6.2.41133"},
         "files": [{"path": "libamdhip64.so.6.2.41133"}, {"path": "libamd_comgr.so.2"}, {"path": "libhsa-runtime64.so.1"},
                   {"path": "engine"}, {"path": "libhipblaslt.so.0"}, {"path": "amdgcn/bitcode/ockl.bc"}]}))
    result = check(walk(root), "gfx1100")
    assert result.summary == "bundled HIP 6.2 with device libraries"
    assert result.manifest_missing == ["libhipblaslt.so.0"]
    assert "extra.txt" in result.not_in_manifest and "engine-component.json" not in result.not_in_manifest
    assert result.math == {"rocBLAS": "has library files for gfx1100"}
    other = check(walk(root), "gfx1201")
    assert other.device_libs_note == "lacks oclc_isa_version_1201.bc"
    assert other.math == {"rocBLAS": "no library files for gfx1201 (has gfx1100)"}


def test_real_folder_without_bitcode(tmp_path: Path) -> None:
    root = _tree(tmp_path, ["libamdhip64.so.7", "libamd_comgr.so.3", "hipblaslt/library/x_gfx1201.co"])
    result = check(walk(root), "gfx1201")
    assert (result.device_libs, result.summary) == ("missing", "bundled HIP 7 without device libraries")


@pytest.mark.skipif(not DEBIAN_BITCODE.is_dir(), reason="Debian's rocm-device-libs not installed")
def test_debian_device_library_names(tmp_path: Path) -> None:
    """Real file names from Debian's rocm-device-libs: gfx906 has its ISA file, gfx1201 has none."""
    names = ["libamdhip64.so.5"] + [f"amdgcn/bitcode/{p.name}" for p in DEBIAN_BITCODE.iterdir()]
    root = _tree(tmp_path, names)
    assert check(walk(root), "gfx906").summary == "bundled HIP 5 with device libraries"
    assert check(walk(root), "gfx1201").device_libs_note == "lacks oclc_isa_version_1201.bc"


def test_cut_listing_judges_only_what_it_shows() -> None:
    """``ls`` sorts by name: a listing cut with ``...`` after libamdhip64 would have shown amdgcn/."""
    cut = Folder(names=["BUILD.json", "libamdhip64.so.7", "strata"], complete=False, cut=True)
    assert cut.visible("amdgcn/") and not cut.visible("zz")
    assert check(cut).device_libs == "missing"
    listed = Folder(names=["libamdhip64.so.7", "amdgcn/"], complete=False)
    assert (check(listed).device_libs, check(listed).device_libs_note) == ("unknown", "amdgcn/ listed, its contents not")


def test_manifest_alone(tmp_path: Path) -> None:
    """Only engine-component.json was sent: its file list stands for the folder."""
    (tmp_path / "engine-component.json").write_text(json.dumps(
        {"versions": {"hip": "7.2.53210"}, "files": [{"path": "libamdhip64.so.7"}, {"path": "libamd_comgr.so.3"}]}))
    from triage.pipeline import triage
    from triage.report import build

    report = build(triage([str(tmp_path)]))
    assert report["facts"]["component_check"] == "bundled HIP 7.2 without device libraries"
    assert report["findings"][0]["artifact"] == "engine-component.json"
