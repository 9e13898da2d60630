"""Read past the prefixes that log collectors put before every line of a program's output.

Users rarely paste a program's output bare: journald adds ``Mar 03 12:00:01 host ollama[4242]: ``,
``docker compose logs`` adds ``ollama-1  | ``, ``kubectl logs --prefix`` adds ``[pod/x/y] ``, CI
and container runtimes add an ISO timestamp, Python's logging adds ``... - name - ERROR - ``, and
a quoted reply adds ``> ``. The records under them (a HIP runtime log line, a gdb frame, a Windows
stack line, an ``ls -l`` row) are the same, and parsers and signatures that read a record from
its first character must see them as the program printed them.

``unwrap`` returns the artifact with those prefixes removed (line numbers unchanged: only the
start of a line is cut, lines are never joined or dropped; the lines as given stay with it, and
evidence is quoted from them, as the user sent it), or the artifact itself when no line carries
one, and the first line that carried a journald or syslog prefix: the prefix itself says
the system is Linux, which parse() keeps as a fact. Kernel lines keep their prefix: the kernel-log parsers read journald's and syslog's
forms themselves. The timestamps parser reads the original text (the prefix often is the clock).
"""

from __future__ import annotations

import re
from collections import Counter

from triage.lazy import lazy
from triage.model import Artifact

_CLOCK = r"(?:\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)"
# journald / syslog: a clock, the host, the program and its pid (syslog's clock: the pid may be absent).
_JOURNAL = lazy(r"(?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d [\w.-]+ (?P<ident>[\w.@()/-]{1,64}?)(?:\[\d{1,10}\])?"
                      r"|" + _CLOCK + r" [\w.-]+ (?P<ident2>[\w.@()/-]{1,64}?)\[\d{1,10}\]): ")
# A kernel line in journald's or syslog's form: left whole for the kernel-log parsers.
_KERNEL = lazy(r"(?:[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d|" + _CLOCK + r") [\w.-]+ kernel: ")
# One of these, each anchored at the start of what is left of the line.
_SIMPLE = (
    re.compile(r"\[pod/[^\]\s]{1,200}\] "),  # kubectl logs --prefix
    re.compile(r"\[?" + _CLOCK + r"\]?:? +"),  # CI runners, containers, ComfyUI's [clock]
    re.compile(r"-? ?[\w.]{1,64} - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "),  # Python logging's usual format, after its clock
    re.compile(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{1,64}:"),  # Python logging's default (basicConfig) format
    re.compile(r"(?:> )+"),  # a quoted reply (not Python's >>> prompt: it has no space after the first >)
)
# docker compose: "service-1  | ": taken only for a service name on several lines of the file.
_COMPOSE = lazy(r"(?P<service>[\w.-]{1,64}?)(?:[-_]\d{1,3})? *\| ")
_COMPOSE_MIN_LINES = 2
# Any line that may start with a prefix: most logs have none, and one search of the text says so.
_ANY = lazy(r"^(?:[A-Z][a-z]{2} +\d|\[?\d{4}-\d\d-\d\d[T ]|\[pod/|> |-? ?[\w.]{1,64} - [A-Z]|[\w.-]{1,64} *\| "
            r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{1,64}:)",
                  re.MULTILINE)
_ROUNDS = 3  # a quoted journal line carries two prefixes, a quoted timestamped journal line three


def _cut(line: str, services: frozenset[str]) -> tuple[int, bool]:
    """How many leading characters of the line are collector prefixes, and whether one was journald's."""
    start, journal = 0, False
    for _ in range(_ROUNDS):
        if _KERNEL.match(line, start):
            return start, True
        found = _JOURNAL.match(line, start)
        if found:
            start, journal = found.end(), True
            continue
        found = _COMPOSE.match(line, start)
        if found and found["service"] in services:
            start = found.end()
            continue
        for pattern in _SIMPLE:
            found = pattern.match(line, start)
            if found and found.end() < len(line):
                start = found.end()
                break
        else:
            return start, journal
    return start, journal


def _services(lines: list[str]) -> frozenset[str]:
    """Docker compose service names that prefix several lines (a table's first column does not)."""
    counts = Counter(m["service"] for m in map(_COMPOSE.match, lines) if m)
    return frozenset(name for name, n in counts.items() if n >= _COMPOSE_MIN_LINES and not name[:1].isdigit())


def unwrap(artifact: Artifact) -> tuple[Artifact, int | None]:
    """The artifact as the programs printed it (the artifact itself when nothing was cut), and the
    index of the first line with a journald or syslog prefix (None when there is none)."""
    if artifact.data is not None or not artifact.text or _ANY.search(artifact.text) is None:
        return artifact, None
    services = _services(artifact.lines)
    cuts = [_cut(line, services) for line in artifact.lines]
    journal = next((i for i, (_, j) in enumerate(cuts) if j), None)
    if not any(n for n, _ in cuts):
        return artifact, journal
    lines = [line[n:] for line, (n, _) in zip(artifact.lines, cuts)]
    text = "\n".join(lines) + ("\n" if artifact.text.endswith("\n") else "")
    return Artifact(name=artifact.name, text=text, size=artifact.size, lines=lines, given=artifact.lines), journal
