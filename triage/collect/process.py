"""Run one process with a deadline and bounded output, and never wait on it forever.

The process gets its own process group, so a timeout or Ctrl-C stops everything it
started (a wrapper script's children too). Output is read with ``select`` in this thread;
when the process has ended but something it started still holds the pipes open, reading
stops after a short linger instead of waiting for that straggler. Output over the limit
keeps its head and its tail (a crash is at the end, versions are at the start).
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import IO

# Seconds to read after the process ended, for output that is still in the pipes.
LINGER_S = 2.0
# Seconds between the polite signal and SIGKILL, and to wait for SIGKILL to take.
GRACE_S = 3.0
_CHUNK = 1 << 16


class Bounded:
    """Bytes kept within ``limit``: the first half and the last half, with the size of the gap."""

    def __init__(self, limit: int) -> None:
        self.limit = max(limit, 2)
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def add(self, data: bytes) -> None:
        self.total += len(data)
        room = self.limit // 2 - len(self._head)
        if room > 0:
            self._head += data[:room]
            data = data[room:]
        if data:
            self._tail += data
            keep = self.limit - self.limit // 2
            if len(self._tail) > 2 * keep:  # trim now and then, not on every chunk
                del self._tail[: len(self._tail) - keep]

    @property
    def cut(self) -> int:
        """How many bytes were left out."""
        return max(self.total - self.limit, 0)

    def value(self) -> bytes:
        """The bytes kept; when some were left out, a line in their place says how many."""
        if not self.cut:
            return bytes(self._head + self._tail)
        keep = self.limit - self.limit // 2
        note = (f"\n[triage collect: {self.cut} bytes left out here; the output was {self.total} bytes, "
                f"the first {self.limit // 2} and the last {keep} are kept]\n").encode()
        return bytes(self._head) + note + bytes(self._tail[-keep:])


@dataclass
class Captured:
    """How a process ended and what it wrote."""

    pid: int
    started: float  # time.time() when it started
    seconds: float
    returncode: int | None  # None: it could not be stopped
    stdout: Bounded
    stderr: Bounded
    stopped: str | None = None  # "timeout" or "interrupted" when we stopped it
    notes: list[str] = field(default_factory=list)


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop(proc: subprocess.Popen, first: int) -> None:
    """Signal the process group (``first``, then SIGKILL after a grace period), waiting at most
    a few seconds in all: a process stuck in the kernel may never die, and we must not hang."""
    if proc.poll() is None:
        _signal_group(proc.pid, first)
        try:
            proc.wait(GRACE_S)
        except subprocess.TimeoutExpired:
            pass
    _signal_group(proc.pid, signal.SIGKILL)  # whatever the group still runs
    try:
        proc.wait(GRACE_S)
    except subprocess.TimeoutExpired:
        pass


@contextmanager
def _ctrl_c_noted(users_command: bool) -> Iterator[list[int]]:
    """While running the user's command, Ctrl-C is noted rather than raised, so that it can
    come at any moment (even while the process starts) and collection still goes on."""
    noted: list[int] = []
    previous = None
    if users_command and threading.current_thread() is threading.main_thread():
        previous = signal.getsignal(signal.SIGINT)
        if previous is signal.SIG_IGN:  # started in the background: Ctrl-C is not ours
            previous = None
        else:
            signal.signal(signal.SIGINT, lambda number, frame: noted.append(number))
    try:
        yield noted
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def capture(
    argv: list[str],
    *,
    timeout: float | None,
    limit: int,
    env: dict[str, str] | None = None,
    stdin: int | IO | None = subprocess.DEVNULL,
    users_command: bool = False,
    on_tick: Callable[[float, int], None] | None = None,
) -> Captured:
    """Run ``argv`` to its end or its deadline. OSError if it cannot be started.

    ``users_command``: Ctrl-C stops it and returns what it wrote, and processes it leaves
    running are its own. Otherwise (a tool of ours) KeyboardInterrupt stops it and goes on
    up, and whatever it leaves running is stopped.
    """
    with _ctrl_c_noted(users_command) as ctrl_c:
        started, clock = time.time(), time.monotonic()
        proc = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, process_group=0)
        out = Captured(pid=proc.pid, started=started, seconds=0.0, returncode=None,
                       stdout=Bounded(limit), stderr=Bounded(limit))
        try:
            _pump(proc, out, clock, timeout, ctrl_c, on_tick)
        except BaseException:
            stop(proc, signal.SIGINT)
            raise
        if not users_command:
            _signal_group(proc.pid, signal.SIGKILL)
    out.returncode = proc.poll()
    if out.returncode is None:
        out.notes.append("it did not end even after SIGKILL (stuck in the kernel?)")
    out.seconds = time.monotonic() - clock
    return out


def _pump(proc: subprocess.Popen, out: Captured, clock: float, timeout: float | None, ctrl_c: list[int],
          on_tick: Callable[[float, int], None] | None) -> None:
    """Read the output until the process and its pipes are done; stop it at the deadline or on Ctrl-C."""
    buffers = {proc.stdout: out.stdout, proc.stderr: out.stderr}
    selector = selectors.DefaultSelector()
    try:
        for stream in buffers:
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, selectors.EVENT_READ)
        ended_at: float | None = None
        while True:
            if selector.get_map():
                _read(selector, buffers)
            else:  # output closed, process not yet gone (it may still be cleaning up)
                try:
                    proc.wait(0.2)
                except subprocess.TimeoutExpired:
                    pass
            now = time.monotonic()
            if on_tick:
                on_tick(now - clock, out.stdout.total + out.stderr.total)
            if ended_at is None and proc.poll() is not None:
                ended_at = now
            if ended_at is None:
                if ctrl_c or (timeout is not None and now - clock >= timeout):
                    out.stopped = "interrupted" if ctrl_c else "timeout"
                    stop(proc, signal.SIGINT if ctrl_c else signal.SIGTERM)
                    ended_at = time.monotonic()
            elif not selector.get_map():
                break
            elif now - ended_at > LINGER_S:
                out.notes.append("a process it started kept its output open after it ended; "
                                 "output after that is not captured")
                break
    finally:
        selector.close()
        for stream in buffers:
            stream.close()


def _read(selector: selectors.BaseSelector, buffers: dict) -> None:
    for key, _ in selector.select(0.2):
        try:
            data = os.read(key.fd, _CHUNK)
        except BlockingIOError:
            continue
        if data:
            buffers[key.fileobj].add(data)
        else:
            selector.unregister(key.fileobj)
