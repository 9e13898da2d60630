"""The issue bot (triage/issuebot/) on GitHub event payloads, with a fake GitHub and no network.

Events have the shape GitHub sends for ``issues`` and ``issue_comment`` (``github_events``); the
seed reports of ../shared/seeds are pasted into them bare, fenced and as attachments, and the bot
must give the class ``triage -`` gives. Recorded attachment issues are in tests/fixtures/issues/.
"""

from __future__ import annotations

import copy
import email.message
import io
import json
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import urllib.error
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import FIXTURES, ROOT, shared
from triage.issuebot import MARKER, api, bot, fetch
from triage.issuebot.cli import _arguments, main
from triage.issuebot.sources import sources

ISSUES = sorted((FIXTURES / "issues").glob("*.json"))
FORM = ROOT / ".github" / "ISSUE_TEMPLATE" / "gpu-crash.yml"
WORKFLOW = ROOT / ".github" / "workflows" / "triage-issues.yml"
ACTION = ROOT / "action.yml"
BOT = "github-actions[bot]"
PYTHON_ONLY = ("### Bundle from `triage collect`\n\nI can't run it; this is my script:\n\n```python\nimport torch\n"
               "x = torch.randn(1000, 1000, device=\"cuda\")\nprint((x @ x).sum())\n```\n\n### What you ran\n\n"
               "```shell\npython bench.py\n```\n\nIt crashes sometimes, no idea why.\n")


# --- GitHub as the bot sees it --------------------------------------------------------------------------------


def _user(login: str, kind: str = "User") -> dict:
    return {"login": login, "id": abs(hash(login)) % 10**8, "node_id": "U_x", "type": kind, "site_admin": False,
            "html_url": f"https://github.com/{login}"}


def issue_payload(body: str, labels: tuple[str, ...] = ("gpu-crash",), number: int = 41) -> dict:
    """An issue object as GitHub sends it in an event."""
    return {"url": f"https://api.github.com/repos/example/strata/issues/{number}",
            "html_url": f"https://github.com/example/strata/issues/{number}", "id": 2_900_000_000 + number,
            "node_id": "I_kwDOx", "number": number, "title": "[GPU crash] the engine dies at start",
            "user": _user("a-user"), "labels": [{"id": 7, "node_id": "LA_x", "name": name, "color": "d73a4a",
                                                 "default": False, "description": ""} for name in labels],
            "state": "open", "locked": False, "assignee": None, "assignees": [], "milestone": None, "comments": 0,
            "created_at": "2026-11-30T10:00:00Z", "updated_at": "2026-11-30T10:00:00Z", "closed_at": None,
            "author_association": "NONE", "active_lock_reason": None, "body": body, "state_reason": None,
            "reactions": {"total_count": 0}, "timeline_url": "https://api.github.com/repos/example/strata/issues/41/timeline",
            "performed_via_github_app": None}


def comment_payload(comment_id: int, body: str, login: str = "a-user", kind: str = "User",
                    minute: int = 1) -> dict:
    """An issue comment as GitHub sends it (in an event, or listed by the API)."""
    return {"url": f"https://api.github.com/repos/example/strata/issues/comments/{comment_id}",
            "html_url": f"https://github.com/example/strata/issues/41#issuecomment-{comment_id}",
            "issue_url": "https://api.github.com/repos/example/strata/issues/41", "id": comment_id,
            "node_id": "IC_x", "user": _user(login, kind), "created_at": f"2026-11-30T10:{minute:02d}:00Z",
            "updated_at": f"2026-11-30T10:{minute:02d}:00Z", "author_association": "NONE", "body": body,
            "reactions": {"total_count": 0}, "performed_via_github_app": None}


def _repository() -> dict:
    return {"id": 1, "node_id": "R_x", "name": "strata", "full_name": "example/strata", "private": False,
            "owner": _user("example", "Organization"), "html_url": "https://github.com/example/strata"}


def issues_event(action: str, issue: dict, old_body: str | None = None) -> dict:
    event = {"action": action, "issue": issue, "repository": _repository(), "sender": issue["user"]}
    if old_body is not None:
        event["changes"] = {"body": {"from": old_body}}
    return event


def issue_comment_event(action: str, issue: dict, comment: dict) -> dict:
    return {"action": action, "issue": issue, "comment": comment, "repository": _repository(),
            "sender": comment["user"]}


class FakeGitHub:
    """One issue's comments and labels in memory; every call is recorded."""

    def __init__(self, labels: list[str] | None = None, comments: list[dict] | None = None,
                 login: str | None = None) -> None:
        self.labels = list(labels or [])
        self.issue_comments = copy.deepcopy(comments or [])
        self.token_login = login  # None: an installation token, which GET /user refuses
        self.calls: list[str] = []

    def login(self) -> str | None:
        self.calls.append("login")
        return self.token_login

    def call(self, method: str, path: str, payload: Any = None) -> Any:
        raise AssertionError(f"unexpected API call {method} {path}")

    def comments(self, repo: str, number: int) -> list[dict]:
        self.calls.append("comments")
        return copy.deepcopy(self.issue_comments)

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        self.calls.append("create")
        comment = comment_payload(5000 + len(self.issue_comments), body, self.token_login or BOT, "Bot")
        self.issue_comments.append(comment)
        return comment

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        self.calls.append(f"update {comment_id}")
        comment = next(c for c in self.issue_comments if c["id"] == comment_id)
        comment["body"] = body
        return comment

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        self.calls.append("add_labels")
        self.labels += [name for name in labels if name not in self.labels]

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self.calls.append("remove_label")
        self.labels.remove(label)

    def writes(self) -> list[str]:
        return [c for c in self.calls if c not in ("login", "comments")]


