"""``triage collect --redact``: the reports' redaction, applied before anything is written.

The reports' ``Redactor`` learns user and host names from the text; here it is also told
this machine's own (the login name, ``$USER``, the host name), and the home folder is
written ``~`` wherever it appears, so a bundle made on a machine whose home is not
``/home/NAME`` leaks no path either. It also learns the values of the variables whose name
says they hold a credential (``FOO_CREDS``, ``MY_PASS``, ``HF_TOKEN``), so such a value is
replaced wherever the command printed it, and the command line is redacted argument by
argument (``--password X``, ``-p X`` after ``-u USER``).
"""

from __future__ import annotations

import getpass
import os
import pwd
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from triage.redact import Redactor


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


@dataclass
class Scrubber:
    """Redacts texts (``scrub(text)``) and command lines (``scrub.argv(argv)``) the same way."""

    redactor: Redactor
    home: re.Pattern[str] | None

    def __call__(self, text: str) -> str:
        if self.home is not None:
            text = self.home.sub("~", text)
        return self.redactor.text(text)

    def argv(self, argv: Iterable[str]) -> list[str]:
        argv = [self.home.sub("~", arg) if self.home is not None else arg for arg in argv]
        return self.redactor.argv(argv)


def scrubber(texts: Iterable[str], env: Mapping[str, str] | None = None) -> Scrubber:
    """A scrubber for texts (call it) and command lines (``.argv``), having learnt names from this
    machine and from ``texts``, and secrets from the credential-named variables of ``env`` (the
    command's environment; this process's when not given)."""
    from triage.redact import Redactor

    users, hosts, homes = _machine_names()
    redactor = Redactor()
    for user in users:
        redactor.learn(f"USER={user}")
    for host in hosts:
        redactor.learn(f"hostname: {host}")
    redactor.learn_environment(dict(os.environ if env is None else env))
    for text in texts:
        redactor.learn(text)
    home = re.compile("|".join(re.escape(h) for h in sorted(homes, key=len, reverse=True)) + r"(?![\w.-])") if homes else None
    return Scrubber(redactor, home)
