"""The support tables against AMD's published lists, release by release (signatures/tables/rocm-support.yaml and
the files beside it name their sources): lookups by major.minor, the newest row at or below a release, Linux and
the Windows HIP SDK apart, and the facts a case derives from them (arch_supported, arch_known)."""

from __future__ import annotations

import pytest

from tests.conftest import derived_case
from triage.derive.tables import Tables, load_tables


@pytest.fixture(scope="module")
def tables() -> Tables:
    return load_tables()


# (arch, release, os, expected, the published row it comes from)
ROWS = [
    # ROCm 6.0.0-6.3.1 compatibility matrix: gfx1100, gfx1030, gfx942, gfx90a, gfx908 (+ gfx906 deprecated)
    ("gfx942", (6, 0, 2), "linux", True, "compatibility matrix 6.0.2: MI300X/MI300A gfx942"),
    ("gfx906", (6, 2, 4), "linux", True, "6.2 system requirements: MI50 / Radeon VII deprecated, still listed"),
    ("gfx1101", (6, 2, 0), "linux", True, "rocBLAS's default targets carry gfx1101 before the pages list it"),
    ("gfx1101", (5, 7, 1), "linux", True, "rocBLAS's default targets carry gfx1101 before the pages list it"),
    ("gfx1101", (6, 4, 1), "linux", True, "6.4.x Linux: W7700, RX 7800 XT (gfx1101)"),
    ("gfx906", (6, 4, 0), "linux", False, "6.4.x Linux: MI50 and Radeon VII unsupported"),
    ("gfx1201", (6, 4, 1), "linux", True, "6.4.x Linux: RX 9070 XT / AI PRO R9700 (gfx1201)"),
    ("gfx1200", (6, 4, 2), "linux", True, "6.4.x Linux: RX 9060 XT (gfx1200)"),
    ("gfx950", (6, 4, 3), "linux", False, "6.4.x Linux lists no MI350"),
    ("gfx950", (7, 0, 1), "linux", True, "7.0.x Linux: MI355X / MI350X (gfx950)"),
    ("gfx1031", (6, 4, 0), "linux", False, "no Linux release lists Navi 22 (RX 6700 XT)"),
    ("gfx1032", (7, 0, 0), "linux", False, "no Linux release lists Navi 23 (RX 6600)"),
    ("gfx1103", (7, 0, 2), "linux", False, "no Linux release lists the Phoenix iGPU (780M)"),
    ("gfx1151", (7, 0, 0), "linux", True, "7.0 row: Strix Halo (Ryzen AI Max 300 on Radeon/Ryzen pages)"),
    ("gfx1151", (6, 2, 0), "linux", False, "6.2 Linux lists no Ryzen APU"),
    ("gfx1201", (7, 1, 1), "linux", True, "7.1 not listed: the 7.0 row applies"),
    # Windows, the HIP SDK column
    ("gfx1102", (5, 7, 1), "windows", True, "5.7.1 Windows: RX 7600 (gfx1102), HIP SDK"),
    ("gfx906", (5, 7, 1), "windows", False, "5.7.1 Windows: Radeon PRO VII not supported"),
    ("gfx1101", (6, 0, 2), "windows", True, "6.0.2 Windows: W7700, RX 7800 XT, RX 7700 XT"),
    ("gfx1031", (6, 2, 4), "windows", False, "6.2.4 Windows: RX 6700 XT runtime only, no HIP SDK"),
    ("gfx1151", (6, 2, 4), "windows", False, "6.2.4 Windows lists GPUs only, no APU"),
    ("gfx1151", (6, 4, 2), "windows", True, "6.4.2 Windows: GPUs/APUs, Ryzen AI Max"),
    ("gfx1201", (6, 4, 2), "windows", True, "6.4.2 Windows: RX 9070 XT"),
    ("gfx1030", (6, 4, 2), "windows", True, "6.4.2 Windows: W6800, RX 6800 XT"),
    ("gfx1201", (7, 2, 1), "windows", True, "7.2 Windows: RX 9070 XT, AI PRO R9700"),
]


@pytest.mark.parametrize("arch, release, os_name, expected, row", ROWS, ids=[f"{r[0]}-{r[2]}-{r[1]}" for r in ROWS])
def test_published_rows(tables: Tables, arch: str, release: tuple[int, ...], os_name: str, expected: bool,
                        row: str) -> None:
    assert tables.supports(arch, release, os_name) is expected, row


def test_a_release_older_than_every_row_has_no_answer(tables: Tables) -> None:
    # the tables begin with ROCm 5.0 on Linux and the HIP SDK 5.5 on Windows
    assert tables.supports("gfx1030", (4, 5), "linux") is None
    assert tables.supports("gfx1030", (5, 4), "windows") is None


def test_known_since(tables: Tables) -> None:
    # RDNA4 and Strix processors are unknown to a runtime older than the release that added them
    assert tables.knows("gfx1201", (6, 1, 3)) is False
    assert tables.knows("gfx1201", (6, 4, 1)) is True
    assert tables.knows("gfx1151", (6, 0, 2)) is False
    # a processor older than every release is always known
    assert tables.knows("gfx1030", (5, 0)) is True


def test_case_facts_rx7800xt_on_rocm62_is_supported() -> None:
    case = derived_case("ROCm version: 6.2.0\nGPU: AMD Radeon RX 7800 XT\nRuntimeError: HIP error: invalid device function\n")
    assert case.value("gfx_arch_real") == "gfx1101"
    assert case.value("arch_supported") == "yes"
    assert case.value("arch_known") == "yes"


def test_case_facts_rx9070xt_on_rocm64_is_supported() -> None:
    case = derived_case("ROCm version: 6.4.1\nGPU: AMD Radeon RX 9070 XT\nRuntimeError: No HIP GPUs are available\n")
    assert case.value("gfx_arch_real") == "gfx1201"
    assert case.value("arch_supported") == "yes"


def test_case_facts_strix_halo_on_linux_70() -> None:
    case = derived_case("ROCm version: 7.0.1\nGPU: AMD Radeon 8060S\nMemory access fault by GPU node-1\n")
    assert case.value("gfx_arch_real") == "gfx1151"
    assert case.value("arch_supported") == "yes"


def test_product_names_and_pci_ids(tables: Tables) -> None:
    assert tables.arch_of_product("AMD Radeon AI PRO R9700") == "gfx1201"
    assert tables.arch_of_product("AMD Radeon RX 9060 XT") == "gfx1200"
    assert tables.arch_of_product("AMD Instinct MI355X") == "gfx950"
    assert tables.arch_of_product("AMD Radeon(TM) 890M Graphics") == "gfx1150"
    assert tables.arch_of_product("AMD Radeon 860M") == "gfx1152"
    assert tables.arch_of_pci_id("7550") == "gfx1201"
    assert tables.arch_of_pci_id("1586") == "gfx1151"
    assert tables.arch_of_pci_id("150E") == "gfx1150"
