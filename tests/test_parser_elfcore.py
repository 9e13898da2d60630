"""ELF core files: the parser against the real cores in ../shared/realdata/elfcores and their oracles.

The oracle values are read from the text files made by gdb and elfutils beside each core
(README.md there says how), not copied into this file:

* README.md's table: signal and si_code names;
* gdb_siginfo.txt: si_signo, si_code, si_addr;
* eu-readelf-n.txt: pid and the NT_PRSTATUS registers;
* eu-unstrip-n.txt: each module's load base and build-id;
* eu-stack.txt and gdb.txt: frame addresses and modules.

Known difference, checked as such: eu-stack unwinds with CFI and goes on past libc's
``__libc_start_call_main`` to ``__libc_start_main_impl`` and ``_start``; this parser walks frame
pointers (and scans the stack where there are none) and libc keeps no frame pointer, so its
stacks end at ``__libc_start_call_main``. stack_overflow is compared over eu-stack's 256 frames.
"""

from __future__ import annotations

import gzip
import json
import random
import re
import struct
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest

from tests.conftest import shared
from triage.model import Artifact, Case
from triage.parsers import elfcore, parse as parse_all

CORES = ["null_refcount", "abort", "sigill", "sigbus", "stack_overflow", "solib_symbols", "solib_stripped"]
SIGNUMS = {"ILL": 4, "ABRT": 6, "BUS": 7, "SEGV": 11}


def folder(name: str) -> Path:
    return shared("realdata", "elfcores", name)


@lru_cache(maxsize=None)
def core_bytes(name: str) -> bytes:
    return gzip.decompress((folder(name) / "core.gz").read_bytes())


def parse_core(name: str, data: bytes | None = None) -> Case:
    data = core_bytes(name) if data is None else data
    art = Artifact(name="core", text="", size=len(data), data=data)
    case = Case(artifacts=[art])
    elfcore.parse(art, case)
    return case


# --- oracle readers -------------------------------------------------------------------------

def readme_codes(name: str) -> tuple[str, str]:
    """('SEGV', 'SEGV_MAPERR') from README.md's table row for the folder."""
    for line in (folder(name).parent / "README.md").read_text().splitlines():
        if line.startswith(f"| {name} |"):
            m = re.search(r"SIG([A-Z]+)(?:\(\d+\))? / ([A-Z_]+)", line)
            assert m, line
            return m[1], m[2]
    raise AssertionError(f"no README row for {name}")


def gdb_siginfo(name: str) -> dict[str, int]:
    text = (folder(name) / "gdb_siginfo.txt").read_text()
    out = {k: int(re.search(rf"\b{k} = (-?\d+)", text)[1]) for k in ("si_signo", "si_errno", "si_code")}
    out["si_addr"] = int(re.search(r"_sigfault = \{si_addr = (0x[0-9a-f]+)", text)[1], 16)
    return out


def readelf_prstatus(name: str) -> dict[str, int]:
    """pid and registers from the first PRSTATUS block of eu-readelf -n."""
    text = (folder(name) / "eu-readelf-n.txt").read_text()
    block = text[text.index("PRSTATUS"):text.index("PRPSINFO")]
    out = {}
    for key, value in re.findall(r"([a-z0-9_.]+):\s+(0x[0-9a-f]+|-?\d+)\b", block):
        number = int(value, 16) if value.startswith("0x") else int(value)
        out[key.replace("rflags", "eflags").replace(".", "_")] = number & 0xFFFFFFFFFFFFFFFF
    return out


def unstrip_modules(name: str) -> dict[str, tuple[int, str]]:
    """module base name -> (load base, build-id) from eu-unstrip -n."""
    out = {}
    for line in (folder(name) / "eu-unstrip-n.txt").read_text().splitlines():
        m = re.match(r"0x([0-9a-f]+)\+0x[0-9a-f]+ ([0-9a-f]+)@\S+ .* (\S+)$", line)
        if m:
            out[m[3].rsplit("/", 1)[-1]] = (int(m[1], 16), m[2])
    return out


