"""Issue automation: triage a GitHub issue, post or update one comment, and label the issue.

``action.yml`` runs ``python -m triage.issuebot`` when an issue is opened or edited. The bot
reads the issue's attachments (links to GitHub-hosted ``.zip``, ``.log``, ``.dmp``, ``.txt``
files) and the fenced code blocks of its body, runs the same triage as ``triage --format
markdown --redact``, and keeps exactly one comment of its own up to date: it finds the comment
by the report's hidden marker, so an edited issue updates the comment instead of adding one.
Labels are ``<prefix><class>`` (``triage:device-libs-missing``, ``triage:unknown``); stale ones
with the same prefix are removed.

GitHub is reached only through a ``GitHub`` client object, so tests run the bot against
recorded issue payloads and local files, with no network.

Exit codes: 0 done (comment posted, updated or already current; or nothing to read in the
issue), 2 bad usage or configuration, 3 a GitHub API call failed, 4 an internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, Sequence

MARKER = "<!-- hip-triage-report -->"
DEFAULT_PREFIX = "triage:"
SUFFIXES = (".zip", ".log", ".dmp", ".txt")
MAX_ATTACHMENTS = 20
MAX_ATTACHMENT_BYTES = 25 << 20  # GitHub's own limit for an attached file
EXIT_OK, EXIT_USAGE, EXIT_GITHUB, EXIT_INTERNAL = 0, 2, 3, 4

# github.com/user-attachments/files/<id>/<name> (current) and github.com/<owner>/<repo>/files/<id>/<name> (older)
_ATTACHMENT = re.compile(r"https://github\.com/(?:user-attachments/files|[\w.-]+/[\w.-]+/files)/\d+/[^\s)\]>\"'<]+")
_FENCE_OPEN = re.compile(r"^ {0,3}(`{3,}|~{3,})([^`]*)$")


class GitHubError(RuntimeError):
    """A GitHub API call or an attachment download failed."""


class GitHub(Protocol):
    """What the bot needs from GitHub; ``RestClient`` talks to the real API, tests pass a fake."""

    def issue(self, repo: str, number: int) -> dict: ...
    def comments(self, repo: str, number: int) -> list[dict]: ...
    def create_comment(self, repo: str, number: int, body: str) -> dict: ...
    def update_comment(self, repo: str, comment_id: int, body: str) -> dict: ...
    def add_labels(self, repo: str, number: int, labels: list[str]) -> None: ...
    def remove_label(self, repo: str, number: int, label: str) -> None: ...
    def download(self, url: str, limit: int) -> bytes: ...


@dataclass
class Outcome:
    """What the bot did to one issue."""

    action: str  # "created", "updated", "unchanged" or "skipped"
    labels: list[str] = field(default_factory=list)
    comment: str = ""
    comment_id: int | None = None
    reason: str = ""


def labels_for(klass: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The issue labels for a triage result's top class (``unknown`` included)."""
    return [f"{prefix}{klass or 'unknown'}"]


def attachment_urls(body: str) -> list[str]:
    """GitHub-hosted attachment links in an issue body that the triage can read, in order, once each."""
    seen: dict[str, None] = {}
    for m in _ATTACHMENT.finditer(body or ""):
        url = m.group(0).rstrip(".,;:")
        if urllib.parse.urlsplit(url).path.lower().endswith(SUFFIXES):
            seen.setdefault(url, None)
    return list(seen)


def code_blocks(body: str) -> list[str]:
    """The contents of the fenced code blocks in a Markdown body (an unclosed fence runs to the end)."""
    blocks: list[str] = []
    fence, lines = None, []
    for line in (body or "").replace("\r\n", "\n").split("\n"):
        if fence is None:
            m = _FENCE_OPEN.match(line)
            if m and not (m.group(1)[0] == "`" and "`" in m.group(2)):
                fence, lines = m.group(1), []
            continue
        stripped = line.strip()
        if stripped.startswith(fence[0] * len(fence)) and not stripped.strip(fence[0]):
            blocks.append("\n".join(lines) + "\n")
            fence = None
        else:
            lines.append(line)
    if fence is not None and lines:
        blocks.append("\n".join(lines).rstrip("\n") + "\n")
    return [b for b in blocks if b.strip()]


def _file_name(url: str, index: int) -> str:
    """A safe local name for an attachment: its own base name, prefixed so two never collide."""
    base = urllib.parse.unquote(urllib.parse.urlsplit(url).path.rsplit("/", 1)[-1])
    base = re.sub(r"[^\w.+-]", "_", base).lstrip(".") or "attachment"
    return f"{index:02d}-{base[:100]}"


def _find_comment(comments: list[dict]) -> dict | None:
    for comment in comments:
        if (comment.get("body") or "").lstrip().startswith(MARKER):
            return comment
    return None


