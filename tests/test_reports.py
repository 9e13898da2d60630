"""The HTML and Markdown reports: self-contained, escaped, complete, and honest about unknown cases."""

from __future__ import annotations

import re
from functools import lru_cache
from html.parser import HTMLParser
from pathlib import Path

import pytest
from markupsafe import escape

from tests.conftest import CORPUS, ROOT
from triage.pipeline import Result, triage
from triage.report import build, render
from triage.report.script import script_hash

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
MARKER = "<!-- hip-triage-report -->"

HOSTILE_LINES = [
    ":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1",
    ":1:rocdevice.cpp    :730 :  Couldn't create blit kernels! <script>alert(1)</script>",
    ':1:rocvirtual.cpp   :1725:  Could not create BlitManager! "><img src=x onerror=alert(1)>',
    # backticks and a tilde run: must not break out of Markdown code spans or fences
    "ld.lld: error: undefined hidden symbol: __amd_fillBufferAligned2D `x` ~~~~~~~~ <script>alert(1)</script>",
    "ld.lld: error: undefined hidden symbol: __amd_copyBufferRect`` <script>alert(1)</script>",
    "HIP Library Path: ./lib<script>alert(1)</script>amdhip64.so.7",
]


@lru_cache(maxsize=None)
def _result(folder: str) -> Result:
    return triage([folder])


def _hostile(tmp_path: Path, name: str = "hip.log") -> Result:
    path = tmp_path / name
    path.write_text("\n".join(HOSTILE_LINES) + "\n", encoding="utf-8")
    return triage([str(path)])


def _unknown(tmp_path: Path) -> Result:
    path = tmp_path / "paste.txt"
    path.write_text("hello world\n", encoding="utf-8")
    return triage([str(path)])


class _Tags(HTMLParser):
    """Every start tag with its attributes, the <style> text, and the document's text."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.style = ""
        self.scripts: list[str] = []
        self.text: list[str] = []
        self._in_style = False
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._in_style = tag == "style"
        self._in_script = tag == "script"
        if self._in_script:
            self.scripts.append("")

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag == "style":
            self._in_style = False
        if tag == "script":
            self._in_script = False

    def handle_data(self, data):
        if self._in_style:
            self.style += data
        elif self._in_script:
            self.scripts[-1] += data
        else:
            self.text.append(data)


def _parse(html: str) -> _Tags:
    parser = _Tags()
    parser.feed(html)
    parser.close()
    return parser


def _assert_self_contained(html: str) -> _Tags:
    low = html.lower()
    assert low.lstrip().startswith("<!doctype html>")
    assert "<script src" not in low
    assert "<link" not in low
    assert not re.search(r"""src\s*=\s*["']?\s*(https?:)?//""", low)
    assert not re.search(r"""url\(\s*["']?\s*(https?:)?//""", low)
    doc = _parse(html)
    allowed_remote = set()
    # one inline script, the shipped report.js, allowed by its hash and by nothing broader
    script = (ROOT / "reports" / "report.js").read_text(encoding="utf-8")
    assert doc.scripts == [script]
    csp = next(attrs["content"] for tag, attrs in doc.tags if attrs.get("http-equiv") == "Content-Security-Policy")
    directives = {d.split()[0]: d.split()[1:] for d in csp.split(";") if d.strip()}
    assert directives["script-src"] == [f"'{script_hash(script)}'"]
    assert "default-src 'none'" in csp
    for tag, attrs in doc.tags:
        if tag == "script":
            assert not attrs, "the inline script has no attributes (no src)"
            continue
        assert tag not in {"link", "img", "iframe", "object", "embed", "video", "audio", "source", "base",
                           "form", "input"}, f"<{tag}> in the report"
        for name, value in attrs.items():
            assert not name.startswith("on"), f"event handler {name} on <{tag}>"
            assert name not in {"src", "srcset", "action", "formaction", "background", "poster"}, f"{name} on <{tag}>"
            if name == "href":
                if tag != "a":
                    raise AssertionError(f"href on <{tag}>")
                assert value and not value.lower().startswith(("javascript:", "data:", "vbscript:"))
                if value.startswith(("http://", "https://")):
                    allowed_remote.add(value)
            if name == "style":
                assert "url(" not in (value or "").lower()
    # the CSS is inlined and pulls nothing in
    css = (ROOT / "reports" / "report.css").read_text(encoding="utf-8")
    assert css.strip() and css.strip() in html
    assert "url(" not in doc.style.lower() and "@import" not in doc.style.lower()
    # any remote address left in the page is the target or the text of an <a href> link
    rest = re.sub(r"<a\s[^>]*>.*?</a>", "", html, flags=re.S | re.I)
    assert not re.search(r"https?://", rest), "remote address outside a link"
    return doc


