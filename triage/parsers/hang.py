"""Reports that a process stopped making progress, and the call its stuck threads sit in.

A hang leaves no signal and no crash record; what users send instead is one of these::

    INFO: task python3:48211 blocked for more than 122 seconds.               kernel hung-task report, then its trace:
     amdgpu_vm_wait_idle+0x2d/0x50 [amdgpu]
    Timeout (0:05:00)!                                                          faulthandler.dump_traceback_later
      File "/venv/lib/python3.12/site-packages/torch/cuda/__init__.py", line 954 in synchronize
    Thread 48211 (active): "MainThread"                                          py-spy dump (--native adds C frames)
        hipDeviceSynchronize (libamdhip64.so.6)
        synchronize (torch/cuda/__init__.py:954)
    [Rank 0] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, ...) ran for 600015 milliseconds before timing out.

Each explicit report is a ``hang_report`` fact (its kind); each GPU call at the top of a stuck thread
is a ``hang_stack_call`` fact (the call, and the library or file it is in). derive/hang.py weighs them
with the debuggers' stacks into ``process_hung`` and ``hung_in``.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable

# A blocking HIP / HSA / OpenCL call as a native frame names it (gdb, coredumpctl, py-spy --native): the API
# calls that wait for the GPU, the HSA signal waits they end in, and the runtime's own waits under them.
# The HSA runtime's event thread (AsyncEventsLoop, hsa_amd_signal_wait_any / WaitAny) waits in every
# ROCm process and is left out.
GPU_WAIT = lazy(
    r"(?:^|::|\b)(?P<call>hip(?:Device|Stream|Event|Ctx)Synchronize|hipMemcpy(?!\w*Async)\w*|hipFree\b"
    r"|hipStreamWaitEvent|hipGraphLaunch|ihipStreamSynchronize|hsa_signal_wait_(?:scacquire|relaxed|acquire)"
    r"|InterruptSignal::Wait(?:Relaxed|Acquire)|BusyWaitSignal::Wait(?:Relaxed|Acquire)|amd::Event::awaitCompletion"
    r"|amd::HostQueue::finish|hsaKmtWaitOnEvent(?:_Ext)?\b"
    r"|clFinish|clWaitForEvents|clEnqueue(?:Read|Write|Map)Buffer\w*)")  # ROCm's OpenCL (TornadoVM, Aparapi, ...)
BACKGROUND_THREAD = lazy(r"AsyncEventsLoop|HostQueue::loop|amd::Thread::(?:main|entry)")
# A Python frame in a GPU library's waiting call: torch.cuda (synchronize, streams, events), CuPy, PyCUDA,
# torch.distributed's collectives (RCCL on ROCm), JAX's block_until_ready, hip-python's bindings.
_PY_GPU_FILE = lazy(r"(?:^|[\\/])(?:torch[\\/]cuda[\\/]|cupy[\\/]cuda[\\/]|cupy_backends[\\/]|pycuda[\\/]"
                    r"|torch[\\/]distributed[\\/]distributed_c10d\.py|hip[\\/]hip\w*\.py)")
_PY_GPU_FUNC = lazy(r"^(?:synchronize|block_until_ready|wait_stream|wait_event|query|all_reduce|all_gather\w*"
                    r"|reduce_scatter\w*|broadcast|barrier|all_to_all\w*|send|recv|hip[A-Z]\w+)$")

_HUNG_TASK = lazy(r"\bINFO: task (?P<comm>\S.*?):(?P<pid>\d+) blocked for more than (?P<s>\d+) seconds")
# A kernel trace frame: "amdgpu_vm_wait_idle+0x2d/0x50 [amdgpu]" ("? name" marks an unreliable guess); kernels
# built with CONFIG_STACKTRACE_BUILD_ID add the module's build id: "[amdgpu 5d0c1a9e3f7b28a4c6e1d0f9b2a7c3e4f5a6b7c8]".
_KERNEL_FRAME = lazy(r"(?:^|[\s\]])(?P<q>\?\s+)?(?P<fn>[A-Za-z_][\w.]*)\+0x[0-9a-f]+/0x[0-9a-f]+"
                     r"(?:\s+\[(?P<mod>[\w-]+)(?:\s+[0-9a-f]{16,})?\])?\s*$")
_KERNEL_GPU = lazy(r"^(?:amdgpu|amdkfd|amdxcp|amdttm|amddrm\w*|gpu_sched)$")
_KERNEL_GPU_FN = lazy(r"^(?:amdgpu_|kfd_|kgd2kfd_|amdgpu\w*_|drm_sched_)")
_FAULTHANDLER = lazy(r"^\s*Timeout \((?P<t>\d+:\d\d:\d\d(?:\.\d+)?)\)!\s*$")
_PY_THREAD = lazy(r"^\s*(?:Current thread|Thread) 0x[0-9a-fA-F]+ \(most recent call first\):\s*$")
_PY_FRAME = lazy(r'^\s+File "(?P<f>[^"]+)", line (?P<l>\d+) in (?P<fn>\S+)\s*$')
_PYSPY_THREAD = lazy(r'^\s*Thread (?:0x[0-9A-Fa-f]+|\d+) \((?:active|idle)(?:\+gil)?\): "[^"]*"\s*$')
_PYSPY_FRAME = lazy(r"^\s{2,}(?P<fn>[^\s()][^()]*?) \((?P<loc>[^()]+?)(?::(?P<l>\d+))?\)\s*$")
_COLLECTIVE = lazy(r"\bWatchdog caught collective operation timeout: Work\w*\((?:[^()]*?\bOpType=(?P<op>\w+))?")
_WATCHDOG = lazy(r"watchdog (?:got stuck|thread terminated|timed out)|\bHeartbeat monitor timed out"
                 r"|\bstill waiting\b(?=[^\n]{0,200}\b(?:GPU|HIP|HSA|hip[A-Z]\w+|hsa_\w+|RCCL|NCCL|stream|kernel"
                 r"|device|synchroniz\w*|collective))", re.IGNORECASE)
_NEEDLES = Needles(_HUNG_TASK, _FAULTHANDLER, _PYSPY_THREAD, _COLLECTIVE, _WATCHDOG)
# An AMD_LOG_LEVEL>=3 HIP runtime log whose last line is the runtime starting to wait for a signal: the log of a
# process that never got past that wait (hipDeviceSynchronize, hipMemcpy, hipMemset... that never returned).
_HIP_WAIT_LAST = lazy(r"\[(?:pid:\s*\d+\s+)?tid:\s*(?P<tid>0x[0-9a-f]+)\]\s+Host (?:active )?wait for Signal = \(0x[0-9a-f]+\) for -?\d+ ns\s*$")
_HIP_API_LINE = lazy(r"\[(?:pid:\s*\d+\s+)?tid:\s*(?P<tid>0x[0-9a-f]+)\]\s+(?:\S+\s+)?(?P<call>hip[A-Z]\w*)(?P<ret>: Returned\b| \()")
HIP_WAIT_LOOKBACK = 200  # lines read back from the final wait to the API call it is in

TRACE_LINES = 120  # a hung-task trace or a thread dump read past its first line, at most
TOP_FRAMES = 12  # a stuck thread's frames looked at from the top: the waits under the API call


def python_gpu_call(path: str, function: str) -> str | None:
    """``synchronize (torch/cuda/__init__.py)`` for a Python frame in a GPU library's waiting call, else None."""
    path = path.replace("\\", "/")
    m = _PY_GPU_FILE.search(path)
    if m is None or not _PY_GPU_FUNC.match(function):
        return None
    return f"{function} ({path[m.start():].lstrip('/')})"


