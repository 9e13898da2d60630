"""A small Chrome DevTools Protocol client over ``--remote-debugging-pipe``, for the browser tests.

The pipe transport needs no websocket library: Chromium reads NUL-separated JSON commands on
file descriptor 3 and writes replies and events on descriptor 4. One headless Chromium serves a
whole test module; each ``Page`` is a tab with its own session, and records what the tests must
rule out: console errors, uncaught exceptions, JavaScript dialogs and network requests.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Callable

CHROMIUM = os.environ.get("TRIAGE_CHROMIUM", "/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--mute-audio", "--hide-scrollbars"]


class CDPError(RuntimeError):
    """A command failed, or Chromium went away."""


def available() -> str | None:
    """Why the browser tests cannot run here, or None when they can."""
    if not (Path(CHROMIUM).is_file() and os.access(CHROMIUM, os.X_OK)):
        return f"{CHROMIUM} is absent (Debian package chromium, listed in .ci/apt-packages)"
    return None


class Browser:
    """One headless Chromium process driven over the DevTools pipe."""

    def __init__(self, timeout: float = 30.0, startup: float = 180.0) -> None:
        self.timeout, self.startup = timeout, startup
        self.profile = tempfile.mkdtemp(prefix="triage-chromium-")
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:  # in the child, before exec: the pipe ends become fds 3 and 4
            read_end, write_end = os.dup(to_chrome_r), os.dup(from_chrome_w)  # never 3 or 4 themselves
            os.dup2(read_end, 3)
            os.dup2(write_end, 4)

        self.process = subprocess.Popen(
            [CHROMIUM, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe", "about:blank"],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            preexec_fn=wire, close_fds=False)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next_id = 0
        self._lock = threading.Lock()
        self._replies: dict[int, dict] = {}
        self._events: list[dict] = []
        self._changed = threading.Condition()
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._from_chrome, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._changed:
                    self._replies[-1] = {"error": {"message": "Chromium closed the pipe"}}
                    self._changed.notify_all()
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            with self._changed:
                for raw in messages:
                    message = json.loads(raw)
                    if "id" in message:
                        self._replies[message["id"]] = message
                    else:
                        self._events.append(message)
                        if message.get("method") == "Page.javascriptDialogOpening":  # recorded, then dismissed
                            self._post("Page.handleJavaScriptDialog", {"accept": True}, message.get("sessionId"))
                self._changed.notify_all()

    def _post(self, method: str, params: dict | None, session: str | None) -> int:
        with self._lock:
            self._next_id += 1
            ident = self._next_id
            message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            try:
                os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
            except OSError as err:
                raise CDPError(f"{method}: Chromium is not running ({err})") from None
        return ident

    def send(self, method: str, params: dict | None = None, session: str | None = None,
             timeout: float | None = None) -> dict:
        """Run one command and return its result (raises CDPError on an error reply)."""
        ident = self._post(method, params, session)
        timeout = timeout or self.timeout
        deadline = time.monotonic() + timeout
        with self._changed:
            while ident not in self._replies:
                if -1 in self._replies:
                    raise CDPError(f"{method}: {self._replies[-1]['error']['message']}")
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    raise CDPError(f"{method}: no reply in {timeout} s")
            reply = self._replies.pop(ident)
        if "error" in reply:
            raise CDPError(f"{method}: {reply['error'].get('message')}")
        return reply.get("result", {})

    def events(self, session: str | None = None) -> list[dict]:
        with self._changed:
            return [e for e in self._events if session is None or e.get("sessionId") == session]

    def wait_event(self, match: Callable[[dict], bool], timeout: float | None = None) -> dict:
        """The first event (already seen or still to come) that ``match`` accepts."""
        deadline = time.monotonic() + (timeout or self.timeout)
        with self._changed:
            while True:
                for event in self._events:
                    if match(event):
                        return event
                if not self._changed.wait(max(0.0, deadline - time.monotonic())):
                    raise CDPError("timed out waiting for an event")

    def page(self, width: int = 1280, height: int = 900) -> "Page":
        # A tab starts a renderer: the first one on a fresh machine also builds the font cache and
        # can take a minute on a busy CI runner, so creating a tab gets the start-up allowance.
        target = self.send("Target.createTarget", {"url": "about:blank"}, timeout=self.startup)["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return Page(self, target, session, width, height)

    def close(self) -> None:
        try:
            self.send("Browser.close")
        except CDPError:
            pass
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


class Page:
    """A tab: navigate, evaluate, screenshot, and the problems it recorded."""

    def __init__(self, browser: Browser, target: str, session: str, width: int, height: int) -> None:
        self.browser, self.target, self.session = browser, target, session
        for domain in ("Page", "Runtime", "Log", "Network"):
            self.send(f"{domain}.enable")
        self.resize(width, height)
        self._loads = 0

    def send(self, method: str, params: dict | None = None) -> dict:
        return self.browser.send(method, params, self.session)

    def resize(self, width: int, height: int = 900) -> None:
        self.width = width
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": width < 600})

    def goto(self, url: str) -> None:
        """Navigate and wait for the load event."""
        seen = len(self._of("Page.loadEventFired"))
        self.send("Page.navigate", {"url": url})
        self.browser.wait_event(lambda e: e.get("sessionId") == self.session
                                and e["method"] == "Page.loadEventFired"
                                and len(self._of("Page.loadEventFired")) > seen)

    def _of(self, method: str) -> list[dict]:
        return [e for e in self.browser.events(self.session) if e["method"] == method]

    def js(self, expression: str) -> Any:
        """Evaluate an expression in the page (promises awaited) and return its value."""
        reply = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                               "awaitPromise": True, "userGesture": True})
        if "exceptionDetails" in reply:
            raise CDPError(f"{expression[:60]}: {reply['exceptionDetails'].get('text')} "
                           f"{reply['exceptionDetails'].get('exception', {}).get('description', '')}")
        return reply["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 20.0) -> Any:
        """Poll until the expression is truthy; return its value."""
        deadline = time.monotonic() + timeout
        while True:
            value = self.js(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise CDPError(f"timed out waiting for {expression}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click in the middle of the element (a trusted user gesture)."""
        box = self.js(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); e.scrollIntoView();"
                      " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def screenshot(self, path: Path) -> None:
        """The whole page as a PNG, at the current width."""
        height = int(self.js("Math.ceil(document.documentElement.scrollHeight)"))
        data = self.send("Page.captureScreenshot", {
            "format": "png", "captureBeyondViewport": True,
            "clip": {"x": 0, "y": 0, "width": self.width, "height": min(height, 12000), "scale": 1}})["data"]
        path.write_bytes(base64.b64decode(data))

    # -- what went wrong ----------------------------------------------------------------------

    def console_errors(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions and browser log errors (e.g. CSP violations)."""
        out = []
        for e in self.browser.events(self.session):
            p = e.get("params", {})
            if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "warning", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                                  for a in p.get("args", [])))
            elif e["method"] == "Runtime.exceptionThrown":
                details = p.get("exceptionDetails", {})
                out.append("exception: " + str(details.get("exception", {}).get("description") or details.get("text")))
            elif e["method"] == "Log.entryAdded" and p["entry"]["level"] in ("error", "warning"):
                out.append(f"log {p['entry']['level']} ({p['entry']['source']}): {p['entry']['text']}")
        return out

    def requests(self, allowed: Callable[[str], bool] = lambda url: False) -> list[str]:
        """Every network request the page made, except those ``allowed`` accepts."""
        urls = [e["params"]["request"]["url"] for e in self._of("Network.requestWillBeSent")]
        return [u for u in urls if not allowed(u)]

    def dialogs(self) -> list[str]:
        return [e["params"].get("message", "") for e in self._of("Page.javascriptDialogOpening")]

    def forget(self) -> None:
        """Drop the events recorded so far (before a new navigation)."""
        with self.browser._changed:
            self.browser._events = [e for e in self.browser._events if e.get("sessionId") != self.session]

    def close(self) -> None:
        self.browser.send("Target.closeTarget", {"targetId": self.target})
