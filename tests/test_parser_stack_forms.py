"""Every stack form the parsers write is one the JSON report's schema allows: each real sample under
tests/data/ (the formats added with them: UCX, Open MPI, omnitrace, WinDbg's !analyze, minidump_stackwalk,
Windows crash handlers) gives a report that validates."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from triage.pipeline import triage
from triage.report import render

ROOT = Path(__file__).resolve().parents[1]
SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text())
SAMPLES = sorted((Path(__file__).parent / "data").glob("*/*.txt"))


@pytest.mark.parametrize("sample", SAMPLES, ids=[f"{p.parent.name}/{p.name}" for p in SAMPLES])
def test_report_of_each_sample_matches_the_schema(sample: Path) -> None:
    report = json.loads(render(triage([str(sample)]), "json"))
    jsonschema.validate(report, SCHEMA)
    assert all(s["form"] in SCHEMA["$defs"]["stack"]["properties"]["form"]["enum"] for s in report["stacks"])
