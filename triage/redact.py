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

Secrets go too, each to a typed placeholder so the report stays readable: tokens and keys
recognised by their shape (``ghp_...`` -> ``<github-token>``, ``AKIA...`` -> ``<aws-key-id>``,
``eyJ...`` -> ``<jwt>``), and values recognised by the name or flag before them, which stays
(``password=<redacted>``, ``--token <redacted>``, ``FOO_CREDS=<redacted>``). The kinds are the
tables below (``TOKEN_KINDS``, ``SECRET_WORDS``), the one place that knows them: ``triage
collect --redact`` uses the same ones for the environment, the command line and the output.
Every pattern is linear: at most one unbounded (possessive) repeat per run of characters, and a
match starts only where such a run begins, so a megabyte-long line costs one pass.
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
_MAC_DOTTED = re.compile(r"(?<![\w.:-])[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}\.[0-9A-Fa-f]{4}(?![\w:-]|\.[0-9A-Za-z])")  # Cisco
_IPV4 = re.compile(r"(?<![\w.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?!\w|\.\d)")
_IPV6 = re.compile(r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?:%[\w.-]+)?(?![\w:]|\.\d)")
# A version, not an address: "version 1.2.3.4", "v1.2.3.4", "driver 31.0.0.1".
_VERSION_BEFORE = re.compile(r"(?i)(?:version|ver\.?|v|driver|firmware|rocm|hip|release)\s*[:=]?\s*$")
# "Serial Number:", amd-smi's ASIC_SERIAL / PRODUCT_SERIAL, rocm-smi's "Unique ID:", rocminfo's "Uuid:".
_SERIAL = re.compile(r"(?i)(?<![A-Za-z0-9])(?:serial(?:[ _]?(?:number|no\.?|num|#))?|uuid|unique[ _]?id|asset[ _]tag)"
                     r"(?![A-Za-z0-9])[\"']?[ \t]*[:=][ \t]*[\"']?([^\s,;|'\"]+)")
# Without a colon: lspci -vv's "Device Serial Number 12-34-56-ff-fe-78-9a-bc", a table's "Serial Number  ABC123".
_SERIAL_SPACED = re.compile(r"(?i)(?<![A-Za-z0-9])serial[ _]?(?:number|no\.?|num)[ \t]+([^\s,;|'\":=]{4,128}+)(?![:=])")
_GPU_UUID = re.compile(r"\bGPU-[0-9A-Fa-f][0-9A-Fa-f-]{7,}\b")
_NOT_SERIAL = frozenset({"n/a", "na", "none", "unknown", "not", "to", "default", "0", "-", "(null)", "null",
                         "0x0", "<serial>"})
_PROTECTED_KEYS = frozenset({"id", "class", "status", "confidence", "matched", "against", "missing", "condition",
                             "versions"})
_LONGEST_NAME = 128  # longer "names" and serials are not learnt (hostnames are at most 63 characters a label)
_MARK = re.compile("\ue000(\\d+)\ue001")

# --- secrets ------------------------------------------------------------------------------
# Linear patterns only: one unbounded repeat per run of characters, possessive (``{m,n}+``) so
# it never backtracks, and a start only where a run begins (the lookbehind), so every
# character is scanned a bounded number of times whatever the line holds.

REDACTED = "<redacted>"
_RUN = r"(?<![A-Za-z0-9_-])"  # a token starts where a run of token characters starts
_END = r"(?![A-Za-z0-9_-])"

