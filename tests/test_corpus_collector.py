"""A corpus run in this process changes how the garbage collector works only while its cases run."""

from __future__ import annotations

import gc

import pytest

from tests.conftest import CORPUS
from triage.corpus import analyze
from triage.corpus import run as corpus_run

CASES = sorted(p.parent for p in CORPUS.glob("*/expected.yaml"))


def test_cases_run_with_the_database_frozen_and_the_collector_restored_after(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()
    seen: list[tuple[int, int]] = []
    process = corpus_run.process

    def watched(ref: corpus_run.CaseRef, settings: corpus_run.Settings) -> tuple[dict, str]:
        seen.append((gc.get_freeze_count(), gc.get_threshold()[0]))
        return process(ref, settings)

    monkeypatch.setattr(corpus_run, "process", watched)
    table = analyze(CASES, jobs=1, cache=False, progress=False)
    assert table["error"].isna().all()
    assert len(seen) == len(CASES)
    assert all(frozen > 0 and young >= corpus_run._YOUNG_COLLECTION for frozen, young in seen)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_the_collector_is_restored_when_a_case_raises(monkeypatch: pytest.MonkeyPatch) -> None:
    before = gc.get_threshold()

    def broken(ref: corpus_run.CaseRef, settings: corpus_run.Settings) -> tuple[dict, str]:
        raise RuntimeError("stop")

    monkeypatch.setattr(corpus_run, "process", broken)
    with pytest.raises(RuntimeError):
        analyze(CASES[:2], jobs=1, cache=False, progress=False)
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0


def test_a_callers_own_freeze_is_kept() -> None:
    gc.freeze()
    try:
        analyze(CASES[:1], jobs=1, cache=False, progress=False)
        assert gc.get_freeze_count() > 0  # still frozen (less what the run freed)
    finally:
        gc.unfreeze()
