"""AMD_LOG_LEVEL output of the HIP runtime (ROCclr), in every prefix shape seen in the field.

Examples (one record each)::

    :3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1
    :3:rocdevice.cpp            :1611: 3458279651 us: [pid:4711  tid:0x7f3c0e7fc700] Gfx Major/Minor/Stepping: 12/0/1
    :1:rocdevice.cpp            :730 : 2913837464 us: 4711 : [tid:0x7f3c] Couldn't create blit kernels!
    :1: paldevice.cpp :2777: ...
    :1:                         :0   : 0420978410 us: 4828 : [tid:0x7f9a608d9880] hsa_init failed.

A message may be followed by unprefixed lines the runtime relays from COMGR/clang/lld
(``error: ...``, ``ld.lld: error: ...``, ``Error: Creating the executable from LLVM IRs
failed.``): they are kept as continuation records of the same level.

Records are grouped into runs (one process each); the failing run is the one with the most
level-1 errors, so a pasted log of a later run that worked does not supply the facts.
"""

from __future__ import annotations

import re

from triage.model import Artifact, Case, LogEvent, Where
from triage.parsers.lines import records

# A record, found in the whole text (lines.records): its level follows whitespace or the start of
# its line, then come an optional timestamp, optional pid and tid, and the message. No part of it
# crosses a newline, so each line holds at most one, as if searched alone.
_RECORD = re.compile(
    r":(?<=\s:)(?P<level>[0-6]):[^\S\n]*(?P<src>(?:[\w.+-]+\.(?:cpp|hpp|cc|h|c))?)[^\S\n]*:[^\S\n]*(?P<sline>\d+)"
    r"[^\S\n]*:[^\S\n]?"
    r"(?:[^\S\n]*(?P<ts>\d+)[^\S\n]*us:[^\S\n]*)?"
    r"(?:(?:\[pid:[^\S\n]*(?P<pid>\d+)[^\S\n]+tid:[^\S\n]*(?P<tid>0x[0-9a-fA-F]+)[^\S\n]*\]"
    r"|(?P<pid2>\d+)[^\S\n]*:[^\S\n]*\[tid:[^\S\n]*(?P<tid2>0x[0-9a-fA-F]+)[^\S\n]*\])[^\S\n]*)?"
    r"(?P<message>.*)$",
    re.M,
)
_CONTINUATION = re.compile(
    r"^\s*(?:(?:error|warning|note|fatal error)\s*:|ld(?:\.lld)?:|lld:|clang(?:\+\+)?(?:-\d+)?:|Error:|"
    r"or '--|LLVM ERROR:|\d+ errors? generated)"
)
_GAP_LINES = 3

_HIP_VERSION = re.compile(r"HIP Version:\s*(?P<v>\d+\.\d+[\w.+-]*)")
_HIP_PATH = re.compile(r"HIP Library Path:\s*(?P<p>\S.*?)\s*$")
_COMGR = re.compile(r"(?:Loaded COMGR library version|COMGR version:?)\s*(?P<v>\d+\.\d+(?:\.\d+)?)")
_GFX = re.compile(r"Gfx Major/Minor/Stepping:\s*(?P<maj>\d+)\s*/\s*(?P<min>\d+)\s*/\s*(?P<step>\d+)")


def gfx_name(major: int, minor: int, stepping: int) -> str:
    """``Gfx Major/Minor/Stepping`` (all decimal) to a gfx name: 9/0/10 -> gfx90a."""
    return f"gfx{major}{minor}{stepping:x}"


