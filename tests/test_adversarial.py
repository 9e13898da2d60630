"""Hostile inputs through the whole command: each must give a report (or a one-line error),
never a traceback, a hang, or a file written anywhere but the report.

The small inputs are committed in tests/adversarial/ (written by tests/adversarial/make.py);
the big ones (over 1 GB unpacked, a 100 MB line, a gzip bomb) are written into a temporary
folder here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent
ADVERSARIAL = HERE / "adversarial"
sys.path.insert(0, str(ADVERSARIAL))
import make  # noqa: E402

TIMEOUT = 120
DIAGNOSED = "hip-blit-kernels-device-libs-missing"

# file -> (a warning the report must hold, or None; whether the real log inside must be diagnosed)
SMALL = {
    "bomb.zip": ("compression ratio over 200:1 (a zip bomb?)", False),
    "claims-4gb.zip": ("4000000000 bytes unpacked, over the 128 MiB member limit", False),
    "traversal.zip": ("traversal.zip!../../evil.log: unsafe member path, skipped", True),
    "symlink.zip": ("symlink.zip!link.log: symbolic link, not followed", True),
    "traversal.tar": ("traversal.tar!/etc/evil.log: unsafe member path, skipped", True),
    "links.tar": ("links.tar!hard.log: hard link to '/etc/shadow', not followed", True),
    "bundle.tar": (None, True),
    "bundle.tgz": (None, True),
    "bundle.tar.bz2": (None, True),
    "bundle.tar.xz": (None, True),
    "mixed-nesting.bin": (None, True),
    "nested10.zip": ("nested deeper than 5 levels, skipped", False),
    "truncated.zip": ("damaged zip", True),
    "corrupt.zip": ("corrupt.zip!a/hip.log: corrupt member", True),
    "truncated.tar": ("truncated or corrupt", True),
    "truncated.tar.gz": ("truncated.tar.gz: truncated or corrupt gzip data", True),
    "truncated.log.gz": ("truncated or corrupt gzip data", True),
    "corrupt.gz": ("corrupt.gz: not a readable gzip file", False),
    "random.dmp": ("random.dmp: binary file (4096 bytes)", False),
    "random.core": ("random.core: binary file (4096 bytes)", False),
    "fake-header.dmp": ("fake-header.dmp: corrupt minidump", False),
    "fake-header.core": ("fake-header.core: corrupt core file", False),
    "utf16le-bom.log": (None, True),
    "utf16be-bom.log": (None, True),
    "utf16le.log": (None, True),
    "utf16be.log": (None, True),
    "mixed-encodings.log": (None, True),
    "nul-bytes.log": (None, True),
    "garbage.zip": ("garbage.zip: not a readable zip", False),
    "garbage.tar": ("garbage.tar: not a readable tar", False),
    "garbage.xz": ("garbage.xz: not a readable xz file", False),
    "garbage.bz2": ("garbage.bz2: not a readable bzip2 file", False),
}

BIG = {
    "over-1gb.zip": ("over the 128 MiB member limit", False),
    "long-line.log": ("long-line.log: line 5 cut at 1 MiB", True),
    "big.log.gz": ("compression ratio over 200:1 (a gzip bomb?)", False),
}


def _tree(folder: Path) -> dict[str, tuple[int, int]]:
    return {
        p.relative_to(folder).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns) if p.is_file() else (-1, 0)
        for p in folder.rglob("*")
    }


def _run(source: Path, tmp_path: Path) -> tuple[subprocess.CompletedProcess, dict | None]:
    work = tmp_path / "work"
    work.mkdir()
    report = tmp_path / "report.json"
    env = dict(os.environ, TRIAGE_CACHE="0", HOME=str(tmp_path / "home"), TMPDIR=str(tmp_path / "tmp"))
    env.pop("TRIAGE_DEBUG", None)
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    inputs_before = _tree(source.parent)
    tmp_before = _tree(tmp_path)
    done = subprocess.run(
        [sys.executable, "-m", "triage", str(source), "-f", "json", "-o", str(report)],
        cwd=work, env=env, capture_output=True, timeout=TIMEOUT,
    )
    stderr = done.stderr.decode("utf-8", "replace")
    assert "Traceback" not in stderr, stderr
    assert _tree(source.parent) == inputs_before, "the input's folder changed"
    tmp_after = _tree(tmp_path)
    tmp_after.pop("report.json", None)
    assert tmp_after == tmp_before, f"files written outside the report: {set(tmp_after) ^ set(tmp_before)}"
    if done.returncode == 2:
        lines = stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("triage: "), stderr
        return done, None
    assert done.returncode in (0, 1), (done.returncode, stderr)
    return done, json.loads(report.read_text(encoding="utf-8"))


def _check(name: str, result: dict | None, expected: str | None, diagnosed: bool) -> None:
    assert result is not None, f"{name}: no report"
    warnings = result.get("warnings", [])
    if expected is not None:
        assert any(expected in w for w in warnings), f"{name}: no warning with {expected!r} in {warnings}"
    text = json.dumps(result)
    if diagnosed:
        assert DIAGNOSED in text, f"{name}: the log inside was not read ({warnings})"
    # Nothing unsafe was read as evidence.
    assert "evil.log" not in text.replace("unsafe member path", "").replace("!../../evil.log", "").replace(
        "!/etc/evil.log", "").replace("!C:/evil.log", "")


def test_committed_set_is_small() -> None:
    total = sum(p.stat().st_size for p in ADVERSARIAL.iterdir() if p.is_file())
    assert total < 200 * 1024, total
    assert set(SMALL) <= {p.name for p in ADVERSARIAL.iterdir()}


def test_committed_set_is_what_make_writes() -> None:
    # Zip timestamps differ between runs, so only the names are compared.
    assert set(make.small_inputs()) == set(SMALL), "run python tests/adversarial/make.py"


@pytest.mark.parametrize("name", sorted(SMALL))
def test_small_adversarial_input(name: str, tmp_path: Path) -> None:
    expected, diagnosed = SMALL[name]
    _, result = _run(ADVERSARIAL / name, tmp_path)
    _check(name, result, expected, diagnosed)


@pytest.fixture(scope="module")
def big_inputs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("big-inputs")
    return make.big_inputs(folder)


@pytest.mark.parametrize("name", sorted(BIG))
def test_big_adversarial_input(name: str, big_inputs: dict[str, Path], tmp_path: Path) -> None:
    expected, diagnosed = BIG[name]
    _, result = _run(big_inputs[name], tmp_path)
    _check(name, result, expected, diagnosed)


def test_missing_input_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "absent" / "no-such.zip"
    (tmp_path / "absent").mkdir()
    done = subprocess.run([sys.executable, "-m", "triage", str(missing), "-f", "json"],
                          capture_output=True, timeout=TIMEOUT, env=dict(os.environ, TRIAGE_CACHE="0"))
    assert done.returncode == 2
    lines = done.stderr.decode().strip().splitlines()
    assert len(lines) == 1 and "no such file" in lines[0]


# -- every parser on long adversarial lines -------------------------------------------------------

LINE_BOUND_S = 10.0
LONG_LINE_KINDS = ["a", " ", "#0 ", ":3:", "0x0,", "(", "[", "\t", "0x1 ", ":"]
# Lines that once made parser regexes quadratic (each start position scanned to the end of the
# line); the line parsers now pass over lines longer than triage.parsers.lines.MAX_LINE.
ONCE_SLOW = {
    "/": "envfacts._HIP_RUNTIME_PATH: (?:/)[^\\s\"'`]*?(?:lib)?amdhip64 rescans the line from every '/'",
    "#0  0x1 in f " + "a": "backtrace._MOD_OFF (also _ARGS, _AT_FILE, _MODULE_ONLY, _FROM): searched from "
    "every position of a long gdb frame line",
}


def _parse_within(text: str, bound: float) -> list[str]:
    """Run every parser and finisher on ``text``; return the ones that overran ``bound``."""
    import time

    from triage.model import Artifact, Case
    from triage.parsers import FINISHERS, LINE_PARSERS, _deadline, _Overtime

    slow = []
    artifact = Artifact(name="long.log", text=text, size=len(text))
    case = Case(artifacts=[artifact], warnings=[])
    for step in [*LINE_PARSERS, *FINISHERS]:
        started = time.monotonic()
        try:
            with _deadline(bound):
                step(case) if step in FINISHERS else step.parse(artifact, case)
        except _Overtime:
            pass
        except Exception:  # failures are the fuzzer's business; here only time counts
            pass
        if time.monotonic() - started >= bound:
            slow.append(getattr(step, "__name__", str(step)))
    return slow


@pytest.mark.parametrize("kind", LONG_LINE_KINDS)
def test_parsers_finish_on_long_lines(kind: str) -> None:
    text = kind * (200_000 // len(kind))
    assert _parse_within(text, LINE_BOUND_S) == []


@pytest.mark.parametrize("kind", sorted(ONCE_SLOW))
def test_once_slow_regexes_finish(kind: str) -> None:
    prefix, _, char = kind.rpartition(" ") if kind.startswith("#") else ("", "", kind)
    text = (prefix + " " if prefix else "") + char * 200_000
    assert _parse_within(text, LINE_BOUND_S) == [], ONCE_SLOW[kind]