# Tokens and keys whose shape alone says what they are: (placeholder, the text each starts with,
# pattern, needs mixed case). The start is a quick test that skips the pattern on most lines.
_AWS_ID_PREFIXES = ("AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA", "AIPA", "ANPA", "ANVA", "AROA", "APKA", "ASCA")
TOKEN_KINDS: tuple[tuple[str, tuple[str, ...], str, bool], ...] = (
    ("<github-token>", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), _RUN + r"gh[pousr]_[A-Za-z0-9]{36,251}+" + _END, False),
    ("<github-token>", ("github_pat_",), _RUN + r"github_pat_[A-Za-z0-9_]{22,244}+" + _END, False),  # fine-grained
    ("<gitlab-token>", ("glpat-",), _RUN + r"glpat-[A-Za-z0-9_-]{20,64}+" + _END, False),
    ("<hf-token>", ("hf_",), _RUN + r"hf_[A-Za-z0-9]{30,64}+" + _END, False),                  # Hugging Face
    ("<api-key>", ("sk-",), _RUN + r"sk-[A-Za-z0-9_-]{20,200}+" + _END, True),                 # OpenAI, Anthropic
    ("<slack-token>", ("xox",), _RUN + r"xox[abposr]-[A-Za-z0-9-]{10,250}+" + _END, False),
    ("<google-api-key>", ("AIza",), _RUN + r"AIza[A-Za-z0-9_-]{35}" + _END, False),
    ("<npm-token>", ("npm_",), _RUN + r"npm_[A-Za-z0-9]{36}" + _END, False),
    ("<aws-key-id>", _AWS_ID_PREFIXES, r"(?<![A-Za-z0-9])(?:" + "|".join(_AWS_ID_PREFIXES) + r")[A-Z0-9]{16}(?![A-Za-z0-9])",
     False),
    ("<jwt>", ("eyJ",), _RUN + r"eyJ[A-Za-z0-9_-]{4,8192}+\.[A-Za-z0-9_-]{4,16384}+\.[A-Za-z0-9_-]{0,8192}+" + _END, False),
)
_TOKENS = [(holder, starts, re.compile(pattern), mixed) for holder, starts, pattern, mixed in TOKEN_KINDS]

# Names of keys, variables and flags whose value is a secret, as words of the name: any word
# ends such a name (``password=``, ``db.password:``, ``GITHUB_TOKEN=``, ``--api-key``), a suffix
# word only after another word (``MY_PASS=``, ``AWS_KEY=``, never a bare ``key:`` or ``pass``).
# Bare weak words (``token:``) need ``=`` or quotes: "unexpected token: ')'" is a compiler's.
SECRET_WORDS = ("password", "passwd", "passphrase", "secret", "token", "credentials", "credential", "creds", "cred",
                "api_key", "api-key", "apikey", "access_token", "access-token", "auth_token", "auth-token",
                "client_secret", "client-secret", "private_key", "private-key", "secret_key", "secret-key",
                "access_key", "access-key")
SECRET_SUFFIX_WORDS = ("pass", "pw", "pwd", "key", "pat", "auth")
_WEAK_WORDS = frozenset({"secret", "token", "credentials", "credential", "creds", "cred"})


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=len, reverse=True))


_ANY = _alternation(SECRET_WORDS)
_SUFFIX = _alternation(SECRET_SUFFIX_WORDS)


def _shortest(words: set[str]) -> tuple[str, ...]:
    """The words that hold no other of them: the fewest substrings that find any of them."""
    return tuple(sorted(w for w in words if not any(o != w and o in w for o in words)))


# A quick test for a text that may hold a secret by name (lowercased: one of the words, or a
# suffix word after a separator), cheaper than the patterns it spares most lines.
_SECRET_HINTS = _shortest({*SECRET_WORDS, *(sep + w for w in SECRET_SUFFIX_WORDS for sep in "_.-")})


def _named_secret_hint(text: str) -> bool:
    low = text.lower()
    return any(hint in low for hint in _SECRET_HINTS)


_VALUE = r"(?:\"[^\"\n]{1,256}+\"|'[^'\n]{1,256}+'|[^\s\"',;&]{1,512}+)"
# --password=X, --password X, --api-key X, -pass X (the flag is kept, the value goes)
_FLAG = re.compile(r"(?i)(?<![A-Za-z0-9_-])(--?(?:[A-Za-z0-9_-]*[_-])?(?:" + _ANY + "|" + _SUFFIX + r"))"
                   r"(=|[ \t]+(?!-))(" + _VALUE + ")")