def native_gpu_call(symbol: str) -> str | None:
    """The blocking HIP/HSA call a native frame's symbol names, else None."""
    m = GPU_WAIT.search(symbol)
    return m["call"] if m else None


def parse(artifact: Artifact, case: Case) -> None:
    """Add the hang reports in the artifact and the GPU calls their traces and the thread dumps show."""
    read_to = -1  # the last line a trace or dump already consumed
    for index, where, text in _NEEDLES.readable_lines(artifact):
        if index <= read_to:
            continue
        quoted = text.strip()
        if m := _HUNG_TASK.search(text):
            case.add_fact("hang_report", "kernel-hung-task", where, quoted, 60)
            case.claim(where, "kernel", "kernel-log")
            read_to = _kernel_trace(artifact, index, case)
        elif _FAULTHANDLER.match(text):
            case.add_fact("hang_report", "faulthandler-timeout", where, quoted, 60)
            case.claim(where, "hang-report")
            read_to = _python_dump(artifact, index, case)
        elif _PYSPY_THREAD.match(text):
            read_to = _pyspy_dump(artifact, index, case)
        elif m := _COLLECTIVE.search(text):
            case.add_fact("hang_report", "collective-timeout", where, quoted, 60)
            case.add_fact("hang_stack_call", f"collective {m['op']}" if m["op"] else "collective", where, quoted, 50)
            case.claim(where, "hang-report")
        elif _WATCHDOG.search(text):
            case.add_fact("hang_report", "watchdog", where, quoted, 50)
            case.claim(where, "hang-report")
            if m := GPU_WAIT.search(text):
                case.add_fact("hang_stack_call", m["call"], where, quoted, 40)
    _hip_log_ends_in_wait(artifact, case)


