"""Kernel log lines about a user process that faulted, with any dmesg or journal prefix.

Examples::

    kernel: strata[4711]: segfault at 8 ip 00007f3c2a4b71c9 sp 00007ffd5e1c9e40 error 6 in libamdhip64.so.7[4b61c9,7f3c2a000000+5f3000] likely on CPU 3 (core 3, socket 0)
    [  412.034511] app[123]: segfault at 0 ip 00007f44be1e61c9 sp 00007ffd1c2e5a10 error 4 in libX.so[7f44bde00000+3f3000]
    Nov 29 21:03:11 host kernel: traps: app[99] general protection fault ip:7f1c sp:7ffd error:0 in libY.so[7f1c0000+1000]

The bracket after the library has two shapes: ``[OFFSET,VMSTART+SIZE]`` (newer kernels;
OFFSET is the file offset of the faulting instruction) and ``[VMSTART+SIZE]`` (older ones;
VMSTART is the start of the executable mapping, not the load base). They are told apart by
shape. ``comm`` is cut by the kernel at 15 characters.
"""

from __future__ import annotations


from triage.lazy import lazy
from triage.model import Artifact, Case, KernelFault, Where
from triage.parsers.lines import Needles

_SEGFAULT = lazy(
    r"(?<![^\s:])(?P<comm>[^\[\]\n:]{1,15}?)\[(?P<pid>[^\]\s]{0,12})\]:?\s+"
    r"(?:segfault at (?P<addr>[0-9a-fA-F]+|\.{3}|<[\w ]+>) ip (?P<ip>\S+)(?: sp \S+)? error (?P<err>\d+)"
    r"|general protection fault ip:(?P<gip>\S+)(?: sp:\S+)? error:(?P<gerr>\d+))"
    r"(?: in (?P<mod>[^\[\s]+)\[(?P<loc>[^\]]*)\])?"
)


def _hex(text: str | None) -> int | None:
    try:
        return int(text, 16) if text else None
    except ValueError:
        return None


def access_from_error(error: int | None) -> str | None:
    """The x86 page-fault error code: bit 4 instruction fetch, bit 1 write, else read."""
    if error is None:
        return None
    if error & 0x10:
        return "execute"
    return "write" if error & 0x2 else "read"

_NEEDLES = Needles("segfault at", "general protection")


def parse(artifact: Artifact, case: Case) -> None:
    """Add each segfault / general-protection line as a KernelFault."""
    lines = artifact.lines
    for index in _NEEDLES.lines(artifact):
        number, text = index + 1, lines[index]
        m = _SEGFAULT.search(text)
        if m is None:
            continue
        where = Where(artifact.name, number)
        file_offset = vm_start = vm_size = None
        loc = m["loc"] or ""
        head, _, mapping = loc.rpartition(",") if "," in loc else ("", "", loc)
        if head:
            file_offset = _hex(head)
        if "+" in mapping:
            start, _, size = mapping.partition("+")
            vm_start, vm_size = _hex(start), _hex(size)
        pid = m["pid"]
        fault = KernelFault(
            where=where,
            text=text.strip(),
            comm=m["comm"].strip(),
            pid=int(pid) if pid.isdigit() else None,
            address=_hex(m["addr"]) if m["addr"] else None,  # None where the user elided it ("segfault at ...")
            ip=_hex(m["ip"] or m["gip"]),
            error=int(m["err"] or m["gerr"]),
            module=m["mod"],
            file_offset=file_offset,
            vm_start=vm_start,
            vm_size=vm_size,
        )
        case.kernel_faults.append(fault)
        case.claim(where, "kernel", "kernel-log")
        case.add_fact("signal", "SEGV", where, text, 70)
