"""Stacks printed by lldb, Valgrind and Julia (triage/parsers/toolstacks.py).

The lldb and Valgrind samples are their real output for a program that dies inside a shared
library (tools/make_toolstack_fixtures.sh, with symbols and stripped); the Julia samples are
lines as AMDGPU.jl users posted them in public issues (JuliaGPU/AMDGPU.jl#889, #216), both of
Julia's signal-line forms.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.pipeline import triage

FIXTURES = Path(__file__).parent / "fixtures" / "toolstacks"

# JuliaGPU/AMDGPU.jl#889 (Julia 1.11: every unknown frame names its library)
JULIA_SEGV_IN_HIP = """\
julia> AMDGPU.versioninfo()
[ Info: AMDGPU versioninfo

[8887] signal 11 (1): Segmentation fault
in expression starting at REPL[2]:1
unknown function (ip: 0x7f0a5662e915) at /usr/lib64/libamdhip64.so
unknown function (ip: 0x7f0a5647c593) at /usr/lib64/libamdhip64.so
unknown function (ip: 0x7f0a5647e50a) at /usr/lib64/libamdhip64.so
unknown function (ip: 0x7f0a19109e59) at /usr/lib64/librocsparse.so
rocsparse_create_handle at /usr/lib64/librocsparse.so (unknown line)
macro expansion at /home/phil/.julia/packages/AMDGPU/T1hhV/src/sparse/error.jl:80 [inlined]
rocsparse_create_handle at /home/phil/.julia/packages/AMDGPU/T1hhV/src/sparse/librocsparse.jl:7 [inlined]
"""

# JuliaGPU/AMDGPU.jl#216 (Julia 1.7: "signal (6): Aborted", unknown frames without a library)
JULIA_ABORT_IN_FREE = """\
free(): invalid pointer

signal (6): Aborted
in expression starting at none:0
gsignal at /usr/lib/libc.so.6 (unknown line)
abort at /usr/lib/libc.so.6 (unknown line)
unknown function (ip: 0x7fb9316ce317)
__pthread_once_slow at /usr/lib/libpthread.so.0 (unknown line)
hipStreamSynchronize at /home/deck/.julia/artifacts/b5a35fe56035e3d95e3203689c38aafec324a861/hip/lib/libamdhip64.so (unknown line)
macro expansion at /home/deck/.julia/packages/AMDGPU/PtNLZ/src/hip/error.jl:149 [inlined]
Allocations: 41236532 (Pool: 41213404; Big: 23128); GC: 47
"""


def _run(tmp_path: Path, name: str, text: str):
    path = tmp_path / name
    path.write_text(text)
    return triage([str(path)])


def test_lldb_stop_and_bt_are_one_crashing_stack_with_symbols_files_and_the_fault_address() -> None:
    result = triage([str(FIXTURES / "lldb.txt")])
    case = result.case
    [stack] = [s for s in case.stacks if s.form == "lldb"]
    assert stack.crashing and stack.thread == "1" and len(stack.frames) == 8
    top = stack.frames[0]
    assert (top.symbol, top.module, top.file, top.file_line) == ("sum_packets", "libqueue.so", "queue.c", 4)
    assert top.address == 0x7FFFF7FBC121 and top.offset is None  # lldb's "+ N" is from the symbol, not the module
    assert [f.symbol for f in stack.frames[1:5]] == ["queue_submit"] * 3 + ["main"]
    assert stack.frames[5].symbol == "__libc_start_call_main" and stack.frames[5].module == "libc.so.6"
    assert case.value("signal") == "SEGV" and case.value("fault_address") == "0x18"
    assert case.fault.module == "libqueue.so" and case.fault.address == 0x18


def test_lldb_stripped_library_frames_have_no_symbol_but_keep_module_and_address() -> None:
    case = triage([str(FIXTURES / "lldb-stripped.txt")]).case
    [stack] = [s for s in case.stacks if s.form == "lldb"]
    assert stack.frames[0].symbol is None and stack.frames[0].module == "libqueue.so"
    assert stack.frames[1].symbol == "queue_submit" and stack.frames[1].file is None
    assert case.fault.module == "libqueue.so"


def test_valgrind_the_stack_after_process_terminating_is_the_crash() -> None:
    case = triage([str(FIXTURES / "valgrind.txt")]).case
    stacks = [s for s in case.stacks if s.form == "valgrind"]
    assert len(stacks) == 2 and [s.crashing for s in stacks] == [False, True]
    crash = stacks[1]
    assert [f.index for f in crash.frames] == [0, 1, 2, 3, 4]
    assert (crash.frames[0].symbol, crash.frames[0].file, crash.frames[0].file_line) == ("sum_packets", "queue.c", 4)
    assert case.value("signal") == "SEGV" and case.value("fault_address") == "0x18"
    assert case.value("fault_access") == "read"


def test_valgrind_stripped_frames_name_the_library_path() -> None:
    case = triage([str(FIXTURES / "valgrind-stripped.txt")]).case
    crash = next(s for s in case.stacks if s.crashing)
    assert crash.frames[0].symbol is None and crash.frames[0].module == "/home/user/queue/lib/libqueue.so"
    assert crash.frames[1].symbol == "queue_submit"
    assert case.fault.module == "/home/user/queue/lib/libqueue.so"


def test_julia_segfault_in_the_hip_runtime_is_a_runtime_crash(tmp_path: Path) -> None:
    result = _run(tmp_path, "julia.txt", JULIA_SEGV_IN_HIP)
    case = result.case
    [stack] = [s for s in case.stacks if s.form == "julia"]
    assert stack.crashing and len(stack.frames) == 7
    assert stack.frames[0].module == "/usr/lib64/libamdhip64.so" and stack.frames[0].address == 0x7F0A5662E915
    assert (stack.frames[4].symbol, stack.frames[4].module) == ("rocsparse_create_handle", "/usr/lib64/librocsparse.so")
    assert (stack.frames[5].file, stack.frames[5].file_line) == (
        "/home/phil/.julia/packages/AMDGPU/T1hhV/src/sparse/error.jl", 80)
    assert case.value("signal") == "SEGV" and case.fault.module == "/usr/lib64/libamdhip64.so"
    assert result.top.klass == "runtime-crash"


def test_julia_older_signal_line_and_its_frames_up_to_the_allocations_line(tmp_path: Path) -> None:
    case = _run(tmp_path, "julia.txt", JULIA_ABORT_IN_FREE).case
    [stack] = [s for s in case.stacks if s.form == "julia"]
    assert case.value("signal") == "ABRT"
    assert [f.symbol for f in stack.frames] == ["gsignal", "abort", None, "__pthread_once_slow", "hipStreamSynchronize",
                                                "macro expansion"]
    assert stack.frames[4].module.endswith("/hip/lib/libamdhip64.so") and stack.frames[5].module is None


def test_go_and_gdb_lines_make_no_lldb_or_julia_stack(tmp_path: Path) -> None:
    text = ("fatal error: unexpected signal during runtime execution\n"
            "[signal SIGSEGV: segmentation violation code=0x1 addr=0x18 pc=0x7f3a1c83b2c4]\n"
            "#0  0x00007f3a1c83b2c4 in ?? () from /opt/rocm/lib/libamdhip64.so.6\n"
            "signal handler called\n")
    case = _run(tmp_path, "go.txt", text).case
    assert not [s for s in case.stacks if s.form in ("lldb", "valgrind", "julia")]


def test_julia_report_pasted_from_its_expression_line_is_still_the_crashing_stack(tmp_path: Path) -> None:
    # The signal line cut off the paste (JuliaGPU/AMDGPU.jl#338's form): the report's unnumbered frames follow
    # "in expression starting at", which an uncaught Julia error prints after numbered frames instead.
    text = ("in expression starting at REPL[7]:1\n"
            "_ZNK4rocr4core12SharedSignal7IsValidEv at /w/.julia/artifacts/e/lib/libhsa-runtime64.so (unknown line)\n"
            "hsa_signal_destroy at /w/.julia/artifacts/e/lib/libhsa-runtime64.so (unknown line)\n"
            "hsa_signal_destroy at /w/.julia/packages/AMDGPU/FA0AP/src/hsa/LibHSARuntime.jl:253\n")
    result = _run(tmp_path, "julia.txt", text)
    [stack] = [s for s in result.case.stacks if s.form == "julia"]
    assert stack.crashing and len(stack.frames) == 3
    assert stack.frames[0].module.endswith("libhsa-runtime64.so") and result.case.value("signal") is None
    assert result.top.klass == "runtime-crash"


def test_julia_uncaught_error_location_makes_no_crash_stack(tmp_path: Path) -> None:
    text = ("ERROR: LoadError: UndefVarError: `x` not defined\n"
            "Stacktrace:\n"
            " [1] top-level scope\n"
            "   @ ~/run.jl:3\n"
            "in expression starting at /home/u/run.jl:3\n"
            "in expression starting at /home/u/main.jl:1\n")
    case = _run(tmp_path, "julia.txt", text).case
    assert not [s for s in case.stacks if s.form == "julia"]


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
def test_julia_report_indented_by_its_paste_is_still_read(tmp_path: Path, engine: str,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    # JuliaGPU/AMDGPU.jl#371: the report pasted inside a Markdown list, every line indented by a tab and spaces;
    # the signal line's needle must choose it under both scanner engines (hyperscan anchors "^" at the line's start)
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    monkeypatch.setenv("TRIAGE_SCANNER", engine)
    from triage.parsers import lines

    lines._WHOLE.reset()
    if engine == "hyperscan":
        assert lines._WHOLE.scanner().prepare()
    text = ("\t  [2199] signal (6.-6): Aborted\n"
            "\t  in expression starting at REPL[3]:1\n"
            "\t  unknown function (ip: 0x7f3bc216d83c)\n"
            "\t  abort at /usr/lib/libc.so.6 (unknown line)\n"
            "\t  __assert_fail at /usr/lib/libc.so.6 (unknown line)\n"
            "\t  _ZNK4rocr3AMD8GpuAgent14AssembleShaderEPKcNS1_14AssembleTargetERPvRm at /j/lib/libhsa-runtime64.so"
            " (unknown line)\n"
            "\t  hsa_init at /j/lib/libhsa-runtime64.so (unknown line)\n")
    try:
        result = _run(tmp_path, "julia.txt", text)
    finally:
        monkeypatch.delenv("TRIAGE_SCANNER")
        lines._WHOLE.reset()
    [stack] = [s for s in result.case.stacks if s.form == "julia"]
    assert stack.crashing and len(stack.frames) == 5 and result.case.value("signal") == "ABRT"
    assert stack.frames[3].module == "/j/lib/libhsa-runtime64.so"
    assert result.top.klass == "runtime-crash"

