"""coredumpctl / gdb frames, signals, registers and x/i, in the forms users paste."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import artifact
from triage.parsers import parse
from triage.parsers.backtrace import parse_frame_text

FRAMES = [
    ("0x00007f3c2a4b71c9 n/a (libamdhip64.so.7 + 0x4b71c9)",
     {"address": 0x7F3C2A4B71C9, "module": "libamdhip64.so.7", "offset": 0x4B71C9}),
    ("libamdhip64.so.7 + 0x4b71c9", {"module": "libamdhip64.so.7", "offset": 0x4B71C9}),
    ("amd::Symbol::getDeviceKernel(amd::Device const&)   (libamdhip64.so.7 + 0x48a610)",
     {"symbol": "amd::Symbol::getDeviceKernel(amd::Device const&)", "module": "libamdhip64.so.7", "offset": 0x48A610}),
    ("ggml_backend_cuda_buffer_set_tensor", {"symbol": "ggml_backend_cuda_buffer_set_tensor"}),
    ("main (strata)", {"symbol": "main", "module": "strata"}),
    ("0x00007ffff7a3c1c9 in amd::Foo::bar (this=0x0) at rocvirtual.cpp:1725",
     {"address": 0x7FFFF7A3C1C9, "symbol": "amd::Foo::bar", "file": "rocvirtual.cpp", "file_line": 1725}),
    ("0x00007ffff7a3c1c9 in ?? () from /opt/rocm/lib/libamdhip64.so.5",
     {"address": 0x7FFFF7A3C1C9, "module": "/opt/rocm/lib/libamdhip64.so.5"}),
    ("0x00007f1e5c4b2a10 raise (libc.so.6 + 0x3e4c1)",
     {"address": 0x7F1E5C4B2A10, "symbol": "raise", "module": "libc.so.6", "offset": 0x3E4C1}),
    ("0x0000555555555149 in std::vector<int, std::allocator<int> >::push_back (this=0x7ffe) at v.h:12",
     {"symbol": "std::vector<int, std::allocator<int> >::push_back", "file": "v.h"}),
]


@pytest.mark.parametrize("text,expected", FRAMES, ids=[t[:30] for t, _ in FRAMES])
def test_frame_forms(text: str, expected: dict) -> None:
    fields = parse_frame_text(text)
    assert fields is not None
    for key, value in expected.items():
        assert fields.get(key) == value, key


@pytest.mark.parametrize("text", ["[BUG] Engine crashes with 0xC0000005", "fixed it correctly", "— that was the llama.cpp"])
def test_prose_after_hash_is_not_a_frame(text: str) -> None:
    assert parse_frame_text(text) is None


def test_coredump_block() -> None:
    text = """\
           PID: 4711 (strata)
        Signal: 11 (SEGV)
    Executable: /home/u/.local/share/strata/strata
                Stack trace of thread 4711:
                #0  0x00007f3c2a4b71c9 n/a (libamdhip64.so.7 + 0x4b71c9)
                #1  0x00007f3c2a4a7aba n/a (libamdhip64.so.7 + 0x4a7aba)
                #2  0x000055d1c0e1b2c3 main (strata + 0x1b2c3)

                Stack trace of thread 4712:
                #0  0x00007f3c29e9a3b6 n/a (libc.so.6 + 0x9a3b6)
"""
    case = parse([artifact(text)])
    assert [s.thread for s in case.stacks] == ["4711", "4712"]
    assert case.fault.signal == "SEGV" and case.fault.module == "libamdhip64.so.7" and case.fault.offset == 0x4B71C9
    assert case.value("program") == "/home/u/.local/share/strata/strata"


def test_registers_and_current_instruction_give_the_fault_address() -> None:
    text = """\
Program terminated with signal SIGSEGV, Segmentation fault.
#0  0x00007f3c2a4b71c9 in ?? () from ./libamdhip64.so.7
(gdb) info registers
rax            0x7f3c2a000000      139896436621312
rdi            0x0                 0
(gdb) x/3i $pc
=> 0x7f3c2a4b71c9:	lock xadd %ebx,0x8(%rdi)
   0x7f3c2a4b71cd:	dec    %ebx
