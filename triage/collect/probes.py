"""The external tools: kernel log, coredump, rocminfo, amd-smi / rocm-smi, ldd.

Each probe runs its tool with a short timeout and returns an ``Item`` for the bundle or a
``Missing`` that says why not (not installed, timed out, refused, nothing found). A missing
tool is a note, never an error: most machines lack some of them.
"""

from __future__ import annotations

import re
import shutil
import time
from dataclasses import dataclass

from triage.collect.items import Found, Item, Missing
from triage.collect.process import capture
from triage.collect.progress import size
from triage.parsers import codes

TOOL_TIMEOUT_S = 20.0
TOOL_OUTPUT_LIMIT = 8 << 20
# Kernel lines this long before the command started are still kept (the kernel's clock
# and ours are read at slightly different moments).
KERNEL_SLACK_S = 2.0
# Lines of the kernel log kept when no command ran (the system part only).
KERNEL_TAIL_LINES = 1000
# Seconds to wait for systemd-coredump to store the core of a crash that just happened.
COREDUMP_WAIT_S = 8.0
CORE_SIGNALS = frozenset(f"SIG{name}" for name in codes.CORE_SIGNALS)


@dataclass
class ToolOutput:
    """A tool's standard output, or why there is none."""

    text: str | None
    problem: str | None = None
    data: bytes = b""
    stderr: str = ""


def tool(argv: list[str], timeout: float | None = None, limit: int = TOOL_OUTPUT_LIMIT,
         env: dict[str, str] | None = None) -> ToolOutput:
    """Run one tool (``TOOL_TIMEOUT_S`` unless told otherwise); its output, or a short reason it gave none."""
    timeout = TOOL_TIMEOUT_S if timeout is None else timeout
    if shutil.which(argv[0], path=(env or {}).get("PATH")) is None:
        return ToolOutput(None, f"{argv[0]} is not installed")
    try:
        done = capture(argv, timeout=timeout, limit=limit, env=env)
    except OSError as err:
        return ToolOutput(None, f"{argv[0]} could not be run ({err.strerror or err})")
    out = done.stdout.value()
    text = out.decode("utf-8", "replace")
    stderr = done.stderr.value().decode("utf-8", "replace")
    if done.stopped == "timeout":
        return ToolOutput(None, f"{argv[0]} did not finish within {timeout:g} s", out, stderr)
    if done.returncode != 0:
        lines = stderr.strip().splitlines() or text.strip().splitlines()
        reason = lines[-1].strip() if lines else ""
        return ToolOutput(None, f"{' '.join(argv[:2])} failed (exit status {done.returncode})"
                          + (f": {reason[:200]}" if reason else ""), out, stderr)
    if done.stdout.cut:
        text += f"\n[triage collect: output cut at {limit} bytes]\n"
    return ToolOutput(text, None, out, stderr)


# -- kernel log ------------------------------------------------------------------------------

_DMESG_TIME = re.compile(r"^\[\s*(\d+\.\d+)\]")
_FAULT_OF = re.compile(r"(?:^|[\s:])(?P<comm>[^\[\]\s:]{1,15})\[(?P<pid>\d+)\]:?\s+(?:segfault at|general protection|trap )")


@dataclass(frozen=True)
class KernelMark:
    """Where the kernel log stood just before the command started: the journal's cursor, or the
    stamp of dmesg's last line. Lines after it are the run's, whatever their pid; a crash of an
    earlier process is before it even when pids have wrapped around and its pid is the higher."""

    cursor: str | None = None
    dmesg_stamp: float | None = None


_CURSOR = re.compile(r"^-- cursor: (\S+)", re.M)


def kernel_mark() -> KernelMark | None:
    """The kernel log's last entry now (taken before the command runs), or None when neither the
    journal nor dmesg can be read; then the lines are chosen by time, with a slack."""
    journal = tool(["journalctl", "-k", "-n", "1", "--show-cursor", "--no-pager", "-q", "-o", "short"])
    if m := _CURSOR.search(journal.text or ""):
        return KernelMark(cursor=m[1])
    dmesg = tool(["dmesg"])
    stamps = [float(m[1]) for line in (dmesg.text or "").splitlines() if (m := _DMESG_TIME.match(line))]
    return KernelMark(dmesg_stamp=stamps[-1] if stamps else 0.0) if dmesg.text is not None else None


def _others_faults_removed(lines: list[str], pid: int | None, comm: str | None) -> tuple[list[str], int]:
    """Drop the segfault / trap lines (and the ``Code:`` line after each) of processes that
    were running before the command started (a lower pid and another name): they cannot be
    the command or a process it started, and must not be taken for its crash."""
    kept: list[str] = []
    dropped = 0
    skip_code = False
    for line in lines:
        if skip_code and "Code:" in line:
            skip_code = False
            dropped += 1
            continue
        skip_code = False
        m = _FAULT_OF.search(line)
        if m and pid is not None and int(m["pid"]) < pid and m["comm"] != comm:
                dropped += 1
                skip_code = True
                continue
        kept.append(line)
    return kept, dropped