def _assert_internal_links_resolve(doc: _Tags) -> None:
    ids = {attrs["id"] for _, attrs in doc.tags if attrs.get("id")}
    targets = [attrs["href"][1:] for tag, attrs in doc.tags if tag == "a" and (attrs.get("href") or "").startswith("#")]
    missing = [t for t in targets if t not in ids]
    assert not missing, f"links to missing anchors: {missing[:5]}"


def _strip_markdown_code(md: str) -> str:
    """The Markdown with fenced blocks and code spans removed (CommonMark rules, enough for our output)."""
    out, fence = [], None
    for line in md.split("\n"):
        m = re.match(r"^ {0,3}(`{3,}|~{3,})", line)
        if fence is None:
            if m and not (m.group(1)[0] == "`" and "`" in line[m.end():]):
                fence = m.group(1)
                continue
            out.append(line)
        elif m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
            fence = None
    assert fence is None, "unclosed fenced block"
    text = "\n".join(out)
    # code spans: a run of N backticks up to the next run of exactly N backticks
    result, i = [], 0
    while i < len(text):
        if text[i] == "`":
            j = i
            while j < len(text) and text[j] == "`":
                j += 1
            run = text[i:j]
            close = re.compile(r"(?<!`)" + run + r"(?!`)")
            m = close.search(text, j)
            if m:
                i = m.end()
                continue
            result.append(run)
            i = j
            continue
        result.append(text[i])
        i += 1
    return "".join(result)


# --- corpus cases ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("folder", CASES, ids=[c.name for c in CASES])
def test_html_report_is_self_contained_and_complete(folder: Path) -> None:
    result = _result(str(folder))
    report = build(result)
    html = render(result, "html")
    doc = _assert_self_contained(html)
    _assert_internal_links_resolve(doc)
    top = report["diagnoses"][0]
    assert top["class"] != "unknown"
    assert str(escape(top["class"])) in html
    assert str(escape(top["id"])) in html
    assert top["confidence"] >= 0.5 and f'{round(top["confidence"] * 100)}%' in html
    for d in report["diagnoses"]:
        for e in d["evidence"]:
            assert str(escape(e["text"])) in html, e
    # every evidence row of the top diagnosis links to its line in the source view
    for e in top["evidence"]:
        anchor = f'L-{e["artifact"].replace(" ", "_")}-{e["line"]}'
        assert f'id="{escape(anchor)}"' in html
        assert f'href="#{escape(anchor)}"' in html
    for w in top["workarounds"]:
        assert str(escape(w["commands"])) in html
        assert ("untested" in html) or w["verified"]
    if report["fault"] and report["fault"]["module"]:
        assert str(escape(report["fault"]["module"])) in html
    for stack in report["stacks"]:
        for fr in stack["frames"]:
            if fr["symbol_note"]:
                assert str(escape(fr["symbol_note"])) in html
    for name, value in report["facts"].items():
        shown = ", ".join(value) if isinstance(value, list) else str(value)
        assert str(escape(shown)) in html, name
    assert str(escape(report["versions"]["signatures"])) in html


@pytest.mark.parametrize("folder", CASES, ids=[c.name for c in CASES])
def test_html_sections_in_order(folder: Path) -> None:
    html = render(_result(str(folder)), "html")
    order = ["verdict", "workarounds", "evidence", "crash", "environment", "candidates", "ask", "warnings", "source"]
    found = [(html.find(f'<section id="{s}"'), s) for s in order if f'<section id="{s}"' in html]
    assert [s for _, s in sorted(found)] == [s for _, s in found]
    for required in ("verdict", "evidence", "environment", "source"):
        assert f'<section id="{required}"' in html
    assert html.rstrip().endswith("</html>")


