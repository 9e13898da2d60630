"""Conditions several signatures share (signatures/_conditions.yaml): a signature names one with ``use:`` and gives its
own strength; the shared test is defined once."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from triage.match import load
from triage.match.database import SHARED, SignatureError, load_signature, read_shared
from triage.match.lint import check_shared
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

SIGNATURE = {
    "id": "probe", "title": "A probe signature", "class": "runtime-mismatch", "status": "experimental", "version": 1,
    "root_cause": "x", "workarounds": [], "ask_for": [], "references": [], "tests": {"match": [], "no_match": []},
}
WHEEL_MISMATCH = {"description": "a wheel built for another ROCm release than the system's",
                  "compare": {"left": "rocm_version_wheel", "op": "ne", "right": "rocm_version_path", "as": "release"}}
OTHER = "torch    2.3.0+rocm6.0\n/opt/rocm-6.4.1/lib/libamdhip64.so.6\n"
SAME = "torch    2.3.0+rocm6.4\n/opt/rocm-6.4.1/lib/libamdhip64.so.6\n"


def _folder(tmp_path: Path, shared: dict, *conditions: dict) -> Path:
    folder = tmp_path / "db"
    folder.mkdir(exist_ok=True)
    for name in ("_database.yaml", "schema.json"):
        shutil.copy(data_dir("signatures") / name, folder)
    (folder / SHARED).write_text(yaml.safe_dump({"conditions": shared}))
    (folder / "probe.yaml").write_text(yaml.safe_dump(SIGNATURE | {"conditions": list(conditions)}))
    return folder


def _confidence(folder: Path, text: str) -> float:
    result = analyze([Artifact(name="paste.txt", text=text, size=len(text))], load(folder), folder)
    return next((d.confidence for d in result.diagnoses if d.id == "probe"), 0.0)


def test_a_used_condition_tests_what_the_shared_one_does_with_the_signatures_strength(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"wheel-of-other-release": WHEEL_MISMATCH},
                     {"use": "wheel-of-other-release", "strength": 0.7})
    cond = load_signature(folder / "probe.yaml").conditions[0]
    assert (cond.id, cond.kind, cond.strength, cond.against) == ("wheel-of-other-release", "compare", 0.7, False)
    assert cond.description == WHEEL_MISMATCH["description"]
    assert _confidence(folder, OTHER) > 0 and _confidence(folder, SAME) == 0


def test_a_use_may_count_against_and_say_why_in_its_own_words(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"wheel-of-other-release": WHEEL_MISMATCH},
                     {"id": "libs", "description": "d", "strength": 0.6, "log": r"libamdhip64"},
                     {"use": "wheel-of-other-release", "strength": 0.9, "against": True, "description": "here: against"})
    cond = load_signature(folder / "probe.yaml").conditions[1]
    assert cond.against and cond.description == "here: against"
    assert 0 < _confidence(folder, OTHER) < _confidence(folder, SAME)


@pytest.mark.parametrize("condition, shared, message", [
    ({"use": "nowhere", "strength": 0.5}, {}, "does not define"),
    ({"use": "w", "strength": 0.5, "log": "x"}, {"w": WHEEL_MISMATCH}, "one or the other"),
    ({"use": "w", "strength": 0.5}, {"w": WHEEL_MISMATCH | {"strength": 0.3}}, "each signature gives"),
    ({"id": "c", "description": "d", "strength": 0.5, "not": {"use": "w", "strength": 0.5}}, {"w": WHEEL_MISMATCH},
     "gives only a description"),
    ({"use": "w", "strength": 0.5}, {"w": {"description": "d", "use": "v"}, "v": WHEEL_MISMATCH},
     "is only a use of 'v'"),
    ({"use": "w", "strength": 0.5}, {"w": {"description": "d", "not": {"use": "v"}},
                                     "v": {"description": "d", "any_of": [{"log": "x"}, {"use": "w"}]}},
     "a shared condition uses itself"),
])
def test_a_wrong_use_is_a_signature_error(tmp_path: Path, condition: dict, shared: dict, message: str) -> None:
    folder = _folder(tmp_path, shared, condition)
    with pytest.raises(SignatureError, match=message):
        load_signature(folder / "probe.yaml")
    assert any(message in problem for problem in load(folder).problems)


def test_a_part_of_a_combinator_may_use_a_shared_condition(tmp_path: Path) -> None:
    """One shared test in several combinators of a signature (``any_of: [{use: NAME}, ...]``) is written once; the
    part tests what the shared condition does, and lint counts the shared condition as used."""
    folder = _folder(tmp_path, {"wheel-of-other-release": WHEEL_MISMATCH},
                     {"id": "mismatch-beside-hip", "description": "d", "strength": 0.7,
                      "all_of": [{"log": r"libamdhip64"}, {"use": "wheel-of-other-release", "description": "here"}]},
                     {"id": "no-mismatch", "description": "d", "strength": 0.3, "against": True,
                      "not": {"use": "wheel-of-other-release"}})
    first, second = load_signature(folder / "probe.yaml").conditions
    assert [c.kind for c in first.children] == ["log", "compare"] and first.children[1].description == "here"
    assert second.children[0].kind == "compare"
    assert _confidence(folder, OTHER) > _confidence(folder, SAME) == 0
    assert check_shared(folder) == []


def test_lint_finds_a_malformed_or_unused_shared_condition(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {"w": WHEEL_MISMATCH, "unused": {"description": "d", "log": "x"},
                                "broken": {"description": "d", "lgo": "x"}},
                     {"use": "w", "strength": 0.5}, {"use": "broken", "strength": 0.5})
    problems = check_shared(folder)
    assert f"{SHARED}: unused: no signature uses it" in problems
    assert any(p.startswith(f"{SHARED}: broken:") for p in problems)
    assert not any(p.startswith(f"{SHARED}: w:") for p in problems)


def test_the_shipped_shared_conditions_are_each_used_and_well_formed() -> None:
    folder = data_dir("signatures")
    assert read_shared(folder)
    assert check_shared(folder) == []


@pytest.mark.parametrize("extra, message", [({"then": "bar"}, "then belongs to the shared condition"),
                                            ({"input": "text"}, "input belongs to the shared condition")])
def test_a_use_cannot_change_the_shared_test(tmp_path: Path, extra: dict, message: str) -> None:
    folder = _folder(tmp_path, {"w": {"description": "d", "log": "foo"}}, {"use": "w", "strength": 0.5} | extra)
    with pytest.raises(SignatureError, match=message):
        load_signature(folder / "probe.yaml")


def test_a_condition_id_twice_in_one_signature_is_an_error(tmp_path: Path) -> None:
    """Weights and reports name a condition by its signature and id: a shared condition used twice needs an id of its own."""
    folder = _folder(tmp_path, {"w": WHEEL_MISMATCH}, {"use": "w", "strength": 0.5},
                     {"use": "w", "strength": 0.4, "against": True})
    with pytest.raises(SignatureError, match="condition id w stands twice"):
        load_signature(folder / "probe.yaml")
    (folder / "probe.yaml").write_text(yaml.safe_dump(SIGNATURE | {"conditions": [
        {"use": "w", "strength": 0.5}, {"use": "w", "id": "w-against", "strength": 0.4, "against": True}]}))
    assert [c.id for c in load_signature(folder / "probe.yaml").conditions] == ["w", "w-against"]


def test_an_empty_shared_file_shares_nothing_and_a_broken_signature_file_does_not_stop_lint(tmp_path: Path) -> None:
    folder = _folder(tmp_path, {}, {"id": "c", "description": "d", "strength": 0.5, "log": "x"})
    (folder / SHARED).write_text("")
    (folder / "broken.yaml").write_text("id: broken\ntitle: [unclosed\n")
    assert read_shared(folder) == {}
    assert check_shared(folder) == []


def test_a_signature_read_again_for_its_examples_finds_its_shared_conditions(tmp_path: Path) -> None:
    """A cached signature reads its file again for its examples (load_signature without the shared table)."""
    folder = _folder(tmp_path, {"w": WHEEL_MISMATCH}, {"use": "w", "strength": 0.5})
    db = load(folder)
    probe = next(sig for sig in db.signatures if sig.id == "probe")
    assert probe.tests == SIGNATURE["tests"]
    assert load_signature(folder / "probe.yaml").conditions[0].kind == "compare"


def test_a_shared_condition_may_use_another_in_its_parts(tmp_path: Path) -> None:
    """A test several shared conditions need is written once too: a shared condition's part names it, and it answers
    what the same test written out answers; lint counts the inner one used through the outer one."""
    hip = {"description": "the HIP runtime is in the log", "log": r"libamdhip64"}
    (tmp_path / "nested").mkdir()
    (tmp_path / "written").mkdir()
    nested = _folder(tmp_path / "nested", {"wheel-of-other-release": WHEEL_MISMATCH, "hip-present": hip,
                                           "mismatch-beside-hip": {"description": "d", "all_of": [
                                               {"use": "hip-present"}, {"use": "wheel-of-other-release"}]}},
                     {"use": "mismatch-beside-hip", "strength": 0.7})
    written = _folder(tmp_path / "written", {"mismatch-beside-hip": {"description": "d", "all_of": [
                          {"log": r"libamdhip64"}, WHEEL_MISMATCH]}},
                      {"use": "mismatch-beside-hip", "strength": 0.7})
    cond = load_signature(nested / "probe.yaml").conditions[0]
    assert [c.kind for c in cond.children] == ["log", "compare"]
    for text in (OTHER, SAME, "torch    2.3.0+rocm6.0\n/opt/rocm-6.4.1/lib/libhsa-runtime64.so.1\n"):
        assert _confidence(nested, text) == _confidence(written, text)
    assert _confidence(nested, OTHER) > 0 == _confidence(nested, SAME)
    assert check_shared(nested) == []