_FLAG_NAME = re.compile(r"(?i)--?(?:[A-Za-z0-9_-]*[_-])?(?:" + _ANY + "|" + _SUFFIX + ")")
# name=X, name: X, "name": "X"; the name's words decide (see SECRET_WORDS)
_KEY_VALUE = re.compile(r"(?i)(?<![A-Za-z0-9_.-])(?P<name>(?P<prefix>[A-Za-z0-9_.-]*[_.-])?(?P<word>" + _ANY + ")"
                        r"|[A-Za-z0-9_.-]*[_.-](?:" + _SUFFIX + r"))"
                        r"(?P<sep>[\"']?[ \t]*[:=][ \t]*)(?P<value>" + _VALUE + ")")
# AWS's secret access key: 40 characters of base64 after its name.
_AWS_SECRET = re.compile(r"(?i)((?<![A-Za-z0-9])(?:aws_?secret_?key|(?:aws_?)?secret_?access_?key)[\"']?[ \t]*[:=][ \t]*"
                         r"[\"']?)([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")
_BEARER = re.compile(r"(?i)(" + _RUN + r"bearer[ \t]+)([A-Za-z0-9._~+/-]{8,8192}+=*)")
_AUTHORIZATION = re.compile(r"(?i)(" + _RUN + r"(?:proxy-)?authorization[\"']?[ \t]*[:=][ \t]*[\"']?(?:basic|token|digest)"
                            r"[ \t]+)([A-Za-z0-9._~+/=-]{6,8192}+)")
# scheme://user:password@host
_URL_CREDENTIALS = re.compile(r"(?i)((?<![A-Za-z0-9+.-])[a-z][a-z0-9+.-]{1,15}://)([^\s:/@\"'<>]{1,256}+):"
                              r"([^\s/@\"'<>]{1,256}+)@")
# -p VALUE is a password only where the line says so: sshpass, mysql, docker login, or a -u USER before it.
_P_CONTEXT = re.compile(r"(?i)(?<![A-Za-z0-9_.-])(?:sshpass|mysql|mysqldump|mysqladmin|mysqlimport|mysqlshow|"
                        r"mysqlcheck|mariadb|mariadb-dump|mariadb-admin)(?![A-Za-z0-9_.-])"
                        r"|(?<![A-Za-z0-9_.-])(?:docker|podman|nerdctl|buildah|skopeo|helm|oras)[ \t]+login(?![\w-])"
                        r"|(?<!\S)(?:-u|--user|--username|--login)(?:[ \t=]+|(?=[^\s-]))(?!-)\S")
_P_FLAG = re.compile(r"(?<!\S)(-p)([ \t]+(?!-)|(?=[^\s-]))(" + _VALUE + ")")
# Values that say there is none; and words after a flag or a colon that are prose ("--token is required").
_NOT_VALUE = frozenset({"none", "null", "(null)", "nil", "***", "...", "unset", "empty", "redacted", "hidden", "masked",
                        "n/a"})
_PROSE = frozenset({"is", "are", "was", "were", "must", "should", "required", "missing", "not", "and", "or", "the",
                    "a", "an", "to", "of", "for", "option", "argument", "flag", "needs", "requires", "expects", "can",
                    "cannot", "may", "will", "given", "set", "specified", "invalid", "expired", "true", "false", "yes",
                    "no", "changed", "file", "from", "in", "with", "without"})
# Names and flags of environment variables that may hold a credential (also substrings of a name).
_SECRET_NAME_PARTS = re.compile(r"(?i)TOKEN|SECRET|PASSW|PASSPHRASE|KEY|CREDENTIAL|CREDS|AUTH|COOKIE|SESSION|PRIVATE|"
                                r"SIGNATURE")
