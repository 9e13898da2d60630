"""The ways a log is altered on its way from a program to a pasted report, as functions on its text.

A collector puts its prefix before every line (journald, docker compose, Kubernetes, a container
runtime's log file, Ray and vLLM workers, srun, mpirun, pm2, Python's logging), a reply quotes it,
a viewer numbers its lines, a chat program makes its spaces no-break ones, Windows ends them with CRLF, a terminal keeps its colour codes, a page's
source escapes it, a terminal or a mail editor hard-wraps it, a program hands it on as one escaped string (a JSON
field, a Python exception's repr of the output it captured). The tool must read each the way it
reads the bare log: ``tools/robustness.py`` measures that on the whole corpus, the parser tests on
chosen cases.
"""

from __future__ import annotations

import html
import json
import textwrap
from collections.abc import Callable

Transform = Callable[[str], str]

# A prefix for the i-th non-empty line.
PREFIXES: dict[str, Callable[[int], str]] = {
    "journald": lambda i: f"Mar 03 12:00:{i % 60:02d} myhost python3[4242]: ",
    "journald-iso": lambda i: f"2024-05-01T10:11:{i % 60:02d}+0000 myhost python3[4242]: ",
    "compose": lambda i: "worker-1  | ",
    "kubectl": lambda i: "[pod/infer-0/server] ",
    "ci-clock": lambda i: f"2024-05-01T10:11:{i % 60:02d}.1234567Z ",
    "cri-log-file": lambda i: f"2024-05-01T10:11:{i % 60:02d}.123456789Z stderr F ",
    "python-logging": lambda i: f"2024-05-01 10:11:{i % 60:02d},345 - app - ERROR - ",
    "python-logging-default": lambda i: "ERROR:comfy.model_management:",
    "ray-worker": lambda i: "(RayWorkerWrapper pid=23810, ip=10.0.0.5) ",
    "ray-pid": lambda i: "(pid=23810) ",
    "vllm-worker": lambda i: "(VllmWorker rank=0 pid=4711) ",
    "srun-label": lambda i: f"{i % 2}: ",
    "mpirun-tag": lambda i: "[1,0]<stderr>:",
    "pm2": lambda i: "0|ollama   | ",
    "quoted": lambda i: "> ",
    "nix-build-log": lambda i: "       > ",
    "quoted-journald": lambda i: f"> Mar 03 12:00:{i % 60:02d} myhost python3[4242]: ",
    "cat-n": lambda i: f"{i + 1:6d}\t",
    "grep-n": lambda i: f"{i + 1}:",
    "editor-numbers": lambda i: f"{i + 1:4d}  ",
}


def prefixed(prefix: Callable[[int], str]) -> Transform:
    """The text with ``prefix(i)`` before its i-th line (blank lines left blank)."""
    return lambda text: "\n".join(prefix(i) + line if line.strip() else line for i, line in enumerate(text.split("\n")))


def folded(width: int) -> Transform:
    """A terminal's hard wrap: every line cut at ``width`` characters."""
    return lambda text: "\n".join(line[i:i + width] for line in text.split("\n")
                                  for i in range(0, max(len(line), 1), width))


def mail_wrapped(width: int) -> Transform:
    """A mail or forum editor's wrap: lines broken at spaces before ``width``."""
    return lambda text: "\n".join(part for line in text.split("\n")
                                  for part in (textwrap.wrap(line, width, break_long_words=False,
                                                             break_on_hyphens=False) or [""]))


def json_lines(field: str = "log") -> Transform:
    """Docker's json-file log driver (``log``) or ``journalctl -o json`` (``MESSAGE``): one object a line."""
    return lambda text: "\n".join(json.dumps({field: line + "\n", "stream": "stderr",
                                              "time": "2024-05-01T10:11:12.123456789Z"}) for line in text.split("\n"))


def chat_typography(text: str) -> str:
    """A chat or mail program's characters: no-break spaces for spaces, curly quotes for straight ones."""
    return text.replace(" ", "\u00a0").replace('"', "\u201c")


def html_source(text: str) -> str:
    """A page's HTML source: entities for the log's < > & and quotes, a <br /> at each line's end."""
    return "\n".join(html.escape(line) + "<br />" for line in text.split("\n"))


def json_escaped(text: str) -> str:
    """The log as one JSON string field of an object on one line after a logger's words (an API's error field, a CI
    job's JSON log): its newlines, quotes, backslashes and non-ASCII characters escaped."""
    return 'ERROR job failed: {"status": "failed", "log": ' + json.dumps(text) + "}"


def python_repr(text: str) -> str:
    """The log as Python prints captured output in an exception (``subprocess.CalledProcessError``'s ``output``):
    the repr of its bytes, one line."""
    return f"subprocess.CalledProcessError: Command returned non-zero exit status 1, output={text.encode('utf-8')!r}"


TRANSFORMS: dict[str, Transform] = {
    **{name: prefixed(prefix) for name, prefix in PREFIXES.items()},
    "docker-json": json_lines("log"),
    "journalctl-json": json_lines("MESSAGE"),
    "indent-4": prefixed(lambda i: "    "),
    "crlf": lambda text: text.replace("\n", "\r\n"),
    "ansi-colour": prefixed(lambda i: "\x1b[31m"),
    "html-source": html_source,
    "chat-typography": chat_typography,
    "fold-80": folded(80),
    "fold-100": folded(100),
    "mail-wrap-72": mail_wrapped(72),
    "json-escaped": json_escaped,
    "python-repr": python_repr,
}
