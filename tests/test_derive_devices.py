"""igpu_in_use and the GPU's hardware features (triage/derive/devices.py, signatures/tables/gpu-features.yaml).

tests/data/devices/llamacpp-22013-two-rocm-devices.txt is the log of ggml-org/llama.cpp#22013 (a
discrete RX 9070 as device 0 beside a Radeon 740M iGPU); the rocminfo listing below is rocminfo's
agent format for a Ryzen 7000 iGPU enumerated before a discrete card.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.derive.tables import TableError, load_tables
from triage.pipeline import triage

DATA = Path(__file__).parent / "data" / "devices"

ROCMINFO_IGPU_FIRST = """\
*******
Agent 2
*******
  Name:                    gfx1036
  Marketing Name:          AMD Radeon Graphics
  Vendor Name:             AMD
  Device Type:             GPU
*******
Agent 3
*******
  Name:                    gfx1100
  Marketing Name:          Radeon RX 7900 XTX
  Vendor Name:             AMD
  Device Type:             GPU
"""


def _facts(tmp_path: Path, text: str, *names: str) -> dict[str, str | None]:
    path = tmp_path / "log.txt"
    path.write_text(text)
    case = triage([str(path)]).case
    return {name: case.value(name) for name in names}


def test_discrete_card_as_device_0_beside_an_igpu_is_igpu_in_use_no() -> None:
    case = triage([str(DATA / "llamacpp-22013-two-rocm-devices.txt")]).case
    assert case.value("igpu_in_use") == "no"
    assert case.value("gfx_arch_real") == "gfx1201"
    assert (case.value("gpu_wmma"), case.value("gpu_mfma"), case.value("gpu_xnack")) == ("yes", "no", "no")


def test_igpu_enumerated_before_the_card_is_igpu_in_use_yes(tmp_path: Path) -> None:
    assert _facts(tmp_path, ROCMINFO_IGPU_FIRST, "igpu_in_use")["igpu_in_use"] == "yes"


def test_no_answer_with_one_kind_of_gpu_or_under_an_override(tmp_path: Path) -> None:
    only_card = ROCMINFO_IGPU_FIRST.replace("gfx1036", "gfx1030").replace("AMD Radeon Graphics", "Radeon RX 6800")
    assert _facts(tmp_path, only_card, "igpu_in_use")["igpu_in_use"] is None
    overridden = "HSA_OVERRIDE_GFX_VERSION=11.0.0\n" + ROCMINFO_IGPU_FIRST
    assert _facts(tmp_path, overridden, "igpu_in_use")["igpu_in_use"] is None


def test_a_card_named_only_in_a_sentence_is_not_listed(tmp_path: Path) -> None:
    text = "I also have a Radeon RX 7900 XTX in this machine but it is not used here\n" + ROCMINFO_IGPU_FIRST.split(
        "*******\nAgent 3")[0]
    assert _facts(tmp_path, text, "igpu_in_use")["igpu_in_use"] is None


@pytest.mark.parametrize(("arch", "xnack", "mfma", "wmma"), [
    ("gfx90a", "yes", "yes", "no"), ("gfx942", "yes", "yes", "no"), ("gfx906", "yes", "no", "no"),
    ("gfx1030", "no", "no", "no"), ("gfx1100", "no", "no", "yes"), ("gfx1201", "no", "no", "yes"),
])
def test_features_follow_the_real_arch(tmp_path: Path, arch: str, xnack: str, mfma: str, wmma: str) -> None:
    found = _facts(tmp_path, f"  Name:                    {arch}\n", "gpu_xnack", "gpu_mfma", "gpu_wmma")
    assert found == {"gpu_xnack": xnack, "gpu_mfma": mfma, "gpu_wmma": wmma}


def test_every_feature_row_names_a_known_processor_and_a_bad_row_is_refused(tmp_path: Path) -> None:
    tables = load_tables()
    assert set(tables.features) <= set(tables.archs)
    (tmp_path / "tables").mkdir()
    (tmp_path / "tables" / "gpu-features.yaml").write_text("features:\n  gfx1100: [wmma, tensor-cores]\n")
    with pytest.raises(TableError, match="gpu-features.yaml"):
        load_tables(tmp_path)


LSPCI_POLARIS_BESIDE_NAVI32 = """\
0c:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 32 [Radeon RX 7700 XT / 7800 XT] (rev c8)
0d:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Ellesmere [Radeon RX 470/480/570/570X/580/580X/590] (rev e7)
"""


@pytest.mark.parametrize(("text", "expected"), [
    (LSPCI_POLARIS_BESIDE_NAVI32, "gfx803"),
    # one card alone, old or new: nothing beside it
    (LSPCI_POLARIS_BESIDE_NAVI32.splitlines()[1] + "\n", None),
    (LSPCI_POLARIS_BESIDE_NAVI32.splitlines()[0] + "\n", None),
    # an old APU's GPU (Kaveri) beside a Polaris card: no newer GPU
    ("  Name:                    gfx700\n" + LSPCI_POLARIS_BESIDE_NAVI32.splitlines()[1] + "\n", None),
], ids=["polaris-beside-navi32", "polaris-alone", "navi32-alone", "kaveri-apu-beside-polaris"])
def test_old_gcn_card_beside_a_newer_gpu(tmp_path: Path, text: str, expected: str | None) -> None:
    assert _facts(tmp_path, text, "old_gcn_gpu_beside_newer")["old_gcn_gpu_beside_newer"] == expected
