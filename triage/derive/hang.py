"""Whether the process hung, and in which GPU call: ``process_hung`` = yes and ``hung_in``.

A hang is what a user reports when nothing crashed: the kernel's hung-task report, faulthandler's
``Timeout (h:mm:ss)!`` dump, a collective watchdog's timeout, a run ``triage collect`` stopped at its
``--timeout``, or a thread dump (gdb attached, ``thread apply all bt``; WinDbg's ``~*k``; py-spy) taken of a
process that did not crash, one of whose threads waits in a blocking HIP/HSA/OpenCL call. ``hung_in`` is the GPU call a
stuck thread waits in (parsers/hang.py reads it from traces; here also from the debuggers' stacks);
without one the process hung elsewhere (CPU code, I/O, a lock), which is no GPU hang.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Case, Fact, Where
from triage.parsers.codes import CRASH_SIGNALS
from triage.parsers.hang import BACKGROUND_THREAD, TOP_FRAMES, native_gpu_call

# A thread that waits: a blocking system call or a wait function among its top frames.
_WAITING = lazy(r"(?i)wait|sleep|poll|futex|ioctl|cond_|sched_yield|\bselect\b|epoll|pthread_join")
_WAIT_FRAMES = 4


def _crashed(case: Case) -> bool:
    """A crash's dump shows waiting threads too: they did not stop the process, the crash did."""
    fault = case.fault
    return fault is not None and (fault.kind == "exception" or (fault.signal or "") in CRASH_SIGNALS)


def _stack_calls(case: Case) -> list[tuple[str, Where, str]]:
    """Each thread's blocking GPU call, from the debuggers' stacks (the crashing one excepted): the API call
    nearest the top, or the runtime's wait under it when the API frame is past the top frames."""
    found: list[tuple[str, Where, str]] = []
    for stack in case.stacks:
        if stack.crashing or stack.form not in ("gdb", "coredump", "windows"):  # windows: WinDbg's ~*k, Visual Studio
            continue
        if any(f.symbol and BACKGROUND_THREAD.search(f.symbol) for f in stack.frames):
            continue  # the runtime's own service threads always wait
        if not any(f.symbol and _WAITING.search(f.symbol) for f in stack.frames[:_WAIT_FRAMES]):
            continue  # a thread that runs (or crashed, its signal line not pasted) inside a GPU call is not stuck there
        calls = [(f, name) for f in stack.frames[:TOP_FRAMES]
                 if f.symbol and not (f.symbol_note or "").startswith("unreliable") and (name := native_gpu_call(f.symbol))]
        if not calls:
            continue
        api = [c for c in calls if c[1].startswith(("hip", "cl"))]
        frame, name = (api or calls)[0]
        module = (frame.module or "").replace("\\", "/").rsplit("/", 1)[-1]
        found.append((f"{name} ({module})" if module else name, frame.where, frame.text))
    return found


def derive(case: Case) -> None:
    """A report of a hang is one whatever the stacks say; a thread stuck in a GPU call is one only where nothing
    crashed. Signatures test these two facts instead of each weighing the reports and the stacks again."""
    reports: list[Fact] = list(case.facts.get("hang_report", []))
    for fact in case.facts.get("run_ended", []):
        if "--timeout" in fact.value:  # triage collect stopped a run that did not end by itself
            reports.append(fact)
    calls = [(f.value, f.where, f.text) for f in case.facts.get("hang_stack_call", [])] + _stack_calls(case)
    if not reports and (not calls or _crashed(case)):
        return
    first = reports[0] if reports else None
    if first is not None:
        case.add_fact("process_hung", "yes", first.where, first.text, 60)
    else:
        case.add_fact("process_hung", "yes", calls[0][1], calls[0][2], 50)
    if calls:
        value, where, text = calls[0]
        case.add_fact("hung_in", value, where, text, 60)
