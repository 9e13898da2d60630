"""Sanitizer reports (triage/parsers/sanitizer.py): the fault, its address and access, the crashing stack.

The samples are written in the sanitizers' own format (compiler-rt's report printer, LLVM 15-19),
the way users paste them from a HIP program built with -fsanitize=address.
"""

from __future__ import annotations

from pathlib import Path

from triage.pipeline import triage

SEGV_IN_RUNTIME = """\
AddressSanitizer:DEADLYSIGNAL
=================================================================
==28731==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000010 (pc 0x7f3a1c2b4d5e bp 0x7ffd8e1c2a40 sp 0x7ffd8e1c2a00 T0)
==28731==The signal is caused by a READ memory access.
==28731==Hint: address points to the zero page.
    #0 0x7f3a1c2b4d5e  (/opt/rocm-6.2.0/lib/libamdhip64.so.6+0x2b4d5e) (BuildId: 3c9d0e2b6f1a4c7d8e9f00112233445566778899)
    #1 0x7f3a1c2a1f00 in hipModuleLaunchKernel (/opt/rocm-6.2.0/lib/libamdhip64.so.6+0x2a1f00) (BuildId: 3c9d0e2b6f1a4c7d8e9f00112233445566778899)
    #2 0x55d1c0a01234 in main /home/dev/saxpy/main.cpp:42:7
    #3 0x7f3a1b829d8f in __libc_start_call_main csu/../sysdeps/nptl/libc_start_call_main.h:58:16
    #4 0x55d1c0a00f14 in _start (/home/dev/saxpy/build/saxpy+0x1f14) (BuildId: 99aa)

AddressSanitizer can not provide additional info.
SUMMARY: AddressSanitizer: SEGV (/opt/rocm-6.2.0/lib/libamdhip64.so.6+0x2b4d5e) (BuildId: 3c9d0e2b6f1a4c7d8e9f00112233445566778899)
==28731==ABORTING
"""

HIGH_ADDRESS = """\
==901==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x7f00aa3b1c2d bp 0x0 sp 0x7ffc10 T0)
==901==The signal is caused by a READ memory access.
==901==Hint: this fault was caused by a dereference of a high value address (see register values below).  Disassemble the provided pc to learn which register was used.
    #0 0x7f00aa3b1c2d in rocr::AMD::GpuAgent::GetInfo(hsa_agent_info_t, void*) const (/opt/rocm/lib/libhsa-runtime64.so.1+0x3b1c2d)
    #1 0x7f00aa39e010 in hsa_agent_get_info (/opt/rocm/lib/libhsa-runtime64.so.1+0x39e010)
"""

USE_AFTER_FREE_IN_APP = """\
=================================================================
==5512==ERROR: AddressSanitizer: heap-use-after-free on address 0x602000000fd0 at pc 0x55e0c1a2b3c4 bp 0x7ffe5a0 sp 0x7ffe598
READ of size 8 at 0x602000000fd0 thread T0
    #0 0x55e0c1a2b3c4 in Renderer::flush() /src/app/renderer.cpp:88:12
    #1 0x55e0c1a2a111 in main /src/app/main.cpp:20:3

0x602000000fd0 is located 0 bytes inside of 16-byte region [0x602000000fd0,0x602000000fe0)
freed by thread T0 here:
    #0 0x7f7d3c8b6f28 in operator delete(void*) ../../../../src/libsanitizer/asan/asan_new_delete.cpp:152
    #1 0x55e0c1a2b001 in Renderer::~Renderer() /src/app/renderer.cpp:40:5

SUMMARY: AddressSanitizer: heap-use-after-free /src/app/renderer.cpp:88:12 in Renderer::flush()
"""

UBSAN_SEGV = """\
UndefinedBehaviorSanitizer:DEADLYSIGNAL
==77==ERROR: UndefinedBehaviorSanitizer: SEGV on unknown address 0x000000000008 (pc 0x7fb1c04b71c9 bp 0x7ffd1 sp 0x7ffd0 T77)
==77==The signal is caused by a WRITE memory access.
==77==Hint: address points to the zero page.
    #0 0x7fb1c04b71c9  (/opt/rocm/lib/libamdhip64.so.7+0x4b71c9)
"""

LEAKS_ONLY = """\
=================================================================
==3210==ERROR: LeakSanitizer: detected memory leaks

Direct leak of 64 byte(s) in 1 object(s) allocated from:
    #0 0x7f5a1e0b4887 in __interceptor_malloc ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:145
    #1 0x7f5a1b2c3d4e  (/opt/rocm/lib/libamdhip64.so.6+0x2c3d4e)

SUMMARY: AddressSanitizer: 64 byte(s) leaked in 1 allocation(s).
"""

SUMMARY_ONLY = "SUMMARY: AddressSanitizer: SEGV (/opt/rocm/lib/libhsa-runtime64.so.1+0x6a2f1) in hsa_signal_wait_scacquire\n"


