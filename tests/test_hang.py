"""A process that stopped making progress in a GPU call: the parsers' hang reports and stuck threads
(parsers/hang.py) and the derived ``process_hung`` / ``hung_in`` facts (derive/hang.py), from dumps as
py-spy, gdb, the kernel, faulthandler and collective watchdogs print them."""

from __future__ import annotations

from pathlib import Path

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FIXTURES = Path(__file__).parent / "fixtures" / "hang"
FOLDER = data_dir("signatures")
DB = load(FOLDER)


def _analyze(text: str, name: str = "paste.txt"):
    return analyze([Artifact(name=name, text=text, size=len(text))], DB, FOLDER)


def facts(text: str) -> dict:
    return _analyze(text).case.flat_facts()


def fixture(name: str) -> str:
    return (FIXTURES / name).read_text()


FAULTHANDLER_GPU = """\
Timeout (0:10:00)!
Thread 0x00007f1be7fff640 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 324 in wait
  File "/opt/venv/lib/python3.10/site-packages/tqdm/_monitor.py", line 60 in run
  File "/usr/lib/python3.10/threading.py", line 1016 in _bootstrap_inner

Thread 0x00007f1c5a4b7740 (most recent call first):
  File "/opt/venv/lib/python3.10/site-packages/torch/cuda/__init__.py", line 792 in synchronize
  File "/home/dev/bench/matmul.py", line 41 in timed
  File "/home/dev/bench/matmul.py", line 77 in <module>
"""

FAULTHANDLER_CPU = """\
Timeout (0:05:00)!
Current thread 0x00007f8e2c1d7740 (most recent call first):
  File "/opt/venv/lib/python3.12/site-packages/numpy/linalg/linalg.py", line 409 in solve
  File "/home/dev/fem/solver.py", line 210 in step
  File "/home/dev/fem/solver.py", line 388 in <module>
"""

RCCL_WATCHDOG = (
    "[rank1]:[E1129 21:40:12.118274803 ProcessGroupNCCL.cpp:632] [Rank 1] Watchdog caught collective operation timeout: "
    "WorkNCCL(SeqNum=4113, OpType=ALLREDUCE, NumelIn=25690112, NumelOut=25690112, Timeout(ms)=600000) ran for 600081 "
    "milliseconds before timing out.\n"
)

HUNG_TASK_EXT4 = """\
[ 9120.101010] INFO: task tar:7711 blocked for more than 241 seconds.
[ 9120.101020]       Not tainted 6.8.0-49-generic #49-Ubuntu
[ 9120.101031] Call Trace:
[ 9120.101033]  <TASK>
[ 9120.101036]  __schedule+0x279/0x6a0
[ 9120.101041]  io_schedule+0x46/0x80
[ 9120.101045]  wait_on_page_bit_common+0x10a/0x3c0
[ 9120.101052]  jbd2_log_wait_commit+0xe1/0x150
[ 9120.101058]  ext4_sync_file+0x1f0/0x360
[ 9120.101066]  </TASK>
"""

GDB_CRASH_WITH_WAITING_THREAD = """\
Thread 1 "bench" received signal SIGSEGV, Segmentation fault.
#0  0x000055555555a1c9 in compute_tile (n=4096) at bench.cpp:88
#1  0x000055555555a8f0 in main () at bench.cpp:201

Thread 2 (Thread 0x7ffd9bfff640 (LWP 48230) "bench"):
#0  0x00007ffff7d1e9cf in ioctl () from /lib/x86_64-linux-gnu/libc.so.6
#1  0x00007fffe2ab7e18 in hipDeviceSynchronize () from /opt/rocm/lib/libamdhip64.so.6
"""


def test_pyspy_native_dump_names_the_hip_call() -> None:
    got = facts(fixture("pyspy-native-hipDeviceSynchronize.txt"))
    assert got["process_hung"] == "yes"
    assert got["hung_in"] == "hipDeviceSynchronize (libamdhip64.so.6)"


def test_gdb_attached_dump_skips_the_runtime_event_thread() -> None:
    got = facts(fixture("gdb-attached-hipStreamSynchronize.txt"))
    assert got["process_hung"] == "yes"
    assert got["hung_in"] == "hipStreamSynchronize (libamdhip64.so.6)"


def test_gdb_dump_with_only_the_event_thread_waiting_is_no_hang() -> None:
    text = fixture("gdb-attached-hipStreamSynchronize.txt").split("Thread 1 (")[0]
    text += "Thread 1 (Thread 0x7ffff7e88740 (LWP 48211) \"bench\"):\n#0  0x000055555555a1c9 in compute_tile (n=4096) at bench.cpp:88\n"
    assert "process_hung" not in facts(text)


