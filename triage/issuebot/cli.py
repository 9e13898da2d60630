"""``python -m triage.issuebot``: the command the action runs, and a dry run that needs no GitHub at all.

Exit codes: 0 done (comment posted, updated or already current, or nothing to do and the job log
says why), 2 bad usage or configuration, 3 a GitHub API call failed, 4 an internal error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from triage.issuebot import api, bot, fetch
from triage.issuebot.sources import is_own

EXIT_OK, EXIT_USAGE, EXIT_GITHUB, EXIT_INTERNAL = 0, 2, 3, 4


class Client(bot.Writer, Protocol):
    """Everything a real run asks of GitHub (``api.RestClient``, or a test's fake)."""

    def login(self) -> str | None: ...
    def comments(self, repo: str, number: int) -> list[dict]: ...
    def call(self, method: str, path: str, payload: Any = None) -> Any: ...


class UsageError(ValueError):
    """Bad arguments or configuration: exit code 2."""


def _flag(value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise argparse.ArgumentTypeError("expected true or false")
    return value.lower() == "true"


def _arguments(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m triage.issuebot",
        description="Triage a GitHub issue (its body, its comments and their attachments); post or update the "
                    "bot's one comment and set the triage:<class> label. Exit codes: 0 done, 2 bad usage or "
                    "configuration, 3 a GitHub API call failed, 4 an internal error.")
    parser.add_argument("--event", default=os.environ.get("GITHUB_EVENT_PATH"),
                        help="the issues or issue_comment event payload (default: $GITHUB_EVENT_PATH)")
    parser.add_argument("--repo", default=os.environ.get("GITHUB_REPOSITORY"),
                        help="owner/name (default: $GITHUB_REPOSITORY or the event's repository)")
    parser.add_argument("--issue", type=int, help="fetch and triage this issue instead of the event's (not with "
                                                  "--dry-run)")
    parser.add_argument("--redact", type=_flag, default=True,
                        help="replace user/host names, addresses and serials in the comment (default: true)")
    parser.add_argument("--label-prefix", default=bot.DEFAULT_PREFIX,
                        help=f"prefix of the labels set and replaced (default: {bot.DEFAULT_PREFIX})")
    parser.add_argument("--only-label", default=bot.DEFAULT_LABEL,
                        help=f"triage only issues with this label; '' for all (default: {bot.DEFAULT_LABEL}, "
                             "the issue form's)")
    parser.add_argument("--comment-unknown", type=_flag, default=True,
                        help="comment when nothing known matched, with what to send (default: true)")
    parser.add_argument("--bot-login", default="",
                        help="the login the bot comments as (default: GET /user, else github-actions[bot])")
    parser.add_argument("--api-url", default=os.environ.get("GITHUB_API_URL", api.DEFAULT_API))
    parser.add_argument("--dry-run", action="store_true",
                        help="print the comment and labels; call no GitHub API and download nothing")
    parser.add_argument("--comments", type=Path,
                        help="dry run: the issue's comments, a JSON list as GitHub's API returns it")
    parser.add_argument("--attachments", type=Path,
                        help="dry run: a folder of attachments downloaded before, each named as its link ends")
    return parser.parse_args(argv)


def _read_json(path: Path, what: str) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise UsageError(f"cannot read {what} {path}: {err}") from None


def _dry_comments(args: argparse.Namespace, event: dict) -> list[dict]:
    """The comments a dry run sees: ``--comments``, with the event's own comment as the event has it."""
    listed = _read_json(args.comments, "the comments") if args.comments else []
    if not isinstance(listed, list):
        raise UsageError(f"{args.comments} is not a JSON list of comments")
    new = event.get("comment")
    if new and event.get("action") != "deleted":
        listed = [c for c in listed if c.get("id") != new.get("id")] + [new]
    return sorted(listed, key=lambda c: (str(c.get("created_at") or ""), int(c.get("id") or 0)))


def _describe(number: int, issue_plan: bot.Plan, action: str, dry: bool = False) -> str:
    """The job log's line for an issue the bot commented on or labelled (or would, in a dry run)."""
    add, remove = ("would add", "would remove") if dry else ("added", "removed")
    labels = "; ".join(filter(None, (
        f"{add} {', '.join(issue_plan.add_labels)}" if issue_plan.add_labels else "",
        f"{remove} {', '.join(issue_plan.remove_labels)}" if issue_plan.remove_labels else ""))) or "labels current"
    what = {"created": "would create the comment" if dry else "comment created",
            "updated": f"would update comment {issue_plan.comment_id}" if dry
            else f"comment {issue_plan.comment_id} updated",
            "unchanged": f"comment {issue_plan.comment_id} already current",
            "none": f"no comment ({issue_plan.reason})"}[action]
    return f"issuebot{' (dry run)' if dry else ''}: #{number}: {issue_plan.klass}: {what}; {labels}"


def _dry_action(issue_plan: bot.Plan) -> str:
    if issue_plan.comment is None:
        return "none"
    if issue_plan.comment_id is None:
        return "created"
    return "unchanged" if issue_plan.current else "updated"


def run(args: argparse.Namespace, client: Client | None, fetcher: fetch.Fetcher | None) -> int:
    """One run of the bot on one issue; prints what it did (or would do) and why."""
    event = _read_json(Path(args.event), "the event payload") if args.event else {}
    repo = args.repo or (event.get("repository") or {}).get("full_name")
    if not repo or (args.issue is None and "issue" not in event):
        raise UsageError("give --event (an issues or issue_comment event payload), or --repo and --issue")
    if args.dry_run and args.issue is not None:
        raise UsageError("--dry-run reads the issue from --event; --issue needs the API")
    settings = bot.Settings(redact=args.redact, prefix=args.label_prefix, only_label=args.only_label,
                            comment_unknown=args.comment_unknown)
    if not args.dry_run and client is None:
        token = os.environ.get("GITHUB_TOKEN") or os.environ.get("GH_TOKEN")
        if not token:
            raise UsageError("GITHUB_TOKEN is not set (or run with --dry-run)")
        client = api.RestClient(token, args.api_url)
    if args.dry_run:
        client = None  # a dry run calls no API, whatever it was given
    issue = event["issue"] if args.issue is None else client.call("GET", f"/repos/{repo}/issues/{args.issue}")
    number = int(issue["number"])
    if reason := bot.skipped(issue, settings):
        print(f"issuebot: #{number}: {reason}; no comment")
        return EXIT_OK
    identity = api.identity(client, args.bot_login)
    if event.get("comment") and args.issue is None and is_own(event["comment"], identity):
        print(f"issuebot: #{number}: the event is the bot's own comment; nothing to do")
        return EXIT_OK
    if client is None:
        comments = _dry_comments(args, event)
        fetcher = fetcher or (fetch.FolderFetcher(args.attachments) if args.attachments else fetch.NoFetcher())
    else:
        comments = client.comments(repo, number)
        fetcher = fetcher or fetch.Downloader()
    issue_plan = bot.plan(issue, comments, identity, fetcher, settings)
    if issue_plan.comment is None and not issue_plan.klass:
        print(f"issuebot: #{number}: no comment, no label: {issue_plan.reason}")
        return EXIT_OK
    if client is None:
        if issue_plan.comment is not None:
            print(issue_plan.comment, end="" if issue_plan.comment.endswith("\n") else "\n")
        print(_describe(number, issue_plan, _dry_action(issue_plan), dry=True))
        return EXIT_OK
    print(_describe(number, issue_plan, bot.apply(issue_plan, client, repo, number)))
    return EXIT_OK


def main(argv: Sequence[str] | None = None, client: Client | None = None,
         fetcher: fetch.Fetcher | None = None) -> int:
    """Command-line entry point; returns the exit code. Tests pass a fake ``client`` and ``fetcher``."""
    try:
        args = _arguments(argv)
    except SystemExit as stop:
        return EXIT_USAGE if stop.code else EXIT_OK
    try:
        return run(args, client, fetcher)
    except UsageError as err:
        print(f"issuebot: {err}", file=sys.stderr)
        return EXIT_USAGE
    except api.GitHubError as err:
        print(f"issuebot: GitHub: {err}", file=sys.stderr)
        return EXIT_GITHUB
    except Exception as err:  # a bot must say what went wrong in the job log, not dump a traceback
        if os.environ.get("TRIAGE_DEBUG"):
            raise
        print(f"issuebot: internal error ({type(err).__name__}: {err}); run again with TRIAGE_DEBUG=1",
              file=sys.stderr)
        return EXIT_INTERNAL
