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


from triage.lazy import lazy
from triage.model import Artifact, Case, LogEvent, Where
from triage.parsers.lines import Needles

# Where in a record its location is: ``:SOURCE_FILE:LINE:`` after the level (the file may be blank).
_LOCATION = r":[^\S\n]*(?P<src>(?:[\w.+-]+\.(?:cpp|hpp|cc|h|c))?)[^\S\n]*:[^\S\n]*(?P<sline>\d+)[^\S\n]*:"
# A whole record: its level follows whitespace or the start of its line, then come the location,
# an optional timestamp, optional pid and tid, and the message.
_RECORD = lazy(
    r":(?<!\S:)(?P<level>[0-6])" + _LOCATION + r"[^\S\n]?"
    r"(?:[^\S\n]*(?P<ts>\d+)[^\S\n]*us:[^\S\n]*)?"
    r"(?:(?:\[pid:[^\S\n]*(?P<pid>\d+)[^\S\n]+tid:[^\S\n]*(?P<tid>0x[0-9a-fA-F]+)[^\S\n]*\]"
    r"|(?P<pid2>\d+)[^\S\n]*:[^\S\n]*\[tid:[^\S\n]*(?P<tid2>0x[0-9a-fA-F]+)[^\S\n]*\])[^\S\n]*)?"
    r"(?P<message>.*)$"
)
_CONTINUATION = lazy(
    r"^\s*(?:(?:error|warning|note|fatal error)\s*:|ld(?:\.lld)?:|lld:|clang(?:\+\+)?(?:-\d+)?:|Error:|"
    r"or '--|LLVM ERROR:|\d+ errors? generated)"
)
_GAP_LINES = 3
# An API call's record as the runtime enters it: "hipMalloc ( 0x7ffd.., 1024 )", coloured by ANSI escapes as
# printed or as a paste shows them (^[[32m); the calls that return without a "Returned" record never count.
_CALL = lazy(r"^(?:(?:\x1b|\^\[)\[\d*m)?\s*(?P<api>(?:hip|hiprtc|hsa_)\w+)\s*\(.*\)\s*(?:(?:\x1b|\^\[)\[\d*m)?$")
_RETURNED = lazy(r"^(?:hip|hiprtc|hsa_)\w+\s*:\s*Returned\b")
_SILENT_CALLS = frozenset({"hipGetLastError", "hipPeekAtLastError", "hipGetErrorName", "hipGetErrorString",
                           "hipExtGetLastError", "hipDrvGetErrorName", "hipDrvGetErrorString"})
_TAIL_RECORDS = 200  # how many of the last records may hold a thread's last one

_HIP_VERSION = lazy(r"HIP Version:\s*(?P<v>\d+\.\d+[\w.+-]*)")
_HIP_PATH = lazy(r"HIP Library Path:\s*(?P<p>\S.*?)\s*$")
_COMGR = lazy(r"(?:Loaded COMGR library version|COMGR version:?)\s*(?P<v>\d+\.\d+(?:\.\d+)?)")
_GFX = lazy(r"Gfx Major/Minor/Stepping:\s*(?P<maj>\d+)\s*/\s*(?P<min>\d+)\s*/\s*(?P<step>\d+)")

# Every line holding a record (the rest of a record is optional), and those of levels 0-2: exact,
# so that no record is searched for again.
_RECORDS = Needles(r"(?:^|\s):[0-6]" + _LOCATION, exact=True)
_ERRORS = Needles(r"(?:^|\s):[0-2]" + _LOCATION, exact=True)
_RELAYED = Needles(_CONTINUATION, exact=True)
# A record of the API trace (level 3 or 4) that holds one of these says something: what the
# fact patterns above need, or an error code or failure the runtime reports.
_SAYING = Needles("HIP", "COMGR", "Gfx", r"hipError[A-Z]", "HSA_STATUS_ERROR", "(?i:fail)", exact=True)


def gfx_name(major: int, minor: int, stepping: int) -> str:
    """``Gfx Major/Minor/Stepping`` (all decimal) to a gfx name: 9/0/10 -> gfx90a."""
    return f"gfx{major}{minor}{stepping:x}"