def test_kernel_hung_task_in_amdgpu() -> None:
    got = facts(fixture("dmesg-hung-task-amdgpu.txt"))
    assert got["process_hung"] == "yes"
    assert got["hung_in"] == "amdgpu_vm_wait_idle [amdgpu]"  # the top driver frame, not the unreliable "?" one


def test_kernel_hung_task_outside_the_gpu_driver() -> None:
    got = facts(HUNG_TASK_EXT4)
    assert got["process_hung"] == "yes" and "hung_in" not in got


def test_faulthandler_timeout_in_torch_cuda_synchronize() -> None:
    got = facts(FAULTHANDLER_GPU)
    assert got["process_hung"] == "yes"
    assert got["hung_in"] == "synchronize (torch/cuda/__init__.py)"


def test_faulthandler_timeout_in_cpu_code() -> None:
    got = facts(FAULTHANDLER_CPU)
    assert got["process_hung"] == "yes" and "hung_in" not in got


def test_collective_watchdog() -> None:
    got = facts(RCCL_WATCHDOG)
    assert got["process_hung"] == "yes" and got["hung_in"] == "collective ALLREDUCE"


def test_a_report_right_after_a_trace_or_dump_is_read_too() -> None:
    # kernels before 5.16 print no <TASK> markers: the next report's line ends the previous trace
    old_kernel = "".join(line + "\n" for line in HUNG_TASK_EXT4.splitlines() if "TASK>" not in line)
    amdgpu_task = "".join(line + "\n" for line in fixture("dmesg-hung-task-amdgpu.txt").splitlines() if "TASK>" not in line)
    got = facts(old_kernel + amdgpu_task)
    assert got["process_hung"] == "yes" and got["hung_in"] == "amdgpu_vm_wait_idle [amdgpu]"
    assert facts(FAULTHANDLER_CPU + RCCL_WATCHDOG)["hung_in"] == "collective ALLREDUCE"


def test_a_crash_is_no_hang_although_a_thread_waits() -> None:
    assert "process_hung" not in facts(GDB_CRASH_WITH_WAITING_THREAD)


def test_collect_timeout_is_a_hang_report() -> None:
    from triage.derive import hang
    from triage.model import Case, Where

    case = Case()
    case.add_fact("run_ended", "ended: stopped by triage collect after the 600 s --timeout", Where("manifest.json", 3), "x", 60)
    hang.derive(case)
    assert case.value("process_hung") == "yes" and case.value("hung_in") is None


@pytest.mark.parametrize("text,expected", [
    (fixture("pyspy-native-hipDeviceSynchronize.txt"), True),
    (fixture("dmesg-hung-task-amdgpu.txt"), True),
    (FAULTHANDLER_GPU, True),
    (FAULTHANDLER_CPU, False),
    (HUNG_TASK_EXT4, False),
    (GDB_CRASH_WITH_WAITING_THREAD, False),
], ids=["py-spy", "hung-task-amdgpu", "faulthandler-gpu", "faulthandler-cpu", "hung-task-ext4", "crash"])
def test_gpu_call_hang_signature(text: str, expected: bool) -> None:
    ids = [d.id for d in _analyze(text).diagnoses]
    assert ("gpu-call-hang" in ids) is expected


def test_pyspy_dump_without_native_frames_names_the_python_call() -> None:
    text = ('Thread 0x7F1C5A4B7740 (active+gil): "MainThread"\n'
            "    synchronize (torch/cuda/__init__.py:954)\n"
            "    train_step (train.py:88)\n")
    got = facts(text)
    assert got["process_hung"] == "yes" and got["hung_in"] == "synchronize (torch/cuda/__init__.py)"


def test_a_backtrace_running_inside_a_copy_is_no_hang() -> None:
    """A pasted crash backtrace whose signal line was not kept: the thread is in memcpy under hipMemcpy, not waiting."""
    text = ("#0  __memmove_avx_unaligned_erms () at ../sysdeps/x86_64/multiarch/memmove-vec-unaligned-erms.S:317\n"
            "#1  0x00007fffe2a31c55 in hipMemcpy () from /opt/rocm/lib/libamdhip64.so.6\n"
            "#2  0x000055555555a41c in upload (n=4096) at app.cpp:42\n")
    assert "process_hung" not in facts(text)


