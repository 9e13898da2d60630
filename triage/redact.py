"""Redaction of personal data for reports that are posted in public (``triage PATH --redact``).

Issue automation posts reports on public GitHub issues, so user names, host names, IP/MAC
addresses, e-mail addresses and serial numbers must not reach them. Values are replaced by
stable placeholders (``<user-1>``, ``<host-1>``, ``<ip-1>``, ``<mac-1>``, ``<email-1>``,
``<serial-1>``): one value always gets the same placeholder within one report, so the
evidence still reads coherently.

User and host names cannot be recognised by their shape, so a ``Redactor`` first *learns*
them from the case's text (home paths, shell prompts, journal prefixes, ``uname -a``,
``Hostname:``/``COMPUTERNAME=`` lines) and then replaces every whole-word occurrence in the
report. Redaction runs on the built report, after matching, so the diagnosis is unchanged.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from typing import Any

# Names that are generic (not personal) or that would wreck the report if replaced everywhere.
_GENERIC_NAMES = frozenset("""
    root user users admin administrator guest public default shared all everyone nobody
    localhost localdomain kernel linux version host hostname unknown none null computer
    ubuntu debian fedora arch archlinux manjaro cachyos nixos gentoo opensuse suse centos rhel
    rocky alma mint pop popos endeavouros windows darwin macos wsl docker container runner
    build builder ci test tests dev home local share amd rocm hip gpu cpu app system desktop
