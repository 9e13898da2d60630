"""What the bot does to one issue: read it, triage it, and decide the comment and the labels (``plan``);
then make GitHub say so (``apply``). Planning writes nothing, so a dry run prints the same plan a
real run carries out.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from triage.issuebot.fetch import (
    MAX_ATTACHMENTS,
    MAX_BYTES,
    MAX_TOTAL,
    Fetcher,
    FetchError,
    file_name,
)
from triage.issuebot.sources import Source, is_own, sources

if TYPE_CHECKING:
    from triage.pipeline import Result

DEFAULT_PREFIX = "triage:"
DEFAULT_LABEL = "gpu-crash"  # the label the issue form (.github/ISSUE_TEMPLATE/gpu-crash.yml) sets


@dataclass(frozen=True)
class Settings:
    """The action's inputs."""

    redact: bool = True
    prefix: str = DEFAULT_PREFIX
    only_label: str = DEFAULT_LABEL  # triage only issues with this label; "" for every issue
    comment_unknown: bool = True  # comment when nothing known matched (the comment lists what to send)


@dataclass
class Plan:
    """The comment and labels an issue should have; ``reason`` says why there is no comment."""

    klass: str = ""
    comment: str | None = None
    comment_id: int | None = None  # the bot's comment to update; None: post a new one
    current: bool = False  # that comment already says this
    add_labels: list[str] = field(default_factory=list)
    remove_labels: list[str] = field(default_factory=list)
    reason: str = ""


class Writer(Protocol):
    """The GitHub calls that change an issue (``api.RestClient``, or a test's fake)."""

    def create_comment(self, repo: str, number: int, body: str) -> dict: ...
    def update_comment(self, repo: str, comment_id: int, body: str) -> dict: ...
    def add_labels(self, repo: str, number: int, labels: list[str]) -> None: ...
    def remove_label(self, repo: str, number: int, label: str) -> None: ...


def labels_for(klass: str, prefix: str = DEFAULT_PREFIX) -> list[str]:
    """The issue labels for a triage result's top class (``unknown`` included)."""
    return [f"{prefix}{klass or 'unknown'}"]


def label_names(issue: dict) -> list[str]:
    """The names of an issue's labels (GitHub sends objects; a hand-written event may send strings)."""
    return [label["name"] if isinstance(label, dict) else str(label) for label in issue.get("labels") or []]


def has_machine_output(result: Result) -> bool:
    """Whether a program's output was found: a line a parser claimed, a stack, a fault, an offload listing,
    an inspection finding, or a known failure matched. Prose and source code alone give none of these."""
    case = result.case
    return (any(case.claims.values()) or bool(case.stacks or case.kernel_faults or case.offload or case.findings)
            or case.fault is not None or result.top.klass != "unknown")


@dataclass
class _Attachments:
    """Reads the attachments the texts link into one folder, within the count and size budgets of an issue;
    what it cannot read becomes a note (a warning in the comment)."""

    fetcher: Fetcher
    folder: Path
    taken: set[str] = field(default_factory=set)
    remaining: int = MAX_TOTAL
    notes: list[str] = field(default_factory=list)

    def read(self, source: Source) -> list[Path]:
        """The attachments ``source`` links that no earlier text linked, saved as ``<source>-<name>``."""
        stem = source.name.removesuffix(".txt")
        paths: list[Path] = []
        for url in source.attachments:
            if url in self.taken:
                continue
            self.taken.add(url)
            name = f"{stem}-{file_name(url)}"
            if len(self.taken) > MAX_ATTACHMENTS:
                self.notes.append(f"attachment {name} not read: only the first {MAX_ATTACHMENTS} attachments are read")
                continue
            if self.remaining <= 0:
                self.notes.append(f"attachment {name} not read: the attachments before it used the "
                                  f"{MAX_TOTAL >> 20} MiB an issue may bring")
                continue
            try:
                data = self.fetcher.fetch(url, min(MAX_BYTES, self.remaining))
            except FetchError as err:
                self.notes.append(f"attachment {name} could not be read ({err})")
                continue
            self.remaining -= len(data)
            path, copy = self.folder / name, 1
            while path.exists():  # two uploads of the same name in one text
                copy += 1
                path = self.folder / f"{stem}-{copy}-{file_name(url)}"
            path.write_bytes(data)
            paths.append(path)
        return paths


def _triage(texts: list[Source], fetcher: Fetcher, redact: bool) -> tuple[Result, str, list[str]]:
    """Triage the texts and their attachments in a temporary folder; the result, the Markdown comment and
    the notes on attachments that were not read."""
    from triage.pipeline import triage
    from triage.report import render

    with tempfile.TemporaryDirectory(prefix="hip-triage-issue-") as tmp:
        attachments, paths = _Attachments(fetcher, Path(tmp)), []
        for source in texts:
            paths.append(Path(tmp, source.name))
            paths[-1].write_text(source.text, encoding="utf-8")
            paths += attachments.read(source)
        result = triage([str(p) for p in paths])
        result.case.warnings.extend(attachments.notes)
        return result, render(result, "markdown", redact=redact), attachments.notes


def skipped(issue: dict, settings: Settings) -> str | None:
    """Why the bot leaves this issue alone before reading anything, or None: a pull request (its comments
    arrive as issue_comment events too), or an issue without the label the bot is limited to."""
    if issue.get("pull_request"):
        return "a pull request"
    if settings.only_label and settings.only_label not in label_names(issue):
        return f"not labelled {settings.only_label!r} (the only-label input)"
    return None


def plan(issue: dict, comments: list[dict], identity: str, fetcher: Fetcher, settings: Settings) -> Plan:
    """Decide what the issue should show: the comment (created, or the bot's own updated) and the labels.
    Call ``skipped`` first: this reads and triages whatever issue it is given."""
    labels = label_names(issue)
    texts = sources(issue, comments)
    if not texts:
        return Plan(reason="the issue has no text to read")
    result, comment, notes = _triage(texts, fetcher, settings.redact)
    if not has_machine_output(result):
        read = f"{len(texts)} text{'s' if len(texts) != 1 else ''} ({', '.join(t.name for t in texts)})"
        return Plan(reason=f"no machine output (program logs, stacks, kernel or crash records) in {read}"
                           + "".join(f"; {note}" for note in notes))
    klass = result.top.klass
    own = next((c for c in comments if is_own(c, identity)), None)
    out = Plan(klass=klass, comment=comment)
    if own is not None:
        out.comment_id, out.current = int(own["id"]), own.get("body") == comment
    elif klass == "unknown" and not settings.comment_unknown:
        out.comment, out.reason = None, "nothing known matched and comment-unknown is false"
    wanted = labels_for(klass, settings.prefix)
    out.remove_labels = [name for name in labels if name.startswith(settings.prefix) and name not in wanted]
    out.add_labels = [name for name in wanted if name not in labels]
    return out


def apply(issue_plan: Plan, client: Writer, repo: str, number: int) -> str:
    """Make the issue match the plan; what happened to the comment: created, updated, unchanged or none."""
    action = "none"
    if issue_plan.comment is not None:
        if issue_plan.comment_id is None:
            client.create_comment(repo, number, issue_plan.comment)
            action = "created"
        elif issue_plan.current:
            action = "unchanged"
        else:
            client.update_comment(repo, issue_plan.comment_id, issue_plan.comment)
            action = "updated"
    for stale in issue_plan.remove_labels:
        client.remove_label(repo, number, stale)
    if issue_plan.add_labels:
        client.add_labels(repo, number, issue_plan.add_labels)
    return action
