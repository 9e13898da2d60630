"""The integrated GPU of the machine's AMD processor (triage/derive/apus.py's ``apu_arch``, tables/apus.yaml), read
from CPU names as lscpu, /proc/cpuinfo and rocminfo print them (triage/parsers/cpu.py); it never becomes the GPU
in use."""

from __future__ import annotations

import pytest

from triage.derive.apus import arch_of_cpu
from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)


def facts_of(text: str) -> dict[str, str]:
    return analyze([Artifact(name="log.txt", text=text, size=len(text))], DB, FOLDER).case.flat_facts()


@pytest.mark.parametrize("cpu, arch", [
    ("AMD Ryzen 5 2500U with Radeon Vega Mobile Gfx", "gfx902"),
    ("AMD Ryzen 3 3250U with Radeon Graphics", "gfx909"),
    ("AMD Ryzen 7 4800U with Radeon Graphics", "gfx90c"),
    ("AMD Ryzen 7 5700G with Radeon Graphics", "gfx90c"),
    ("AMD Ryzen 7 6800H with Radeon Graphics", "gfx1035"),
    ("AMD Ryzen 5 7520U with Radeon Graphics", "gfx1037"),
    ("AMD Ryzen 7 7840HS w/ Radeon 780M Graphics", "gfx1103"),
    ("AMD Ryzen 7 8845HS w/ Radeon 780M Graphics", "gfx1103"),
    ("AMD Ryzen 9 7950X 16-Core Processor", "gfx1036"),
    ("AMD Ryzen AI 9 HX 370 w/ Radeon 890M", "gfx1150"),
    ("AMD RYZEN AI MAX+ 395 w/ Radeon 8060S", "gfx1151"),
    ("AMD Ryzen AI 7 350 w/ Radeon 860M", "gfx1152"),
    # no graphics: an X part of the 5000 series, an F part, a Threadripper
    ("AMD Ryzen 7 5800X 8-Core Processor", None),
    ("AMD Ryzen 5 7500F 6-Core Processor", None),
    ("AMD Ryzen Threadripper PRO 7985WX 64-Cores", None),
])
def test_cpu_to_igpu(cpu: str, arch: str | None) -> None:
    assert arch_of_cpu(cpu) == arch


@pytest.mark.parametrize("line", [
    "Model name:                           AMD Ryzen 7 4800U with Radeon Graphics",      # lscpu
    "model name\t: AMD Ryzen 7 4800U with Radeon Graphics",                            # /proc/cpuinfo
    "  Marketing Name:          AMD Ryzen 7 4800U with Radeon Graphics     ",          # rocminfo's CPU agent
])
def test_printed_cpu_names(line: str) -> None:
    facts = facts_of(line + "\n")
    assert facts["apu_arch"] == "gfx90c"
    assert "gfx_arch" not in facts


def test_a_discrete_gpu_stays_the_gpu() -> None:
    text = ("Model name:                           AMD Ryzen 7 7840HS w/ Radeon 780M Graphics\n"
            "  Name:                    gfx1100                            \n"
            "  Marketing Name:          AMD Radeon RX 7900 XTX             \n")
    facts = facts_of(text)
    assert facts["apu_arch"] == "gfx1103"
    assert facts["gfx_arch_real"] == "gfx1100"


def test_a_sentence_is_no_fact() -> None:
    assert "apu_arch" not in facts_of("I am running this on my Ryzen 7 4800U laptop and it crashes every time.\n")
