"""The Markdown report as a GitHub comment: text from a log that cannot turn into markup, and a
comment within GitHub's size limit, whatever the input.

Text from the input reaches the comment three ways, each built by one function here: as inline
code (``code_span``: a backtick fence longer than any run inside, so nothing closes it), as a
fenced block (``fenced``: a tilde fence longer than any run inside), and as prose (``escape``: no
HTML, no link or autolink, no ``@`` mention; ``inline`` pairs the backticks of a text into code
spans and escapes the rest). All three, and every HTML and text report (``visible``, a template
finalizer), show bidi and other invisible control characters as escapes such as ``\u202e``.

GitHub refuses a comment over 65,536 characters, and a bot that fails to post is worse than a
short comment. The report renders whole when it fits; otherwise it renders again from a copy
with long strings clipped and long lists shortened, a step at a time, with a note saying so;
if even the tightest step is too long, the text is cut at a line and its open fence and
``<details>`` are closed, so the comment still renders.
"""

from __future__ import annotations

import re
from typing import Any, Callable

from triage.lazy import lazy, lazy_regex

LIMIT = 65_536
BUDGET = LIMIT - 1_024  # room for what GitHub or a bot adds around the body
SHORTENED = ("This comment is shortened to fit GitHub's comment size limit: long lines are clipped and long "
             "lists cut. Run `triage` on the same inputs for the full report.")
# (characters per string, items per list, keep the stacks and source lines)
_STEPS = ((2_000, 100, True), (500, 20, True), (300, 8, False))
_FENCE = lazy(r"^ {0,3}(~{3,}|`{3,})")

Renderer = Callable[[dict, dict], str]

# Control characters but tab and newline, format characters (bidi embeddings, overrides and isolates, marks,
# zero-width characters, BOM, soft hyphen, tags) and line/paragraph separators.
# Version 1 (set operations) by the inline flag: the module need not import regex to name regex.V1.
_HIDDEN = lazy_regex(r"(?V1)[\p{Cc}\p{Cf}\p{Zl}\p{Zp}--[\t\n]]")
_BACKTICKS = lazy(r"`+")
_TILDES = lazy(r"~+")
# escaped with a backslash, or as an entity (& < >); an underscore inside a word (file_name) cannot emphasise
_PROSE = lazy(r"[\\`*~\[\]<>&|$]|(?<![^\W_])_|_(?![^\W_])")
_ENTITIES = {"&": "&amp;", "<": "&lt;", ">": "&gt;"}
_ZWJ = "&#8205;"  # a zero-width joiner, written as an entity: breaks a mention or a link and shows nothing
_LINKISH = lazy(r"@|:(?=//)|(?<![\w.-])(?i:www)(?=\.)")
_LINE_START = lazy(r"^(?:[#>+=-]|\d+(?=[.)]))")


def visible(text: Any) -> Any:
    """``text`` with invisible and control characters shown as escapes (U+202E as ``\\u202e``); CRLF is LF.

    Strings only (a ``Markup`` stays ``Markup``: the escapes are plain ASCII); anything else as it is.
    """
    if not isinstance(text, str) or ("\r" not in text and not _HIDDEN.search(text)):
        return text
    shown = _HIDDEN.sub(_escape_char, str.replace(text, "\r\n", "\n"))
    return shown if type(text) is str else type(text)(shown)


def _escape_char(m: re.Match) -> str:
    code = ord(m[0])
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


def code_span(value: Any) -> str:
    """``value`` as one Markdown code span that nothing in it can close or break out of.

    The fence is one backtick longer than the longest run in the value; a value that starts or ends with a
    backtick (or with a space at both ends) is padded with a space each side, which CommonMark removes again;
    line breaks become spaces, so the span stays on its line.
    """
    text = visible("" if value is None else str(value)).replace("\n", " ")
    if not text:
        return "` `"
    fence = "`" * (max((len(r) for r in _BACKTICKS.findall(text)), default=0) + 1)
    pad = " " if text[0] == "`" or text[-1] == "`" or (text[0] == text[-1] == " " and text.strip(" ")) else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def escape(value: Any, line_start: bool = True) -> str:
    """``value`` as Markdown prose that shows as written and makes nothing live.

    Backslash-escaped: ``\\ ` * ~ [ ] | $``, and ``_`` but inside a word (no code, emphasis, link, table cell,
    math); ``& < >`` as entities (no HTML tag, entity or ``<autolink>``); a zero-width joiner after ``@`` (no
    mention, no e-mail link), in ``://`` and after ``www`` (no bare-URL autolink); a line-starting ``# > + = -``
    or ``1.`` escaped (no heading, quote or list; ``line_start=False`` for text that follows other text on its
    line); line breaks as spaces, invisible characters as escapes (``visible``).
    """
    text = visible("" if value is None else str(value)).replace("\n", " ")
    text = _PROSE.sub(lambda m: _ENTITIES.get(m[0]) or "\\" + m[0], text)
    text = _LINKISH.sub(lambda m: m[0] + _ZWJ if m[0] == "@" or m[0].lower() == "www" else ":" + _ZWJ, text)
    if not line_start:
        return text
    return _LINE_START.sub(lambda m: m[0] + "\\" if m[0].isdigit() else "\\" + m[0], text)