_SECRET_NAME_WORDS = re.compile(r"(?i)(?:^|[_.-])(?:" + _ANY + "|" + _SUFFIX + r"|cred)(?:$|[_.-])")
# An opaque value: a long run of token characters with letters and digits and no path in it.
_OPAQUE_VALUE = re.compile(r"^(?=[^/]*\d)(?=[^/]*[A-Za-z])[A-Za-z0-9_+/=-]{24,}$")
# user@host that is not an address: symbol versions, gdb's x@entry, systemd units, build daemons.
_USER_AT_HOST = re.compile(r"(?<![\w.+@/-])([A-Za-z_][\w.-]{0,63}+)@([A-Za-z][A-Za-z0-9-]{0,62}+"
                           r"(?:\.[A-Za-z0-9][A-Za-z0-9-]{0,62}+){0,8}+|(?:\d{1,3}\.){3}\d{1,3})(?![\w@/]|\.[A-Za-z0-9])")
_NOT_HOSTS = frozenset({"entry", "plt", "got", "gotpcrel", "gotoff", "gottpoff", "tpoff", "dtpoff", "tlsgd", "tlsld",
                        "base", "http", "https", "file", "ssh", "git", "latest", "main", "master", "head"})
_UNIT_SUFFIXES = (".service", ".socket", ".target", ".slice", ".scope", ".mount", ".timer", ".path", ".device")
_BUILD_USERS = frozenset({"buildd", "mockbuild", "abuild", "portage", "nixbld", "builder"})


def _serial_shaped(value: str) -> bool:
    """A serial without a colon before it must look like one: a digit in it, not a placeholder."""
    return len(value) >= 6 and any(c.isdigit() for c in value) and value.casefold() not in _NOT_SERIAL


def _mixed(value: str) -> bool:
    return any(c.isdigit() for c in value) and any(c.islower() for c in value) and any(c.isupper() for c in value)


def _unquote(value: str) -> str:
    return value[1:-1] if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'" else value


def _is_value(value: str, prose: bool = True) -> bool:
    """A flag's or key's value, not a reference, a placeholder or (``prose``) a word of a sentence."""
    bare = _unquote(value)
    folded = bare.casefold()
    return (bool(bare) and folded not in _NOT_VALUE and not (prose and folded in _PROSE)
            and not bare.startswith(("$", "<", "%")) and "\ue000" not in bare)


def _requote(value: str, holder: str) -> str:
    return value[0] + holder + value[-1] if _unquote(value) != value else holder


def _learnable_secret(value: str) -> bool:
    """A value worth replacing wherever it appears: long, unlike a word or a path."""
    bare = _unquote(value)
    return (6 <= len(bare) <= 256 and _is_value(bare) and not any(c.isspace() or c in "/\\" for c in bare)
            and any(c.isalpha() for c in bare) and any(not c.isalpha() for c in bare))


def secret_name(name: str) -> bool:
    """True for a variable or key name that may hold a credential (``FOO_CREDS``, ``MY_PASS``, ``HF_TOKEN``)."""
    return bool(_SECRET_NAME_PARTS.search(name) or _SECRET_NAME_WORDS.search(name))


def secret_value(value: str) -> bool:
    """True for a value that is or holds a credential: a token's shape, ``--password X``, or an opaque key."""
    return bool(_OPAQUE_VALUE.match(value)) or Redactor().secrets(value) != value


