"""Turn a triage Result into the report formats: JSON, and HTML, Markdown, text from templates.

One plain dict (``build``) is the report: JSON prints it, and every template renders from it,
so the formats cannot disagree. The shipped text template is also written in Python
(``triage.report.text``), which a text run uses unless ``--templates`` names another folder.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import TYPE_CHECKING

from triage.lazy import lazy
from triage.match.database import THEN_WITHIN, Condition, Database, Signature
from triage.match.engine import render as fill
from triage.model import Diagnosis, Fact, Frame, to_plain
from triage.pipeline import Result
from triage.report.github import clip, code_span, fenced, fit_comment, inline, link, visible
from triage.resources import cache_dir, data_dir

if TYPE_CHECKING:
    from jinja2 import Environment

FORMATS = {"html": "report.html.j2", "md": "report.md.j2", "markdown": "report.md.j2", "text": "summary.txt.j2"}


def _hex(value: int | None) -> str | None:
    return None if value is None else f"0x{value:x}"


def _frame(frame: Frame) -> dict:
    return {
        "index": frame.index,
        "address": _hex(frame.address),
        "module": frame.module,
        "offset": _hex(frame.offset),
        "symbol": frame.symbol,
        "symbol_offset": _hex(frame.symbol_offset),
        "symbol_source": frame.symbol_source,
        "symbol_note": frame.symbol_note,
        "file": frame.file,
        "file_line": frame.file_line,
        "artifact": frame.where.artifact,
        "line": frame.where.line,
        "text": frame.text,
    }


def _not_collected(fact: Fact) -> dict:
    """A ``triage collect`` manifest's "could not collect ITEM: WHY" as the report lists it."""
    item, _, why = fact.value.partition(": ")
    return {"item": item, "why": why, "artifact": fact.where.artifact, "line": fact.where.line}


def _shown(diagnosis: Diagnosis) -> dict:
    """A diagnosis as plain data without the texts not made yet (``Diagnosis.pending``): what a report that lists
    it by its id, class and confidence needs, without filling its title, root cause and workarounds."""
    pending = diagnosis.__dict__.get("_pending") or ()
    return {"class" if f.name == "klass" else f.name: to_plain(getattr(diagnosis, f.name))
            for f in dataclasses.fields(diagnosis) if f.name not in pending}


def build(result: Result, others: bool = True) -> dict:
    """The report as plain data (the JSON contract). Without ``others``, the diagnoses after the first lack the
    texts that were not made yet (the text report shows only their id, class and confidence)."""
    case = result.case
    fault = None
    if case.fault:
        f = case.fault
        fault = {
            "kind": f.kind, "signal": f.signal, "si_code": f.si_code, "code": f.code, "code_name": f.code_name,
            "address": _hex(f.address), "access": f.access, "module": f.module, "offset": _hex(f.offset),
            "offset_note": f.offset_note, "symbol": f.symbol, "symbol_source": f.symbol_source,
            "instruction": f.instruction,
            "evidence": [{"artifact": w.artifact, "line": w.line} for w in f.evidence],
        }
    return {
        "diagnoses": to_plain(result.diagnoses) if others else [to_plain(result.diagnoses[0]),
                                                                *map(_shown, result.diagnoses[1:])],
        "facts": case.flat_facts(),
        "fact_sources": {name: {"artifact": f.where.artifact, "line": f.where.line, "text": f.text}
                         for name in case.facts if (f := case.fact(name))},
        "fault": fault,
        "stacks": [
            {"thread": s.thread, "form": s.form, "artifact": s.where.artifact, "line": s.where.line,
             "crashing": s.crashing, "frames": [_frame(fr) for fr in s.frames]}
            for s in case.stacks
        ],
        "registers": {name: _hex(value) for name, value in case.registers.items()},
        "missing_files": [{"artifact": w.artifact, "line": w.line, "path": path} for w, path in case.missing_files],
        "not_collected": [_not_collected(f) for f in case.facts.get("collect_missing", [])],
        "findings": [{"kind": f.kind, "artifact": f.where.artifact, "line": f.where.line, "summary": f.summary,
                      "details": f.details} for f in case.findings],
        "similar": [{"case": s.case, "class": s.klass, "conclusion": s.conclusion, "source": s.source, "score": s.score}
                    for s in result.similar],
        "ask_for": result.top.ask_for,
        "warnings": case.warnings,
        "artifacts": [{"name": a.name, "size": a.size, "lines": len(a.lines)} for a in case.artifacts],
        "versions": result.versions,
    }


_GITHUB_THREAD = lazy(r"https://github\.com/([\w.-]+/[\w.-]+)/(?:issues|pull|discussions)/(\d+)/?$")


def source_name(url: str) -> str:
    """A public link as people name it, short enough for a badge: ``owner/repo#123`` for a GitHub thread,
    else the host."""
    found = _GITHUB_THREAD.match(url)
    return f"{found.group(1)}#{found.group(2)}" if found else re.sub(r"^https?://([^/]*).*", r"\1", url)


def percent(confidence: float) -> str:
    """0.98 -> "98%"; never shows 100% for what is short of certain."""
    value = round(float(confidence) * 100)
    return f"{min(value, 99) if confidence < 1 else 100}%"


