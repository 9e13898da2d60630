"""Crash reports of Open MPI's and UCX's signal handlers (triage/parsers/mpistack.py).

Fixtures in tests/data/mpistack/ are lines as posted in public threads: UCX with BFD symbols
(openucx/ucx#8483), UCX with glibc's frames (openucx/ucx#5611), Open MPI's header
(NVIDIA/nccl#817). The ROCm cases below keep the handlers' real line formats with a ROCm
library in the faulting frame.
"""

from __future__ import annotations

from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse
from triage.parsers.mpistack import crash_frames
from triage.pipeline import triage

DATA = Path(__file__).parent / "data" / "mpistack"

OPEN_MPI_IN_HSA = """\
[node01:110000] *** Process received signal ***
[node01:110000] Signal: Segmentation fault (11)
[node01:110000] Signal code: Address not mapped (1)
[node01:110000] Failing at address: 0x10
[node01:110000] [ 0] /lib64/libpthread.so.0(+0xf5e0)[0x2ac05a3155e0]
[node01:110000] [ 1] /opt/rocm/hsa/lib/libhsa-runtime64.so.1(+0x4857d)[0x2ac05b33357d]
[node01:110000] [ 2] /opt/rocm/lib/libamdhip64.so.6(hipLaunchKernel+0x1a1)[0x7f3c2a4a0b10]
[node01:110000] *** End of error message ***
"""

UCX_IN_RCCL = """\
[node01:288505:0:296459] Caught signal 11 (Segmentation fault: address not mapped to object at address 0x48)
==== backtrace (tid: 296459) ====
 0  /usr/lib/libucs.so.0(ucs_handle_error+0x2d4) [0x7fedc925c274]
 1  /usr/lib/libucs.so.0(+0x2d44c) [0x7fedc925c44c]
 2  /usr/lib/libucs.so.0(+0x2d61a) [0x7fedc925c61a]
 3  /lib/x86_64-linux-gnu/libc.so.6(+0x42520) [0x7ff1c2e42520]
 4  /opt/rocm/lib/librccl.so.1(+0x120057) [0x7ff1c18c1057]
 5  /opt/rocm/lib/librccl.so.1(ncclAllReduce+0x5f) [0x7ff1c18a2f0f]
=================================
"""


def _case(text: str, name: str = "log.txt"):
    return parse([Artifact(name=name, text=text, size=len(text))])


def test_ucx_bfd_frames_give_symbols_source_lines_and_the_fpe_cause() -> None:
    case = triage([str(DATA / "ucx-fpe-bfd-frames.txt")]).case
    [stack] = [s for s in case.stacks if s.form == "ucx"]
    assert stack.crashing and stack.thread == "23955"
    assert [f.symbol for f in stack.frames[:2]] == ["test_ucp_mmap_rereg_Test::test_body", "ucs::test_base::run"]
    top = stack.frames[0]
    assert top.file.endswith("test_ucp_mmap.cc") and top.file_line == 449 and top.address == 0x87A40C
    assert case.fault.signal == "FPE" and case.fault.si_code == "FPE_INTDIV"
    assert case.fault.symbol == "test_ucp_mmap_rereg_Test::test_body"


def test_ucx_handler_frames_alone_leave_no_stack_but_the_signal_and_cause() -> None:
    case = triage([str(DATA / "ucx-fpe-glibc-frames.txt")]).case
    assert not [s for s in case.stacks if s.form == "ucx"]  # only ucs_handle_error: the handler, not the crash
    assert case.fact("signal").value == "FPE" and case.fact("si_code").value == "FPE_FLTOVF"


def test_open_mpi_header_without_frames_gives_the_signal() -> None:
    case = triage([str(DATA / "openmpi-header.txt")]).case
    assert case.fault is not None and case.fault.signal == "SEGV"
    assert not [s for s in case.stacks if s.form == "open-mpi"]


def test_open_mpi_trampoline_left_out_so_the_faulting_module_is_the_hsa_runtime() -> None:
    case = _case(OPEN_MPI_IN_HSA)
    [stack] = case.stacks
    assert stack.form == "open-mpi" and stack.crashing
    assert [f.module.rsplit("/", 1)[-1] for f in stack.frames] == ["libhsa-runtime64.so.1", "libamdhip64.so.6"]
    assert stack.frames[0].offset == 0x4857D and stack.frames[0].symbol is None
    assert stack.frames[1].symbol == "hipLaunchKernel" and stack.frames[1].symbol_offset == 0x1A1
    assert stack.frames[1].offset is None  # an offset from the symbol, not from the module
    fault = case.fault
    assert fault.signal == "SEGV" and fault.si_code == "SEGV_MAPERR" and fault.address == 0x10
    assert fault.module.endswith("libhsa-runtime64.so.1") and fault.offset == 0x4857D


def test_ucx_handler_and_trampoline_frames_left_out_and_rccl_is_frame_0() -> None:
    case = _case(UCX_IN_RCCL)
    [stack] = case.stacks
    assert [f.index for f in stack.frames] == [0, 1]
    assert stack.frames[0].module == "/opt/rocm/lib/librccl.so.1" and stack.frames[0].offset == 0x120057
    assert case.fault.module == "/opt/rocm/lib/librccl.so.1" and case.fault.address == 0x48
    assert case.fault.si_code == "SEGV_MAPERR"


def test_a_crash_in_the_hsa_runtime_under_open_mpi_is_a_runtime_crash(tmp_path: Path) -> None:
    path = tmp_path / "rank0.log"
    path.write_text(OPEN_MPI_IN_HSA)
    top = triage([str(path)]).diagnoses[0]
    assert top.klass == "runtime-crash" and top.confidence >= 0.45


def test_ucx_nil_address_and_tagged_ranks(tmp_path: Path) -> None:
    text = ("12: [n1:4242:0:4242] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at "
            "address (nil))\n12: ==== backtrace (tid:   4242) ====\n12:  0 0x0000000000053519 "
            "ucs_debug_print_backtrace()  ???:0\n12:  1 0x0000000000012990 __funlockfile()  :0\n"
            "12:  2 0x00000000000ab123 hipMemcpy()  ???:0\n12: =================================\n")
    case = _case(text)
    [stack] = case.stacks
    assert [f.symbol for f in stack.frames] == ["hipMemcpy"] and stack.frames[0].file is None
    assert case.fault.address == 0 and case.fault.si_code == "SEGV_ACCERR"


def test_frames_without_a_handler_header_are_a_stack_but_not_the_crashing_one() -> None:
    text = "\n".join(line for line in OPEN_MPI_IN_HSA.splitlines() if "] [" in line) + "\n"
    case = _case(text)
    [stack] = case.stacks
    assert not stack.crashing and case.fault is None


def test_crash_frames_keeps_a_real_libc_frame_after_the_trampoline() -> None:
    case = _case(OPEN_MPI_IN_HSA.replace("libhsa-runtime64.so.1(+0x4857d)", "/lib64/libc.so.6(memcpy+0x10)"))
    assert case.stacks[0].frames[0].symbol == "memcpy"
    assert crash_frames([]) == []


def test_prose_and_other_bracketed_lines_are_not_frames() -> None:
    text = ("The job failed with [ 1] entries left\n[node01:1] Signal: the user pressed Ctrl-C\n"
            "see ==== backtrace (tid: 1) ==== above\n")
    case = _case(text)
    assert not case.stacks and case.fact("signal") is None