@pytest.mark.parametrize("folder", CASES, ids=[c.name for c in CASES])
def test_markdown_report(folder: Path) -> None:
    result = _result(str(folder))
    report = build(result)
    md = render(result, "md")
    assert md.startswith(MARKER + "\n")
    top = report["diagnoses"][0]
    heading = md.split("\n")[1]
    assert heading.startswith("## ") and top["class"] in heading
    assert f'{round(top["confidence"] * 100)}%' in heading
    for w in top["workarounds"]:
        assert w["commands"].rstrip("\n") in md
    for e in top["evidence"]:
        assert e["text"] in md
    for a in report["ask_for"]:
        assert a.split("`")[0][:40].replace("<", "&lt;").replace(">", "&gt;").replace("[", "\\[") in md
    # fences and code spans are balanced: nothing from the logs leaks into the prose
    _strip_markdown_code(md)
    assert md.count("<details>") == md.count("</details>")
    assert render(result, "markdown") == md


# --- hostile input --------------------------------------------------------------------------------------------


def test_html_escapes_hostile_input(tmp_path: Path) -> None:
    result = _hostile(tmp_path)
    report = build(result)
    assert report["diagnoses"][0]["class"] != "unknown", "the hostile file must still look like a HIP log"
    html = render(result, "html")
    doc = _assert_self_contained(html)
    _assert_internal_links_resolve(doc)
    assert "<script>alert(1)" not in html
    assert "<img src=x" not in html
    assert "&lt;script&gt;" in html
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert not any(tag == "img" for tag, _ in doc.tags) and len(doc.scripts) == 1
    # the hostile text is shown, as text
    assert "<script>alert(1)</script>" in "".join(doc.text)


def test_html_escapes_hostile_artifact_name(tmp_path: Path) -> None:
    result = _hostile(tmp_path, 'evil"<b onmouseover=alert(1)>x.log')
    html = render(result, "html")
    doc = _assert_self_contained(html)
    _assert_internal_links_resolve(doc)
    assert "<b onmouseover" not in html
    assert not any(tag == "b" for tag, _ in doc.tags)


def test_markdown_keeps_hostile_text_in_code(tmp_path: Path) -> None:
    md = render(_hostile(tmp_path), "md")
    assert md.startswith(MARKER + "\n")
    assert "<script>alert(1)</script>" in md, "the hostile line should be quoted (in code)"
    prose = _strip_markdown_code(md)
    assert "<script" not in prose
    assert "<img" not in prose
    assert "onerror" not in prose


def test_markdown_fence_survives_tildes(tmp_path: Path) -> None:
    md = render(_hostile(tmp_path), "md")
    # the evidence line holding eight tildes sits inside a longer fence
    block = re.search(r"^(~{9,})text\n(.*?)^\1$", md, flags=re.S | re.M)
    assert block and "~~~~~~~~ <script>" in block.group(2)


def test_strip_markdown_code_helper() -> None:
    assert _strip_markdown_code("a `<x>` b ``c`d`` e") == "a  b  e"
    assert "<x>" not in _strip_markdown_code("~~~~\n<x>\n~~~~\nok")
    assert "<x>" in _strip_markdown_code("plain <x>")


# --- the unknown case -----------------------------------------------------------------------------------------


def test_unknown_case_reads_as_a_finding(tmp_path: Path) -> None:
    result = _unknown(tmp_path)
    report = build(result)
    top = report["diagnoses"][0]
    assert top["class"] == "unknown" and report["ask_for"]

    html = render(result, "html")
    doc = _assert_self_contained(html)
    _assert_internal_links_resolve(doc)
    assert "unknown" in html
    assert re.search(r"<h1[^>]*>Not recognised", html), "the headline must say the failure was not recognised"
    assert 'id="ask"' in html and "What to send next" in html
    for a in report["ask_for"]:
        assert str(escape(a.split("`")[0])) in html
    assert 'class="bar' not in html, "no confidence bar for an unrecognised failure"

    md = render(result, "md")
    assert md.startswith(MARKER + "\n")
    heading = md.split("\n")[1]
    assert heading.startswith("## ") and "unknown" in heading and "Not recognised" in heading
    assert "### What to send next" in md
    assert "not an all-clear" in md


def test_stdin_label_is_escaped() -> None:
    import io

    result = triage(["-"], stdin=io.BytesIO(b"hello\n"))
    html = render(result, "html")
    assert "<stdin>" not in html and "&lt;stdin&gt;" in html
    _assert_self_contained(html)


def test_templates_never_mark_text_safe() -> None:
    for name in ("report.html.j2", "report.md.j2"):
        source = (ROOT / "reports" / name).read_text(encoding="utf-8")
        assert not re.search(r"\|\s*safe\b", source), name
        assert "Markup(" not in source
    assert (ROOT / "reports" / "report.md.j2").read_text(encoding="utf-8").startswith(("{#", MARKER))
