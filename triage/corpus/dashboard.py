"""One self-contained HTML page about a corpus: charts drawn here as inline SVG, inline CSS, no script, no network.

It opens offline from a mail attachment or a CI artifact. Charts: cases by class, the top
signatures, classes by gfx arch and by HIP/ROCm version, cases over time (when the cases
have dates), the top unknown clusters; then a table of every case, linked to its HTML
report when reports were written (``--reports``).
"""

from __future__ import annotations

import math
import os
from html import escape
from pathlib import Path

import pandas as pd

from triage.corpus.clusters import Cluster
from triage.corpus.run import report_name

PALETTE = ("#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f",
           "#bab0ac", "#1f77b4", "#d62728", "#2ca02c")
UNKNOWN_COLOUR = "#555555"
MAX_TABLE_ROWS = 5000
CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px}
.meta{color:#666}.grid{display:flex;flex-wrap:wrap;gap:24px}.card{border:1px solid #ddd;border-radius:6px;padding:12px}
table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #eee;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#f6f6f6}code{font-size:12px;white-space:pre-wrap;word-break:break-all}.legend span{margin-right:14px}
.swatch{display:inline-block;width:10px;height:10px;margin-right:4px;vertical-align:middle}
svg text{font:11px system-ui,sans-serif}
"""


def _colours(classes: list[str]) -> dict[str, str]:
    known = [c for c in sorted(classes) if c != "unknown"]
    out = {c: PALETTE[i % len(PALETTE)] for i, c in enumerate(known)}
    out["unknown"] = UNKNOWN_COLOUR
    return out


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
                    f'fill="{(colours or {}).get(label, PALETTE[0])}">'
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


def _crosstab(cases: pd.DataFrame, by: pd.Series, top: int = 12) -> pd.DataFrame:
    frame = pd.DataFrame({"by": by.astype("object"), "class": cases["class"].astype("object")}).dropna()
    if frame.empty:
        return pd.DataFrame()
    table = pd.crosstab(frame["by"], frame["class"])
    return table.loc[table.sum(axis=1).sort_values(ascending=False).index[:top]]


def _version(cases: pd.DataFrame) -> pd.Series:
    """The HIP/ROCm version a case ran, as major.minor: bundled HIP, else system HIP, else system ROCm."""
    version = cases["hip_version"].astype("object")
    for other in ("hip_version_system", "rocm_version_system"):
        version = version.where(version.notna(), cases[other].astype("object"))
    return version.map(lambda v: ".".join(str(v).split(".")[:2]) if isinstance(v, str) else None)


def _legend(colours: dict[str, str], present: list[str]) -> str:
    return "<p class=legend>" + "".join(
        f'<span><i class=swatch style="background:{colours[c]}"></i>{escape(c)}</span>' for c in present) + "</p>"


def render(cases: pd.DataFrame, clusters: list[Cluster], title: str = "Crash corpus",
           reports: str | os.PathLike | None = None, page: str | os.PathLike | None = None) -> str:
    """The dashboard page; links to reports are relative to where the page is written."""
    classes = [str(c) for c in cases["class"].dropna().astype("object").unique()]
    colours = _colours(classes)
    by_class = cases["class"].astype("object").value_counts()
    by_signature = cases.loc[cases["class"].astype("object") != "unknown", "signature"].astype("object").value_counts()
    parts = [f"<h1>{escape(title)}</h1><p class=meta>{len(cases)} cases · {int(by_class.get('unknown', 0))} unknown · "
             f"{len(by_signature)} signatures · {len(clusters)} unknown clusters · "
             f"signature database {escape(', '.join(map(str, cases['signatures_version'].dropna().unique())))}</p>"]
    parts.append(_legend(colours, sorted(classes, key=lambda c: (c == "unknown", c))))
    parts.append('<div class=grid><div class=card><h2>Cases by class</h2>'
                 + bars([(str(k), int(v)) for k, v in by_class.items()], colours)
                 + '</div><div class=card><h2>Top signatures</h2>'
                 + bars([(str(k), int(v)) for k, v in by_signature.head(15).items()]) + "</div>")
    parts.append('<div class=card><h2>By gfx arch</h2>' + stacked(_crosstab(cases, cases["gfx_arch"]), colours) + "</div>")
    parts.append('<div class=card><h2>By HIP / ROCm version</h2>' + stacked(_crosstab(cases, _version(cases)), colours)
                 + "</div></div>")
    dated = cases.dropna(subset=["date"])
    if not dated.empty:
        span = (dated["date"].max() - dated["date"].min()).days
        unit = "D" if span <= 45 else "W" if span <= 365 else "M"
        period = dated["date"].dt.to_period(unit).dt.start_time.dt.strftime("%Y-%m" if unit == "M" else "%Y-%m-%d")
        over_time = pd.crosstab(period, dated["class"].astype("object")).sort_index()
        parts.append("<h2>Cases over time</h2>" + columns(over_time, colours))
    parts.append("<h2>Top unknown clusters</h2>" + _clusters(clusters))
    parts.append("<h2>Cases</h2>" + _cases(cases, reports, page))
    return ("<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<title>{escape(title)}</title><style>{CSS}</style></head><body>{''.join(parts)}</body></html>\n")


def _clusters(clusters: list[Cluster], top: int = 10) -> str:
    if not clusters:
        return "<p class=meta>no unknown cases</p>"
    rows = "".join(
        f"<tr><td>{escape(c.id)}</td><td>{c.size}</td><td>{escape(c.typical)}</td>"
        f"<td><code>{escape(chr(10).join(c.lines) or chr(10).join(c.frames))}</code></td>"
        f"<td>{escape(c.hint or '')}</td></tr>" for c in clusters[:top])
    return ("<table><tr><th>cluster</th><th>cases</th><th>typical case</th><th>lines that set it apart</th>"
            f"<th>closest known</th></tr>{rows}</table>")


def _cases(cases: pd.DataFrame, reports: str | os.PathLike | None, page: str | os.PathLike | None) -> str:
    base = Path(page).resolve().parent if page else Path.cwd()
    link_dir = Path(os.path.relpath(Path(reports).resolve(), base)).as_posix() if reports else None
    shown = cases.head(MAX_TABLE_ROWS)
    rows = []
    for case, klass, signature, confidence, gfx, os_name, stack in zip(
            shown["case"], shown["class"], shown["signature"], shown["confidence"], shown["gfx_arch"], shown["os"],
            shown["stack_hash"]):
        name = escape(str(case))
        if link_dir:
            name = f'<a href="{escape(link_dir + "/" + report_name(str(case)))}">{name}</a>'
        rows.append(f"<tr><td>{name}</td><td>{_text(klass)}</td><td>{_text(signature)}</td>"
                    f"<td>{'' if pd.isna(confidence) else f'{confidence:.2f}'}</td><td>{_text(gfx)}</td>"
                    f"<td>{_text(os_name)}</td><td><code>{_text(stack)}</code></td></tr>")
    more = f"<p class=meta>the first {MAX_TABLE_ROWS} of {len(cases)} cases</p>" if len(cases) > MAX_TABLE_ROWS else ""
    return ("<table><tr><th>case</th><th>class</th><th>signature</th><th>confidence</th><th>gfx</th><th>os</th>"
            f"<th>stack hash</th></tr>{''.join(rows)}</table>{more}")


def _text(value: object) -> str:
    return "" if value is None or (not isinstance(value, str) and pd.isna(value)) else escape(str(value))
