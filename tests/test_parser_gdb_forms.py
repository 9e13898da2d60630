"""gdb stacks in the forms users paste them: past a program's own signal handler, copied from a GitHub page, and
frames whose function has no name, parentheses in its arguments, or C++ lambdas and operators in its name.

Fixtures (tests/fixtures/gdb/): signal-handler.txt is gdb's output here (tools/make_gdb_handler_fixture.sh);
signal-handler-github-links.txt is from https://github.com/StanfordLegion/realm/issues/455 and
signal-handler-abort-github-links.txt from https://github.com/StanfordLegion/realm/issues/225, both as the pages
render them; the others are lines of labelled real cases (corpus/realworld/hip-3282-*, llvm-57536-*,
rocr-runtime-68-*).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import artifact
from triage.model import Case
from triage.parsers import parse

GDB = Path(__file__).parent / "fixtures" / "gdb"


def _case(name: str) -> Case:
    return parse([artifact((GDB / name).read_text(encoding="utf-8"), name)])


def _crashing(case: Case) -> list:
    stacks = [s for s in case.stacks if s.crashing]
    assert len(stacks) == 1
    return stacks[0].frames


def _base(module: str | None) -> str:
    return (module or "").rsplit("/", 1)[-1]


def test_the_frame_after_the_handler_is_frame_zero_of_the_crashing_stack() -> None:
    """A worker thread faults in a library; the program's handler aborts; gdb stops at the SIGABRT."""
    case = _case("signal-handler.txt")
    frames = _crashing(case)
    assert [(f.index, f.symbol) for f in frames] == [(0, "copy_to_queue"), (1, "worker"), (2, "start_thread"),
                                                     (3, "clone3")]
    assert frames[0].text.startswith("#6 ") and frames[0].where.line == 13
    assert _base(frames[0].module) == "libcopy.so" and frames[0].address == 0x7FFFF7FBC0FC
    # the fault is where the signal arrived, not the handler's abort, nor the first thread's stack
    assert (case.fault.signal, _base(case.fault.module), case.fault.symbol) == ("ABRT", "libcopy.so", "copy_to_queue")
    assert [s.thread for s in case.stacks] == ["2", "1"], "gdb's stop line is the bt's frame, not a stack"
    assert not any(f.symbol in ("__GI_abort", "on_fault") for s in case.stacks for f in s.frames)
    assert case.kind_of(frames[0].where) == "frame" and case.line(frames[0].where).startswith("#6 ")


def test_frames_copied_from_a_github_page_with_issue_links() -> None:
    """'#5' became a link to StanfordLegion/legion#5: a crash in the HIP runtime under Realm's freeze handler."""
    case = _case("signal-handler-github-links.txt")
    assert len(case.stacks) == 1 and case.stacks[0].thread == "15"
    frames = _crashing(case)
    assert [f.index for f in frames] == list(range(7))
    assert all(_base(f.module) == "libamdhip64.so.7" and f.symbol is None for f in frames)
    assert frames[0].address == 0x7FFFEC2B0B45 and frames[0].where.line == 7
    assert frames[-1].address == 0x7FFFEC0877F3


def test_a_hip_runtime_crash_under_an_applications_handler_is_a_runtime_crash() -> None:
    from triage.pipeline import triage

    top = triage([str(GDB / "signal-handler-github-links.txt")]).top
    assert top.klass == "runtime-crash" and top.confidence >= 0.8
    assert any("libamdhip64.so.7" in e.text for e in top.evidence)
    assert not any("realm_freeze" in e.text or "sleep" in e.text for e in top.evidence)


def test_an_abort_under_the_handler_and_gdbs_frame_line_after_a_thread_switch() -> None:
    case = _case("signal-handler-abort-github-links.txt")
    assert len(case.stacks) == 1, "'thread 5' prints frame #0, which bt repeats"
    frames = _crashing(case)
    assert [(f.index, f.symbol) for f in frames] == [(0, "__pthread_kill_implementation"), (1, "raise"),
                                                     (2, "abort"), (3, "Realm::XmitSrcDestPair::reserve_pbuf_inline")]
    assert frames[3].file.endswith("gasnetex/gasnetex_internal.cc") and frames[3].file_line == 1258


