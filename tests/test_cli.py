"""The `triage` command as users and scripts run it: formats, outputs, exit codes, subcommands."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import CORPUS

SEED_000 = CORPUS / "seed-000-blit-kernels-device-libs-missing"


def triage(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "triage", *args], input=stdin, capture_output=True,
                          timeout=120, cwd=cwd)


def test_diagnosed_case_exits_0_with_a_text_summary() -> None:
    done = triage(str(SEED_000))
    assert done.returncode == 0
    out = done.stdout.decode()
    assert re.match(r"device-libs-missing \(\d+%\): ", out), out[:200]
    assert "hip.log:13" in out and "LD_PRELOAD=" in out


def test_unknown_exits_1_and_says_what_to_send() -> None:
    done = triage("-", "-f", "json", stdin=b"everything is fine\n")
    assert done.returncode == 1
    report = json.loads(done.stdout)
    assert report["diagnoses"][0]["class"] == "unknown"
    assert any("AMD_LOG_LEVEL=3" in a for a in report["ask_for"])


def test_missing_path_exits_2_without_traceback(tmp_path: Path) -> None:
    done = triage(str(tmp_path / "nope.log"))
    assert done.returncode == 2
    assert b"no such file or folder" in done.stderr and b"Traceback" not in done.stderr


def test_bad_format_is_a_usage_error() -> None:
    done = triage(str(SEED_000), "-f", "pdf")
    assert done.returncode == 2 and b"Traceback" not in done.stderr


def test_empty_folder_exits_2(tmp_path: Path) -> None:
    done = triage(str(tmp_path))
    assert done.returncode == 2 and b"nothing to read" in done.stderr


def test_output_file_format_from_suffix(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    done = triage(str(SEED_000), "-o", str(out))
    assert done.returncode == 0 and done.stdout == b""
    assert json.loads(out.read_text())["diagnoses"][0]["class"] == "device-libs-missing"
    assert b"device-libs-missing" in done.stderr


def test_zip_of_text_files(tmp_path: Path) -> None:
    bundle = tmp_path / "bundle.zip"
    with zipfile.ZipFile(bundle, "w", zipfile.ZIP_DEFLATED) as z:
        for f in sorted(SEED_000.iterdir()):
            if f.name != "expected.yaml":
                z.write(f, f"logs/{f.name}")
        z.writestr("../../escape.txt", "Couldn't create blit kernels!")
    done = triage(str(bundle), "-f", "json")
    assert done.returncode == 0
    report = json.loads(done.stdout)
    assert report["diagnoses"][0]["class"] == "device-libs-missing"
    assert any(a["name"] == "bundle.zip!logs/hip.log" for a in report["artifacts"])
    assert any("unsafe member path" in w for w in report["warnings"])
    assert not (tmp_path.parent / "escape.txt").exists()


def test_utf16_paste_with_crlf_on_stdin() -> None:
    text = (SEED_000 / "hip.log").read_text().replace("\n", "\r\n")
    done = triage("-", "-f", "json", stdin=b"\xff\xfe" + text.encode("utf-16-le"))
    assert done.returncode == 0
    assert json.loads(done.stdout)["diagnoses"][0]["class"] == "device-libs-missing"


def test_subcommand_name_wins_over_a_path(tmp_path: Path) -> None:
    (tmp_path / "signatures").write_text("Couldn't create blit kernels!\n")
    listed = triage("signatures", "list", cwd=tmp_path)
    assert listed.returncode == 0 and b"hip-no-code-object-for-gpu" in listed.stdout
    as_path = triage("./signatures", cwd=tmp_path)
    assert as_path.returncode == 0 and b"device-libs-missing" in as_path.stdout


def test_signatures_test_runs_the_examples() -> None:
    done = triage("signatures", "test")
    assert done.returncode == 0
    assert done.stdout.decode().strip().splitlines()[-1].endswith(" passed, 0 failed")


def test_version() -> None:
    done = triage("--version")
    assert done.returncode == 0 and done.stdout.startswith(b"hip-triage ")


def test_markdown_suffix_writes_markdown_and_an_unknown_suffix_is_an_error(tmp_path: Path) -> None:
    out = tmp_path / "r.markdown"
    assert triage(str(SEED_000), "-o", str(out)).returncode == 0
    assert out.read_text().startswith("<!-- hip-triage-report -->\n## `device-libs-missing`")
    done = triage(str(SEED_000), "-o", str(tmp_path / "r.pdf"))
    assert done.returncode == 2 and not (tmp_path / "r.pdf").exists()
    assert done.stderr.decode().count("\n") == 1 and "'.pdf'" in done.stderr.decode() and ".markdown" in done.stderr.decode()


def test_empty_input_is_an_input_error_not_an_unknown_report(tmp_path: Path) -> None:
    for stdin in (b"", b" \n\r\n\t\n"):
        done = triage("-", stdin=stdin)
        assert (done.returncode, done.stdout) == (2, b"")
        assert done.stderr == b"triage: nothing to read: standard input is empty\n"
    (tmp_path / "empty.log").write_bytes(b"")
    done = triage(str(tmp_path / "empty.log"), "-f", "json")
    assert done.returncode == 2 and b"empty.log is empty" in done.stderr


def test_stdin_at_a_terminal_says_how_to_end_it() -> None:
    import os
    import pty

    leader, follower = pty.openpty()
    try:
        proc = subprocess.Popen([sys.executable, "-m", "triage", "-"], stdin=follower, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE)
        os.write(leader, (SEED_000 / "hip.log").read_bytes()[:3000].split(b"\n", 1)[0] + b"\n\x04")
        out, err = proc.communicate(timeout=120)
    finally:
        os.close(leader)
        os.close(follower)
    assert b"reading standard input" in err and b"Ctrl-D" in err
    assert proc.returncode in (0, 1) and out
    piped = triage("-", stdin=b"hello\n")
    assert b"Ctrl-D" not in piped.stderr


def test_signatures_show_a_class_lists_its_signatures_and_conditions_read_as_words() -> None:
    done = triage("signatures", "show", "device-libs-missing")
    out = done.stdout.decode()
    assert done.returncode == 0 and out.startswith("class device-libs-missing: ")
    assert "hip-blit-kernels-device-libs-missing" in out
    story = triage("signatures", "show", "hip-blit-kernels-device-libs-missing").stdout.decode()
    assert "fault: signal SEGV, module amdhip64" in story and "fact: crash_site, equals blit-kernels-failed" in story
    assert not re.search(r"\{'|\['", story), "a Python repr in the story"
    done = triage("signatures", "show", "no-such-thing")
    assert done.returncode == 2 and b"no signature or class" in done.stderr
