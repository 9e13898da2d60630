"""Parse artifacts into one Case: each format's parser finds its own lines anywhere in the input.

A parser that fails on some input becomes a warning in the report; the others still run.
Binary artifacts (``Artifact.data``) are for the binary parsers; one that no parser claims
(with ``case.claim(Where(name, 0), kind)``) is reported as unread.

Parsing has a time budget: ``ARTIFACT_BUDGET_S`` per artifact and ``TOTAL_BUDGET_S`` in all.
Where the platform allows (a main thread with ``SIGALRM``) a parser still running when the
budget ends is interrupted; elsewhere the budget is checked between parsers. Either way the
report says what was not parsed.
"""

from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

from triage.model import Artifact, Case, Where
from triage.parsers import (amdgpu, amdlog, appinfo, backtrace, buildtargets, elfcore, elflib, envfacts, exitstatus, fatbin, fault, kernel, ldd, lines,
                            listing, manifest, minidump, offload, strace, timestamps, vendor, versions, windows)

# envfacts runs last: it reads which lines the other parsers claimed as machine output.
LINE_PARSERS = (amdlog, backtrace, kernel, amdgpu, windows, exitstatus, strace, offload, listing, ldd, minidump, elfcore, elflib, fatbin,
                manifest, appinfo, timestamps, versions, vendor, buildtargets, envfacts)
# fatbin.finish reads the GPU and the runtime kind that envfacts.finish settles.
FINISHERS = (amdlog.finish, envfacts.finish, fatbin.finish, fault.merge)

# Seconds one artifact may take in all parsers; the parsers not yet run on it are skipped.
ARTIFACT_BUDGET_S = 20.0
# Seconds all artifacts may take together; artifacts past it are not parsed.
TOTAL_BUDGET_S = 120.0
# Seconds each finisher may take.
FINISHER_BUDGET_S = 20.0


class _Overtime(BaseException):
    """Raised by the alarm inside a parser that overran its budget (a BaseException, so that a
    parser's own ``except Exception`` cannot swallow it)."""


@contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """Interrupt the body with ``_Overtime`` after ``seconds``, where signals allow it."""
    if not hasattr(signal, "setitimer") or threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_alarm(signum: int, frame: object) -> None:
        raise _Overtime()

    try:
        previous = signal.signal(signal.SIGALRM, on_alarm)
    except (ValueError, OSError):  # signals unavailable here: check between parsers only
        yield
        return
    try:
        signal.setitimer(signal.ITIMER_REAL, max(seconds, 0.001))
        yield
    finally:
        try:
            signal.setitimer(signal.ITIMER_REAL, 0)
        finally:
            signal.signal(signal.SIGALRM, previous)


def _name(parser: object) -> str:
    return parser.__name__.rsplit(".", 1)[-1]  # type: ignore[attr-defined]


def _parse_one(artifact: Artifact, case: Case, deadline: float) -> None:
    """Run every line parser on the artifact under one alarm for its budget (one per parser cost
    more than most parsers take on a plain log)."""
    started = time.monotonic()
    budget_end = min(started + ARTIFACT_BUDGET_S, deadline)
    index = 0
    try:
        with _deadline(budget_end - started):
            lines.scan(artifact)  # the passes over the text for every parser's needles
            for index, parser in enumerate(LINE_PARSERS):
                if time.monotonic() >= budget_end:  # where no alarm interrupts a parser
                    raise _Overtime()
                try:
                    parser.parse(artifact, case)
                except Exception as err:  # a bad input must not stop the triage
                    case.warnings.append(
                        f"{artifact.name}: the {_name(parser)} parser failed ({type(err).__name__}: {err}); "
                        "the rest of the input was still read"
                    )
    except _Overtime:
        stopped = [_name(p) for p in LINE_PARSERS[index:]]
        case.warnings.append(
            f"{artifact.name}: parsing stopped after {time.monotonic() - started:.0f} s, over the time budget "
            f"({ARTIFACT_BUDGET_S:.0f} s a file, {TOTAL_BUDGET_S:.0f} s in all); not finished: {', '.join(stopped)}"
        )


def parse(artifacts: list[Artifact], warnings: list[str] | None = None) -> Case:
    case = Case(artifacts=artifacts, warnings=list(warnings or []))
    deadline = time.monotonic() + TOTAL_BUDGET_S
    for number, artifact in enumerate(artifacts):
        if time.monotonic() >= deadline:
            case.warnings.append(
                f"{artifact.name} and {len(artifacts) - number - 1} more files: not parsed, the "
                f"{TOTAL_BUDGET_S:.0f} s time budget was spent on the files before them"
            )
            break
        _parse_one(artifact, case, deadline)
    for artifact in artifacts:
        if artifact.data is not None and case.kind_of(Where(artifact.name, 0)) is None:
            case.warnings.append(
                f"{artifact.name}: binary file ({artifact.size} bytes) of a kind this version does not read; "
                "send text logs, stacks and listings, or a minidump or core file"
            )
    for finish in FINISHERS:
        try:
            with _deadline(FINISHER_BUDGET_S):
                finish(case)
        except _Overtime:
            case.warnings.append(f"{finish.__module__}.{finish.__name__} stopped after {FINISHER_BUDGET_S:.0f} s")
        except Exception as err:
            case.warnings.append(f"{finish.__module__}.{finish.__name__} failed ({type(err).__name__}: {err})")
    return case
