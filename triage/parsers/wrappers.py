"""Read past the prefixes that log collectors put before every line of a program's output.

Users rarely paste a program's output bare: journald adds ``Mar 03 12:00:01 host ollama[4242]: ``,
``docker compose logs`` adds ``ollama-1  | ``, ``kubectl logs --prefix`` adds ``[pod/x/y] ``, CI
and container runtimes add an ISO timestamp (a container runtime's log file ``... stderr F ``, or
Docker's one JSON object a line, ``{"log": ...}``), Ray and vLLM tag a worker's lines
``(RayWorkerWrapper pid=4711) ``, ``srun --label`` ``0: ``, ``mpirun --tag-output``
``[1,0]<stderr>:``, pm2 ``0|ollama  | ``, Python's logging adds ``... - name - ERROR - ``, a failed
Nix build shows its last log lines under ``       > ``, and a quoted reply adds ``> ``. The records under them (a HIP runtime log line, a gdb frame, a Windows
stack line, an ``ls -l`` row) are the same, and parsers and signatures that read a record from
its first character must see them as the program printed them.

A pasted file may also carry a viewer's or ``grep -n``'s line numbers on every line, or come from a
page's HTML source or an e-mail with ``&lt;`` for ``<`` and ``<br />`` at each line's end, or through a
chat or mail program that made its spaces no-break ones and its quotes curly: the numbers are cut, the
entities decoded and the characters made plain the same way.

A paste hard-wrapped at a fixed width by a terminal or a mail editor has its records joined before
any of this (parsers/hardwrap.py), each on the line it started on, so that line numbers and quotes
stay the user's.

``unwrap`` returns the artifact with those prefixes removed (line numbers unchanged: only the
start of a line is cut (or its entities decoded), lines are never joined or dropped; the lines as given stay with it, and
evidence is quoted from them, as the user sent it), or the artifact itself when no line carries
one, and the first line that carried a journald or syslog prefix: the prefix itself says
the system is Linux, which parse() keeps as a fact. Kernel lines keep their prefix: the kernel-log parsers read journald's and syslog's
forms themselves. The timestamps parser reads the original text (the prefix often is the clock).
"""

from __future__ import annotations

import re
from collections import Counter
from itertools import repeat

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
    lazy(r"\[pod/[^\]\s]{1,200}\] "),  # kubectl logs --prefix
    lazy(_CLOCK + r" (?:stdout|stderr) [FP] "),  # a container runtime's CRI log file (kubelet's /var/log/pods)
    lazy(r"\[?" + _CLOCK + r"\]?:? +"),  # CI runners, containers, ComfyUI's [clock]
    lazy(r"-? ?[\w.]{1,64} - (?:DEBUG|INFO|WARNING|ERROR|CRITICAL) - "),  # Python logging's usual format, after its clock
    lazy(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]{1,64}:"),  # Python logging's default (basicConfig) format
    # pytest's live log ("%(levelname)-8s %(name)s:%(filename)s:%(lineno)d "): a test's captured command output
    lazy(r"(?:DEBUG|INFO|WARNING|ERROR|CRITICAL) +[\w.]{1,64}:[\w.-]{1,64}\.py:\d{1,6} "),
    lazy(r"(?:> )+"),  # a quoted reply (not Python's >>> prompt: it has no space after the first >)
    lazy(r" {7}> "),  # Nix's failed build ("error: builder for '...drv' failed", its last log lines under "       > ")
    # Ray's and vLLM's worker tags: "(RayWorkerWrapper pid=4711, ip=10.0.0.5) ", "(VllmWorker rank=0 pid=4711) ".
    lazy(r"\((?:[A-Za-z_][\w.-]{0,63} )?(?:[a-z_]{1,16}=[\w.:-]{1,64},? )*pid=\d{1,10}"
         r"(?:,? [a-z_]{1,16}=[\w.:-]{1,64}){0,4}\) "),
    lazy(r"\[\d{1,6},\d{1,6}\]<(?:stdout|stderr|stddiag)>: ?"),  # mpirun --tag-output
    lazy(r"\d{1,4}\|[\w.-]{1,64} *\| "),  # pm2 logs: "0|ollama   | "
)
# docker compose: "service-1  | ": taken only for a service name on several lines of the file.
_COMPOSE = lazy(r"(?P<service>[\w.-]{1,64}?)(?:[-_]\d{1,3})? *\| ")
_COMPOSE_MIN_LINES = 2
# Any line that may start with a prefix: most logs have none, and one search of the text says so. Searched in the
# text after a newline put before it: a pattern that starts with a literal is searched for it by re's fast scan,
# where a MULTILINE "^" is tried at every character (a quarter of the time on a 90 KB log).
_ANY = lazy(r"\n(?:[A-Z][a-z]{2} +\d|\[?\d{4}-\d\d-\d\d[T ]|\[pod/|> | {7}> |-? ?[\w.]{1,64} - [A-Z]|[\w.-]{1,64} *\| "
            r"|\([^()\n]{0,120}pid=\d|\[\d{1,6},\d{1,6}\]<|\d{1,4}\|[\w.-]|\d{1,5}: "
            r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL)(?::[\w.]{1,64}:| +[\w.]{1,64}:[\w.-]{1,64}\.py:\d))")
