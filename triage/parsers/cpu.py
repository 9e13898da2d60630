"""The AMD processor a machine runs, as programs print its name: one ``cpu_model`` fact per name.

Examples::

    Model name:                           AMD Ryzen 9 7940HS w/ Radeon 780M Graphics      lscpu, collect_env
    model name	: AMD Ryzen 7 4800U with Radeon Graphics                               /proc/cpuinfo
      Marketing Name:          AMD Ryzen 7 4800U with Radeon Graphics                   rocminfo's CPU agent
    Processor: AMD Ryzen AI 9 HX 370 w/ Radeon 890M                                     a system report

derive/apus.py maps the name to the integrated GPU it carries (tables/apus.yaml). A user's sentence ("my Ryzen 7
4800U laptop") is no fact of the system and is not read.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles

# "AMD Ryzen ..." / "AMD Athlon ..." up to its graphics, its core count or the line's end.
_CPU = lazy(r"\b(?P<name>(?:AMD )?(?:Ryzen|Athlon)\b(?: [\w+-]+){1,7}?)"
            r"(?= (?:with|w/) Radeon| \d+-Core| Processor| Mobile|\s*$|\s{2,}|\s*[,;|)\]])", re.IGNORECASE)
_NEEDLES = Needles(r"(?i:Ryzen|Athlon)")


def parse(artifact: Artifact, case: Case) -> None:
    for where, text in _NEEDLES.machine_lines(artifact, case):
        if m := _CPU.search(text):
            case.add_fact("cpu_model", m["name"].strip(), where, text.strip(), 40)
