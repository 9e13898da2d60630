"""The day of the crash (the fact ``date``): each timestamp form (parsers/timestamps.py), which one wins, the
collect manifest's clock (parsers/manifest.py), and the corpus column, where a label's date wins."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import artifact, shared
from triage.corpus import analyze
from triage.model import Where
from triage.parsers import parse, timestamps
from triage.parsers.lines import HEAD_LINES


def _date(*texts: str) -> str | None:
    return parse([artifact(t, f"file{i}.txt") for i, t in enumerate(texts)]).value("date")


@pytest.mark.parametrize("line,day", [
    # real lines (../shared/realworld)
    ('time=2024-05-10T22:52:42.838-04:00 level=ERROR source=sched.go:339 msg="error loading llama server" '
     'error="llama runner process has terminated: exit status 0xc0000005 "', "2024-05-10"),
    ("2025-05-07 23:19:25.512296080 [E:onnxruntime:Default, provider_bridge_ort.cc:2036 TryGetProviderInfo_CUDA]",
     "2025-05-07"),
    ("[Mon Sep 25 20:37:11 2023] python3[15122]: segfault at 20 ip 00007f44bdeb40a7 sp 00007f417aa34010 error 4 in "
     "libamdhip64.so[7f44bde00000+3f3000] likely on CPU 10 (core 2, socket 0)", "2023-09-25"),
    ("Date/Time: 2017-08-30, 08:04:27", "2017-08-30"),
    ('[GIN] 2024/05/10 - 22:52:42 | 500 |    2.7650401s |       127.0.0.1 | POST     "/api/chat"', "2024-05-10"),
    # the other forms
    ("2026-08-12T10:11:12 app: started", "2026-08-12"),
    ("2026-08-12 10:11:12 app: started", "2026-08-12"),
    ("[Tue Dec  1 07:52:48 2026] amdgpu 0000:03:00.0: amdgpu: GPU reset begin!", "2026-12-01"),
    ("Tue Dec  1 07:52:48 UTC 2026", "2026-12-01"),
    ("2026-12-01T07:52:48+0100 host kernel: amdgpu: ring gfx_0.0.0 timeout", "2026-12-01"),  # journalctl -o short-iso
    ("Tue 2026-12-01 07:52:48 CET host kernel: amdgpu: ring gfx_0.0.0 timeout", "2026-12-01"),  # -o short-full
    ("2024/02/11 13:36:41 images.go:806: INFO total blobs: 5", "2024-02-11"),
])
def test_each_form(line: str, day: str) -> None:
    assert _date(line + "\n") == day


@pytest.mark.parametrize("line", [
    "- **Driver**: `32.0.31036.15` — AMD Software: PRO Edition 26.Q3 (released 2026-08-12).",  # a date, no clock
    "Blender 4.2.0 (hash a51f293548ad built 2024-07-16 06:28:42)",  # when the software was built
    "  BUILD_DATE: 2023/09/13 04:57",  # amd-smi's VBIOS
    "crw-rw----` 1 root render 238, 0 Sep  2 15:45 /dev/kfd",  # no year
    "Dec 01 07:52:48 host kernel: amdgpu: ring gfx_0.0.0 timeout",  # the journal's default: no year
    "[ 2680.353271] Hardware name: System manufacturer System Product Name/ROG STRIX X570-F GAMING, BIOS 4204 02/24/2022",
    "2026-02-30 10:11:12 not a day",
    "2026-13-01 10:11:12 not a month",
    "1970-01-01 00:00:00 an unset clock",
    "2026-08-12 25:11:12 not an hour",
])
def test_dates_that_are_not_the_crash_clock(line: str) -> None:
    assert _date(line + "\n") is None


def test_the_failure_line_wins_over_an_earlier_line() -> None:
    log = "2024-05-08 09:00:00 server listening on 127.0.0.1:11434\n2024-05-10 22:52:42 level=ERROR msg=\"crash\"\n"
    assert _date(log) == "2024-05-10"


def test_the_first_time_wins_when_no_line_tells_of_a_failure() -> None:
    assert _date("2024-05-08 09:00:00 started\n2024-05-10 22:52:42 still running\n") == "2024-05-08"


def test_deep_in_a_long_log_only_the_failure_line_is_read() -> None:
    """A log's clock shows on its first lines; past them only a failure's own line is looked at."""
    trace = ["hipMemcpyAsync ( 0x7f00, 64 )"] * HEAD_LINES
    assert _date("\n".join(trace + ["2026-08-12 10:11:12 app: started"])) is None
    assert _date("\n".join(trace + ["2026-08-12 10:11:12 app: started", "2026-08-13 09:00:00 fatal error: lost"])) == "2026-08-13"


def test_a_failure_line_in_a_later_file_wins() -> None:
    assert _date("2024-05-08 09:00:00 started\n", "[Fri May 10 22:52:42 2024] app[7]: segfault at 0 ip 1 sp 2 error 4\n") \
        == "2024-05-10"


def test_the_docstring_examples() -> None:
    examples = [line.strip().split("  =>  ") for line in timestamps.__doc__.splitlines() if "  =>  " in line]
    assert len(examples) >= 5
    for line, day in examples:
        assert _date(line + "\n") == day, line


@pytest.mark.parametrize("folder,day", [
    ("milabench-335-aperture-violation-brax-jax", "2025-02-25"),
    ("sdnext-2252-sdxl-segfault-libamdhip64-repeated", "2023-09-25"),
])
def test_real_cases_get_their_day(folder: str, day: str) -> None:
    assert _date(shared("realworld", folder, "input.txt").read_text(encoding="utf-8")) == day


MANIFEST = """{
  "format": "hip-triage-collect",
  "created": "2026-08-13T00:05:02Z",
  "run": {
    "started": "2026-08-12T23:59:12Z",
    "ended": "exit code 139 (killed by signal 11, SIGSEGV)",
    "exit_status": 139,
    "signal": "SEGV",
    "stopped_by_collect": null
  }
}
"""


def test_the_manifest_run_start_dates_a_bundle() -> None:
    case = parse([artifact("2026-08-14 10:00:00 error: a later log line\n", "stderr.txt"),
                  artifact(MANIFEST, "manifest.json")])
    best = case.fact("date")
    assert best.value == "2026-08-12" and best.where == Where("manifest.json", 5)
    assert best.text == '"started": "2026-08-12T23:59:12Z",'


def test_a_manifest_without_a_run_is_dated_when_it_was_made() -> None:
    manifest = '{\n  "format": "hip-triage-collect",\n  "created": "2026-08-13T00:05:02Z",\n  "run": null\n}\n'
    assert _date(manifest) == "2026-08-13"
    assert _date(manifest.replace("2026-08-13T00:05:02Z", "yesterday")) is None


def _case(root: Path, name: str, text: str, label: str | None = None) -> None:
    folder = root / name
    folder.mkdir()
    (folder / "input.txt").write_text(text)
    if label is not None:
        (folder / "expected.yaml").write_text(label)


@pytest.mark.parametrize("cache", [False, True])
def test_corpus_date_is_the_label_s_else_the_input_s(tmp_path: Path, cache: bool) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    stamped = "2024-05-10T22:52:42.838-04:00 level=ERROR msg=\"llama runner process has terminated\"\n"
    _case(corpus, "labelled", stamped, "class: unknown\ndate: 2026-01-02\n")
    _case(corpus, "labelled-undated", stamped, "class: unknown\n")
    _case(corpus, "unlabelled", stamped)
    _case(corpus, "undated", "Segmentation fault (core dumped)\n")
    store = tmp_path / "cache" if cache else False
    for _ in range(2 if cache else 1):  # with a cache, the second run reads the cached rows
        table = analyze([corpus], jobs=1, cache=store, progress=False).set_index("case")
        assert table["date"].dtype == "datetime64[ns]"
        assert table.loc["labelled", "date"] == pd.Timestamp("2026-01-02")
        assert table.loc["labelled-undated", "date"] == pd.Timestamp("2024-05-10")
        assert table.loc["unlabelled", "date"] == pd.Timestamp("2024-05-10")
        assert pd.isna(table.loc["undated", "date"])
        assert table.loc["labelled", "expected_class"] == "unknown"
    if cache:
        assert table.attrs["cache"] == {"hit": 4}
