"""The corpus dashboard says how much it knows: coverage per column, answers against labels, label values
marked, versions in version order, a class's colour from its name, and it reads on a phone."""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd
import pytest

from tests.conftest import CORPUS
from triage.corpus import analyze
from triage.corpus.compare import load_table
from triage.corpus.dashboard import CLASS_COLOURS, colour, confusion, coverage, render
from triage.corpus.rows import frame, typed

CASES = sorted(p.parent for p in CORPUS.glob("*/expected.yaml"))


@pytest.fixture(scope="module")
def seeds() -> pd.DataFrame:
    return analyze(CASES, jobs=1, cache=False, progress=False)


def _rows(**columns: list) -> pd.DataFrame:
    n = len(next(iter(columns.values())))
    return frame([{"case": f"c{i}", **{name: values[i] for name, values in columns.items()}} for i in range(n)])


def test_a_class_has_its_colour_whatever_the_run() -> None:
    assert colour("device-libs-missing") == CLASS_COLOURS["device-libs-missing"]
    assert colour("some-new-class") == colour("some-new-class") != colour("another-new-class")
    assert len(set(CLASS_COLOURS.values())) == len(CLASS_COLOURS)
    one = _rows(**{"class": ["runtime-crash", "unknown"], "signature": ["a", "unknown"]})
    two = _rows(**{"class": ["no-code-object", "unknown", "runtime-crash"], "signature": ["b", "unknown", "a"]})
    swatch = re.compile(r'background:([^"]+)"></i>runtime-crash<')
    assert swatch.findall(render(one, [])) == swatch.findall(render(two, [])) == [CLASS_COLOURS["runtime-crash"]]


def test_coverage_counts_known_values_and_what_labels_add() -> None:
    table = _rows(gfx_arch=["gfx1100", None, None, None], label_gfx_arch=[None, "gfx1030", None, "gfx906"],
                  hip_version=[None, None, "6.2.4", None], **{"class": ["unknown"] * 4})
    html = coverage(table)
    arch = re.search(r"<td>gfx arch</td><td class=n>(\d+) of (\d+)</td>.*?<td class='n from-label'>([^<]*)</td>", html)
    assert arch and arch.groups() == ("1", "4", "+2")
    version = re.search(r"<td>HIP / ROCm version</td><td class=n>(\d+) of (\d+)</td>", html)
    assert version and version.groups() == ("1", "4")
    page = render(table, [])
    assert page.count('<span class=from-label title="from the case\'s label, not its logs">') == 2


def test_confusion_table_puts_answers_against_labels() -> None:
    table = _rows(**{"class": ["runtime-crash", "runtime-crash", "no-code-object", "unknown"],
                     "expected_class": ["runtime-crash", "no-code-object", "no-code-object", None]})
    html = confusion(table)
    assert "3 of 4 cases have a label" in html and "in 2 (67%)" in html
    rows = dict(re.findall(r"<tr><th>([\w-]+)</th>(.*?)</tr>", html))
    assert re.findall(r"<td class='n( agree)?'>(\d*)</td>", rows["no-code-object"]) == [(" agree", "1"), ("", "1")]
    assert rows["no-code-object"].endswith("<td class=n>2</td>")
    assert "no case has a label" in confusion(_rows(**{"class": ["unknown"]}))


def test_versions_are_ordered_values_in_the_table_the_parquet_and_the_chart(tmp_path: Path) -> None:
    versions = ["7.16.26385", "7.2.53210.41ce572d55", "6.4.1", None, "7.2"]
    table = _rows(hip_version=versions, fault_address=[2**64 - 8, None, 8, None, 0x7f41],
                  **{"class": ["runtime-crash"] * 5})
    column = table["hip_version"]
    assert column.cat.ordered and column.sort_values().tolist()[:4] == ["6.4.1", "7.2", "7.2.53210.41ce572d55", "7.16.26385"]
    assert column.max() == "7.16.26385"
    assert table["fault_address"].dtype == "UInt64" and table["fault_address"].iloc[0] == 2**64 - 8
    table.to_parquet(tmp_path / "t.parquet")
    back = load_table(tmp_path / "t.parquet")
    assert back["hip_version"].cat.ordered and back["hip_version"].max() == "7.16.26385"
    assert back["fault_address"].tolist()[:3] == [2**64 - 8, pd.NA, 8]
    table.to_csv(tmp_path / "t.csv", index=False)
    assert typed(pd.read_csv(tmp_path / "t.csv", dtype=str))["fault_address"].iloc[4] == 0x7f41
    chart = render(table, []).split("By HIP / ROCm version", 1)[1].split("</svg>", 1)[0]
    labels = re.findall(r'text-anchor="end">([\d.]+)<', chart)
    assert labels == ["6.4", "7.2", "7.16"]


def test_seed_dashboard_has_labels_coverage_and_a_viewport(seeds: pd.DataFrame) -> None:
    assert seeds.set_index("case").loc[CASES[0].name, "fault_address"] == 8
    assert (seeds["label_gfx_arch"].astype("object") == seeds["gfx_arch"].astype("object")).all()
    page = render(seeds, [])
    assert '<meta name="viewport" content="width=device-width, initial-scale=1">' in page
    assert "3 of 3 cases have a label; the answer's class is the label's in 3 (100%)" in page
    assert re.search(r"<td>gfx arch</td><td class=n>3 of 3</td>", page)


def test_dashboard_reads_at_phone_width(seeds: pd.DataFrame, browser, tmp_path: Path) -> None:
    page_file = tmp_path / "corpus.html"
    page_file.write_text(render(seeds, []), encoding="utf-8")
    page = browser.page()
    try:
        page.resize(390)
        page.goto(page_file.as_uri())
        assert page.js("document.documentElement.scrollWidth - window.innerWidth") <= 0
        assert page.js("Math.min(...[...document.querySelectorAll('td, svg text')].map("
                       "e => parseFloat(getComputedStyle(e).fontSize)))") >= 11
    finally:
        page.close()
