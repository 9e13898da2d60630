"""Similar real cases in reports: the labelled cases of corpus/realworld nearest to a new one."""

from __future__ import annotations

import json

import jsonschema

from tests.conftest import CORPUS, ROOT
from triage.corpus.labels import case_folders, read_label
from triage.match.similar import INDEX, MINIMUM, features, load_index, nearest
from triage.pipeline import triage
from triage.report import render
from triage.resources import data_dir

REALWORLD = ROOT / "corpus" / "realworld"


def test_every_labelled_case_is_in_the_shipped_index() -> None:
    """The index is rebuilt with tools/build_similar_index.py when the corpus grows."""
    shipped = {c["case"] for c in json.loads((data_dir("signatures") / INDEX).read_text())["cases"]}
    assert shipped == {f.name for f in case_folders(REALWORLD)}


def test_a_labelled_case_finds_itself_first() -> None:
    folder = REALWORLD / "rocm-legacy-2061-koboldai-nobinaryforgpu-rx6600"
    result = triage([str(folder)])
    # Another case whose key lines are the same error reads the same (a tie at 1.0, listed by name): itself is
    # among the cases at 1.0, with nothing less alike ahead of it.
    mine = [s for s in result.similar if s.case == folder.name]
    assert mine and mine[0].score == 1.0
    assert all(s.score == 1.0 for s in result.similar[:result.similar.index(mine[0])])
    label = read_label(folder)
    assert (mine[0].klass, mine[0].source, mine[0].conclusion) == (label.klass, label.source, label.conclusion)


def test_similar_cases_are_few_ranked_and_above_the_minimum() -> None:
    result = triage([str(CORPUS / "seed-000-blit-kernels-device-libs-missing")])
    assert 1 <= len(result.similar) <= 3
    assert [s.score for s in result.similar] == sorted((s.score for s in result.similar), reverse=True)
    assert all(s.score >= MINIMUM for s in result.similar)
    assert result.similar[0].klass == "device-libs-missing"


def test_nothing_in_common_lists_nothing() -> None:
    index = load_index(data_dir("signatures"))
    assert nearest(frozenset({"t:nothing like any case"}), index) == []
    assert nearest(frozenset(), index) == []


def test_reports_show_them_apart_from_the_diagnosis() -> None:
    result = triage([str(CORPUS / "seed-000-blit-kernels-device-libs-missing")])
    report = json.loads(render(result, "json"))
    jsonschema.validate(report, json.loads((data_dir("reports") / "report.schema.json").read_text()))
    assert report["similar"][0]["source"].startswith("https://")
    markdown = render(result, "md")
    assert "### Similar real cases" in markdown and "not part of the diagnosis" in markdown
    assert markdown.index("### Similar real cases") > markdown.index(result.top.title[:30])
    assert 'id="similar"' in render(result, "html")
    assert "Similar real cases" in render(result, "text")


def test_features_are_templates_signatures_and_class() -> None:
    result = triage([str(CORPUS / "seed-003-getdevicekernel-null-gfx906-only-kernel")])
    feats = features(result.case, result.diagnoses)
    assert "s:hip-no-code-object-for-gpu" in feats and "c:no-code-object" in feats
    assert any(f.startswith("t:") and "<hex>" in f for f in feats)


def test_the_index_read_back_from_the_cache_ranks_as_one_built_from_the_file(tmp_path, monkeypatch) -> None:
    """The cached form (with its per-feature case lists) answers as the JSON file does, and a changed file is
    read again, not served from the cache."""
    from triage.match import similar

    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    shipped = data_dir("signatures") / INDEX
    copy = tmp_path / INDEX
    copy.write_text(shipped.read_text(encoding="utf-8"), encoding="utf-8")
    built = similar._build(copy)
    similar._load.cache_clear()
    load_index(tmp_path)  # builds and keeps it
    similar._load.cache_clear()
    kept = load_index(tmp_path)
    assert built is not None and kept is not None and list((tmp_path / "cache" / "similar").iterdir())
    answers = [nearest(feats | {"t:a line no case has"}, built) for *_, feats in built.cases[::10]]
    assert sum(map(bool, answers)) > len(answers) // 2
    assert [nearest(feats | {"t:a line no case has"}, kept) for *_, feats in built.cases[::10]] == answers
    data = json.loads(copy.read_text(encoding="utf-8"))
    data["cases"] = data["cases"][:1]
    copy.write_text(json.dumps(data), encoding="utf-8")
    similar._load.cache_clear()
    changed = load_index(tmp_path)
    assert changed is not None and len(changed.cases) == 1
    similar._load.cache_clear()


def test_the_nearest_are_those_of_the_weighted_jaccard_over_every_case() -> None:
    """Only the cases sharing a feature are scored, and a case whose sums cannot reach the minimum is not summed
    again: the answer is still the definition's, worked out over every case of the index."""
    index = load_index(data_dir("signatures"))
    assert index is not None

    def weight(feature: str) -> float:
        return index.weight.get(feature, index.heaviest)

    def by_definition(feats: frozenset[str], shown: int, minimum: float) -> list[tuple[str, float]]:
        scored = []
        for (name, *_, theirs), total in zip(index.cases, index.totals):
            shared = sum(weight(f) for f in feats & theirs)
            if shared and (score := shared / (sum(map(weight, feats)) + total - shared)) >= minimum:
                scored.append((-round(score, 2), name))
        return [(name, -score) for score, name in sorted(scored)[:shown]]

    for number in range(0, len(index.cases), 7):
        theirs = sorted(index.cases[number][4])
        feats = frozenset(theirs[::2] + ["t:a template no case has"])
        for shown, minimum in ((3, MINIMUM), (10, 0.0), (5, 0.4)):
            got = [(s.case, s.score) for s in nearest(feats, index, shown, minimum)]
            assert got == by_definition(feats, shown, minimum), index.cases[number][0]
