"""The Markdown report as a GitHub comment: within the size limit whatever the input, clean GFM, no leaks
with --redact; and every format byte-identical between runs and naming the tool and database versions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.test_reports import MARKER, _strip_markdown_code
from triage import __version__
from triage.pipeline import triage
from triage.report import _environment, build, render
from triage.report.github import LIMIT, SHORTENED, _cut, fit_comment, size

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
SEED = CASES[0]
NASTY = "|x| `a` ``b`` ~~~~~~~~ <script>alert(1)</script> </details> <!-- hip-triage-report --> *e* [l](javascript:x) &lt;"


def _assert_clean_gfm(md: str) -> None:
    assert md.startswith(MARKER + "\n")
    assert size(md) < LIMIT
    prose = _strip_markdown_code(md)  # fences and code spans balanced, or this fails
    assert "<script" not in prose and "](javascript:" not in prose
    assert prose.count("<details>") == prose.count("</details>")
    assert md.count(MARKER) == 1 or MARKER not in prose.split("\n", 1)[1]


@pytest.fixture(scope="module")
def huge(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real seed log among long hostile lines, and a backtrace of a thousand frames with long hostile names."""
    folder = tmp_path_factory.mktemp("huge")
    for path in SEED.iterdir():
        if path.name != "expected.yaml":
            (folder / path.name).write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    lines = [f":1:rocdevice.cpp    :730 :  Couldn't create blit kernels! /home/alice/{i} {NASTY} {'Q' * 3000}"
             for i in range(100)]
    frames = [f"#{i}  0x00007f00{i:08x} in ns::{'Z' * 300}_{i} (a=1) at /home/alice/src/x{NASTY.replace(' ', '_')}"
              f".cpp:{i}" for i in range(1200)]
    (folder / "hip.log").write_text((SEED / "hip.log").read_text(encoding="utf-8") + "\n".join(lines) + "\n",
                                    encoding="utf-8")
    (folder / "gdb.txt").write_text("alice@alice-desktop:~$ gdb ./strata\nProgram received signal SIGSEGV\n"
                                    + "\n".join(frames) + "\n", encoding="utf-8")
    return folder


def test_huge_hostile_input_fits_one_comment(huge: Path) -> None:
    result = triage([str(huge)])
    assert result.top.klass == "device-libs-missing"
    assert sum(a.size for a in result.case.artifacts) > 10 * LIMIT and len(render(result, "html")) > 10 * LIMIT
    for redact in (False, True):
        md = render(result, "md", redact=redact)
        _assert_clean_gfm(md)
        assert SHORTENED.split(":")[0] in md.replace("\\", "")
        assert "## `device-libs-missing`" in md
        assert f"hip-triage {__version__}" in md and result.versions["signatures"] in md
        if redact:
            assert "alice" not in md.lower()
    assert "alice" in render(result, "md").lower()


def test_cut_is_the_last_resort_and_still_renders() -> None:
    body = MARKER + "\n## x\n\n<details><summary>s</summary>\n\n~~~~text\n" + ("line | `x` <b>\n" * 20_000)
    md = fit_comment(lambda report, lines: body, {"warnings": [], "stacks": [],
                                                  "versions": {"tool": "9", "signatures": "2026.1"}}, {})
    assert size(md) < LIMIT and md.startswith(MARKER)
    _strip_markdown_code(md)
    assert md.count("<details>") == md.count("</details>") == 1
    assert "cut to fit GitHub's comment size limit" in md and "signatures 2026.1" in md
    wide = _cut("😀" * 70_000, {})
    assert size(wide) < LIMIT


def test_user_text_in_prose_is_escaped_for_gfm() -> None:
    result = triage([str(SEED)])
    report = build(result)
    report["diagnoses"][0]["title"] = "pipe | star * tilde ~~x~~ amp &amp; <img src=x> [a](b) back\\slash"
    report["diagnoses"][0]["root_cause"] = "odd ` backtick " + NASTY
    report["ask_for"] = ["a `code | span` then | <b>bold</b>"]
    md = _environment(None).get_template("report.md.j2").render(report=report, case_lines={})
    _assert_clean_gfm(md)
    heading = md.split("\n")[1]
    assert r"pipe \| star \* tilde \~\~x\~\~ amp &amp;amp; &lt;img src=x&gt; \[a](b) back\\slash" in heading
    assert "odd \\` backtick" in md
    assert "`code | span` then \\| &lt;b&gt;bold&lt;/b&gt;" in md


def test_long_evidence_is_clipped_inline_and_whole_in_details(tmp_path: Path) -> None:
    log = (SEED / "hip.log").read_text(encoding="utf-8").replace(
        "Couldn't create blit kernels!", "Couldn't create blit kernels! " + "W" * 1500)
    (tmp_path / "hip.log").write_text(log, encoding="utf-8")
    result = triage([str(tmp_path / "hip.log")])
    line = next(e.text for e in result.top.evidence if "W" * 1500 in e.text)
    md = render(result, "md")
    summary, details = md.split("<details>", 1)
    assert line[:300] + f"… [{len(line) - 300} more characters]" in summary and line[:301] not in summary
    assert line in details


# --- deterministic output, and versions in every report -------------------------------------------------------

_RENDER_ALL = """
import sys
from triage.pipeline import triage
from triage.report import render
for case in sys.argv[1:]:
    result = triage([case])
    for fmt in ("json", "md", "html", "text"):
        sys.stdout.write(render(result, fmt) + "\\0")
"""


def test_reports_are_byte_identical_between_runs() -> None:
    outputs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        run = subprocess.run([sys.executable, "-c", _RENDER_ALL, *map(str, CASES)], capture_output=True,
                             env=env, timeout=180)
        assert run.returncode == 0, run.stderr.decode()
        outputs.append(run.stdout)
    assert outputs[0] == outputs[1]
    assert outputs[0].count(b"\0") == 4 * len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_format_names_tool_and_database_versions(case: Path) -> None:
    result = triage([str(case)])
    versions = result.versions
    assert versions["tool"] == __version__ and re.fullmatch(r"[\w.+-]+", versions["signatures"])
    assert json.loads(render(result, "json"))["versions"] == versions
    for fmt in ("md", "html", "text"):
        out = render(result, fmt)
        assert f"hip-triage {versions['tool']}" in out, fmt
        assert f"signatures {versions['signatures']}" in out, fmt
