"""``triage serve``: the paste page, over plain HTTP and end to end in headless Chromium."""

from __future__ import annotations

import http.client
import io
import json
import re
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import zipfile
from pathlib import Path
from typing import Iterator

import pytest
import yaml

from tests import cdp
from tests.conftest import CORPUS
from tests.test_browser import artifacts_dir
from triage.server import NAME_CHARS, PasteServer, display_name, is_loopback

CASES = sorted(p for p in CORPUS.iterdir() if (p / "expected.yaml").is_file())
needs_browser = pytest.mark.skipif(cdp.available() is not None, reason=str(cdp.available()))


def _serving(**options) -> Iterator[PasteServer]:
    s = PasteServer("127.0.0.1", 0, max_upload=1 << 20, quiet=True, **options)
    thread = threading.Thread(target=s.serve_forever, daemon=True)
    thread.start()
    try:
        yield s
    finally:
        s.shutdown()
        s.server_close()


@pytest.fixture(scope="module")
def server() -> Iterator[PasteServer]:
    yield from _serving()


@pytest.fixture
def quick_server() -> Iterator[PasteServer]:
    """A server that gives a client two seconds to send a whole request."""
    yield from _serving(request_timeout=2.0)


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


# --- hostile and broken clients, over raw sockets ---------------------------------------------------------------


def _connect(server: PasteServer, timeout: float = 10.0) -> socket.socket:
    return socket.create_connection(server.server_address[:2], timeout=timeout)


def _read_to_close(sock: socket.socket) -> bytes:
    """Everything the server sends until it closes the connection (a socket timeout fails the test)."""
    out = b""
    while chunk := sock.recv(65536):
        out += chunk
    return out


def _raw(server: PasteServer, data: bytes, timeout: float = 10.0) -> tuple[int, dict[str, str], str, float]:
    """Send bytes as they are and keep sending nothing more (the write side stays open, so a server that reads
    to the end of the stream hangs); the status, headers and body of the answer, and how long it took."""
    with _connect(server, timeout) as sock:
        started = time.monotonic()
        sock.sendall(data)
        try:
            answer = _read_to_close(sock)
        except TimeoutError:
            pytest.fail(f"no answer within {timeout} s: the server is waiting for more of the request")
        took = time.monotonic() - started
    head, _, body = answer.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    # One answer: what was sent after the headers is never taken for a second request.
    assert lines[0].startswith("HTTP/1.") and len(body) == int(headers["Content-Length"]), answer
    return int(lines[0].split()[1]), headers, body.decode("utf-8"), took


def _post_head(server: PasteServer, *headers: str) -> bytes:
    host = f"127.0.0.1:{server.server_address[1]}"
    return "\r\n".join(["POST /triage HTTP/1.1", f"Host: {host}", *headers, "", ""]).encode()


def _is_one_line_error(headers: dict[str, str], body: str) -> bool:
    return (headers["Content-Type"].startswith("text/plain") and "\n" not in body.strip() and 0 < len(body) < 400
            and "/tmp" not in body and tempfile.gettempdir() not in body and "Traceback" not in body
            and 'File "' not in body)


@pytest.mark.parametrize("size_headers, expected", [
    (["Content-Length: -1"], 400),                                   # was read to the end of the stream
    (["Content-Length: abc"], 400),
    (["Content-Length: +12"], 400),                                  # int() takes these; HTTP does not
    (["Content-Length: 1_2"], 400),
    (["Content-Length: 12", "Content-Length: 500"], 400),            # which one? neither
    ([], 411),                                                       # missing
    (["Transfer-Encoding: chunked"], 411),                           # chunked: not read, a size is required
], ids=["negative", "abc", "plus-sign", "underscore", "two-sizes", "missing", "chunked"])
def test_post_without_a_valid_size_is_refused_unread(server: PasteServer, size_headers: list[str],
                                                     expected: int) -> None:
    status, headers, message, took = _raw(server, _post_head(server, *size_headers) + b"hello world\n")
    assert status == expected and took < 5
    assert _is_one_line_error(headers, message), message
    assert "Content-Length" in message and "paste page" in message  # the reason, and what to do next
    assert headers["Connection"] == "close"


@pytest.mark.parametrize("size", [str((1 << 20) + 1), "9" * 25, "9" * 5000],
                         ids=["limit+1", "25-digits", "5000-digits"])
def test_upload_over_the_limit_is_refused_before_its_body(server: PasteServer, size: str) -> None:
    # Part of the body is already on its way: the answer must still arrive, and without waiting for the rest.
    status, headers, message, took = _raw(server, _post_head(server, f"Content-Length: {size}") + b"x" * (64 << 10))
    assert status == 413 and took < 5 and "the limit is 1 MiB" in message
    assert _is_one_line_error(headers, message), message


