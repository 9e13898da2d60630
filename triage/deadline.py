"""One time budget per analysis, checked cooperatively by every stage, in any thread.

The pipeline sets the analysis's deadline for the code it calls (a context variable: each thread,
and each analysis in it, has its own); stages call ``check(stage)`` in their loops and
``left()`` bounds a regex search. When the budget runs out a stage stops, says so in a warning
naming the stage and what it did not finish, and the report covers what was done.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from triage.lazy import dataclass

TOTAL_S = 120.0  # one analysis, every stage


class OutOfTime(Exception):
    """The analysis's time budget ran out in ``stage``."""

    def __init__(self, stage: str) -> None:
        super().__init__(stage)
        self.stage = stage


@dataclass(frozen=True)
class Deadline:
    """When an analysis's budget of ``seconds`` ends, on the ``time.monotonic()`` clock."""

    end: float  # time.monotonic()
    seconds: float

    @classmethod
    def after(cls, seconds: float) -> Deadline:
        return cls(time.monotonic() + seconds, seconds)

    def left(self) -> float:
        return self.end - time.monotonic()

    def check(self, stage: str) -> None:
        if time.monotonic() >= self.end:
            raise OutOfTime(stage)

    def warning(self, stage: str, unfinished: str) -> str:
        return f"the time budget of {self.seconds:.0f} s ran out while {stage}; not finished: {unfinished}"


_CURRENT: ContextVar[Deadline | None] = ContextVar("hip_triage_deadline", default=None)


def current() -> Deadline | None:
    return _CURRENT.get()


@contextmanager
def within(seconds: float = TOTAL_S) -> Iterator[Deadline]:
    """The deadline of the analysis running in this context: the one already set (a caller's), or a new one."""
    deadline = _CURRENT.get()
    if deadline is not None:
        yield deadline
        return
    token = _CURRENT.set(Deadline.after(seconds))
    try:
        yield _CURRENT.get()  # type: ignore[misc]
    finally:
        _CURRENT.reset(token)


@contextmanager
def narrowed(seconds: float) -> Iterator[Deadline]:
    """A shorter deadline inside the current one (one artifact's share of the parsing budget)."""
    outer = _CURRENT.get()
    mine = Deadline.after(seconds)
    if outer is not None and outer.end < mine.end:
        mine = outer
    token = _CURRENT.set(mine)
    try:
        yield mine
    finally:
        _CURRENT.reset(token)


def check(stage: str) -> None:
    """Raise OutOfTime when the current analysis's deadline has passed (no deadline: never)."""
    deadline = _CURRENT.get()
    if deadline is not None:
        deadline.check(stage)


def left(default: float = TOTAL_S) -> float:
    """Seconds left to the current deadline (at least a millisecond)."""
    deadline = _CURRENT.get()
    return max(deadline.left() if deadline is not None else default, 0.001)
