"""Log templates: a line with its variable parts (ids, addresses, paths, numbers) made placeholders.

Two reports of the same unknown crash differ in pids, addresses, user paths and sizes but
share their templates, so templates are what unknown cases are clustered on. Only the lines
that carry an error word are kept (``key_lines``): most lines of a log concern nothing, and
one pass over each artifact's text (triage/scan/) finds the rest.
"""

from __future__ import annotations

import functools
import re

from triage.lazy import lazy
from triage.model import Case
from triage.scan.scanner import LineScanner

# Longest-first alternatives of one pass; each named group becomes its placeholder. A path without a root is tried
# where a word starts, or right after a number or an id (which may end inside a word): from inside a word where it
# was tried in vain it cannot match, and tried there it scanned to the word's end each time (a word of 4,000 letters,
# dots or dashes: 0.25-0.3 s; lines are cut at MAX_LINE_CHARS first, 2-3 ms at 400).
_ID = r"(?P<id>\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b)"
_PATH = (r"|(?P<path>(?:(?:[A-Za-z]:[\\/]|\.{1,2}/|~/|/)|(?<![\w.@~+-])|(?<=\d)"
         r"|(?<=\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}))(?:[\w.@~+-]+[/\\])+[\w.@~+-]*)")
_NUMBERS = (r"|(?P<hex>\b0x[0-9a-fA-F]+\b|\b(?=[0-9a-fA-F]*\d)(?=\d*[a-fA-F])[0-9a-fA-F]{8,}\b)"
            r"|(?P<num>\d+(?:[.,:]\d+)*)")
_VARIABLE = lazy(_ID + _PATH + _NUMBERS)
# A path holds a slash or a backslash: on a line without one the same pass without paths gives the same text, in a
# third of the time (some 60 -> 20 us on a line of 190 characters; a log's every error line is templated)
_VARIABLE_NO_PATH = lazy(_ID + _NUMBERS)
_SPACES = lazy(r"\s+")
_KEY_WORD = (
    r"error|fail|fatal|abort|exception|fault|received signal|\bsignal:? \d|\bsig(?:segv|abrt|bus|ill|fpe|trap)\b"
    r"|cannot|can't|unable|invalid|denied|not found|no such|panic|assert|terminat|killed|timeout|timed out|illegal"
    r"|unsupported|corrupt|hsa_status|^:1:"
)
PLACEHOLDERS = {"id": "<id>", "path": "<path>", "hex": "<hex>", "num": "<num>"}
# Regexes for a placeholder when a template becomes a signature's log pattern.
PLACEHOLDER_REGEX = {"<id>": r"[0-9a-fA-F-]{36}", "<path>": r"\S+", "<hex>": r"(?:0x)?[0-9a-fA-F]+",
                     "<num>": r"\d[\d.,:]*"}
MAX_KEY_LINES = 40
MAX_LINE_CHARS = 400


def template(line: str) -> str:
    """``hipMalloc(0x7f12, 4096) failed in /home/a/x.so`` -> ``hipMalloc(<hex>, <num>) failed in <path>``."""
    line = line[:MAX_LINE_CHARS]
    variable = _VARIABLE if "/" in line or "\\" in line else _VARIABLE_NO_PATH
    text = variable.sub(lambda m: PLACEHOLDERS[m.lastgroup or "num"], line)
    return _SPACES.sub(" ", text).strip()


@functools.cache
def _key_word_scanner() -> LineScanner:
    """One scanner for the error words, built on first use and shared (scanning is thread-safe)."""
    return LineScanner([_KEY_WORD], re.IGNORECASE, module="re", exact=[0])


def key_lines(case: Case, limit: int = MAX_KEY_LINES) -> list[str]:
    """The case's lines that carry an error word, one per template, in input order."""
    scanner = _key_word_scanner()
    seen: set[str] = set()
    out: list[str] = []
    for artifact in case.artifacts:
        for index in scanner.scan(artifact.lines, artifact.text)[0] if artifact.lines else ():
            line = artifact.lines[index].strip()[:MAX_LINE_CHARS]
            shape = template(line)
            if shape and shape not in seen:
                seen.add(shape)
                out.append(line)
                if len(out) >= limit:
                    return out
    return out


def to_regex(shape: str) -> str:
    """A template as a regex that matches every line it came from (for a drafted signature)."""
    parts = re.split(r"(<id>|<path>|<hex>|<num>| )", shape)
    out = []
    for part in parts:
        if part in PLACEHOLDER_REGEX:
            out.append(PLACEHOLDER_REGEX[part])
        elif part == " ":
            out.append(r"\s+")
        elif part:
            out.append(re.escape(part))
    return "".join(out)
