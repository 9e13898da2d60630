"""The paste page behind ``triage serve``: paste a log or drop a bundle, get the HTML report in the page.

A small standard-library HTTP server, meant for one support person's machine: it listens on
loopback unless told otherwise, answers only requests addressed to it by a loopback name (so a
web page cannot reach it through DNS rebinding) and only same-origin uploads. An upload is
read in memory up to a size limit, written to a temporary folder for the triage and removed
with it; nothing is kept after the answer.
"""

from __future__ import annotations

import ipaddress
import re
import sys
import tempfile
import urllib.parse
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from triage import __version__
from triage.model import Diagnosis

DEFAULT_MAX_UPLOAD = 50 << 20
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


def _safe_name(raw: str | None) -> str:
    """A plain file name from the browser's (percent-encoded) name: no folders, no hidden files."""
    name = urllib.parse.unquote(raw or "")
    name = re.sub(r"[^\w.+-]", "_", name.replace("\\", "/").rsplit("/", 1)[-1]).lstrip(".")
    return name[:120] or "upload"


class PasteServer(ThreadingHTTPServer):
    """The paste page's server; ``max_upload`` in bytes."""

    daemon_threads = True

    def __init__(self, host: str, port: int, max_upload: int = DEFAULT_MAX_UPLOAD, quiet: bool = False) -> None:
        self.max_upload = max_upload
        self.quiet = quiet
        self.loopback = is_loopback(host)
        super().__init__((host, port), _Handler)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{'[' + host + ']' if ':' in host else host}:{port}/"


class _Handler(BaseHTTPRequestHandler):
    server: PasteServer
    server_version = f"hip-triage/{__version__}"
    sys_version = ""

    def log_message(self, fmt: str, *args) -> None:
        if not self.server.quiet:
            sys.stderr.write(f"serve: {self.address_string()} {fmt % args}\n")

    def _send(self, status: int, body: str, content_type: str = "text/plain; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.send_header("Referrer-Policy", "no-referrer")
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

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
            self._send(HTTPStatus.FORBIDDEN, "This page answers only to localhost.")
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
            self._send(HTTPStatus.NOT_FOUND, "Not found.")

    def do_POST(self) -> None:
        if not (self._addressed_to_us() and self._same_origin()):
            self._send(HTTPStatus.FORBIDDEN, "Uploads are accepted only from this page.")
            return
        if self.path != "/triage":
            self._send(HTTPStatus.NOT_FOUND, "Not found.")
            return
        try:
            length = int(self.headers.get("Content-Length", ""))
        except ValueError:
            self._send(HTTPStatus.LENGTH_REQUIRED, "The upload has no size (Content-Length).")
            return
        limit = self.server.max_upload
        if length > limit:
            self.close_connection = True
            self._send(HTTPStatus.REQUEST_ENTITY_TOO_LARGE,
                       f"The upload is {length / (1 << 20):.1f} MiB; the limit is {limit / (1 << 20):g} MiB "
                       "(triage serve --max-upload MIB raises it).", headers={"Connection": "close"})
            return
        data = self.rfile.read(length)
        if not data.strip():
            self._send(HTTPStatus.BAD_REQUEST, "Nothing to triage: paste a log or choose a file.")
            return
        try:
            html, top = _triage(data, _safe_name(self.headers.get("X-File-Name")))
        except Exception as err:  # the page shows the message; the server keeps serving
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR, f"The triage failed ({type(err).__name__}: {err}).")
            return
        self._send(HTTPStatus.OK, html, "text/html; charset=utf-8", {
            "X-Triage-Class": top.klass,
            "X-Triage-Confidence": f"{round(top.confidence * 100)}%",
            "X-Triage-Title": urllib.parse.quote(top.title or ""),
        })


def _triage(data: bytes, name: str) -> tuple[str, Diagnosis]:
    """The HTML report for one upload, read from a temporary folder that is removed before returning."""
    from triage.pipeline import triage
    from triage.report import render

    with tempfile.TemporaryDirectory(prefix="hip-triage-serve-") as folder:
        path = Path(folder, name)
        path.write_bytes(data)
        result = triage([str(path)])
    return render(result, "html"), result.top
