"""Facts from indirect evidence (triage/derive/gpu.py, versions.py; parsers/vendor.py, versions.py): the GPU's
architecture from PCI ids, codenames and the library files the runtime wanted; TheRock's and AMD's date-stamped
wheels; whether AMD lists the running kernel for the ROCm release. Lines as programs printed them in public
threads and files (cited beside each)."""

from __future__ import annotations

import pytest

from tests.test_derive import FOLDER, facts
from triage.derive.tables import TableError, load_tables

# --- the GPU's architecture from indirect evidence ----------------------------------------------------------

# rocminfo's agent block (a public rocminfo dump of an RX 6800 XT); the Name line left out.
ROCMINFO_CHIP = """\
  Device Type:             GPU
  Cache Info:
    L1:                      16(0x10) KB
  Chip ID:                 29631(0x73bf)
  Cacheline Size:          64(0x40)
  Compute Unit:            72
"""
# A French Windows event naming the card by its device instance (PCI\\VEN_1002&DEV_73DF: Navi 22).
WINDOWS_DEVICE = ("L'appareil PCI\\VEN_1002&DEV_73DF&SUBSYS_0E361002&REV_C1\\6&174d5041&0&00000019 a eu un problème "
                  "de démarrage.\n")
# lspci without -nn prints "Device 67df" for an id its name list lacks (ROCm/legacy-rocm-build#283, an RX 580).
LSPCI_UNNAMED = "01:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Device 67df (rev c7)\n"
# A card's PCIe switch is named for another chip than its GPU (lspci -nn of an RX 7900 machine).
LSPCI_SWITCH = ("IOMMU Group 14 01:00.0 PCI bridge [0604]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 10 XL Upstream Port "
                "of PCI Express Switch [1002:1478] (rev 10)\n")
LSPCI_NAVI31 = ("IOMMU Group 16 03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 "
                "[Radeon RX 7900 XT/7900 XTX/7900 GRE/7900M] [1002:744c] (rev cc)\n"
                "IOMMU Group 17 03:00.1 Audio device [0403]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 HDMI/DP Audio "
                "[1002:ab30]\n")
# Two GPUs, a card and a Raphael iGPU, by rocminfo's agent ids only: no single answer.
TWO_CHIPS = "  Chip ID:                 29631(0x73bf)\n  Chip ID:                 5710(0x164e)\n"


@pytest.mark.parametrize(("text", "pci_id", "arch"), [
    (ROCMINFO_CHIP, "73bf", "gfx1030"),
    (WINDOWS_DEVICE, "73df:c1", "gfx1031"),
    (LSPCI_UNNAMED, "67df:c7", "gfx803"),
])
def test_a_pci_device_id_gives_the_real_arch(text: str, pci_id: str, arch: str) -> None:
    got = facts(text)
    assert (got["gpu_pci_id"], got["gfx_arch_real"]) == (pci_id, arch)


def test_one_id_two_processors_by_revision() -> None:
    """0x73ff is Navi 23 (gfx1032) except revision df, an RX 6750 GRE 10GB on Navi 22 (device_info's table)."""
    tables = load_tables(FOLDER)
    assert tables.arch_of_pci_id("73FF", "DF") == "gfx1031"
    assert tables.arch_of_pci_id("73ff", "c1") == "gfx1032"
    assert tables.arch_of_pci_id("73ff") == "gfx1032"
    assert tables.arch_of_pci_id("ab30") is None  # a card's HDMI audio function


def test_two_gpus_by_id_give_no_arch() -> None:
    assert "gfx_arch_real" not in facts(TWO_CHIPS)


def test_a_cards_pcie_switch_is_not_its_gpu() -> None:
    """lspci names the switch of a Navi 31 card "Navi 10 XL": neither its id nor its codename is the GPU."""
    got = facts(LSPCI_SWITCH + LSPCI_NAVI31)
    assert got["gfx_arch_real"] == "gfx1100"
    assert "gfx_arch_real" not in facts(LSPCI_SWITCH)


