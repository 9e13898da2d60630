"""What the desk keeps of one triaged upload: the reports, the values it is filtered and grouped by, the input.

The triage itself is the paste page's (``triage.server.triage_upload``) and the reports are
``triage.report.render``'s, redacted there when asked; this module only decides what a case
row holds. An input is kept as sent when it fits ``max_input`` bytes, or, when redaction was
asked for, as the redacted text of each artifact (a binary artifact such as a minidump keeps
only its decoded text then): a re-triage reads it back from there.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triage.model import Artifact
from triage.pipeline import Result

SOURCES = ("paste", "file", "api")
STATUSES = ("open", "answered", "closed")
DEFAULT_MAX_INPUT = 8 << 20  # bytes of input kept per case
_ROCM_FACTS = ("rocm_version", "rocm_version_system")  # the failing process's ROCm, else the system's
_TEXT_LIMIT = 200  # characters kept of short labels (submitter, file name, fact values)


@dataclass
class Upload:
    """One submission as the desk received it."""

    data: bytes
    name: str
    source: str = "paste"
    redact: bool = False
    submitter: str = "local"


def _short(value: Any) -> str | None:
    if value is None or value == "":
        return None
    return str(value)[:_TEXT_LIMIT]


def cluster_key(stack: str | None, lines: list[str]) -> str | None:
    """The bucket an unknown case falls in, as ``triage corpus`` clusters them first: its stack hash and the set
    of its key lines' templates (16 hex digits). None when it has neither: a text with no error line and no stack
    has nothing in common with another such text ("hello" and an unreadable archive are not the same failure)."""
    from triage.match.templates import template

    shapes = sorted({template(line) for line in lines})
    if not stack and not shapes:
        return None
    return hashlib.sha1(json.dumps([stack, shapes]).encode("utf-8")).hexdigest()[:16]


def columns(result: Result, redact: bool) -> dict[str, Any]:
    """The case row's values that come from a triage: both reports and what the list filters and groups by."""
    from triage.corpus.stackhash import frames, stack_hash
    from triage.match.templates import key_lines
    from triage.report import render

    report_json = render(result, "json", redact=redact)
    report = json.loads(report_json)
    top = report["diagnoses"][0]
    facts = result.case.flat_facts()
    stack = stack_hash(frames(result.case))
    unknown = top["class"] == "unknown"
    return {
        "signature": top["id"],
        "klass": top["class"],
        "title": str(top.get("title") or ""),
        "confidence": float(top.get("confidence") or 0.0),
        "stack_hash": stack,
        "cluster_key": cluster_key(stack, key_lines(result.case)) if unknown else None,
        "gfx_arch": _short(facts.get("gfx_arch")),
        "os": _short(facts.get("os")),
        "rocm_version": _short(next((facts[n] for n in _ROCM_FACTS if facts.get(n)), None)),
        "tool_version": _short(result.versions.get("tool")),
        "signatures_version": _short(result.versions.get("signatures")),
        "report_json": report_json,
        "report_html": render(result, "html", redact=redact),
    }


def kept_input(upload: Upload, result: Result, max_input: int) -> dict[str, Any]:
    """How the input is stored: ``raw`` (the bytes sent), ``text`` (redacted artifacts) or ``none`` (too large)."""
    if upload.redact:
        from triage.redact import redactor_for

        redactor = redactor_for(result.case.artifacts)
        parts = [{"name": redactor.text(a.name), "text": redactor.text(a.text)} for a in result.case.artifacts]
        data = json.dumps(parts, ensure_ascii=False).encode("utf-8")
        name = redactor.text(upload.name)
        kind = "text"
    else:
        data, name, kind = upload.data, upload.name, "raw"
    if len(data) > max_input:
        return {"input_kind": "none", "input_data": None, "input_name": _short(name), "input_bytes": len(upload.data)}
    return {"input_kind": kind, "input_data": data, "input_name": _short(name), "input_bytes": len(upload.data)}


def triage(upload: Upload, signatures: Path | None = None, max_input: int = DEFAULT_MAX_INPUT) -> dict[str, Any]:
    """Triage an upload; the new case row's values (no id, time or status: the store sets those).

    Raises ``triage.ingest.IngestError`` when the upload cannot be read.
    """
    from triage.server import triage_upload

    result = triage_upload(upload.data, upload.name, signatures)
    return {
        **columns(result, upload.redact),
        **kept_input(upload, result, max_input),
        "source": upload.source if upload.source in SOURCES else "api",
        "submitter": _short(upload.submitter) or "anonymous",
        "redacted": upload.redact,
    }


def retriage(kind: str, data: bytes, name: str, redacted: bool, signatures: Path | None = None) -> dict[str, Any]:
    """The triage columns of a stored input again, with the database in ``signatures`` (the shipped one by default).

    Raises ValueError for a case whose input was not kept.
    """
    if kind == "raw":
        from triage.server import triage_upload

        return columns(triage_upload(data, name, signatures), redacted)
    if kind == "text":
        from triage.match import load
        from triage.pipeline import analyze
        from triage.resources import data_dir

        parts = json.loads(data.decode("utf-8"))
        artifacts = [Artifact(name=str(p["name"]), text=str(p["text"]), size=len(str(p["text"]).encode("utf-8")))
                     for p in parts]
        folder = signatures or data_dir("signatures")
        return columns(analyze(artifacts, load(folder), folder), redacted)
    raise ValueError("the input of this case was not kept (it was over the size limit)")