def test_listen_backlog_holds_a_burst_of_connections() -> None:
    """Connections that arrive while every handler is busy wait in the backlog instead of being dropped."""
    with PasteServer("127.0.0.1", 0, quiet=True) as idle:  # listening, but accepting nothing
        waiting = []
        try:
            for _ in range(60):
                waiting.append(socket.create_connection(idle.server_address[:2], timeout=2))
        except TimeoutError:
            pytest.fail(f"connection {len(waiting) + 1} was not queued: the listen backlog is too small")
        finally:
            for sock in waiting:
                sock.close()


def test_silent_and_slow_clients_are_dropped_while_others_are_served(quick_server: PasteServer) -> None:
    log = (CASES[0] / "hip.log").read_bytes()
    timeout = quick_server.request_timeout
    for _ in range(5):  # the first triages in a process build what later ones reuse (scanners, caches)
        started = time.monotonic()
        assert _request(quick_server, "POST", "/triage", log)[0] == 200
        if time.monotonic() - started < timeout / 4:
            break
    dropped: dict[str, object] = {}

    def silent() -> None:
        """A client that connects and sends nothing."""
        with _connect(quick_server) as sock:
            started = time.monotonic()
            try:
                dropped["silent"] = (sock.recv(1), time.monotonic() - started)
            except TimeoutError:
                pass

    def dribble() -> None:
        """A slow-loris client: headers that never end, one byte at a time, well inside the socket timeout."""
        with _connect(quick_server) as sock:
            started = time.monotonic()
            sock.sendall(_post_head(quick_server).rstrip(b"\r\n") + b"\r\nX-Slow: ")
            while time.monotonic() - started < 4 * timeout:
                try:
                    sock.sendall(b"a")
                    sock.settimeout(timeout / 5)
                    answer = sock.recv(65536)
                except TimeoutError:
                    continue  # nothing yet: send another byte
                except OSError:
                    answer = b""
                sock.settimeout(10)
                dropped["slow"] = (answer + (_read_to_close(sock) if answer else b""), time.monotonic() - started)
                return

    clients = [threading.Thread(target=silent), threading.Thread(target=dribble)]
    for client in clients:
        client.start()
    time.sleep(timeout / 10)  # both are connected and holding a handler
    started = time.monotonic()
    status, headers, _ = _request(quick_server, "POST", "/triage", log, {"X-File-Name": "hip.log"})
    pasted = time.monotonic() - started
    for client in clients:
        client.join(4 * timeout + 10)
    assert status == 200 and headers["X-Triage-Class"] == "device-libs-missing"
    assert pasted < timeout * 0.8, "the paste waited for the silent or slow client"
    assert "silent" in dropped, "a client that sends nothing was never disconnected"
    answer, after = dropped["silent"]
    assert answer == b"" and timeout * 0.9 <= after < timeout + 3  # closed, without an answer, at the timeout
    assert "slow" in dropped, "a client sending its headers byte by byte was never disconnected"
    answer, after = dropped["slow"]
    assert after < timeout + 3 and answer.startswith(b"HTTP/1.0 408 ")
    message = answer.partition(b"\r\n\r\n")[2].decode()
    assert "send it again" in message and "\n" not in message and "Traceback" not in message


def test_serve_command_takes_a_timeout() -> None:
    process = subprocess.Popen([sys.executable, "-m", "triage", "serve", "--port", "0", "--timeout", "1"],
                               stderr=subprocess.PIPE, text=True)
    try:
        banner = process.stderr.readline()
        assert "1 s per request" in banner, banner
        host, port = re.search(r"http://([\d.]+):(\d+)/", banner).groups()
        with socket.create_connection((host, int(port)), timeout=10) as silent:
            started = time.monotonic()
            assert silent.recv(1) == b"" and time.monotonic() - started < 5
    finally:
        process.terminate()
        process.wait(timeout=30)


# 5,000 characters, none of them ASCII but the extension
LONG_NAME = ("журнал-падения-日本語のログ-" * 250)[:4996] + ".log"


@pytest.mark.parametrize("encoded", [True, False], ids=["percent-encoded", "raw-utf8"])
def test_long_non_ascii_file_name_gets_a_report(server: PasteServer, encoded: bool) -> None:
    assert len(LONG_NAME) == 5000
    before = _leftovers()
    log = (CASES[0] / "hip.log").read_bytes()
    # The paste page percent-encodes the name; another client may send it as raw UTF-8.
    value: str | bytes = urllib.parse.quote(LONG_NAME) if encoded else LONG_NAME.encode("utf-8")
    host, port = server.server_address[:2]
    connection = http.client.HTTPConnection(host, port, timeout=60)
    try:
        connection.putrequest("POST", "/triage")
        connection.putheader("Content-Length", str(len(log)))
        connection.putheader("X-File-Name", value)
        connection.endheaders(log)
        response = connection.getresponse()
        status, html = response.status, response.read().decode("utf-8")
    finally:
        connection.close()
    assert status == 200, html
    shown = display_name(urllib.parse.quote(LONG_NAME))
    assert len(shown) == NAME_CHARS and shown.startswith("журнал-падения-日本語")
    assert shown.endswith("\u2026.log")
    assert shown in html and "upload" not in shown
    assert _leftovers() <= before