def triage_issue(client: GitHub, repo: str, issue: dict, redact: bool = True,
                 prefix: str = DEFAULT_PREFIX) -> Outcome:
    """Triage one issue (a GitHub issue object) and bring its comment and labels up to date."""
    from triage.pipeline import triage
    from triage.report import render

    number = int(issue["number"])
    body = issue.get("body") or ""
    notes: list[str] = []
    with tempfile.TemporaryDirectory(prefix="hip-triage-issue-") as tmp:
        paths = []
        urls = attachment_urls(body)
        if len(urls) > MAX_ATTACHMENTS:
            notes.append(f"the issue links {len(urls)} attachments; only the first {MAX_ATTACHMENTS} were read")
        for index, url in enumerate(urls[:MAX_ATTACHMENTS], 1):
            name = _file_name(url, index)
            try:
                data = client.download(url, MAX_ATTACHMENT_BYTES)
            except GitHubError as err:
                notes.append(f"attachment {name[3:]} could not be downloaded ({err})")
                continue
            path = Path(tmp, name)
            path.write_bytes(data)
            paths.append(str(path))
        for index, block in enumerate(code_blocks(body), 1):
            path = Path(tmp, f"issue-body-{index}.txt")
            path.write_text(block, encoding="utf-8")
            paths.append(str(path))
        if not paths:
            return Outcome("skipped", reason="no attachments or code blocks to read" + "".join(f"; {n}" for n in notes))
        result = triage(paths)
        result.case.warnings.extend(notes)
        comment = render(result, "markdown", redact=redact)
    labels = labels_for(result.top.klass, prefix)

    existing = _find_comment(client.comments(repo, number))
    if existing is None:
        made = client.create_comment(repo, number, comment)
        outcome = Outcome("created", labels, comment, made.get("id"))
    elif existing.get("body") == comment:
        outcome = Outcome("unchanged", labels, comment, existing.get("id"))
    else:
        client.update_comment(repo, int(existing["id"]), comment)
        outcome = Outcome("updated", labels, comment, existing.get("id"))

    current = [label["name"] if isinstance(label, dict) else str(label) for label in issue.get("labels") or []]
    for stale in (name for name in current if name.startswith(prefix) and name not in labels):
        client.remove_label(repo, number, stale)
    missing = [name for name in labels if name not in current]
    if missing:
        client.add_labels(repo, number, missing)
    return outcome