def parse(artifact: Artifact, case: Case) -> None:
    """Add the records of the artifact that say something to the case, grouped into runs; claim every record.

    A runtime log at level 3 or 4 is mostly its API trace: each record is claimed as runtime
    output, but only errors and warnings (levels 0-2), the records that state a fact or report
    an error code or a failure, and the lines relayed after a record become events. Runs are
    told apart at gaps of more than ``_GAP_LINES`` lines between records and, between events,
    where the pid changes, the timestamp goes back or a second ``HIP Version`` starts a run.
    """
    lines = artifact.lines
    records = _RECORDS.lines(artifact)
    if not records:
        return
    telling = set(_ERRORS.lines(artifact)).union(_SAYING.lines(artifact))
    relayed = set(_RELAYED.lines(artifact))
    run = max((e.run for e in case.events), default=-1) + 1
    numbers: list[int] = []  # line numbers of records and relayed lines, for the claim
    last = -1  # the index of the last line read as part of a record (relayed lines included)
    owner = -1  # the index of that record
    previous: LogEvent | None = None
    run_has_version = False

    def relay(before: int) -> None:
        """The relayed lines right after the last record, up to line index ``before``: events of its level."""
        nonlocal last
        level = None
        while last + 1 < before and last + 1 in relayed:
            last += 1
            level = level or int(_RECORD.search(lines[owner]).group("level"))  # type: ignore[union-attr]
            case.events.append(LogEvent(level, "", 0, lines[last].strip(), Where(artifact.name, last + 1), run=run))
            numbers.append(last + 1)

    for index in records:
        if owner >= 0:
            if last + 1 in relayed:
                relay(index)
            if index - last > _GAP_LINES:
                run, run_has_version = run + 1, False
        owner = last = index
        numbers.append(index + 1)
        if index not in telling:
            continue
        event = _event(lines[index], Where(artifact.name, index + 1))
        is_version = "HIP Version:" in event.message and _HIP_VERSION.search(event.message) is not None
        if previous is not None and previous.run == run and (
            (event.pid is not None and previous.pid is not None and event.pid != previous.pid)
            or (event.timestamp_us is not None and previous.timestamp_us is not None
                and event.timestamp_us < previous.timestamp_us)
            or (is_version and run_has_version)
        ):
            run, run_has_version = run + 1, False
        run_has_version = run_has_version or is_version
        event.run = run
        case.events.append(event)
        previous = event
    relay(len(lines))
    _unreturned_calls(artifact, case, records)
    case.claim_lines(artifact.name, numbers, "amdlog")
    case.inputs.add("hip-log")


def _unreturned_calls(artifact: Artifact, case: Case, records: list[int]) -> None:
    """``hip_call_unreturned``: each thread's last API record in the artifact's last run, when it is a call.

    At level 3 the runtime logs a call as it enters it (``hipMemcpy ( 0x.., 4096, .. )``) and again
    as it returns (``hipMemcpy: Returned hipSuccess``); a thread whose last API record is the call was
    inside it when the log stopped (at level 4 the call's own work, ``Command (CopyHostToDevice)
    enqueued``, may follow it). Beside a crash signal, the crash happened in the runtime, in that
    call. Only the log's last records are read (the crash ends the log), back to the run's start.
    """
    decided: set[str | None] = set()
    after = len(artifact.lines)
    for index in reversed(records[-_TAIL_RECORDS:]):
        if after - index > _GAP_LINES and after < len(artifact.lines):
            break  # an earlier run
        after = index
        m = _RECORD.search(artifact.lines[index])
        tid = m and (m["tid"] or m["tid2"])
        if m is None or tid in decided:
            continue
        message = m["message"].strip()
        call = _CALL.match(message)
        if call is None and not _RETURNED.match(message):
            continue  # the runtime's own work inside a call: the call or its return comes before
        decided.add(tid)
        if call and call["api"] not in _SILENT_CALLS:
            case.add_fact("hip_call_unreturned", call["api"], Where(artifact.name, index + 1), message, 60)


def _event(text: str, where: Where) -> LogEvent:
    """The event of a record line (one the prefix search found)."""
    level, source, source_line, ts, pid, tid, pid2, tid2, message = _RECORD.search(text).groups()  # type: ignore[union-attr]
    tid = tid or tid2
    return LogEvent(level=int(level), source=source, source_line=int(source_line), message=message.strip(), where=where,
                    timestamp_us=int(ts) if ts else None, pid=int(pid or pid2) if tid else None, tid=tid)


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