def test_display_name_is_safe_for_any_unicode() -> None:
    assert display_name(None) == display_name("") == display_name("..%2F..%2F") == "upload"
    assert display_name("C:%5Cusers%5Cme%5Cкрах%20日志.log") == "крах 日志.log"
    assert display_name("..%2F..%2Fetc%2Fpasswd") == "passwd"
    assert display_name(".bashrc") == "bashrc"
    for hostile in ("a%0Ab%0Dc%00d.log", "gpu%E2%80%AEgol.exe", "x%1B%5B31my.log", "a%E2%80%A8b.log", "ar!member.log"):
        name = display_name(hostile)
        assert name and all(ch.isprintable() for ch in name) and "/" not in name and "\\" not in name, name
        assert "!" not in name
    assert len(display_name("%E6%97%A5" * 5000)) == NAME_CHARS


def test_no_error_answer_shows_a_path_or_a_traceback(server: PasteServer, monkeypatch: pytest.MonkeyPatch) -> None:
    """http.server's own refusals and a failed triage are one line of plain text, with nothing internal in it."""
    host = f"Host: 127.0.0.1:{server.server_address[1]}"
    requests = {
        "garbage": b"GARBAGE\r\n\r\n",
        "bad version": b"GET / HTTP/9.9\r\n\r\n",
        "long line": b"GET /" + b"a" * 70000 + b" HTTP/1.1\r\n\r\n",
        "long header": f"GET / HTTP/1.1\r\n{host}\r\nX-Big: {'b' * 70000}\r\n\r\n".encode(),
        "many headers": f"GET / HTTP/1.1\r\n{host}\r\n".encode() + b"X-A: 1\r\n" * 200 + b"\r\n",
        "method": f"PUT /triage HTTP/1.1\r\n{host}\r\n\r\n".encode(),
        "wrong path": f"POST /upload HTTP/1.1\r\n{host}\r\nContent-Length: 5\r\n\r\nhello".encode(),
        "rebinding": b"GET / HTTP/1.1\r\nHost: evil.example\r\n\r\n",
    }
    for what, request in requests.items():
        status, headers, message, _ = _raw(server, request)
        assert status >= 400 and _is_one_line_error(headers, message), (what, message)

    def broken(data: bytes, name: str):
        raise OSError(36, "File name too long", f"{tempfile.gettempdir()}/hip-triage-serve-x/{name}")

    monkeypatch.setattr("triage.server._triage", broken)
    status, headers, message = _request(server, "POST", "/triage", b"hello", {"X-File-Name": "crash.log"})
    assert status == 500 and _is_one_line_error(headers, message), message
    assert "ref " in message and "try again" in message


def _answer(server: PasteServer, text: bytes) -> tuple[int, str, str, str]:
    """A paste's status, verdict headers and page with its timings taken out (they differ run to run)."""
    status, headers, html = _request(server, "POST", "/triage", text, {"X-File-Name": "paste.log"})
    page = re.sub(r"\b\d+(?:\.\d+)?\s*(?:ms|s)\b|\d{4}-\d\d-\d\dT[\d:.]+Z?|\d{4}-\d\d-\d\d \d\d:\d\d(?::\d\d)?(?: UTC)?", "",
                  html)
    return status, headers.get("X-Triage-Class", ""), headers.get("X-Triage-Confidence", ""), page


def test_twenty_concurrent_pastes_get_the_serial_reports(server: PasteServer) -> None:
    """Pastes that overlap share nothing: each gets the very page it gets alone (the scanners once
    shared one Hyperscan scratch, and overlapping pastes got 500s)."""
    texts = [_paste(case).encode("utf-8") for case in CASES]
    serial = [_answer(server, text) for text in texts]
    assert len({s[1] for s in serial}) >= 3 and all(s[0] == 200 for s in serial)
    jobs = [i % len(texts) for i in range(20)]
    answers: dict[int, tuple[int, str, str, str]] = {}
    start = threading.Barrier(len(jobs))

    def client(slot: int) -> None:
        start.wait()
        answers[slot] = _answer(server, texts[jobs[slot]])

    clients = [threading.Thread(target=client, args=(slot,)) for slot in range(len(jobs))]
    for thread in clients:
        thread.start()
    for thread in clients:
        thread.join(120)
    assert len(answers) == len(jobs)
    for slot, which in enumerate(jobs):
        assert answers[slot][:3] == serial[which][:3], (slot, answers[slot][:3])
        assert answers[slot][3] == serial[which][3], f"paste {slot}: the page differs from the serial one"