class NoGitHub(FakeGitHub):
    """A client any call to which fails the test: a dry run must make none."""

    def __getattribute__(self, name: str) -> Any:
        if name in ("login", "comments", "call", "create_comment", "update_comment", "add_labels", "remove_label"):
            raise AssertionError(f"a dry run called the API ({name})")
        return super().__getattribute__(name)


class FakeFetcher:
    """Attachments served from local files; a folder is zipped in memory, as a user zips a bundle."""

    def __init__(self, files: dict[str, Path]) -> None:
        self.files = files
        self.fetched: list[str] = []

    def fetch(self, url: str, limit: int) -> bytes:
        self.fetched.append(url)
        if url not in self.files:
            raise fetch.FetchError("HTTP 404")
        source = self.files[url]
        if source.is_dir():
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for path in sorted(source.iterdir()):
                    if path.name != "expected.yaml":
                        archive.write(path, path.name)
            data = buffer.getvalue()
        else:
            data = source.read_bytes()
        if len(data) > limit:
            raise fetch.too_big(limit)
        return data


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the bot tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _event_file(tmp_path: Path, event: dict, name: str = "event.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(event), encoding="utf-8")
    return str(path)


def _comments_file(tmp_path: Path, comments: list[dict]) -> str:
    return _event_file(tmp_path, comments, "comments.json")


def _seeds() -> list[Path]:
    return sorted(shared("seeds").glob("*.txt"))


def _triage_stdin_label(text: str) -> str:
    run = subprocess.run([sys.executable, "-m", "triage", "-", "--labels"], input=text, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode in (0, 1), run.stderr
    return run.stdout.strip()


def _dry_run(tmp_path: Path, event: dict, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    code = main(["--event", _event_file(tmp_path, event), "--dry-run", *extra], client=NoGitHub())
    return code, capsys.readouterr().out


def _summary(out: str) -> str:
    """The dry run's last line: what it would do."""
    return out.rstrip("\n").rsplit("\n", 1)[-1]


# --- done when: seeds pasted bare, fenced, attached -----------------------------------------------------------


@pytest.mark.parametrize("layout", ["bare", "fenced"])
def test_seed_pasted_in_issue_body_gives_the_class_of_triage_stdin(layout: str, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    for seed in _seeds():
        text = seed.read_text(encoding="utf-8")
        paste = text if layout == "bare" else f"```shell\n{text}\n```"
        body = (f"### Bundle from `triage collect`\n\n{paste}\n\n### What you ran\n\n```sh\n./strata\n```\n\n"
                "### GPU\n\nAMD Radeon RX 9070 XT\n")
        code, out = _dry_run(tmp_path, issues_event("opened", issue_payload(body)), capsys)
        assert code == 0
        expected = _triage_stdin_label(text)
        assert expected != "triage:unknown", seed.name
        assert out.startswith(MARKER + "\n"), seed.name
        assert f"would create the comment; would add {expected}" in _summary(out), (seed.name, _summary(out))
        assert "`issue-body.txt:" in out  # evidence is cited by where it came from


def test_seed_attached_to_a_comment_updates_the_bots_comment(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    seed = _seeds()[0]
    expected = _triage_stdin_label(seed.read_text(encoding="utf-8"))
    issue = issue_payload("The engine crashes at start, I will attach the log.", number=41)
    earlier = comment_payload(901, MARKER + "\n## Not recognised (`unknown`, 0%)\n", BOT, "Bot", minute=2)
    url = f"https://github.com/user-attachments/files/17000009/{seed.name}"
    new = comment_payload(902, f"Here is the log: [{seed.name}]({url})", minute=5)
    event = issue_comment_event("created", issue, new)

    # dry run: the attachment from a folder of files downloaded before
    folder = tmp_path / "attachments"
    folder.mkdir()
    shutil.copy(seed, folder / seed.name)
    code, out = _dry_run(tmp_path, event, capsys, "--comments", _comments_file(tmp_path, [earlier]),
                         "--attachments", str(folder))
    assert code == 0
    assert f"would update comment 901; would add {expected}" in _summary(out)
    assert f"`comment-902-{seed.name}:" in out  # the evidence names the comment the file came with

    # a real run: the one bot comment is edited in place, nothing is created
    github = FakeGitHub(["gpu-crash"], [earlier, new])
    assert main(["--event", _event_file(tmp_path, event)], client=github, fetcher=FakeFetcher({url: seed})) == 0
    assert github.writes() == ["update 901", "add_labels"]
    assert github.issue_comments[0]["body"].startswith(MARKER) and "unknown" not in github.issue_comments[0]["body"]
    assert github.labels == ["gpu-crash", expected]
    assert "comment 901 updated" in capsys.readouterr().out


def test_seed_pasted_bare_in_a_comment_is_cited_by_that_comment(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    seed = _seeds()[-1]
    text = seed.read_text(encoding="utf-8")
    issue = issue_payload("Segfault at the first kernel launch, output in the next comment.")
    event = issue_comment_event("edited", issue, comment_payload(4321, f"Sorry, here it is:\n\n{text}"))
    code, out = _dry_run(tmp_path, event, capsys)
    assert code == 0
    assert f"would create the comment; would add {_triage_stdin_label(text)}" in _summary(out)
    assert "`comment-4321.txt:" in out and "`issue-body.txt:" not in out


def test_python_only_issue_gets_no_comment_and_no_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    github = FakeGitHub(["gpu-crash"])
    assert main(["--event", _event_file(tmp_path, issues_event("opened", issue_payload(PYTHON_ONLY)))],
                client=github) == 0
    assert github.writes() == [] and github.labels == ["gpu-crash"]
    out = capsys.readouterr().out
    assert out.count("\n") == 1 and "no comment, no label: no machine output" in out

    code, out = _dry_run(tmp_path, issues_event("opened", issue_payload(PYTHON_ONLY)), capsys)
    assert code == 0 and MARKER not in out and "no machine output" in out


def test_foreign_comment_with_the_marker_is_left_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    forged = comment_payload(700, MARKER + "\n## `device-libs-missing` (100%)\n" + PYTHON_ONLY, "mallory", minute=1)
    issue = issue_payload(f"It dies at start:\n\n{log}")
    github = FakeGitHub(["gpu-crash"], [forged])
    assert main(["--event", _event_file(tmp_path, issues_event("opened", issue))], client=github) == 0
    assert github.writes() == ["create", "add_labels"]  # a comment of its own; mallory's is not edited
    assert github.issue_comments[0] == forged
    mine = github.issue_comments[1]
    assert mine["body"].startswith(MARKER) and "comment-700" not in mine["body"]  # nor read as input

    # the next run finds its own comment (marker and author), not the forged one first in the list
    github.calls.clear()
    edited = issues_event("edited", issue_payload(issue["body"] + "\nStill crashes.\n", labels=tuple(github.labels)),
                          issue["body"])
    assert main(["--event", _event_file(tmp_path, edited)], client=github) == 0
    assert github.writes() == [f"update {mine['id']}"] and github.issue_comments[0] == forged


# --- whose comment is the bot's ------------------------------------------------------------------------------


def test_identity_rule(tmp_path: Path) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    event = _event_file(tmp_path, issues_event("opened", issue_payload(log)))
    by_actions = comment_payload(1, MARKER + "\nold", BOT, "Bot")
    by_user = comment_payload(2, MARKER + "\nold", "ci-user")

    # GITHUB_TOKEN: GET /user is refused, so the bot is github-actions[bot]
    github = FakeGitHub(["gpu-crash"], [by_user, by_actions], login=None)
    assert main(["--event", event], client=github) == 0
    assert "update 1" in github.writes() and "login" in github.calls

    # a personal token: the bot is the token's own login, and github-actions[bot]'s comment is someone else's
    github = FakeGitHub(["gpu-crash"], [by_actions, by_user], login="ci-user")
    assert main(["--event", event], client=github) == 0
    assert "update 2" in github.writes()

    # a GitHub App: its bot login is given, and GET /user is not asked
    github = FakeGitHub(["gpu-crash"], [by_actions, by_user], login="ci-user")
    assert main(["--event", event, "--bot-login", "crash-app[bot]"], client=github) == 0
    assert "login" not in github.calls and "create" in github.writes() and not any(
        c.startswith("update") for c in github.writes())

    assert api.identity(None, "") == BOT and api.identity(None, "x[bot]") == "x[bot]"


def test_bots_own_comment_event_is_not_triaged(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issue = issue_payload("crash log below")
    own = comment_payload(900, MARKER + "\n## report", BOT, "Bot")
    github = FakeGitHub(["gpu-crash"], [own])
    assert main(["--event", _event_file(tmp_path, issue_comment_event("created", issue, own))], client=github) == 0
    assert github.writes() == [] and "the bot's own comment" in capsys.readouterr().out


# --- inputs: label filter, unknown results, labels, redaction ----------------------------------------------------


def test_label_filter_defaults_to_the_issue_forms_label(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    form = yaml.safe_load(FORM.read_text(encoding="utf-8"))
    action = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    assert bot.DEFAULT_LABEL == form["labels"][0] == action["inputs"]["only-label"]["default"]

    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    event = _event_file(tmp_path, issues_event("opened", issue_payload(log, labels=("bug",))))
    github = FakeGitHub(["bug"])
    assert main(["--event", event], client=github) == 0
    assert github.calls == [] and "not labelled 'gpu-crash'" in capsys.readouterr().out
    assert main(["--event", event, "--only-label", ""], client=github) == 0
    assert github.writes() == ["create", "add_labels"] and github.labels == ["bug", "triage:device-libs-missing"]


def _unknown_log() -> str:
    return (":3:hip_context.cpp           :62  : 2345 us: [pid:100 tid:0x7f] HIP Version: 6.2.41133, "
            "Runtime Version: 6.2\n:3:hip_device_runtime.cpp :200 : 2346 us: [pid:100 tid:0x7f]  "
            "hipGetDeviceCount ( 0x7ffd )\n")


def test_unknown_result_is_commented_with_what_to_send_unless_turned_off(tmp_path: Path) -> None:
    event = _event_file(tmp_path, issues_event("opened", issue_payload(f"```\n{_unknown_log()}```\n")))
    github = FakeGitHub(["gpu-crash"])
    assert main(["--event", event], client=github) == 0
    assert github.labels == ["gpu-crash", "triage:unknown"]
    assert "Not recognised" in github.issue_comments[0]["body"]
    assert "### What to send next" in github.issue_comments[0]["body"]

    github = FakeGitHub(["gpu-crash"])
    assert main(["--event", event, "--comment-unknown", "false"], client=github) == 0
    assert github.writes() == ["add_labels"] and github.labels == ["gpu-crash", "triage:unknown"]

    # an earlier diagnosis of the bot's is brought up to date even so, never left standing
    labels = ("gpu-crash", "triage:device-libs-missing")
    event = _event_file(tmp_path, issues_event("edited", issue_payload(f"```\n{_unknown_log()}```\n", labels)))
    github = FakeGitHub(list(labels), [comment_payload(3, MARKER + "\nold", BOT)])
    assert main(["--event", event, "--comment-unknown", "false"], client=github) == 0
    assert github.writes() == ["update 3", "remove_label", "add_labels"]
    assert github.labels == ["gpu-crash", "triage:unknown"]


def test_stale_label_is_replaced_and_prefix_is_configurable(tmp_path: Path) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    labels = ("gpu-crash", "bug", "triage:unknown", "bot:other")
    event = _event_file(tmp_path, issues_event("edited", issue_payload(log, labels=labels)))
    github = FakeGitHub(list(labels))
    assert main(["--event", event], client=github) == 0
    assert github.labels == ["gpu-crash", "bug", "bot:other", "triage:device-libs-missing"]
    github = FakeGitHub(list(labels))
    assert main(["--event", event, "--label-prefix", "crash/"], client=github) == 0
    assert github.labels == [*labels, "crash/device-libs-missing"]


def test_redaction_is_on_by_default_and_can_be_turned_off(tmp_path: Path) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    personal = log.replace("HIP Library Path: ./libamdhip64.so.7",
                           "HIP Library Path: /home/alice/strata/libamdhip64.so.7 on alice-desktop 10.1.2.3")
    event = _event_file(tmp_path, issues_event("opened", issue_payload(f"alice@alice-desktop:~$ ./strata\n{personal}")))
    github = FakeGitHub(["gpu-crash"])
    assert main(["--event", event], client=github) == 0
    comment = github.issue_comments[0]["body"]
    assert "alice" not in comment and "10.1.2.3" not in comment and "user-1" in comment
    github = FakeGitHub(["gpu-crash"])
    assert main(["--event", event, "--redact", "false"], client=github) == 0
    assert "/home/alice/strata" in github.issue_comments[0]["body"]


# --- recorded issues with attachments ---------------------------------------------------------------------------


def _recorded(path: Path) -> tuple[dict, dict[str, Path], dict]:
    recorded = json.loads(path.read_text(encoding="utf-8"))
    event = recorded["event"]
    event["issue"]["labels"].append({"name": "gpu-crash"})
    return event, {url: ROOT / source for url, source in recorded["attachments"].items()}, recorded["expected"]


@pytest.mark.parametrize("fixture", ISSUES, ids=[p.stem for p in ISSUES])
def test_recorded_issue_gets_comment_and_labels(fixture: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    event, files, expected = _recorded(fixture)
    before = [label["name"] for label in event["issue"]["labels"]]
    github, fetcher = FakeGitHub(before), FakeFetcher(files)
    assert main(["--event", _event_file(tmp_path, event)], client=github, fetcher=fetcher) == 0
    assert sorted(fetcher.fetched) == sorted(files)
    assert len(github.issue_comments) == 1
    comment = github.issue_comments[0]["body"]
    assert comment.startswith(MARKER + "\n")
    heading = comment.split("\n")[1]
    assert heading.startswith("## ") and f"`{expected['labels'][0].split(':', 1)[1]}`" in heading
    assert f"`{expected['signature']}`" in comment and len(comment) < 65_536
    assert github.labels == before + expected["labels"]
    assert "comment created" in capsys.readouterr().out

    # the same issue again: the comment is current, nothing is written
    github.calls.clear()
    event["issue"]["labels"] = [{"name": name} for name in github.labels]
    assert main(["--event", _event_file(tmp_path, event)], client=github, fetcher=FakeFetcher(files)) == 0
    assert github.writes() == [] and github.issue_comments[0]["body"] == comment

    # the user edits the issue: the bot's comment is updated in place
    old = event["issue"]["body"]
    event = issues_event("edited", {**event["issue"], "body": old + "\nUpdate: still crashes after a reboot.\n"}, old)
    assert main(["--event", _event_file(tmp_path, event)], client=github, fetcher=FakeFetcher(files)) == 0
    assert github.writes() == ["update 5000"] and len(github.issue_comments) == 1
    assert github.issue_comments[0]["body"] != comment


def test_comment_is_the_redacted_markdown_of_the_same_inputs(tmp_path: Path) -> None:
    """The comment is what `triage --format markdown --redact` prints for the texts and files the bot read."""
    event, files, _ = _recorded(FIXTURES / "issues" / "seed-002.json")
    outcome = bot.plan(event["issue"], [], BOT, FakeFetcher(files), bot.Settings())
    paths = [tmp_path / "issue-body.txt"]
    paths[0].write_text(event["issue"]["body"], encoding="utf-8")
    for url in fetch.attachment_urls(event["issue"]["body"]):  # in the order the body links them, as the bot reads
        paths.append(tmp_path / f"issue-body-{fetch.file_name(url)}")
        paths[-1].write_bytes(files[url].read_bytes())
    run = subprocess.run([sys.executable, "-m", "triage", *map(str, paths),
                          "--format", "markdown", "--redact"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert outcome.comment is not None
    assert run.stdout == outcome.comment + ("" if outcome.comment.endswith("\n") else "\n")


def test_failed_download_is_a_warning_in_the_comment(tmp_path: Path) -> None:
    event, files, _ = _recorded(FIXTURES / "issues" / "seed-002.json")
    files.pop(next(iter(files)))  # the log link now answers 404
    github = FakeGitHub(["gpu-crash"])
    assert main(["--event", _event_file(tmp_path, event)], client=github, fetcher=FakeFetcher(files)) == 0
    assert "- attachment issue-body-strata-iq2_xs.log could not be read (HTTP 404)\n" in github.issue_comments[0]["body"]


# --- attachments: hosts, redirects, limits, no token ---------------------------------------------------------------


def test_attachment_links_only_from_githubs_attachment_hosts() -> None:
    body = ("see [logs.zip](https://github.com/user-attachments/files/1/logs.zip), "
            "https://github.com/user-attachments/files/2/crash.DMP. and https://github.com/o/r/files/3/old.log\n"
            "https://objects.githubusercontent.com/github-production-repository-file-1/2/core.gz "
            "![img](https://github.com/user-attachments/assets/abc) https://github.com/user-attachments/files/4/x.png "
            "https://example.com/files/5/evil.log http://github.com/user-attachments/files/6/plain.log "
            "https://github.com.evil.com/user-attachments/files/7/a.log https://github.com:8443/o/r/files/8/b.log "
            "https://user@github.com/o/r/files/9/c.log https://github.com/o/r/blob/main/x.log https://github.com:x/o/r/files/1/e.log "
            "https://raw.githubusercontent.com/o/r/main/d.log https://github.com/user-attachments/files/1/logs.zip")
    assert fetch.attachment_urls(body) == [
        "https://github.com/user-attachments/files/1/logs.zip", "https://github.com/user-attachments/files/2/crash.DMP",
        "https://github.com/o/r/files/3/old.log",
        "https://objects.githubusercontent.com/github-production-repository-file-1/2/core.gz"]


class _Response(io.BytesIO):
    def __init__(self, body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> None:
        super().__init__(body)
        self.status = status
        self.headers = _headers(headers or {})


def _headers(values: dict[str, str]) -> email.message.Message:
    message = email.message.Message()
    for key, value in values.items():
        message[key] = value
    return message


class FakeOpener:
    """A web server in a dict: url -> (status, headers, body), one answer after another for a list."""

    def __init__(self, answers: dict[str, Any]) -> None:
        self.answers = {url: list(a) if isinstance(a, list) else [a] for url, a in answers.items()}
        self.requests: list[tuple[str, str, str | None]] = []  # method, url, Authorization

    def open(self, request: Any, timeout: float) -> _Response:
        url = request.full_url
        self.requests.append((request.get_method(), url, request.get_header("Authorization")))
        queue = self.answers[url]
        status, headers, body = queue.pop(0) if len(queue) > 1 else queue[0]
        if status >= 300:
            raise urllib.error.HTTPError(url, status, "x", _headers(headers), io.BytesIO(body))
        return _Response(body, status, headers)


def test_download_follows_redirects_only_among_githubs_hosts_and_sends_no_token() -> None:
    start = "https://github.com/user-attachments/files/1/hip.log"
    storage = "https://objects.githubusercontent.com/github-production-repository-file-1/hip.log?sig=x"
    opener = FakeOpener({start: (302, {"Location": storage}, b""), storage: (200, {}, b"log line\n")})
    assert fetch.Downloader(opener=opener).fetch(start, 1 << 20) == b"log line\n"
    assert [r[1] for r in opener.requests] == [start, storage]
    assert all(auth is None for _, _, auth in opener.requests)

    evil = FakeOpener({start: (302, {"Location": "https://evil.example/steal"}, b"")})
    with pytest.raises(fetch.FetchError, match="redirected away"):
        fetch.Downloader(opener=evil).fetch(start, 1 << 20)
    assert [r[1] for r in evil.requests] == [start]

    big = FakeOpener({start: (200, {"Content-Length": str(30 << 20)}, b"")})
    with pytest.raises(fetch.FetchError, match="over the 25 MiB limit"):
        fetch.Downloader(opener=big).fetch(start, 25 << 20)
    undeclared = FakeOpener({start: (200, {}, b"x" * 2000)})
    with pytest.raises(fetch.FetchError, match="over the 1000 bytes left"):
        fetch.Downloader(opener=undeclared).fetch(start, 1000)


def test_folder_fetcher_and_offline_dry_run(tmp_path: Path) -> None:
    (tmp_path / "hip.log").write_text("x\n")
    assert fetch.FolderFetcher(tmp_path).fetch("https://github.com/user-attachments/files/1/hip.log", 100) == b"x\n"
    with pytest.raises(fetch.FetchError, match="not in"):
        fetch.FolderFetcher(tmp_path).fetch("https://github.com/user-attachments/files/1/other.log", 100)
    with pytest.raises(fetch.FetchError, match="dry run"):
        fetch.NoFetcher().fetch("https://github.com/user-attachments/files/1/hip.log", 100)


def test_attachment_count_and_size_budget(tmp_path: Path) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    links = "\n".join(f"https://github.com/user-attachments/files/{n}/part{n}.log" for n in range(25))
    files = {f"https://github.com/user-attachments/files/{n}/part{n}.log": tmp_path / "part.log" for n in range(25)}
    (tmp_path / "part.log").write_text("nothing here\n")
    fetcher = FakeFetcher(files)
    outcome = bot.plan(issue_payload(f"{log}\n{links}"), [], BOT, fetcher, bot.Settings())
    assert len(fetcher.fetched) == fetch.MAX_ATTACHMENTS
    assert outcome.comment is not None and "only the first 20 attachments are read" in outcome.comment


def test_attachments_within_the_issues_size_budget(tmp_path: Path) -> None:
    files = {}
    for n, size in enumerate((600, 600, 400, 10)):
        files[f"https://github.com/user-attachments/files/{n}/part{n}.log"] = tmp_path / f"part{n}.log"
        (tmp_path / f"part{n}.log").write_bytes(b"x" * size)
    reader = bot._Attachments(FakeFetcher(files), tmp_path / "out", remaining=1000)
    reader.folder.mkdir()
    read = reader.read(sources(issue_payload("\n".join(files)), [])[0])
    assert [p.name for p in read] == ["issue-body-part0.log", "issue-body-part2.log"]
    assert reader.notes == ["attachment issue-body-part1.log could not be read (over the 400 bytes left)",
                            "attachment issue-body-part3.log not read: the attachments before it used the 100 MiB "
                            "an issue may bring"]


# --- the REST client: retries, rate limits, clear errors, the token's one host ------------------------------------


def _client(answers: dict[str, Any], now: float = 1_000_000.0) -> tuple[api.RestClient, FakeOpener, list[float]]:
    opener, slept = FakeOpener(answers), []
    return api.RestClient("secret-token", opener=opener, sleep=slept.append, clock=lambda: now), opener, slept


def test_api_retries_5xx_and_rate_limits_with_backoff() -> None:
    url = "https://api.github.com/repos/o/r/issues/1/comments?per_page=100&page=1"
    client, opener, slept = _client({url: [(502, {}, b""), (503, {}, b""), (200, {}, b"[]")]})
    assert client.comments("o/r", 1) == [] and slept == [1.0, 2.0]

    limited = (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1000010"}, b'{"message":"API rate limit"}')
    client, opener, slept = _client({url: [limited, (200, {}, b"[]")]})
    assert client.comments("o/r", 1) == [] and slept == [11.0]

    client, opener, slept = _client({url: [(429, {"Retry-After": "7"}, b""), (200, {}, b"[]")]})
    assert client.comments("o/r", 1) == [] and slept == [7.0]
    assert all(auth == "Bearer secret-token" for _, _, auth in opener.requests)


def test_api_errors_are_clear_and_not_retried_when_waiting_cannot_help() -> None:
    url = "https://api.github.com/repos/o/r/issues/comments/5"
    client, opener, slept = _client({url: (403, {}, b'{"message":"Resource not accessible by integration"}')})
    with pytest.raises(api.GitHubError, match=r"HTTP 403: forbidden: the workflow needs `permissions: issues: "
                                              r"write`.*Resource not accessible by integration"):
        client.update_comment("o/r", 5, "x")
    assert len(opener.requests) == 1 and slept == []

    later = (403, {"x-ratelimit-remaining": "0", "x-ratelimit-reset": "1003600"}, b"")
    client, opener, slept = _client({url: later})
    with pytest.raises(api.GitHubError, match=r"rate limit exhausted until .* UTC \(3600 s from now\)"):
        client.update_comment("o/r", 5, "x")
    assert slept == []

    client, opener, slept = _client({url: (500, {}, b"")})
    with pytest.raises(api.GitHubError, match="HTTP 500"):
        client.update_comment("o/r", 5, "x")
    assert len(opener.requests) == api.RETRIES + 1 and slept == [1.0, 2.0, 4.0, 8.0]

    off_host = {url: (301, {"Location": "https://elsewhere.example/x"}, b"")}
    client, opener, _ = _client(off_host)
    with pytest.raises(api.GitHubError, match="redirected off the API host"):
        client.update_comment("o/r", 5, "x")
    assert [r[1] for r in opener.requests] == [url]


def test_login_of_an_installation_token_is_none() -> None:
    client, _, _ = _client({"https://api.github.com/user": (403, {}, b'{"message":"Resource not accessible"}')})
    assert client.login() is None and api.identity(client, "") == BOT
    client, _, _ = _client({"https://api.github.com/user": (200, {}, b'{"login":"ci-user"}')})
    assert api.identity(client, "") == "ci-user"
    client, _, _ = _client({"https://api.github.com/user": (401, {}, b'{"message":"Bad credentials"}')})
    with pytest.raises(api.GitHubError, match="token was refused"):
        api.identity(client, "")


# --- the command line ------------------------------------------------------------------------------------------------


def test_usage_and_github_errors_have_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_EVENT_PATH", raising=False)
    monkeypatch.delenv("GITHUB_REPOSITORY", raising=False)
    monkeypatch.delenv("GITHUB_TOKEN", raising=False)
    monkeypatch.delenv("GH_TOKEN", raising=False)
    assert main([], client=FakeGitHub()) == 2
    assert main(["--event", str(tmp_path / "absent.json")], client=FakeGitHub()) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["--event", str(tmp_path / "bad.json")], client=FakeGitHub()) == 2
    event = _event_file(tmp_path, issues_event("opened", issue_payload("x")))
    assert main(["--event", event]) == 2 and "GITHUB_TOKEN is not set" in capsys.readouterr().err
    assert main(["--event", event, "--redact", "maybe"]) == 2

    class Down(FakeGitHub):
        def comments(self, repo: str, number: int) -> list[dict]:
            raise api.GitHubError("GET comments: HTTP 503")

    assert main(["--event", event], client=Down()) == 3
    assert "HTTP 503" in capsys.readouterr().err


def test_pull_request_comments_are_skipped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issue = {**issue_payload("log"), "pull_request": {"url": "https://api.github.com/repos/example/strata/pulls/41"}}
    github = FakeGitHub(["gpu-crash"])
    event = issue_comment_event("created", issue, comment_payload(1, "x"))
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert github.calls == [] and "a pull request" in capsys.readouterr().out


def test_module_runs_as_a_command(tmp_path: Path) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    event = _event_file(tmp_path, issues_event("opened", issue_payload(log)))
    run = subprocess.run([sys.executable, "-m", "triage.issuebot", "--event", event, "--dry-run"],
                         capture_output=True, text=True, timeout=120,
                         env={k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "GH_"))})
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith(MARKER) and "triage:device-libs-missing" in _summary(run.stdout)


def test_cli_labels_option() -> None:
    case = str(ROOT / "corpus" / "seed-000-blit-kernels-device-libs-missing")
    run = subprocess.run([sys.executable, "-m", "triage", case, "--labels"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "triage:device-libs-missing\n"


# --- the workflow, the action and the issue form ----------------------------------------------------------------------
# actionlint itself is not installable here (its PyPI wrapper downloads a binary at build time; Debian has no
# package), so these tests check the files against GitHub's schemas as SchemaStore publishes them (vendored by
# check-jsonschema) and check what actionlint adds: expressions name declared inputs and known contexts, none
# is spliced into a shell command, `with:` keys exist in the action, and the command's flags exist.

_EXPRESSION = re.compile(r"\$\{\{(.*?)\}\}", re.DOTALL)


def _load(path: Path) -> dict:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if True in data:  # YAML 1.1 reads the key `on` as true
        data["on"] = data.pop(True)
    return data


def _schema_errors(document: dict, schema_name: str) -> list[str]:
    pytest.importorskip("check_jsonschema", reason="check-jsonschema (in the [test] extra) holds GitHub's schemas")
    from importlib import resources

    import jsonschema

    schema = json.loads((resources.files("check_jsonschema.builtin_schemas.vendor") / schema_name).read_text("utf-8"))
    validator = jsonschema.validators.validator_for(schema)(schema)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(document)]


def _strings(node: Any, path: str = "") -> list[tuple[str, str]]:
    """Every string in a YAML document with its key path."""
    if isinstance(node, dict):
        return [item for key, value in node.items() for item in _strings(value, f"{path}/{key}")]
    if isinstance(node, list):
        return [item for i, value in enumerate(node) for item in _strings(value, f"{path}/{i}")]
    return [(path, node)] if isinstance(node, str) else []


def test_workflow_action_and_form_match_githubs_schemas() -> None:
    assert _schema_errors(_load(WORKFLOW), "github-workflows.json") == []
    assert _schema_errors(_load(ACTION), "github-actions.json") == []
    assert _schema_errors(_load(FORM), "github-issue-forms.json") == []
    # the check can fail: a misspelt key, an unknown event, a permission without a level are caught
    misspelt, bad_event, bad_permission = _load(WORKFLOW), _load(WORKFLOW), _load(WORKFLOW)
    misspelt["jobs"]["triage"]["step"] = misspelt["jobs"]["triage"].pop("steps")
    bad_event["on"]["issue"] = bad_event["on"].pop("issues")
    bad_permission["permissions"] = {"issues": "yes"}
    for broken in (misspelt, bad_event, bad_permission):
        assert _schema_errors(broken, "github-workflows.json")


def test_workflow_triggers_and_permissions() -> None:
    workflow = _load(WORKFLOW)
    assert workflow["on"] == {"issues": {"types": ["opened", "edited"]},
                              "issue_comment": {"types": ["created", "edited"]}}
    assert workflow["permissions"] == {"issues": "write"}
    job = workflow["jobs"]["triage"]
    assert "permissions" not in job and "pull_request" in job["if"]
    action = _load(ACTION)
    local = next(step for step in job["steps"] if step.get("uses") == "./")
    assert set(local["with"]) <= set(action["inputs"])  # every input the workflow passes exists
    for step in job["steps"] + action["runs"]["steps"]:
        if "uses" in step and step["uses"] != "./":
            assert re.fullmatch(r"[\w.-]+/[\w.-]+@[\w.-]+", step["uses"]), step["uses"]


def test_action_expressions_and_command() -> None:
    action = _load(ACTION)
    declared = set(action["inputs"])
    used: set[str] = set()
    for path, text in _strings(action["runs"]) + _strings(_load(WORKFLOW)):
        for expression in _EXPRESSION.findall(text):
            assert not path.endswith("/run"), f"{path}: an expression spliced into a shell command"
            for context, name in re.findall(r"\b(inputs|github|env|steps|secrets|vars)\.([\w-]+)", expression):
                assert context in ("inputs", "github"), f"{path}: {expression}"
                if context == "inputs":
                    used.add(name)
    assert used == declared  # every input declared is passed on, and only declared ones are read
    step = action["runs"]["steps"][-1]
    assert set(re.findall(r"\$(\w+)", step["run"])) <= set(step["env"]) | {"GITHUB_EVENT_PATH"}
    assert set(step["env"]) <= set(re.findall(r"\$(\w+)", step["run"])) | {"GITHUB_TOKEN"}
    # the command parses with the action's defaults, and means them
    defaults = {var: _EXPRESSION.sub(lambda m: str(action["inputs"][m[1].strip().split(".", 1)[1]]["default"]), value)
                for var, value in step["env"].items()}
    with pytest.MonkeyPatch.context() as patch:
        for var, value in {**defaults, "GITHUB_EVENT_PATH": "event.json"}.items():
            patch.setenv(var, value)
        argv = [os.path.expandvars(word) for word in shlex.split(step["run"])[3:]]
    args = _arguments(argv)
    assert (args.only_label, args.comment_unknown, args.redact, args.label_prefix, args.bot_login) == (
        "gpu-crash", True, True, "triage:", "")


def test_issue_form_paste_field_renders_as_shell() -> None:
    form = _load(FORM)
    fields = {item.get("id"): item for item in form["body"]}
    assert fields["output"]["attributes"]["render"] == "shell"
    assert "render" not in fields["bundle"]["attributes"]  # a field with render takes no attachment
    assert form["labels"] == [bot.DEFAULT_LABEL]


@pytest.mark.skipif(shutil.which("actionlint") is None, reason="actionlint is not installed")
def test_actionlint() -> None:
    run = subprocess.run(["actionlint", "-no-color", str(WORKFLOW.relative_to(ROOT))], cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr


def test_readme_workflow_is_the_shipped_one_for_another_repository() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("### Use it in your repository"):readme.index("### Try it without GitHub")]
    block = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert block is not None
    copied = yaml.safe_load(block[1])
    copied["on"] = copied.pop(True)
    assert _schema_errors(copied, "github-workflows.json") == []
    shipped = _load(WORKFLOW)
    steps = shipped["jobs"]["triage"].pop("steps")
    assert copied["jobs"]["triage"].pop("steps") == [{**steps[-1], "uses": "OWNER/hip-triage@vX"}]
    assert [step["uses"] for step in steps[:-1]] == ["actions/checkout@v4"]  # only for `uses: ./`
    assert copied == shipped
