"""``triage serve``: the paste page, over plain HTTP and end to end in headless Chromium."""

from __future__ import annotations

import http.client
import io
import json
import subprocess
import sys
import tempfile
import threading
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from tests import cdp
from tests.conftest import CORPUS
from tests.test_browser import artifacts_dir
from triage.server import PasteServer, is_loopback

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
needs_browser = pytest.mark.skipif(cdp.available() is not None, reason=str(cdp.available()))


@pytest.fixture(scope="module")
def server() -> Iterator[PasteServer]:
    s = PasteServer("127.0.0.1", 0, max_upload=1 << 20, quiet=True)
    thread = threading.Thread(target=s.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.shutdown()
        s.server_close()


def _request(server: PasteServer, method: str, path: str, body: bytes = b"",
             headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], str]:
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.request(method, path, body=body or None, headers=headers or {})
        response = connection.getresponse()
        return response.status, dict(response.getheaders()), response.read().decode("utf-8")
    finally:
        connection.close()


def _paste(case: Path) -> str:
    """Everything a user sent for a case, pasted as one text."""
    return "".join(p.read_text(encoding="utf-8") for p in sorted(case.iterdir())
                   if p.is_file() and p.name != "expected.yaml")


def _leftovers() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("hip-triage-serve-*")}


# --- plain HTTP -------------------------------------------------------------------------------------------------


def test_page_has_a_strict_policy(server: PasteServer) -> None:
    status, headers, body = _request(server, "GET", "/")
    assert status == 200 and 'id="paste-form"' in body and 'data-limit="1048576"' in body
    csp = headers["Content-Security-Policy"]
    assert "default-src 'none'" in csp and "connect-src 'self'" in csp and "frame-ancestors 'none'" in csp
    assert _request(server, "GET", "/paste.js")[0] == 200
    assert _request(server, "GET", "/etc/passwd")[0] == 404


def test_upload_gives_report_and_leaves_nothing(server: PasteServer) -> None:
    before = _leftovers()
    log = (CASES[0] / "hip.log").read_bytes()
    status, headers, html = _request(server, "POST", "/triage", log, {"X-File-Name": "..%2F..%2Fhip.log"})
    assert status == 200, html
    assert headers["X-Triage-Class"] == "device-libs-missing"
    assert html.startswith("<!DOCTYPE html>") and "hip-blit-kernels-device-libs-missing" in html
    assert "<code>hip.log</code>" in html  # the browser's name, without its folders
    assert _leftovers() <= before


def test_upload_over_the_limit_is_refused_clearly(server: PasteServer) -> None:
    status, _, message = _request(server, "POST", "/triage", b"x" * 10, {"Content-Length": str(5 << 20)})
    assert status == 413 and "the limit is 1 MiB" in message


@pytest.mark.parametrize("headers, expected", [
    ({"Host": "evil.example:80"}, 403),                               # DNS rebinding
    ({"Origin": "https://evil.example"}, 403),                       # another site's page
    ({}, 400),                                                       # nothing to triage
])
def test_refusals(server: PasteServer, headers: dict[str, str], expected: int) -> None:
    body = b"" if expected == 400 else b"hello"
    assert _request(server, "POST", "/triage", body, {"Content-Length": str(len(body)), **headers})[0] == expected


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.0.0.2")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.2") and not is_loopback("example.com")


def test_serve_command_warns_off_loopback_and_fails_cleanly_on_a_bad_port() -> None:
    run = subprocess.run([sys.executable, "-m", "triage", "serve", "--port", "70000"], capture_output=True, text=True,
                         timeout=60)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    with PasteServer("127.0.0.1", 0, quiet=True) as busy:
        port = str(busy.server_address[1])
        run = subprocess.run([sys.executable, "-m", "triage", "serve", "--port", port], capture_output=True,
                             text=True, timeout=60)
    assert run.returncode == 2 and "cannot listen on 127.0.0.1:" in run.stderr and "Traceback" not in run.stderr


