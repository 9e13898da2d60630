"""The per-user cache: the same database and reports as without it, rebuilt when a signature changes."""

from __future__ import annotations

import shutil

from tests.conftest import CORPUS, ROOT
from triage.match import load
from triage.pipeline import triage
from triage.report import build


def test_database_cache_is_used_and_invalidated(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "signatures"
    shutil.copytree(ROOT / "signatures", folder)
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    first = load(folder)
    assert len(list((tmp_path / "cache" / "signatures").glob("*.pickle"))) == 1
    second = load(folder)
    assert [s.id for s in second.signatures] == [s.id for s in first.signatures]
    assert [(s.patterns, s.by_hyperscan) for s in second.prefilters.groups] == [(s.patterns, s.by_hyperscan) for s in first.prefilters.groups]
    target = folder / "hip-no-code-object-for-gpu.yaml"
    target.write_text(target.read_text().replace("title: No code object", "title: Changed, no code object"))
    third = load(folder)
    assert next(s for s in third.signatures if s.id == "hip-no-code-object-for-gpu").title.startswith("Changed,")


def test_same_report_with_and_without_cache(monkeypatch, tmp_path) -> None:
    case = str(CORPUS / "seed-000-blit-kernels-device-libs-missing")
    monkeypatch.setenv("TRIAGE_CACHE", "0")
    plain = build(triage([case]))
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    cold, warm = build(triage([case])), build(triage([case]))
    assert plain == cold == warm
