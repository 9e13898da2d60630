"""parsers/aotriton.py: the architecture AOTriton asked its image pack for, when the pack holds other ones only."""

from triage.model import Artifact, Case
from triage.parsers import aotriton


def _facts(text: str) -> list[str]:
    case = Case()
    aotriton.parse(Artifact(name="log", text=text, size=len(text)), case)
    return [f.value for f in case.facts.get("aotriton_missing_arch", [])]


REQUEST = ("Trying to decompress kernel amd-gfx11xx\\flash\\attn_fwd\\FONLY__ "
           "attn_fwd-Sig-F__fp32@16_64_F_F_0_1__P__0_2_16_16_False__CO__wave3_warp2_stg1--Arch_{arch}\n")
ENTRY = "Add kernel {i}: attn_fwd-Sig-F__fp32@16_64_F_F_0_1__P__0_2_16_16_False__CO__wave1_warp2_stg1--Arch_{arch} offset: {i}0\n"


def test_pack_without_the_requested_architecture():
    text = (REQUEST.format(arch="gfx1103") + "PackedKernel decompressed to 000002610D6CE080\n"
            + ENTRY.format(i=0, arch="gfx1100") + ENTRY.format(i=1, arch="gfx1101"))
    assert _facts(text) == ["gfx1103"]


def test_pack_holding_the_requested_architecture():
    text = REQUEST.format(arch="gfx1100") + ENTRY.format(i=0, arch="gfx1101") + ENTRY.format(i=1, arch="gfx1100")
    assert _facts(text) == []


def test_request_without_a_directory_listing():
    assert _facts(REQUEST.format(arch="gfx1151") + "Decompress kernel to 0\n") == []


def test_second_request_settles_the_first():
    text = (REQUEST.format(arch="gfx1100") + ENTRY.format(i=0, arch="gfx1100")
            + REQUEST.format(arch="gfx1036") + ENTRY.format(i=0, arch="gfx1030"))
    assert _facts(text) == ["gfx1036"]