# --- in the browser -------------------------------------------------------------------------------------------


def _open(browser: cdp.Browser, server: PasteServer, width: int = 1280) -> cdp.Page:
    page = browser.page(width)
    page.goto(server.url)
    return page


def _verdict(page: cdp.Page) -> str:
    page.click("#go")
    return page.wait_for("document.getElementById('verdict').textContent", timeout=60)


def _only_the_server(server: PasteServer):
    return lambda url: url.startswith(server.url) or url.startswith("blob:" + server.url.rstrip("/"))


@needs_browser
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_paste_gives_the_verdict_in_the_page(browser: cdp.Browser, server: PasteServer, case: Path) -> None:
    expected = yaml.safe_load((case / "expected.yaml").read_text(encoding="utf-8"))
    page = _open(browser, server)
    try:
        page.js(f"document.getElementById('text').value = {json.dumps(_paste(case))}")
        verdict = _verdict(page)
        assert verdict.startswith(f"{expected['class']} (")
        title = page.wait_for("(() => { const d = document.getElementById('report').contentDocument;"
                              " const h = d && d.getElementById('verdict-title'); return h && h.textContent; })()")
        assert title and title in verdict
        # The report's own script adds the Copy buttons once the frame has loaded.
        assert page.wait_for("document.getElementById('report').contentDocument"
                             ".querySelectorAll('button.copy').length") > 0
        page.screenshot(artifacts_dir() / f"serve-{case.name}.png")
        assert page.console_errors() == []
        assert page.requests(_only_the_server(server)) == []
    finally:
        page.close()


@needs_browser
def test_dropped_bundle_and_clear_errors(browser: cdp.Browser, server: PasteServer, tmp_path: Path) -> None:
    bundle = tmp_path / "user-bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for path in sorted(CASES[0].iterdir()):
            if path.name != "expected.yaml":
                archive.write(path, f"report/{path.name}")
    page = _open(browser, server, 390)
    try:
        page.click("#go")  # nothing pasted yet
        assert "Paste a log or choose a file first." in page.wait_for("document.getElementById('status').textContent")
        node = page.send("DOM.querySelector", {"nodeId": page.send("DOM.getDocument")["root"]["nodeId"],
                                               "selector": "#file"})["nodeId"]
        page.send("DOM.setFileInputFiles", {"nodeId": node, "files": [str(bundle)]})
        page.wait_for("document.getElementById('chosen').textContent.includes('user-bundle.zip')")
        assert _verdict(page).startswith("device-libs-missing (")
        assert page.js("document.documentElement.scrollWidth - window.innerWidth") <= 0

        big = tmp_path / "huge.log"
        big.write_bytes(b"x" * ((1 << 20) + 1))
        page.send("DOM.setFileInputFiles", {"nodeId": node, "files": [str(big)]})
        page.wait_for("document.getElementById('chosen').textContent.includes('huge.log')")
        page.click("#go")
        assert "the limit is 1.0 MiB" in page.wait_for(
            "document.getElementById('status').className === 'error' && document.getElementById('status').textContent")
        assert page.console_errors() == []
    finally:
        page.close()


def test_server_answers_text_errors_in_the_page(server: PasteServer) -> None:
    """An upload the server refuses comes back as a plain message the page shows as it is."""
    status, headers, message = _request(server, "POST", "/triage", b"  \n", {"Content-Length": "3"})
    assert status == 400 and headers["Content-Type"].startswith("text/plain") and message.startswith("Nothing")


def test_zip_upload_over_http(server: PasteServer) -> None:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for path in sorted(CASES[-1].iterdir()):
            if path.name != "expected.yaml":
                archive.write(path, path.name)
    status, headers, _ = _request(server, "POST", "/triage", buffer.getvalue(), {"X-File-Name": "bundle.zip"})
    assert status == 200 and headers["X-Triage-Class"] == "no-code-object"