def test_rocminfos_cpu_agents_are_not_the_gpu() -> None:
    """rocminfo names the CPU agents with the same Marketing Name field; an APU's CPU name even says Radeon."""
    cpu = "  Marketing Name:          AMD Ryzen 7 7840HS w/ Radeon 780M Graphics\n"
    gpu = "  Marketing Name:          AMD Radeon 780M\n"
    assert "gpu_device" not in facts("  Marketing Name:          AMD Ryzen 9 7950X 16-Core Processor\n")
    assert "gpu_device" not in facts(cpu)
    assert facts(cpu + gpu)["gpu_device"] == "AMD Radeon 780M"


@pytest.mark.parametrize(("name", "arch"), [
    ("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]", "gfx1030"),
    ("Navi21", "gfx1030"),
    ("Ellesmere [Radeon RX 470/480/570/570X/580/580X/590]", "gfx803"),
    ("Vega 10 XT [Radeon RX Vega 64]", "gfx900"),
    ("AMD Radeon(TM) Vega 10 Graphics", None),  # a Raven APU with 10 CUs, not the Vega 10 chip
    ("Navi 3", None),
])
def test_a_codename_starts_a_device_name(name: str, arch: str | None) -> None:
    assert load_tables(FOLDER).arch_of_codename(name) == arch


def test_a_codename_on_an_lspci_line_gives_the_arch() -> None:
    # lspci's name of an RX 570 in ROCm/legacy-rocm-build#415, with its product list cut off
    got = facts("05:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Ellesmere (rev ef)\n")
    assert (got["gpu_device"], got["gfx_arch_real"]) == ("Ellesmere", "gfx803")


# MIOpen names its databases for the device (arch and CU count), rocBLAS / hipBLASLt their Tensile libraries.
@pytest.mark.parametrize(("line", "arch"), [
    # the perf database of the GPU in use (ROCm/tensorflow-upstream#1216, an RX 580)
    ("MIOpen(HIP): Warning [ParseAndLoadDb] File is unreadable: /opt/rocm-4.0.0/miopen/share/miopen/db/gfx803_32.HIP.fdb.txt",
     "gfx803"),
    ('MIOpen(HIP): Warning [ParseAndLoadDb] File is unreadable: ".../gfx1151_20.HIP.fdb.txt"', "gfx1151"),
    ("MIOpen(HIP): Warning [SQLiteBase] Unable to read system database file:gfx900_56.kdb Performance may degrade",
     "gfx900"),
    # the CU count in hex without the underscore (gfx90a, 110 CUs)
    ("MIOpen(HIP): Warning [ParseAndLoadDb] File is unreadable: /opt/rocm/share/miopen/db/gfx90a6e.HIP.fdb.txt", "gfx90a"),
    # hipBLASLt on Windows (ROCm/TheRock#754, an RX 7800 XT)
    ('rocblaslt error: Cannot read "TensileLibrary_lazy_gfx1101.dat": No error', "gfx1101"),
    ("hipModuleLoad failed: Kernels.so-000-gfx906.hsaco", "gfx906"),
])
def test_a_library_file_the_runtime_wanted_gives_the_arch(line: str, arch: str) -> None:
    got = facts(line + "\n")
    assert (got["gfx_arch_file"], got["gfx_arch_real"]) == (arch, arch)


def test_a_listing_of_library_files_is_no_arch() -> None:
    # LM Studio's debug listing of its bundled rocBLAS on a gfx1151 machine (lmstudio-ai/lmstudio-bug-tracker#1269)
    line = ('[2026-01-08 20:56:32][DEBUG] "/home/sam/.lmstudio/extensions/backends/vendor/linux-llama-rocm-vendor-v3/'
            'rocblas/library/TensileLibrary_lazy_gfx1100.dat"\n')
    assert "gfx_arch_file" not in facts(line)
    # every file a library could not load, of several architectures: which one is the GPU's is unknown
    many = ("rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat: No such file\n"
            "rocBLAS error: Cannot read /opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat: No such file\n")
    assert "gfx_arch_real" not in facts(many)


def test_an_override_makes_the_runtime_look_for_the_overrides_files() -> None:
    got = facts("HSA_OVERRIDE_GFX_VERSION=10.3.0\n"
                'rocblaslt error: Cannot read "TensileLibrary_lazy_gfx1030.dat": No such file or directory\n')
    assert got["override_arch"] == "gfx1030" and "gfx_arch_real" not in got


