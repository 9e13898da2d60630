"""Who ran the commands of a case and which groups they belong to, as programs print it.

Examples::

    uid=1000(loong) gid=1000(loong) groups=1000(loong),4(adm),44(video),109(render)     id
    loong : loong adm cdrom sudo dip plugdev                                            groups loong
    render:x:109:alice,bob                                                             getent group, /etc/group
    (venv) loong@home:~$ python -c "import torch; ..."                                 a shell's prompt

Facts: ``account_user`` (the user named), ``account_groups`` (the groups ``id`` or ``groups`` list for that user, by
name, comma-separated) and ``group_members_render`` / ``group_members_video`` (the group database's member lists).
derive/access.py weighs them into whether the user may open the GPU's device nodes.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles

_USER = r"[a-z_][\w.-]{0,31}"
_ID = lazy(rf"\buid=\d+\((?P<user>{_USER})\) gid=\d+\([^)\s]*\)(?: groups=(?P<groups>\S+))?")
_ID_GROUP = re.compile(r"\d+\(([^)\s]+)\)")
# "groups USER" prints "USER : g1 g2 ..."; a line of that shape counts only when it lists a group every distribution
# has, so that "key : value words" of other programs do not.
_GROUPS = lazy(rf"^(?P<user>{_USER}) : (?P<groups>{_USER}(?: {_USER})*)\s*$")
_SYSTEM_GROUPS = r"\b(?:adm|sudo|wheel|users|video|render|plugdev|cdrom|audio|dialout|lpadmin|input)\b"
_SYSTEM_GROUP = re.compile(_SYSTEM_GROUPS)
_GROUP_DB = lazy(r"^(?P<group>render|video):x?:\d+:(?P<members>[\w.,-]*)\s*$")
_PROMPT = lazy(rf"^(?:\([\w.-]+\)\s*)?(?P<user>{_USER})@[\w.-]+:\S*[$#]\s")
_NEEDLES = Needles(r"\buid=\d+\(", r"^[a-z_][\w.-]{0,31} : [\w. -]*" + _SYSTEM_GROUPS,
                   r"^(?:render|video):x?:\d+:", r"^(?:\([\w.-]+\)\s*)?[a-z_][\w.-]{0,31}@[\w.-]+:\S*[$#]\s")


def parse(artifact: Artifact, case: Case) -> None:
    for where, text in _NEEDLES.machine_lines(artifact, case):
        if m := _ID.search(text):
            case.add_fact("account_user", m["user"], where, text.strip(), 50)
            if m["groups"]:
                case.add_fact("account_groups", ",".join(_ID_GROUP.findall(m["groups"])), where, text.strip(), 50)
        elif (m := _GROUPS.match(text)) and _SYSTEM_GROUP.search(m["groups"]):
            case.add_fact("account_user", m["user"], where, text.strip(), 40)
            case.add_fact("account_groups", ",".join(m["groups"].split()), where, text.strip(), 40)
        elif m := _GROUP_DB.match(text):
            case.add_fact(f"group_members_{m['group']}", m["members"], where, text.strip(), 40)
        elif m := _PROMPT.match(text):
            case.add_fact("account_user", m["user"], where, text.strip(), 20)
