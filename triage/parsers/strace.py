"""strace output: the files a process looked for and did not find.

Example::

    access("lib/clang/22/lib/amdgcn/bitcode", F_OK) = -1 ENOENT (No such file or directory)
    [pid  4711] openat(AT_FDCWD, "/opt/rocm/lib/llvm/amdgcn/bitcode", O_RDONLY|O_DIRECTORY) = 5
"""

from __future__ import annotations


from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable

_CALL = lazy(
    r"^\s*(?:\[pid\s+\d+\]\s*|\d+\s+)?(?P<call>access|faccessat2?|open|openat|stat|lstat|newfstatat|statx|execve|readlink)"
    r"\((?:AT_FDCWD,\s*)?\"(?P<path>[^\"]*)\".*?\)\s*=\s*(?P<ret>-?\d+)(?:\s+(?P<errno>E[A-Z]+))?"
)
_NEEDLES = Needles(_CALL)


def parse(artifact: Artifact, case: Case) -> None:
    lines = artifact.lines
    for index in _NEEDLES.lines(artifact):
        number, text = index + 1, lines[index]
        if "(" not in text or "=" not in text or not readable(text):
            continue
        m = _CALL.match(text)
        if m is None:
            continue
        where = Where(artifact.name, number)
        case.claim(where, "strace", "strace")
        if m["errno"] == "ENOENT":
            case.missing_files.append((where, m["path"]))
