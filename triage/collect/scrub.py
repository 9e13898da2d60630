"""``triage collect --redact``: the reports' redaction, applied before anything is written.

The reports' ``Redactor`` learns user and host names from the text; here it is also told
this machine's own (the login name, ``$USER``, the host name), and the home folder is
written ``~`` wherever it appears, so a bundle made on a machine whose home is not
``/home/NAME`` leaks no path either.
"""

from __future__ import annotations

import getpass
import os
import pwd
import re
import socket
from collections.abc import Callable, Iterable


def _machine_names() -> tuple[set[str], set[str], set[str]]:
    """This machine's user names, host names and home folders."""
    users = {os.environ.get(k, "") for k in ("USER", "LOGNAME", "USERNAME")}
    homes = {os.environ.get("HOME", "")}
    try:
        entry = pwd.getpwuid(os.getuid())
        users.add(entry.pw_name)
        homes.add(entry.pw_dir)
    except KeyError:
        pass
    try:
        users.add(getpass.getuser())
    except (KeyError, OSError):
        pass
    host = socket.gethostname()
    hosts = {host, host.split(".")[0]}
    return ({u for u in users if u}, {h for h in hosts if h},
            {h.rstrip("/") for h in homes if len(h.rstrip("/")) > 1})


def scrubber(texts: Iterable[str]) -> Callable[[str], str]:
    """A function that redacts one text, having learnt names from this machine and from ``texts``."""
    from triage.redact import Redactor

    users, hosts, homes = _machine_names()
    redactor = Redactor()
    for user in users:
        redactor.learn(f"USER={user}")
    for host in hosts:
        redactor.learn(f"hostname: {host}")
    for text in texts:
        redactor.learn(text)
    home = re.compile("|".join(re.escape(h) for h in sorted(homes, key=len, reverse=True)) + r"(?![\w.-])") if homes else None

    def scrub(text: str) -> str:
        if home is not None:
            text = home.sub("~", text)
        return redactor.text(text)

    return scrub
