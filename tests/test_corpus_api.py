"""Bulk analysis (triage.corpus): the table against each case's label, locally and on Dask, the cache,
stack hashes, unknown clusters, drafts, compare and the dashboard."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import regex
import yaml

from tests.conftest import CORPUS, ROOT
from triage.corpus import COLUMNS, CorpusError, analyze, find_cases
from triage.corpus.clusters import cluster
from triage.corpus.compare import compare, load_table
from triage.corpus.dashboard import render
from triage.corpus.draft import draft
from triage.corpus.rows import frame
from triage.corpus.stackhash import normalize, read_list, stack_hash
from triage.corpus.synth import FAMILIES, Generator
from triage.match.templates import template, to_regex
from triage.model import Frame, Where

CASES = sorted(p.parent for p in CORPUS.glob("*/expected.yaml"))  # the seeds (realworld/ has its own test)


def _check_against_labels(table: pd.DataFrame) -> None:
    assert list(table.columns) == list(COLUMNS)
    assert len(table) == len(CASES)
    for case_dir in CASES:
        expected = yaml.safe_load((case_dir / "expected.yaml").read_text())
        got = table.set_index("case").loc[case_dir.name]
        assert got["class"] == expected["class"]
        assert got["signature"] == expected["signature"]
        assert got["confidence"] >= expected.get("min_confidence", 0.8)
        assert got["expected_class"] == expected["class"]
        facts = expected.get("facts") or {}
        for name in ("gfx_arch", "os", "hip_version", "hip_version_system", "rocm_version_system"):
            if name in facts:
                assert got[name] == facts[name], name
        fault = expected.get("fault") or {}
        if "signal" in fault:
            assert got["signal"] == fault["signal"]
        if "code" in fault:
            assert got["exception_code"] == fault["code"]
        if "module" in fault:
            assert got["fault_module"] == fault["module"]
        if "offset" in fault:
            assert got["fault_offset"] == int(fault["offset"], 16)
        assert isinstance(got["stack_hash"], str) and len(got["stack_hash"]) == 16
        assert pd.isna(got["error"])


@pytest.fixture(scope="module")
def seeds() -> pd.DataFrame:
    return analyze(CASES, jobs=2, cache=False)


def test_rows_agree_with_each_label(seeds: pd.DataFrame) -> None:
    _check_against_labels(seeds)
    assert seeds["class"].dtype == "category" and seeds["fault_offset"].dtype == "Int64"
    assert seeds.attrs["cache"] == {"parse": len(CASES)}


def test_dask_local_gives_the_same_table(seeds: pd.DataFrame) -> None:
    pytest.importorskip("distributed")
    table = analyze(CASES, dask="local", jobs=2, cache=False)
    _check_against_labels(table)
    pd.testing.assert_frame_equal(table, seeds)


def test_cache_rematches_without_parsing_when_a_signature_is_added(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = analyze(CASES, jobs=1, cache=cache)
    assert first.attrs["cache"] == {"parse": len(CASES)}
    assert analyze(CASES, jobs=1, cache=cache).attrs["cache"] == {"hit": len(CASES)}
    folder = tmp_path / "signatures"
    shutil.copytree(ROOT / "signatures", folder)
    text = (folder / "hip-runtime-segfault.yaml").read_text().replace("id: hip-runtime-segfault", "id: hip-runtime-segfault-copy")
    (folder / "hip-runtime-segfault-copy.yaml").write_text(text)
    again = analyze(CASES, jobs=1, cache=cache, signatures=folder)
    assert again.attrs["cache"] == {"rematch": len(CASES)}
    pd.testing.assert_series_equal(again["signature"].astype(str), first["signature"].astype(str))
    # Back to the shipped database: its rows are still kept beside the new ones, one file a case.
    assert analyze(CASES, jobs=1, cache=cache).attrs["cache"] == {"hit": len(CASES)}
    assert len([f for f in cache.rglob("*.pickle")]) == len(CASES)


def test_a_case_is_each_entry_of_a_corpus_folder(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "log.txt").write_text("x\n")
    (tmp_path / "b.log").write_text("y\n")
    (tmp_path / ".hidden").write_text("z\n")
    (tmp_path / "README.md").write_text("# what this corpus is\n")  # the corpus's own, no case
    (tmp_path / "a" / "README.md").write_text("inside a case it is the case's\n")
    assert [c.id for c in find_cases([tmp_path])] == ["a", "b.log"]
    assert [c.id for c in find_cases([CASES[0]])] == [CASES[0].name]  # a folder with a label is one case
    with pytest.raises(CorpusError, match="no such file"):
        find_cases([tmp_path / "missing"])


def test_a_folder_of_labelled_cases_inside_a_corpus_is_read_as_a_corpus(tmp_path: Path) -> None:
    """corpus/realworld/ holds one folder a case: each is a case of its own, named realworld/NAME."""
    for name in ("one", "two"):
        (tmp_path / "realworld" / name).mkdir(parents=True)
        (tmp_path / "realworld" / name / "input.txt").write_text("x\n")
        (tmp_path / "realworld" / name / "label.yaml").write_text("class: unknown\n")
    (tmp_path / "realworld" / "README.md").write_text("# the set\n")
    (tmp_path / "realworld" / "SEEN").write_text("")
    (tmp_path / "plain").mkdir()  # a case folder of sub-folders without labels stays one case
    (tmp_path / "plain" / "logs").mkdir()
    (tmp_path / "plain" / "logs" / "a.log").write_text("y\n")
    assert [c.id for c in find_cases([tmp_path])] == ["plain", "realworld/one", "realworld/two"]


def test_a_label_yaml_labels_the_case_and_is_not_evidence(tmp_path: Path) -> None:
    """The labelled real-world set keeps its label in label.yaml, whose text names the failure."""
    case = tmp_path / "one"
    case.mkdir()
    (case / "label.yaml").write_text("class: device-libs-missing\nsummary: Couldn't create blit kernels!\n")
    (case / "input.txt").write_text("nothing of note\n")
    assert [c.id for c in find_cases([case])] == ["one"]
    table = analyze([case], jobs=1, cache=False)
    assert table["expected_class"].tolist() == ["device-libs-missing"]
    assert table["class"].tolist() == ["unknown"]


def test_unreadable_case_is_a_row_with_its_error(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    (tmp_path / "ok.log").write_text("Segmentation fault (core dumped)\n")
    table = analyze([tmp_path], jobs=1, cache=False)
    assert table["error"].isna().all() and table["class"].notna().all()


def _frame(symbol: str | None = None, module: str | None = None, offset: int | None = None,
           source: str | None = "input", address: int | None = None) -> Frame:
    return Frame(0, Where("x", 1), "", address=address, module=module, offset=offset, symbol=symbol,
                 symbol_source=source)


def test_stack_hash_skips_what_says_nothing_and_groups_the_rest() -> None:
    noisy = [_frame("__pthread_kill_implementation", "/lib/x86_64-linux-gnu/libc.so.6", 0x8eb2c),
             _frame("raise", "libc.so.6"), _frame("abort", "libc.so.6"), _frame(None, "libc.so.6", 0x2a0),
             _frame("amd::Symbol::getDeviceKernel(amd::Device const&)", "/opt/rocm/lib/libamdhip64.so.7", 0x48a610,
                    address=0x7f0012345678)]
    names = [n for f in noisy if (n := normalize(f))]
    assert names == ["libamdhip64.so!amd::Symbol::getDeviceKernel"]
    other_build = _frame("amd::Symbol::getDeviceKernel(amd::Device const&)", "libamdhip64.so.6", 0x1000)
    assert stack_hash([normalize(other_build)]) == stack_hash(names)
    guessed = _frame("hsa_system_get_major_extension_table() + 0x3AD1DE", "amdhip64_7.dll", 0x83a7fe, "nearest-export")
    assert normalize(guessed) == "amdhip64_7.dll+0x83a7fe"
    assert stack_hash([]) is None


@pytest.mark.parametrize("name", ["skip_symbols.txt", "skip_modules.txt"])
def test_every_skip_list_entry_compiles(name: str) -> None:
    entries = read_list(name)
    assert entries
    for entry in entries:
        re.compile(entry)


def test_templates_make_variable_parts_placeholders() -> None:
    a = template("worker 12: fatal: stream 0x7f00aa at /home/alice/x.so failed after 3.5 s")
    b = template("worker 7:  fatal: stream 0x1234 at /home/bob/y.so failed after 10 s")
    assert a == b == "worker <num>: fatal: stream <hex> at <path> failed after <num> s"
    assert regex.fullmatch(to_regex(a), "worker 99: fatal: stream 0xdead at C:\\a\\b.dll failed after 1 s")



def test_a_line_without_a_slash_gets_the_template_the_full_pass_gives() -> None:
    """``template`` leaves out the paths' alternative on a line with no slash or backslash, where it cannot match: on
    every such line of the corpus the text is the one the whole pass makes."""
    from triage.match import templates

    lines = {line for path in CORPUS.rglob("*.txt") for line in path.read_text(errors="replace").splitlines()
             if "/" not in line and "\\" not in line}
    assert len(lines) > 1000
    for line in lines:
        whole = templates._VARIABLE.sub(lambda m: templates.PLACEHOLDERS[m.lastgroup or "num"],
                                        line[:templates.MAX_LINE_CHARS])
        assert template(line) == " ".join(whole.split()), line


@pytest.fixture(scope="module")
def planted(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, str], pd.DataFrame]:
    folder = tmp_path_factory.mktemp("planted")
    generator = Generator(seed=3, size_kb=2, unknown=1.0)
    family = {}
    for index in range(18):
        path, origin = generator.write(folder, index)
        family[path.name] = origin
    return family, analyze([folder], jobs=2, cache=False)


def test_planted_variants_of_one_crash_make_one_cluster(planted: tuple[dict[str, str], pd.DataFrame]) -> None:
    family, table = planted
    assert (table["class"] == "unknown").all()
    assert set(family.values()) == {f"planted:{name}" for name in FAMILIES}
    clusters = cluster(table)
    assert len(clusters) == len(set(family.values()))
    for item in clusters:
        assert len({family[case] for case in item.cases}) == 1
        assert item.lines and item.typical in item.cases


def test_draft_passes_the_schema_and_matches_its_own_examples(planted: tuple[dict[str, str], pd.DataFrame]) -> None:
    jsonschema = pytest.importorskip("jsonschema")
    clusters = cluster(planted[1])
    schema = json.loads((ROOT / "signatures" / "schema.json").read_text())
    for item in clusters:
        signature = yaml.safe_load(draft(item, clusters))
        jsonschema.validate(signature, schema)
        patterns = [regex.compile(c["log"], regex.IGNORECASE) for c in signature["conditions"] if "log" in c]
        assert all(c["strength"] >= 0.45 for c in signature["conditions"] if "log" in c)
        assert all(any(p.search(e["input"]) for p in patterns) for e in signature["tests"]["match"])
        assert not any(p.search(e["input"]) for p in patterns for e in signature["tests"]["no_match"])


def _rows(signatures: dict[str, int], unknown_lines: dict[str, int]) -> pd.DataFrame:
    rows = [{"case": f"{s}-{i}", "signature": s, "class": "runtime-crash"} for s, n in signatures.items() for i in range(n)]
    rows += [{"case": f"u{i}-{line[:4]}", "signature": "unknown", "class": "unknown",
              "key_lines": [line.replace("N", str(i))]} for line, n in unknown_lines.items() for i in range(n)]
    return frame(rows)


def test_compare_says_what_appeared_grew_shrank_and_vanished() -> None:
    old = _rows({"a": 10, "b": 10, "c": 5, "gone": 5}, {"fatal: deadlock in stream N": 5})
    new = _rows({"a": 10, "b": 3, "c": 15, "new": 4}, {"fatal: deadlock in stream N": 5, "error: queue N lost": 3})
    changes = compare(old, new).set_index("group")
    assert changes.loc["new", "change"] == "appeared"
    assert changes.loc["gone", "change"] == "vanished"
    assert changes.loc["c", "change"] == "grew"
    assert changes.loc["b", "change"] == "shrank"
    clusters = changes[changes["kind"] == "cluster"]
    assert sorted(clusters["change"].astype(str)) == ["appeared", "same"]


def test_dashboard_is_self_contained(seeds: pd.DataFrame, tmp_path: Path) -> None:
    page = render(seeds.assign(date=pd.to_datetime(["2026-01-02", "2026-02-03", "2026-03-04"])), [], "seeds",
                  reports=tmp_path / "reports", page=tmp_path / "index.html")
    assert "<svg" in page and "Cases over time" in page
    assert not re.search(r"https?://", page) and "<script" not in page.lower()
    assert 'href="reports/seed-000-blit-kernels-device-libs-missing.html"' in page


def _cli(*args: str) -> subprocess.CompletedProcess:
    """Run the command in this process (CliRunner): a new interpreter per call would cost seconds."""
    from typer.testing import CliRunner

    from triage.cli import app

    done = CliRunner().invoke(app, list(args))
    return subprocess.CompletedProcess(args, done.exit_code, done.stdout, done.stderr)


def test_command_writes_table_reports_and_dashboard(tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    out, reports, page = tmp_path / "cases.parquet", tmp_path / "reports", tmp_path / "corpus.html"
    done = _cli("corpus", *map(str, CASES), "-o", str(out), "--reports", str(reports), "--dashboard", str(page), "-j", "2")
    assert done.returncode == 0, done.stderr
    assert "3 cases: 3 diagnosed" in done.stdout
    first = done.stdout.splitlines()[0]
    assert "{" not in first and re.search(r"; \d+ (?:parsed|read from the cache|matched again from the cache)", first)
    _check_against_labels(load_table(out))
    assert sorted(p.name for p in reports.iterdir()) == sorted(f"{c.name}.html" for c in CASES)
    assert "<svg" in page.read_text()
    csv = tmp_path / "cases.csv"
    assert _cli("corpus", *map(str, CASES), "-o", str(csv), "-j", "1").returncode == 0
    _check_against_labels(load_table(csv))
    changes = _cli("corpus", "compare", str(out), str(csv), "--all")
    assert changes.returncode == 0 and "same" in changes.stdout


def test_command_errors_are_one_line(tmp_path: Path) -> None:
    done = _cli("corpus", str(tmp_path / "missing"))
    assert done.returncode == 2 and done.stderr.startswith("triage: ") and "Traceback" not in done.stderr
    done = _cli("corpus", str(CORPUS), "-o", str(tmp_path / "cases.xlsx"), "-j", "1")
    assert done.returncode == 2 and ".parquet or .csv" in done.stderr
    seeds = tmp_path / "seeds"
    for case in CASES:
        shutil.copytree(case, seeds / case.name)
    done = _cli("signatures", "draft", "U9", "--corpus", str(seeds))
    assert done.returncode == 2 and "no unknown cluster" in done.stderr


def test_a_single_triage_does_not_import_pandas() -> None:
    code = ("import sys\nfrom triage.cli import app\ntry:\n    app([sys.argv[1]])\nexcept SystemExit:\n    pass\n"
            "print('pandas' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code, str(CASES[0])], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip().endswith("False")


def test_missing_optional_packages_are_named(monkeypatch: pytest.MonkeyPatch, seeds: pd.DataFrame, tmp_path: Path) -> None:
    from triage.commands.corpus import write_table

    monkeypatch.setitem(sys.modules, "distributed", None)
    with pytest.raises(CorpusError, match=r"hip-triage\[dask\]"):
        analyze(CASES, dask="local", cache=False)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "fastparquet", None)
    with pytest.raises(CorpusError, match="pyarrow"):
        write_table(seeds, tmp_path / "cases.parquet")


def test_the_labelled_cases_alike_are_looked_up_for_reports_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table's row shows no similar cases, so a corpus run without reports does not look them up (about a
    millisecond a case); with reports, each report lists them."""
    from triage import pipeline

    looked: list[int] = []
    real = pipeline.nearest
    monkeypatch.setattr(pipeline, "nearest", lambda *args: looked.append(1) or real(*args))
    case = CORPUS / "seed-000-blit-kernels-device-libs-missing"
    assert analyze([case], jobs=1, cache=False)["class"].tolist() == ["device-libs-missing"] and not looked
    analyze([case], jobs=1, cache=False, reports=tmp_path / "reports")
    assert looked == [1] and '<section id="similar">' in (tmp_path / "reports" / f"{case.name}.html").read_text()
