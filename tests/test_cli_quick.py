"""`triage PATH...` runs without building the typer app: the same output, messages and exit codes as through typer,
and every other command line still goes to typer."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.cli import SUBCOMMANDS, Format, quick_options

SEED = str(CORPUS / "seed-000-blit-kernels-device-libs-missing")


def test_the_quick_path_knows_every_subcommand() -> None:
    """A subcommand the quick path did not know would be read as a path."""
    from triage.cli import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert names == set(SUBCOMMANDS)


@pytest.mark.parametrize("args,expected", [
    (["x.log"], {"paths": ["x.log"]}),
    (["a", "-", "-f", "json", "--redact"], {"paths": ["a", "-"], "fmt": Format.json, "redact": True}),
    (["--format=md", "a", "-o", "r.md", "--labels"], {"paths": ["a"], "fmt": Format.md, "output": Path("r.md"),
                                                        "labels": True}),
    (["a", "--signatures", "s", "--templates", "t"], {"paths": ["a"], "signatures": Path("s"), "templates": Path("t")}),
])
def test_plain_command_lines_take_the_quick_path(args: list[str], expected: dict) -> None:
    assert quick_options(args) == expected


@pytest.mark.parametrize("args", [
    [], ["--help"], ["--version"], ["signatures", "list"], ["corpus", "d"], ["run", "a"], ["a", "--symbols", "d"],
    ["a", "-f", "bogus"], ["a", "-f"], ["a", "-f", "json", "-f", "md"], ["a", "--bogus"], ["a", "--", "-b"],
    ["a", "-o", "-x"], ["-f", "json"], ["a", "-fjson"],
])
def test_everything_else_goes_to_typer(args: list[str]) -> None:
    assert quick_options(args) is None


def _run(code: str, args: list[str], tmp_path: Path) -> tuple[str, str, int]:
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path,
                          stdin=subprocess.DEVNULL, timeout=300)
    return done.stdout, done.stderr, done.returncode


@pytest.mark.parametrize("args", [
    [SEED, "-f", "json"],
    [SEED, "--labels", "-o", "report.html"],
    [SEED, "-o", "report.bogus"],
    ["no-such-file.log"],
])
def test_the_quick_path_answers_as_typer_does(args: list[str], tmp_path: Path) -> None:
    quick = "import sys; sys.argv[0] = 'triage'; from triage.cli import main; main()"
    typer = "import sys; sys.argv[0] = 'triage'; from triage.cli import app; app(sys.argv[1:], prog_name='triage')"
    assert quick_options(args) is not None
    through_quick = _run(quick, args, tmp_path)
    written = (tmp_path / "report.html").read_text() if (tmp_path / "report.html").exists() else None
    assert _run(typer, args, tmp_path) == through_quick
    assert written == ((tmp_path / "report.html").read_text() if written is not None else None)
    assert through_quick[2] in (0, 2)