def _environment(templates: Path | None) -> Environment:
    """The report templates' environment; Jinja is imported here, so a JSON report does without it."""
    from jinja2 import Environment, FileSystemBytecodeCache, FileSystemLoader, select_autoescape

    folder = templates or data_dir("reports")
    compiled = cache_dir("templates")
    env = Environment(
        loader=FileSystemLoader(str(folder)),
        # its own file names: templates compiled without the finalizer (older versions) are not reused
        bytecode_cache=FileSystemBytecodeCache(str(compiled), "report-%s.cache") if compiled else None,
        autoescape=select_autoescape(enabled_extensions=("html.j2",), default_for_string=False),
        trim_blocks=True,
        lstrip_blocks=True,
        finalize=visible,  # every {{ }} of every format: bidi and other invisible characters shown as escapes
    )
    env.filters["pct"] = percent
    env.filters["clip"] = clip
    env.filters["code"] = code_span  # Markdown: text from the input as code, as prose, as a block
    env.filters["md"] = inline
    env.filters["fenced"] = fenced
    env.filters["link"] = link
    env.filters["source_name"] = source_name
    return env


def render(result: Result, fmt: str, templates: Path | None = None, redact: bool = False) -> str:
    """The report in one format: json, html, md/markdown or text.

    ``redact`` replaces user/host names, addresses and serials with placeholders (for public
    issues); it runs on the built report, after matching, so the diagnosis does not change.
    """
    text = fmt == "text" and templates is None  # the shipped text template (report/text.py)
    report = build(result, others=not text)
    redactor = None
    if redact:
        from triage.redact import redact_report, redactor_for

        redactor = redactor_for(result.case.artifacts)
        report = redact_report(report, redactor)
    if fmt == "json":
        import json

        return json.dumps(report, indent=2, ensure_ascii=False) + "\n"
    if text:  # the shipped template, written in Python
        from triage.report.text import summary

        return summary(report)
    template = _environment(templates).get_template(FORMATS[fmt])
    case_lines = _quoted_lines(result)
    if redactor is not None:  # the source view quotes the artifacts, and their names, verbatim
        case_lines = {redactor.text(name): [(n, redactor.text(line)) for n, line in lines]
                      for name, lines in case_lines.items()}
    if fmt == "html":
        from triage.report.script import inline_script

        return template.render(report=report, case_lines=case_lines, **inline_script(templates))
    if FORMATS[fmt] == FORMATS["md"]:  # one GitHub comment, whatever the input
        return fit_comment(lambda r, lines: template.render(report=r, case_lines=lines), report, case_lines)
    return template.render(report=report, case_lines=case_lines)


def _words(value: object) -> str:
    """One value of a condition as a person writes it: lists joined, yes/no for booleans."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list):
        return ", ".join(map(_words, value))
    if isinstance(value, dict):
        parts = [_log_text(value.get("log"), value["then"], value.get("within", THEN_WITHIN))] if "then" in value else []
        return "; ".join(parts + [spec_text(key, inner) for key, inner in value.items()
                                  if not (parts and key in ("log", "then", "within"))])
    return str(value)


def _log_text(log: object, then: object = None, within: int = THEN_WITHIN) -> str:
    """A log condition in words; a two-line one names its second line and how far after the first it may be."""
    text = spec_text("log", log)
    return text if then is None else f"{text}, then within {within} line{'s' * (within != 1)}: {_words(then)}"


def spec_text(kind: str, spec: object) -> str:
    """A condition in words (``fault: signal SEGV, module amdhip64``, ``any of [log: ...; fact: ...]``),
    for support staff reading ``triage signatures show``: never a Python dict's repr."""
    if kind in ("all_of", "any_of", "not"):
        parts = spec if isinstance(spec, list) else [spec]
        return f"{kind.replace('_', ' ')} [{'; '.join(_words(part) for part in parts)}]"
    if isinstance(spec, dict):
        name = [str(spec["name"])] if "name" in spec else []
        return f"{kind}: " + ", ".join(name + [f"{key.replace('_', ' ')} {_words(value)}"
                                               for key, value in spec.items() if key != "name"])
    return f"{kind}: {_words(spec)}"


def condition_text(cond: Condition) -> str:
    """One condition of a signature in words (see spec_text)."""
    if cond.kind != "log":
        return spec_text(cond.kind, cond.spec)
    return _log_text(cond.sources.get("log"), cond.sources.get("then"), cond.within)


def render_catalogue(db: Database, signatures: list[Signature], template: str, templates: Path | None = None) -> str:
    """Describe signatures in general terms (no case to fill them from): the catalogue page or one story.

    Signature texts render with no facts, so their defaults and ``<fact>`` placeholders show.
    """
    env = _environment(templates)
    env.filters["story"] = lambda text: fill(text, {})
    env.filters["commands"] = lambda text: fill(text, {}, prose=False)
    env.filters["spec"] = condition_text
    return env.get_template(template).render(db=db, signatures=signatures)


def _quoted_lines(result: Result) -> dict[str, list[tuple[int, str]]]:
    """For each artifact, the evidence lines with a little context, for the report's source view."""
    wanted: dict[str, set[int]] = {}
    for d in result.diagnoses:
        for e in d.evidence:
            wanted.setdefault(e.artifact, set()).update(range(max(1, e.line - 2), e.line + 3))
    out = {}
    for artifact in result.case.artifacts:
        numbers = sorted(n for n in wanted.get(artifact.name, ()) if n <= len(artifact.lines))
        if numbers:
            out[artifact.name] = [(n, artifact.lines[n - 1]) for n in numbers]
    return out
