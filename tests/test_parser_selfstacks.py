"""Stacks a program's own crash handler prints (parsers/selfstacks.py), from real output: glibc's
backtrace_symbols, Abseil's and glog's failure signal handlers (tests/fixtures/selfstacks/, made by
tools/make_selfstack_fixtures.sh), and lines that look alike and are no crash."""

from __future__ import annotations

import re
from pathlib import Path

from triage.model import Artifact
from triage.parsers import parse

FIXTURES = Path(__file__).parent / "fixtures" / "selfstacks"


def _case(text: str):
    return parse([Artifact(name="paste.txt", text=text, size=len(text))])


def test_a_glibc_handlers_stack_starts_where_the_fault_was() -> None:
    case = _case((FIXTURES / "glibc-handler.txt").read_text(encoding="utf-8"))
    [stack] = case.stacks
    assert stack.form == "glibc" and stack.crashing
    # the handler's own frame and libc's trampoline are left out: frame 0 is the null read
    top = stack.frames[0]
    assert top.module.endswith("/opt/rocm-6.2.0/lib/libcrashy.so") and top.symbol == "crashy_read"
    assert top.symbol_offset == 0xC and top.offset is None
    assert [f.symbol for f in stack.frames[1:4]] == ["run", "main", None]
    assert stack.frames[3].offset == 0x2724A  # "(+0xOFF)": from the module's base
    assert case.fact("signal").value == "SEGV"
    assert case.fault is not None and case.fault.module == top.module


def test_an_abseil_report_is_the_crashing_stack_with_its_signal() -> None:
    case = _case((FIXTURES / "abseil-handler.txt").read_text(encoding="utf-8"))
    [stack] = case.stacks
    assert stack.form == "abseil" and stack.crashing
    assert stack.frames[0].symbol == "crashy_read" and stack.frames[0].address == 0x7FA248393105
    assert stack.frames[1].symbol is None
    assert case.fact("signal").value == "SEGV"


def test_a_glog_report_is_the_crashing_stack_with_its_signal() -> None:
    text = (FIXTURES / "glog-handler.txt").read_text(encoding="utf-8")
    case = _case(text)
    [stack] = case.stacks
    assert stack.form == "glog" and stack.crashing
    # glog printed a PC of 0 (it could not read one): every frame is kept, its own handler's first
    assert [f.symbol for f in stack.frames[:5]] == [None, None, "crashy_read", "run()", "main"]
    assert case.fact("signal").value == "SEGV"


def test_a_glog_stack_starts_at_the_pc_lines_frame() -> None:
    text = (FIXTURES / "glog-handler.txt").read_text(encoding="utf-8")
    crashy = re.search(r"@\s+(0x[0-9a-f]+) crashy_read", text)[1]
    case = _case(re.sub(r"PC: @\s+0x0 ", f"PC: @     {crashy} ", text))
    [stack] = case.stacks
    assert stack.frames[0].symbol == "crashy_read" and stack.frames[0].address == int(crashy, 16)
    assert [f.index for f in stack.frames[:3]] == [0, 1, 2]


def test_a_glog_frame_alone_is_read_with_its_symbol_and_a_stack_size_is_no_symbol() -> None:
    case = _case("    @     0x7f0e4811bb97 rocprofiler_iterate_buffer_tracing_record_args\n"
                 "    @     0x7f0e48a11727 (unknown)\n"
                 "    @               0x31        144\n")
    [stack] = case.stacks
    assert [f.symbol for f in stack.frames] == ["rocprofiler_iterate_buffer_tracing_record_args", None]


def test_a_handler_stack_in_the_hip_runtime_is_a_runtime_crash(tmp_path: Path) -> None:
    from triage.pipeline import triage

    lines = (FIXTURES / "glibc-handler.txt").read_text(encoding="utf-8")
    text = re.sub(r"\S*/libcrashy\.so\(crashy_read\+0xc\)", "/opt/rocm-6.2.0/lib/libamdhip64.so.6(+0x2a1b3c)", lines)
    assert text != lines
    (tmp_path / "crash.txt").write_text(text, encoding="utf-8")
    top = triage([str(tmp_path / "crash.txt")]).top
    assert top.klass == "runtime-crash" and top.confidence >= 0.45


