"""Folder listings users paste (``ls``, ``ls -l``, ``dir``) of an engine or runtime component.

Example (after a ``$ ls DIR`` line)::

    BUILD.json  engine-component.json  hipblaslt/  libamdhip64.so.7  libamd_comgr.so.3

Each listed name is kept with its line, so signatures can ask whether a bundled runtime
came with its device libraries.
"""

from __future__ import annotations


from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, Walk

_COMMAND = lazy(r"^\s*(?:\$|#|PS [^>]*>|>)\s*(?:ls|dir|tree|find)\b")
_LONG = lazy(r"^[-dl][rwxsStT-]{9}[.+@]?\s+\d+\s+\S+\s+\S+\s+\d+\s+\w+\s+\d+\s+[\d:]+\s+(?P<name>.+?)(?: -> .*)?$")
_NAME = lazy(r"^(?:[\w.+@-]+/?|\.\.\.)$")
_FILEISH = lazy(r"\.(?:so(?:\.\d+)*|dll|exe|json|bc|dat|co|hsaco|txt|yaml|py|bin)$|/$")
# A command line, an ``ls -l`` line, or a line of names one of which looks like a file: a listing
# that no command introduces is one of those, and one that a command introduces is read line by
# line after it.
_NEEDLES = Needles(_COMMAND, _LONG, r"^[\w.+@/\s-]*(?:\.(?:so|dll|exe|json|bc|dat|co|hsaco|txt|yaml|py|bin)|/)[\w.+@/\s-]*$")


def _names(text: str, after_command: bool) -> list[str] | None:
    """The names on a listing line; outside a listing most of them must look like files."""
    if m := _LONG.match(text):
        return [m["name"]]
    tokens = text.split()
    if not tokens or not all(_NAME.match(t) for t in tokens):
        return None
    if not after_command and (len(tokens) < 3 or sum(1 for t in tokens if _FILEISH.search(t)) * 2 < len(tokens)):
        return None
    return [t for t in tokens if t != "..."]


def parse(artifact: Artifact, case: Case) -> None:
    in_listing = False
    lines = artifact.lines
    walk = Walk(_NEEDLES.lines(artifact), len(lines))
    for index in walk:
        number, text = index + 1, lines[index]
        if _COMMAND.match(text):
            in_listing = True
            walk.follow()
            continue
        names = _names(text, in_listing) if text.strip() else None
        if names is None:
            in_listing = False
            continue
        if in_listing:
            walk.follow()
        where = Where(artifact.name, number)
        case.claim(where, "listing", "listing")
        case.files_listed.extend((where, name) for name in names)
