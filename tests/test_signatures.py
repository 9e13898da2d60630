"""The signature database: schema, classes from the taxonomy, and every signature's own examples."""

from __future__ import annotations

import json

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT, artifact, shared
from triage.match import load
from triage.match.examples import run_examples
from triage.match.lint import check_backtracking
from triage.pipeline import analyze

FOLDER = ROOT / "signatures"
FILES = sorted(p for p in FOLDER.glob("*.yaml") if not p.name.startswith("_"))
DB = load(FOLDER)


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_signature_matches_schema(path) -> None:
    schema = json.loads((FOLDER / "schema.json").read_text())
    jsonschema.validate(yaml.safe_load(path.read_text()), schema)


def test_database_loads_without_problems() -> None:
    assert DB.problems == []
    assert len({s.id for s in DB.signatures}) == len(FILES)


def test_classes_are_in_the_taxonomy() -> None:
    taxonomy = shared("TAXONOMY.md").read_text()
    for sig in DB.signatures:
        assert f"| `{sig.klass}` |" in taxonomy, sig.id


OUTCOMES = run_examples(DB, FOLDER)


@pytest.mark.parametrize("outcome", OUTCOMES, ids=[f"{o.signature}:{o.kind}:{o.name[:40]}" for o in OUTCOMES])
def test_signature_example(outcome) -> None:
    assert outcome.passed, outcome.reason


def test_each_signature_has_two_examples_each_way() -> None:
    for sig in DB.signatures:
        assert len(sig.tests["match"]) >= 2 and len(sig.tests["no_match"]) >= 2, sig.id


def test_a_broken_signature_is_reported_not_fatal(tmp_path) -> None:
    for path in [FOLDER / "_database.yaml", *FILES[:1]]:
        (tmp_path / path.name).write_text(path.read_text())
    (tmp_path / "broken.yaml").write_text("id: broken\ntitle: x\nclass: runtime-crash\nconditions:\n  - id: a\n    log: '(unclosed'\n    strength: 0.5\nroot_cause: x\n")
    db = load(tmp_path)
    assert sorted(s.id for s in db.signatures) == sorted(["broken", FILES[0].stem])
    problems = check_backtracking(db)
    assert len(problems) == 1 and "broken" in problems[0] and "bad regex" in problems[0]
    result = analyze([artifact("anything at all\n")], db, tmp_path)
    assert any("broken" in w and "bad regex" in w for w in result.case.warnings)


def test_applies_to_skips_a_signature_for_another_os() -> None:
    ring = next(s for s in DB.signatures if s.id == "amdgpu-ring-timeout")
    assert ring.applies("linux", {"text"}) and ring.applies(None, {"text"})
    assert not ring.applies("windows", {"text"})
    line = "[ 1234.567890] amdgpu 0000:03:00.0: amdgpu: ring gfx_0.0.0 timeout, signaled seq=1, emitted seq=3\n"
    on_linux = analyze([artifact(line)], DB, FOLDER).top
    on_windows = analyze([artifact(line + "C:\\Windows\\System32\\amdhip64_6.dll loaded\n" * 3)], DB, FOLDER)
    assert on_linux.id == "amdgpu-ring-timeout"
    assert on_windows.case.value("os") == "windows"
    assert "amdgpu-ring-timeout" not in [d.id for d in on_windows.diagnoses]


def test_shipped_examples_are_self_contained() -> None:
    """An installed package has no tests/ folder: every shipped example must carry its own text."""
    for path in sorted((ROOT / "signatures").glob("*.yaml")):
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
        for kind in ("match", "no_match"):
            for example in (data.get("tests") or {}).get(kind) or []:
                assert "file" not in example, f"{path.name}: {example.get('name')}"


@pytest.mark.parametrize("signature, fixture", [
    ("hip-no-device", "amd_log_level_3.stderr.txt"),
    ("rocm-kfd-not-loaded", "rocminfo.stdout.txt"),
])
def test_inlined_examples_are_the_real_rocm5_output(signature: str, fixture: str) -> None:
    data = yaml.safe_load((ROOT / "signatures" / f"{signature}.yaml").read_text(encoding="utf-8"))
    inputs = [e.get("input") for e in data["tests"]["match"]]
    assert (ROOT / "tests" / "fixtures" / "rocm5-nogpu" / fixture).read_text(encoding="utf-8") in inputs


def test_an_unreadable_example_file_fails_that_example_only(tmp_path) -> None:
    import shutil

    folder = tmp_path / "signatures"
    shutil.copytree(ROOT / "signatures", folder)
    path = folder / "rocm-kfd-not-loaded.yaml"
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    data["tests"]["match"][0] = {"name": "moved away", "file": "../elsewhere/rocminfo.txt"}
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    failed = [o for o in run_examples(load(folder), folder) if not o.passed]
    assert [(o.signature, o.name) for o in failed] == [("rocm-kfd-not-loaded", "moved away")]
    assert "cannot be read" in failed[0].reason
