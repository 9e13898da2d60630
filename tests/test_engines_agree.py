"""The scanner's two engines give the same answers on every real output of the failure-wording fixtures.

Hyperscan reads a pattern exactly; the Python way finds a pattern's literals and leaves the rest to whoever asked, so a
needle or condition written narrower than the regex its parser or signature then applies (a ``^`` that an indented
paste defeats) answers differently under the two. Which engine runs depends on the machine (Hyperscan installed or
not) and, for a short input, on whether its database was built yet: an answer must not."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FIXTURES = Path(__file__).parent / "fixtures" / "failure-wordings"


def _answers(engine: str, monkeypatch: pytest.MonkeyPatch) -> dict[str, list[tuple[str, float]]]:
    """Each fixture's first three diagnoses (id, confidence) with every scanner built for ``engine``."""
    from triage.parsers import lines

    monkeypatch.setenv("TRIAGE_SCANNER", engine)
    for each in (lines._WHOLE, lines._HEAD):
        each.reset()
    folder = data_dir("signatures")
    db = load(folder)
    if engine == "hyperscan":  # built now: a short input would otherwise go the Python way until a few MB were read
        assert all(scanner.prepare() for scanner in lines.needle_scanners())
        for scanner in db.prefilters.scanners:
            scanner.prepare()
    out = {}
    for path in sorted(FIXTURES.glob("*.txt")):
        text = path.read_text(encoding="utf-8")
        result = analyze([Artifact(name=path.name, text=text, size=len(text))], db, folder)
        out[path.name] = [(d.id, round(d.confidence, 3)) for d in result.diagnoses[:3]]
    return out


def test_both_engines_answer_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("hyperscan")
    from triage.parsers import lines

    try:
        python = _answers("python", monkeypatch)
        fast = _answers("hyperscan", monkeypatch)
    finally:
        monkeypatch.delenv("TRIAGE_SCANNER")
        for each in (lines._WHOLE, lines._HEAD):
            each.reset()
    assert len(python) > 500
    differ = {name: (python[name], fast[name]) for name in python if python[name] != fast[name]}
    assert not differ, differ
