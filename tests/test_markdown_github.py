"""The Markdown report as a GitHub comment: within the size limit whatever the input, clean GFM, no leaks
with --redact; and every format byte-identical between runs and naming the tool and database versions."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from tests.test_reports import MARKER, _strip_markdown_code
from triage import __version__
from triage.pipeline import triage
from triage.report import _environment, build, render
from triage.report.github import LIMIT, SHORTENED, _cut, code_span, escape, fenced, fit_comment, inline, size, visible

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
SEED = CASES[0]
NASTY = "|x| `a` ``b`` ~~~~~~~~ <script>alert(1)</script> </details> <!-- hip-triage-report --> *e* [l](javascript:x) &lt;"


def _assert_clean_gfm(md: str) -> None:
    assert md.startswith(MARKER + "\n")
    assert size(md) < LIMIT
    prose = _strip_markdown_code(md)  # fences and code spans balanced, or this fails
    unescaped = re.sub(r"\\.", "", prose)  # what backslash escapes leave live
    assert "<script" not in prose and "](javascript:" not in unescaped
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
    report["diagnoses"][0]["root_cause"] = NASTY + " odd ` backtick"  # backticks pair as in CommonMark; the last is alone
    report["ask_for"] = ["a `code | span` then | <b>bold</b>"]
    md = _environment(None).get_template("report.md.j2").render(report=report, case_lines={})
    _assert_clean_gfm(md)
    heading = md.split("\n")[1]
    assert r"pipe \| star \* tilde \~\~x\~\~ amp &amp;amp; &lt;img src=x&gt; \[a\](b) back\\slash" in heading
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


# --- a hostile log, rendered as GitHub would: nothing live ----------------------------------------------------

HOSTILE_MD = ["``` `` ` ```` <img src=https://x.example/p.png>", "[a](https://x.example/l)", "https://x.example/u",
              "www.x.example", "@someone", "\u202eexe.txt", "<https://x.example/al>", "a@x.example",
              "![i](https://x.example/i.png)", "$\\href{https://x.example}{m}$", "</details>", "<b onclick=x>b</b>",
              "&lt;i&gt;", "| a | b |", "`@someone` ``<img src=https://x.example/q.png>``"]
HOSTILE_PROSE = " ".join(HOSTILE_MD)
_ALLOWED_TAGS = {"h2", "h3", "p", "sub", "br", "strong", "em", "code", "pre", "ul", "ol", "li", "details", "summary",
                 "a"}
_ZWJ = "\u200d"


class _Rendered(HTMLParser):
    """The tags of rendered Markdown, the text outside code (where GitHub links and mentions), and inside it."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.prose: list[str] = []
        self.code: list[str] = []
        self._depth = 0

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._depth += tag in ("code", "pre")

    def handle_endtag(self, tag):
        self._depth -= tag in ("code", "pre")

    def handle_data(self, data):
        (self.code if self._depth else self.prose).append(data)


def _github_view(md: str) -> _Rendered:
    from markdown_it import MarkdownIt

    html = MarkdownIt("commonmark").render(md)  # CommonMark, raw HTML passed through (as GitHub, before its sanitizer)
    assert "\u202e" not in html
    parsed = _Rendered()
    parsed.feed(html)
    parsed.close()
    return parsed


def _assert_inert(md: str, shipped_links: set[str] = frozenset()) -> _Rendered:
    view = _github_view(md)
    for tag, attrs in view.tags:
        assert tag in _ALLOWED_TAGS, f"live <{tag}> from the log"
        for name, value in attrs.items():
            assert (tag, name) in {("a", "href"), ("code", "class"), ("ol", "start")}, f"{name}= on <{tag}>"
            if name == "href":
                assert value in shipped_links, f"a link built from the log's text: {value}"
            if name == "class":
                assert value in ("language-sh", "language-text"), value
    prose = "".join(view.prose)
    assert not re.search(r"@someone", prose), "a bare @mention in the prose"
    assert not re.search(r"https?://|www\.|\w@x\.example", prose), "an address GitHub would autolink"
    return view