def test_the_marker_with_nothing_after_it_leaves_the_stack_as_it_was() -> None:
    lines = (GDB / "signal-handler-github-links.txt").read_text(encoding="utf-8").splitlines()[:6]
    case = parse([artifact("\n".join(lines) + "\n")])
    assert [f.symbol for f in case.stacks[0].frames] == ["clock_nanosleep@GLIBC_2.2.5", "nanosleep", "sleep",
                                                         "Realm::realm_freeze"]
    assert not case.stacks[0].crashing


@pytest.mark.parametrize("text", [
    "ROCm/hip#123 segfault\n#1 crash\n",  # an issue reference, then a word: a sentence, not a frame
    "see ROCm/hip#1  0x00007fffec2b0b45 in ?? () from /opt/rocm/lib/libamdhip64.so.7\n",
    "a/b/c#1  0x00007fffec2b0b45 in ?? () from /opt/rocm/lib/libamdhip64.so.7\n",
    "-ROCm/hip#1  0x00007fffec2b0b45 in ?? () from /opt/rocm/lib/libamdhip64.so.7\n",
])
def test_only_an_owner_repo_link_at_the_start_is_read_past(text: str) -> None:
    case = parse([artifact(text)])
    assert not any(f.module for s in case.stacks for f in s.frames)
    assert not any(f.symbol == "segfault" for s in case.stacks for f in s.frames)


def test_a_frame_without_a_function_name_names_its_object_file() -> None:
    """'#0  0x... in  () at /opt/rocm/hip/lib/libamdhip64.so.5': gdb knew no name; 'at' is the library."""
    case = _case("empty-function-name.txt")
    top = case.stacks[0].frames[0]
    assert (top.address, top.symbol, top.module) == (0x7FFFA6ED9CD8, None, "/opt/rocm/hip/lib/libamdhip64.so.5")
    assert top.file is None
    assert case.fault.signal == "SEGV" and case.fault.module == top.module


def test_arguments_with_parentheses_in_a_string_keep_the_frame() -> None:
    case = _case("arguments-with-parentheses.txt")
    frames = _crashing(case)
    assert [f.index for f in frames] == list(range(7))
    assert (frames[3].symbol, frames[3].file, frames[3].file_line) == ("malloc_printerr", "malloc.c", 5347)
    assert frames[4].symbol == "_int_free" and _base(frames[5].module) == "librocprofiler64.so"


def test_cxx_lambdas_and_operators_in_names() -> None:
    case = _case("cxx-lambda-and-operator-names.txt")
    frames = _crashing(case)
    assert [f.index for f in frames] == list(range(7))
    assert frames[2].symbol == "amd::GpuAgent::InitDma()::{lambda()#1}::operator()() const"
    assert frames[6].symbol == "lazy_ptr<core::Queue>::operator->() const"
    assert all(_base(f.module) == "libhsa-runtime64.so.1" for f in frames)


def test_operator_new_and_delete_with_their_space_are_frames() -> None:
    """gdb names a replaced allocator's frame "operator delete(void*)" (cms-sw/cmssw#47450): the space after "operator"
    is part of the name, and the frame is not dropped from the stack."""
    text = ("Thread 1 \"app\" received signal SIGSEGV, Segmentation fault.\n"
            "#0  0x00001555538a8a4c in _int_free () from /lib64/libc.so.6\n"
            "#1  0x00001555555441ac in operator delete(void*) () from /opt/tools/libAllocMonitorPreload.so\n"
            "#2  0x000015554f8dd24d in operator new[](unsigned long) () from /opt/rocm/lib/libamd_comgr.so.2\n"
            "#3  0x000015554f8ddd93 in main () at app.cpp:9\n")
    frames = _crashing(parse([artifact(text, "bt.txt")]))
    assert [f.symbol for f in frames] == ["_int_free", "operator delete(void*)", "operator new[](unsigned long)", "main"]
    assert _base(frames[1].module) == "libAllocMonitorPreload.so"


