"""The shared line prefilter: which lines a parser reads must be exactly the lines its patterns could act on."""

from __future__ import annotations

import pickle
import re

from triage.model import Diagnosis
from triage.parsers.lines import Walk, lines_with, records


def test_lines_with_finds_each_line_once_in_order() -> None:
    lines = ["#0 a", "plain", "x #1 b #2", "", "#3"]
    assert lines_with(lines, (re.compile(r"#\d"),)) == [0, 2, 4]


def test_a_needle_may_anchor_at_the_start_of_a_line() -> None:
    lines = ["Thread 1 (x)", "the Thread 2", "  Thread 3"]
    assert lines_with(lines, ("\nThread ",)) == [0]
    assert lines_with(lines, (re.compile(r"\n[^\S\n]*Thread "),)) == [0, 2]


def test_lowered_needles_take_what_ignorecase_takes() -> None:
    lines = ["EXCEPTION CODE", "exceptıon", "nothing", "ExcEption"]
    found = lines_with(lines, (), lowered=("exception",))
    assert found == [0, 1, 3]
    assert all(i in found for i, line in enumerate(lines) if re.search("exception", line, re.I))


def test_lowered_needles_casefold_without_losing_count_of_lines() -> None:
    lines = ["straße", "GPU: x", "ß ß", "gpu"]
    assert lines_with(lines, (), lowered=("gpu",)) == [1, 3]
    assert lines_with(lines, (), lowered=("ss",)) == [0, 2]


def test_records_give_the_line_of_each_match() -> None:
    lines = ["a :1: x", "b", " :2: y"]
    assert [(i, m.group()) for i, m in records(lines, re.compile(r":(?<=\s:)\d:"))] == [(0, ":1:"), (2, ":2:")]


def test_walk_reads_the_next_line_when_asked() -> None:
    walk = Walk([1, 5], 8)
    seen = []
    for index in walk:
        seen.append(index)
        if index in (1, 2, 5):
            walk.follow()
    assert seen == [1, 2, 3, 5, 6]


def test_a_pending_diagnosis_fills_its_texts_once_and_pickles() -> None:
    made = []

    def title() -> str:
        made.append("title")
        return "T"

    diagnosis = Diagnosis.pending({"title": title, "root_cause": lambda: "R"}, id="x", klass="k", confidence=0.5)
    assert made == [] and diagnosis.evidence == [] and diagnosis.fix == ""
    assert diagnosis.title == "T" and diagnosis.title == "T" and made == ["title"]
    copy = pickle.loads(pickle.dumps(diagnosis))
    assert copy == diagnosis and copy.root_cause == "R"
