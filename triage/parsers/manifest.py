"""The ``manifest.json`` that ``triage collect`` writes into its bundle.

Recognised by content (``"format": "hip-triage-collect"``), claimed line by line as machine
output, and read for how the command ended and what could not be collected::

    "run": {..., "ended": "exit code 139 (killed by signal 11, SIGSEGV)", "exit_status": 139,
            "signal": "SEGV", "stopped_by_collect": null, ...},
    "missing": {"coredump": "coredumpctl is not installed (systemd-coredump not in use); ..."}

yields the facts ``signal`` = SEGV, ``exit_status`` = 139, ``run_ended`` and one
``collect_missing`` per item (``coredump: coredumpctl is not installed ...``), which the
report lists as not collected. A run that collect itself stopped (``--timeout``, Ctrl-C)
gives no signal: the program did not crash.

The manifest's clock dates the case (the fact ``date``, its UTC day)::

    "created": "2026-08-12T10:15:02Z", "run": {"started": "2026-08-12T10:11:12Z", ...}

gives ``date`` = 2026-08-12: the run's start, when the command crashed, else (no command was
run) when the bundle was made. It outranks the timestamps read from the logs
(parsers/timestamps.py): it is the collector's own clock, written for this.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import MAX_LINE

FORMAT = "hip-triage-collect"
_UTC = lazy(r"(?P<day>\d{4}-\d\d-\d\d)T\d\d:\d\d:\d\dZ")
_MARK = lazy(r'"format"\s*:\s*"hip-triage-collect"')
_SIGNAL = lazy(r"[A-Z][A-Z0-9]{0,11}")
_KEY = lazy(r'^\s*("(?:[^"\\]|\\.)*")\s*:')
MAX_CHARS = 4 << 20
# The kinds of input each item of a bundle is (the report asks only for kinds a case lacks). The
# command's own output was captured with AMD_LOG_LEVEL set: it is the runtime's log, whatever it says.
HOLDS = {"command.txt": ("fault",), "stderr.txt": ("hip-log",), "kernel.log": ("kernel-log",),
         "coredump.txt": ("stack", "fault"), "core": ("stack", "fault"), "rocminfo.txt": ("environment",),
         "amd-smi.txt": ("environment",), "rocm-smi.txt": ("environment",), "system.txt": ("environment",),
         "environment.txt": ("environment",), "ldd.txt": ("environment",), "component/listing.txt": ("listing",)}
MAX_MISSING = 100


def _keys(lines: list[str], start: int) -> dict[str, int]:
    """Each JSON key that begins a line, at or after line index ``start`` -> the first such index."""
    import json  # only for a manifest: a triage of logs imports no JSON

    found: dict[str, int] = {}
    for index in range(start, len(lines)):
        line = lines[index]
        if len(line) > MAX_LINE or not (m := _KEY.match(line)):
            continue
        try:
            key = json.loads(m[1])
        except ValueError:
            continue
        found.setdefault(key, index)
    return found


def parse(artifact: Artifact, case: Case) -> None:
    text = artifact.text
    if not text.lstrip().startswith("{") or not _MARK.search(text[:4096]):
        return
    if len(text) > MAX_CHARS:
        case.warnings.append(f"{artifact.name}: a triage collect manifest over {MAX_CHARS >> 20} MiB; not read")
        return
    import json  # only for a manifest: a triage of logs imports no JSON

    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as err:
        case.warnings.append(f"{artifact.name}: a triage collect manifest that is not valid JSON ({err}); not read")
        return
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        return
    lines = artifact.lines
    for number in range(1, len(lines) + 1):
        case.claim(Where(artifact.name, number), "collect-manifest", "collect-manifest")
    blocks = _keys(lines, 0)
    run = data.get("run")
    if isinstance(run, dict):
        _run(run, artifact, case, blocks.get("run", 0))
        start = blocks.get("run", 0)
        _date(run.get("started"), artifact, case, _keys(lines, start).get("started", start), 60)
    _date(data.get("created"), artifact, case, blocks.get("created", 0), 50)
    missing = data.get("missing")
    if isinstance(missing, dict):
        _missing(missing, artifact, case, blocks.get("missing", 0))
    collected = data.get("collected")
    if isinstance(collected, dict):
        for name in collected:  # what the bundle holds is never asked for again, found in it or not
            case.inputs.update(HOLDS.get(str(name), ()))


def _quote(artifact: Artifact, index: int) -> tuple[Where, str]:
    index = min(max(index, 0), max(len(artifact.lines) - 1, 0))
    return Where(artifact.name, index + 1), artifact.lines[index].strip() if artifact.lines else ""


def _run(run: dict, artifact: Artifact, case: Case, start: int) -> None:
    keys = _keys(artifact.lines, start)
    ended = run.get("ended")
    if isinstance(ended, str):
        case.add_fact("run_ended", ended[:300], *_quote(artifact, keys.get("ended", start)), 60)
    if run.get("stopped_by_collect") is not None:
        return
    signal, status = run.get("signal"), run.get("exit_status")
    if isinstance(signal, str) and _SIGNAL.fullmatch(signal):
        case.add_fact("signal", signal, *_quote(artifact, keys.get("signal", start)), 60)
        case.inputs.add("fault")
    if isinstance(status, int) and not isinstance(status, bool):
        case.add_fact("exit_status", str(status), *_quote(artifact, keys.get("exit_status", start)), 60)
        case.inputs.add("fault")


def _date(stamp: object, artifact: Artifact, case: Case, index: int, score: int) -> None:
    """A manifest time (``2026-08-12T10:11:12Z``, as collect writes it) as the fact ``date``, when it is a real day."""
    import datetime  # only for a manifest's time

    if not isinstance(stamp, str) or not (m := _UTC.fullmatch(stamp)):
        return
    try:
        day = datetime.date.fromisoformat(m["day"])
    except ValueError:
        return
    case.add_fact("date", day.isoformat(), *_quote(artifact, index), score)


def _missing(missing: dict, artifact: Artifact, case: Case, start: int) -> None:
    keys = _keys(artifact.lines, start)
    for count, (item, why) in enumerate(missing.items()):
        if count >= MAX_MISSING:
            break
        if isinstance(why, str):
            case.add_fact("collect_missing", f"{item[:100]}: {why[:500]}", *_quote(artifact, keys.get(item, start)), 50)
