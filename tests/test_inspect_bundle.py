"""The offload-bundle inspector on real fat binaries (tests/fixtures/offload, made by
tools/make_offload_fixtures.sh with Debian's hipcc and clang-19), checked against
clang-offload-bundler and grep.

When clang-offload-bundler-19 (Debian package clang-19) or objcopy (binutils) is absent, the
live comparison is skipped and the inspector is still compared against the tool's output
recorded in NAME.list.txt when the fixtures were made.
"""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.inspect.bundle import MAGIC, inspect_bytes
from triage.inspect.gpu import answer_for, gpu_target
from triage.model import Artifact, Where
from triage.parsers import parse

FIXTURES = Path(__file__).parent / "fixtures" / "offload"
BINARIES = ["hipcc-gfx906", "hipcc-multi", "mini-seed003", "libplain.so", "libcompressed.so"]
OBJCOPY = shutil.which("objcopy")


def _fat(name: str):
    return inspect_bytes(name, (FIXTURES / name).read_bytes())


def _device(ids: list[str]) -> list[str]:
    """Bundler entry ids -> target ids, host entries dropped."""
    return sorted(i.split("--", 1)[1] if "--" in i else i.rsplit("-", 1)[1] for i in ids if not i.startswith("host-"))


def _recorded(name: str) -> list[tuple[int, list[str]]]:
    rows = []
    for line in (FIXTURES / f"{name}.list.txt").read_text().splitlines():
        if line and not line.startswith("#"):
            offset, *ids = line.split()
            rows.append((int(offset), _device(ids)))
    return rows


@pytest.mark.parametrize("name", BINARIES)
def test_bundles_match_recorded_bundler_output(name: str) -> None:
    fat = _fat(name)
    assert [(b.offset, b.targets) for b in fat.bundles] == _recorded(name)
    assert not fat.warnings


BUNDLERS = [b for b in ("clang-offload-bundler-19", "clang-offload-bundler-15") if shutil.which(b)]


@pytest.mark.skipif(not (BUNDLERS and OBJCOPY), reason="clang-offload-bundler-19/-15 (apt-get install clang-tools-19) or "
                    "objcopy (binutils) absent: compared against the recorded NAME.list.txt only")
@pytest.mark.parametrize("bundler", BUNDLERS or ["none"])
@pytest.mark.parametrize("name", BINARIES)
def test_bundles_match_live_bundler(name: str, bundler: str, tmp_path: Path) -> None:
    """Each bundle of the extracted .hip_fatbin, listed by the tool (-15 cannot read CCOB)."""
    if bundler.endswith("-15") and name == "libcompressed.so":
        pytest.skip("clang-offload-bundler-15 predates compressed bundles")
    section = tmp_path / "fatbin"
    subprocess.run([OBJCOPY, "-O", "binary", "--only-section=.hip_fatbin", str(FIXTURES / name), str(section)], check=True)
    data = section.read_bytes()
    starts = [m.start() for m in re.finditer(rb"__CLANG_OFFLOAD_BUNDLE__|CCOB", data)] + [len(data)]
    listed = []
    for start, end in zip(starts, starts[1:]):
        one = tmp_path / f"bundle-{start}"
        one.write_bytes(data[start:end])
        done = subprocess.run([bundler, "--list", "--type=o", f"--input={one}"], capture_output=True, text=True, check=True)
        listed.append(_device(done.stdout.split()))
    assert [b.targets for b in _fat(name).bundles] == listed


