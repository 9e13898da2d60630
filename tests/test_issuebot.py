"""The issue bot (triage/issuebot.py) on recorded issue payloads, with a fake GitHub and no network.

Each fixture in tests/fixtures/issues/ is a recorded ``issues`` event, the local file (or corpus
folder, zipped in memory) each attachment link serves, and the expected labels and signature.
"""

from __future__ import annotations

import copy
import io
import json
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import FIXTURES, ROOT
from triage import issuebot
from triage.issuebot import MARKER, GitHubError, attachment_urls, code_blocks, main

ISSUES = sorted((FIXTURES / "issues").glob("*.json"))


class FakeGitHub:
    """GitHub as the bot sees it: one issue's comments and labels in memory, attachments from local files."""

    def __init__(self, attachments: dict[str, str], labels: list[str] | None = None) -> None:
        self.attachments = attachments
        self.issue_comments: list[dict] = []
        self.labels = list(labels or [])
        self.calls: list[str] = []

    def issue(self, repo: str, number: int) -> dict:
        raise AssertionError("the event carries the issue")

    def comments(self, repo: str, number: int) -> list[dict]:
        self.calls.append("comments")
        return copy.deepcopy(self.issue_comments)

    def create_comment(self, repo: str, number: int, body: str) -> dict:
        self.calls.append("create")
        comment = {"id": 1000 + len(self.issue_comments), "body": body, "user": {"login": "github-actions[bot]"}}
        self.issue_comments.append(comment)
        return comment

    def update_comment(self, repo: str, comment_id: int, body: str) -> dict:
        self.calls.append("update")
        comment = next(c for c in self.issue_comments if c["id"] == comment_id)
        comment["body"] = body
        return comment

    def add_labels(self, repo: str, number: int, labels: list[str]) -> None:
        self.calls.append("add_labels")
        self.labels += [name for name in labels if name not in self.labels]

    def remove_label(self, repo: str, number: int, label: str) -> None:
        self.calls.append("remove_label")
        self.labels.remove(label)

    def download(self, url: str, limit: int) -> bytes:
        self.calls.append("download")
        if url not in self.attachments:
            raise GitHubError("HTTP 404")
        source = ROOT / self.attachments[url]
        if source.is_dir():  # a bundle the user zipped
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w") as archive:
                for path in sorted(source.iterdir()):
                    if path.name != "expected.yaml":
                        archive.write(path, path.name)
            data = buffer.getvalue()
        else:
            data = source.read_bytes()
        if len(data) > limit:
            raise GitHubError(f"over the {limit >> 20} MiB limit")
        return data


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("the bot tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def _recorded(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def _event_file(tmp_path: Path, event: dict) -> str:
    path = tmp_path / "event.json"
    path.write_text(json.dumps(event), encoding="utf-8")
    return str(path)


def _labels(issue_labels: list[str]) -> list[dict]:
    return [{"name": name} for name in issue_labels]


@pytest.mark.parametrize("fixture", ISSUES, ids=[p.stem for p in ISSUES])
def test_recorded_issue_gets_comment_and_labels(fixture: Path, tmp_path: Path,
                                                capsys: pytest.CaptureFixture[str]) -> None:
    recorded = _recorded(fixture)
    event, expected = recorded["event"], recorded["expected"]
    before = [label["name"] for label in event["issue"]["labels"]]
    github = FakeGitHub(recorded["attachments"], before)
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert github.calls.count("download") == len(recorded["attachments"])
    assert len(github.issue_comments) == 1
    comment = github.issue_comments[0]["body"]
    assert comment.startswith(MARKER + "\n")
    heading = comment.split("\n")[1]
    assert heading.startswith("## ") and f"`{expected['labels'][0].split(':', 1)[1]}`" in heading
    assert f"`{expected['signature']}`" in comment
    assert "hip-triage " in comment and "signatures " in comment.rsplit("<sub>", 1)[-1]
    assert len(comment) < 65_536
    assert github.labels == before + expected["labels"]
    assert "comment created" in capsys.readouterr().out

    # the same issue again: the comment is current, nothing is written
    github.calls.clear()
    event["issue"]["labels"] = _labels(github.labels)
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert len(github.issue_comments) == 1 and github.issue_comments[0]["body"] == comment
    assert "create" not in github.calls and "update" not in github.calls and "add_labels" not in github.calls

    # the user edits the issue and adds a line: the bot's comment is updated in place
    event["action"] = "edited"
    event["issue"]["body"] += "\n```\nUpdate: still crashes after a reboot.\n```\n"
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert github.calls.count("update") == 1 and "create" not in github.calls
    assert len(github.issue_comments) == 1
    assert github.issue_comments[0]["body"] != comment and "issue-body-" in github.issue_comments[0]["body"]
    assert github.labels == before + expected["labels"]


def test_comment_is_the_redacted_markdown_of_the_same_inputs(tmp_path: Path) -> None:
    """The comment is what `triage --format markdown --redact` prints for the files the bot read."""
    recorded = _recorded(FIXTURES / "issues" / "seed-002.json")
    github = FakeGitHub(recorded["attachments"])
    outcome = issuebot.triage_issue(github, "example/strata", recorded["event"]["issue"])
    for url, source in recorded["attachments"].items():
        (tmp_path / f"{list(recorded['attachments']).index(url) + 1:02d}-{url.rsplit('/', 1)[-1]}").write_bytes(
            (ROOT / source).read_bytes())
    (tmp_path / "issue-body-1.txt").write_text(code_blocks(recorded["event"]["issue"]["body"])[0], encoding="utf-8")
    run = subprocess.run([sys.executable, "-m", "triage", *sorted(str(p) for p in tmp_path.iterdir()),
                          "--format", "markdown", "--redact"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == outcome.comment + ("" if outcome.comment.endswith("\n") else "\n")


def test_stale_label_is_replaced(tmp_path: Path) -> None:
    recorded = _recorded(FIXTURES / "issues" / "seed-000.json")
    event = recorded["event"]
    event["issue"]["labels"] = _labels(["bug", "triage:unknown", "bot:other"])
    github = FakeGitHub(recorded["attachments"], ["bug", "triage:unknown", "bot:other"])
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert github.labels == ["bug", "bot:other", "triage:device-libs-missing"]


def test_label_prefix_is_configurable(tmp_path: Path) -> None:
    recorded = _recorded(FIXTURES / "issues" / "seed-000.json")
    github = FakeGitHub(recorded["attachments"])
    assert main(["--event", _event_file(tmp_path, recorded["event"]), "--label-prefix", "crash/"], client=github) == 0
    assert github.labels == ["crash/device-libs-missing"]


def test_unknown_issue_is_labelled_unknown(tmp_path: Path) -> None:
    event = {"action": "opened", "repository": {"full_name": "o/r"},
             "issue": {"number": 7, "body": "It crashed:\n\n```\nSomething went wrong, no idea what.\n```\n",
                       "labels": []}}
    github = FakeGitHub({})
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert github.labels == ["triage:unknown"]
    assert "Not recognised" in github.issue_comments[0]["body"]


def test_redaction_is_on_by_default_and_can_be_turned_off(tmp_path: Path) -> None:
    log = (ROOT / "corpus/seed-000-blit-kernels-device-libs-missing/hip.log").read_text(encoding="utf-8")
    personal = log.replace("HIP Library Path: ./libamdhip64.so.7",
                           "HIP Library Path: /home/alice/strata/libamdhip64.so.7 on alice-desktop 10.1.2.3")
    event = {"action": "opened", "repository": {"full_name": "o/r"},
             "issue": {"number": 8, "body": f"```\nalice@alice-desktop:~$ ./strata\n{personal}```\n", "labels": []}}
    github = FakeGitHub({})
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    comment = github.issue_comments[0]["body"]
    for secret in ("alice", "10.1.2.3"):
        assert secret not in comment
    assert "user-1" in comment

    github = FakeGitHub({})
    assert main(["--event", _event_file(tmp_path, event), "--redact", "false"], client=github) == 0
    assert "/home/alice/strata" in github.issue_comments[0]["body"]


def test_nothing_to_read_posts_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    event = {"action": "opened", "repository": {"full_name": "o/r"},
             "issue": {"number": 9, "body": "Please add a dark mode. ![x](https://github.com/user-attachments/assets/1)",
                       "labels": []}}
    github = FakeGitHub({})
    assert main(["--event", _event_file(tmp_path, event)], client=github) == 0
    assert github.issue_comments == [] and github.labels == []
    assert "no attachments or code blocks" in capsys.readouterr().out


def test_failed_download_is_a_warning_in_the_comment(tmp_path: Path) -> None:
    recorded = _recorded(FIXTURES / "issues" / "seed-002.json")
    attachments = dict(recorded["attachments"])
    attachments.pop(next(iter(attachments)))  # the log link now answers 404
    github = FakeGitHub(attachments)
    assert main(["--event", _event_file(tmp_path, recorded["event"])], client=github) == 0
    assert "attachment strata-iq2_xs.log could not be downloaded (HTTP 404)" in github.issue_comments[0]["body"]


def test_usage_and_github_errors_have_exit_codes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main([], client=FakeGitHub({})) == 2
    assert main(["--event", str(tmp_path / "absent.json")], client=FakeGitHub({})) == 2
    (tmp_path / "bad.json").write_text("{not json")
    assert main(["--event", str(tmp_path / "bad.json")], client=FakeGitHub({})) == 2

    class Down(FakeGitHub):
        def comments(self, repo: str, number: int) -> list[dict]:
            raise GitHubError("GET comments: HTTP 503")

    recorded = _recorded(FIXTURES / "issues" / "seed-000.json")
    assert main(["--event", _event_file(tmp_path, recorded["event"])], client=Down(recorded["attachments"])) == 3
    assert "HTTP 503" in capsys.readouterr().err


def test_dry_run_changes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    recorded = _recorded(FIXTURES / "issues" / "seed-000.json")
    github = FakeGitHub(recorded["attachments"])
    assert main(["--event", _event_file(tmp_path, recorded["event"]), "--dry-run"], client=github) == 0
    assert github.issue_comments == [] and github.labels == []
    assert capsys.readouterr().out.startswith(MARKER)


def test_attachment_links() -> None:
    body = ("see [logs.zip](https://github.com/user-attachments/files/1/logs.zip), "
            "https://github.com/user-attachments/files/2/crash.DMP. and https://github.com/o/r/files/3/old.log\n"
            "![img](https://github.com/user-attachments/assets/abc) https://github.com/user-attachments/files/4/x.png "
            "https://example.com/files/5/evil.log https://github.com/user-attachments/files/1/logs.zip")
    assert attachment_urls(body) == ["https://github.com/user-attachments/files/1/logs.zip",
                                     "https://github.com/user-attachments/files/2/crash.DMP",
                                     "https://github.com/o/r/files/3/old.log"]


def test_code_blocks() -> None:
    body = ("text\n```sh\n$ ./app\nSegmentation fault\n```\nmore ``not a fence`` here\n"
            "~~~~\n```\ninner\n```\n~~~~\n```\n\n```\n  ```text\nunclosed\n")
    assert code_blocks(body) == ["$ ./app\nSegmentation fault\n", "```\ninner\n```\n", "unclosed\n"]


def test_cli_labels_option() -> None:
    case = str(ROOT / "corpus" / "seed-000-blit-kernels-device-libs-missing")
    run = subprocess.run([sys.executable, "-m", "triage", case, "--labels"], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout == "triage:device-libs-missing\n"


def test_action_and_example_workflow() -> None:
    import yaml

    action = yaml.safe_load((ROOT / "action.yml").read_text(encoding="utf-8"))
    assert action["runs"]["using"] == "composite"
    assert action["inputs"]["redact"]["default"] == "true"
    assert action["inputs"]["label-prefix"]["default"] == "triage:"
    steps = " ".join(step.get("run", "") for step in action["runs"]["steps"])
    assert "python -m triage.issuebot" in steps and "${{" not in steps  # inputs arrive through env, not spliced
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "triage-issues.yml").read_text(encoding="utf-8"))
    assert workflow[True]["issues"]["types"] == ["opened", "edited"]  # YAML 1.1 reads the key `on` as True
    assert workflow["permissions"]["issues"] == "write"
    assert any(step.get("uses") == "./" for step in workflow["jobs"]["triage"]["steps"])