def test_better_evidence_outranks_the_indirect() -> None:
    # the runtime's own gfx name beside a PCI id of another GPU (the iGPU of the same machine)
    got = facts("  Name:                    gfx1100\n" + TWO_CHIPS.splitlines()[1] + "\n")
    assert got["gfx_arch_real"] == "gfx1100"
    # a product name beside a file name
    got = facts("GPU: AMD Radeon RX 6800 XT\n" + 'rocblaslt error: Cannot read "TensileLibrary_lazy_gfx1101.dat": No error\n')
    assert got["gfx_arch_real"] == "gfx1030"


def test_arch_support_from_indirect_evidence() -> None:
    """The HIP SDK 6.1 on Windows ships no rocBLAS library for the 780M (gfx1103): arch_supported follows."""
    got = facts(r"rocBLAS error: Could not load C:\Program Files\AMD\ROCm\6.1\bin\/rocblas/library/TensileLibrary_lazy_gfx1103.dat"
                "\n")
    assert (got["gfx_arch_real"], got["rocm_version"], got["arch_supported"]) == ("gfx1103", "6.1", "no")


# --- TheRock's and AMD's date-stamped wheels and tarballs ---------------------------------------------------

@pytest.mark.parametrize(("text", "release", "date"), [
    # pip freeze of a nightly, TheRock's RELEASES.md
    ("# rocm==6.5.0rc20250610\n# rocm-sdk-core==6.5.0rc20250610\n# rocm-sdk-libraries-gfx110X-dgpu==6.5.0rc20250610\n",
     "6.5", "2025-06-10"),
    (("wget https://github.com/ROCm/TheRock/releases/download/nightly-tarball/"
     "therock-dist-linux-gfx110X-dgpu-6.5.0rc20250610.tar.gz\n"), "6.5", "2025-06-10"),
    ("ARG therock_tarball_filename=therock-dist-linux-gfx1151-7.0.0rc20250710.tar.gz\n", "7.0", "2025-07-10"),
    ("  // therock-dist-linux-gfx110X-all-7.10.0a20251030.tar.gz\n", "7.10", "2025-10-30"),
    (('python -m pip install https://d2awnip2yjpvqn.cloudfront.net/v2/gfx120X-all/rocm-7.0.0rc20250825.tar.gz '
     'https://d2awnip2yjpvqn.cloudfront.net/v2/gfx120X-all/rocm_sdk_core-7.0.0rc20250825-py3-none-win_amd64.whl\n'),
     "7.0", "2025-08-25"),
    ("| PyTorch | `2.10.0+rocm7.13.0a20260513` (TheRock gfx1151 index) |\n", "7.13", "2026-05-13"),
])
def test_therock_versions_name_their_release_and_date(text: str, release: str, date: str) -> None:
    got = facts(text)
    assert (got["rocm_version"], got["rocm_build_date"]) == (release, date)
    assert "rocm_version_dated" not in got


def test_a_wheel_that_names_only_a_date() -> None:
    """torch 2.9.0+rocmsdk20251116 is the PyTorch of AMD's ROCm 7.1.1 wheels (tables/rocm-wheels.yaml)."""
    got = facts("pytorch version: 2.9.0+rocmsdk20251116\n")
    assert (got["rocm_build_date"], got["rocm_version_dated"], got["rocm_version"]) == ("2025-11-16", "7.1", "7.1")


def test_a_named_release_wins_over_a_date() -> None:
    # TheRock's RELEASES.md: torch built on 06-08 against the rocm-sdk of 06-06
    got = facts("# rocm-sdk==6.5.0rc20250606\n# rocm-sdk-core==6.5.0rc20250606\n# torch==2.7.0a0+rocmsdk20250608\n")
    assert got["rocm_versions"] == ["6.5"] and got["rocm_version"] == "6.5"