def eu_stack(name: str) -> list[tuple[int, str, str]]:
    """(address, module, function) for each frame eu-stack printed."""
    frames = []
    for line in (folder(name) / "eu-stack.txt").read_text().splitlines():
        m = re.match(r"#(\d+)\s+0x([0-9a-f]+)\s+(?:- 1 )?(.*?)\s*- (\S+)$", line)
        if m:
            assert int(m[1]) == len(frames), line
            frames.append((int(m[2], 16), m[4], m[3]))
    return frames


def gdb_frames(name: str) -> dict[int, int]:
    """frame index -> address for gdb's bt lines that print one (frame 0 with source info does not)."""
    out: dict[int, int] = {}
    for line in (folder(name) / "gdb.txt").read_text().splitlines():
        if m := re.match(r"#(\d+)\s+0x([0-9a-f]+) in ", line):
            out.setdefault(int(m[1]), int(m[2], 16))
    return out


def expected_depth(frames: list[tuple[int, str, str]]) -> int:
    """eu-stack's frames this parser can reach: up to __libc_start_call_main (see the module doc)."""
    for index, (_, _, function) in enumerate(frames):
        if function == "__libc_start_call_main":
            return index + 1
    return len(frames)


# --- against the oracles --------------------------------------------------------------------

@pytest.mark.parametrize("name", CORES)
def test_signal_and_fault_address(name: str) -> None:
    case = parse_core(name)
    info = gdb_siginfo(name)
    signal, si_code = readme_codes(name)
    assert case.value("signal") == signal and SIGNUMS[signal] == info["si_signo"]
    assert case.value("si_code") == si_code
    assert case.fact("signal").score == 95
    if signal == "ABRT":  # si_addr overlays si_pid/si_uid for SI_TKILL: not a fault address
        assert case.value("fault_address") is None
    else:
        assert int(case.value("fault_address"), 16) == info["si_addr"]
    assert not case.warnings
    assert case.claims and "fault" in case.inputs and "stack" in case.inputs


@pytest.mark.parametrize("name", CORES)
def test_registers_and_pid(name: str) -> None:
    case = parse_core(name)
    oracle = readelf_prstatus(name)
    assert case.stacks[0].thread == str(oracle["pid"])
    for reg in elfcore.REGISTERS:
        assert case.registers[reg] == oracle[reg], reg
    assert case.value("program") == re.search(r"fname: (\S+),", (folder(name) / "eu-readelf-n.txt").read_text())[1]


@pytest.mark.parametrize("name", CORES)
def test_pc_and_frames_match_eu_stack(name: str) -> None:
    case = parse_core(name)
    stack = case.stacks[0]
    assert stack.crashing and stack.form == "core" and len(case.stacks) == 1
    frames = stack.frames
    oracle = eu_stack(name)
    bases = unstrip_modules(name)
    depth = expected_depth(oracle)
    assert len(frames) >= depth
    assert len(frames) <= elfcore.MAX_FRAMES
    assert frames[0].address == case.registers["rip"] == oracle[0][0]
    for frame, (address, module, _) in zip(frames[:depth], oracle):
        assert (frame.address, frame.module) == (address, module), frame.index
        assert frame.offset == address - bases[module][0]
        assert frame.text == f"{module} + 0x{frame.offset:x}"
    # gdb agrees, in order; it also shows inlined calls as frames of their own (abort's #1
    # __pthread_kill_internal, from libc's debug info on the oracle machine), which eu-stack
    # and this parser do not: those are the gdb addresses that eu-stack does not have.
    ours = [f.address for f in frames[:depth]]
    unwound = {address for address, _, _ in oracle}
    seen = [address for index, address in sorted(gdb_frames(name).items()) if address in unwound]
    mine = [a for a in ours if a in set(seen)]
    assert seen[:len(mine)] == mine
    assert frames[0].symbol_note is None
    assert all(f.symbol_note in ("frame pointer", "found by stack scan, not unwound") for f in frames[1:])


def test_abort_needs_the_stack_scan() -> None:
    """libc's frames keep no frame pointer: raise/abort/check_invariant are found by scanning,
    then the walk resumes at main's frame record."""
    frames = parse_core("abort").stacks[0].frames
    notes = [f.symbol_note for f in frames[:6]]
    assert notes[1:4] == ["found by stack scan, not unwound"] * 3
    assert notes[4:6] == ["frame pointer"] * 2