class Redactor:
    """Learns personal values from a case's text, then replaces them by stable placeholders."""

    def __init__(self, texts: Iterable[str] = ()) -> None:
        self._placeholder: dict[tuple[str, str], str] = {}  # (kind, folded value) -> placeholder
        self._counts: dict[str, int] = {}
        self._names: dict[str, str] = {}  # folded learnt user/host name -> placeholder
        self._serials: dict[str, str] = {}
        self._secrets: set[str] = set()  # folded learnt secret values (a password seen after its flag)
        self._names_re: re.Pattern[str] | None = None
        for text in texts:
            self.learn(text)

    # learning -----------------------------------------------------------------------------

    def learn(self, text: str) -> None:
        """Collect user names, host names, serial numbers and secrets from one text (a line or a file)."""
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
        for m in _SERIAL_SPACED.finditer(text):
            if _serial_shaped(m.group(1)):
                self._learn_serial(m.group(1))
        for m in _GPU_UUID.finditer(text):
            self._learn_serial(m.group(0))
        for m in _USER_AT_HOST.finditer(text) if "@" in text else ():
            if not _EMAIL.fullmatch(m.group(0)) and self._personal_at(m.group(1), m.group(2)):
                if m.group(1).casefold() not in _BUILD_USERS:
                    self._learn_name("user", m.group(1))
                if not m.group(2)[0].isdigit():
                    self._learn_name("host", m.group(2))
        self._learn_secrets(text)

    def _learn_secrets(self, text: str) -> None:
        """Values after a password flag or key, so the same value is replaced where it shows alone."""
        if _named_secret_hint(text):
            for m in _FLAG.finditer(text):
                self._learn_secret(m.group(3))
            for m in _KEY_VALUE.finditer(text):
                if self._key_value_is_secret(m):
                    self._learn_secret(m.group("value"))
            for m in _AWS_SECRET.finditer(text):
                self._learn_secret(m.group(2))
        for m in _URL_CREDENTIALS.finditer(text) if "://" in text else ():
            self._learn_secret(m.group(3))
        for start, end in _p_lines(text):
            for m in _P_FLAG.finditer(text, start, end):
                self._learn_secret(m.group(3))

    def _learn_secret(self, value: str) -> None:
        if _learnable_secret(value):
            self._secrets.add(_unquote(value).casefold())
            self._names_re = None

    def learn_environment(self, env: dict[str, str]) -> None:
        """The values of variables whose name says they hold a credential (``FOO_CREDS``, ``MY_PASS``)."""
        for name, value in env.items():
            if _SECRET_NAME_WORDS.search(name):
                self._learn_secret(value)

    @staticmethod
    def _personal_at(user: str, host: str) -> bool:
        """``user@host`` names a person's account, not a symbol version, gdb's ``x@entry`` or a unit."""
        folded = host.casefold()
        return not (folded in _NOT_HOSTS or folded.endswith(_UNIT_SUFFIXES) or len(user) < 2 or len(host) < 2
                    or (user.casefold() in _BUILD_USERS and not host[0].isdigit()))

    def _learn_name(self, kind: str, name: str) -> None:
        name = name.strip().strip(".")
        if "@" in name or not _worth_learning(name) or len(name) > _LONGEST_NAME:
            return
        holder = self._get(kind, name)
        self._names.setdefault(name.casefold(), holder)
        if kind == "host" and "." in name:  # myhost.example.lan: the short name is the same host
            short = name.split(".")[0]
            if _worth_learning(short):
                self._names.setdefault(short.casefold(), holder)
        self._names_re = None

    def _learn_serial(self, value: str) -> None:
        if value.casefold() in _NOT_SERIAL or not 4 <= len(value) <= _LONGEST_NAME:
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

    @property
    def learnt_secrets(self) -> frozenset[str]:
        """The learnt secret values (case-folded), replaced by ``<redacted>`` wherever they appear."""
        return frozenset(self._secrets)

    # replacing ----------------------------------------------------------------------------

    def secrets(self, value: str) -> str:
        """One string with its secrets replaced (tokens, keys, passwords), and nothing else."""
        if not value:
            return value
        marks: list[str] = []

        def hide(placeholder: str) -> str:
            marks.append(placeholder)
            return f"\ue000{len(marks) - 1}\ue001"

        return _MARK.sub(lambda m: marks[int(m.group(1))], self._secrets_hidden(value, hide))

    def _secrets_hidden(self, s: str, hide) -> str:
        """The secret passes, most specific first; each replacement hidden from the later passes."""
        for holder, starts, pattern, mixed in _TOKENS:
            if any(start in s for start in starts):
                s = pattern.sub(lambda m, h=holder, x=mixed: hide(h) if not x or _mixed(m.group(0)) else m.group(0), s)
        low = s.lower()
        named = any(hint in low for hint in _SECRET_HINTS)
        if "secret" in low:
            s = _AWS_SECRET.sub(lambda m: m.group(1) + hide("<aws-secret>"), s)
        if "bearer" in low:
            s = _BEARER.sub(lambda m: m.group(1) + hide("<token>") if any(c.isdigit() for c in m.group(2))
                            else m.group(0), s)
        if "authorization" in low:
            s = _AUTHORIZATION.sub(lambda m: m.group(1) + hide("<token>"), s)
        if "://" in s:
            s = _URL_CREDENTIALS.sub(lambda m: m.group(1) + hide(self._get("user", m.group(2))
                                                                 if _worth_learning(m.group(2)) else m.group(2))
                                     + ":" + hide(REDACTED) + "@", s)
        if named:
            s = _FLAG.sub(lambda m: m.group(1) + m.group(2) + hide(_requote(m.group(3), REDACTED))
                          if _is_value(m.group(3), prose=m.group(2) != "=") else m.group(0), s)
        lines = _p_lines(s)
        if lines:
            s = _replace_in(s, lines, lambda line: _P_FLAG.sub(
                lambda m: m.group(1) + m.group(2) + hide(_requote(m.group(3), REDACTED))
                if _is_value(m.group(3), prose=bool(m.group(2))) else m.group(0), line))
        if named:
            s = _KEY_VALUE.sub(lambda m: m.group(0)[: m.start("value") - m.start(0)]
                               + hide(_requote(m.group("value"), REDACTED)) if self._key_value_is_secret(m)
                               else m.group(0), s)
        return s

    @staticmethod
    def _key_value_is_secret(m: re.Match[str]) -> bool:
        if not _is_value(m.group("value"), prose="=" not in m.group("sep")):
            return False
        weak = m.group("word") is not None and m.group("prefix") is None and m.group("word").casefold() in _WEAK_WORDS
        # "unexpected token: ')'" is not a token; "token=..." and "\"token\": ..." are
        return not (weak and "=" not in m.group("sep") and not m.group("sep").startswith(("\"", "'")))

    def argv(self, argv: Iterable[str]) -> list[str]:
        """A command line with every argument redacted, and the argument after a password flag
        (``--password X``, ``--token X``, ``-p X`` after ``-u USER``) replaced by ``<redacted>``."""
        argv = list(argv)
        p_is_password = bool(_P_CONTEXT.search(" ".join(argv)))
        out: list[str] = []
        value_next = False
        for arg in argv:
            if value_next and _is_value(arg, prose=False) and not arg.startswith("-"):
                out.append(REDACTED)
                value_next = False
                continue
            value_next = bool(_FLAG_NAME.fullmatch(arg)) or (p_is_password and arg == "-p")
            attached = arg[2:] if p_is_password and arg.startswith("-p") and arg[2:3] not in ("", "-") else ""
            if attached and _is_value(attached, prose=False):  # -pSECRET
                out.append("-p" + REDACTED)
                continue
            out.append(self.text(arg))
        return out

    def text(self, value: str) -> str:
        """One string with every secret and personal value replaced."""
        if not value:
            return value
        marks: list[str] = []

        def hide(placeholder: str) -> str:  # placeholders are hidden until the end, so no pass rewrites another's
            marks.append(placeholder)
            return f"\ue000{len(marks) - 1}\ue001"

        s = self._secrets_hidden(value, hide)
        s = _EMAIL.sub(lambda m: m.group(0) if m.group(0).casefold().endswith(_UNIT_SUFFIXES)  # user@1000.service
                       else hide(self._get("email", m.group(0))), s)
        s = _SERIAL.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + (
            hide(self._get("serial", m.group(1))) if m.group(1).casefold() not in _NOT_SERIAL and len(m.group(1)) >= 4
            else m.group(1)), s)
        s = _SERIAL_SPACED.sub(lambda m: m.group(0)[: m.start(1) - m.start(0)] + hide(self._get("serial", m.group(1)))
                               if _serial_shaped(m.group(1)) else m.group(0), s)
        s = _GPU_UUID.sub(lambda m: hide(self._get("serial", m.group(0))), s)
        s = _MAC.sub(lambda m: hide(self._get("mac", m.group(0))), s)
        s = _MAC_DOTTED.sub(lambda m: m.group(0) if _VERSION_BEFORE.search(m.string[max(0, m.start() - 12): m.start()])
                            else hide(self._get("mac", m.group(0))), s)
        s = _USER_AT_HOST.sub(lambda m: self._user_at_host(m, hide), s)
        s = _IPV6.sub(lambda m: self._ip(m, hide), s)
        s = _IPV4.sub(lambda m: self._ip(m, hide), s)
        for pattern in _USER_PATTERNS[:4]:  # home paths of users not learnt from the case (e.g. in file names)
            s = pattern.sub(lambda m: self._user_in_path(m, hide), s)
        names = self._names_pattern()
        if names is not None:
            s = names.sub(lambda m: hide(self._names.get(m.group(0).casefold())
                                         or self._serials.get(m.group(0).casefold()) or REDACTED), s)
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

    def _user_at_host(self, m: re.Match[str], hide) -> str:
        """``alice@gpubox`` -> ``<user-1>@<host-1>``; an IP address after the @ is left to the IP pass."""
        user, host = m.group(1), m.group(2)
        if not self._personal_at(user, host):
            return m.group(0)
        if host[0].isdigit():
            shown_host = host
        else:
            shown_host = hide(self._names.get(host.casefold()) or self._get("host", host)) if _worth_learning(host) else host
        if user.casefold() in _BUILD_USERS or not _worth_learning(user):
            shown_user = user
        else:
            shown_user = hide(self._names.get(user.casefold()) or self._get("user", user))
        return shown_user + "@" + shown_host

    def _user_in_path(self, m: re.Match[str], hide) -> str:
        name = m.group(1)
        if not _worth_learning(name.strip()) or "\ue000" in name:
            return m.group(0)
        holder = self._names.get(name.strip().casefold()) or self._get("user", name.strip())
        return m.group(0)[: m.start(1) - m.start(0)] + hide(holder) + m.group(0)[m.end(1) - m.start(0):]

    def _names_pattern(self) -> re.Pattern[str] | None:
        if self._names_re is None and (self._names or self._serials or self._secrets):
            values = {*self._names, *self._serials, *self._secrets}
            try:
                alternation = _trie(values)
                self._names_re = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:" + alternation + r")(?![A-Za-z0-9_])")
            except RecursionError:  # a trie too deep for the regex compiler: the plain alternation, longest first
                alternation = "|".join(map(re.escape, sorted(values, key=len, reverse=True)))
                self._names_re = re.compile(r"(?i)(?<![A-Za-z0-9_])(?:" + alternation + r")(?![A-Za-z0-9_])")
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