def inline(value: Any) -> str:
    """Prose with `code` in it as Markdown: each backtick run that a run of the same length closes (as in
    CommonMark) makes a ``code_span``, every other part goes through ``escape``."""
    text = "" if value is None else str(value).replace("\r\n", "\n").replace("\n", " ")
    out, pos, start = [], 0, 0
    while (m := _BACKTICKS.search(text, pos)) is not None:
        close = re.compile(r"(?<!`)" + m[0] + r"(?!`)").search(text, m.end())
        if close is None:
            pos = m.end()
            continue
        out.append(escape(text[start:m.start()], line_start=start == 0))
        code = text[m.end():close.start()]
        if len(code) > 1 and code[0] == code[-1] == " " and code.strip(" "):
            code = code[1:-1]
        out.append(code_span(code))
        pos = start = close.end()
    out.append(escape(text[start:], line_start=start == 0))
    return "".join(out)


def link(url: Any) -> str:
    """A shipped address (a similar case's public thread, not the input) as an autolink; else as prose."""
    text = "" if url is None else str(url)
    return f"<{text}>" if re.fullmatch(r"https://[^\s<>`\\]+", text) else escape(text, line_start=False)


def fenced(content: Any, lang: str = "") -> str:
    """``content`` as a fenced block whose tilde fence is longer than any tilde run inside, so no line closes it."""
    text = visible("" if content is None else str(content)).rstrip("\n")
    fence = "~" * max(4, max((len(r) for r in _TILDES.findall(text)), default=0) + 1)
    return f"{fence}{lang}\n{text}\n{fence}"


def size(text: str) -> int:
    """Length as GitHub's limit counts it, at worst: UTF-16 code units (an emoji is two)."""
    return len(text.encode("utf-16-le")) // 2


def clip(text: Any, length: int) -> str:
    """At most ``length`` characters, saying how many were left out."""
    text = "" if text is None else str(text)
    if len(text) <= length:
        return text
    return f"{text[:length]}… [{len(text) - length} more characters]"


def _shrink(value: Any, chars: int, items: int) -> Any:
    if isinstance(value, str):
        return clip(value, chars)
    if isinstance(value, dict):
        return {k: _shrink(v, chars, items) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_shrink(v, chars, items) for v in value[:items]]
    return value


def fit_comment(render: Renderer, report: dict, case_lines: dict[str, list[tuple[int, str]]]) -> str:
    """The Markdown comment, shortened step by step until it fits in one GitHub comment."""
    text = render(report, case_lines)
    if size(text) <= BUDGET:
        return text
    for chars, items, details in _STEPS:
        short = _shrink(report, chars, items)
        short["warnings"] = [SHORTENED, *short.get("warnings", [])]
        lines: dict[str, list[tuple[int, str]]] = {}
        if details:
            lines = {clip(name, chars): [(n, clip(t, chars)) for n, t in quoted[: items * 5]]
                     for name, quoted in list(case_lines.items())[:items]}
        else:
            short["stacks"] = []
        text = render(short, lines)
        if size(text) <= BUDGET:
            return text
    return _cut(text, report.get("versions", {}))


def _cut(text: str, versions: dict) -> str:
    """Cut at a line boundary, close what is open, and say so."""
    note = (f"\n\n**This comment was cut to fit GitHub's comment size limit.** Run `triage` on the same inputs "
            f"for the full report.\n\n<sub>hip-triage {versions.get('tool', '?')} · signatures "
            f"{versions.get('signatures', '?')}</sub>\n")
    room = BUDGET - size(note) - 300
    head = text[:room]
    while size(head) > room:  # wide characters: cut further
        head = head[: len(head) * 9 // 10]
    lines = head.split("\n")[:-1]  # the last line may be cut in the middle
    fence, depth = None, 0
    for line in lines:
        m = _FENCE.match(line)
        if fence is not None:
            if m and m.group(1)[0] == fence[0] and len(m.group(1)) >= len(fence) and not line[m.end():].strip():
                fence = None
            continue
        if m:
            fence = m.group(1)
            continue
        depth += line.count("<details>") - line.count("</details>")
    closing = ([fence] if fence else []) + ["", "</details>"] * max(depth, 0)
    return "\n".join(lines + closing) + note