def _hip_log_ends_in_wait(artifact: Artifact, case: Case) -> None:
    """A HIP log that ends in the runtime's wait for a signal, inside an API call of the same thread that never
    logged its return: the process hung there (the log of a crash or a normal exit goes on past the wait)."""
    lines = artifact.lines
    last = len(lines) - 1
    while last >= 0 and not lines[last].strip():
        last -= 1
    if last < 0 or not readable(lines[last]) or "wait for Signal" not in lines[last]:
        return
    wait = _HIP_WAIT_LAST.search(lines[last])
    if wait is None:
        return
    for index in range(last - 1, max(-1, last - HIP_WAIT_LOOKBACK), -1):
        if not readable(lines[index]):  # as the traces above: a line past MAX_LINE is no runtime log line
            continue
        m = _HIP_API_LINE.search(lines[index])
        if m is None or m["tid"] != wait["tid"]:
            continue
        if m["ret"].startswith(":"):
            return  # the thread's last API call returned: the wait is the runtime's own, not a stuck call
        where = Where(artifact.name, last + 1)
        case.add_fact("hang_report", "hip-log-ends-in-wait", where, lines[last].strip(), 40)
        case.add_fact("hang_stack_call", f"{m['call']} (HIP log)", Where(artifact.name, index + 1), lines[index].strip(), 50)
        return


def _kernel_trace(artifact: Artifact, start: int, case: Case) -> int:
    """The hung task's trace after its report: the topmost frame of the amdgpu/KFD driver is where it waits."""
    lines = artifact.lines
    end = min(len(lines), start + 1 + TRACE_LINES)
    for index in range(start + 1, end):
        text = lines[index]
        if "</TASK>" in text:
            return index
        if not readable(text) or _HUNG_TASK.search(text):
            return index - 1  # the next report is the main loop's to read
        m = _KERNEL_FRAME.search(text)
        if m is None or m["q"]:
            continue
        if (m["mod"] and _KERNEL_GPU.match(m["mod"])) or _KERNEL_GPU_FN.match(m["fn"]):
            where = Where(artifact.name, index + 1)
            call = f"{m['fn']} [{m['mod']}]" if m["mod"] else m["fn"]
            case.add_fact("hang_stack_call", call, where, text.strip(), 60)
            case.claim(where, "kernel", "kernel-log")
            return index
    return end - 1


def _python_dump(artifact: Artifact, start: int, case: Case) -> int:
    """faulthandler's dump of every thread after ``Timeout (h:mm:ss)!``: a GPU call among a thread's top frames."""
    lines = artifact.lines
    depth = 0
    index = start
    for index in range(start + 1, min(len(lines), start + 1 + TRACE_LINES * 4)):
        text = lines[index]
        if not readable(text):
            break
        if _PY_THREAD.match(text):
            depth = 0
            continue
        m = _PY_FRAME.match(text)
        if m is None:
            if text.strip() and "<no Python frame>" not in text:
                break
            continue
        depth += 1
        if depth <= 3 and (call := python_gpu_call(m["f"], m["fn"])):
            case.add_fact("hang_stack_call", call, Where(artifact.name, index + 1), text.strip(), 60)
    else:
        index += 1  # every line of the range was read
    return index - 1  # the line that ended the dump is the main loop's to read


def _pyspy_dump(artifact: Artifact, start: int, case: Case) -> int:
    """A py-spy dump's threads: near each thread's top, its blocking HIP call (else the HSA wait under it, or the
    GPU library's Python call above it)."""
    lines = artifact.lines
    candidates: list[tuple[int, str, int]] = []  # (rank: 0 a HIP API call, 1 a Python call, 2 a runtime wait; call; index)
    depth = 0
    index = start
    for index in range(start, min(len(lines), start + TRACE_LINES * 4)):
        text = lines[index]
        if not readable(text):
            break
        if _PYSPY_THREAD.match(text):
            _pick(artifact, candidates, case)
            candidates, depth = [], 0
            continue
        m = _PYSPY_FRAME.match(text)
        if m is None:
            if text.strip():
                break
            continue
        depth += 1
        if depth > TOP_FRAMES or BACKGROUND_THREAD.search(m["fn"]):
            continue
        if m["l"] and (call := python_gpu_call(m["loc"], m["fn"])):
            candidates.append((1, call, index))
        elif name := native_gpu_call(m["fn"]):
            candidates.append((0 if name.startswith(("hip", "cl")) else 2, f"{name} ({m['loc']})", index))
    else:
        index += 1  # every line of the range was read
    _pick(artifact, candidates, case)
    return index - 1  # the line that ended the dump is the main loop's to read


def _pick(artifact: Artifact, candidates: list[tuple[int, str, int]], case: Case) -> None:
    """One thread's call: its HIP API call, else its GPU library's Python call, else the runtime's wait."""
    if not candidates:
        return
    _, call, index = min(candidates)
    where = Where(artifact.name, index + 1)
    case.add_fact("hang_stack_call", call, where, artifact.lines[index].strip(), 60)
    case.claim(where, "frame", "stack")