@pytest.mark.parametrize("name", BINARIES)
def test_counts_match_grep(name: str) -> None:
    """``grep -a -c`` counts lines holding the magic (one per uncompressed bundle here) and
    ``grep -a -o`` the entry ids, with the feature suffixes cut off by its pattern."""
    data = (FIXTURES / name).read_bytes()
    fat = _fat(name)
    plain = [b for b in fat.bundles if not b.compression]
    lines_with_magic = sum(1 for line in data.split(b"\n") if MAGIC in line)
    assert lines_with_magic == len(plain)
    grep = {m.group(1).decode(): 0 for m in re.finditer(rb"hip[v0-9]*-amdgcn-amd-amdhsa--(gfx[0-9a-z]+)", data)}
    for m in re.finditer(rb"hip[v0-9]*-amdgcn-amd-amdhsa--(gfx[0-9a-z]+)", data):
        grep[m.group(1).decode()] += 1
    mine: dict[str, int] = {}
    for b in plain:
        for t in b.targets:
            key = re.match(r"gfx[0-9a-z]+", t).group(0)
            mine[key] = mine.get(key, 0) + 1
    assert mine == grep
    recorded = (FIXTURES / f"{name}.grep.txt").read_text().splitlines()
    assert int(recorded[1]) == lines_with_magic
    assert {r.split()[1].rsplit("--", 1)[1]: int(r.split()[0]) for r in recorded[3:]} == grep


def test_seed_003_in_miniature_has_its_outlier() -> None:
    fat = _fat("mini-seed003")
    assert len(fat.bundles) == 3 and all(b.section == ".hip_fatbin" for b in fat.bundles)
    assert fat.counts()["gfx906"] == 1 and fat.counts()["gfx1151"] == 2
    (outlier, lacks), = fat.outliers()
    assert outlier.targets == ["gfx906"] and outlier.offset == 0x15000
    assert "gfx1151" in lacks and len(lacks) == 9


@pytest.mark.parametrize("name, gpu, can_run, level", [
    ("mini-seed003", "gfx1151", "no", "no"),
    ("mini-seed003", "gfx906", "no", "no"),
    ("hipcc-gfx906", "gfx906", "yes", "exact"),
    ("hipcc-gfx906", "gfx1100", "no", "no"),
    ("hipcc-multi", "gfx1030", "yes", "exact"),
    ("hipcc-multi", "gfx1036", "no", "no"),
    ("hipcc-multi", "gfx90a", "only if", "if-feature"),
    ("hipcc-multi", "gfx90a:xnack-", "yes", "exact"),
    ("hipcc-multi", "gfx90a:xnack+", "no", "no"),
    ("libplain.so", "gfx1151", "yes", "generic"),
    ("libplain.so", "gfx1201", "yes", "exact"),
    ("libplain.so", "gfx1200", "no", "no"),
    ("libplain.so", "amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-", "yes", "exact"),
    ("libplain.so", "gfx942:sramecc-", "no", "no"),
    ("libcompressed.so", "gfx1103", "yes", "generic"),
])
def test_gpu_verdict(name: str, gpu: str, can_run: str, level: str) -> None:
    verdict = answer_for(_fat(name), gpu_target(gpu))
    assert (verdict.can_run, verdict.level) == (can_run, level)


def _plain_bundle() -> bytes:
    data = (FIXTURES / "hipcc-multi").read_bytes()
    bundle = inspect_bytes("x", data).bundles[0]
    end = max(e.offset + e.size for e in bundle.entries)
    return data[bundle.offset: bundle.offset + end]


def test_zlib_ccob_around_a_real_bundle() -> None:
    inner = _plain_bundle()
    packed = zlib.compress(inner)
    blob = b"CCOB" + struct.pack("<HHII", 2, 0, 24 + len(packed), len(inner)) + b"\0" * 8 + packed
    fat = inspect_bytes("x", b"\0" * 100 + blob)
    assert [(b.offset, b.compression, b.targets) for b in fat.bundles] == [
        (100, "zlib", ["gfx1030", "gfx1100", "gfx906", "gfx90a:xnack-"])]


def test_zstd_without_zstandard_still_reads_the_header(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "zstandard", None)
    monkeypatch.setitem(sys.modules, "compression.zstd", None)
    fat = _fat("libcompressed.so")
    assert [b.compression for b in fat.bundles] == ["zstd"] and not fat.bundles[0].targets
    assert "pip install zstandard" in fat.warnings[0]
    assert answer_for(fat, gpu_target("gfx1201")).can_run == "unknown"


