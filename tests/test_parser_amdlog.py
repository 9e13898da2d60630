"""AMD_LOG_LEVEL records in every prefix shape: real ROCm 5.2 output, the seeds' ROCm 7 lines, ROCm 6, PAL."""

from __future__ import annotations

from tests.conftest import FIXTURES, artifact
from triage.ingest.decode import decode
from triage.model import Case
from triage.parsers import amdlog, parse
from triage.parsers.amdlog import gfx_name


def _events(text: str) -> Case:
    case = Case()
    amdlog.parse(artifact(text), case)
    amdlog.finish(case)
    return case


def test_real_rocm5_log_prefix_pid_tid_and_ansi() -> None:
    raw = (FIXTURES / "rocm5-nogpu" / "amd_log_level_3_keep_going.stderr.txt").read_bytes()
    case = _events(decode(raw))
    first = case.events[0]
    assert (first.level, first.source, first.source_line, first.where.line) == (1, "rocdevice.cpp", 424, 2)
    assert first.pid == 4834 and first.tid == "0x7f5da7e28880" and first.timestamp_us == 421043257
    assert first.message == "hsa_init failed."
    messages = [e.message for e in case.events]
    assert any(m.startswith("hipGetDeviceCount: Returned hipErrorNoDevice") for m in messages)
    assert "Initializing HSA stack." not in messages, "the API trace is claimed, not kept as events"
    assert not any("vector_add:" in m for m in messages), "program output is not a runtime record"
    claimed = case.claims["paste.txt"]
    assert claimed[1] == claimed[6] == "amdlog" and 5 not in claimed  # line 6 had colour codes, stripped by the decoder


def test_real_rocm5_record_without_location() -> None:
    text = (FIXTURES / "rocm5-nogpu" / "amd_log_level_4_mask_0xFFFFFFFF.stderr.txt").read_text()
    case = _events(text)
    assert case.events and case.events[0].source == "" and case.events[0].message == "hsa_init failed."


def test_seed_lines_without_timestamps_and_continuations() -> None:
    text = """\
:3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1
:3:os_posix.cpp     :934 :  HIP Library Path: ./libamdhip64.so.7
:3:rocdevice.cpp    :1611:  Gfx Major/Minor/Stepping: 12/0/1
:1:devprogram.cpp   :1390:  error: cannot find ROCm device library; ...
error: cannot find ROCm device library; ...
ld.lld: error: undefined hidden symbol: __ockl_dm_init_v1
Error: Creating the executable from LLVM IRs failed.
:1:rocdevice.cpp    :730 :  Couldn't create blit kernels!
Segmentation fault (core dumped)
"""
    case = _events(text)
    assert [e.level for e in case.events] == [3, 3, 3, 1, 1, 1, 1, 1]
    assert case.events[5].message == "ld.lld: error: undefined hidden symbol: __ockl_dm_init_v1"
    assert case.value("hip_version") == "7.2.53210.41ce572d55"
    assert case.value("hip_library_path") == "./libamdhip64.so.7"
    assert case.value("gfx_arch") == "gfx1201"
    assert case.events[-1].where.line == 8


def test_rocm6_prefix_and_pal_line() -> None:
    text = """\
:3:rocdevice.cpp            :1611: 3458279651 us: [pid:4711  tid:0x7f3c0e7fc700] Gfx Major/Minor/Stepping: 9/0/10
:1: paldevice.cpp :2777: some PAL message
"""
    case = _events(text)
    assert case.events[0].pid == 4711 and case.events[0].tid == "0x7f3c0e7fc700"
    assert case.value("gfx_arch") == "gfx90a"
    assert (case.events[1].level, case.events[1].source, case.events[1].message) == (1, "paldevice.cpp", "some PAL message")


def test_gfx_names() -> None:
    assert gfx_name(12, 0, 1) == "gfx1201"
    assert gfx_name(9, 0, 10) == "gfx90a"
    assert gfx_name(11, 0, 0) == "gfx1100"
    assert gfx_name(9, 0, 12) == "gfx90c"


def test_failing_run_supplies_the_facts() -> None:
    text = """\
:3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1
:3:os_posix.cpp     :934 :  HIP Library Path: ./libamdhip64.so.7
:1:rocdevice.cpp    :730 :  Couldn't create blit kernels!

Then with the system runtime preloaded it works:

:3:comgrctx.cpp  :88  :  Loaded COMGR library version 3.5.
:3:hip_context.cpp :42 :  HIP Version: 7.16.26385, Direct Dispatch: 1
:3:os_posix.cpp     :934 :  HIP Library Path: /opt/rocm/lib/libamdhip64.so.7
"""
    case = parse([artifact(text)])
    assert case.failing_run == case.events[0].run
    assert case.value("hip_version") == "7.2.53210.41ce572d55"
    assert case.value("hip_version_system") == "7.16.26385"
    assert case.value("hip_runtime") == "bundled"