"""
    case = parse([artifact(text)])
    assert case.registers == {"rax": 0x7F3C2A000000, "rdi": 0}
    assert case.fault.instruction == "lock xadd %ebx,0x8(%rdi)"
    assert case.fault.address == 8
    assert case.fault.signal == "SEGV"


def test_frame_numbering_restart_starts_a_new_stack() -> None:
    text = "#0  a\n#1  b\n#0  c\n#1  d\n"
    assert [len(s.frames) for s in parse([artifact(text)]).stacks] == [2, 2]


def test_operand_address_reads_decimal_and_hex_displacements() -> None:
    from triage.parsers.fault import operand_address

    registers = {"rax": 0x1000, "rbx": 0x2000}
    assert operand_address("mov 0x18(%rax),%rdx", registers) == 0x1018
    assert operand_address("mov -0x8(%rax),%rdx", registers) == 0xFF8
    assert operand_address("mov 08(%rax),%rdx", registers) == 0x1008  # found by fuzzing: int('08', 0) raised
    assert operand_address("mov rdx, qword ptr [rbx + 16]", registers) == 0x2010
    assert operand_address("mov rdx, qword ptr [rcx]", registers) is None


@pytest.mark.parametrize("rest, module, offset, symbol", [  # the long name was quadratic once
    ("0x00007f3c2a4b71c9 n/a (libamdhip64.so.7 + 0x4b71c9)", "libamdhip64.so.7", 0x4b71c9, None),
    ("libamdhip64.so.7 + 0x4b71c9", "libamdhip64.so.7", 0x4b71c9, None),
    ("0x00007f3c2a4b71c9 __cxa_throw (libstdc++.so.6 + 0xae4a1)", "libstdc++.so.6", 0xae4a1, "__cxa_throw"),
    ("amd::Symbol::getDeviceKernel(amd::Device const&)   (libamdhip64.so.7 + 0x48a610)", "libamdhip64.so.7",
     0x48a610, "amd::Symbol::getDeviceKernel(amd::Device const&)"),
    ("0x7f in " + "a" * 1900 + " (libx.so + 0x10)", "libx.so", 0x10, "a" * 1900),
])
def test_module_and_offset_at_the_end(rest: str, module: str, offset: int, symbol: str | None) -> None:
    fields = parse_frame_text(rest)
    assert (fields["module"], fields["offset"], fields.get("symbol")) == (module, offset, symbol)


GDB = Path(__file__).parent / "fixtures" / "gdb"  # real gdb output at 80 columns (tools/make_gdb_fixtures.sh)


def test_gdb_frames_with_from_on_the_next_line() -> None:
    case = parse([artifact((GDB / "wrapped-from.txt").read_text())])
    assert len(case.stacks) == 1, "the stop line is the bt's frame #0, not a stack of its own"
    frames = case.stacks[0].frames
    assert [(f.index, f.symbol) for f in frames] == [(0, "release_blit_manager_refcount"), (1, "crash_here"), (2, "main")]
    assert frames[0].module.endswith("/opt/rocm-6.2.0/lib/libblit.so") and frames[0].address == 0x7FFFF7FBC10E
    assert case.fault.signal == "SEGV" and case.fault.module == frames[0].module


def test_gdb_stop_line_alone_is_frame_zero() -> None:
    """'Thread 1 "x" received signal ...' and the line after it, pasted without a bt."""
    text = "".join((GDB / "wrapped-from.txt").read_text().splitlines(keepends=True)[:3])
    case = parse([artifact(text)])
    top = case.stacks[0].frames[0]
    assert (top.index, top.symbol, top.module.rsplit("/", 1)[-1]) == (0, "release_blit_manager_refcount", "libblit.so")
    assert case.fault.module == top.module


def test_a_debuggers_interrupt_is_no_fault_in_the_library_it_stopped_in() -> None:
    """A Ctrl-C on a program that waits in a library (real gdb output): the stack is read, the signal kept, but
    the library is no faulting module, so no signature takes a wait for a crash in it."""
    case = parse([artifact((GDB / "interrupted.txt").read_text())])
    frames = case.stacks[0].frames
    assert (frames[0].symbol, frames[0].module.rsplit("/", 1)[-1]) == ("signal_wait_relaxed", "libblit.so")
    assert case.fault.signal == "INT" and case.fault.module is None and case.fault.symbol is None
    assert not case.stacks[0].crashing


def test_gdb_frame_without_address_and_wrapped_arguments() -> None:
    case = parse([artifact((GDB / "no-address.txt").read_text())])
    frames = case.stacks[0].frames
    assert (frames[0].index, frames[0].address, frames[0].symbol) == (0, None, "__pthread_kill_implementation")
    assert (frames[0].file, frames[0].file_line) == ("./nptl/pthread_kill.c", 44)
    assert (frames[2].symbol, frames[2].file_line) == ("__GI_raise", 26)
    assert [f.index for f in frames] == [0, 1, 2, 3, 4, 5]
    assert case.fault.signal == "ABRT"


def test_gdb_frame_with_no_function_name() -> None:
    case = parse([artifact((GDB / "null-call.txt").read_text())])
    frames = case.stacks[0].frames
    assert (frames[0].address, frames[0].symbol, frames[0].module) == (0, None, None)
    assert frames[1].symbol == "main"


def test_folly_signal_line() -> None:
    text = ("*** Signal 11 (SIGSEGV) (0x0) received by PID 4242 (pthread TID 0x7f2b1c5a1000) (linux TID 4243) "
            "(code: address not mapped to object), stack trace: ***\n")
    assert parse([artifact(text)]).value("signal") == "SEGV"


def test_gdb_frame_with_a_gcc_clone_and_its_argument_list_on_the_next_line() -> None:
    """A long C++ name makes gdb print the whole argument list on a line of its own, after GCC's "[clone ...]"
    (ROCm/clr#11, Blender in the HIP runtime's occupancy helper)."""
    text = ("#0  0x00007fff84d58db8 in hip_impl::ihipOccupancyMax(int*, amd::Device const&, bool) [clone .constprop.0]\n"
            "    (maxBlocksPerCU=maxBlocksPerCU@entry=0x7ffe609a7b68, inputBlockSize=1024, dynamicSMemSize=0)\n"
            "    at /usr/src/debug/hip-runtime-amd/clr-rocm-5.6.0/hipamd/src/hip_platform.cpp:344\n"
            "#1  0x00007fff84c43c35 in hipModuleOccupancyMaxPotentialBlockSize(int*, int*, hipFunction_t, size_t, int)\n"
            "    ()\n"
            "    at /usr/src/debug/hip-runtime-amd/clr-rocm-5.6.0/hipamd/src/hip_platform.cpp:426\n"
            "#2  0x00005555580a265b in ccl::HIPDeviceKernels::load(ccl::HIPDevice*) ()\n")
    frames = parse([artifact(text)]).stacks[0].frames
    assert [f.index for f in frames] == [0, 1, 2]
    assert frames[0].symbol == "hip_impl::ihipOccupancyMax(int*, amd::Device const&, bool)"
    assert (frames[0].file_line, frames[1].file_line) == (344, 426)


def test_an_indented_parenthesised_sentence_is_no_frame_continuation() -> None:
    text = ("#0  0x00007fff84c43c35 in hipMalloc () from /opt/rocm/lib/libamdhip64.so.6\n"
            "    (this happened twice, see below)\n")
    [frame] = parse([artifact(text)]).stacks[0].frames
    assert frame.symbol == "hipMalloc" and frame.module == "/opt/rocm/lib/libamdhip64.so.6"