def parse(artifact: Artifact, case: Case) -> None:
    """Add every runtime log record of the artifact to the case, grouped into runs."""
    run = max((e.run for e in case.events), default=-1) + 1
    last_line = 0  # the number of the last line read as part of a record
    last_event: LogEvent | None = None
    run_has_version = False
    lines = artifact.lines

    def continuations(before: int) -> None:
        """The relayed lines right after the last record, up to line index ``before``."""
        nonlocal last_line
        while last_event is not None and last_line < before and _CONTINUATION.match(lines[last_line]):
            where = Where(artifact.name, last_line + 1)
            case.events.append(LogEvent(last_event.level, "", 0, lines[last_line].strip(), where, run=run))
            case.claim(where, "amdlog")
            last_line += 1

    for index, m in records(lines, _RECORD):
        if last_line < index:
            continuations(index)
        number = index + 1
        where = Where(artifact.name, number)
        level, source, source_line, ts, pid, tid, pid2, tid2, message = m.groups()
        timestamp = int(ts) if ts else None
        tid = tid or tid2
        pid = int(pid or pid2) if tid else None
        is_version = "HIP Version:" in message and _HIP_VERSION.search(message) is not None
        if last_event is not None and (
            number - last_line > _GAP_LINES
            or (pid is not None and last_event.pid is not None and pid != last_event.pid)
            or (timestamp is not None and last_event.timestamp_us is not None and timestamp < last_event.timestamp_us)
            or (is_version and run_has_version)
        ):
            run += 1
            run_has_version = False
        run_has_version = run_has_version or is_version
        event = LogEvent(
            level=int(level),
            source=source,
            source_line=int(source_line),
            message=message.strip(),
            where=where,
            timestamp_us=timestamp,
            pid=pid,
            tid=tid,
            run=run,
        )
        case.events.append(event)
        case.claim(where, "amdlog", "hip-log")
        last_event, last_line = event, number
    continuations(len(lines))


def finish(case: Case) -> None:
    """Pick the failing run and read the runtime's facts, preferring that run."""
    runs: dict[int, int] = {}
    for event in case.events:
        runs.setdefault(event.run, 0)
        if event.level == 1:
            runs[event.run] += 1
    if not runs:
        return
    case.failing_run = max(runs, key=lambda r: (runs[r], r))
    seen_gfx: set[int] = set()
    telling = _telling(case.events)
    for event in telling:
        failing = event.run == case.failing_run
        score = 100 if failing else 40
        msg = event.message
        if m := _HIP_VERSION.search(msg):
            case.add_fact("hip_version", m["v"], event.where, msg, score)
        elif m := _HIP_PATH.search(msg):
            case.add_fact("hip_library_path", m["p"], event.where, msg, score)
        elif m := _COMGR.search(msg):
            case.add_fact("comgr_version", m["v"], event.where, msg, score)
        elif m := _GFX.search(msg):
            name = gfx_name(int(m["maj"]), int(m["min"]), int(m["step"]))
            first_in_run = event.run not in seen_gfx
            seen_gfx.add(event.run)
            case.add_fact("gfx_arch", name, event.where, msg, score if first_in_run else score - 10)
            case.add_fact("gfx_archs", name, event.where, msg, score)
    _system_runtime_facts(case, telling)


def _telling(events: list[LogEvent]) -> list[LogEvent]:
    """The records that may state a fact: each fact pattern needs "HIP", "COMGR" or "Gfx"."""
    return [e for e in events if "HIP" in e.message or "COMGR" in e.message or "Gfx" in e.message]


def _system_runtime_facts(case: Case, telling: list[LogEvent]) -> None:
    """A run that loaded an installed runtime (not the failing one) tells the system HIP version."""
    paths = {e.run: _HIP_PATH.search(e.message)["p"] for e in telling if _HIP_PATH.search(e.message)}
    for event in telling:
        if event.run == case.failing_run:
            continue
        path = paths.get(event.run, "")
        if m := _HIP_VERSION.search(event.message):
            if not path or is_system_path(path):
                case.add_fact("hip_version_system", m["v"], event.where, event.message, 60)
        elif m := _COMGR.search(event.message):
            case.add_fact("comgr_version_system", m["v"], event.where, event.message, 60)


def is_system_path(path: str) -> bool:
    """True for a runtime installed with the OS or ROCm, false for one shipped inside an app."""
    p = path.replace("\\", "/").lower()
    return p.startswith(("/opt/rocm", "/usr/", "/lib/", "/lib64/", "c:/windows/")) or "/system32/" in p