def _hostile_log(folder: Path) -> Path:
    lines = [":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1"]
    lines += [f":1:rocdevice.cpp    :730 :  Couldn't create blit kernels! {piece}" for piece in HOSTILE_MD]
    lines += [":1:rocvirtual.cpp   :1725:  Could not create BlitManager! @someone \u202e `x`"]
    path = folder / "@someone `x` \u202e.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_hostile_log_renders_inert_as_a_github_comment(tmp_path: Path) -> None:
    result = triage([str(_hostile_log(tmp_path))])
    assert result.top.klass != "unknown", "the hostile file must still look like a HIP log"
    report = build(result)
    links = {c["source"] for c in report["similar"]}
    view = _assert_inert(render(result, "md"), links)
    code = "".join(view.code)
    assert report["diagnoses"][0]["evidence"]
    for e in report["diagnoses"][0]["evidence"]:  # shown, as code, as written (bidi controls as escapes)
        assert visible(e["text"]) in code, e["text"]
    assert visible(HOSTILE_MD[0]) in code and "@someone `x` \\u202e.log" in code
    # and every prose part of the comment, filled with the same text
    top = report["diagnoses"][0]
    top["title"] = top["root_cause"] = top["fix"] = HOSTILE_PROSE + "\n\n1. " + HOSTILE_PROSE + "\n\n# " + HOSTILE_PROSE
    for w in top["workarounds"]:
        w["title"] = w["note"] = w["risk"] = HOSTILE_PROSE
    for e in top["evidence"]:
        e["condition"] = HOSTILE_PROSE
    report["ask_for"] = [HOSTILE_PROSE, "- " + HOSTILE_PROSE]
    report["warnings"] = [HOSTILE_PROSE]
    report["findings"] = [{"kind": "x", "artifact": "a", "line": 1, "summary": HOSTILE_PROSE, "details": [HOSTILE_PROSE]}]
    report["not_collected"] = [{"item": HOSTILE_PROSE, "why": HOSTILE_PROSE, "artifact": "a", "line": 1}]
    report["facts"]["hip_runtime"] = HOSTILE_PROSE
    md = _environment(None).get_template("report.md.j2").render(report=report, case_lines={})
    view = _assert_inert(md, links)
    text = "".join(view.prose + view.code).replace(_ZWJ, "")  # backticks pair as they do in CommonMark
    assert "<img src=https://x.example/p.png>" in text and "[a](https://x.example/l)" in text
    assert "@someone" in text and "\\u202eexe.txt" in text and "<b onclick=x>b</b>" in text
    assert not any(tag in ("h1", "blockquote") for tag, _ in view.tags)


@pytest.mark.parametrize("value", ["plain", "a`b", "``x``", "`", "``", "`lead", "trail`", "`both`", " spaced ",
                                   "a ``` b ```` c", "<img src=https://x.example/p.png>", "@someone", "[a](b)",
                                   "|pipe|", "\\", "x\\", "line\nbreak", "", " ", "\u202eexe.txt"])
def test_code_span_holds_any_value(value: str) -> None:
    view = _github_view(f"text {code_span(value)} text")
    assert [tag for tag, _ in view.tags] == ["p", "code"]
    shown = visible(value).replace("\n", " ")
    assert "".join(view.code) == (shown or " ")
    assert "".join(view.prose).strip() == "text  text"


@pytest.mark.parametrize("value", [HOSTILE_PROSE, "# not a heading", "> not a quote", "1. not a list", "- nor this",
                                   "+ nor", "= x", "*em* _u_ ~~s~~ \\ \\` [x]: https://x.example/ref",
                                   "mail me: a@x.example, or see WWW.x.example", "$x$ and $$y$$", "&amp; &#64;"])
def test_escape_shows_prose_as_written_and_makes_nothing_live(value: str) -> None:
    view = _assert_inert(escape(value))
    assert [tag for tag, _ in view.tags] == ["p"]
    assert "".join(view.prose).replace(_ZWJ, "").strip() == visible(value)


def test_inline_pairs_backticks_like_commonmark() -> None:
    assert inline("run `a --b` then `` c`d `` and a lone ` tick") == "run `a --b` then ``c`d`` and a lone \\` tick"
    value = "a ``x`` ``` <img src=https://x.example/p.png> ```` @someone"  # runs a single backtick does not close
    view = _assert_inert(inline(f"the file `{value}` and @someone"))
    assert "".join(view.code) == value


def test_fenced_block_holds_any_content() -> None:
    content = "a\n~~~~\n~~~~~~~~~~~~\n```\n</details>\n\u202e"
    block = fenced(content, "text")
    view = _github_view(block + "\n\nafter")
    assert [tag for tag, _ in view.tags] == ["pre", "code", "p"]
    assert "".join(view.code) == visible(content) + "\n"
    assert block.startswith("~" * 13 + "text\n")


def test_visible_escapes_invisible_characters_only() -> None:
    assert visible("a\u202eb\u2066c\u200fd\u200be\ufefff\x07g\u2028h") == \
        "a\\u202eb\\u2066c\\u200fd\\u200be\\ufefff\\u0007g\\u2028h"
    assert visible("tab\tnew\nline, ünïcödé, 日本, emoji 😀") == "tab\tnew\nline, ünïcödé, 日本, emoji 😀"
    assert visible("crlf\r\nlone\r") == "crlf\nlone\\u000d" and visible(3) == 3
    assert visible("tag \U000e0041") == "tag \\U000e0041"
