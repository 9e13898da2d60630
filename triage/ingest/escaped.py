"""Open a log that arrived as one escaped string into the lines it was printed as.

A log handed on by a program often reaches the user as one long line: the message of a Python
exception that carries a command's output (``AcceleratorError('HIP error: invalid device
function\\nHIP kernel errors might be ...\\n')``, ``subprocess.CalledProcessError``'s
``output=b'...\\n...'``), a JSON string (an API's error field, a CI job's JSON log, ``docker
inspect``), a list of lines printed by Python (``['line\\n', 'line\\n']``), a syslog message that
rsyslog wrote with ``#012`` for each newline (systemd-coredump's report of a crash in
/var/log/messages). No parser reads a record from the middle of such a line, so the line is read as
the lines its string literals hold: each literal's escapes decoded (``\\n \\r \\t \\" \\' \\\\ \\/
\\xNN \\uNNNN``; a Python bytes literal's bytes as UTF-8) and the text around them kept as lines of
its own where it says something (``{"status": "failed", "log":``, ``AcceleratorError(``), not where
it is only quotes and brackets. A literal inside a literal (JSON carrying a Python repr) is opened
too. An rsyslog line is split at each ``#012`` (``#011`` is a tab).

A line is opened only when its literals hold ``MIN_ESCAPES`` escaped newlines or more (an rsyslog
line as many ``#012``), give ``MIN_LINES`` lines with text or more, every backslash in them is an
escape those languages write and no output call of a program's source (``printf(``, ``print(``,
``<<``) comes before them: a C string with a ``\\n`` or two, a line of source code, a regex (``\\s``,
``\\d``) or a Windows path (``C:\\Windows\\System32\\ntdll.dll``) stays as it is. A log of one JSON
object a line (Docker's, journald's) is left to parsers/wrappers.py, which reads each object's
message on its line.

Line numbers after an opened line are those of the opened text; the reader says which lines
were opened.
"""

from __future__ import annotations

from triage.ingest.decode import without_colours
from triage.lazy import lazy

# Escaped newlines a line's literals hold, and lines with text they give, before the line is taken as a log.
MIN_ESCAPES = 3
MIN_LINES = 3
# Literals inside literals opened: JSON that carries a Python repr of captured output.
MAX_DEPTH = 2
# A literal: from its opening quote to its closing one (or the line's end, when a paste cut it).
_LITERAL = {q: lazy(q + r"([^" + q + r"\\]*(?:\\.[^" + q + r"\\]*)*)(?:" + q + r"|$)") for q in "\"'"}
# Where a literal may open: the line's start, after a space, ``:``, ``=``, a bracket or a comma, with
# Python's ``b``/``u`` prefix (not ``r``: a raw string's backslashes are not escapes). An apostrophe
# inside a word does not open one.
_OPENS = lazy(r"(?:^[bBuU]?|(?<=[\s:=(\[{,<])|(?<=[\s:=(\[{,<][bBuU]))[\"']")
# The escapes JSON and Python's repr write: a character by its code, or one of the one-letter ones.
_CODE_POINTS = r"x[0-9A-Fa-f]{2}|u[0-9A-Fa-f]{4}|U[0-9A-Fa-f]{8}"
_ESCAPE = lazy(r"\\(?:" + _CODE_POINTS + r"|[\\\"'/nrtbfav0])")
_CODE_POINT = lazy(r"\\(?:" + _CODE_POINTS + ")")
_SURROGATE = lazy("[\ud800-\udfff]")
# rsyslog writes a control character of a message as # and its octal code: a message of several lines (systemd-coredump's
# module list and stacks, a traceback) arrives as one line with #012 for each newline and #011 for each tab.
_SYSLOG_NEWLINE, _SYSLOG_TAB = "#012", "#011"
# A program's own output call before a literal: the line is source code, its literal a format or a message.
_CODE = lazy(r"\b(?:[fsv]?n?printf|f?puts|print|echo|write)\s*\(\s*$|<<\s*$")
_SIMPLE = (("\\n", "\n"), ("\\r", "\r"), ("\\t", "\t"), ('\\"', '"'), ("\\'", "'"), ("\\/", "/"), ("\\b", "\b"),
           ("\\f", "\f"), ("\\a", "\a"), ("\\v", "\v"), ("\\0", "\0"))


