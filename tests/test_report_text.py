"""The text report written in Python (triage/report/text.py) against the shipped template it stands for.

reports/summary.txt.j2 is the reference: every corpus case, and reports that reach each of its branches,
render to the same bytes both ways.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.pipeline import triage
from triage.report import _environment, build, render
from triage.report.text import summary

SEEDS = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())


@lru_cache(maxsize=1)
def _template():  # noqa: ANN202 - a jinja2 Template
    return _environment(None).get_template("summary.txt.j2")


def _reference(report: dict) -> str:
    return _template().render(report=report, case_lines={})


@pytest.mark.parametrize("case_dir", SEEDS, ids=[p.name for p in SEEDS])
def test_seed_reports_match_the_template(case_dir: Path) -> None:
    result = triage([str(case_dir)])
    assert render(result, "text") == _reference(build(result))


def test_every_realworld_report_matches_the_template() -> None:
    differ = []
    for case_dir in sorted(p for p in (CORPUS / "realworld").iterdir() if p.is_dir()):
        report = build(triage([str(case_dir)]))
        if summary(report) != _reference(report):
            differ.append(case_dir.name)
    assert differ == []


def _seed_report(name: str) -> dict:
    return build(triage([str(next(p for p in SEEDS if name in p.name))]))


@lru_cache(maxsize=1)
def _variants() -> dict[str, dict]:
    """Reports that reach every branch of the template, from real reports with fields changed."""
    windows = _seed_report("seed-002")
    out = {}

    signal = copy.deepcopy(windows)
    signal["fault"].update(kind="signal", signal="SEGV", si_code="SEGV_MAPERR", address="0x10", access="read",
                           offset=None, symbol=None, offset_note="past the end of .text")
    out["signal"] = signal

    bare = copy.deepcopy(windows)
    bare["fault"].update(code_name=None, module=None)
    bare["facts"] = {"os": "Windows 11", "hip_version": "6.2.41512", "gpu_name": "Radeon RX 7900 XTX"}
    out["bare-fault"] = bare

    busy = copy.deepcopy(windows)
    top = busy["diagnoses"][0]
    line = top["evidence"][0]
    top["evidence"] = [dict(line, text=line["text"] + " " + "x" * 120 + " \u202eevil\r\n")] * 11
    top["workarounds"][0].update(verified=True, verified_by="a user", verified_link="https://example.org/1",
                                 commands="set A=1\r\nset B=2", risk="slow " * 40)
    top["ask_for"] = ["the full log " * 12, "dxdiag output"]
    busy["findings"] = [{"kind": "bundle", "artifact": "a", "line": 1, "summary": "word " * 30,
                         "details": ["detail " * 20, "short\nsecond paragraph"]}]
    busy["similar"] = [{"case": "c", "class": "runtime-mismatch", "conclusion": "long conclusion " * 15,
                        "source": "https://github.com/ROCm/ROCm/issues/1", "score": 0.5}]
    busy["not_collected"] = [{"item": "dmesg", "why": "permission denied " * 8, "artifact": "m", "line": 2}]
    busy["warnings"] = ["a control char \x07 here", "plain"]
    out["busy"] = busy

    unknown = copy.deepcopy(windows)
    unknown["diagnoses"] = unknown["diagnoses"][:1]
    unknown["diagnoses"][0].update({"class": "unknown", "evidence": [], "workarounds": []})
    unknown["fault"] = None
    unknown["facts"] = {}
    out["unknown"] = unknown
    return out


@pytest.mark.parametrize("name", ["signal", "bare-fault", "busy", "unknown"])
def test_every_branch_matches_the_template(name: str) -> None:
    report = _variants()[name]
    assert summary(report) == _reference(report)


def test_other_templates_still_render_through_jinja(tmp_path: Path) -> None:
    (tmp_path / "summary.txt.j2").write_text("{{ report.diagnoses[0].class }} only\n", encoding="utf-8")
    result = triage([str(SEEDS[0])])
    assert render(result, "text", templates=tmp_path) == f"{build(result)['diagnoses'][0]['class']} only"
