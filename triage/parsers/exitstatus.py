"""Exit statuses in launcher and shell output: ``exit code 3221225477``, ``exit status 0xc0000005``.

A shell's 128+N becomes a signal (139 -> SEGV); a Windows status becomes an NTSTATUS code
(3221225477, -1073741819 and 0xc0000005 are all ACCESS_VIOLATION).
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable
from triage.parsers.codes import exit_status

_EXIT = lazy(
    r"\b(?:exit(?:ed)?(?:\s+with)?\s+(?:code|status)|exit_code|return(?:ed)?\s+code|ExitCode)\s*[:=]?\s*\(?"
    r"(?P<v>-?0x[0-9a-fA-F]+|-?\d+)\b",
    re.IGNORECASE,
)

_NEEDLES = Needles("xit", "(?i:code)")  # what _EXIT cannot match without (the test below)


def parse(artifact: Artifact, case: Case) -> None:
    lines = artifact.lines
    for index in _NEEDLES.lines(artifact):
        number, text = index + 1, lines[index]
        if ("xit" not in text and "code" not in text.lower()) or not readable(text):
            continue
        for m in _EXIT.finditer(text):
            status = exit_status(m["v"])
            if status is None:
                continue
            where = Where(artifact.name, number)
            kind, value = status
            case.add_fact("signal" if kind == "signal" else "exception_code", value, where, text.strip(), 40)
            case.add_fact("exit_status", m["v"], where, text.strip(), 40)
            case.inputs.add("fault")
