"""Offload-bundle target counts of a fat binary, as users count them with grep.

Example (``grep -a -o -E "hip[v0-9]*-amdgcn-amd-amdhsa--gfx[0-9a-z]+" BIN | sort | uniq -c``)::

        133 hipv4-amdgcn-amd-amdhsa--gfx1100
          1 hipv4-amdgcn-amd-amdhsa--gfx906     <-- the outlier
    134 __CLANG_OFFLOAD_BUNDLE__ markers, 133 of which are built for all nine targets.

A run of count lines is one binary; a nearby count of bundle markers gives the number of
bundles, so a target present in fewer bundles than that is missing from some of them.
"""

from __future__ import annotations


from triage.lazy import lazy
from triage.model import Artifact, Case, OffloadTargets, Where
from triage.parsers.lines import Needles

_COUNT = lazy(r"^\s*(?P<n>\d+)\s+(?:hip[a-z0-9]*|openmp)-amdgcn-amd-amdhsa-+(?P<t>gfx[0-9a-z]+(?:-\d+)?(?:-generic)?(?::[\w+-]+)*)(?=\s|$)")
_MARKERS = lazy(r"\b(?P<n>\d+)\s+(?:x\s+)?`?__CLANG_OFFLOAD_BUNDLE__")
_NEAR = 20
# The file a count was made from: the last word before the first pipe of the grep command.
_GREP_FILE = lazy(r"\bgrep\b[^|]*?\s(?P<file>[^\s|'\"-][^\s|'\"]*)\s*\|")
# What each pattern above cannot match without: a line holding none of these is read by none.
_NEEDLES = Needles("-amdgcn-amd-amdhsa-", "__CLANG_OFFLOAD_BUNDLE__", "grep")


def parse(artifact: Artifact, case: Case) -> None:
    blocks: list[OffloadTargets] = []
    current: OffloadTargets | None = None
    last = -10
    binary: str | None = None
    lines = artifact.lines
    for index in _NEEDLES.lines(artifact):
        number, text = index + 1, lines[index]
        where = Where(artifact.name, number)
        if "grep" in text and (g := _GREP_FILE.search(text)):
            binary = g["file"].rsplit("/", 1)[-1]
        if m := _COUNT.match(text):
            if current is None or number - last > 1:
                current = OffloadTargets(where=where, targets={}, binary=binary)
                blocks.append(current)
                binary = None
            current.targets[m["t"]] = current.targets.get(m["t"], 0) + int(m["n"])
            case.claim(where, "offload", "binary")
            last = number
        elif (m := _MARKERS.search(text)) and blocks and number - last <= _NEAR:
            blocks[-1].bundles = int(m["n"])
            case.claim(where, "offload")
    case.offload.extend(blocks)
