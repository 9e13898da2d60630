"""The HTML report in a real browser: headless Chromium, driven over the DevTools pipe (tests/cdp.py).

Every corpus case's report must load with no console error and no network request, fit the
window at phone and desktop widths, keep hostile log text as text, link evidence into the
collapsed source view and copy workaround commands without network. Screenshots of the
reports go to $TRIAGE_ARTIFACTS (default: a folder in the temporary directory), not the tree.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Iterator

import pytest

from tests import cdp
from tests.conftest import CORPUS
from triage.pipeline import triage
from triage.report import build, render

pytestmark = pytest.mark.skipif(cdp.available() is not None, reason=str(cdp.available()))

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
WIDTHS = (390, 1280)
LONG_TOKEN = "A" * 3000
HOSTILE = [
    ":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1",
    ":1:rocdevice.cpp    :730 :  Couldn't create blit kernels! <script>window.__pwned = 1; alert(1)</script>",
    ':1:rocvirtual.cpp   :1725:  Could not create BlitManager! "><img src=x onerror="window.__pwned = 2">',
    "ld.lld: error: undefined hidden symbol: __amd_fillBufferAligned2D" + LONG_TOKEN,
    "ld.lld: error: undefined hidden symbol: __amd_copyBufferRect " + "word " * 800,
    "HIP Library Path: ./lib<svg onload=alert(1)>amdhip64.so.7",
]


def artifacts_dir() -> Path:
    """Where screenshots go: $TRIAGE_ARTIFACTS, or a fixed folder under the temporary directory."""
    folder = Path(os.environ.get("TRIAGE_ARTIFACTS") or Path(tempfile.gettempdir()) / "hip-triage-artifacts")
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@pytest.fixture
def page(browser: cdp.Browser) -> Iterator[cdp.Page]:
    p = browser.page()
    try:
        yield p
    finally:
        p.close()


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """HTML reports on disk: every corpus case, and a hostile log."""
    folder = tmp_path_factory.mktemp("reports")
    out = {}
    for case in CASES:
        out[case.name] = folder / f"{case.name}.html"
        out[case.name].write_text(render(triage([str(case)]), "html"), encoding="utf-8")
    log = folder / 'hostile 100%25 "<b>x.log'  # spaces, a stray %, quotes and markup in the artefact's name
    log.write_text("\n".join(HOSTILE) + "\n", encoding="utf-8")
    out["hostile"] = folder / "hostile.html"
    out["hostile"].write_text(render(triage([str(log)]), "html"), encoding="utf-8")
    return out


def _only_itself(page_url: str):
    return lambda url: url == page_url


def _load(page: cdp.Page, path: Path, width: int) -> str:
    page.forget()
    page.resize(width)
    url = path.as_uri()
    page.goto(url)
    return url


def _overflow(page: cdp.Page) -> int:
    """How far the document is wider than the window (0 when nothing sticks out)."""
    return page.js("document.documentElement.scrollWidth - window.innerWidth")


# --- the checks detect what they must (negative controls) ---------------------------------------------------


def test_negative_control_console_error_request_and_dialog(page: cdp.Page, tmp_path: Path) -> None:
    bad = tmp_path / "bad.html"
    bad.write_text('<!DOCTYPE html><p>x</p><img src="http://127.0.0.1:9/x.png">'
                   '<script>console.error("boom"); alert("hi")</script><script>throw new Error("thrown")</script>',
                   encoding="utf-8")
    url = _load(page, bad, 1280)
    page.wait_for("document.readyState === 'complete'")
    assert any("boom" in e for e in page.console_errors())
    assert any(e.startswith("exception: Error: thrown") for e in page.console_errors())
    assert page.requests(_only_itself(url)) == ["http://127.0.0.1:9/x.png"]
    assert page.dialogs() == ["hi"]


def test_negative_control_csp_violation_and_overflow(page: cdp.Page, tmp_path: Path) -> None:
    bad = tmp_path / "csp.html"
    bad.write_text("<!DOCTYPE html><meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'\">"
                   f'<meta name="viewport" content="width=device-width"><pre>{LONG_TOKEN}</pre>'
                   "<script>document.title = 'ran'</script>", encoding="utf-8")
    _load(page, bad, 390)
    assert any("Content Security Policy" in e for e in page.console_errors())
    assert page.js("document.title") != "ran"
    assert _overflow(page) > 1000


# --- every corpus case ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_report_loads_clean_and_fits(page: cdp.Page, reports: dict[str, Path], name: str) -> None:
    report = build(triage([str(CORPUS / name)]))
    top = report["diagnoses"][0]
    for width in WIDTHS:
        url = _load(page, reports[name], width)
        assert page.js("document.querySelector('#verdict-title').textContent") == top["title"]
        assert page.js("document.querySelector('.badge.class').textContent") == top["class"]
        footer = page.js("document.querySelector('.page-footer').textContent")
        assert report["versions"]["tool"] in footer and report["versions"]["signatures"] in footer
        assert _overflow(page) <= 0, f"{name} is wider than a {width} px window"
        assert page.js("parseFloat(getComputedStyle(document.body).fontSize)") >= 14
        # the copy buttons came up: the script ran under the page's CSP
        assert page.js("document.querySelectorAll('button.copy').length") == len(top["workarounds"])
        page.screenshot(artifacts_dir() / f"{name}-{width}.png")
        assert page.console_errors() == [], name
        assert page.requests(_only_itself(url)) == [], name
        assert page.dialogs() == []


def test_hostile_lines_show_as_text_and_run_nothing(page: cdp.Page, reports: dict[str, Path]) -> None:
    for width in WIDTHS:
        url = _load(page, reports["hostile"], width)
        assert page.js("window.__pwned === undefined")
        assert page.js("document.querySelectorAll('img, svg, iframe').length") == 0
        assert page.js("document.scripts.length") == 1
        text = page.js("document.body.innerText")
        assert "<script>window.__pwned = 1; alert(1)</script>" in text
        assert '"><img src=x onerror="window.__pwned = 2">' in text
        assert LONG_TOKEN[:200] in text.replace("\n", "")
        assert _overflow(page) <= 0, f"a long line breaks the layout at {width} px"
        page.screenshot(artifacts_dir() / f"hostile-{width}.png")
        assert page.dialogs() == []
        assert page.console_errors() == []
        assert page.requests(_only_itself(url)) == []


@pytest.mark.parametrize("name", [CASES[0].name, "hostile"])
def test_evidence_link_opens_the_collapsed_source_view(page: cdp.Page, reports: dict[str, Path], name: str) -> None:
    _load(page, reports[name], 390)
    page.js("document.querySelectorAll('details.source').forEach(d => d.open = false)")
    href = page.js("document.querySelector('#evidence td.where a').getAttribute('href')")
    target = page.js("document.querySelector('#source .lines .l.ev').id") if name == "hostile" else href[1:]
    assert href == "#" + target
    page.click("#evidence td.where a")
    page.wait_for(f"document.getElementById({target!r}).closest('details').open")
    assert page.js(f"document.getElementById({target!r}).closest('details').open")
    assert page.js(f"document.getElementById({target!r}).classList.contains('ev')")
    assert page.js("document.querySelector('.targeted').id") == target
    page.wait_for(f"(() => {{ const r = document.getElementById({target!r}).getBoundingClientRect();"
                  " return r.top >= 0 && r.bottom <= window.innerHeight; })()")
    assert page.console_errors() == []


def test_copy_button_copies_the_commands_offline(browser: cdp.Browser, page: cdp.Page,
                                                 reports: dict[str, Path]) -> None:
    browser.send("Browser.grantPermissions", {"permissions": ["clipboardReadWrite", "clipboardSanitizedWrite"]})
    url = _load(page, reports[CASES[0].name], 1280)
    command = page.js("document.querySelector('pre.cmd code').textContent")
    assert "LD_LIBRARY_PATH" in command or "LD_PRELOAD" in command
    page.click("button.copy")
    page.wait_for("document.querySelector('.copy-status').textContent === 'Copied'")
    assert page.js("navigator.clipboard.readText()") == command
    assert page.console_errors() == []
    assert page.requests(_only_itself(url)) == []


@pytest.mark.parametrize("name", [c.name for c in CASES])
def test_environment_table_stacks_at_phone_width(page: cdp.Page, reports: dict[str, Path], name: str) -> None:
    """Like the evidence and stack tables: no box to scroll sideways on a phone, each fact a block."""
    _load(page, reports[name], 390)
    box = "document.querySelector('#environment .scroll')"
    assert page.js(f"{box}.scrollWidth - {box}.clientWidth") <= 0, f"{name}: the Environment table scrolls at 390 px"
    assert page.js("getComputedStyle(document.querySelector('table.env tr')).display") == "flex"
    # the value gets the whole width (squeezed beside the name and source it had about 110 px of 390)
    assert page.js(f"document.querySelector('table.env td.mono').clientWidth / {box}.clientWidth") > 0.9
    _load(page, reports[name], 1280)
    assert page.js("getComputedStyle(document.querySelector('table.env tr')).display") == "table-row"
