"""The override facts (triage/derive/gpu.py): the per-device HSA_OVERRIDE_GFX_VERSION_<n> of ROCm 6.2+ read like the
plain variable, and an override that names no processor at all, from lines as users set and programs print them."""

from __future__ import annotations

from triage.match import load
from triage.model import Artifact
from triage.pipeline import Result, analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)

FAULT = ("Memory access fault by GPU node-1 (Agent handle: 0x5635e3db2590) on address 0x7f189722f000. "
         "Reason: Page not present or supervisor privilege.\n")


def run(text: str) -> Result:
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], DB, FOLDER)


def overrides(result: Result) -> list[str]:
    return [f.value for f in result.case.facts.get("env_HSA_OVERRIDE_GFX_VERSION", [])]


# A fault names the GPU's KFD node, which is the <n> of HSA_OVERRIDE_GFX_VERSION_<n> (GPUs count from 1).
FAULT_NODE_2 = "Memory access fault by GPU node-2 (Agent handle: 0x55d0c6b3a0c0) on address (nil). Reason: Unknown.\n"
# Two cards, one override each, as a user's shell profile sets them (RX 7700 XT at node 1, RX 6600 at node 2).
TWO_CARDS = "export HSA_OVERRIDE_GFX_VERSION_1=11.0.1\nexport HSA_OVERRIDE_GFX_VERSION_2=10.3.0\n"


def test_the_per_device_override_of_the_faulting_node_is_the_override() -> None:
    got = run(TWO_CARDS + "  Marketing Name:          AMD Radeon RX 6600\n" + FAULT_NODE_2).case.flat_facts()
    assert (got["override_device"], got["override_arch"], got["override_fits"]) == ("2", "gfx1030", "yes")
    got = run(TWO_CARDS + FAULT).case.flat_facts()
    assert (got["override_device"], got["override_arch"]) == ("1", "gfx1101")


def test_a_per_device_override_of_another_family_is_blamed_for_the_fault() -> None:
    """Read as no override at all, this answered gpu-memory-fault."""
    result = run("export HSA_OVERRIDE_GFX_VERSION_1=11.0.0\n  Marketing Name:          AMD Radeon RX 6600\n" + FAULT)
    got = result.case.flat_facts()
    assert (got["gfx_arch_real"], got["override_arch"], got["override_fits"]) == ("gfx1032", "gfx1100", "no")
    assert (result.top.id, result.top.klass) == ("hsa-override-gfx-version-mismatch", "unsupported-gpu")


def test_node_0_is_the_cpu_so_its_override_is_no_gpus() -> None:
    """Set as some guides write it, ``_0`` names the CPU's node: the GPU at node 1 runs as itself. The override is
    still recorded as set."""
    result = run("export HSA_OVERRIDE_GFX_VERSION_0=11.0.0\n  Marketing Name:          AMD Radeon RX 6600\n" + FAULT)
    assert overrides(result) == ["11.0.0"]
    assert "override_arch" not in result.case.flat_facts()


def test_with_no_node_named_a_single_gpu_nodes_override_is_taken() -> None:
    got = run("ENV HSA_OVERRIDE_GFX_VERSION_1 10.3.0\n  Marketing Name:          AMD Radeon RX 6600\n").case.flat_facts()
    assert (got["override_device"], got["override_arch"], got["override_fits"]) == ("1", "gfx1030", "yes")


def test_per_device_overrides_of_two_values_and_no_node_name_no_single_override() -> None:
    result = run('HSA_OVERRIDE_GFX_VERSION_1="11.0.0" HSA_OVERRIDE_GFX_VERSION_2="10.3.0" ollama serve\n')
    assert overrides(result) == ["11.0.0", "10.3.0"]
    assert "override_arch" not in result.case.flat_facts()


def test_the_faulting_nodes_override_comes_before_the_plain_variable() -> None:
    got = run("export HSA_OVERRIDE_GFX_VERSION=10.3.0\n" + TWO_CARDS + FAULT).case.flat_facts()
    assert got["override_arch"] == "gfx1101"
    got = run("export HSA_OVERRIDE_GFX_VERSION=10.3.0\nexport HSA_OVERRIDE_GFX_VERSION_2=10.3.1\n" + FAULT).case.flat_facts()
    assert got["override_arch"] == "gfx1030"  # node 2 has its own; the GPU at node 1 takes the plain one


def test_a_variable_that_only_starts_with_the_name_is_no_override() -> None:
    assert overrides(run("echo $HSA_OVERRIDE_GFX_VERSION_1\n")) == []


def test_an_override_naming_no_processor_is_unknown() -> None:
    """8.3.0 is gfx830, which does not exist (8.0.3 with two digits swapped)."""
    got = run("os.environ[\"HSA_OVERRIDE_GFX_VERSION\"] = '8.3.0'\n"
              "  Marketing Name:          AMD Radeon RX 580 Series           \n").case.flat_facts()
    assert (got["override_arch"], got["override_known"]) == ("gfx830", "no")
    assert "override_fits" not in got


def test_an_override_naming_a_real_processor_is_known() -> None:
    got = run("export HSA_OVERRIDE_GFX_VERSION=8.0.3\n").case.flat_facts()
    assert (got["override_arch"], got["override_known"]) == ("gfx803", "yes")


def test_a_fault_under_an_override_naming_no_processor_is_the_overrides() -> None:
    result = run("export HSA_OVERRIDE_GFX_VERSION=8.3.0\n  Marketing Name:          Radeon RX 580 Series\n" + FAULT)
    assert result.top.id == "hsa-override-gfx-version-mismatch"
    assert "names no processor at all" in result.top.root_cause
