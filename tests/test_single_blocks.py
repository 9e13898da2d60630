"""Each input block of a seed alone, and the thin cuts the seeds' chains must survive: the right
class from what the block can show, less confidently than the whole case, with a list of what to send."""

from __future__ import annotations


import pytest

from tests.conftest import CORPUS
from triage.model import Artifact
from triage.pipeline import analyze, triage
from triage.match import load
from triage.resources import data_dir

SEED_000 = "seed-000-blit-kernels-device-libs-missing"
SEED_002 = "seed-002-hipmoduleload-access-violation-windows"
SEED_003 = "seed-003-getdevicekernel-null-gfx906-only-kernel"

BLOCKS = [
    (SEED_000, "hip.log", "device-libs-missing"),
    # A null refcount release inside the runtime, without the runtime's build: a runtime crash of
    # unknown cause (the known crash site needs the build, see below).
    (SEED_000, "coredump.txt", "runtime-crash"),
    (SEED_000, "kernel.log", "runtime-crash"),
    (SEED_002, "crash-stack.txt", "code-object-load-fault"),
    (SEED_003, "stack.txt", "no-code-object"),
    # The kernel line alone: its file offset, with the known delta of that libamdhip64 build, is
    # getDeviceKernel's module offset, and the symbolized fault is frame 0 for frame conditions.
    (SEED_003, "kernel.log", "no-code-object"),
]


@pytest.mark.parametrize("case,block,klass", BLOCKS, ids=[f"{c[:8]}-{b}" for c, b, _ in BLOCKS])
def test_block_alone(case: str, block: str, klass: str) -> None:
    whole = triage([str(CORPUS / case)]).top
    alone = triage([str(CORPUS / case / block)]).top
    assert alone.klass == klass
    assert alone.score < whole.score  # thinner evidence, a lower evidence score
    assert alone.ask_for, "thinner evidence comes with a list of what to send"


def _paste(*parts: str) -> object:
    text = "".join(parts)
    folder = data_dir("signatures")
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], load(folder), folder)


def _read(case: str, block: str) -> str:
    return (CORPUS / case / block).read_text()


def test_seed_000_kernel_line_and_runtime_version_reach_the_known_crash_site() -> None:
    """The kernel line names no symbol; with the runtime's build (the HIP log's banner) the fault's
    module offset is a crash site that known-frames records for the blit-kernel failure."""
    banner = _read(SEED_000, "hip.log").splitlines()[0] + "\n"
    result = _paste(banner, _read(SEED_000, "kernel.log"))
    assert result.case.value("crash_site") == "blit-kernels-failed"
    assert result.top.klass == "device-libs-missing"


def test_seed_003_kernel_line_becomes_frame_zero() -> None:
    result = _paste(_read(SEED_003, "kernel.log"))
    frame = result.case.stacks[0].frames[0]
    assert (frame.index, frame.offset, frame.symbol_source) == (0, 0x48A610, "known-frames")
    assert frame.symbol.startswith("amd::Symbol::getDeviceKernel")
    assert result.top.id == "hip-no-code-object-for-gpu"


def test_seed_003_bundle_listing_and_the_gpus_arch_alone() -> None:
    """The offload-bundle counts and rocminfo's gfx1151: one bundle lacks the arch, so a kernel from
    it has no code object for this GPU."""
    result = _paste(_read(SEED_003, "offload-targets.txt"), "  Name:                    gfx1151\n")
    assert result.top.klass == "no-code-object"
    assert result.top.captures.get("bundles_without_arch") == "1"


def test_seed_003_bundle_listing_without_the_gpu_names_nothing() -> None:
    assert _paste(_read(SEED_003, "offload-targets.txt")).top.klass == "unknown"