def test_opencl_finish_in_a_java_program() -> None:
    """gdb attached to a JVM whose OpenCL thread (TornadoVM, Aparapi) waits in clFinish on ROCm's OpenCL."""
    text = ('Thread 27 (Thread 0x7f2a0cdfe640 (LWP 61234) "java"):\n'
            "#0  0x00007f2a4b11e9cf in __GI___ioctl (fd=5, request=3222817548) at ../sysdeps/unix/sysv/linux/ioctl.c:36\n"
            "#1  0x00007f29e8a4f10c in hsaKmtWaitOnEvent_Ext () from /opt/rocm/lib/libhsakmt.so.1\n"
            "#2  0x00007f29e8b0b7e2 in rocr::core::InterruptSignal::WaitRelaxed(hsa_signal_condition_t, long, unsigned long, hsa_wait_state_t) () from /opt/rocm/lib/libhsa-runtime64.so.1\n"
            "#3  0x00007f29e9c61d5e in amd::HostQueue::finish(bool) () from /opt/rocm/lib/libamdocl64.so\n"
            "#4  0x00007f29e9bf1a2c in clFinish () from /opt/rocm/lib/libamdocl64.so\n"
            "#5  0x00007f29f0a3c118 in Java_uk_ac_manchester_tornado_drivers_opencl_OCLCommandQueue_clFinish () from /tmp/libtornado-opencl.so\n")
    got = facts(text)
    assert got["process_hung"] == "yes" and got["hung_in"] == "clFinish (libamdocl64.so)"


def test_windbg_stack_of_a_hung_windows_process() -> None:
    """WinDbg's k of the main thread after Break: the export name far from its export is not the call."""
    text = ("0:000> ~0k\n"
            " # Child-SP          RetAddr               Call Site\n"
            "00 000000a1`2b8fe3a8 00007ffb`1c4a8e4e     ntdll!NtWaitForSingleObject+0x14\n"
            "01 000000a1`2b8fe3b0 00007ffa`e12b0f5c     KERNELBASE!WaitForSingleObjectEx+0x8e\n"
            "02 000000a1`2b8fe450 00007ffa`e12a1b33     amdhip64_6!hipMemcpyDtoH+0x1a2bc\n"
            "03 000000a1`2b8fe4a0 00007ffa`e10d4c21     amdhip64_6!hipDeviceSynchronize+0x53\n"
            "04 000000a1`2b8fe4e0 00007ff6`d0b41a2e     bench!main+0x11e\n")
    got = facts(text)
    assert got["process_hung"] == "yes" and got["hung_in"] == "hipDeviceSynchronize (amdhip64_6)"


HUNG_TASK_BUILD_ID = """\
[ 1201.330411] INFO: task kworker/5:1:412 blocked for more than 245 seconds.
[ 1201.330420] Workqueue: events amdgpu_tlb_fence_work [amdgpu]
[ 1201.330425] Call Trace:
[ 1201.330427]  <TASK>
[ 1201.330431]  __schedule+0x3f1/0x1290
[ 1201.330440]  schedule_timeout+0xbd/0x100
[ 1201.330446]  dma_fence_default_wait+0x199/0x280
[ 1201.330452]  amdgpu_tlb_fence_work+0x2c/0xe0 [amdgpu 5d0c1a9e3f7b28a4c6e1d0f9b2a7c3e4f5a6b7c8]
[ 1201.330630]  process_one_work+0x193/0x350
[ 1201.330640]  </TASK>
"""


def test_kernel_frame_with_the_module_build_id() -> None:
    # kernels built with CONFIG_STACKTRACE_BUILD_ID print "[module build-id]" after the offset
    got = facts(HUNG_TASK_BUILD_ID)
    assert got["process_hung"] == "yes" and got["hung_in"] == "amdgpu_tlb_fence_work [amdgpu]"
    ext4 = HUNG_TASK_BUILD_ID.replace("amdgpu_tlb_fence_work+0x2c/0xe0 [amdgpu ", "ext4_sync_file+0x1f0/0x360 [ext4 ")
    ext4 = ext4.replace("events amdgpu_tlb_fence_work [amdgpu]", "events_unbound flush_to_ldisc")
    got = facts(ext4)
    assert got["process_hung"] == "yes" and "hung_in" not in got


