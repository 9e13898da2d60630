"""systemd-coredump's module list: the ROCm release each loaded ROCm library's package note names (Fedora's and
RHEL's ``from rpm ...``), the package, coredumpctl's ``Package:`` of the program, and modules' build-ids."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import derived_case
from tests.test_ingest_escaped import RSYSLOG
from triage.parsers.versions import package_release
from triage.pipeline import triage

HERE = Path(__file__).resolve().parent
# `coredumpctl info` of rocm-clinfo on Fedora 40 (ROCm 6.2.0 from Fedora's packages), as a public repository keeps it.
FEDORA = HERE / "fixtures" / "coredump" / "fedora40-rocm-clinfo-segv.txt"


def _facts(text: str) -> dict[str, list[tuple[str, int]]]:
    case = derived_case(text, "paste.txt")
    return {name: [(f.value, f.where.line) for f in facts] for name, facts in case.facts.items()}


def test_fedora_module_packages_give_the_rocm_release_of_each_rocm_library() -> None:
    facts = _facts(FEDORA.read_text(encoding="utf-8"))
    assert facts["rocm_library_package"] == [("hsakmt-1.0.6-41.rocm6.2.0.fc40.x86_64", 22),
                                             ("rocm-runtime-6.2.0-2.fc40.x86_64", 24),
                                             ("rocm-compilersupport-18-2.rocm6.2.0.fc40.x86_64", 25)]
    # the program's package (coredumpctl's Package: line) and the three libraries; mesa, libdrm and the rest are
    # no ROCm libraries, and the program's own module line names a program, not a library
    assert facts["rocm_version_package"] == [("6.2.0", 18), ("6.2.0", 22), ("6.2.0", 24), ("6.2.0", 25)]
    assert facts["rocm_version"] == [("6.2", 18)]
    assert facts["rocm_versions"] == [("6.2", 18)]


@pytest.mark.parametrize(("package", "release"), [
    ("rocm-runtime-6.2.0-2.fc40.x86_64", "6.2.0"),  # ROCm's own number
    ("hsakmt-1.0.6-41.rocm6.2.0.fc40.x86_64", "6.2.0"),  # a component's number, the release in its rpm release
    ("rocm-compilersupport-18-2.rocm6.2.0.fc40.x86_64", "6.2.0"),  # LLVM's number, the same
    ("rocclr/6.2.0-1.fc40", "6.2.0"),  # coredumpctl's Package: line
    ("spirv-llvm-translator-18.1.2-1.fc40.x86_64", None),  # an LLVM-numbered package names no ROCm release
    ("zlib-ng-2.1.7-1.fc40.x86_64", "2.1.7"),  # a version is read; which packages are ROCm's the caller decides
])
def test_a_package_reference_names_its_rocm_release(package: str, release: str | None) -> None:
    assert package_release(package) == release


@pytest.mark.parametrize(("line", "module", "build_id"), [
    # systemd before 249 (fwupd/fwupd#7210's journal)
    ("            Found module libgcc_s.so.1 with build-id: e3a44e0da9c6e835d293ed8fd2882b4c4a87130c",
     "libgcc_s.so.1", "e3a44e0da9c6e835d293ed8fd2882b4c4a87130c"),
    # a module by its path (a PyInstaller bundle's, khoj-ai/khoj#455 with rsyslog's #012 undone)
    ("Found module /tmp/_MEI6CwCPv/libxshmfence.so.1 with build-id: 2f059343453436272930d81557a2f5d7db5fb4cb",
     "libxshmfence.so.1", "2f059343453436272930d81557a2f5d7db5fb4cb"),
])
def test_a_module_build_id_is_kept_by_the_module_file_name(line: str, module: str, build_id: str) -> None:
    assert _facts(line + "\n")[f"build_id:{module}"] == [(build_id, 1)]


def test_a_module_without_build_id_or_package_gives_nothing() -> None:
    # dustinlyons/nixos-config#24's journal: modules with no note at all
    facts = _facts("                                              Module libdrm_amdgpu.so.1 without build-id.\n"
                   "                                              Module libzstd.so.1 without build-id.\n")
    assert not [name for name in facts if name.startswith(("build_id:", "rocm_"))]


def test_a_module_list_rsyslog_wrote_on_one_line_gives_its_build_ids(tmp_path: Path) -> None:
    # systemd-coredump's journal message in a log file, #012 for each newline (khoj-ai/khoj#455): the reader opens it
    path = tmp_path / "messages"
    path.write_text(RSYSLOG + "\n", encoding="utf-8")
    case = triage([str(path)]).case
    assert case.fact("build_id:libxshmfence.so.1").value == "2f059343453436272930d81557a2f5d7db5fb4cb"
    assert case.fact("build_id:libk5crypto.so.3").value == "f77b9cc59d0814c9cc6e47c83c9995a102702d8b"