def kernel_log(mark: KernelMark | None, since_epoch: float | None, since_monotonic: float | None,
               pid: int | None, comm: str | None) -> Found:
    """Kernel log lines since the command started (after ``mark``, else by time), or the last
    lines of this boot when no command ran; from the journal when it has them, else from dmesg."""
    if mark is not None and mark.cursor is not None:
        journal = tool(["journalctl", "-k", "--no-pager", "-q", "-o", "short", f"--after-cursor={mark.cursor}"])
    elif since_epoch is not None:
        journal = tool(["journalctl", "-k", "--no-pager", "-q", "-o", "short",
                        "--since", f"@{int(since_epoch - KERNEL_SLACK_S)}"])
    else:
        journal = tool(["journalctl", "-k", "-b", "--no-pager", "-q", "-o", "short", "-n", str(KERNEL_TAIL_LINES)])
    journal_lines = [ln for ln in (journal.text or "").splitlines() if ln.strip() and not ln.startswith("-- ")]
    if "No journal files were found" in journal.stderr:
        journal = ToolOutput(None, "journalctl: no journal files were found")
    source, lines = "journalctl -k", journal_lines
    journal_answered = mark is not None and mark.cursor is not None and journal.text is not None
    if not journal_lines and not journal_answered:  # nothing new after the cursor is an answer too
        dmesg = tool(["dmesg"])
        if dmesg.text is not None:
            after = mark.dmesg_stamp if mark is not None and mark.dmesg_stamp is not None else (
                None if since_monotonic is None else since_monotonic - KERNEL_SLACK_S)
            source, lines = "dmesg", _dmesg_after(dmesg.text.splitlines(), after)
        elif journal.text is None:
            return Missing("kernel log", f"{journal.problem}; {dmesg.problem}")
    lines, dropped = _others_faults_removed(lines, pid, comm)
    span = "since the command started" if since_epoch is not None else f"the last {KERNEL_TAIL_LINES} lines"
    what = f"kernel log, {span} ({source}, {len(lines)} lines"
    what += f"; {dropped} lines about other processes' crashes left out)" if dropped else ")"
    header = f"# {what}\n" if not lines else ""
    return Item("kernel.log", what, header + "".join(line + "\n" for line in lines))


def _dmesg_after(lines: list[str], after: float | None) -> list[str]:
    """dmesg's lines stamped after ``after`` (its stamps are seconds since boot); the last lines
    when there is no such time or the lines carry no stamps."""
    if after is None or not any(_DMESG_TIME.match(line) for line in lines):
        return lines[-KERNEL_TAIL_LINES:]
    kept: list[str] = []
    keep = False
    for line in lines:
        if m := _DMESG_TIME.match(line):
            keep = float(m[1]) > after
        if keep:
            kept.append(line)
    return kept


# -- coredumps -------------------------------------------------------------------------------

def coredump_info(pid: int, core_pattern: str) -> Found:
    """``coredumpctl info PID``: the signal, the crashing thread's stack with modules and offsets."""
    if shutil.which("coredumpctl") is None:
        return Missing("coredump", f"coredumpctl is not installed (systemd-coredump not in use); {core_pattern}")
    deadline = time.monotonic() + COREDUMP_WAIT_S
    while True:  # systemd-coredump stores the core a moment after the crash
        info = tool(["coredumpctl", "info", "--no-pager", str(pid)])
        if info.text is not None or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    if info.text is None:
        return Missing("coredump", f"{info.problem}; {core_pattern}")
    return Item("coredump.txt", f"coredumpctl info {pid}: signal, stack of the crashing thread", info.text)


def core_file(pid: int, limit: int) -> Found:
    """``coredumpctl dump PID``: the core itself, read into memory and refused past ``limit``."""
    if shutil.which("coredumpctl") is None:
        return Missing("core file", "coredumpctl is not installed")
    dump = tool(["coredumpctl", "dump", "--no-pager", str(pid)], timeout=120, limit=limit + 1)
    if dump.text is None:
        return Missing("core file", dump.problem or "coredumpctl dump gave nothing")
    if len(dump.data) > limit:
        return Missing("core file", f"over the {size(limit)} a bundle member may hold; coredump.txt has its stack")
    return Item("core", f"the core file of process {pid} (coredumpctl dump)", dump.data)


# -- GPU tools and the program's libraries -----------------------------------------------------

def rocminfo() -> Found:
    """rocminfo: the GPU agents, their gfx names and the runtime's view of them."""
    out = tool(["rocminfo"])
    if out.text is None:
        return Missing("rocminfo", out.problem or "")
    return Item("rocminfo.txt", "rocminfo: GPU agents and their gfx targets", out.text)


def smi() -> Found:
    """amd-smi (ROCm 6+), else rocm-smi: products, driver and firmware versions, memory, use."""
    first = tool(["amd-smi", "static"])
    if first.text is not None:
        return Item("amd-smi.txt", "amd-smi static: GPU products, driver, firmware and memory", first.text)
    second = tool(["rocm-smi", "--showallinfo"])
    if second.text is not None:
        return Item("rocm-smi.txt", "rocm-smi --showallinfo: GPU products, driver, memory and use", second.text)
    return Missing("amd-smi / rocm-smi", f"{first.problem}; {second.problem}")


def ldd(program: str | None, env: dict[str, str]) -> Found:
    """ldd of the program, with the run's LD_LIBRARY_PATH: which HIP runtime it loads, and from where."""
    if program is None:
        return Missing("ldd", "the program was not found on PATH")
    out = tool(["ldd", program], env=env)
    if out.text is None:
        return Missing("ldd", out.problem or "")
    return Item("ldd.txt", f"ldd {program}: the shared libraries it loads", f"$ ldd {program}\n{out.text}")