def test_comfyui_prints_torchs_hip_release() -> None:
    got = facts("pytorch version: 2.9.0+rocmsdk20251116\nAMD arch: gfx1100\nROCm version: (7, 1)\n")
    assert (got["rocm_version_wheel"], got["rocm_versions"]) == ("7.1", ["7.1"])


@pytest.mark.parametrize("line", [
    "ls /opt/rocm-6.4.1/lib",  # an install tree is another kind of mention
    "rocm-smi 1.0.0",
    "ROCm 6.2 works on my machine",
    "6.4.0.dev0+e015c807437eaf32dac6c14a9c4f752770c51b14",  # no name: whose version it is is unknown
])
def test_not_a_therock_wheel(line: str) -> None:
    got = facts(line + "\n")
    assert "rocm_build_date" not in got and got.get("rocm_version_wheel") is None


def test_dates_map_to_the_release_whose_builds_had_started() -> None:
    tables = load_tables(FOLDER)
    assert tables.release_of_date("2025-06-08") == "6.5"
    assert tables.release_of_date("2025-11-16") == "7.1"
    assert tables.release_of_date("2026-03-01") == "7.2"
    assert tables.release_of_date("2024-01-01") is None


# --- the kernel beside the ROCm release ----------------------------------------------------------------------

# ollama/ollama#9302's dmesg: Ubuntu 22.04's GA kernel 5.15
DMESG_UBUNTU = ("Linux version 5.15.0-133-generic (buildd@lcy02-amd64-040) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld "
                "(GNU Binutils for Ubuntu) 2.38) #144-Ubuntu SMP Fri Feb 7 20:47:38 UTC 2025 (Ubuntu 5.15.0-133.144-generic "
                "5.15.173)\n")


@pytest.mark.parametrize(("text", "supported", "fit"), [
    (DMESG_UBUNTU + "ii  rocm-core  6.3.1.60301-48~22.04  amd64\n", "yes", "listed"),
    # Ubuntu's 6.14 HWE kernel is newer than any AMD lists for 6.2
    (("Linux gpu-box 6.14.0-29-generic #29~24.04.1-Ubuntu SMP PREEMPT_DYNAMIC Thu Aug 14 16:52:50 UTC 2 x86_64 GNU/Linux\n"
     "ii  rocm-core  6.2.0.60200-66~22.04  amd64\n"), "no", "newer"),
    # ROCm/legacy-rocm-build#438's uname: a mainline 4.18 with no distribution's mark; 4.18 is listed (RHEL 8's)
    (("Linux localhost 4.18.0-rc1-mainline #1 SMP PREEMPT Wed Jun 6 19:43:20 CEST 2018 x86_64 GNU/Linux\n"
     "ii  rocm-core  6.2.0.60200-66~22.04  amd64\n"), "yes", "listed"),
    # an Ubuntu GA kernel of 20.04 (5.4) with ROCm 6.3, which lists 5.15, 6.8 and 6.11 for Ubuntu
    ("Linux version 5.4.0-150-generic (buildd@lcy02-amd64-058) #167-Ubuntu SMP\n/opt/rocm-6.3.1/lib/libamdhip64.so.6\n",
     "no", "unlisted"),
])
def test_kernel_supported(text: str, supported: str, fit: str) -> None:
    got = facts(text)
    assert (got["kernel_supported"], got["kernel_fit"]) == (supported, fit)


def test_a_kernel_of_a_distribution_the_matrix_does_not_list() -> None:
    """Hyprland#3082's Arch kernel with ROCm 6.3: 6.4 is a kernel the matrix lists (SLES 15 SP6's)."""
    got = facts("Kernel: Linux 6.4.12-arch1-1 #1 SMP PREEMPT_DYNAMIC Thu, 24 Aug 2023 00:38:14 +0000 x86_64 GNU/Linux\n"
                "/opt/rocm-6.3.1/lib/libamdhip64.so.6\n")
    assert (got["kernel_supported"], got["kernel_fit"]) == ("yes", "listed")


