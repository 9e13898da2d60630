"""Java HotSpot fatal error reports (hs_err_pid*.log and the console header): the fault and the crashing
native stack, as the other stack formats give them, so that frame and fault conditions apply to Java programs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import artifact
from triage.match import load
from triage.model import Artifact
from triage.parsers import parse
from triage.pipeline import analyze
from triage.resources import data_dir

FIXTURES = Path(__file__).parent / "fixtures" / "hserr"
FOLDER = data_dir("signatures")

# What TornadoVM's launcher shows on the terminal when the JVM dies in the HSA runtime (no hs_err file pasted).
CONSOLE = """\
WARNING: Using incubator modules: jdk.incubator.vector
#
# A fatal error has been detected by the Java Runtime Environment:
#
#  SIGSEGV (0xb) at pc=0x00007f31b886f2d1, pid=7781, tid=0x00007f31d0d1c700
#
# JRE version: OpenJDK Runtime Environment (21.0.2+13) (build 21.0.2+13-58)
# Java VM: OpenJDK 64-Bit Server VM (21.0.2+13-58, mixed mode, sharing, tiered, compressed oops, g1 gc, linux-amd64)
# Problematic frame:
# C  [libhsa-runtime64.so.1+0x6f2d1]  hsa_signal_wait_scacquire+0x91
#
# No core dump will be written. Core dumps have been disabled. To enable core dumping, try "ulimit -c unlimited" before starting Java again
#
Aborted (core dumped)
"""

# The same header for a crash in the application's own JNI library.
APP_JNI = """\
#  SIGSEGV (0xb) at pc=0x00007f0c4a0021f4, pid=5120, tid=5121
# Java VM: OpenJDK 64-Bit Server VM (17.0.12+7, mixed mode, tiered, compressed oops, g1 gc, linux-amd64)
# Problematic frame:
# C  [libaparapi_x86_64.so+0x21f4]  Java_com_aparapi_internal_jni_KernelRunnerJNI_runKernelJNI+0x64
"""


def _read(name: str) -> Artifact:
    path = FIXTURES / name
    text = path.read_text()
    return Artifact(name=path.name, text=text, size=len(text))


def test_linux_report_fault_and_native_stack() -> None:
    case = parse([_read("linux-hip-memcpy.log")])
    fault = case.fault
    assert (fault.kind, fault.signal, fault.si_code) == ("signal", "SEGV", "SEGV_MAPERR")
    assert fault.address == 0x10
    assert (fault.module, fault.offset, fault.symbol) == ("libamdhip64.so.6", 0x3A1B2C, "hipMemcpyWithStream")
    stack = next(s for s in case.stacks if s.crashing)
    assert stack.form == "hotspot"
    frames = stack.frames
    assert [f.index for f in frames] == list(range(12))  # Java frames: below is not a second stack
    assert (frames[1].module, frames[1].offset) == ("libtorch_hip.so", 0x1C0F3A8)
    assert frames[0].symbol_offset == 0x4C and frames[0].symbol_source == "input"
    assert frames[3].module is None and frames[3].symbol == "ai.djl.pytorch.jni.PyTorchLibrary.torchToDevice"
    assert frames[5].symbol == "ai.djl.ndarray.NDArray.toDevice" and frames[5].address == 0x74E2013E4A10
    assert frames[7].symbol == "~StubRoutines::call_stub"
    assert (frames[8].module, frames[8].symbol) == ("libjvm.so", "JavaCalls::call_helper(JavaValue*, methodHandle const&, JavaCallArguments*, JavaThread*)")
    assert frames[11].module == "libc.so.6" and frames[11].symbol is None
    assert len([s for s in case.stacks if s.form == "hotspot"]) == 1
    assert case.value("os") == "linux"


def test_windows_report() -> None:
    case = parse([_read("windows-amdhip64.log")])
    fault = case.fault
    assert (fault.kind, fault.code, fault.code_name) == ("exception", "0xC0000005", "ACCESS_VIOLATION")
    assert (fault.address, fault.access) == (0x28, "read")
    assert (fault.module, fault.offset) == ("amdhip64_6.dll", 0x123E4F)
    frames = next(s for s in case.stacks if s.crashing).frames
    assert [f.module for f in frames] == ["amdhip64_6.dll", "aparapi_x86_64.dll", None]
    assert frames[2].address == 0x1F2D51A7B3E
    assert case.value("os") == "windows"
    assert case.value("hip_library_path") == "C:\\WINDOWS\\SYSTEM32\\amdhip64_6.dll"  # from Dynamic libraries
    assert case.value("hip_runtime") == "system"


def test_console_header_alone_gives_the_problematic_frame() -> None:
    case = parse([artifact(CONSOLE)])
    assert case.fault.signal == "SEGV"  # the header's, not the shell's "Aborted"
    assert (case.fault.module, case.fault.offset) == ("libhsa-runtime64.so.1", 0x6F2D1)
    assert case.fault.symbol == "hsa_signal_wait_scacquire"
    assert [len(s.frames) for s in case.stacks if s.form == "hotspot"] == [1]


def test_frames_outside_a_report_are_not_read() -> None:
    """Lines shaped like frame kinds ("C  [x+0x1]") in no Native frames section nor after the header are not a stack."""
    case = parse([artifact("C  [libamdhip64.so.6+0x3a1b2c]  hipMemcpy+0x4c\nA  note about the build\n")])
    assert not case.stacks and case.fault is None


def _ids(arts: list[Artifact]) -> list[str]:
    return [d.id for d in analyze(arts, load(FOLDER), FOLDER).diagnoses]


@pytest.mark.parametrize("arts", [
    [_read("linux-hip-memcpy.log")],
    [_read("windows-amdhip64.log")],
    [artifact(CONSOLE)],
], ids=["linux-hs_err", "windows-hs_err", "console"])
def test_crash_in_rocm_library_reaches_the_runtime_crash_signatures(arts: list[Artifact]) -> None:
    ids = _ids(arts)
    assert "rocm-library-crash-fallback" in ids


@pytest.mark.parametrize("arts", [
    [_read("linux-libjvm.log")],
    [artifact(APP_JNI)],
], ids=["libjvm-gc-crash", "app-jni-crash"])
def test_crash_in_the_jvm_or_the_application_is_not_a_rocm_crash(arts: list[Artifact]) -> None:
    ids = _ids(arts)
    assert "rocm-library-crash-fallback" not in ids and "hip-runtime-segfault" not in ids


def test_frame_with_source_information() -> None:
    """JDK 16 and later print a native frame's source file and line when the library has debug info."""
    text = ("#  SIGSEGV (0xb) at pc=0x00007f2b1a6c4d21, pid=4410, tid=4425\n"
            "# Problematic frame:\n"
            "# C  [libhsa-runtime64.so.1+0x7c4d21]  rocr::core::Runtime::AsyncEventsLoop(void*)+0x91  (runtime.cpp:1342)\n")
    frame = parse([artifact(text)]).stacks[0].frames[0]
    assert (frame.module, frame.offset) == ("libhsa-runtime64.so.1", 0x7C4D21)
    assert (frame.symbol, frame.symbol_offset) == ("rocr::core::Runtime::AsyncEventsLoop(void*)", 0x91)
    assert (frame.file, frame.file_line) == ("runtime.cpp", 1342)


def test_header_quoted_without_its_hashes() -> None:
    text = ("The JVM dies after a few hundred kernels:\n"
            "SIGSEGV (0xb) at pc=0x00007f0a5662e915, pid=8812, tid=8840\n"
            "Problematic frame:\n"
            "C  [libamdhip64.so.6+0x22e915]  hipModuleLaunchKernel+0x35\n")
    case = parse([artifact(text)])
    assert case.fault.signal == "SEGV"
    assert (case.fault.module, case.fault.offset, case.fault.symbol) == ("libamdhip64.so.6", 0x22E915, "hipModuleLaunchKernel")
