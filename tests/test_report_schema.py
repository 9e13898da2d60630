"""The JSON report matches the JSON Schema shipped with the package, on every corpus case and real dump."""

from __future__ import annotations

import json
import subprocess
import sys

import jsonschema
import pytest

from tests.conftest import CORPUS, ROOT, shared
from triage.pipeline import triage
from triage.report import render

SCHEMA = json.loads((ROOT / "reports" / "report.schema.json").read_text())
CASES = sorted(str(p.parent) for p in CORPUS.glob("*/expected.yaml"))


@pytest.mark.parametrize("case", CASES, ids=[c.rsplit("/", 1)[-1] for c in CASES])
def test_corpus_report_matches_schema(case: str) -> None:
    jsonschema.validate(json.loads(render(triage([case]), "json")), SCHEMA)


@pytest.mark.parametrize("name", ["minidumps/null_read_av.dmp", "minidumps/linux-mini.dmp",
                                  "elfcores/null_refcount/core.gz", "elfcores/abort/core.gz"])
def test_binary_report_matches_schema(name: str) -> None:
    jsonschema.validate(json.loads(render(triage([str(shared("realdata", *name.split("/")))]), "json")), SCHEMA)


def test_unknown_report_matches_schema(tmp_path) -> None:
    (tmp_path / "x.log").write_text("hello world\n")
    jsonschema.validate(json.loads(render(triage([str(tmp_path / "x.log")]), "json")), SCHEMA)


def test_schema_command_prints_the_shipped_schema() -> None:
    done = subprocess.run([sys.executable, "-m", "triage", "schema"], capture_output=True, timeout=60)
    assert done.returncode == 0 and json.loads(done.stdout) == SCHEMA