@pytest.mark.parametrize("text", [
    # a requirement, not the running kernel
    ("do_winsys_init: DRM version is 3.33.0 but this driver is only compatible with 2.12.0 (kernel 3.2) or later.\n"
    "/opt/rocm-6.3.1/lib/libamdhip64.so.6\n"),
    # a release the table does not cover
    DMESG_UBUNTU + "/opt/rocm-5.7.1/lib/libamdhip64.so.5\n",
    # no ROCm release at all
    DMESG_UBUNTU,
    # WSL's kernel has no amdgpu driver to judge
    "Linux version 5.15.153.1-microsoft-standard-WSL2 (root@941d701f84f1)\n/opt/rocm-6.3.1/lib/libamdhip64.so.6\n",
])
def test_no_kernel_verdict(text: str) -> None:
    assert "kernel_supported" not in facts(text)


def test_kernel_table_lists_families_of_every_release() -> None:
    tables = load_tables(FOLDER)
    families = tables.listed_kernels((7, 0, 2))
    assert families is not None and (6, 14) in families["ubuntu"] and (6, 12) in families["rhel"]
    assert tables.listed_kernels((5, 7)) is None
    text = (FOLDER / "tables" / "kernel-support.yaml").read_text()
    assert "rocm.docs.amd.com" in text and "compatibility-matrix" in text


def test_a_broken_table_says_which_entry(tmp_path) -> None:
    tables = tmp_path / "tables"
    tables.mkdir()
    (tables / "gpu-ids.yaml").write_text("ids:\n  '73bf': gfx9999\n")
    load_tables.cache_clear()
    try:
        with pytest.raises(TableError, match="gfx9999"):
            load_tables(tmp_path)
    finally:
        load_tables.cache_clear()


# --- an integrated GPU that rocminfo reports as another processor ---------------------------------------------

# rocminfo's GPU agent on a Renoir APU under an old ROCm (ROCm/aomp#102): the agent's own name is the chip.
RENOIR_AS_GFX900 = """\
*******
Agent 2
*******
  Name:                    gfx900
  Marketing Name:          Renoir
"""


def test_an_igpu_reported_as_a_kin_processor_is_its_own_chip() -> None:
    got = facts(RENOIR_AS_GFX900)
    assert (got["gfx_arch_real"], got["arch_reported_as"], got["apu"]) == ("gfx90c", "gfx900", "yes")


@pytest.mark.parametrize("text", [
    # a discrete card named beside another gfx name: an override the log does not show, far more often
    "  Name:                    gfx1030\n  Uuid:                    GPU-XX\n  Marketing Name:          AMD Radeon RX 6700 XT\n",
    # the override is in the log: the product is the real chip, as for every override, but nothing is a stand-in
    "HSA_OVERRIDE_GFX_VERSION=9.0.0\n" + RENOIR_AS_GFX900,
    # the Marketing Name belongs to another agent (the CPU's "Name:" is nearer than the GPU's)
    "  Name:                    gfx900\n*******\nAgent 1\n*******\n  Name:                    AMD Ryzen 7 4800U\n"
    "  Marketing Name:          Renoir\n",
])
def test_no_stand_in_without_an_igpu_agent_pair(text: str) -> None:
    assert "arch_reported_as" not in facts(text)


def test_the_stand_in_needs_one_pair_for_the_whole_case() -> None:
    """Two integrated agents reported as different processors settle nothing."""
    two = RENOIR_AS_GFX900 + "  Name:                    gfx902\n  Marketing Name:          Cezanne\n"
    got = facts(two)
    assert "arch_reported_as" not in got


def test_no_stand_in_when_a_discrete_card_reports_the_same_name() -> None:
    """An RX 7900 XTX and a Radeon 780M both reported as gfx1100 (an override in a shell profile the log does not
    show): gfx1100 is the discrete card's own name, and the iGPU is only the second GPU."""
    text = ("*******\nAgent 2\n*******\n  Name:                    gfx1100\n  Uuid:                    GPU-5f2e\n"
            "  Marketing Name:          AMD Radeon RX 7900 XTX\n"
            "*******\nAgent 3\n*******\n  Name:                    gfx1100\n  Uuid:                    GPU-XX\n"
            "  Marketing Name:          AMD Radeon 780M\n")
    got = facts(text)
    assert "arch_reported_as" not in got
    assert got["gfx_arch_real"] == "gfx1100"
