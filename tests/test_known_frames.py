"""Known frames name offsets of exactly the build they were seen in, and convert kernel offsets."""

from __future__ import annotations

from tests.conftest import ROOT, artifact
from triage.parsers import parse
from triage.symbolize import symbolize
from triage.symbolize.known_frames import split_module

FRAMES = ROOT / "signatures" / "frames"
STRIPPED = "#0  libamdhip64.so.7 + 0x48a610\n#1  libamdhip64.so.7 + 0x341866\n"


def _symbolized(text: str):
    case = parse([artifact(text)])
    symbolize(case, FRAMES)
    return case


def test_same_build_gets_the_names() -> None:
    kernel = "mesh-llm[45729]: segfault at 8a ip 00007c7def28a610 error 4 in libamdhip64.so.7.2.53211[489610,...]\n"
    case = _symbolized(STRIPPED + kernel)
    frame = case.stacks[0].frames[0]
    assert frame.symbol == "amd::Symbol::getDeviceKernel(amd::Device const&)"
    assert frame.symbol_source == "known-frames"
    assert case.stacks[0].frames[1].symbol == "hip::ihipLaunchKernel_validate"


def test_another_build_does_not_get_them() -> None:
    """Seed 000's runtime (7.2.53210) must not borrow seed 003's (7.2.53211) names."""
    log = ":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1\n"
    case = _symbolized(log + STRIPPED)
    assert [f.symbol for f in case.stacks[0].frames] == [None, None]


def test_unknown_build_gets_no_names() -> None:
    case = _symbolized(STRIPPED)
    assert case.stacks[0].frames[0].symbol is None


def test_kernel_offset_converted_with_the_recorded_delta() -> None:
    log = ":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1\n"
    kernel = "kernel: strata[1]: segfault at 8 ip 00007f3c2a4b71c9 sp 0 error 6 in libamdhip64.so.7[4b61c9,7f3c2a000000+5f3000]\n"
    case = _symbolized(log + kernel)
    assert case.fault.module == "libamdhip64.so.7" and case.fault.offset == 0x4B71C9
    assert "delta recorded for libamdhip64.so 7.2.53210" in case.fault.offset_note


def test_kernel_offset_paired_with_the_debugger_frame() -> None:
    text = "Signal: 11 (SEGV)\n#0  libfoo.so.1 + 0x2a1c9\nkernel: app[1]: segfault at 0 ip 1 sp 0 error 4 in libfoo.so.1[291c9,7f0000000000+1000]\n"
    case = _symbolized(text)
    assert case.fault.offset == 0x2A1C9
    assert "paired with the debugger's frame #0" in case.fault.offset_note


def test_kernel_offset_without_any_conversion_says_so() -> None:
    case = _symbolized("kernel: app[1]: segfault at 0 ip 1 sp 0 error 4 in libfoo.so.1[291c9,7f0000000000+1000]\n")
    assert case.fault.offset is None and "program headers" in case.fault.offset_note


def test_split_module() -> None:
    assert split_module("libamdhip64.so.7.2.53211") == ("libamdhip64.so", "7.2.53211")
    assert split_module("/opt/rocm/lib/libamdhip64.so.5") == ("libamdhip64.so", "5")
    assert split_module("amdhip64_7.dll") == ("amdhip64_7.dll", None)
