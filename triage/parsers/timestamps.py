"""The day the crash happened, from machine timestamps that carry a year: the fact ``date`` (``YYYY-MM-DD``).

Real lines (../shared/realworld) and the date each gives::

    time=2024-05-10T22:52:42.838-04:00 level=ERROR source=sched.go:339 msg="error loading llama server"  =>  2024-05-10
    2025-05-07 23:19:25.512296080 [E:onnxruntime:Default, provider_bridge_ort.cc:2036 TryGetProviderInfo_CUDA]  =>  2025-05-07
    [Mon Sep 25 20:37:11 2023] python3[15122]: segfault at 20 ip 00007f44bdeb40a7 sp 00007f417aa34010 error 4  =>  2023-09-25
    Date/Time: 2017-08-30, 08:04:27  =>  2017-08-30
    [GIN] 2024/05/10 - 22:52:42 | 500 |    2.7650401s |       127.0.0.1 | POST     "/api/chat"  =>  2024-05-10

The forms: ISO 8601 with a time (``2026-08-12T10:11:12``, ``2026-08-12 10:11:12``, journalctl's
``-o short-iso`` and ``short-full``), Go's log (``2024/05/10 22:52:42``) and ctime with a year
(``dmesg -T``'s ``[Tue Dec  1 07:52:48 2026]``, ``date``'s ``Tue Dec  1 07:52:48 UTC 2026``).
A date without a time (``released 2026-08-12``) is a date someone wrote, not a log's clock, and
a line about building or releasing (``built 2024-07-16 06:28:42``, a VBIOS ``BUILD_DATE``) dates
the software, not the crash: neither is read. Days are as printed, in the writer's time zone.

Which time wins: the first one on a line that tells of the failure (an error word: error,
fail, fault, abort, crash, panic, killed, terminated, exception), else the first one in the
first 200 lines of a file, in input order. The first is the one that does not move when a
user pastes more lines after the crash, and the failure's own line is the crash's time rather
than the start of a long-running server's log. A ``triage collect`` manifest's own time (parsers/manifest.py)
outranks both.
"""

from __future__ import annotations

from collections.abc import Sequence

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable
from triage.scan.scanner import lines_matching

_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()
_ISO = lazy(r"(?<!\d)(?P<y>\d{4})-(?P<m>\d\d)-(?P<d>\d\d)(?:T|,?[ \t]+)(?P<H>\d\d):(?P<M>\d\d)")
_GO = lazy(r"(?<!\d)(?P<y>\d{4})/(?P<m>\d\d)/(?P<d>\d\d)(?:[ \t]+-)?[ \t]+(?P<H>\d\d):(?P<M>\d\d)")
_CTIME = lazy(
    r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun),?[ \t]+(?P<mon>" + "|".join(_MONTHS) + r")[ \t]+(?P<d>\d{1,2})[ \t]+"
    r"(?P<H>\d\d):(?P<M>\d\d):\d\d(?:[ \t]+[A-Z]{2,5}(?:[+-]\d{1,4})?)?[ \t]+(?P<y>\d{4})\b"
)
_SOFTWARE_DATE = lazy(
    r"(?i:\b(?:built|compiled|released|copyright)\b|\b(?:build|release)(?:[ _-]?(?:date|time))?\s*[:=])|\(c\)"
)
_FAILURE_WORDS = r"(?i:error|fail|fault|abort|crash|panic|killed|terminated|exception)"

# A log's clock shows on its first lines, and on the failure's: the timestamps are searched there
# only (their patterns are digits and separators, slow to look for in every line of a long log).
_FORMS = (_ISO, _GO, _CTIME)
_STAMPS = Needles(*_FORMS, head=True)
_FAILING = Needles(_FAILURE_WORDS, exact=True)  # which lines tell of the failure: exactly those

# A timestamp on the failure's line outranks one elsewhere; the collect manifest's time outranks both.
_CRASH_LINE_SCORE = 40
_OTHER_LINE_SCORE = 30


def parse(artifact: Artifact, case: Case) -> None:
    """The first timestamp of the artifact's first lines, and the first on a line telling of the failure."""
    first = _first(artifact, case, _STAMPS.lines(artifact))
    if first:
        case.add_fact("date", first[1], first[0], artifact.lines[first[0].line - 1].strip(), _OTHER_LINE_SCORE)
    failing = _FAILING.lines(artifact)
    text = "\n".join(artifact.lines[i] for i in failing)  # searched as one text: a long log has many such lines
    crash = _first(artifact, case, [failing[k] for k in sorted(set().union(*(lines_matching(p, text) for p in _FORMS)))])
    if crash:
        case.add_fact("date", crash[1], crash[0], artifact.lines[crash[0].line - 1].strip(), _CRASH_LINE_SCORE)


def _first(artifact: Artifact, case: Case, indexes: Sequence[int]) -> tuple[Where, str] | None:
    """Where and what day the first of these lines gives, skipping the manifest and software dates."""
    for index in indexes:
        text = artifact.lines[index]
        where = Where(artifact.name, index + 1)
        if not readable(text) or case.kind_of(where) == "collect-manifest" or _SOFTWARE_DATE.search(text):
            continue
        if day := read_day(text):
            return where, day
    return None


def read_day(text: str) -> str | None:
    """The ISO day of the first real timestamp (a year, a month, a day and a time) in ``text``."""
    import datetime  # only for a line that holds a timestamp

    for m in sorted((m for pattern in (_ISO, _GO, _CTIME) for m in pattern.finditer(text)), key=lambda m: m.start()):
        month = _MONTHS.index(m["mon"]) + 1 if "mon" in m.groupdict() else int(m["m"])
        try:
            day = datetime.date(int(m["y"]), month, int(m["d"]))
        except ValueError:
            continue
        if 1990 <= day.year <= 2100 and int(m["H"]) < 24 and int(m["M"]) < 60:
            return day.isoformat()
    return None
