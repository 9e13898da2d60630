"""A signature skeleton from an unknown cluster: the start of a new known failure, for a person to finish.

The skeleton passes ``signatures/schema.json``: its log conditions are the cluster's
distinguishing lines as regexes (templates with their placeholders as patterns), a frame
condition when the cluster's cases share a stack, and its own examples (two member lines it
must match, two lines of other clusters or of a normal run it must not). Every text a person
must write says ``TODO``.
"""

from __future__ import annotations

import re

import regex
import yaml

from triage.corpus.clusters import Cluster
from triage.match.templates import to_regex

# Lines of an ordinary run: a drafted signature must not match them.
_ORDINARY = (
    ":3:hip_context.cpp :62 : 1011 us: [pid:4242 tid:0x7f3b2a1c0700] HIP Version: 6.2.41133-dd7f95766, Direct Dispatch: 1",
    "GPU 0: AMD Radeon RX 7900 XTX (gfx1100)",
    "Segmentation fault (core dumped)",
)
# Each distinguishing line alone is above the database threshold (0.45): a draft matches each example.
STRENGTHS = (0.5, 0.5, 0.5)


def _slug(text: str) -> str:
    words = re.findall(r"[a-z][a-z0-9]+", text.lower())
    return "-".join(words[:5]) or "crash"


def draft(item: Cluster, others: list[Cluster], klass: str = "runtime-crash") -> str:
    """The YAML text of a signature skeleton for ``item``; ``others`` supply must-not-match examples."""
    conditions = []
    patterns = []
    for number, (shape, line) in enumerate(zip(item.templates, item.lines)):
        if number >= len(STRENGTHS):
            break
        pattern = to_regex(shape)
        patterns.append(regex.compile(pattern, regex.IGNORECASE))
        conditions.append({"id": f"line-{number + 1}", "description": f"TODO: what this line means (e.g. {line[:80]})",
                           "log": pattern, "strength": STRENGTHS[number]})
    if item.frames and "!" in item.frames[0]:
        module, symbol = item.frames[0].split("!", 1)
        conditions.append({"id": "top-frame", "description": f"TODO: why {symbol} on top of the stack matters",
                           "frame": {"module": re.escape(module.rsplit(".so", 1)[0]), "symbol": re.escape(symbol),
                                     "within": 3},
                           "strength": 0.3})
    if not conditions:
        raise ValueError(f"cluster {item.id} has no distinguishing line or named frame to draft a signature from")
    must = [{"name": f"{item.id}: a line of case {item.typical}", "input": line} for line in item.lines[:2]]
    if len(must) < 2:
        must.append({"name": f"{item.id}: the lines of case {item.typical}", "input": "\n".join(item.lines)})
    foreign = [line for other in others if other.id != item.id for line in other.lines[:1]] + list(_ORDINARY)
    negative = [line for line in foreign if not any(p.search(line) for p in patterns)][:2]
    signature = {
        "id": f"draft-{item.id.lower()}-{_slug(item.templates[0] if item.templates else item.frames[0])}",
        "title": f"TODO: name this failure ({item.size} unknown cases, e.g. {item.typical})",
        "class": klass,
        "status": "experimental",
        "version": 1,
        "priority": 40,
        "conditions": conditions,
        "root_cause": "TODO: what goes wrong, in terms a user can act on.\n",
        "workarounds": [{"title": "TODO: what the user can do today", "commands": "TODO", "verified": False}],
        "fix": "TODO: what the people who ship the software should change.\n",
        "ask_for": ["hip-log", "stack", "environment"],
        "references": [],
        "falsepositives": [],
        "tests": {"match": must,
                  "no_match": [{"name": f"not this failure: {line[:60]}", "input": line} for line in negative]},
    }
    header = (f"# Drafted by `triage signatures draft {item.id}` from {item.size} unknown cases "
              f"(typical: {item.typical}{f'; closest known: {item.hint}' if item.hint else ''}).\n"
              "# Finish every TODO, choose the class, check the regexes, then run `triage signatures test`.\n")
    return header + yaml.safe_dump(signature, sort_keys=False, allow_unicode=True, width=120)
