"""Every corpus case against its expected.yaml, through the same pipeline the CLI uses."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import CORPUS
from triage.pipeline import triage
from triage.report import build

CASES = sorted(p.parent for p in CORPUS.glob("*/expected.yaml"))


@pytest.mark.parametrize("case_dir", CASES, ids=[p.name for p in CASES])
def test_corpus_case(case_dir: Path) -> None:
    expected = yaml.safe_load((case_dir / "expected.yaml").read_text())
    result = triage([str(case_dir)])
    report = build(result)
    top = report["diagnoses"][0]
    assert top["class"] == expected["class"]
    assert top["id"] == expected["signature"]
    assert top["confidence"] >= expected.get("min_confidence", 0.8)
    # No other class comes near; a class-level fallback of the same class only agrees with the answer.
    assert all(d["confidence"] <= 0.5 for d in report["diagnoses"][1:] if d["class"] != expected["class"])
    for name, value in (expected.get("facts") or {}).items():
        assert report["facts"].get(name) == value, name
    for name, value in (expected.get("fault") or {}).items():
        assert report["fault"][name] == value, name
    if "root_cause_contains" in expected:
        assert expected["root_cause_contains"] in top["root_cause"]
    if "workaround_contains" in expected:
        assert any(expected["workaround_contains"] in w["commands"] for w in top["workarounds"])
    assert top["workarounds"], "a diagnosed case offers a workaround"


@pytest.mark.parametrize("case_dir", CASES, ids=[p.name for p in CASES])
def test_evidence_quotes_real_lines(case_dir: Path) -> None:
    report = build(triage([str(case_dir)]))
    evidence = report["diagnoses"][0]["evidence"]
    assert evidence
    for e in evidence:
        lines = (case_dir / e["artifact"]).read_text().split("\n")
        assert lines[e["line"] - 1].strip() == e["text"]


def test_corpus_label_is_not_evidence() -> None:
    result = triage([str(CASES[0])])
    assert "expected.yaml" not in [a.name for a in result.case.artifacts]
