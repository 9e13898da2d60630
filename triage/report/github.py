"""Keep the Markdown report within one GitHub comment, whatever the input.

GitHub refuses a comment over 65,536 characters, and a bot that fails to post is worse than a
short comment. The report renders whole when it fits; otherwise it renders again from a copy
with long strings clipped and long lists shortened, a step at a time, with a note saying so;
if even the tightest step is too long, the text is cut at a line and its open fence and
``<details>`` are closed, so the comment still renders.
"""

from __future__ import annotations

import re
from typing import Any, Callable

LIMIT = 65_536
BUDGET = LIMIT - 1_024  # room for what GitHub or a bot adds around the body
SHORTENED = ("This comment is shortened to fit GitHub's comment size limit: long lines are clipped and long "
             "lists cut. Run `triage` on the same inputs for the full report.")
# (characters per string, items per list, keep the stacks and source lines)
_STEPS = ((2_000, 100, True), (500, 20, True), (300, 8, False))
_FENCE = re.compile(r"^ {0,3}(~{3,}|`{3,})")

Renderer = Callable[[dict, dict], str]


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
