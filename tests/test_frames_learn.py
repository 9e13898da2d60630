"""`triage frames learn`: names from symbolized stacks feed stripped stacks of exactly the same build.

The real case uses Debian's libamdhip64.so.5: a gdb-style stack naming exported functions at
their ``nm -D -S`` offsets is learned, and a stripped stack of the same build is then named
from the store with the same names.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from tests.conftest import CORPUS, ROOT, artifact
from triage.cli import app
from triage.parsers import parse
from triage.pipeline import triage
from triage.symbolize import symbolize

HIP = Path("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5")
SEED_003 = CORPUS / "seed-003-getdevicekernel-null-gfx906-only-kernel"
HIP_LOG = ":3:hip_context.cpp  :62  :  HIP Version: 5.2.21153-0, Direct Dispatch: 1\n"


def learn(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(app, ["frames", "learn", *args])
    return result.exit_code, result.output


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


@pytest.fixture()
def hip_functions() -> list[tuple[int, str]]:
    """(offset, demangled name) of exported functions of the real library, from nm."""
    if not HIP.exists() or shutil.which("nm") is None:
        pytest.skip(f"{HIP} or nm is absent: install Debian's libamdhip64-5 and binutils")
    out = subprocess.run(["nm", "-D", "-S", "-C", "--defined-only", str(HIP)], capture_output=True, text=True,
                         check=True).stdout
    rows = [(int(m[1], 16), m[2]) for m in re.finditer(r"^([0-9a-f]+) [0-9a-f]+ T (\w+)(?:@@?[\w.]+)?$", out, re.M)]
    return sorted(rows)[:6]


def test_learned_real_names_name_a_stripped_stack_of_the_same_build(tmp_path: Path, hip_functions) -> None:
    named = "".join(f"#{i}  {name}  ({HIP.name} + 0x{off + 4:x})\n" for i, (off, name) in enumerate(hip_functions))
    code, out = learn(str(write(tmp_path / "named.txt", HIP_LOG + named)), "--frames-dir", str(tmp_path / "store"))
    assert code == 0 and "libamdhip64.so 5.2.21153-0: 6 new, 0 already known" in out
    stripped = "".join(f"#{i}  {HIP.name} + 0x{off + 4:x}\n" for i, (off, _) in enumerate(hip_functions))
    case = parse([artifact(HIP_LOG + stripped)])
    symbolize(case, [ROOT / "signatures" / "frames", tmp_path / "store"])
    assert [(f.symbol, f.symbol_source) for f in case.stacks[0].frames] == [(n, "known-frames") for _, n in hip_functions]
    other = parse([artifact(HIP_LOG.replace("5.2.21153", "5.2.99999") + stripped)])
    symbolize(other, [tmp_path / "store"])
    assert all(f.symbol is None for f in other.stacks[0].frames), "another build must not borrow the names"


def test_seed_003_learns_names_and_delta_then_knows_them(tmp_path: Path) -> None:
    store = tmp_path / "store"
    code, out = learn(str(SEED_003), "--frames-dir", str(store))
    assert code == 0 and "libamdhip64.so 7.2.53211: 6 new" in out and "mesh-llm" in out
    text = (store / "libamdhip64-7.2.53211.yaml").read_text()
    assert "file_offset_delta: 0x1000" in text and '"0x48a610": "amd::Symbol::getDeviceKernel(amd::Device const&)"' in text
    code, out = learn(str(SEED_003), "--frames-dir", str(store))
    assert code == 0 and "0 new, 6 already known" in out


def test_a_different_name_is_a_conflict_and_is_not_written(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(ROOT / "signatures" / "frames", store)
    before = (store / "libamdhip64-7.2.53211.yaml").read_text()
    case = write(tmp_path / "other.txt", "#0  hip::somethingElse  (libamdhip64.so.7.2.53211 + 0x48a610)\n"
                                         "#1  hip::newFrame  (libamdhip64.so.7.2.53211 + 0x100)\n")
    code, out = learn(str(case), "--frames-dir", str(store))
    assert code == 1 and "conflict:" in out and "hip::somethingElse" in out
    after = (store / "libamdhip64-7.2.53211.yaml").read_text()
    assert "somethingElse" not in after and after.startswith(before)
    assert "# module offset (gdb, coredumpctl)" in after, "comments of the edited file survive"
    assert '"0x100": "hip::newFrame"' in after and "getDeviceKernel" in after


def test_two_inputs_that_disagree_are_a_conflict(tmp_path: Path) -> None:
    a = write(tmp_path / "a.txt", "#0  f  (libq.so.1.2.3 + 0x10)\n")
    b = write(tmp_path / "b.txt", "#0  g  (libq.so.1.2.3 + 0x10)\n")
    code, out = learn(str(a), str(b), "--frames-dir", str(tmp_path / "store"))
    assert code == 1 and "'f' at a.txt:1 but 'g' at b.txt:1" in out


def test_an_empty_frames_block_is_filled_in_place(tmp_path: Path) -> None:
    store = tmp_path / "store"
    shutil.copytree(ROOT / "signatures" / "frames", store)
    log = ":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1\n"
    case = write(tmp_path / "c.txt", log + "#0  amd::Foo::bar()  (libamdhip64.so.7 + 0x4b71c9)\n")
    code, _ = learn(str(case), "--frames-dir", str(store))
    text = (store / "libamdhip64-7.2.53210.yaml").read_text()
    assert code == 0 and "frames: {}" not in text and '"0x4b71c9": "amd::Foo::bar()"' in text
    assert text.startswith("# libamdhip64 7.2.53210.41ce572d55, as bundled")


def test_user_store_is_read_with_the_shipped_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    case = write(tmp_path / "named.txt", "#0  libq::crash()  (libq.so.1.2.3 + 0x10)\n")
    code, _ = learn(str(case), "--frames-dir", str(tmp_path / "data" / "hip-triage" / "frames"))
    assert code == 0
    stripped = write(tmp_path / "stripped.txt", "Signal: 11 (SEGV)\n#0  libq.so.1.2.3 + 0x10\n")
    result = triage([str(stripped)])
    assert result.case.stacks[0].frames[0].symbol == "libq::crash()"
    assert result.case.fault.symbol_source == "known-frames"


def test_nothing_learnable_says_so(tmp_path: Path) -> None:
    code, out = learn(str(write(tmp_path / "x.txt", "#0  libq.so.1 + 0x10\n")), "--frames-dir", str(tmp_path / "s"))
    assert code == 0 and "no frame with both a name and a module offset" in out


def test_unreadable_input_exits_2(tmp_path: Path) -> None:
    code, out = learn(str(tmp_path / "missing.txt"), "--frames-dir", str(tmp_path / "s"))
    assert code == 2 and "Traceback" not in out