def _run(tmp_path: Path, text: str, name: str = "asan.log"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return triage([str(path)])


def test_segv_in_the_runtime_is_a_fault_in_it_with_address_and_access(tmp_path: Path) -> None:
    result = _run(tmp_path, SEGV_IN_RUNTIME)
    fault = result.case.fault
    assert fault is not None and fault.signal == "SEGV"
    assert fault.address == 0x10 and fault.access == "read"
    assert fault.module == "/opt/rocm-6.2.0/lib/libamdhip64.so.6" and fault.offset == 0x2b4d5e
    stack = next(s for s in result.case.stacks if s.crashing)
    assert [f.symbol for f in stack.frames] == [None, "hipModuleLaunchKernel", "main", "__libc_start_call_main", "_start"]
    assert stack.frames[2].file == "/home/dev/saxpy/main.cpp" and stack.frames[2].file_line == 42
    assert result.diagnoses[0].klass == "runtime-crash"


def test_a_high_value_address_is_not_taken_for_address_zero(tmp_path: Path) -> None:
    fault = _run(tmp_path, HIGH_ADDRESS).case.fault
    assert fault is not None and fault.signal == "SEGV"
    assert fault.address is None
    assert fault.module == "/opt/rocm/lib/libhsa-runtime64.so.1"


def test_a_memory_error_in_the_application_is_no_runtime_crash(tmp_path: Path) -> None:
    result = _run(tmp_path, USE_AFTER_FREE_IN_APP)
    assert result.case.fact("sanitizer_error").value == "heap-use-after-free"
    assert result.case.fact("fault_address").value == "0x602000000fd0"
    assert result.case.fact("fault_access").value == "read"
    crashing = [s for s in result.case.stacks if s.crashing]
    assert len(crashing) == 1 and crashing[0].frames[0].symbol == "Renderer::flush()"
    assert result.diagnoses[0].klass not in {"runtime-crash", "gpu-memory-fault"}


def test_ubsan_reports_the_same_way(tmp_path: Path) -> None:
    fault = _run(tmp_path, UBSAN_SEGV).case.fault
    assert fault is not None and (fault.signal, fault.address, fault.access) == ("SEGV", 0x8, "write")
    assert fault.module == "/opt/rocm/lib/libamdhip64.so.7" and fault.offset == 0x4b71c9


def test_a_leak_report_is_no_crash(tmp_path: Path) -> None:
    case = _run(tmp_path, LEAKS_ONLY).case
    assert case.fault is None and case.fact("signal") is None and case.fact("sanitizer_error") is None
    assert not any(s.crashing for s in case.stacks)


def test_the_summary_line_alone_names_the_faulting_module(tmp_path: Path) -> None:
    result = _run(tmp_path, "==4==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000018 (pc 0x7f T0)\n" + SUMMARY_ONLY)
    fault = result.case.fault
    assert fault is not None and fault.module == "/opt/rocm/lib/libhsa-runtime64.so.1" and fault.offset == 0x6a2f1
    assert fault.symbol == "hsa_signal_wait_scacquire" and fault.address == 0x18
    assert result.diagnoses[0].klass == "runtime-crash"


def test_a_report_behind_a_collectors_prefix(tmp_path: Path) -> None:
    wrapped = "".join(f"app-1  | {line}\n" for line in UBSAN_SEGV.splitlines())
    fault = _run(tmp_path, wrapped).case.fault
    assert fault is not None and fault.signal == "SEGV" and fault.module == "/opt/rocm/lib/libamdhip64.so.7"


DOUBLE_FREE = """\
==6120==ERROR: AddressSanitizer: attempting double-free on 0x602000000010 in thread T0:
    #0 0x7f2b1c4b6f28 in __interceptor_free ../../../../src/libsanitizer/asan/asan_malloc_linux.cpp:52
    #1 0x55c0d1a01189 in release /src/app/pool.cpp:31:5
"""

MSAN_UNINITIALIZED = """\
==3344==WARNING: MemorySanitizer: use-of-uninitialized-value
    #0 0x55a1b2c3d4e5 in launch /src/app/launch.cpp:7:7
SUMMARY: MemorySanitizer: use-of-uninitialized-value /src/app/launch.cpp:7:7 in launch
Exiting
"""

TSAN_SEGV = """\
ThreadSanitizer:DEADLYSIGNAL
==7001==ERROR: ThreadSanitizer: SEGV on unknown address 0x000000000020 (pc 0x7f61a2b4d5e6 bp 0x7f6199ffe8f0 sp 0x7f6199ffe8b0 T7003)
==7001==The signal is caused by a READ memory access.
==7001==Hint: address points to the zero page.
    #0 0x7f61a2b4d5e6  (/opt/rocm/lib/libamdhip64.so.6+0x34d5e6)
"""


def test_asan_double_free_and_msan_warning_name_their_error(tmp_path: Path) -> None:
    double_free = _run(tmp_path, DOUBLE_FREE).case
    assert double_free.fact("sanitizer_error").value == "double-free"
    assert double_free.fact("fault_address").value == "0x602000000010"
    bad_free = "==6121==ERROR: AddressSanitizer: attempting free on address which was not malloc()-ed: 0x7ffd3a10 in thread T0\n"
    assert _run(tmp_path, bad_free).case.fact("sanitizer_error").value == "bad-free"
    msan = _run(tmp_path, MSAN_UNINITIALIZED).case
    assert msan.fact("sanitizer_error").value == "use-of-uninitialized-value"
    assert next(s for s in msan.stacks if s.crashing).frames[0].symbol == "launch"


def test_a_deadly_signal_under_thread_sanitizer_is_a_crash(tmp_path: Path) -> None:
    fault = _run(tmp_path, TSAN_SEGV).case.fault
    assert fault is not None and (fault.signal, fault.address, fault.access) == ("SEGV", 0x20, "read")
    assert fault.module == "/opt/rocm/lib/libamdhip64.so.6" and fault.offset == 0x34d5e6
