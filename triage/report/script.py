"""The HTML report's one inline script (reports/report.js) and the CSP hash that lets it run.

The report forbids every script by its Content-Security-Policy except this one, named by its
SHA-256: no nonce (the output stays byte-identical between runs) and no external file (the
report is one file that works offline).
"""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

from markupsafe import Markup

from triage.resources import data_dir

NAME = "report.js"


def script_hash(text: str) -> str:
    """The CSP source expression that allows exactly this script text."""
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def inline_script(templates: Path | None = None) -> dict[str, str]:
    """Template variables ``script`` (trusted markup) and ``script_hash``; a templates folder may carry its own."""
    path = templates / NAME if templates and (templates / NAME).is_file() else data_dir("reports") / NAME
    text = path.read_text(encoding="utf-8")
    if "</" in text:  # would end the <script> element early
        raise ValueError(f"{path}: '</' cannot appear in an inline script")
    return {"script": Markup(text), "script_hash": script_hash(text)}
