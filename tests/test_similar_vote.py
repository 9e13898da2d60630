"""tools/similar_vote.py: the vote of the labelled design cases nearest to a case, its own thread left out."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
from types import ModuleType

import pytest

from tests.conftest import ROOT
from triage.match.similar import Similar, index_of, nearest

REALWORLD = ROOT / "corpus" / "realworld"
# Two design cases from two threads whose key lines read the same (rocBLAS without the Tensile files of the
# GPU), and one of another class.
KOBOLDCPP = "koboldcpp-rocm-134-windows-bundle-missing-tensile-lazy-gfx1101"
THEROCK = "therock-5179-rocblas-no-tensile-kernels-gfx942-drop-23-2"
HCC = "rocm-legacy-1126-tf-rocm-211-libmcwamp-so3-after-rocm35-hcc-removal"


@pytest.fixture(scope="module")
def tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("similar_vote", ROOT / "tools" / "similar_vote.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def described(tool: ModuleType) -> dict:
    return {name: tool.describe(str(REALWORLD / name)) for name in (KOBOLDCPP, THEROCK, HCC)}


def test_a_case_never_finds_itself(tool: ModuleType, described: dict) -> None:
    cases = list(described.values())
    whole = index_of(tuple((c.name, c.label.klass, c.label.conclusion, c.label.source, c.feats) for c in cases))
    assert {s.case for s in nearest(described[KOBOLDCPP].feats, whole, minimum=0.0) if s.score == 1.0} == {
        KOBOLDCPP, THEROCK}
    left_out = tool.left_out_neighbours(cases, 5, 0.0)
    for case in cases:
        assert case.name not in {s.case for s in left_out[case.name]}
    assert (left_out[KOBOLDCPP][0].case, left_out[KOBOLDCPP][0].score) == (THEROCK, 1.0)


def test_a_case_never_finds_a_case_of_its_thread(tool: ModuleType, described: dict) -> None:
    """Were both rocBLAS cases from one thread, neither would vote for the other, however alike they read."""
    koboldcpp = described[KOBOLDCPP]
    same_thread = dataclasses.replace(described[THEROCK],
                                      label=dataclasses.replace(described[THEROCK].label, source=koboldcpp.label.source))
    left_out = tool.left_out_neighbours([koboldcpp, same_thread, described[HCC]], 5, 0.0)
    assert [s.case for s in left_out[KOBOLDCPP]] == [HCC]
    assert [s.case for s in left_out[THEROCK]] == [HCC]
    assert {s.case for s in left_out[HCC]} == {KOBOLDCPP, THEROCK}


def test_the_vote_of_real_neighbours(tool: ModuleType, described: dict) -> None:
    neighbours = tool.left_out_neighbours(list(described.values()), 5, 0.0)[KOBOLDCPP]
    assert [s.klass for s in neighbours] == ["math-lib-arch-missing", "runtime-mismatch"]
    assert tool.vote(neighbours, 1) == tool.Vote("math-lib-arch-missing", 1.0)
    assert tool.vote(neighbours, 2) == tool.Vote("math-lib-arch-missing", 0.5)  # strength: the winner's sum over k


def test_the_vote_weighs_similarity_and_counts_no_gpu_class_as_a_class(tool: ModuleType) -> None:
    def near(klass: str, score: float) -> Similar:
        return Similar(f"case-{klass}-{score}", klass, "", "", score)

    neighbours = [near("outside-gpu-stack", 0.5), near("no-code-object", 0.3), near("no-code-object", 0.3)]
    assert tool.vote(neighbours, 1) == tool.Vote("outside-gpu-stack", 0.5)
    assert tool.vote(neighbours, 3) == tool.Vote("no-code-object", 0.2)
    assert tool.vote(neighbours, 5) == tool.Vote("no-code-object", 0.12)  # fewer than k: the missing count nothing
    assert tool.vote([near("unsupported-gpu", 0.4), near("no-code-object", 0.4)], 2).klass == "unsupported-gpu"
    assert tool.vote([], 3) is None