def test_a_module_path_with_spaces_in_parentheses_is_read_whole() -> None:
    """LLVM's crash handler in a Windows app under a user folder with a space (the E-02 failure-wording fixture,
    from a stable-diffusion-webui-amdgpu thread): each frame names amdhip64_7.dll and its offset; the same form on
    Linux (an /opt folder with a space) too. Before, the space cut the path and no frame was read."""
    text = (Path(__file__).parent / "fixtures" / "failure-wordings" / "E-02-sdwebui-win-llvm-handler-amdhip64.txt")
    case = parse([artifact(text.read_text(encoding="utf-8"), "crash.txt")])
    frames = [f for s in case.stacks for f in s.frames]
    assert frames and frames[0].module.endswith(r"Stable Diffusion\stable-diffusion-webui-amdgpu\venv\Lib"
                                                 r"\site-packages\_rocm_sdk_core\bin\amdhip64_7.dll")
    assert frames[0].offset == 0x18EB4
    linux = parse([artifact("#0  0x00007f3a1c2b3eb4 (/opt/my apps/lib/libamdhip64.so.6+0x18eb4)\n", "bt.txt")])
    assert [(f.module, f.offset) for s in linux.stacks for f in s.frames] == [("/opt/my apps/lib/libamdhip64.so.6",
                                                                             0x18EB4)]


WORDINGS = Path(__file__).parent / "fixtures" / "failure-wordings"


def test_the_stop_line_after_gdbs_thread_switch_is_where_the_fault_is() -> None:
    """gdb prints "[Switching to thread 66 ...]" between the signal line and the stop line; the stop line is still
    frame 0 of the crash (a PyTorch run stopped in the HSA runtime's event thread, ROCm/rocm-systems via
    pytorch/pytorch#180341, whose "thread apply all bt" lists other threads first)."""
    name = "Y-15-pytorch-rocgdb-asynceventsloop-libhsa-runtime.txt"
    case = parse([artifact((WORDINGS / name).read_text(encoding="utf-8"), name)])
    assert _base(case.fault.module) == "libhsa-runtime64.so"
    assert case.fault.symbol == "rocr::core::Runtime::AsyncEventsLoop(void*)"
    assert _base(_crashing(case)[0].module) == "libhsa-runtime64.so"


def test_the_thread_the_stop_line_names_is_the_crashing_stack_of_thread_apply_all_bt() -> None:
    """In "thread apply all bt" the stopped thread's stack is one of many, seldom the first: the stop line's thread
    number says which (the lines keep gdb's forms as the Y-15 fixture has them)."""
    text = "\n".join([
        'Thread 3 "worker" received signal SIGSEGV, Segmentation fault.',
        "[Switching to thread 3 (Thread 0x7ffdad9ff640 (LWP 3700660))]",
        "0x00007ffff6a1b3c4 in ?? () from /opt/rocm/lib/libamdhip64.so.6",
        "(gdb) thread apply all bt",
        "",
        'Thread 4 (Thread 0x7fbd68ffc640 (LWP 3700672) "worker"):',
        "#0  0x00007ffff7ce7117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6",
        "#1  0x00007ffff7cf1f7e in ?? () from /lib/x86_64-linux-gnu/libc.so.6",
        "",
        'Thread 3 (Thread 0x7ffdad9ff640 (LWP 3700660) "worker"):',
        "#0  0x00007ffff6a1b3c4 in ?? () from /opt/rocm/lib/libamdhip64.so.6",
        "#1  0x00007ffff6a0c1d0 in hipMemcpy () from /opt/rocm/lib/libamdhip64.so.6",
        "#2  0x0000555555555189 in main ()",
        "",
        'Thread 1 (Thread 0x7ffff7c3e740 (LWP 3700600) "worker"):',
        "#0  0x00007ffff7ce7117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6",
    ])
    case = parse([artifact(text, "gdb.txt")])
    frames = _crashing(case)
    assert [f.symbol for f in frames][1:] == ["hipMemcpy", "main"]
    assert _base(case.fault.module) == "libamdhip64.so.6"


def _gdb(*lines: str) -> Case:
    return parse([artifact("\n".join(lines), "gdb.txt")])


def test_gdbs_older_switch_line_does_not_hide_the_stop_line() -> None:
    """gdb before 12 prints "[Switching to Thread 0x... (LWP n)]" (capital T, no number) between the signal line and
    where the thread stopped."""
    case = _gdb('Thread 3 "hashcat" received signal SIGSEGV, Segmentation fault.',
                "[Switching to Thread 0x7fffc84ea700 (LWP 1791)]",
                "0x00007fffd0cea8c8 in submitKernel () from /opt/rocm/lib/libamdhip64.so.6")
    assert case.fault is not None and _base(case.fault.module) == "libamdhip64.so.6"
    assert _crashing(case)[0].symbol == "submitKernel"


