"""A math library's soname major as the ROCm major that ships it (``rocm_version_library``: triage/parsers/versions.py
reads the soname, triage/derive/versions.py maps it by tables/rocm-library-sonames.yaml). The ldd lines are the real
output in tests/fixtures/libloads/ldd.txt with the sonames of the releases (ROCm 5.7's librocblas.so.3 and
libhipblas.so.1, 6.x's .so.4 and .so.2, 7.x's .so.5, .so.3 and libhipblaslt.so.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)
LDD = (Path(__file__).parent / "fixtures" / "libloads" / "ldd.txt").read_text()


def facts_of(text: str):
    return analyze([Artifact(name="ldd.txt", text=text, size=len(text))], DB, FOLDER).case


def majors(case) -> list[str]:
    return sorted({f.value for f in case.facts.get("rocm_version_library", [])})


@pytest.mark.parametrize("soname, major", [
    ("librocblas.so.3", "5"), ("librocblas.so.4", "6"), ("librocblas.so.5", "7"),
    ("libhipblas.so.1", "5"), ("libhipblas.so.2", "6"), ("libhipblas.so.3", "7"),
    ("libhipblaslt.so.1", "7"),
])
def test_soname_major(soname: str, major: str) -> None:
    text = LDD.replace("librocblas.so.4", soname)
    assert majors(facts_of(text)) == [major]


@pytest.mark.parametrize("soname", ["libhipblaslt.so.0", "libMIOpen.so.1", "librocblas.so.0"])
def test_a_soname_of_two_majors_says_none(soname: str) -> None:
    assert majors(facts_of(LDD.replace("librocblas.so.4", soname))) == []


def test_a_math_library_beside_another_runtime_is_two_releases() -> None:
    """ROCm 7's rocBLAS from a distribution's /usr/lib64 beside a HIP 6 runtime: the soname alone says 7."""
    text = (LDD.replace("/opt/rocm-6.2.0/lib", "/usr/lib64").replace("librocblas.so.4", "librocblas.so.5")
            .replace("libamdhip64.so =>", "libamdhip64.so.6 =>").replace("libamdhip64.so (", "libamdhip64.so.6 ("))
    case = facts_of(text)
    assert sorted(f.value for f in case.facts["rocm_versions"]) == ["6", "7"]


def test_a_named_release_outranks_the_soname() -> None:
    case = facts_of("HIP version: 7.0.51831-a3e329ad8\n" + LDD)
    assert case.flat_facts()["rocm_version"] == "7.0"
