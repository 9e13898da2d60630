"""The manifest.json of a `triage collect` bundle: how the command ended, what could not be collected."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import artifact
from triage.model import Case
from triage.parsers import manifest as manifest_parser
from triage.pipeline import triage as triage_paths
from triage.report import render

MANIFEST = """{
  "format": "hip-triage-collect",
  "run": {
    "ended": "exit code 134 (killed by signal 6, SIGABRT)",
    "exit_status": 134,
    "signal": "ABRT",
    "stopped_by_collect": null
  },
  "missing": {
    "kernel log": "journalctl: no journal files were found; dmesg failed (exit status 1): Operation not permitted",
    "coredump": "coredumpctl is not installed"
  }
}
"""


def test_manifest_parser_reads_the_end_and_what_is_missing() -> None:
    case = Case()
    manifest_parser.parse(artifact(MANIFEST, "b.zip!manifest.json"), case)
    assert case.value("signal") == "ABRT" and case.value("exit_status") == "134"
    missing = case.facts["collect_missing"]
    assert [f.value.split(":")[0] for f in missing] == ["kernel log", "coredump"]
    assert missing[1].where.line == 11 and missing[1].text.startswith('"coredump":')
    assert sum(map(len, case.claims.values())) == MANIFEST.count("\n") and "fault" in case.inputs


def test_every_report_format_lists_what_was_not_collected(tmp_path: Path) -> None:
    (tmp_path / "manifest.json").write_text(MANIFEST)
    result = triage_paths([str(tmp_path / "manifest.json")])
    assert result.case.fault.signal == "ABRT"
    for fmt, heading in (("text", "Not collected by `triage collect`:"), ("md", "### Not collected by `triage collect`"),
                         ("html", '<section id="not-collected">')):
        out = render(result, fmt)
        assert heading in out and "coredumpctl is not installed" in out, fmt


@pytest.mark.parametrize("text", [
    MANIFEST[:150],  # cut short
    '{"format": "hip-triage-collect", "run": [1], "missing": {"a": 5, "b": ["x"]}}',
    '{"format": "hip-triage-collect", "x": ' + "[" * 100000 + "]" * 100000 + "}",
    '{"format": "hip-triage-collect", "run": {"signal": "x; rm -rf", "exit_status": true}}',
    '{"format": "something-else", "run": {"signal": "SEGV"}}',
])
def test_manifest_parser_survives_bad_manifests(text: str) -> None:
    case = Case()
    manifest_parser.parse(artifact(text, "manifest.json"), case)
    assert "signal" not in case.facts and "exit_status" not in case.facts


def test_a_run_collect_stopped_is_not_a_crash() -> None:
    text = MANIFEST.replace('"stopped_by_collect": null', '"stopped_by_collect": "timeout"').replace(
        "exit code 134 (killed by signal 6, SIGABRT)", "ended: stopped by triage collect after the 5 s --timeout")
    case = Case()
    manifest_parser.parse(artifact(text, "manifest.json"), case)
    assert "signal" not in case.facts and "exit_status" not in case.facts
    assert case.value("run_ended").endswith("--timeout")
