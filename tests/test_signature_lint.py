"""`triage signatures lint`: its checks catch what they are for, and the shipped database passes."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import ROOT
from triage.match import load
from triage.match.lint import check_backtracking, lint, nested_repeat

FOLDER = ROOT / "signatures"


@pytest.mark.parametrize("pattern", [r"(a+)+$", r"(\w+\s?)*!", r"(?:x|y*)+z", r"((ab)*c)*d", r"(a{2,})+"])
def test_nested_repeats_are_found(pattern: str) -> None:
    assert nested_repeat(pattern)


@pytest.mark.parametrize("pattern", [r"(a+)b(c+)", r"(?:error|warning): \w+", r"[(+*)]+", r"\(a+\)+", r"(ab){1,3}"])
def test_safe_patterns_pass(pattern: str) -> None:
    assert not nested_repeat(pattern)


def _write_db(tmp_path, log_pattern: str):
    (tmp_path / "_database.yaml").write_text((FOLDER / "_database.yaml").read_text())
    (tmp_path / "schema.json").write_text((FOLDER / "schema.json").read_text())
    (tmp_path / "slow.yaml").write_text(
        "id: slow\ntitle: a slow pattern for the test\nclass: runtime-crash\nconditions:\n"
        f"  - id: a\n    description: d\n    log: '{log_pattern}'\n    strength: 0.5\nroot_cause: x\n")
    return load(tmp_path)


def test_catastrophic_pattern_is_reported(tmp_path) -> None:
    db = _write_db(tmp_path, r"^(a|aa)*$")
    problems = check_backtracking(db)
    assert problems and "slow/a" in problems[0]


def test_schema_problems_are_reported(tmp_path) -> None:
    db = _write_db(tmp_path, "fine")
    problems = lint(db, tmp_path)
    assert any("slow.yaml" in p and "required property" in p for p in problems)


def test_case_numbers_internal_references_and_anonymous_verification_are_reported(tmp_path) -> None:
    _write_db(tmp_path, "fine")
    (tmp_path / "slow.yaml").write_text(
        "id: slow\ntitle: t\nclass: runtime-crash\nconditions:\n  - id: a\n    description: d\n    log: fine\n"
        "    strength: 0.5\nroot_cause: 'Frames named `export() + 0x3AD1DE` are the nearest export{{ x }}'\n"
        "workarounds:\n  - title: w\n    commands: c\n    verified: true\n"
        "ask_for: []\nreferences: ['Seed case 000: a private report']\ntests: {must_match: [], must_not_match: []}\n")
    problems = lint(load(tmp_path), tmp_path)
    assert any("root_cause" in p and "0x3AD1DE" in p for p in problems), problems
    assert any("references/0" in p for p in problems), problems
    assert any("workarounds/0" in p and "verified_by" in p for p in problems), problems
    (tmp_path / "slow.yaml").write_text((tmp_path / "slow.yaml").read_text().replace("0x3AD1DE", "0x...").replace(
        "Seed case 000: a private report", "https://github.com/ROCm/hcc/issues/187").replace(
        "verified: true", "verified: true\n    verified_by: the reporter\n    verified_link: https://github.com/ROCm/hcc/issues/187"))
    problems = lint(load(tmp_path), tmp_path)
    assert not [p for p in problems if "root_cause" in p or "references" in p or "workarounds" in p], problems


def test_shipped_database_lints_clean() -> None:
    assert lint(load(FOLDER), FOLDER) == []


def test_catalogue_page_is_current() -> None:
    done = subprocess.run([sys.executable, "-m", "triage", "signatures", "catalogue"], capture_output=True, timeout=120)
    assert done.returncode == 0
    assert (ROOT / "docs" / "signatures.md").read_text() == done.stdout.decode(), \
        "regenerate it: triage signatures catalogue > docs/signatures.md"
