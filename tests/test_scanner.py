"""The one-pass prefilter: sound literal sets, and the same answers with Hyperscan and without."""

from __future__ import annotations

import pytest
import regex

from tests.conftest import CORPUS, ROOT
from triage.match import load
from triage.match.literals import required_literals
from triage.match.scanner import Scanner, hyperscan
from triage.pipeline import triage

LINES = [
    "nothing to see", "Couldn't create blit kernels!", "hipErrorNoDevice", "Memory access fault by GPU node-1",
    "out of memory access fault", "İstanbul HIP", "ld.lld: error: undefined hidden symbol: __ockl_dm_init_v1",
    "", "x" * 5000, "COULD NOT CREATE BLITMANAGER",
]


@pytest.mark.parametrize("pattern,literals", [
    (r"Couldn'?t create blit|BlitManager", {"t create blit", "blitmanager"}),
    (r"(?:foo)+bar|baz+qux", {"foo", "qux"}),
    (r".*", None), (r"ab", None), (r"a|bcd", None),
])
def test_required_literals(pattern: str, literals: set | None) -> None:
    assert required_literals(pattern) == literals


def _patterns() -> list[str]:
    db = load(ROOT / "signatures")
    return [c.sources["log"] for s in db.signatures for c in s.conditions if c.kind == "log"]


def test_prefilter_never_hides_a_match() -> None:
    """Every line a pattern really matches is among that pattern's candidates."""
    patterns = _patterns() + [r"memory access fault", r"hip\w+", r"\bgfx\d+"]
    candidates = Scanner(patterns, "python").scan(LINES)
    for index, pattern in enumerate(patterns):
        compiled = regex.compile(pattern, regex.IGNORECASE)
        truly = {i for i, line in enumerate(LINES) if compiled.search(line)}
        assert truly <= candidates[index], pattern


@pytest.mark.skipif(hyperscan is None, reason="hyperscan is not installed (pip install 'hip-triage[fast]')")
def test_hyperscan_and_python_give_the_same_candidates() -> None:
    patterns = _patterns() + [r"memory access fault", r"hip\w+"]
    assert Scanner(patterns, "hyperscan").scan(LINES) == Scanner(patterns, "python").scan(LINES)


@pytest.mark.skipif(hyperscan is None, reason="hyperscan is not installed (pip install 'hip-triage[fast]')")
@pytest.mark.parametrize("case", sorted(p.parent.name for p in CORPUS.glob("*/expected.yaml")))
def test_same_diagnoses_with_either_engine(case: str, monkeypatch) -> None:
    answers = []
    for engine in ("hyperscan", "python"):
        monkeypatch.setenv("TRIAGE_SCANNER", engine)
        result = triage([str(CORPUS / case)])
        answers.append([(d.id, d.confidence, [(e.artifact, e.line) for e in d.evidence]) for d in result.diagnoses])
    assert answers[0] == answers[1]
