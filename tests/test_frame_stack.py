"""A frame condition can be limited to the crashing thread's stack (``stack: crashing``): a frame another thread
waits in is no frame of the crash."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

HERE = Path(__file__).resolve().parent
# coredumpctl info on Fedora 40: rocm-clinfo crashed in hsa_init (thread 2050183, the signalled one) while a Mesa
# thread (2050185) waited in util_queue_thread_func.
FEDORA = (HERE / "fixtures" / "coredump" / "fedora40-rocm-clinfo-segv.txt").read_text(encoding="utf-8")
PROBE = {
    "id": "probe", "title": "A probe signature for one frame condition", "class": "runtime-crash",
    "status": "experimental", "version": 1, "root_cause": "x", "workarounds": [], "ask_for": [], "references": [],
    "tests": {"match": [], "no_match": []},
}


def _holds(tmp_path: Path, frame: dict, text: str = FEDORA) -> bool:
    """Whether the probe signature's one frame condition holds on ``text``."""
    folder = tmp_path / "db"
    folder.mkdir(exist_ok=True)
    shutil.copy(data_dir("signatures") / "_database.yaml", folder)
    condition = {"id": "c", "description": "d", "strength": 0.6, "frame": frame}
    (folder / "probe.yaml").write_text(yaml.safe_dump(PROBE | {"conditions": [condition]}))
    result = analyze([Artifact(name="coredump.txt", text=text, size=len(text))], load(folder), folder)
    return any(d.id == "probe" and d.confidence > 0 for d in result.diagnoses)


@pytest.mark.parametrize(("frame", "holds"), [
    ({"symbol": "util_queue_thread_func"}, True),  # any stack, by default
    ({"symbol": "util_queue_thread_func", "stack": "any"}, True),
    ({"symbol": "util_queue_thread_func", "stack": "crashing"}, False),  # the waiting thread's frame
    ({"symbol": "hsa_init", "stack": "crashing"}, True),
    ({"module": "libhsa-runtime64", "stack": "crashing", "within": 2}, True),
    ({"module": "pipe_radeonsi", "stack": "crashing"}, False),
])
def test_a_frame_condition_reads_the_stacks_it_is_given(tmp_path: Path, frame: dict, holds: bool) -> None:
    assert _holds(tmp_path, frame) is holds


def test_without_a_crashing_stack_a_crashing_frame_condition_does_not_hold(tmp_path: Path) -> None:
    # the same threads with no signal: a dump of a process that did not crash marks no stack as the crash's
    text = FEDORA.replace("        Signal: 11 (SEGV)\n", "")
    assert _holds(tmp_path, {"symbol": "hsa_init"}, text)
    assert not _holds(tmp_path, {"symbol": "hsa_init", "stack": "crashing"}, text)


def test_an_unknown_stack_choice_is_named(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    _holds(tmp_path, {"symbol": "hsa_init"})  # writes the probe database
    condition = {"id": "c", "description": "d", "strength": 0.6, "frame": {"symbol": "hsa_init", "stack": "top"}}
    (folder / "probe.yaml").write_text(yaml.safe_dump(PROBE | {"conditions": [condition]}))
    result = analyze([Artifact(name="coredump.txt", text=FEDORA, size=len(FEDORA))], load(folder), folder)
    assert result.top.klass == "unknown"
    assert any("frame stack 'top' is not one of any, crashing" in w for w in result.case.warnings)