def test_stack_overflow_is_bounded() -> None:
    frames = parse_core("stack_overflow").stacks[0].frames
    assert len(frames) == elfcore.MAX_FRAMES  # gdb shows about 3,600; eu-stack and we stop at 256
    assert {f.offset for f in frames[1:]} == {frames[1].offset}


@pytest.mark.parametrize("name", CORES)
def test_build_ids(name: str) -> None:
    facts = parse_core(name).flat_facts()
    found = {k.split(":", 1)[1]: v for k, v in facts.items() if k.startswith("build_id:")}
    oracle = {module: build_id for module, (_, build_id) in unstrip_modules(name).items()}
    oracle.pop("linux-vdso.so.1")  # the vDSO is not in NT_FILE (no file behind it), so it is not read
    assert found == oracle


# --- malformed input ------------------------------------------------------------------------

def test_random_bytes_are_not_claimed() -> None:
    data = random.Random(1).randbytes(4096)
    art = Artifact(name="blob.bin", text="", size=len(data), data=data)
    case = parse_all([art])
    assert not case.stacks and case.fault is None
    assert any("blob.bin: binary file" in w for w in case.warnings)


def test_core_header_then_random_bytes() -> None:
    rng = random.Random(2)
    head = core_bytes("sigill")[:64]
    for size in (64, 200, 5000):
        case = parse_core("x", head + rng.randbytes(size))
        assert any(w.startswith("core: corrupt core file (") for w in case.warnings), case.warnings


@pytest.mark.parametrize("size", [18, 40, 63, 64, 100, 0x698 + 100, 4096, 6000, 100_000, 200_000])
def test_truncated_core_warns(size: int) -> None:
    case = parse_core("solib_stripped", core_bytes("solib_stripped")[:size])
    assert any(w.startswith("core: corrupt core file (") for w in case.warnings), case.warnings
    assert case.claims  # still claimed: it is a core, only a broken one


def test_truncated_core_keeps_what_it_can() -> None:
    data = core_bytes("solib_stripped")
    case = parse_core("solib_stripped", data[: len(data) // 2])
    assert case.value("signal") == "SEGV" and case.value("fault_address") == "0xdead0000"
    assert any("truncated" in w for w in case.warnings)


def test_wrong_class_and_machine() -> None:
    data = bytearray(core_bytes("sigill"))
    data[4] = 1  # ELFCLASS32
    assert any("corrupt core file" in w for w in parse_core("x", bytes(data)).warnings)
    data = bytearray(core_bytes("sigill"))
    data[18:20] = struct.pack("<H", 183)  # aarch64
    case = parse_core("x", bytes(data))
    assert any("not x86-64" in w for w in case.warnings) and not case.stacks


def test_fuzzed_cores_never_raise() -> None:
    rng = random.Random(3)
    original = core_bytes("abort")
    for _ in range(200):
        data = bytearray(original[:12000])
        for _ in range(rng.randint(1, 40)):
            data[rng.randrange(16, len(data))] = rng.randrange(256)
        parse_core("x", bytes(data))  # must not raise


def test_executable_is_not_a_core() -> None:
    data = (folder("sigill") / "sigill").read_bytes()
    case = parse_core("x", data)
    assert not case.claims and not case.warnings and not case.facts


# --- end to end -----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ["solib_stripped", "null_refcount"])
def test_cli_reads_core_gz(name: str) -> None:
    path = folder(name) / "core.gz"
    run = subprocess.run([sys.executable, "-m", "triage", str(path), "-f", "json"],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode in (0, 1), run.stderr  # 1 = no signature matched, still a report
    fault = json.loads(run.stdout)["fault"]
    signal, _ = readme_codes(name)
    assert fault["signal"] == signal
    assert int(fault["address"], 16) == gdb_siginfo(name)["si_addr"]
    address, module, _ = eu_stack(name)[0]
    assert fault["module"] == module
    assert int(fault["offset"], 16) == address - unstrip_modules(name)[module][0]
