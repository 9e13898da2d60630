"""The text report written in Python: the shipped reports/summary.txt.j2 without Jinja.

A text run spent about a tenth of its time importing Jinja and running that template, for a few
dozen lines. ``summary`` writes the same bytes as the shipped template (a test renders both over
every corpus case and over reports that reach each of its branches). The template stays the
reference and the place to edit the text format: a change to it must be made here as well, and a
report rendered from another ``--templates`` folder still goes through Jinja with that folder's
summary.txt.j2.
"""

from __future__ import annotations

import textwrap
from typing import Any

from triage.report import percent
from triage.report.github import visible


def _out(value: Any) -> str:
    """One ``{{ }}`` as the report environment prints it: invisible characters shown, then as text."""
    return str(visible(value))


def _wrap(text: str, width: int) -> str:
    """Jinja's ``wordwrap(width, break_on_hyphens=False)``: each existing line wrapped on its own."""
    return "\n".join(
        "\n".join(textwrap.wrap(line, width=width, expand_tabs=False, replace_whitespace=False,
                                break_long_words=True, break_on_hyphens=False))
        for line in text.splitlines()
    )


def _indent(text: str, width: int) -> str:
    """Jinja's ``indent(width)``: every line but the first and the blank ones indented."""
    lines = (text + "\n").splitlines()
    first = lines.pop(0)
    if not lines:
        return first
    return first + "\n" + "\n".join(" " * width + line if line else line for line in lines)


def _truncate(text: str, length: int) -> str:
    """Jinja's ``truncate(length, True, "...")`` with its default leeway of 5."""
    return text if len(text) <= length + 5 else text[:length - 3] + "..."


def _top(top: dict, out: list[str]) -> None:
    if top["class"] == "unknown":
        out.append(f"UNKNOWN: {_out(top['title'])}\n")
    else:
        out.append(f"{_out(top['class'])} ({_out(percent(top['confidence']))}): {_out(top['title'])}\n")
        out.append(f"  signature {_out(top['id'])} [{_out(top['status'])}]\n")
    out.append(f"\n{_out(_wrap(top['root_cause'], 96))}\n")
    evidence = top["evidence"]
    if evidence:
        out.append("\nEvidence:\n")
        out.extend(f"  {_out(e['artifact'])}:{_out(e['line'])}  {_out(_truncate(e['text'], 110))}\n"
                   for e in evidence[:8])
        if len(evidence) > 8:
            out.append(f"  ... and {_out(len(evidence) - 8)} more\n")
    workarounds = top["workarounds"]
    if workarounds:
        out.append(f"\nWorkaround{_out('s') if len(workarounds) > 1 else ''}:\n")
        for number, w in enumerate(workarounds, 1):
            shown = (" [verified by " + str(w["verified_by"]) + ": " + str(w["verified_link"]) + "]"
                     if w["verified"] else " [untested]")
            out.append(f"  {number}. {_out(w['title'])}{_out(shown)}\n")
            out.extend(f"       {_out(line)}\n" for line in w["commands"].splitlines())
            if w["risk"]:
                out.append(f"     Risk: {_out(_indent(_wrap(w['risk'], 88), 11))}\n")


def _fault(f: dict, out: list[str]) -> None:
    if f["kind"] == "signal":
        crash = f"SIG{_out(f['signal'])}" + (f" ({_out(f['si_code'])})" if f["si_code"] else "")
    else:
        crash = _out(f["code"]) + (f" {_out(f['code_name'])}" if f["code_name"] else "")
    if f["address"]:
        crash += f" at address {_out(f['address'])}" + (f" ({_out(f['access'])})" if f["access"] else "")
    if f["module"]:
        crash += f" in {_out(f['module'])}" + (f" + {_out(f['offset'])}" if f["offset"] else "")
    if f["symbol"]:
        crash += f" {_out(f['symbol'])} [{_out(f['symbol_source'])}]"
    out.append(f"\nCrash: {crash}\n")
    if f["offset_note"]:
        out.append(f"  offset: {_out(f['offset_note'])}\n")


def _environment(env: dict) -> str:
    """The Environment line's parts, as the template's ``select | join(" | ")`` gives them."""
    hip, runtime = env.get("hip_version"), env.get("hip_runtime")
    driver, dll = env.get("driver_version_windows"), env.get("hip_dll_version")
    parts = [env.get("gfx_arch"), env.get("gpu_name"), env.get("os_name") or env.get("os"),
             hip and f"HIP {hip}", runtime and f"{runtime} runtime", driver and f"Windows driver {driver}",
             dll and f"amdhip64 DLL {dll}"]
    return " | ".join(str(part) for part in parts if part)


def summary(report: dict) -> str:
    """The text report of a built report (``triage.report.build``), as reports/summary.txt.j2 renders it."""
    top = report["diagnoses"][0]
    out: list[str] = []
    _top(top, out)
    if report["fault"]:
        _fault(report["fault"], out)
    env = report["facts"]
    if env.get("gfx_arch") or env.get("os") or env.get("hip_version"):
        out.append(f"\nEnvironment: {_out(_environment(env))}\n")
    if report["findings"]:
        out.append("\nInspected:\n")
        for f in report["findings"]:
            out.append(f"  {_out(_indent(_wrap(f['summary'], 94), 4))}\n")
            out.extend(f"    - {_out(_indent(_wrap(d, 90), 6))}\n" for d in f["details"])
    if len(report["diagnoses"]) > 1:
        out.append("\nOther candidates (evidence scores before calibration):\n")
        out.extend(f"  {_out(str(percent(d['confidence'])).center(5))} {_out(d['class'])}: {_out(d['id'])}\n"
                   for d in report["diagnoses"][1:5])
    if report["similar"]:
        out.append("\nSimilar real cases (labelled public threads; not part of the diagnosis):\n")
        for c in report["similar"]:
            conclusion = _indent(_wrap(_truncate(c["conclusion"], 150), 90), 4)
            out.append(f"  - {_out(c['class'])}: {_out(conclusion)}\n    {_out(c['source'])}\n")
    if top["ask_for"]:
        out.append("\nTo be sure, send:\n")
        out.extend(f"  - {_out(_indent(_wrap(a, 92), 4))}\n" for a in top["ask_for"])
    if report["not_collected"]:
        out.append("\nNot collected by `triage collect`:\n")
        out.extend(f"  - {_out(m['item'])}: {_out(_indent(_wrap(m['why'], 88), 4))}\n" for m in report["not_collected"])
    if report["warnings"]:
        out.append("\nWarnings:\n")
        out.extend(f"  ! {_out(w)}\n" for w in report["warnings"])
    versions = report["versions"]
    out.append(f"\nhip-triage {_out(versions['tool'])}, signatures {_out(versions['signatures'])}")
    return "".join(out)