@pytest.mark.parametrize("stop", ["Thread 3 received signal SIGSEGV, Segmentation fault.",
                                  'Thread 1.3 "worker" received signal SIGSEGV, Segmentation fault.'])
def test_the_stopped_thread_without_a_name_or_of_one_of_several_inferiors(stop: str) -> None:
    number = stop.split()[1]
    case = _gdb(stop, "0x00007ffff6a1b3c4 in ?? () from /opt/rocm/lib/libamdhip64.so.6", "(gdb) thread apply all bt", "",
                'Thread 1 (Thread 0x7ffff7c3e740 (LWP 3700600) "worker"):',
                "#0  0x00007ffff7ce7117 in ?? () from /lib/x86_64-linux-gnu/libc.so.6", "",
                f'Thread {number} (Thread 0x7ffdad9ff640 (LWP 3700660) "worker"):',
                "#0  0x00007ffff6a1b3c4 in ?? () from /opt/rocm/lib/libamdhip64.so.6",
                "#1  0x00007ffff6a0c1d0 in hipMemcpy () from /opt/rocm/lib/libamdhip64.so.6")
    assert [f.symbol for f in _crashing(case)][1:] == ["hipMemcpy"]


def test_a_later_session_without_a_stopped_thread_forgets_the_earlier_one() -> None:
    """A live session stopped in thread 3, then a core's "thread apply all bt" (its signal line names no thread): the
    core's thread 3 is not the crash."""
    case = _gdb('Thread 3 "worker" received signal SIGINT, Interrupt.',
                "0x00007ffff7ce7117 in poll () from /lib/x86_64-linux-gnu/libc.so.6", "",
                "Program terminated with signal SIGSEGV, Segmentation fault.",
                "#0  0x00007ffff6a1b3c4 in hipLaunchKernel () from /opt/rocm/lib/libamdhip64.so.6", "",
                'Thread 3 (Thread 0x7ffdad9ff640 (LWP 12))', "#0  0x00007ffff7ce7117 in poll () from /lib/x86_64-linux-gnu/libc.so.6")
    assert not any(s.crashing and s.thread == "3" for s in case.stacks)


def test_the_handler_frame_with_its_address_and_library_as_crash_handlers_print_it() -> None:
    """darktable's crash handler runs gdb, which prints '#2 0x... in <signal handler called> () at /usr/lib/libc.so.6'
    (https://github.com/darktable-org/darktable/issues/10707): the stack starts at the frame that received the signal."""
    text = (Path(__file__).parent / "fixtures" / "failure-wordings"
            / "AD-13-darktable-segfault-free-in-libamdocl64-platform-init.txt").read_text(encoding="utf-8")
    frames = _crashing(parse([artifact(text)]))
    assert (frames[0].index, frames[0].symbol, _base(frames[0].module)) == (0, "free", "libc.so.6")
    assert _base(frames[1].module) == "libamdocl64.so" and frames[1].text.startswith("#4 ")
    assert not any(f.symbol in ("wait4", "<signal handler called>") for f in frames)


@pytest.mark.parametrize("marker", [
    "#1  <signal handler called>",
    "#1  0x00007f5e7a242520 in <signal handler called> () from /lib/x86_64-linux-gnu/libc.so.6",
    "#1  0x00007f5e7a242520 in <signal handler called> () at sigaction.c:0",
    "#1  0x00007f5e7a242520 in <signal handler called>",
])
def test_every_form_of_the_handler_marker_ends_the_handlers_frames(marker: str) -> None:
    text = ("#0  0x000055d0c3a1f001 in crash_handler ()\n" + marker + "\n"
            "#2  0x00007f3c2a4a0b10 in hipMemcpy () from /opt/rocm/lib/libamdhip64.so.6\n"
            "#3  0x000055d0c3a1e3f4 in main ()\n")
    frames = _crashing(parse([artifact(text)]))
    assert [(f.index, f.symbol) for f in frames] == [(0, "hipMemcpy"), (1, "main")]
