"""The paste page behind ``triage serve``: paste a log or drop a bundle, get the HTML report in the page.

A small standard-library HTTP server, safe to run for a team: it listens on loopback unless told
otherwise, answers only requests addressed to it by a loopback name (so a web page cannot reach it
through DNS rebinding) and only same-origin uploads. Each connection is served in its own thread,
and a client has ``request_timeout`` seconds to send a whole request (request line, headers and
body) or it is dropped, so a client that sends nothing, or sends byte by byte, holds nothing for
long. A POST must declare its size (a plain decimal Content-Length) and is refused before its body
is read when it declares none, a malformed one or one over the limit. An upload is read in memory,
written under a name the server makes into a temporary folder for the triage and removed with it;
nothing is kept after the answer. The browser's file name is only a display name. Error answers are
one line of plain text saying what to do next: never a path or a traceback.
"""

from __future__ import annotations

import io
import ipaddress
import re
import secrets
import socket
import sys
import tempfile
import time
import traceback
import unicodedata
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import TYPE_CHECKING

from triage import __version__
from triage.model import Diagnosis

if TYPE_CHECKING:
    from triage.pipeline import Result

DEFAULT_MAX_UPLOAD = 50 << 20
DEFAULT_TIMEOUT = 60.0  # seconds a client has to send one whole request
LISTEN_BACKLOG = 128
NAME_CHARS = 120  # the longest display name kept for an upload
_STORED_NAME = "upload"  # what an upload is called on disk, whatever the browser called it
_LINGER_SECONDS = 2.0  # after refusing an upload unread, how long its body is drained so the answer arrives
_LINGER_BYTES = 4 << 20
# Control characters (C0, DEL, C1) escaped in the server's log lines: a request line must not drive the terminal.
_LOG_ESCAPES = {c: f"\\x{c:02x}" for c in (*range(0x20), *range(0x7F, 0xA0))}
_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "[::1]")

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>hip-triage paste page</title>
<style>
:root { color-scheme: light dark; --fg: #1b1f24; --bg: #fff; --muted: #59636e; --line: #d5dae0; --accent: #1f5fbf;
        --bad: #b42318; --panel: #f5f7f9; }
@media (prefers-color-scheme: dark) { :root { --fg: #e3e6ea; --bg: #15181c; --muted: #9aa4af; --line: #353c45;
        --accent: #7fb0ff; --bad: #ff8a80; --panel: #1d2227; } }
* { box-sizing: border-box; }
body { margin: 0; font: 16px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
       background: var(--bg); }
main { max-width: 64rem; margin: 0 auto; padding: 1rem; }
h1 { font-size: 1.3rem; margin: .2rem 0 .8rem; }
textarea { width: 100%; min-height: 12rem; font: .85rem/1.4 ui-monospace, Menlo, Consolas, monospace; padding: .6rem;
           border: 1px solid var(--line); border-radius: 6px; background: var(--panel); color: var(--fg); }
.drop { margin: .6rem 0; padding: 1rem; border: 2px dashed var(--line); border-radius: 8px; text-align: center;
        color: var(--muted); }
.drop.over { border-color: var(--accent); color: var(--accent); }
.row { display: flex; flex-wrap: wrap; gap: .6rem; align-items: center; }
button { font: 600 1rem/1.4 inherit; padding: .45rem 1.2rem; border-radius: 6px; border: 1px solid var(--accent);
         background: var(--accent); color: var(--bg); cursor: pointer; }
button[disabled] { opacity: .6; cursor: progress; }
#status { color: var(--muted); }
#status.error { color: var(--bad); font-weight: 600; }
#verdict { font-weight: 600; margin: 1rem 0 .4rem; overflow-wrap: anywhere; }
#report { width: 100%; height: 70vh; border: 1px solid var(--line); border-radius: 8px; }
#report[hidden], #open[hidden] { display: none; }
.muted { color: var(--muted); font-size: .875rem; }
</style>
</head>
<body data-limit="{limit}">
<main>
<h1>hip-triage: paste a crash log</h1>
<form id="paste-form">
<label for="text" class="muted">Paste a HIP log, backtrace, kernel log or Windows stack (any mix):</label>
<textarea id="text" name="text" spellcheck="false" autocomplete="off"></textarea>
<div class="drop" id="drop">or drop a file or bundle here (.zip, .tar.gz, .log, .dmp, core; up to {limit_mib} MiB),
or <label for="file">choose one</label>: <input type="file" id="file">
<div id="chosen" class="muted"></div></div>
<div class="row"><button type="submit" id="go">Triage</button><span id="status" role="status"></span></div>
</form>
<p id="verdict" role="status"></p>
<p class="row"><a id="open" hidden download="hip-triage-report.html">Download this report</a></p>
<iframe id="report" title="hip-triage report" hidden></iframe>
<p class="muted">hip-triage {version}. What you paste stays on this machine: it is triaged in memory and in a
temporary folder removed at once.</p>
</main>
<script src="paste.js"></script>
</body>
</html>
"""

SCRIPT = """(function () {
  "use strict";
  var form = document.getElementById("paste-form"), text = document.getElementById("text");
  var input = document.getElementById("file"), drop = document.getElementById("drop");
  var chosenLine = document.getElementById("chosen"), status = document.getElementById("status");
  var go = document.getElementById("go"), verdict = document.getElementById("verdict");
  var frame = document.getElementById("report"), open = document.getElementById("open");
  var limit = parseInt(document.body.dataset.limit, 10), chosen = null, shown = null;

  function mib(n) { return (n / 1048576).toFixed(1) + " MiB"; }
  function say(message, isError) { status.textContent = message; status.className = isError ? "error" : ""; }
  function pick(file) {
    chosen = file;
    chosenLine.textContent = file ? "Chosen: " + file.name + " (" + mib(file.size) + "); the pasted text is ignored" : "";
  }

  input.addEventListener("change", function () { pick(input.files[0] || null); });
  drop.addEventListener("dragover", function (event) { event.preventDefault(); drop.classList.add("over"); });
  drop.addEventListener("dragleave", function () { drop.classList.remove("over"); });
  drop.addEventListener("drop", function (event) {
    event.preventDefault();
    drop.classList.remove("over");
    if (event.dataTransfer.files.length) pick(event.dataTransfer.files[0]);
    else text.value = event.dataTransfer.getData("text/plain");
  });
  frame.addEventListener("load", function () {
    var doc = frame.contentDocument;
    if (doc && doc.documentElement) frame.style.height = Math.max(400, doc.documentElement.scrollHeight + 4) + "px";
  });

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var body = chosen, name = chosen ? chosen.name : "paste.txt";
    if (!body) {
      if (!text.value.trim()) { say("Paste a log or choose a file first.", true); return; }
      body = new Blob([text.value], { type: "text/plain" });
    }
    if (body.size > limit) {
      say(name + " is " + mib(body.size) + "; the limit is " + mib(limit) + ".", true);
      return;
    }
    say("Triaging " + name + " (" + mib(body.size) + ")...", false);
    go.disabled = true;
    fetch("triage", { method: "POST", body: body,
                      headers: { "Content-Type": "application/octet-stream", "X-File-Name": encodeURIComponent(name) } })
      .then(function (response) {
        return response.text().then(function (html) {
          if (!response.ok) { say(html, true); return; }
          if (shown) URL.revokeObjectURL(shown);
          shown = URL.createObjectURL(new Blob([html], { type: "text/html" }));
          verdict.textContent = response.headers.get("X-Triage-Class") + " (" +
            response.headers.get("X-Triage-Confidence") + "): " +
            decodeURIComponent(response.headers.get("X-Triage-Title") || "");
          frame.hidden = false;
          frame.src = shown;
          open.hidden = false;
          open.href = shown;
          say("Done.", false);
        });
      })
      .catch(function (err) { say("The triage server did not answer (" + err.message + ").", true); })
      .finally(function () { go.disabled = false; });
  });
})();
"""


def is_loopback(host: str) -> bool:
    """True for a loopback address or name (the only safe default for a page that reads user logs)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def display_name(raw: str | None) -> str:
    """The name an upload is shown under, from the browser's (percent-encoded) X-File-Name.

    Any Unicode is kept, but no folders, path separators, control or format characters (a
    right-to-left override could disguise a name), no leading dots, and at most NAME_CHARS
    characters (the extension is kept when a long name is cut). It is never used on disk.
    """
    text = raw or ""
    try:  # a client that sent the name as raw UTF-8 rather than percent-encoded (http.server reads Latin-1)
        text = text.encode("latin-1").decode("utf-8")
    except (UnicodeEncodeError, UnicodeDecodeError):
        pass
    text = urllib.parse.unquote(text, errors="replace").replace("\\", "/").rsplit("/", 1)[-1]
    # "!" separates an archive from its members in artifact names; the rest would hide or forge text.
    text = "".join("_" if ch == "!" or unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Co", "Cn", "Zl", "Zp")
                   else ch for ch in text)
    text = text.strip().lstrip(".").strip()
    if len(text) > NAME_CHARS:
        stem, dot, ext = text.rpartition(".")
        keep = dot + ext if dot and stem and 0 < len(ext) <= 16 else ""
        text = text[: NAME_CHARS - len(keep) - 1].rstrip() + "\u2026" + keep
    return text or "upload"


class PasteServer(ThreadingHTTPServer):
    """The paste page's server: one thread per connection; ``max_upload`` in bytes, ``request_timeout`` in
    seconds (the time a client has to send one whole request, and the longest silence while sending it)."""

    daemon_threads = True
    request_queue_size = LISTEN_BACKLOG

    def __init__(self, host: str, port: int, max_upload: int = DEFAULT_MAX_UPLOAD, quiet: bool = False,
                 request_timeout: float = DEFAULT_TIMEOUT) -> None:
        if request_timeout <= 0:
            raise ValueError("request_timeout must be positive")
        self.max_upload = max_upload
        self.quiet = quiet
        self.request_timeout = request_timeout
        self.loopback = is_loopback(host)
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"

    def handle_error(self, request, client_address) -> None:
        """An exception that escaped a handler: one line for a client that went away, else the traceback."""
        if self.quiet:
            return
        err = sys.exc_info()[1]
        if isinstance(err, OSError):
            sys.stderr.write(f"serve: {client_address[0]}: connection error ({type(err).__name__}: {err})\n")
        else:
            sys.stderr.write(f"serve: {client_address[0]}: unexpected error\n{traceback.format_exc()}")


class _Input(io.RawIOBase):
    """A connection's input: the socket, with a deadline for the whole request on top of its idle timeout.

    A plain socket timeout bounds only each wait for data, so a client sending a byte just inside it
    would hold a handler forever; here every read waits at most until the request's deadline.
    """

    def __init__(self, sock: socket.socket, idle: float) -> None:
        self.sock = sock
        self.idle = idle
        self.deadline: float | None = None
        self.received = 0  # bytes of the current request
        self.timed_out = False

    def start(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds
        self.received = 0
        self.timed_out = False

    def stop(self) -> None:
        """The request is read: no deadline, and the plain idle timeout again (it also bounds the answer)."""
        self.deadline = None
        self.sock.settimeout(self.idle)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                self.timed_out = True
                raise TimeoutError("the request took longer than the timeout")
            self.sock.settimeout(min(self.idle, left))
        try:
            count = self.sock.recv_into(buffer)
        except TimeoutError:
            self.timed_out = True
            raise
        self.received += count
        return count


class _Handler(BaseHTTPRequestHandler):
    server: PasteServer
    server_version = f"hip-triage/{__version__}"
    sys_version = ""
    # Answers are HTTP/1.0 with Connection: close: one request per connection, so an unread body can never
    # be taken for a next request.

    def setup(self) -> None:
        self.timeout = self.server.request_timeout  # the socket's idle timeout, set by StreamRequestHandler
        super().setup()
        self.rfile.close()  # the socket's own file: replaced by one that keeps the request's deadline
        self._input = _Input(self.connection, self.server.request_timeout)
        self.rfile = io.BufferedReader(self._input)
        self._responded = False
        self._linger = False
        self.command, self.requestline, self.request_version = None, "", "HTTP/1.0"

    def handle_one_request(self) -> None:
        self._input.start(self.server.request_timeout)
        super().handle_one_request()  # drops the connection on a timeout
        if self._input.timed_out and not self._responded:
            self.close_connection = True
            if self._input.received:  # a client that sent part of a request is told; a silent one just dropped
                try:
                    self._refuse(HTTPStatus.REQUEST_TIMEOUT,
                                 f"The request took longer than {self.server.request_timeout:g} s to arrive; send it "
                                 "again (a slow link may need a smaller file or triage serve --timeout).")
                except OSError:
                    pass

    def finish(self) -> None:
        try:
            if self._linger:
                self._drain()
        finally:
            super().finish()

    def _drain(self) -> None:
        """After an answer sent before the body was read: read and drop what the client is still sending, for a
        short while, so that closing does not reset the connection under the answer before the client reads it."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            self._input.start(_LINGER_SECONDS)
            drained = 0
            while drained < _LINGER_BYTES:
                chunk = self.rfile.read1(1 << 16)
                if not chunk:
                    break
                drained += len(chunk)
        except (OSError, ValueError):
            pass

    def log_message(self, fmt: str, *args) -> None:
        if not self.server.quiet:
            message = (fmt % args).translate(_LOG_ESCAPES)
            sys.stderr.write(f"serve: {self.address_string()} {message}\n")

    def send_response(self, code: int, message: str | None = None) -> None:
        self._responded = True
        self._input.stop()
        super().send_response(code, message)

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """http.server's own refusals (a malformed request line, headers too long...): one line, no echo."""
        reason = {
            HTTPStatus.BAD_REQUEST: "The request is not valid HTTP; open the paste page and send it from there.",
            HTTPStatus.REQUEST_URI_TOO_LONG:
                "The address is too long; open the paste page and send the file from there.",
            HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE:
                "The request headers are too long or too many; send the file from the paste page.",
            HTTPStatus.NOT_IMPLEMENTED: "Only GET (the paste page) and POST /triage (an upload) are answered here.",
            HTTPStatus.HTTP_VERSION_NOT_SUPPORTED: "Only HTTP/1.0 and HTTP/1.1 are answered here.",
        }.get(code, "The request was refused; open the paste page and send it from there.")
        self.log_error("code %d, message %s", code, message or "")
        if self.request_version in ("", "HTTP/0.9"):  # a request too broken to have a version: answer with headers
            self.request_version = "HTTP/1.0"
        self._refuse(code, reason)

    def _send(self, status: int, body: str, content_type: str = "text/plain; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        self.send_header("Connection", "close")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _refuse(self, status: int, message: str, *, unread_body: bool = False) -> None:
        """A one-line plain-text refusal; the connection closes after it (draining a body left unread)."""
        self.close_connection = True
        self._linger = self._linger or unread_body
        self._send(status, " ".join(message.split()))

    def _addressed_to_us(self) -> bool:
        """Refuse requests a web page could make through a name that resolves to this machine."""
        if not self.server.loopback:
            return True
        port = self.server.server_address[1]
        host = (self.headers.get("Host") or "").lower()
        return host in {f"{name}:{port}" for name in _LOOPBACK_NAMES} | set(_LOOPBACK_NAMES)

    def _same_origin(self) -> bool:
        """A browser upload must come from this page (a tool such as curl sends no Origin)."""
        origin = self.headers.get("Origin")
        return origin is None or origin.lower() == f"http://{(self.headers.get('Host') or '').lower()}"

    def do_GET(self) -> None:
        if not self._addressed_to_us():
            self._refuse(HTTPStatus.FORBIDDEN, "This page answers only to localhost; open it as "
                         f"http://127.0.0.1:{self.server.server_address[1]}/.")
        elif self.path in ("/", "/index.html"):
            from triage.report.script import inline_script

            csp = ("default-src 'none'; script-src 'self' '" + inline_script()["script_hash"] + "'; "
                   "style-src 'unsafe-inline'; connect-src 'self'; frame-src blob:; img-src 'none'; "
                   "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
            limit = self.server.max_upload
            page = (PAGE.replace("{limit}", str(limit)).replace("{limit_mib}", f"{limit / (1 << 20):g}")
                    .replace("{version}", __version__))
            self._send(HTTPStatus.OK, page, "text/html; charset=utf-8", {"Content-Security-Policy": csp})
        elif self.path == "/paste.js":
            self._send(HTTPStatus.OK, SCRIPT, "text/javascript; charset=utf-8")
        else:
            self._refuse(HTTPStatus.NOT_FOUND, "Not found; the paste page is at /.")

    def _declared_length(self) -> int | None:
        """The body's size from Content-Length, or None once a refusal is sent (the body is never read then)."""
        again = "send the file again from the paste page (or with curl --data-binary @FILE)"
        values = self.headers.get_all("Content-Length") or []
        if self.headers.get("Transfer-Encoding") is not None:
            self._refuse(HTTPStatus.LENGTH_REQUIRED,
                         f"Chunked uploads are not read: {again}, with a Content-Length.", unread_body=True)
            return None
        if not values:
            self._refuse(HTTPStatus.LENGTH_REQUIRED, f"The upload has no size (Content-Length): {again}.",
                         unread_body=True)
            return None
        value = values[0].strip(" \t")
        if len(values) > 1 or not re.fullmatch(r"[0-9]+", value):
            self._refuse(HTTPStatus.BAD_REQUEST, f"The upload's size (Content-Length) is not a number of bytes: "
                         f"{again}.", unread_body=True)
            return None
        digits = value.lstrip("0") or "0"
        length = int(digits) if len(digits) <= 18 else None  # more digits than any upload (and int() allows)
        limit = self.server.max_upload
        if length is None or length > limit:
            size = f"{length / (1 << 20):.1f} MiB" if length is not None else "far too large"
            self._refuse(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                         f"The upload is {size}; the limit is {limit / (1 << 20):g} MiB: send a smaller file (only the "
                         "logs), or ask whoever runs the server to raise it (triage serve --max-upload MIB).",
                         unread_body=True)
            return None
        return length

    def do_POST(self) -> None:
        if not (self._addressed_to_us() and self._same_origin()):
            self._refuse(HTTPStatus.FORBIDDEN, "Uploads are accepted only from this page; open it and send the file "
                         "from there.", unread_body=True)
            return
        if self.path != "/triage":
            self._refuse(HTTPStatus.NOT_FOUND, "Not found; uploads go to POST /triage.", unread_body=True)
            return
        length = self._declared_length()
        if length is None:
            return
        try:
            data = self.rfile.read(length)
        except TimeoutError:
            self._refuse(HTTPStatus.REQUEST_TIMEOUT,
                         f"The upload took longer than {self.server.request_timeout:g} s to arrive; send it again "
                         "(a slow link may need a smaller file, or ask for a longer triage serve --timeout).")
            return
        if len(data) < length:  # the client closed before sending all it announced: nobody to answer
            self.close_connection = True
            return
        if not data.strip():
            self._refuse(HTTPStatus.BAD_REQUEST, "Nothing to triage: paste a log or choose a file.")
            return
        try:
            html, top = _triage(data, display_name(self.headers.get("X-File-Name")))
        except Exception:  # the page shows the message; the server keeps serving, and its log has the details
            ref = secrets.token_hex(4)
            if not self.server.quiet:
                sys.stderr.write(f"serve: {self.address_string()} triage failed (ref {ref}):\n{traceback.format_exc()}")
            self._refuse(HTTPStatus.INTERNAL_SERVER_ERROR,
                         f"The triage failed on this upload (ref {ref}); try again, and if it fails again run "
                         "triage FILE on the command line and report the problem with that ref.")
            return
        self._send(HTTPStatus.OK, html, "text/html; charset=utf-8", {
            "X-Triage-Class": top.klass,
            "X-Triage-Confidence": f"{round(top.confidence * 100)}%",
            "X-Triage-Title": urllib.parse.quote(top.title or ""),
        })


def _renamed(text: str, name: str) -> str:
    """An artifact name or reader warning about the stored upload, about its display name instead."""
    for sep in ("!", ":"):
        if text.startswith(_STORED_NAME + sep):
            return name + text[len(_STORED_NAME):]
    return name if text == _STORED_NAME else text


def _triage(data: bytes, name: str) -> tuple[str, Diagnosis]:
    """The HTML report for one upload, shown as ``name``."""
    from triage.report import render

    result = triage_upload(data, name)
    return render(result, "html"), result.top


def triage_upload(data: bytes, name: str, signatures: Path | None = None) -> "Result":
    """The triage of one upload, shown as ``name`` (also used by ``triage desk``).

    The upload is written under a name the server makes (never one from the client) into a temporary
    folder that is removed as soon as it is read; the artifacts are then named after ``name``.
    ``signatures`` is the database folder (the shipped one by default).
    """
    from triage.ingest import read_inputs
    from triage.match import load
    from triage.pipeline import analyze
    from triage.resources import data_dir

    with tempfile.TemporaryDirectory(prefix="hip-triage-serve-") as folder:
        path = Path(folder, _STORED_NAME)
        path.write_bytes(data)
        artifacts, warnings = read_inputs([str(path)])
    for artifact in artifacts:
        artifact.name = _renamed(artifact.name, name)
    database = signatures or data_dir("signatures")
    return analyze(artifacts, load(database), database, [_renamed(w, name) for w in warnings])
