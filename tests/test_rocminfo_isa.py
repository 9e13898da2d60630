"""rocminfo's "ISA Info" block names each agent's ISA on a line of its own (``Name: amdgcn-amd-amdhsa--gfx803``, as
in the rocminfo pasted in ROCm/legacy-rocm-build#1721; an APU's carries its xnack mode, ``gfx902:xnack+``): a cut
that keeps only that block still says the GPU's architecture (``gfx_arch_real``), while a code-object bundle's
``hipv4-amdgcn-amd-amdhsa--gfx1100`` entry (what a binary carries, not the GPU) stays a passing mention."""

from __future__ import annotations

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)

ISA_BLOCK = (
    "  ISA Info:                \n"
    "    ISA 1                    \n"
    "      Name:                    amdgcn-amd-amdhsa--{isa}          \n"
    "      Machine Models:          HSA_MACHINE_MODEL_LARGE            \n"
    "      Profiles:                HSA_PROFILE_BASE                   \n"
)


def facts_of(text: str) -> dict[str, str]:
    return analyze([Artifact(name="rocminfo.txt", text=text, size=len(text))], DB, FOLDER).case.flat_facts()


@pytest.mark.parametrize("isa, arch, apu", [("gfx803", "gfx803", "no"), ("gfx902:xnack+", "gfx902", "yes"),
                                            ("gfx90a:sramecc+:xnack-", "gfx90a", "no")])
def test_isa_name_gives_the_real_arch(isa: str, arch: str, apu: str) -> None:
    facts = facts_of(ISA_BLOCK.format(isa=isa))
    assert facts["gfx_arch_real"] == arch
    assert facts["apu"] == apu


def test_a_bundle_entry_is_not_the_gpu() -> None:
    text = "          1 hipv4-amdgcn-amd-amdhsa--gfx1100\n"
    assert "gfx_arch_real" not in facts_of(text)


def test_the_agents_own_name_line_still_leads() -> None:
    text = "  Name:                    gfx1030                            \n" + ISA_BLOCK.format(isa="gfx902:xnack-")
    assert facts_of(text)["gfx_arch_real"] == "gfx1030"