# An AMD_LOG_LEVEL=3 log (ROCm 6.x pid/tid prefix) that ends in the runtime's wait inside hipDeviceSynchronize.
HIP_LOG_ENDS_IN_WAIT = """\
:3:hip_platform.cpp         :225 : 2718120631 us: [pid:4121  tid:0x7f3a8c1ff740]  hipLaunchKernel ( 0x55d1c0a3e2f0, {128,1,1}, {256,1,1}, 0x7ffd0e2b1a40, 0, stream:<null> )
:3:hip_platform.cpp         :233 : 2718120650 us: [pid:4121  tid:0x7f3a8c1ff740] hipLaunchKernel: Returned hipSuccess :
:3:hip_device_runtime.cpp   :652 : 2718120655 us: [pid:4121  tid:0x7f3a8c1ff740]  hipDeviceSynchronize (  )
:3:rocvirtual.hpp           :67  : 2718120661 us: [pid:4121  tid:0x7f3a8c1ff740] Host active wait for Signal = (0x7f3a7c0fd080) for -1 ns
"""


def test_hip_log_ending_in_a_wait_inside_an_api_call_is_a_hang() -> None:
    got = facts(HIP_LOG_ENDS_IN_WAIT)
    assert got["process_hung"] == "yes" and got["hung_in"] == "hipDeviceSynchronize (HIP log)"
    assert "gpu-call-hang" in [d.id for d in _analyze(HIP_LOG_ENDS_IN_WAIT).diagnoses]


@pytest.mark.parametrize("text", [
    # the call returned after the wait: the log goes on
    HIP_LOG_ENDS_IN_WAIT + ":3:hip_device_runtime.cpp   :667 : 2718121002 us: [pid:4121  tid:0x7f3a8c1ff740] "
                           "hipDeviceSynchronize: Returned hipSuccess :\n",
    # the process crashed while waiting: something follows the wait line
    HIP_LOG_ENDS_IN_WAIT + "Segmentation fault (core dumped)\n",
    # the thread's last API call returned; the final wait is the runtime's own
    HIP_LOG_ENDS_IN_WAIT.replace("]  hipDeviceSynchronize (  )", "] hipDeviceSynchronize: Returned hipSuccess :"),
    # the wait is another thread's than the open call's
    HIP_LOG_ENDS_IN_WAIT.replace("tid:0x7f3a8c1ff740] Host active wait", "tid:0x7f3a11ffe640] Host active wait"),
])
def test_hip_log_not_ending_in_an_open_wait_is_no_hang(text: str) -> None:
    assert "process_hung" not in facts(text)


def test_threads_waiting_for_runtime_locks_hang_on_a_lock_not_the_gpu() -> None:
    """Two threads each waiting to take a mutex inside the HIP runtime (the shape of a lock-order deadlock in CLR's
    memory pool): the process hung in a GPU call, but on a host lock; a thread waiting on the GPU's signal is not."""
    got = facts(fixture("gdb-attached-two-threads-on-runtime-locks.txt"))
    assert got["process_hung"] == "yes"
    assert got["hung_in"] == "hipEventSynchronize (libamdhip64.so.6)"
    assert got["hung_on"] == "lock"
    assert facts(fixture("gdb-attached-hipStreamSynchronize.txt"))["hung_on"] == "gpu"
    # one thread on a lock beside one waiting for the GPU's signal: the GPU is what the process waits for
    gpu_wait = fixture("gdb-attached-hipStreamSynchronize.txt").split("Thread 1 (")[1]
    mixed = fixture("gdb-attached-two-threads-on-runtime-locks.txt") + "\nThread 9 (" + gpu_wait
    assert facts(mixed)["hung_on"] == "gpu"
    # the only stuck thread on a lock: its holder is not shown
    alone = fixture("gdb-attached-two-threads-on-runtime-locks.txt").split("Thread 3 (")[0]
    assert facts(alone)["hung_on"] == "one lock"


def test_two_threads_on_runtime_locks_in_calls_that_do_not_block_hang_too() -> None:
    """hipMallocAsync and hipFreeAsync never wait for the GPU, so no blocking call names the hang; two threads each
    waiting for a lock of the runtime under them still do. One such thread alone is no hang (a dump may catch a
    thread taking a busy lock in passing)."""
    text = fixture("gdb-attached-two-threads-on-runtime-locks.txt").replace(
        "hip::Event::synchronize() ()", "hip::MemoryPool::FreeMemory(void*) ()").replace(
        "hipEventSynchronize ()", "hipFreeAsync ()")
    got = facts(text)
    assert got["process_hung"] == "yes" and got["hung_on"] == "lock" and "hung_in" not in got
    one = text.split("Thread 3 (")[0]
    assert "process_hung" not in facts(one)