def test_frame_numbers_padded_after_the_hash_are_read() -> None:
    # CPU-X's handler prints "# 1 ", "# 2 " ... "#10 " before glibc's backtrace_symbols lines (CPU-X#283); its first frame
    # is the C library's trampoline, so the stack is the crashing one and starts at free() called by the OpenCL runtime
    case = _case("========================= Backtrace =========================\n"
                 "# 1 /lib64/libc.so.6(+0x38b20) [0x7fec7600ab20]\n"
                 "# 2 /lib64/libc.so.6(__libc_free+0x1e) [0x7fec7606930e]\n"
                 "# 3 /opt/rocm-5.4.3/lib/libamdocl64.so(+0xc90b2) [0x7fec4c3350b2]\n"
                 "# 9 /opt/rocm-5.4.3/lib/libamdocl64.so(clIcdGetPlatformIDsKHR+0x8b) [0x7fec4c2dbc0b]\n"
                 "#10 /opt/rocm-5.4.3/lib/libOpenCL.so.1(+0x3385) [0x7fec761eb385]\n")
    [stack] = case.stacks
    assert stack.form == "glibc" and stack.crashing
    assert stack.frames[0].symbol == "__libc_free"
    assert stack.frames[1].module.endswith("libamdocl64.so") and len(stack.frames) == 4


def test_one_frame_line_alone_is_no_stack() -> None:
    case = _case("see /opt/rocm/lib/libamdhip64.so.6(+0x2a1b3c)[0x7f3a2b4c5d6e] in the log\n"
                 "/opt/rocm/lib/libamdhip64.so.6(+0x2a1b3c)[0x7f3a2b4c5d6e]\n")
    assert case.stacks == []


def test_a_backtrace_without_a_signal_is_not_the_crash() -> None:
    case = _case("/opt/rocm/lib/libamdhip64.so.6(+0x2a1b3c)[0x7f3a2b4c5d6e]\n"
                 "/usr/bin/app(main+0x22)[0x55a0f89b4256]\n")
    [stack] = case.stacks
    assert not stack.crashing and case.fault is None


def test_a_pytorch_exception_trace_is_not_read_as_a_crash() -> None:
    # Real lines (harryjo97/GDSS#6): where a HIP error was raised, no crash in the runtime.
    case = _case("terminate called after throwing an instance of 'c10::HIPError'\n"
                 "  what():  HIP error: hipErrorNoDevice\n"
                 "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42 (0x7f9eff1e7212 in "
                 "/nethome/u/anaconda3/envs/e/lib/python3.7/site-packages/torch/lib/libc10.so)\n"
                 "frame #1: <unknown function> + 0x5618da (0x7f9f14f4a8da in "
                 "/nethome/u/anaconda3/envs/e/lib/python3.7/site-packages/torch/lib/libtorch_hip.so)\n")
    assert case.stacks == []


def test_open_mpi_frames_are_read_once() -> None:
    case = _case("[host:2287443] *** Process received signal ***\n"
                 "[host:2287443] Signal: Segmentation fault (11)\n"
                 "[host:2287443] [ 0] /lib/x86_64-linux-gnu/libc.so.6(+0x42520)[0x7f9382842520]\n"
                 "[host:2287443] [ 1] /opt/rocm/lib/libhsa-runtime64.so.1(+0x4857d)[0x2ac05b33357d]\n"
                 "[host:2287443] [ 2] /opt/rocm/lib/libamdhip64.so.6(+0x1d2b3c)[0x2ac05b43357d]\n"
                 "[host:2287443] *** End of error message ***\n")
    assert [s.form for s in case.stacks] == ["open-mpi"]
