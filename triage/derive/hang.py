"""Whether the process hung, and in which GPU call: ``process_hung`` = yes and ``hung_in``.

A hang is what a user reports when nothing crashed: the kernel's hung-task report, faulthandler's
``Timeout (h:mm:ss)!`` dump, a collective watchdog's timeout, a run ``triage collect`` stopped at its
``--timeout``, or a thread dump (gdb attached, ``thread apply all bt``; WinDbg's ``~*k``; py-spy) taken of a
process that did not crash, one of whose threads waits in a blocking HIP/HSA/OpenCL call. ``hung_in`` is the GPU call a
stuck thread waits in (parsers/hang.py reads it from traces; here also from the debuggers' stacks);
without one the process hung elsewhere (CPU code, I/O, a lock), which is no GPU hang. ``hung_on`` says what the
stuck threads of the stacks wait for: ``lock`` when two or more do and each waits to take a host lock (a mutex, a
critical section) above its GPU call, which is a deadlock among the host's threads, not a GPU that stopped; ``one
lock`` when the only stuck thread does (its lock's holder, not shown, may itself wait for the GPU); ``gpu`` otherwise.
"""

from __future__ import annotations

from typing import NamedTuple

from triage.lazy import lazy
from triage.model import Case, Fact, Where
from triage.parsers.codes import CRASH_SIGNALS
from triage.parsers.hang import BACKGROUND_THREAD, TOP_FRAMES, native_gpu_call

# A thread that waits: a blocking system call or a wait function among its top frames.
_WAITING = lazy(r"(?i)wait|sleep|poll|futex|ioctl|cond_|sched_yield|\bselect\b|epoll|pthread_join")
_WAIT_FRAMES = 4
# Taking a host lock: glibc's and libstdc++'s mutexes, the HIP runtime's (amd::Monitor, amd::ScopedLock) and the HSA
# runtime's (KernelMutex, HybridMutex), Windows' critical sections and slim reader/writer locks.
_LOCKING = lazy(r"__lll_lock_wait|pthread_mutex_(?:timed)?lock|pthread_rwlock_(?:rd|wr|timedrd|timedwr)lock"
                r"|__gthread_(?:recursive_)?mutex_lock|std::(?:recursive_|timed_|shared_)?mutex::lock"
                r"|amd::Monitor::(?:lock|finishLock)|amd::ScopedLock::ScopedLock|rocr::(?:KernelMutex|HybridMutex)::Acquire"
                r"|EnterCriticalSection|RtlpEnterCriticalSectionContended|AcquireSRWLock(?:Exclusive|Shared)"
                r"|RtlAcquireSRWLock(?:Exclusive|Shared)")
# A frame of the HIP, HSA or OpenCL runtime (or an API call into one): a lock taken under it is the runtime's.
_RUNTIME_FRAME = lazy(r"(?:^|::|\b)(?:hip[A-Z]\w*|hsa_\w+|cl[A-Z]\w+)\b|\b(?:amd|hip|roc|rocr|ihip)::")


class _Wait(NamedTuple):
    """A stuck thread's GPU call as a fact would quote it, and whether the thread waits to take a host lock above it."""

    call: str
    where: Where
    text: str
    on_lock: bool


def _crashed(case: Case) -> bool:
    """A crash's dump shows waiting threads too: they did not stop the process, the crash did."""
    fault = case.fault
    return fault is not None and (fault.kind == "exception" or (fault.signal or "") in CRASH_SIGNALS)


def _stack_waits(case: Case) -> tuple[list[_Wait], list[tuple[Where, str]]]:
    """From the debuggers' stacks (the crashing one excepted): each stuck thread's blocking GPU call (the API call
    nearest the top, or the runtime's wait under it when the API frame is past the top frames); and each thread that
    waits to take a lock inside the runtime, whatever the call (a hipMallocAsync is no blocking call, yet blocks on a
    lock), by the lock's frame."""
    calls: list[_Wait] = []
    locks: list[tuple[Where, str]] = []
    for stack in case.stacks:
        if stack.crashing or stack.form not in ("gdb", "coredump", "windows"):  # windows: WinDbg's ~*k, Visual Studio
            continue
        if any(f.symbol and BACKGROUND_THREAD.search(f.symbol) for f in stack.frames):
            continue  # the runtime's own service threads always wait
        if not any(f.symbol and _WAITING.search(f.symbol) for f in stack.frames[:_WAIT_FRAMES]):
            continue  # a thread that runs (or crashed, its signal line not pasted) inside a GPU call is not stuck there
        top = [f for f in stack.frames[:TOP_FRAMES] if f.symbol and not (f.symbol_note or "").startswith("unreliable")]
        lock = next((i for i, f in enumerate(top) if _LOCKING.search(f.symbol)), None)
        if lock is not None and any(_RUNTIME_FRAME.search(f.symbol) for f in top[lock + 1:]):
            locks.append((top[lock].where, top[lock].text))
        found = [(i, f, name) for i, f in enumerate(top) if (name := native_gpu_call(f.symbol))]
        if not found:
            continue
        api = [c for c in found if c[2].startswith(("hip", "cl"))]
        _, frame, name = (api or found)[0]
        module = (frame.module or "").replace("\\", "/").rsplit("/", 1)[-1]
        calls.append(_Wait(f"{name} ({module})" if module else name, frame.where, frame.text,
                           lock is not None and lock < found[0][0]))
    return calls, locks


def derive(case: Case) -> None:
    """A report of a hang is one whatever the stacks say; a thread stuck in a GPU call is one only where nothing
    crashed. Signatures test these two facts instead of each weighing the reports and the stacks again."""
    reports: list[Fact] = list(case.facts.get("hang_report", []))
    for fact in case.facts.get("run_ended", []):
        if "--timeout" in fact.value:  # triage collect stopped a run that did not end by itself
            reports.append(fact)
    stack_calls, locks = _stack_waits(case)
    calls = [_Wait(f.value, f.where, f.text, False) for f in case.facts.get("hang_stack_call", [])] + stack_calls
    # two threads each waiting for a lock of the runtime are stuck even where neither call is a blocking one
    stuck = calls or len(locks) > 1
    if not reports and (not stuck or _crashed(case)):
        return
    first = reports[0] if reports else None
    if first is not None:
        case.add_fact("process_hung", "yes", first.where, first.text, 60)
    elif calls:
        case.add_fact("process_hung", "yes", calls[0].where, calls[0].text, 50)
    else:
        case.add_fact("process_hung", "yes", *locks[0], 50)
    if calls:
        case.add_fact("hung_in", calls[0].call, calls[0].where, calls[0].text, 60)
    waiting = [call for call in calls if not call.on_lock]
    if waiting:
        case.add_fact("hung_on", "gpu", waiting[0].where, waiting[0].text, 60)
    elif locks:
        case.add_fact("hung_on", "lock" if len(locks) > 1 else "one lock", *locks[0], 60)