def _literals(line: str) -> list[tuple[int, int, int, bool]]:
    """The line's string literals that hold an escaped newline: (start of the quote, body's start, body's end,
    whether it is a bytes literal), in order, none inside another."""
    found = []
    at = 0
    while (opening := _OPENS.search(line, at)) is not None:
        quote = opening.end() - 1
        literal = _LITERAL[line[quote]].match(line, quote)
        if literal is None:  # a lone backslash at the line's end: no literal opens here
            at = quote + 1
            continue
        start, end = literal.span(1)
        if "\\n" in line[start:end]:
            found.append((quote - (quote > 0 and line[quote - 1] in "bBuU"), start, end,
                          quote > 0 and line[quote - 1] in "bB"))
        at = max(literal.end(), quote + 1)
    return found


def _valid(body: str) -> bool:
    """Whether every backslash of the body starts an escape JSON or Python writes."""
    return "\\" not in _ESCAPE.sub("", body)


def _decoded(body: str, as_bytes: bool) -> str:
    """The literal's text: escapes decoded, CRLF and lone CR as a newline, colour codes dropped."""
    parts = body.split("\\\\")  # an escaped backslash first: what follows it is text, not an escape
    for n, part in enumerate(parts):
        if "\\" in part:
            for escape, character in _SIMPLE:
                if escape in part:
                    part = part.replace(escape, character)
            if "\\" in part:  # \xNN, \uNNNN, \UNNNNNNNN last: a character they give is never read as an escape
                part = _CODE_POINT.sub(lambda m: chr(int(m.group(0)[2:], 16)), part)
            parts[n] = part
    text = "\\".join(parts)
    if as_bytes:
        text = text.encode("latin-1", "replace").decode("utf-8", "replace")
    elif _SURROGATE.search(text):  # JSON writes a character past U+FFFF as two \u escapes
        text = text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return without_colours(text)


def _says(text: str) -> bool:
    """Whether text between literals is worth a line: a word or a number, not only quotes and brackets."""
    return any(c.isalnum() for c in text)


def open_line(line: str, depth: int = 0) -> list[str] | None:
    """The lines an escaped log on one line holds (None when the line is no such log)."""
    if line.count("\\n") < MIN_ESCAPES or depth >= MAX_DEPTH:
        return None
    literals = _literals(line)
    bodies = [line[start:end] for _, start, end, _ in literals]
    if sum(body.count("\\n") for body in bodies) < MIN_ESCAPES or not all(map(_valid, bodies)):
        return None
    out: list[str] = []
    filled = 0
    done = 0
    for (quote, start, end, as_bytes), body in zip(literals, bodies):
        if _CODE.search(line, done, quote):
            return None
        if _says(line[done:quote]):
            out.append(line[done:quote].strip() if done else line[:quote].rstrip())
        pieces = _decoded(body, as_bytes).split("\n")
        if len(pieces) > 1 and not pieces[-1]:
            pieces.pop()  # the newline that ends the last line
        for piece in pieces:
            inner = open_line(piece, depth + 1) if "\\n" in piece else None
            if inner is None:
                out.append(piece)
                filled += bool(piece.strip())
            else:
                out.extend(inner)
                filled += sum(1 for p in inner if p.strip())
        done = min(end + 1, len(line))  # past the closing quote
    if _says(line[done:]):
        out.append(line[done:].strip())
    return out if filled >= MIN_LINES else None


def open_syslog_line(line: str) -> list[str] | None:
    """The lines of a message rsyslog wrote on one line with #012 for its newlines (None when the line is none)."""
    if line.count(_SYSLOG_NEWLINE) < MIN_ESCAPES:
        return None
    pieces = line.replace(_SYSLOG_TAB, "\t").split(_SYSLOG_NEWLINE)
    return pieces if sum(1 for piece in pieces if piece.strip()) >= MIN_LINES else None


def _json_log(lines: list[str]) -> bool:
    """Whether the text is a log of one JSON object a line (its first lines with text say so)."""
    head = [line for line in lines[:50] if line.strip()][:3]
    return len(head) > 1 and all(line.lstrip().startswith("{") for line in head)


def open_escaped(text: str) -> tuple[str, list[tuple[int, int]]]:
    """The text with each escaped log line opened into its lines, and for each line opened, its 1-based number
    in ``text`` and how many lines it became."""
    if "\\n" not in text and _SYSLOG_NEWLINE not in text:
        return text, []
    lines = text.split("\n")
    if _json_log(lines):
        return text, []
    out: list[str] = []
    opened = []
    for number, line in enumerate(lines, 1):
        held = open_line(line) if line.count("\\n") >= MIN_ESCAPES else None
        if held is None and _SYSLOG_NEWLINE in line:
            held = open_syslog_line(line)
        if held is None:
            out.append(line)
        else:
            out.extend(held)
            opened.append((number, len(held)))
    return ("\n".join(out), opened) if opened else (text, [])
