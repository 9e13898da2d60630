"""Kernel segfault lines with every prefix, and both bracket shapes."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import artifact
from triage.model import Case
from triage.parsers import kernel, parse

LINES = [
    ("kernel: strata-vision-h[<pid>]: segfault at 8 ip ...c9 error 6 in libamdhip64.so.7[4b61c9,...]",
     dict(comm="strata-vision-h", pid=None, address=8, ip=None, error=6, module="libamdhip64.so.7", file_offset=0x4B61C9)),
    ("mesh-llm[45729]: segfault at 8a ip 00007c7def28a610 error 4 in libamdhip64.so.7.2.53211[489610,...]",
     dict(comm="mesh-llm", pid=45729, address=0x8A, ip=0x7C7DEF28A610, error=4, file_offset=0x489610)),
    ("[  412.034511] app[123]: segfault at 0 ip 00007f44be1e61c9 sp 00007ffd1c2e5a10 error 4 in libX.so[7f44bde00000+3f3000]",
     dict(comm="app", pid=123, address=0, file_offset=None, vm_start=0x7F44BDE00000, vm_size=0x3F3000)),
    ("Nov 29 21:03:11 host kernel: python3[2231]: segfault at 10 ip 00007f3c2a4b71c9 sp 00007ffd5e1c9e40 error 6 "
     "in libamdhip64.so.6.2.60200[7f3c2a4b0000+5f3000] likely on CPU 3 (core 3, socket 0)",
     dict(comm="python3", pid=2231, address=0x10, module="libamdhip64.so.6.2.60200", vm_start=0x7F3C2A4B0000)),
    ("[Sun Nov 29 21:03:11 2026] python3[2231]: segfault at 0 ip 00007f3c2a4b71c9 sp 00007ffd error 14 "
     "in libamdhip64.so.6[14b61c9,7f3c2a000000+5f3000] likely on CPU 3 (core 3, socket 0)",
     dict(file_offset=0x14B61C9, vm_start=0x7F3C2A000000, vm_size=0x5F3000, error=14)),
    ("traps: llama-server[77] general protection fault ip:7f1c0a0b sp:7ffd0a0b error:0 in libggml-hip.so[7f1c0000+1000]",
     dict(comm="llama-server", pid=77, ip=0x7F1C0A0B, error=0, module="libggml-hip.so")),
]


@pytest.mark.parametrize("line,expected", LINES, ids=[str(i) for i in range(len(LINES))])
def test_segfault_lines(line: str, expected: dict) -> None:
    case = Case()
    kernel.parse(artifact(line), case)
    assert len(case.kernel_faults) == 1
    fault = case.kernel_faults[0]
    for key, value in expected.items():
        assert getattr(fault, key) == value, key


def test_access_from_error_code() -> None:
    assert kernel.access_from_error(6) == "write"
    assert kernel.access_from_error(4) == "read"
    assert kernel.access_from_error(0x15) == "execute"


REALWORLD = Path(__file__).parent.parent / "corpus" / "realworld"


def _facts(case_name: str) -> dict:
    return parse([artifact((REALWORLD / case_name / "input.txt").read_text())]).flat_facts()


def test_amdgpu_page_fault_block_with_its_fields() -> None:
    """A journal's [gfxhub] page fault block: where, which process, which client, which permission."""
    facts = _facts("rocm-libraries-1132-strix-halo-llamacpp-mes-hang-reset")
    assert facts["amdgpu_page_fault"] == "gfxhub"
    assert (facts["amdgpu_fault_vmid"], facts["amdgpu_fault_pasid"]) == ("8", "32794")
    assert facts["amdgpu_fault_address"] == "0x00007f418f76f000"
    assert facts["amdgpu_fault_status"] == "0x00801031"
    assert (facts["amdgpu_fault_client"], facts["amdgpu_fault_permission"], facts["amdgpu_fault_rw"]) == (
        "TCP", "0x3", "0x0")
    assert facts["amdgpu_mes_error"] == "REMOVE_QUEUE" and facts["amdgpu_reset"] == "begin"


def test_amdgpu_retry_page_fault_names_the_process() -> None:
    facts = _facts("rocm-legacy-4021-mi300x-gfxhub0-retry-page-fault-vllm-fa")
    assert facts["amdgpu_page_fault"] == "gfxhub0 retry"
    assert facts["amdgpu_fault_process"].startswith("pt_main_thread pid ")
    assert facts["amdgpu_fault_client"] == "UTCL2"


def test_amdgpu_ring_timeout_and_the_process_that_hung() -> None:
    facts = _facts("rocm-arch-829-gfx-ring-timeout-blender-hip-rx6800")
    assert facts["amdgpu_ring_timeout"] == "gfx_0.0.0"
    assert facts["amdgpu_hang_process"].startswith("blender pid ")


def test_amdgpu_ras_error() -> None:
    assert _facts("rocm-legacy-1386-mi50-ras-uncorrectable-athub-hang")["amdgpu_ras"] == "ERREVENT_ATHUB_INTERRUPT"


@pytest.mark.parametrize("line, name, value", [
    ("[283919.446433] [drm:mes_v11_0_submit_pkt_and_poll_completion.constprop.0 [amdgpu]] *ERROR* MES failed to response msg=14",
     "amdgpu_mes_error", "14"),
    ("Jul 24 12:26:20 macross kernel: amdgpu 0000:08:00.0: amdgpu: GPU reset(2) succeeded!", "amdgpu_reset", "succeeded"),
    ("[   34.965321] amdgpu 0000:03:00.0: amdgpu: ring comp_1.1.0 timeout, signaled seq=7, emitted seq=9",
     "amdgpu_ring_timeout", "comp_1.1.0"),
])
def test_amdgpu_single_lines(line: str, name: str, value: str) -> None:
    case = parse([artifact(line + "\n")])
    assert case.value(name) == value
    assert "kernel-log" in case.inputs


def test_a_process_of_pid_0_is_no_process() -> None:
    text = "[  308.334876] [drm:amdgpu_job_timedout [amdgpu]] *ERROR* Process information: process  pid 0 thread  pid 0\n"
    assert "amdgpu_hang_process" not in parse([artifact(text)]).flat_facts()


def test_a_segfault_line_with_its_addresses_elided() -> None:
    case = parse([artifact("kernel: llama-server[123]: segfault at ... ip ... error 4 in libamd_comgr.so.3.0[...]\n")])
    assert (case.kernel_faults[0].module, case.kernel_faults[0].address) == ("libamd_comgr.so.3.0", None)
    assert case.fault.module == "libamd_comgr.so.3.0" and case.fault.address is None


def test_an_amdgpu_report_says_linux_even_for_a_windows_games_process() -> None:
    # A Proton game's hang as a Bazzite user pasted it (ublue-os/bazzite#5729): the .exe is no Windows system.
    text = ("Sep 04 14:48:52 HOSTNAME  ring gfx_0.0.0 timeout, signaled seq=11177738, emitted seq=11177741\n"
            "Sep 04 14:48:52 HOSTNAME   Process fallout2HR.exe pid 32398 thread dxvk-submit pid 32411\n")
    case = parse([artifact(text)])
    assert case.value("amdgpu_ring_timeout") == "gfx_0.0.0" and case.value("os") == "linux"
