"""One self-contained HTML page about a corpus: charts drawn here as inline SVG, inline CSS, no script, no network.

It opens offline from a mail attachment or a CI artifact, and reads on a phone (a viewport tag;
wide charts and tables scroll in their own box). It says how much it knows: each column's
coverage (known in how many cases, from the logs, and from the cases' labels where the logs say
nothing, shown as such), the answers against the labels (a confusion table) when cases have
labels. Charts: cases by class, the top signatures, classes by gfx arch and by HIP/ROCm version
(in version order), cases over time (when the cases have dates), the top unknown clusters; then a
table of every case, linked to its HTML report when reports were written (``--reports``). A class
has the same colour on every page: it comes from the class's name, not from the run.
"""

from __future__ import annotations

import hashlib
import math
import os
import re
from html import escape
from pathlib import Path

import pandas as pd

from triage.corpus.clusters import Cluster
from triage.corpus.rows import version_key
from triage.corpus.run import report_name

# The classes of docs/classes.md, each its own colour; any other class gets a hue from its name's hash.
CLASS_COLOURS = {
    "device-libs-missing": "#4e79a7", "no-code-object": "#f28e2b", "math-lib-arch-missing": "#e15759",
    "code-object-load-fault": "#76b7b2", "gpu-memory-fault": "#59a14f", "gpu-hang-reset": "#edc948",
    "out-of-memory": "#b07aa1", "no-device-or-permission": "#ff9da7", "unsupported-gpu": "#9c755f",
    "runtime-mismatch": "#1f77b4", "runtime-crash": "#d62728", "outside-gpu-stack": "#2ca02c",
    "unknown": "#555555",
}
BAR_COLOUR = "#4e79a7"
MAX_TABLE_ROWS = 5000
# What the coverage table reports: (heading, the row's columns, the label's column or None).
COVERAGE = (
    ("gfx arch", ("gfx_arch",), "label_gfx_arch"),
    ("GPU name", ("gpu_name",), "label_gpu_name"),
    ("OS", ("os",), "label_os"),
    ("HIP / ROCm version", ("hip_version", "hip_version_system", "rocm_version_system"), "label_rocm"),
    ("kernel", ("kernel",), None),
    ("driver", ("driver",), None),
    ("application version", ("app_version",), None),
    ("signal or exception", ("signal", "exception_code"), None),
    ("faulting module", ("fault_module",), None),
    ("fault address", ("fault_address",), None),
    ("stack (hash)", ("stack_hash",), None),
    ("date (the label's, else the logs')", ("date",), None),
)
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff;overflow-wrap:break-word}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#666}.grid{display:flex;flex-wrap:wrap;gap:24px}
.card{border:1px solid #ddd;border-radius:6px;padding:12px;max-width:100%;min-width:0}
.wide{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6}td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
td.agree{background:#e3f1e5;font-weight:600}
code{font-size:12px;white-space:pre-wrap;word-break:break-all}.legend span{margin-right:14px;display:inline-block}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
.from-label{font-style:italic;color:#6a4c93}
.meter{display:inline-block;width:80px;height:8px;background:#eee;vertical-align:middle;margin-right:6px}
.meter i{display:block;height:8px;background:#4e79a7}
svg text{font:11px system-ui,sans-serif}
@media (max-width:40rem){body{margin:10px}.grid{gap:12px}.card{padding:8px;width:100%}}
"""


def colour(klass: str) -> str:
    """A class's colour: fixed for the known classes, a hue from the name's hash for any other; never
    from the order in which a run met the classes."""
    if klass in CLASS_COLOURS:
        return CLASS_COLOURS[klass]
    hue = int(hashlib.sha256(klass.encode("utf-8")).hexdigest()[:4], 16) % 360
    return f"hsl({hue},55%,45%)"


def bars(items: list[tuple[str, int]], colours: dict[str, str] | None = None, width: int = 520) -> str:
    """A horizontal bar chart, one bar per (label, count), coloured by label when ``colours`` says."""
    if not items:
        return "<p class=meta>no data</p>"
    label_w, row_h = 260, 20
    peak = max(v for _, v in items) or 1
    scale = (width - label_w - 50) / peak
    rows = []
    for i, (label, value) in enumerate(items):
        y = i * row_h
        rows.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(_cut(label, 42))}</text>'
                    f'<rect x="{label_w}" y="{y + 3}" width="{max(value * scale, 1):.1f}" height="{row_h - 6}" '
                    f'fill="{(colours or {}).get(label, BAR_COLOUR)}">'
                    f'<title>{escape(label)}: {value}</title></rect>'
                    f'<text x="{label_w + value * scale + 4:.1f}" y="{y + 14}">{value}</text>')
    return f'<svg width="{width}" height="{len(items) * row_h + 4}" role="img">{"".join(rows)}</svg>'


def stacked(table: pd.DataFrame, colours: dict[str, str], width: int = 520) -> str:
    """Horizontal bars of a (label x class) count table, one coloured segment per class."""
    if table.empty:
        return "<p class=meta>no data</p>"
    label_w, row_h = 160, 20
    totals = table.sum(axis=1)
    scale = (width - label_w - 50) / (totals.max() or 1)
    rows = []
    for i, (label, counts) in enumerate(table.iterrows()):
        y, x = i * row_h, float(label_w)
        rows.append(f'<text x="{label_w - 6}" y="{y + 14}" text-anchor="end">{escape(_cut(str(label), 24))}</text>')
        for klass, value in counts.items():
            if value:
                rows.append(f'<rect x="{x:.1f}" y="{y + 3}" width="{value * scale:.1f}" height="{row_h - 6}" '
                            f'fill="{colours.get(str(klass), "#999")}"><title>{escape(str(label))}, {escape(str(klass))}: '
                            f'{int(value)}</title></rect>')
                x += value * scale
        rows.append(f'<text x="{x + 4:.1f}" y="{y + 14}">{int(totals[label])}</text>')
    return f'<svg width="{width}" height="{len(table) * row_h + 4}" role="img">{"".join(rows)}</svg>'


def columns(table: pd.DataFrame, colours: dict[str, str], width: int = 1160, height: int = 220) -> str:
    """Vertical stacked columns of a (period x class) count table: cases over time."""
    if table.empty:
        return "<p class=meta>no dates</p>"
    base, left = height - 30, 40
    step = (width - left - 10) / len(table)
    peak = table.sum(axis=1).max() or 1
    scale = (base - 10) / peak
    parts = [f'<line x1="{left}" y1="{base}" x2="{width - 10}" y2="{base}" stroke="#999"/>',
             f'<text x="{left - 6}" y="{base - peak * scale + 4:.1f}" text-anchor="end">{int(peak)}</text>']
    every = max(1, math.ceil(80 / step))
    for i, (period, counts) in enumerate(table.iterrows()):
        x, y = left + i * step, float(base)
        for klass, value in counts.items():
            if value:
                h = value * scale
                y -= h
                parts.append(f'<rect x="{x + 1:.1f}" y="{y:.1f}" width="{max(step - 2, 1):.1f}" height="{h:.1f}" '
                             f'fill="{colours.get(str(klass), "#999")}"><title>{escape(str(period))}, '
                             f'{escape(str(klass))}: {int(value)}</title></rect>')
        if i % every == 0:
            parts.append(f'<text x="{x + step / 2:.1f}" y="{base + 16}" text-anchor="middle">{escape(str(period))}</text>')
    return f'<svg width="{width}" height="{height}" role="img">{"".join(parts)}</svg>'


def _cut(text: str, n: int) -> str:
    return text if len(text) <= n else text[: n - 1] + "…"


def _crosstab(cases: pd.DataFrame, by: pd.Series, top: int = 12, order: bool = False) -> pd.DataFrame:
    """(value x class) counts of the ``top`` most common values: by count, or in version order when ``order``."""
    frame = pd.DataFrame({"by": by.astype("object"), "class": cases["class"].astype("object")}).dropna()
    if frame.empty:
        return pd.DataFrame()
    table = pd.crosstab(frame["by"], frame["class"])
    chosen = table.sum(axis=1).sort_values(ascending=False, kind="stable").index[:top]
    if order:
        chosen = sorted(chosen, key=lambda v: version_key(str(v)))
    return table.loc[chosen]


def _known(cases: pd.DataFrame, names: tuple[str, ...]) -> pd.Series:
    """Per case, whether any of the columns holds a value (an empty list or text counts as none)."""
    known = pd.Series(False, index=cases.index)
    for name in names:
        column = cases[name]
        has = column.notna()
        if column.dtype == "object":
            has &= column.map(lambda v: bool(v) if isinstance(v, (str, list)) else v is not None)
        known |= has.astype(bool)
    return known


def _first(cases: pd.DataFrame, names: tuple[str, ...]) -> pd.Series:
    """The first of the columns that holds a value, per case (as objects)."""
    out = cases[names[0]].astype("object")
    for name in names[1:]:
        out = out.where(out.notna(), cases[name].astype("object"))
    return out


_MAJOR_MINOR = re.compile(r"\d+(?:\.\d+)?")


def _major_minor(value: object) -> str | None:
    """"7.2.53210.41ce572d55" -> "7.2"; "HIP SDK 6.1" -> "6.1"; None when no version is in it."""
    found = _MAJOR_MINOR.search(value) if isinstance(value, str) else None
    return found.group(0) if found else None


def _filled(cases: pd.DataFrame, names: tuple[str, ...], label: str | None) -> tuple[pd.Series, pd.Series]:
    """The logs' value of a fact, else the label's, and which cases took the label's."""
    logs = _first(cases, names)
    if label is None:
        return logs, pd.Series(False, index=cases.index)
    from_label = logs.isna() & cases[label].notna()
    return logs.where(~from_label, cases[label].astype("object")), from_label


def _legend(present: list[str]) -> str:
    return "<p class=legend>" + "".join(
        f'<span><i class=swatch style="background:{colour(c)}"></i>{escape(c)}</span>' for c in present) + "</p>"


def coverage(cases: pd.DataFrame) -> str:
    """How many cases each column is known for, from the logs and from the labels: a chart of an
    almost empty column would otherwise look as complete as a full one."""
    total = len(cases)
    rows = []
    for heading, names, label in COVERAGE:
        logs = int(_known(cases, names).sum())
        added = int((~_known(cases, names) & cases[label].notna()).sum()) if label else 0
        share = logs / total if total else 0.0
        extra = f"+{added}" if added else ("" if label else "—")
        rows.append(f"<tr><td>{escape(heading)}</td><td class=n>{logs} of {total}</td>"
                    f'<td><span class=meter><i style="width:{share * 100:.0f}%"></i></span>{share:.0%}</td>'
                    f"<td class='n from-label'>{extra}</td></tr>")
    return ("<div class=wide><table><tr><th>column</th><th class=n>known from the logs</th><th>share</th>"
            "<th class=n>filled from labels</th></tr>" + "".join(rows) + "</table></div>"
            "<p class=meta>Labels fill only what the logs do not say; the charts and the table mark those values "
            "<span class=from-label>in italics</span>. A dash: labels do not say it.</p>")


def confusion(cases: pd.DataFrame) -> str:
    """The answers against the labels: one row per label, one column per answer, agreement on the diagonal."""
    labelled = cases[cases["expected_class"].notna() & cases["class"].notna()]
    if labelled.empty:
        return "<p class=meta>no case has a label</p>"
    label = labelled["expected_class"].astype("object")
    answer = labelled["class"].astype("object")
    table = pd.crosstab(label, answer)
    right = int((label == answer).sum())
    head = "".join(f"<th class=n>{escape(str(c))}</th>" for c in table.columns)
    rows = []
    for name, counts in table.iterrows():
        cells = "".join(f"<td class='n{' agree' if column == name else ''}'>{int(v) or ''}</td>"
                        for column, v in counts.items())
        rows.append(f"<tr><th>{escape(str(name))}</th>{cells}<td class=n>{int(counts.sum())}</td></tr>")
    return (f"<p>{len(labelled)} of {len(cases)} cases have a label; the answer's class is the label's in {right} "
            f"({right / len(labelled):.0%}). Exact classes only: <code>tools/accuracy.py</code> also counts the "
            "answers a label accepts.</p>"
            f"<div class=wide><table><tr><th>label \\ answer</th>{head}<th class=n>cases</th></tr>{''.join(rows)}"
            "</table></div>")


def render(cases: pd.DataFrame, clusters: list[Cluster], title: str = "Crash corpus",
           reports: str | os.PathLike | None = None, page: str | os.PathLike | None = None) -> str:
    """The dashboard page; links to reports are relative to where the page is written."""
    classes = sorted({str(c) for c in cases["class"].dropna().astype("object")}, key=lambda c: (c == "unknown", c))
    colours = {c: colour(c) for c in classes}
    by_class = cases["class"].astype("object").value_counts()
    by_signature = cases.loc[cases["class"].astype("object") != "unknown", "signature"].astype("object").value_counts()
    arch, arch_from_label = _filled(cases, ("gfx_arch",), "label_gfx_arch")
    version, version_from_label = _filled(cases, ("hip_version", "hip_version_system", "rocm_version_system"),
                                          "label_rocm")
    parts = [f"<h1>{escape(title)}</h1><p class=meta>{len(cases)} cases · {int(by_class.get('unknown', 0))} unknown · "
             f"{len(by_signature)} signatures · {len(clusters)} unknown clusters · "
             f"signature database {escape(', '.join(map(str, cases['signatures_version'].dropna().unique())))}</p>"]
    parts.append(_legend(classes))
    parts.append("<h2>What the logs say</h2>" + coverage(cases))
    parts.append("<h2>Answers against labels</h2>" + confusion(cases))
    parts.append('<div class=grid><div class=card><h2>Cases by class</h2><div class=wide>'
                 + bars([(str(k), int(v)) for k, v in by_class.items()], colours)
                 + '</div></div><div class=card><h2>Top signatures</h2><div class=wide>'
                 + bars([(str(k), int(v)) for k, v in by_signature.head(15).items()]) + "</div></div>")
    parts.append('<div class=card><h2>By gfx arch</h2><div class=wide>' + stacked(_crosstab(cases, arch), colours)
                 + f"</div>{_label_note(arch, arch_from_label)}</div>")
    parts.append('<div class=card><h2>By HIP / ROCm version</h2><div class=wide>'
                 + stacked(_crosstab(cases, version.map(_major_minor), order=True), colours)
                 + f"</div>{_label_note(version, version_from_label)}</div></div>")
    dated = cases.dropna(subset=["date"])
    if not dated.empty:
        span = (dated["date"].max() - dated["date"].min()).days
        unit = "D" if span <= 45 else "W" if span <= 365 else "M"
        period = dated["date"].dt.to_period(unit).dt.start_time.dt.strftime("%Y-%m" if unit == "M" else "%Y-%m-%d")
        over_time = pd.crosstab(period, dated["class"].astype("object")).sort_index()
        parts.append(f"<h2>Cases over time</h2><p class=meta>{len(dated)} of {len(cases)} cases have a date</p>"
                     "<div class=wide>" + columns(over_time, colours) + "</div>")
    parts.append("<h2>Top unknown clusters</h2>" + _clusters(clusters))
    filled = [(arch, arch_from_label), (version, version_from_label), _filled(cases, ("os",), "label_os")]
    parts.append("<h2>Cases</h2>" + _cases(cases, reports, page, filled))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n")


def _label_note(values: pd.Series, from_label: pd.Series) -> str:
    known, labelled = int(values.notna().sum()), int(from_label.sum())
    return (f"<p class=meta>{known} of {len(values)} cases"
            + (f", <span class=from-label>{labelled} of them from labels</span>" if labelled else "") + "</p>")


def _clusters(clusters: list[Cluster], top: int = 10) -> str:
    if not clusters:
        return "<p class=meta>no unknown cases</p>"
    rows = "".join(
        f"<tr><td>{escape(c.id)}</td><td>{c.size}</td><td>{escape(c.typical)}</td>"
        f"<td><code>{escape(chr(10).join(c.lines) or chr(10).join(c.frames))}</code></td>"
        f"<td>{escape(c.hint or '')}</td></tr>" for c in clusters[:top])
    return ("<div class=wide><table><tr><th>cluster</th><th>cases</th><th>typical case</th><th>lines that set it apart</th>"
            f"<th>closest known</th></tr>{rows}</table></div>")


def _cases(cases: pd.DataFrame, reports: str | os.PathLike | None, page: str | os.PathLike | None,
           filled: list[tuple[pd.Series, pd.Series]]) -> str:
    """Every case (the first MAX_TABLE_ROWS): its answer and label, and its gfx arch, HIP/ROCm version and
    OS from the logs or, marked, from the label."""
    base = Path(page).resolve().parent if page else Path.cwd()
    link_dir = Path(os.path.relpath(Path(reports).resolve(), base)).as_posix() if reports else None
    shown = cases.head(MAX_TABLE_ROWS)
    rows = []
    facts_columns = [series.head(MAX_TABLE_ROWS) for pair in filled for series in pair]  # value, from_label, ...
    for case, klass, expected, signature, confidence, stack, *facts in zip(
            shown["case"], shown["class"], shown["expected_class"], shown["signature"], shown["confidence"],
            shown["stack_hash"], *facts_columns):
        name = escape(str(case))
        if link_dir:
            name = f'<a href="{escape(link_dir + "/" + report_name(str(case)))}">{name}</a>'
        rows.append(f"<tr><td>{name}</td><td>{_text(klass)}</td><td>{_text(expected)}</td><td>{_text(signature)}</td>"
                    f"<td class=n>{'' if pd.isna(confidence) else f'{confidence:.2f}'}</td>"
                    + "".join(f"<td>{_maybe_label(value, bool(label))}</td>" for value, label in zip(facts[::2], facts[1::2]))
                    + f"<td><code>{_text(stack)}</code></td></tr>")
    more = f"<p class=meta>the first {MAX_TABLE_ROWS} of {len(cases)} cases</p>" if len(cases) > MAX_TABLE_ROWS else ""
    return ("<div class=wide><table><tr><th>case</th><th>class</th><th>label</th><th>signature</th>"
            "<th class=n>confidence</th><th>gfx</th><th>HIP / ROCm</th><th>os</th>"
            f"<th>stack hash</th></tr>{''.join(rows)}</table></div>{more}")


def _maybe_label(value: object, from_label: bool) -> str:
    """A fact as the logs gave it, or as the label gave it, marked so."""
    if from_label:
        return f'<span class=from-label title="from the case\'s label, not its logs">{_text(value)}</span>'
    return _text(value)


def _text(value: object) -> str:
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else escape(str(value))
