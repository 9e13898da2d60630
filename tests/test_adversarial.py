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
    """Run every parser and finisher on ``text``; return the ones that took ``bound`` seconds or more."""
    import time

    from triage.model import Artifact, Case
    from triage.parsers import FINISHERS, LINE_PARSERS

    slow = []
    artifact = Artifact(name="long.log", text=text, size=len(text))
    case = Case(artifacts=[artifact], warnings=[])
    for step in [*LINE_PARSERS, *FINISHERS]:
        started = time.monotonic()
        try:
            step(case) if step in FINISHERS else step.parse(artifact, case)
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


# -- a zip bomb, through the whole command: time and memory ---------------------------------------

# Runs a command and prints, as JSON, how it ended and the peak resident memory of it and its
# children: a process of its own, so that no earlier child of the test run counts.
_PEAK = """
import json, resource, subprocess, sys
try:
    done = subprocess.run(sys.argv[2:], capture_output=True, timeout=float(sys.argv[1]))
    out = {"returncode": done.returncode, "stdout": done.stdout.decode(), "stderr": done.stderr.decode()[-2000:]}
except subprocess.TimeoutExpired:
    out = {"returncode": None, "stdout": "", "stderr": "timed out"}
out["maxrss"] = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
print(json.dumps(out))
"""

# `triage ARGS`, also printing how long reading the input took.
_TIMED_TRIAGE = """
import json, sys, time
import triage.pipeline
from triage.ingest import reader
seconds = []
def timed(*args, **kwargs):
    started = time.perf_counter()
    try:
        return reader.read_inputs(*args, **kwargs)
    finally:
        seconds.append(time.perf_counter() - started)
triage.pipeline.read_inputs = timed
sys.argv = ["triage", *sys.argv[1:]]
from triage.cli import main
try:
    main()
except SystemExit:
    pass
print(json.dumps(seconds))
"""


def _overlap_bomb(plain: bytes, entries: int) -> bytes:
    """Many central-directory entries naming one local header and its one deflate stream."""
    import struct
    import zlib

    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    kernel = packer.compress(plain) + packer.flush()
    name, crc = b"hip.log", zlib.crc32(plain)
    local = struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, 8, 0, 0, crc, len(kernel), len(plain), len(name), 0)
    central = struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, 8, 0, 0, crc, len(kernel), len(plain),
                          len(name), 0, 0, 0, 0, 0o100644 << 16, 0)
    head = local + name + kernel
    directory = (central + name) * entries
    end = struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, entries, entries, len(directory), len(head), 0)
    return head + directory + end


def test_overlap_bomb_is_refused_fast_and_small(tmp_path: Path) -> None:
    """200 entries over one 3 MiB stream of log lines (35:1, each entry passing the per-member checks):
    600 MiB of text from 100 KB. Before, the reader took 512 MiB of it (1.3 GB and 8 s) and the
    analysis ran past 400 s at 2.8 GB. Now the overlap is seen in the directory and nothing is unpacked."""
    lines = (f":3:hip_memory.cpp :62 : {1000 + i * 7} us: [pid:4242 tid:0x7f10] hipMemcpy ( 0x7f0000a00000, 4096 )"
             " : hipSuccess\n" for i in range(40_000))
    plain = "".join(lines).encode()[: 3 << 20]
    bomb = tmp_path / "bomb.zip"
    bomb.write_bytes(_overlap_bomb(plain, 200))
    assert bomb.stat().st_size < 200_000
    report = tmp_path / "report.json"
    env = dict(os.environ, TRIAGE_CACHE="0", HOME=str(tmp_path))
    env.pop("TRIAGE_DEBUG", None)
    done = subprocess.run(
        [sys.executable, "-c", _PEAK, str(TIMEOUT - 20), sys.executable, "-c", _TIMED_TRIAGE, str(bomb),
         "-f", "json", "-o", str(report)],
        capture_output=True, timeout=TIMEOUT, env=env, cwd=tmp_path,
    )
    run = json.loads(done.stdout)
    assert run["returncode"] in (0, 1), run
    assert run["maxrss"] < 512 << 20, f"peak {run['maxrss'] >> 20} MiB"
    seconds = json.loads(run["stdout"].strip().splitlines()[-1])
    assert len(seconds) == 1 and seconds[0] < 2, seconds
    warnings = json.loads(report.read_text(encoding="utf-8"))["warnings"]
    assert "bomb.zip: entries overlap: a zip bomb; not read" in warnings


