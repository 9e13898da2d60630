"""What an issue says: its body and its comments as whole texts, each under a name that tells where it came
from, and the attachments each links.

The texts are passed whole, fenced or not: the parsers find their own lines anywhere, so a log pasted
bare counts as much as one in a code block. A line quoted in the report is cited as
``issue-body.txt:12`` or ``comment-<id>.txt:3`` (the comment at ``#issuecomment-<id>``); an
attachment as ``<where it was linked>-<its name>``.
"""

from __future__ import annotations

from dataclasses import dataclass

from triage.issuebot.fetch import attachment_urls

MARKER = "<!-- hip-triage-report -->"


@dataclass(frozen=True)
class Source:
    """One text of the issue: the body or a comment."""

    name: str  # the artifact name the report cites: issue-body.txt, comment-<id>.txt
    text: str
    attachments: tuple[str, ...]  # attachment links in it, in order


def login_of(comment: dict) -> str:
    """A comment's author login ('' when GitHub sends none, as for a deleted account)."""
    return str((comment.get("user") or {}).get("login") or "")


def is_marked(comment: dict) -> bool:
    """A comment that starts with the report's marker: the bot's own, or a copy of one."""
    return (comment.get("body") or "").lstrip().startswith(MARKER)


def is_own(comment: dict, identity: str) -> bool:
    """The bot's comment: it carries the marker *and* its author is the bot's identity (``api.identity``).
    Anyone can write the marker; only the author tells whose comment it is."""
    return is_marked(comment) and login_of(comment).lower() == identity.lower()


def sources(issue: dict, comments: list[dict]) -> list[Source]:
    """The issue's body, then each comment in order, as texts to triage; a comment carrying the marker
    (the bot's report, or someone's copy of one) is a report, not machine output, and is left out."""
    out: list[Source] = []
    body = issue.get("body") or ""
    if body.strip():
        out.append(Source("issue-body.txt", body, tuple(attachment_urls(body))))
    for comment in comments:
        text = comment.get("body") or ""
        if text.strip() and not is_marked(comment):
            out.append(Source(f"comment-{int(comment['id'])}.txt", text, tuple(attachment_urls(text))))
    return out