class RestClient:
    """The GitHub REST API over urllib, with the workflow's token."""

    def __init__(self, token: str, api: str = "https://api.github.com", timeout: float = 60.0) -> None:
        self.token, self.api, self.timeout = token, api.rstrip("/"), timeout

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        request = urllib.request.Request(
            f"{self.api}{path}", method=method,
            data=None if payload is None else json.dumps(payload).encode("utf-8"),
            headers={"Authorization": f"Bearer {self.token}", "Accept": "application/vnd.github+json",
                     "X-GitHub-Api-Version": "2022-11-28", "User-Agent": "hip-triage-issue-bot",
                     "Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as err:
            detail = err.read(2000).decode("utf-8", "replace")
            raise GitHubError(f"{method} {path}: HTTP {err.code} {detail}") from None
        except (urllib.error.URLError, OSError) as err:
            raise GitHubError(f"{method} {path}: {err}") from None
        return json.loads(raw) if raw else None

    def issue(self, repo: str, number: int) -> dict:
        return self._call("GET", f"/repos/{repo}/issues/{number}")

    def comments(self, repo: str, number: int) -> list[dict]:
        out: list[dict] = []
        for page in range(1, 51):
            batch = self._call("GET", f"/repos/{repo}/issues/{number}/comments?per_page=100&page={page}")
            out.extend(batch)
            if len(batch) < 100:
                break
        return out

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        return self._call("POST", f"/repos/{repo}/issues/{number}/comments", {"body": body})

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        return self._call("PATCH", f"/repos/{repo}/issues/comments/{comment_id}", {"body": body})

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        self._call("POST", f"/repos/{repo}/issues/{number}/labels", {"labels": labels})

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self._call("DELETE", f"/repos/{repo}/issues/{number}/labels/{urllib.parse.quote(label, safe='')}")

    def download(self, url: str, limit: int) -> bytes:
        """Fetch an attachment, following redirects by hand: the token goes to github.com only, never to
        the storage host it redirects to."""
        opener = urllib.request.build_opener(_NoRedirect)
        for _ in range(5):
            host = urllib.parse.urlsplit(url).hostname or ""
            headers = {"User-Agent": "hip-triage-issue-bot"}
            if host == "github.com" or host.endswith(".github.com"):
                headers["Authorization"] = f"Bearer {self.token}"
            try:
                with opener.open(urllib.request.Request(url, headers=headers), timeout=self.timeout) as response:
                    data = response.read(limit + 1)
            except urllib.error.HTTPError as err:
                location = err.headers.get("Location") if err.code in (301, 302, 303, 307, 308) else None
                if not location:
                    raise GitHubError(f"HTTP {err.code}") from None
                url = urllib.parse.urljoin(url, location)
                if not url.startswith("https://"):
                    raise GitHubError("redirected away from https") from None
                continue
            except (urllib.error.URLError, OSError) as err:
                raise GitHubError(str(err)) from None
            if len(data) > limit:
                raise GitHubError(f"over the {limit >> 20} MiB limit")
            return data
        raise GitHubError("too many redirects")


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, req, fp, code, msg, headers, newurl):  # a redirect comes back as an HTTPError
        return None


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m triage.issuebot",
        description="Triage a GitHub issue's attachments and code blocks; post or update the hip-triage comment "
                    "and set the triage:<class> label. Exit codes: 0 done, 2 bad usage or configuration, "
                    "3 a GitHub API call failed, 4 an internal error.")
    parser.add_argument("--event", default=os.environ.get("GITHUB_EVENT_PATH"),
                        help="the issues event payload (default: $GITHUB_EVENT_PATH)")
    parser.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY"),
                        help="owner/name (default: $GITHUB_REPOSITORY or the event's repository)")
    parser.add_argument("--issue", type=int, help="triage this issue number instead of the event's issue")
    parser.add_argument("--redact", default="true", choices=["true", "false"],
                        help="replace user/host names, addresses and serials in the comment (default: true)")
    parser.add_argument("--label-prefix", default=DEFAULT_PREFIX, help=f"label prefix (default: {DEFAULT_PREFIX})")
    parser.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", "https://api.github.com"))
    parser.add_argument("--dry-run", action="store_true",
                        help="print the comment and labels; change nothing on GitHub (reads still need a token)")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None, client: GitHub | None = None) -> int:
    """Command-line entry point; returns the exit code."""
    try:
        args = _arguments(argv)
    except SystemExit as stop:
        return EXIT_USAGE if stop.code else EXIT_OK
    event: dict = {}
    if args.event:
        try:
            event = json.loads(Path(args.event).read_text(encoding="utf-8"))
        except (OSError, ValueError) as err:
            print(f"issuebot: cannot read the event payload {args.event}: {err}", file=sys.stderr)
            return EXIT_USAGE
    repo = args.repo or (event.get("repository") or {}).get("full_name")
    if not repo or (args.issue is None and "issue" not in event):
        print("issuebot: give --event (an issues event payload) or --repo and --issue", file=sys.stderr)
        return EXIT_USAGE
    if client is None:
        token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
        if not token:
            print("issuebot: GITHUB_TOKEN is not set", file=sys.stderr)
            return EXIT_USAGE
        client = RestClient(token, args.api_url)
    if args.dry_run:
        client = _ReadOnly(client)
    try:
        issue = client.issue(repo, args.issue) if args.issue is not None else event["issue"]
        if issue.get("pull_request"):
            print(f"issuebot: #{issue['number']} is a pull request; skipped")
            return EXIT_OK
        outcome = triage_issue(client, repo, issue, redact=args.redact == "true", prefix=args.label_prefix)
    except GitHubError as err:
        print(f"issuebot: GitHub: {err}", file=sys.stderr)
        return EXIT_GITHUB
    except Exception as err:  # a bot must say what went wrong in the job log, not dump a traceback
        if os.environ.get("TRIAGE_DEBUG"):
            raise
        print(f"issuebot: internal error ({type(err).__name__}: {err}); run again with TRIAGE_DEBUG=1",
              file=sys.stderr)
        return EXIT_INTERNAL
    if outcome.action == "skipped":
        print(f"issuebot: #{issue['number']}: {outcome.reason}; no comment")
        return EXIT_OK
    if args.dry_run:
        print(outcome.comment)
    print(f"issuebot: #{issue['number']}: comment {outcome.action}; labels {', '.join(outcome.labels)}")
    return EXIT_OK


class _ReadOnly:
    """A client for --dry-run: reads pass through, writes do nothing."""

    def __init__(self, inner: GitHub) -> None:
        self._inner = inner

    def issue(self, repo: str, number: int) -> dict:
        return self._inner.issue(repo, number)

    def comments(self, repo: str, number: int) -> list[dict]:
        return self._inner.comments(repo, number)

    def download(self, url: str, limit: int) -> bytes:
        return self._inner.download(url, limit)

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        return {"id": None}

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        return {"id": comment_id}

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        return None

    def remove_label(self, repo: str, number: int, label: str) -> None:
        return None


if __name__ == "__main__":
    sys.exit(main())