def _trie(words: Iterable[str]) -> str:
    """An alternation of ``words`` as a trie (``a(?:lice(?:-pc)?|nn)``): the longest first, and a
    cost per position that grows with the length of a name, not with how many names were learnt."""
    root: dict = {}
    for word in words:
        node = root
        for ch in word:
            node = node.setdefault(ch, {})
        node[""] = {}

    def pattern(node: dict) -> str:
        branches = [re.escape(ch) + pattern(child) for ch, child in sorted(node.items()) if ch]
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return pattern(root)


def _p_lines(text: str) -> list[tuple[int, int]]:
    """The (start, end) of each line where ``-p`` takes a password (see ``_P_CONTEXT``), in order."""
    spans: list[tuple[int, int]] = []
    if "-p" not in text:
        return spans
    pos = 0
    while (m := _P_CONTEXT.search(text, pos)) is not None:  # one search per line that has the context
        start = text.rfind("\n", pos, m.start()) + 1 or pos
        end = text.find("\n", m.end())
        end = len(text) if end < 0 else end
        spans.append((start, end))
        pos = end + 1
    return spans


def _replace_in(text: str, spans: list[tuple[int, int]], change) -> str:
    """``text`` with each span (in order, not overlapping) passed through ``change``."""
    parts, last = [], 0
    for start, end in spans:
        if start < last:
            continue
        parts += [text[last:start], change(text[start:end])]
        last = end
    parts.append(text[last:])
    return "".join(parts)


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