def test_not_a_log_line() -> None:
    case = _events("ratio 1:2:3 and a:1:b.cpp is not it\nsee :3: above\n:1:x.cpp:1: ok")
    assert [e.where.line for e in case.events] == [3] and list(case.claims["paste.txt"]) == [3]


def test_runs_split_where_the_process_changes_even_inside_the_trace() -> None:
    """A gap, a new pid or a timestamp going back starts a run; the trace between events still counts."""
    trace = ":3:hip_memory.cpp :93 : {ts} us: [pid:{pid} tid:0x7f01]  hipMalloc ( 0x7f00, 64 )"
    error = ":1:rocdevice.cpp :730 : {ts} us: [pid:{pid} tid:0x7f01] Couldn't create blit kernels!"
    lines = [error.format(ts=10, pid=1), trace.format(ts=20, pid=1), trace.format(ts=30, pid=1), error.format(ts=40, pid=1),
             trace.format(ts=5, pid=2), error.format(ts=50, pid=2),
             "", "", "", "", error.format(ts=60, pid=2)]
    case = _events("\n".join(lines))
    runs = [e.run for e in case.events]
    assert runs[0] == runs[1] != runs[2] != runs[3] and len(case.claims["paste.txt"]) == 7
    assert case.failing_run == runs[0]


def _cut_at_call(api: str, nth: int = 1) -> str:
    """The real ROCm 5 trace up to the runtime's record of entering ``api`` (its ``nth`` call), as a crash there leaves it."""
    lines = (FIXTURES / "rocm5-nogpu" / "amd_log_level_3_keep_going.stderr.txt").read_text().splitlines()
    calls = [i for i, line in enumerate(lines) if f"{api} (" in line]
    return "\n".join(lines[: calls[nth - 1] + 1]) + "\n"


def test_the_call_a_thread_never_returned_from() -> None:
    case = parse([artifact(decode(_cut_at_call("hipMalloc", 2).encode()) + "Segmentation fault (core dumped)\n")])
    facts = case.facts["hip_call_unreturned"]
    assert [f.value for f in facts] == ["hipMalloc"] and facts[0].text.startswith("hipMalloc (")
    # the whole trace: every call returned
    whole = (FIXTURES / "rocm5-nogpu" / "amd_log_level_3_keep_going.stderr.txt").read_text()
    case = parse([artifact(whole)])
    assert "hip_call_unreturned" not in case.facts


def test_silent_calls_and_earlier_runs_are_no_unreturned_call() -> None:
    silent = ":3:hip_error.cpp            :36  : 795019406322 us: [pid:3785  tid:0x1546faa1c080] \x1b[32m hipGetLastError (  ) \x1b[0m\n"
    case = parse([artifact(silent)])
    assert "hip_call_unreturned" not in case.facts
    # a run that ended inside a call, then (after a gap of program output) a run that finished
    first = _cut_at_call("hipMalloc")
    later = (FIXTURES / "rocm5-nogpu" / "amd_log_level_3_keep_going.stderr.txt").read_text()
    case = parse([artifact(first + "a\nb\nc\nd\n" + later)])
    assert "hip_call_unreturned" not in case.facts


def test_the_runtimes_own_records_inside_a_call_do_not_hide_it() -> None:
    """Real ROCm 5 output at level 4: inside hipMalloc the runtime logs its own work (Initializing HSA stack,
    hsa_init failed) before the call's return; a log that stops there stopped inside hipMalloc."""
    lines = (FIXTURES / "rocm5-nogpu" / "amd_log_level_4_keep_going.stderr.txt").read_text().splitlines()
    call = next(i for i, line in enumerate(lines) if "hipMalloc (" in line)
    returned = next(i for i, line in enumerate(lines) if i > call and "hipMalloc: Returned" in line)
    assert returned - call > 1  # the runtime's records in between
    case = parse([artifact("\n".join(lines[:returned]) + "\nSegmentation fault (core dumped)\n")])
    assert [f.value for f in case.facts["hip_call_unreturned"]] == ["hipMalloc"]
    case = parse([artifact("\n".join(lines[:returned + 1]) + "\n")])
    assert "hip_call_unreturned" not in case.facts