# srun --label: the task's number before each line ("0: "); GASNet's and Legion's node label in brackets ("[42] ", a
# node's gdb backtrace after a crash). Cut only where most lines carry one and the numbers repeat (a numbered list or
# grep -n counts up instead).
_TASK = lazy(r"(?:(?P<task>\d{1,5}): |\[(?P<node>\d{1,5})\] )")
_FIRST = slice(0, 1)
# One JSON object a line, the program's line in one field: Docker's json-file log driver ("log"), `journalctl -o json`
# ("MESSAGE"), structured loggers ("message", "msg"). Read as the field's text where most lines are such objects.
_JSON_FIELDS = ("log", "MESSAGE", "message", "msg")
_ROUNDS = 3  # a quoted journal line carries two prefixes, a quoted timestamped journal line three
# Line numbers a viewer or a tool put before each line: `cat -n` ("     7\t"), `grep -n` ("7:", and "7-" for grep's
# context lines), editors and paste sites ("  7  ", "7 | "). Cut only where most lines carry one and they increase.
_NUMBER = lazy(r" {0,8}(?P<n>\d{1,7})(?:(?P<tool>\t|[:-](?=\S| |$))|  +|\s?\| )")
_NUMBERED_SHARE = 0.8
_NUMBERED_MIN_LINES = 3  # two for cat's and grep's own forms, which no table shares
# A page's HTML source or an e-mail's: the log's < > " ' & written as entities, a line break as <br />.
_ENTITY = lazy(r"&(?:lt|gt|quot|amp|#39|#x27|#34);")
_LINE_BREAK_TAG = lazy(r"\s*<br\s*/?>\s*$", re.IGNORECASE)
_ENTITIES_MIN = 1
# What a chat, mail or word-processing program puts for a terminal's plain characters: no-break and other wide
# spaces, curly quotes. Program output has the plain ones, and patterns look for those.
_PLAIN = str.maketrans({"\u00a0": " ", "\u2007": " ", "\u202f": " ", "\u2009": " ", "\u200a": " ",
                        "\u2002": " ", "\u2003": " ", "\u3000": " ", "\u201c": '"', "\u201d": '"',
                        "\u201e": '"', "\u2018": "'", "\u2019": "'", "\u201a": "'"})
_TYPOGRAPHY = lazy("[\u00a0\u2007\u202f\u2009\u200a\u2002\u2003\u3000\u201c\u201d\u201e\u2018\u2019\u201a]")


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


def _numbers(lines: list[str]) -> list[int]:
    """How many leading characters of each line are a line number, where the artifact's lines are numbered."""
    head = [line for line in lines[:50] if line.strip()][:5]
    if len(head) < 2 or not all(_NUMBER.match(line) for line in head):
        return []  # most numbered files say so in their first lines: one look there spares the rest
    found = [_NUMBER.match(line) for line in lines]
    filled = [line for line in lines if line.strip()]
    numbered = [(i, int(m["n"])) for i, m in enumerate(found) if m]
    fewest = _NUMBERED_MIN_LINES - (1 if all(m["tool"] for m in found if m) else 0)
    if len(numbered) < max(fewest, _NUMBERED_SHARE * len(filled)):
        return []
    if any(b <= a for (_, a), (_, b) in zip(numbered, numbered[1:])):
        return []  # a table's first column, counts or sizes: not numbers that count the lines
    return [m.end() if m else 0 for m in found]


