"""Long hostile lines through every parser: the triage must finish within the analysis's time budget
and give a report.

A regex call cannot be stopped by the deadline (it is checked between lines and parsers), so a
pattern that backtracks over a long run of spaces, tabs or dots is a stall that one paste can
trigger. Each line below has the shape that made one of the parsers' regexes take 0.05-0.7 s to
fail (bench/bench_hostile_lines.py prints the per-pattern figures); before those were fixed, the
Visual Studio frames here alone stopped the parsing of this file at its budget. The lines are kept
under ``MAX_LINE`` so that the parsers read them, and each carries words that choose it for its
parser (its needles). No time is asserted here: the budget's own warning says whether parsing was
cut short.
"""

from __future__ import annotations

import json

import pytest

from triage.parsers.lines import MAX_LINE
from triage.pipeline import Result, triage

RUN = MAX_LINE - 200  # characters of one filler, leaving room for the words around it
# lines of each shape: 60 frames of either Visual Studio shape once took 45-70 s to parse, past a file's
# budget (parsers.ARTIFACT_BUDGET_S, 20 s); 60 runtime paths took 50 s
COPIES = 40

# shape -> a line that once took a parser's regex a long time to fail
SHAPES = {
    "runtime path (envfacts)": "HIP runtime loaded from /x" + "/" * RUN + " libamdhip64.so missing",
    "runtime path, dotted (envfacts)": "using ./" + "./" * (RUN // 2) + "\tamdhip64",
    "Visual Studio frame (windows)": "> x.dll!f" + " " * RUN + "(",
    "Visual Studio frame, Line (windows)": "x.dll!hipMalloc" + " " * RUN + "Line 1 (",
    "AT&T operand (fault)": "Segmentation fault: invalid instruction mov 0x8(%rax),%rbx at " + "0" * RUN + "\x01",
    "quoted word (lines)": "I think my GPU crashed because of this " + "-" * RUN + "(",
    "template word (templates)": "error: hipMalloc failed a:" + "a" * RUN + "!",
    "machine mark dots (lines)": "." * RUN + " my GPU kernel crashed and I do not know why it did",
    "kernel clock (lines)": "2024-01-01T0" + "0" * RUN + " my GPU kernel crashed",
    "gdb frame tail (backtrace)": "#0  0x00007f0000001000 in hipMalloc ()" + " " * RUN + "(",
    "gdb frame tabs (backtrace)": "#1  0x00007f0000001000 in f () from" + "\t" * RUN + "!",
}


def _hostile_log() -> str:
    lines = ["hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"]
    for line in SHAPES.values():
        assert len(line) <= MAX_LINE, "a line the parsers would pass over tests nothing"
        lines += [line] * COPIES
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Result:
    path = tmp_path_factory.mktemp("hostile") / "hostile.log"
    path.write_text(_hostile_log(), encoding="utf-8")
    return triage([str(path)])


def test_every_parser_finishes_on_long_hostile_lines(result: Result) -> None:
    warnings = result.case.warnings
    assert not [w for w in warnings if "time budget" in w], warnings
    assert not [w for w in warnings if "internal error" in w], warnings


def test_the_report_is_made_and_reads_the_real_line(result: Result) -> None:
    from triage.report import render

    report = json.loads(render(result, "json"))
    cited = [d["id"] for d in report["diagnoses"] if "hipErrorNoBinaryForGpu" in json.dumps(d["evidence"])]
    assert cited, "the one real error line among the hostile ones was not diagnosed"
