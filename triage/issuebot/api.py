"""The GitHub REST API, as the issue bot uses it: with retries where waiting helps, a clear message where not.

The token goes to the API's own host only: redirects are followed by hand, and only to that host
(GitHub answers a renamed repository with a 301 to the same API). Attachments are fetched by
``fetch.py``, which never holds the token.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from email.message import Message
from typing import Any, Protocol

DEFAULT_API = "https://api.github.com"
APP_BOT_LOGIN = "github-actions[bot]"  # who writes with the workflow's GITHUB_TOKEN
RETRIES = 4  # attempts after the first
MAX_WAIT = 60.0  # seconds; a rate limit that resets later than this fails the run instead of stalling it
REDIRECTS = (301, 302, 307, 308)


class GitHubError(RuntimeError):
    """A GitHub API call failed (after retries where they could help)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class Opener(Protocol):
    """What ``RestClient`` sends requests through: ``urllib``'s opener, or a fake in tests."""

    def open(self, request: urllib.request.Request, timeout: float) -> Any: ...


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Hand every redirect back as an HTTPError, so the caller decides where a header may go."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Message,
                         newurl: str) -> None:
        return None


def no_redirect_opener() -> urllib.request.OpenerDirector:
    """A urllib opener that follows no redirect by itself."""
    return urllib.request.build_opener(_NoRedirect)


@dataclass(frozen=True)
class _Reply:
    status: int
    headers: Message
    body: bytes


def _wait_for(status: int, headers: Message, attempt: int, now: float) -> float | None:
    """Seconds to wait before trying a failed call again, or None when trying again cannot help.

    5xx: exponential backoff. 403/429 are a rate limit only when GitHub says so: ``Retry-After`` (a
    secondary limit), or ``x-ratelimit-remaining: 0`` (wait until ``x-ratelimit-reset``); a 429 without
    either backs off. Any other 403 is a permission problem and is not retried.
    """
    backoff = float(2 ** attempt)
    if status >= 500:
        return backoff
    if status not in (403, 429):
        return None
    retry_after = headers.get("Retry-After")
    if retry_after and retry_after.strip().isdigit():
        return float(retry_after.strip())
    if headers.get("x-ratelimit-remaining") == "0":
        reset = headers.get("x-ratelimit-reset", "")
        return max(0.0, float(reset) - now) + 1.0 if reset.isdigit() else backoff
    return backoff if status == 429 else None


def _explain(method: str, path: str, status: int, headers: Message, body: bytes, now: float) -> str:
    """The one line the job log shows for a call that failed for good."""
    try:
        said = str(json.loads(body).get("message", ""))[:300]
    except (ValueError, AttributeError):
        said = ""
    hint = {
        401: "the token was refused: check the action's github-token input",
        403: "forbidden: the workflow needs `permissions: issues: write`, and a fork's pull-request or "
             "read-only token cannot write",
        404: "not found: the repository, issue or comment does not exist, or the token cannot see it",
        410: "gone: the issue was deleted or issues are turned off",
        422: "GitHub refused the request's content",
    }.get(status, "")
    reset = headers.get("x-ratelimit-reset", "")
    if status in (403, 429) and headers.get("Retry-After"):
        hint = f"rate limited: GitHub asks to wait {headers.get('Retry-After')} s, longer than this run waits"
    elif status in (403, 429) and headers.get("x-ratelimit-remaining") == "0" and reset.isdigit():
        when = time.strftime("%H:%M:%S UTC", time.gmtime(int(reset)))
        hint = f"rate limit exhausted until {when} ({max(0, int(int(reset) - now))} s from now)"
    elif status == 429:
        hint = "rate limited"
    return f"{method} {path}: HTTP {status}" + (f": {hint}" if hint else "") + (f" (GitHub: {said})" if said else "")


