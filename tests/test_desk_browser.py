"""The desk as support staff use it, in Debian's headless Chromium (tests/cdp.py, no downloaded browser):
paste a seed case, read the verdict, open the permalink, paste the same failure again and see it was seen before."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

pytest.importorskip("fastapi", reason="the desk extra is not installed: pip install -e '.[desk]'")

from tests import cdp
from tests.conftest import CORPUS
from tests.test_browser import artifacts_dir
from tests.test_desk_app import Desk, expected_class, paste_of, serving
from tests.test_desk_storage import open_store
from triage.desk.app import Settings

pytestmark = pytest.mark.skipif(cdp.available() is not None, reason=str(cdp.available()))
SEEDS = sorted(p for p in CORPUS.glob("seed-*") if (p / "expected.yaml").is_file())


@pytest.fixture
def desk(tmp_path: Path) -> Iterator[Desk]:
    store = open_store("sqlite", tmp_path)
    with serving(Settings(), store) as running:
        yield running
    store.close()


def _submit(page: cdp.Page, text: str) -> None:
    """Paste into the form and press Triage; wait for the case page it leads to."""
    page.js(f"document.getElementById('text').value = {json.dumps(text)}")
    page.click("#go")
    page.wait_for("location.pathname.startsWith('/cases/') && document.readyState === 'complete' && "
                  "!!document.getElementById('verdict')", timeout=60)


def _only(desk: Desk):
    return lambda url: url.startswith(desk.url + "/")


@pytest.mark.parametrize("seed", SEEDS, ids=[s.name for s in SEEDS])
def test_paste_verdict_permalink_and_seen_before(browser: cdp.Browser, desk: Desk, seed: Path) -> None:
    page = browser.page()
    try:
        page.goto(desk.url + "/")
        _submit(page, paste_of(seed))
        verdict = page.js("document.getElementById('verdict').textContent")
        assert verdict.startswith(f"{expected_class(seed)} (")
        assert page.js("document.getElementById('seen').textContent") == "seen before: 0"
        permalink = page.js("document.getElementById('permalink').href")
        assert permalink.startswith(desk.url + "/cases/")

        page.goto(permalink)
        assert page.js("document.getElementById('verdict').textContent") == verdict
        page.goto(desk.url + "/")
        _submit(page, paste_of(seed))
        assert page.js("document.getElementById('seen').textContent") == "seen before: 1"
        assert page.js("[...document.querySelectorAll('#seen-list a')].map(a => a.href)") == [permalink]
        assert page.js("location.href") != permalink
        page.screenshot(artifacts_dir() / f"desk-{seed.name}.png")
        assert page.console_errors() == []
        assert page.requests(_only(desk)) == []
    finally:
        page.close()


def test_note_on_a_case_shows_on_the_next_one(browser: cdp.Browser, desk: Desk) -> None:
    seed = SEEDS[0]
    page = browser.page(390)  # a phone's width
    try:
        page.goto(desk.url + "/")
        page.click("#go")  # nothing pasted
        assert page.wait_for("document.getElementById('error') && document.getElementById('error').textContent") \
            == "Paste a log or choose a file first."
        page.forget()  # that answer was a 400, logged by the browser
        _submit(page, paste_of(seed))
        page.js("document.getElementById('status').value = 'answered'")
        page.js("document.getElementById('note').value = 'Fixed: LD_PRELOAD the system <libamdhip64>'")
        first = page.js("location.href")
        page.js("window.before = true")  # gone once the saved case page has loaded
        page.click("#save")
        page.wait_for("!window.before && document.readyState === 'complete' && "
                      "document.getElementById('status').value === 'answered'")
        page.goto(desk.url + "/")
        _submit(page, paste_of(seed))
        assert page.js("document.querySelector('#seen-list blockquote').textContent") == \
            "Fixed: LD_PRELOAD the system <libamdhip64>"
        page.goto(desk.url + "/cases?status=answered")
        assert page.js("[...document.querySelectorAll('#cases a')].map(a => a.href)") == [first]
        assert page.console_errors() == []
    finally:
        page.close()