""".split())

_NAME = r"[A-Za-z0-9_][\w.-]*[A-Za-z0-9_]"  # at least 2 characters

# Where user names show: home folders and ~user (lowercase, so C++ destructors like ~Device stay).
_USER_PATTERNS = [
    re.compile(r"(?<![\w])/(?:home|Users)/(" + _NAME + r")(?=/|\b)"),
    re.compile(r"(?im)\b[A-Z]:(?:\\{1,2}|/)(?:Users|Documents and Settings)(?:\\{1,2}|/)([^\\/:*?\"<>|\r\n]+?)(?=\\|/)"),
    re.compile(r"(?im)\b[A-Z]:(?:\\{1,2}|/)(?:Users|Documents and Settings)(?:\\{1,2}|/)([^\\/:*?\"<>|\s]+)"),
    re.compile(r"(?m)(?<![\w:~])~([a-z_][a-z0-9_-]*[a-z0-9_])(?=/|[ \t](?!\()|$|['\"])"),
    re.compile(r"\b(?:USER|USERNAME|LOGNAME)=(" + _NAME + r")\b"),
]
# A shell prompt: alice@myhost:~$, [alice@myhost ~]$, alice@myhost ~ %.
_PROMPT = re.compile(r"(?m)(?:^|[ \t\[(])(" + _NAME + r")@([A-Za-z0-9][\w-]*[A-Za-z0-9])"
                     r"(?::\S*?[ \t]?[$#%>]|[ \t]+\S*\]?[ \t]?[$#%])")
_HOST_PATTERNS = [
    # journal / syslog: "Nov 29 21:03:11 myhost kernel: ..." or ISO timestamps
    re.compile(r"(?m)^[ \t]*(?:[A-Z][a-z]{2}[ \t]+\d{1,2}[ \t]+\d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[\d.,:+-]*Z?)"
               r"[ \t]+([A-Za-z0-9][\w.-]*)[ \t]+[\w./@-]+(?:\[\d+\])?:"),
    # uname -a: "Linux myhost 6.8.0-45-generic #45 ..."
    re.compile(r"\b(?:Linux|Darwin)[ \t]+([A-Za-z0-9][\w.-]*[A-Za-z][\w.-]*)[ \t]+\d+\.\d+"),
    re.compile(r"(?im)\b(?:static[ \t]+|transient[ \t]+)?(?:host[ \t]*name|computer[ \t]*name)[ \t]*[:=][ \t]*([A-Za-z0-9][\w.-]*)"),
    re.compile(r"(?m)^[ \t]*Computer:[ \t]+([A-Za-z0-9][\w.-]*)[ \t]*$"),
]

_EMAIL = re.compile(r"(?<![\w.+-])[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*\.[A-Za-z]{2,}\b")
_MAC = re.compile(r"(?<![\w:-])[0-9A-Fa-f]{2}([:-])(?:[0-9A-Fa-f]{2}\1){4}[0-9A-Fa-f]{2}(?![\w:-])")
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?!\w|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[\w.-]+)?(?![\w:]|\.\d)")
# A version, not an address: "version 1.2.3.4", "v1.2.3.4", "driver 31.0.0.1".
_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver\.?|v|driver|firmware|rocm|hip|release)\s*[:=]?\s*$")
_SERIAL = re.compile(r"(?i)\b(?:serial(?:[ _]?(?:number|no\.?|num|#))?|uuid|asset[ _]tag)\b[\"']?[ \t]*[:=][ \t]*[\"']?([^\s,;|'\"]+)")
_GPU_UUID = re.compile(r"\bGPU-[0-9A-Fa-f][0-9A-Fa-f-]{7,}\b")
_NOT_SERIAL = frozenset({"n/a", "na", "none", "unknown", "not", "to", "default", "0", "-", "(null)", "null",
                         "0x0", "<serial>"})
_PROTECTED_KEYS = frozenset({"id", "class", "status", "confidence", "matched", "against", "missing", "condition",
                             "versions"})
_MARK = re.compile("\ue000(\\d+)\ue001")


class Redactor:
    """Learns personal values from a case's text, then replaces them by stable placeholders."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._placeholder: dict[tuple[str, str], str] = {}  # (kind, folded value) -> placeholder
        self._counts: dict[str, int] = {}
        self._names: dict[str, str] = {}  # folded learnt user/host name -> placeholder
        self._serials: dict[str, str] = {}
        self._names_re: re.Pattern[str] | None = None
        for text in texts:
            self.learn(text)

    # learning -----------------------------------------------------------------------------

    def learn(self, text: str) -> None:
        """Collect user names, host names and serial numbers from one text (a line or a file)."""
        # whole-text scans (multi-line patterns that never cross a newline): fast on big logs
        for pattern in _USER_PATTERNS:
            for m in pattern.finditer(text):
                self._learn_name("user", m.group(1))
        for m in _PROMPT.finditer(text):
            self._learn_name("user", m.group(1))
            self._learn_name("host", m.group(2))
        for pattern in _HOST_PATTERNS:
            for m in pattern.finditer(text):
                self._learn_name("host", m.group(1))
        for m in _SERIAL.finditer(text):
            self._learn_serial(m.group(1))
        for m in _GPU_UUID.finditer(text):
            self._learn_serial(m.group(0))

    def _learn_name(self, kind: str, name: str) -> None:
        name = name.strip().strip(".")
        if "@" in name or not _worth_learning(name):
            return
        holder = self._get(kind, name)
        self._names.setdefault(name.casefold(), holder)
        if kind == "host" and "." in name:  # myhost.example.lan: the short name is the same host
            short = name.split(".")[0]
            if _worth_learning(short):
                self._names.setdefault(short.casefold(), holder)
        self._names_re = None

    def _learn_serial(self, value: str) -> None:
        if value.casefold() in _NOT_SERIAL or len(value) < 4:
            return
        self._serials.setdefault(value.casefold(), self._get("serial", value))
        self._names_re = None

    def _get(self, kind: str, value: str) -> str:
        key = (kind, value.casefold())
        if key not in self._placeholder:
            self._counts[kind] = self._counts.get(kind, 0) + 1
            self._placeholder[key] = f"<{kind}-{self._counts[kind]}>"
        return self._placeholder[key]

    @property
    def names(self) -> dict[str, str]:
        """The learnt user/host names (case-folded) and their placeholders."""
        return dict(self._names)

    # replacing ----------------------------------------------------------------------------

    def text(self, value: str) -> str:
        """One string with every personal value replaced."""
        if not value:
            return value
        marks: list[str] = []

        def hide(placeholder: str) -> str:  # placeholders are hidden until the end, so no pass rewrites another's
            marks.append(placeholder)
            return f"\ue000{len(marks) - 1}\ue001"

        s = _EMAIL.sub(lambda m: hide(self._get("email", m.group(0))), value)
        s = _SERIAL.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + (
            hide(self._get("serial", m.group(1))) if m.group(1).casefold() not in _NOT_SERIAL and len(m.group(1)) >= 4
            else m.group(1)), s)
        s = _GPU_UUID.sub(lambda m: hide(self._get("serial", m.group(0))), s)
        s = _MAC.sub(lambda m: hide(self._get("mac", m.group(0))), s)
        s = _IPV6.sub(lambda m: self._ip(m, hide), s)
        s = _IPV4.sub(lambda m: self._ip(m, hide), s)
        for pattern in _USER_PATTERNS[:4]:  # home paths of users not learnt from the case (e.g. in file names)
            s = pattern.sub(lambda m: self._user_in_path(m, hide), s)
        names = self._names_pattern()
        if names is not None:
            s = names.sub(lambda m: hide(self._names.get(m.group(0).casefold())
                                         or self._serials[m.group(0).casefold()]), s)
        return _MARK.sub(lambda m: marks[int(m.group(1))], s)

    def _ip(self, m: re.Match[str], hide) -> str:
        raw = m.group(0)
        address = raw.split("%")[0].split("/")[0]
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return raw
        if ip.version == 6 and not any(c.isdigit() for c in address):
            return raw  # "add::bad" is more likely a C++ name than an address
        if ip.version == 4 and _VERSION_BEFORE.search(m.string[max(0, m.start() - 12): m.start()]):
            return raw
        if ip.is_unspecified or ip.is_loopback:
            return raw  # 0.0.0.0, 127.0.0.1, ::1 say nothing about the user
        return hide(self._get("ip", address)) + raw[len(address):]

    def _user_in_path(self, m: re.Match[str], hide) -> str:
        name = m.group(1)
        if not _worth_learning(name.strip()) or "\ue000" in name:
            return m.group(0)
        holder = self._names.get(name.strip().casefold()) or self._get("user", name.strip())
        return m.group(0)[: m.start(1) - m.start(0)] + hide(holder) + m.group(0)[m.end(1) - m.start(0):]

    def _names_pattern(self) -> re.Pattern[str] | None:
        if self._names_re is None and (self._names or self._serials):
            values = sorted({*self._names, *self._serials}, key=len, reverse=True)  # longest first
            self._names_re = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:" + "|".join(map(re.escape, values))
                                        + r")(?![A-Za-z0-9_])")
        return self._names_re

    def data(self, value: Any, key: str | None = None) -> Any:
        """A report structure with every string redacted; keys stay, and so do the diagnosis' ids."""
        if key in _PROTECTED_KEYS:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {k: self.data(v, k if isinstance(k, str) else None) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(self.data(v) for v in value)
        return value


def _worth_learning(name: str) -> bool:
    """Too short, generic or numeric names would replace harmless words all over the report."""
    return (len(name) >= 2 and name.casefold() not in _GENERIC_NAMES and not name.replace(".", "").isdigit()
            and any(c.isalpha() for c in name))


def redactor_for(artifacts: Iterable[Any]) -> Redactor:
    """A Redactor learnt from the case's artifacts: their names and every line."""
    redactor = Redactor()
    for artifact in artifacts:
        redactor.learn(artifact.name)
        for line in artifact.lines:
            redactor.learn(line)
    return redactor


def redact_report(report: dict, redactor: Redactor) -> dict:
    """The report dict with every string value redacted (keys and diagnosis ids stay)."""
    return redactor.data(report)