def _tasks(lines: list[str]) -> list[int]:
    """How many leading characters of each line are a task or node label (srun's "0: ", GASNet's "[42] "), where most
    lines carry one and they repeat."""
    # a label starts its line with a digit or "[": where too few lines do, no regex is tried on each (tests made in C)
    firsts = list(map(str.__getitem__, lines, repeat(_FIRST)))
    labelled = sum(map(str.isdecimal, firsts)) + firsts.count("[")
    if labelled < _NUMBERED_MIN_LINES:
        return []
    least = max(_NUMBERED_MIN_LINES, _NUMBERED_SHARE * sum(map(bool, map(str.strip, lines))))
    if labelled < least:
        return []
    found = [_TASK.match(line) for line in lines]
    tasks = [m["task"] or m["node"] for m in found if m]
    if len(tasks) < least or len(set(tasks)) * 2 > len(tasks):
        return []
    return [m.end() if m else 0 for m in found]


def _json_lines(lines: list[str]) -> list[str] | None:
    """Each line's message where the artifact is a log of one JSON object a line (None where it is not)."""
    head = [line for line in lines[:50] if line.strip()][:3]
    if not head or not all(line.lstrip().startswith("{") for line in head):
        return None
    out, decoded = [], 0
    for line in lines:
        text = _json_message(line) if line.lstrip().startswith("{") else None
        decoded += text is not None
        out.append(line if text is None else text)
    filled = sum(1 for line in lines if line.strip())
    return out if decoded >= _NUMBERED_SHARE * filled else None


def _json_message(line: str) -> str | None:
    """The message field of one JSON log line, on one line (None when the line is no such object)."""
    import json  # only for a line that reads as JSON

    try:
        record = json.loads(line)
    except ValueError:
        return None
    if not isinstance(record, dict):
        return None
    text = next((record[k] for k in _JSON_FIELDS if isinstance(record.get(k), str)), None)
    return None if text is None else text.rstrip("\r\n").replace("\r", " ").replace("\n", " ")


def _unescaped(lines: list[str]) -> list[str] | None:
    """The lines with HTML entities decoded and a trailing <br /> dropped, where the text came from HTML."""
    entities = sum(len(_ENTITY.findall(line)) for line in lines[:2000] if "&" in line)
    breaks = sum(1 for line in lines[:2000] if ">" in line and _LINE_BREAK_TAG.search(line))
    if entities < _ENTITIES_MIN and breaks < max(_NUMBERED_MIN_LINES, len(lines[:2000]) // 2):
        return None
    import html  # only for a text that came from HTML: its table of entities is some 1% of a warm single triage

    return [html.unescape(_LINE_BREAK_TAG.sub("", line)).replace("\r", " ").replace("\n", " ") for line in lines]


def unwrap(artifact: Artifact) -> tuple[Artifact, int | None]:
    """The artifact as the programs printed it (the artifact itself when nothing was cut), and the
    index of the first line with a journald or syslog prefix (None when there is none)."""
    if artifact.data is not None or not artifact.text:
        return artifact, None
    lines = artifact.lines
    if unescaped := _unescaped(lines):
        lines = unescaped
    if unescaped or (not artifact.text.isascii() and _TYPOGRAPHY.search(artifact.text)):  # entities may be such (&nbsp;)
        lines = [line.translate(_PLAIN) for line in lines]
    for cutter in (_numbers, _tasks):
        if cut := cutter(lines):
            lines = [line[n:] for line, n in zip(lines, cut)]
    if messages := _json_lines(lines):
        lines = messages
    journal = None
    if _ANY.search("\n" + (artifact.text if lines is artifact.lines else "\n".join(lines))) is not None:
        services = _services(lines)
        cuts = [_cut(line, services) for line in lines]
        journal = next((i for i, (_, j) in enumerate(cuts) if j), None)
        if any(n for n, _ in cuts):
            lines = [line[n:] for line, (n, _) in zip(lines, cuts)]
            if cut := _tasks(lines):  # a task label under a collector's prefix (a CI log's clock, then CTest's "12: ")
                lines = [line[n:] for line, n in zip(lines, cut)]
    if lines is artifact.lines:
        return artifact, journal
    text = "\n".join(lines) + ("\n" if artifact.text.endswith("\n") else "")
    return Artifact(name=artifact.name, text=text, size=artifact.size, lines=lines, given=artifact.lines), journal