def test_a_log_of_repeated_frames_stays_under_512_mib(tmp_path: Path) -> None:
    """16 MiB of gdb frame lines (190,000 frames, each naming a ROCm library): once 1 GB, every frame
    and every repeated fact of it kept. Frames stop at a limit with a warning; a fact repeated past a
    limit adds nothing."""
    from triage.parsers.backtrace import MAX_FRAMES

    log = tmp_path / "frames.log"
    with log.open("w") as out:
        for i in range(190_000):
            out.write(f"#{i % 60} 0x00007f{i * 7919:010x} in hipfunc{i % 997}(int, char*) () from "
                      "/opt/rocm/lib/libamdhip64.so.6\n")
    report = tmp_path / "report.json"
    env = dict(os.environ, TRIAGE_CACHE="0", HOME=str(tmp_path))
    env.pop("TRIAGE_DEBUG", None)
    done = subprocess.run([sys.executable, "-c", _PEAK, str(TIMEOUT - 20), sys.executable, "-m", "triage", str(log),
                           "-f", "json", "-o", str(report)], capture_output=True, timeout=TIMEOUT, env=env, cwd=tmp_path)
    run = json.loads(done.stdout)
    assert run["returncode"] in (0, 1), run
    assert run["maxrss"] < 512 << 20, f"peak {run['maxrss'] >> 20} MiB"
    result = json.loads(report.read_text(encoding="utf-8"))
    assert sum(len(s["frames"]) for s in result["stacks"]) == MAX_FRAMES
    assert any(f"over {MAX_FRAMES} stack frames in all" in w for w in result["warnings"])


def _many_frames_log() -> str:
    """~760 KB: thousands of unnamed gdb frames in many libraries, and kernel fault lines of many
    library builds (each frame once scanned every fault line)."""
    import random

    rng = random.Random(1)
    lines = []
    for i in range(5200):
        lines.append(f"#{i % 60}  0x00007f{rng.randrange(16 ** 10):010x} in ?? () from /usr/lib/x86_64-linux-gnu/"
                     f"libfoo{i % 50}.so.{i % 7}")
        if i % 2 == 0:
            lines.append(f"[{i}.123456] app{i % 9}[{1000 + i}]: segfault at {rng.randrange(16 ** 6):x} ip "
                         f"00007f{rng.randrange(16 ** 10):010x} sp 00007ffd{rng.randrange(16 ** 8):08x} error 4 in "
                         f"libbar{i % 40}.so.{i % 3}.{i % 5}.{i % 11}[{rng.randrange(16 ** 6):x},7f{rng.randrange(16 ** 8):08x}"
                         f"+{rng.randrange(16 ** 6):x}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("name, text", [
    ("many-frames.log", _many_frames_log()),
    # one 880 KB line of one word that signature patterns start with, and a character outside ASCII
    ("one-line.log", "rocm " * 176_000 + "é\n"),
], ids=["many-frames", "single-line"])
def test_a_whole_triage_is_bounded_on_big_inputs(tmp_path: Path, name: str, text: str) -> None:
    """Once 37 s (every frame scanned every kernel fault line) and 24 s (a regex quadratic on a long
    line): a bound ten times what they take now, to catch a quadratic path coming back."""
    import time

    from triage.match import load
    from triage.parsers.lines import needle_scanners
    from triage.pipeline import triage
    from triage.resources import data_dir

    path = tmp_path / name
    path.write_text(text)
    assert path.stat().st_size > 700_000
    (tmp_path / "warm.log").write_text("x\n")
    triage([str(tmp_path / "warm.log")])  # the database loaded (and its cache made) before the clock starts,
    anchors = load(data_dir("signatures")).prefilters.groups[0]
    for scanner in (anchors, *needle_scanners()):  # and the scanners every input reads built, as
        scanner.prepare()  # `triage signatures compile` does: the bound is on reading, not on a one-time build
    started = time.monotonic()
    result = triage([str(path)])
    assert time.monotonic() - started < 5.0
    assert not [w for w in result.case.warnings if "time budget" in w or "internal error" in w]


def test_lint_rejects_a_pattern_quadratic_on_its_own_words() -> None:
    """The lint measures growth, not one time: the quadratic shape is caught, its anchored form and a
    pattern that is slow but linear (a bounded window after many alternatives) pass."""
    import regex

    from triage.match.lint import quadratic

    assert quadratic(regex.compile(r"\brocm[^\n]*\b(?:jax|xla)", regex.IGNORECASE)) == "rocm"
    assert quadratic(regex.compile(r"APERTURE_VIOLATION[^\n]*code: 0x29\b", regex.IGNORECASE)) == "aperture_violation"
    assert quadratic(regex.compile(r"^(?>[^\n]*?\brocm)[^\n]*?\b(?:jax|xla)", regex.IGNORECASE)) is None
    window = r"(?:\bhip\w*|\bGPU\b|\bVRAM\b)[^\n]{0,100}?\b(?:out of (?:device |GPU )?memory|OutOfMemory|\bOOM\b)"
    assert quadratic(regex.compile(window, regex.IGNORECASE)) is None