@pytest.mark.parametrize("damage", ["truncated-table", "huge-count", "cut-code-object", "bad-zstd", "random"])
def test_damaged_input_is_a_warning(damage: str) -> None:
    inner = _plain_bundle()
    data = {
        "truncated-table": inner[:90],
        "huge-count": MAGIC + struct.pack("<Q", 1 << 40) + inner[32:],
        "cut-code-object": inner[: len(inner) - 100],
        "bad-zstd": (FIXTURES / "libcompressed.so").read_bytes()[:0x3000 + 200],
        "random": bytes(range(256)) * 50 + MAGIC + b"\xff" * 40 + b"CCOB\x02\x00\x01\x00" + b"\xff" * 40,
    }[damage]
    fat = inspect_bytes("x", data)
    if damage in ("huge-count", "random"):
        assert not fat.bundles and fat.stray_markers == 1
    else:
        assert fat.bundles and fat.warnings


def test_parser_claims_the_binary_and_the_report_shows_it() -> None:
    data = (FIXTURES / "mini-seed003").read_bytes()
    case = parse([Artifact("mini-seed003", "", len(data), data=data),
                  Artifact("env.txt", "GPU 0: AMD Radeon 8060S (gfx1151)\n", 34)])
    assert case.kind_of(Where("mini-seed003", 0)) in ("offload-binary", "elf-library")
    assert not any("does not read" in w for w in case.warnings)
    (finding,) = case.findings
    assert finding.kind == "offload-bundles" and "1 bundle with fewer targets" in finding.summary
    assert any(d.startswith("gfx1151: cannot run: 1 of 3 bundles") for d in finding.details)


def test_seed_003_with_the_binary() -> None:
    """The corpus case plus a fat binary: the diagnosis holds and the report carries the findings."""
    from triage.pipeline import triage
    from triage.report import build, render

    case_dir = next(CORPUS.glob("seed-003-*"))
    result = triage([str(case_dir), str(FIXTURES / "mini-seed003")])
    report = build(result)
    top = report["diagnoses"][0]
    assert top["id"] == "hip-no-code-object-for-gpu" and top["confidence"] >= 0.9
    assert [f["kind"] for f in report["findings"]] == ["offload-bundles"]
    for fmt in ("text", "md", "html"):
        assert "outlier: the bundle at 0x15000 has only gfx906" in " ".join(render(result, fmt).split())


def test_cli_json_and_exit_codes() -> None:
    def run(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "triage", "inspect", *args], capture_output=True, text=True, timeout=60)

    done = run(str(FIXTURES / "mini-seed003"), "--gpu", "gfx1151", "--format", "json")
    assert done.returncode == 1, done.stderr
    report = json.loads(done.stdout)
    assert [b["offset"] for b in report["bundles"]] == ["0x1000", "0xb000", "0x15000"]
    assert report["bundles"][2]["targets"] == ["gfx906"]
    assert report["targets"]["gfx906"] == 1 and report["targets"]["gfx1151"] == 2
    assert report["gpu"] == {"gpu": "gfx1151", "can_run": "no"}
    assert run(str(FIXTURES / "libplain.so"), "--gpu", "gfx1151").returncode == 0
    bad = run(str(FIXTURES / "libplain.so"), "--gpu", "gfx9999")
    assert bad.returncode == 2 and "not a GPU" in bad.stderr and "Traceback" not in bad.stderr
    assert run(str(FIXTURES / "missing-file")).returncode == 2


@pytest.mark.parametrize("name", ["hipcc-multi", "libcompressed.so", "mini-seed003"])
def test_mutated_binaries_never_raise(name: str) -> None:
    """Flipped, cut and inserted bytes around the bundles: warnings at most, never an exception."""
    import random

    rng = random.Random(name)
    original = (FIXTURES / name).read_bytes()
    starts = [b.offset for b in inspect_bytes(name, original).bundles]
    for _ in range(150):
        data = bytearray(original)
        for _ in range(rng.randint(1, 6)):
            at = rng.choice(starts) + rng.randint(0, 200)
            how = rng.randint(0, 2)
            if how == 0 and at < len(data):
                data[at] = rng.randint(0, 255)
            elif how == 1:
                del data[at: at + rng.randint(1, 64)]
            else:
                data[at:at] = rng.randbytes(rng.randint(1, 16))
        fat = inspect_bytes(name, bytes(data))
        parse([Artifact(name, "", len(data), data=bytes(data))])
        answer_for(fat, gpu_target("gfx1151"))
