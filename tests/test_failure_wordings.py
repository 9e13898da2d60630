"""Real output of every failure class as users posted it in public threads, in the words of many apps, ROCm
releases and OSes (tests/fixtures/failure-wordings/index.tsv names each thread): gdb and core-file stacks in COMGR
and the OpenCL runtime, runtime and SMI assertions, queue aborts in ROCm 3.x's numeric form, kernel page-fault and
shader-interrupt reports, LLVM's Windows crash handler under a path with spaces, missing code objects and math
libraries by app, containers and WSL without a device, allocation failures, missing toolchains and device
libraries, and lookalikes on NVIDIA that must stay outside the stack. Each must get the class its output shows,
whichever signature answers: the wordings differ from the ones the signatures were first written for."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FIXTURES = Path(__file__).parent / "fixtures" / "failure-wordings"
FOLDER = data_dir("signatures")
DB = load(FOLDER)


def _cases() -> list[tuple[str, str]]:
    """(file, expected class) for every fixture the index lists."""
    rows = []
    for line in (FIXTURES / "index.tsv").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, klass, _source = line.split("\t")
            rows.append((name, klass))
    return rows


CASES = _cases()


def test_every_fixture_is_indexed() -> None:
    """A fixture without an index row would never be checked."""
    assert {p.name for p in FIXTURES.glob("*.txt")} == {name for name, _ in CASES}


@pytest.mark.parametrize(("name", "klass"), CASES, ids=[name for name, _ in CASES])
def test_wording_gets_its_class(name: str, klass: str) -> None:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    result = analyze([Artifact(name=name, text=text, size=len(text))], DB, FOLDER)
    top = result.diagnoses[0]
    assert top.klass == klass, f"{name}: {top.id} ({top.klass}, {top.confidence:.2f})"
