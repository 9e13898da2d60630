"""Run the user's failing command with the HIP runtime log on, and say how it ended.

The command's standard output and error are kept whole up to a limit (then head and tail),
and its end is written as ``exit code 139 (killed by signal 11, SIGSEGV)``, the shell's form
that triage's exit-status parser reads, so the bundle gives the same fault the program had.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass

from triage.collect.process import Captured, capture
from triage.parsers.codes import signal_name


@dataclass
class Run:
    """The command, where and how it ran, and how it ended."""

    argv: list[str]
    cwd: str
    log_level: int
    timeout: float | None
    started_monotonic: float
    captured: Captured

    @property
    def signal_number(self) -> int | None:
        code = self.captured.returncode
        return -code if code is not None and code < 0 else None

    @property
    def signal_name(self) -> str | None:
        """``SIGSEGV``; ``SIG42`` for a number without a name (parsers/codes.py names them all)."""
        number = self.signal_number
        return None if number is None else f"SIG{signal_name(number)}"

    @property
    def exit_code(self) -> int | None:
        """The status as a shell reports it: 128 + N for a death by signal N."""
        number = self.signal_number
        return 128 + number if number is not None else self.captured.returncode

    def status_line(self) -> str:
        """How the run ended, in words the exit-status parser reads (and that a person can)."""
        c = self.captured
        if c.stopped == "timeout":
            return f"ended: stopped by triage collect after the {self.timeout:g} s --timeout"
        if c.stopped == "interrupted":
            return "ended: stopped by triage collect on Ctrl-C"
        if c.returncode is None:
            return "ended: never; it did not die even after SIGKILL"
        if self.signal_number is not None:
            return f"exit code {self.exit_code} (killed by signal {self.signal_number}, {self.signal_name})"
        return f"exit code {c.returncode}"

    def describe(self, argv: list[str] | None = None) -> str:
        """The command.txt member: what ran (``argv`` in place of the command, when redacted), where,
        with which log level, and how it ended."""
        lines = [
            "$ " + subprocess.list2cmdline(self.argv if argv is None else argv),
            f"cwd: {self.cwd}",
            f"AMD_LOG_LEVEL={self.log_level}",
            "started: " + time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.captured.started)),
            f"seconds: {self.captured.seconds:.2f}",
            f"pid: {self.captured.pid}",
            self.status_line(),
        ]
        lines += [f"note: {note}" for note in self.captured.notes]
        return "\n".join(lines) + "\n"


def run_command(
    argv: list[str],
    log_level: int,
    timeout: float | None,
    output_limit: int,
    on_tick: Callable[[float, int], None] | None = None,
) -> Run:
    """Run ``argv`` with ``AMD_LOG_LEVEL``; Ctrl-C stops it and collection goes on. OSError if it cannot start.

    Standard input is passed on unless it is a terminal: the command runs in its own process
    group (so that it can be stopped as a whole), where reading the terminal would stop it.
    """
    env = dict(os.environ, AMD_LOG_LEVEL=str(log_level))
    clock = time.monotonic()
    captured = capture(argv, timeout=timeout, limit=output_limit, env=env, stdin=_stdin(),
                       users_command=True, on_tick=on_tick)
    return Run(argv=list(argv), cwd=os.getcwd(), log_level=log_level, timeout=timeout,
               started_monotonic=clock, captured=captured)


def _stdin() -> int:
    """Our standard input for the command, or nothing when it is a terminal or closed."""
    try:
        fd = sys.stdin.fileno()
        os.fstat(fd)  # still open
        return subprocess.DEVNULL if os.isatty(fd) else fd
    except (AttributeError, ValueError, OSError):
        return subprocess.DEVNULL