class RestClient:
    """The GitHub REST API over urllib with the workflow's token; ``sleep``, ``clock`` and ``opener`` are
    parameters so tests can run it against a fake server without waiting."""

    def __init__(self, token: str, api: str = DEFAULT_API, timeout: float = 60.0, opener: Opener | None = None,
                 sleep: Callable[[float], None] = time.sleep, clock: Callable[[], float] = time.time,
                 max_wait: float = MAX_WAIT) -> None:
        self.token, self.api, self.timeout = token, api.rstrip("/"), timeout
        self._host = urllib.parse.urlsplit(self.api).netloc
        self._opener = opener or no_redirect_opener()
        self._sleep, self._clock, self._max_wait = sleep, clock, max_wait

    def _send(self, method: str, url: str, data: bytes | None) -> _Reply:
        """One request; redirects only to the API's own host (the token goes nowhere else)."""
        for _ in range(3):
            request = urllib.request.Request(url, method=method, data=data, headers={
                "Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
                "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "hip-triage-issue-bot",
                "Content-Type": "application/json"})
            try:
                with self._opener.open(request, timeout=self.timeout) as response:
                    return _Reply(response.status, response.headers, response.read())
            except urllib.error.HTTPError as err:
                location = err.headers.get("Location") if err.code in REDIRECTS else None
                if not location:
                    return _Reply(err.code, err.headers, err.read(4000))
                target = urllib.parse.urljoin(url, location)
                parts = urllib.parse.urlsplit(target)
                if parts.scheme != "https" or parts.netloc != self._host:
                    raise GitHubError(f"{method} {url}: redirected off the API host; not followed", err.code) from None
                url = target
        raise GitHubError(f"{method} {url}: too many redirects")

    def call(self, method: str, path: str, payload: Any = None) -> Any:
        """One API call, tried again on 5xx, rate limits and network errors; the decoded JSON answer."""
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        attempt = 0
        while True:
            try:
                reply = self._send(method, f"{self.api}{path}", data)
            except (urllib.error.URLError, OSError) as err:
                if attempt == RETRIES:
                    raise GitHubError(f"{method} {path}: {getattr(err, 'reason', err)}") from None
                self._sleep(float(2 ** attempt))
                attempt += 1
                continue
            if reply.status < 300:
                return json.loads(reply.body) if reply.body.strip() else None
            wait = _wait_for(reply.status, reply.headers, attempt, self._clock())
            if wait is None or wait > self._max_wait or attempt == RETRIES:
                raise GitHubError(_explain(method, path, reply.status, reply.headers, reply.body, self._clock()),
                                  reply.status)
            self._sleep(wait)
            attempt += 1

    def login(self) -> str | None:
        """The token's own login (``GET /user``), or None for an installation token (GITHUB_TOKEN, a GitHub
        App), which GitHub refuses that call with 403."""
        try:
            return str(self.call("GET", "/user")["login"])
        except GitHubError as err:
            if err.status == 403:
                return None
            raise

    def comments(self, repo: str, number: int) -> list[dict]:
        """All of an issue's comments, oldest first (at most 3,000)."""
        out: list[dict] = []
        for page in range(1, 31):
            batch = self.call("GET", f"/repos/{repo}/issues/{number}/comments?per_page=100&page={page}")
            out.extend(batch)
            if len(batch) < 100:
                break
        return out

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        return self.call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        return self.call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body})

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        self.call("POST", f"/repos/{repo}/issues/{number}/labels", {"labels": labels})

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self.call("DELETE", f"/repos/{repo}/issues/{number}/labels/{urllib.parse.quote(label, safe='')}")


class HasLogin(Protocol):
    """A client that can say whose token it holds (``RestClient``, or a test's fake)."""

    def login(self) -> str | None: ...


def identity(client: HasLogin | None, bot_login: str | None) -> str:
    """The login whose marked comment is the bot's own.

    The rule: ``bot_login`` when given (a GitHub App's ``<slug>[bot]``); else the token's own login from
    ``GET /user`` (a personal or fine-grained token); else, when GitHub refuses that call as it does for
    an installation token, ``github-actions[bot]``, the author of every comment made with GITHUB_TOKEN.
    Without a client (a dry run) there is no call: ``bot_login`` or ``github-actions[bot]``.
    """
    if bot_login:
        return bot_login
    return (client.login() if client is not None else None) or APP_BOT_LOGIN
