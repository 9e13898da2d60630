"""The per-user cache: the same database and reports as without it, rebuilt when a signature changes."""

from __future__ import annotations

import pickle
import shutil

from tests.conftest import CORPUS, ROOT
from triage.match import load
from triage.pipeline import triage
from triage.report import build


def test_database_cache_is_used_and_invalidated(tmp_path, monkeypatch) -> None:
    folder = tmp_path / "signatures"
    shutil.copytree(ROOT / "signatures", folder)
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    first = load(folder)
    kept = sorted(p.name for p in (tmp_path / "cache" / "signatures").glob("*.pickle"))
    assert len(kept) == 2 and kept[0].endswith("-examples.pickle")  # the database, and its examples apart
    second = load(folder)
    assert [s.id for s in second.signatures] == [s.id for s in first.signatures]
    assert "tests" not in vars(second.signatures[0])  # read when first asked for, as they were
    assert [s.tests for s in second.signatures] == [s.tests for s in first.signatures]
    assert sum(len(s.tests.get("match") or []) for s in second.signatures) > 100
    assert [(s.patterns, s.by_hyperscan) for s in second.prefilters.groups] == [(s.patterns, s.by_hyperscan) for s in first.prefilters.groups]
    target = folder / "hip-no-code-object-for-gpu.yaml"
    target.write_text(target.read_text().replace("title: No code object", "title: Changed, no code object"))
    third = load(folder)
    assert next(s for s in third.signatures if s.id == "hip-no-code-object-for-gpu").title.startswith("Changed,")


def test_same_report_with_and_without_cache(monkeypatch, tmp_path) -> None:
    case = str(CORPUS / "seed-000-blit-kernels-device-libs-missing")
    monkeypatch.setenv("TRIAGE_CACHE", "0")
    plain = build(triage([case]))
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    cold, warm = build(triage([case])), build(triage([case]))
    assert plain == cold == warm


def test_compiled_condition_regexes_are_kept_and_read_back(tmp_path, monkeypatch) -> None:
    """The regexes a run compiled are in the cache, compiled as the conditions compile them, and the next run
    takes them from there (compiling none) with the same report."""
    import pickle

    import regex

    from triage.lazy import regex_from
    from triage.match import database

    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    case = str(CORPUS / "seed-000-blit-kernels-device-libs-missing")
    first = build(triage([case]))
    files = list((tmp_path / "signatures").glob("*-regex-*.pickle"))
    assert len(files) == 1
    kept = pickle.loads(files[0].read_bytes())
    assert len(kept) > 10  # the log conditions this case reached, at least
    for source, packed in kept.items():
        assert isinstance(packed, bytes)  # each pattern a pickle of its own, loaded when a condition asks for it
        data = pickle.loads(packed)
        assert isinstance(data, tuple)  # plain data: loading it imports no regex package
        pattern = regex_from(data, source)
        fresh = regex.compile(source, regex.IGNORECASE)
        assert (pattern.pattern, pattern.flags, pattern.groupindex) == (fresh.pattern, fresh.flags, fresh.groupindex)
        assert pattern._pickled_data == fresh._pickled_data  # the same compiled code

    def refuse(source: str, where: str) -> None:
        raise AssertionError(f"{where}: {source!r} compiled again")

    monkeypatch.setattr(database, "_compile", refuse)
    assert build(triage([case])) == first
    db = load(ROOT / "signatures")
    cond = next(c for sig in db.signatures for top in sig.conditions for c in top.walk() if c.sources.get("log") in kept)
    assert cond.pattern("log").pattern == cond.sources["log"]


def test_a_cached_database_loads_each_part_when_first_asked_and_equals_the_parsed_one(tmp_path, monkeypatch) -> None:
    """A warm run reads the database's skeleton; a signature's anchors, its other conditions and texts, each
    prefilter and each compiled pattern are loaded when first asked for, and are what parsing the files gives."""
    folder = tmp_path / "signatures"  # a copy: the database is the same for both loads
    shutil.copytree(ROOT / "signatures", folder)
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    parsed = load(folder)
    parsed.patterns.compile_all(parsed.signatures)
    cached = load(folder)
    sig = cached.signatures[0]
    assert {"anchors", "conditions", "title", "path"}.isdisjoint(vars(sig))
    assert not any(cached.prefilters.groups._loaded) and "together" not in vars(cached.prefilters)
    assert not cached.patterns._ready
    anchors = sig.anchors
    assert "anchors" in vars(sig) and "conditions" not in vars(sig)  # the rest waits for a candidate
    assert all(any(a is c for c in sig.conditions) for a in anchors)  # one object, as in the parsed signature
    for fresh, kept in zip(parsed.signatures, cached.signatures, strict=True):
        assert (kept.id, kept.title, kept.root_cause, kept.workarounds, kept.path, kept.anchor_patterns) == \
            (fresh.id, fresh.title, fresh.root_cause, fresh.workarounds, fresh.path, fresh.anchor_patterns)
        assert kept.conditions == fresh.conditions and kept.anchors == fresh.anchors and kept.support == fresh.support
    assert len(cached.prefilters.groups) == len(parsed.prefilters.groups)
    assert cached.prefilters.groups[3].patterns == parsed.prefilters.groups[3].patterns
    assert sum(cached.prefilters.groups._loaded) == 1
    assert cached.prefilters.together.patterns == parsed.prefilters.together.patterns
    cond = next(part for top in sig.conditions for part in top.walk() if part.sources)
    key = next(iter(cond.sources))
    assert cond.pattern(key).pattern == cond.sources[key] and len(cached.patterns._ready) == 1
    again = pickle.loads(pickle.dumps(cached))  # what is loaded and what is not, sent again (to a worker)
    assert [s.conditions for s in again.signatures] == [s.conditions for s in parsed.signatures]
    assert [g.patterns for g in again.prefilters.groups] == [g.patterns for g in parsed.prefilters.groups]


def test_signatures_compile_compiles_every_condition_regex(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    db = load(ROOT / "signatures")
    sources = {s for sig in db.signatures for top in sig.conditions for c in top.walk() for s in c.sources.values()}
    assert db.patterns.compile_all(db.signatures) == len(sources)
    again = load(ROOT / "signatures")
    assert again.patterns.compile_all(again.signatures) == len(sources)


def _cached_kinds(folder) -> list[str]:
    return sorted(p.stem.rsplit("-", 1)[1] for p in (folder / "scanners").glob("*.pickle"))


def test_a_scanner_builds_nothing_before_its_first_scan_and_keeps_what_it_built(tmp_path, monkeypatch) -> None:
    """The database in the cache holds no scanner's build; a scanner built once is read back by the next one."""
    import pickle

    import regex

    from triage.scan.scanner import LineScanner, hyperscan

    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    patterns = [r"Couldn'?t create blit kernels", r"\bgfx(?P<arch>\d{3,4})\b", r"hip\w+ failed"]
    lines = ["Couldn't create blit kernels!", "GPU 0: gfx1100", "hipMalloc failed", "nothing here"]
    fresh = LineScanner(patterns, regex.IGNORECASE)
    assert not (tmp_path / "scanners").exists()
    assert len(pickle.dumps(fresh)) < 1000  # patterns and settings only
    expected = LineScanner(patterns, regex.IGNORECASE, "python").scan(lines)
    assert expected == [[0], [1], [2]]
    assert fresh.scan(lines) == expected
    # A short text is read the Python way: a Hyperscan database is built only when it pays, or when asked for.
    assert _cached_kinds(tmp_path) == ["literals"]
    if hyperscan is None:
        return
    assert fresh.by_hyperscan == [0, 1, 2]
    assert _cached_kinds(tmp_path) == ["hyperscan", "literals"]
    again = LineScanner(patterns, regex.IGNORECASE)
    assert again.scan(lines) == expected and again._hs is not None  # the cached database, used at once


def test_a_long_text_builds_the_hyperscan_database(tmp_path, monkeypatch) -> None:
    import regex

    from triage.scan import scanner as scan

    if scan.hyperscan is None:
        import pytest

        pytest.skip("hyperscan is not installed (pip install 'hip-triage[fast]')")
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    monkeypatch.setattr(scan, "COMPILE_AFTER", 100)
    scanner = scan.LineScanner([r"memory access fault by gpu"], regex.IGNORECASE)
    short = ["x"] * 10
    assert scanner.scan(short) == [()] and scanner._hs is None
    long = ["Memory access fault by GPU node-1"] + ["ordinary line"] * 20
    assert scanner.scan(long) == [[0]] and scanner._hs is not None
    assert _cached_kinds(tmp_path) == ["hyperscan", "literals"]


def test_a_scanner_of_few_patterns_builds_its_database_sooner(tmp_path, monkeypatch) -> None:
    """A few patterns compile in milliseconds: their scanner (the parsers' needles in each file's head) stops
    reading the Python way after a few hundred KB, where one of hundreds of patterns reads megabytes first."""
    import regex

    from triage.scan import scanner as scan

    if scan.hyperscan is None:
        import pytest

        pytest.skip("hyperscan is not installed (pip install 'hip-triage[fast]')")
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    lines = ["ordinary line of a log " * 4] * 2_000  # about 190 KB
    few = scan.LineScanner([r"memory access fault", r"\bhip\w+ failed"], regex.IGNORECASE)
    many = scan.LineScanner([rf"needle number {n}\b" for n in range(200)], regex.IGNORECASE)
    for _ in range(3):
        assert few.scan(lines) == [(), ()] and many.scan(lines) == [()] * 200
    assert few._hs is not None and many._hs is None


def test_re_patterns_are_kept_compiled_and_read_back_the_same(tmp_path) -> None:
    """The parsers' patterns come back from the kept code equal to re.compile's (same flags and code), groups
    and all; an entry whose code is not what this Python writes is caught on the first read and not used."""
    import pickle
    import re

    from triage.lazy import CompiledRe
    from triage.parsers.lines import needle_scanners

    file = tmp_path / "re.pickle"
    patterns = sorted({(p, s.flags) for s in needle_scanners() for p in s.patterns})[:60]
    patterns += [(r"(?P<arch>gfx\d{3,4}[a-f]?)(?::(?P<feat>[+-]\w+))*", re.IGNORECASE), (r"^\s*#(\d+)\s+0x[0-9a-f]+", re.M)]
    first = CompiledRe(file)
    made = [first.compile(p, f) for p, f in patterns]
    assert made == [re.compile(p, f) for p, f in patterns]
    first.save()
    second = CompiledRe(file)
    again = [second.compile(p, f) for p, f in patterns]
    assert again == made and second._added == 0 and second._trusted
    assert [(p.groupindex, p.groups, p.flags) for p in again] == [(p.groupindex, p.groups, p.flags) for p in made]
    assert again[-2].fullmatch("GFX1100:+xnack").group("arch", "feat") == ("GFX1100", "+xnack")
    kept = pickle.loads(file.read_bytes())
    pattern = r"\bgfx90a\b"
    kept[(pattern, 0)] = kept[(r"^\s*#(\d+)\s+0x[0-9a-f]+", re.M)]  # valid code, another pattern's
    file.write_bytes(pickle.dumps(kept))
    third = CompiledRe(file)
    assert third.compile(pattern, 0) == re.compile(pattern) and third._trusted is False


def test_kept_patterns_are_added_and_saved_from_many_threads(tmp_path) -> None:
    """Analyses in threads (the server, the desk's workers) compile and save at once: nothing is lost or raised."""
    import pickle
    from concurrent.futures import ThreadPoolExecutor

    from triage.lazy import CompiledRe
    from triage.match.database import Patterns

    kept_re, kept_regex = CompiledRe(tmp_path / "re.pickle"), Patterns(tmp_path / "regex.pickle")
    sources = [rf"word{number}\b[^\n]{{0,9}}(?P<n>\d+)" for number in range(240)]

    def work(chunk: list[str]) -> None:
        for source in chunk:
            kept_re.compile(source)
            kept_regex.get(source, "a test")
            kept_re.save()
            kept_regex.save()

    with ThreadPoolExecutor(4) as pool:
        list(pool.map(work, [sources[i::4] for i in range(4)]))
    kept_re.save()
    kept_regex.save()
    assert len(pickle.loads((tmp_path / "re.pickle").read_bytes())) == len(sources)
    assert sorted(pickle.loads((tmp_path / "regex.pickle").read_bytes())) == sorted(sources)


def test_yaml_files_are_kept_parsed_and_read_again_when_changed(tmp_path, monkeypatch) -> None:
    """A YAML file's parse comes back from the cache while the file is unchanged, is parsed again once it changes,
    and a broken file raises as PyYAML does and leaves nothing in the cache."""
    import pytest
    import yaml

    from triage.resources import load_yaml

    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    table = tmp_path / "table.yaml"
    table.write_text("archs:\n  gfx1100: {family: RDNA3, apu: false}\nempty:\n")
    first = load_yaml(table)
    assert first == {"archs": {"gfx1100": {"family": "RDNA3", "apu": False}}, "empty": None}
    assert len(list((tmp_path / "cache" / "yaml").glob("*.pickle"))) == 1
    first["archs"].clear()  # a caller's change to what it got is not what the next caller gets
    assert load_yaml(table) == {"archs": {"gfx1100": {"family": "RDNA3", "apu": False}}, "empty": None}
    table.write_text("archs:\n  gfx1201: {family: RDNA4, apu: false}\n")
    assert load_yaml(table) == {"archs": {"gfx1201": {"family": "RDNA4", "apu": False}}}
    table.write_text("")
    assert load_yaml(table) is None  # an empty file's None is kept like any other value
    assert load_yaml(table) is None
    broken = tmp_path / "broken.yaml"
    broken.write_text("archs: [gfx1100\n")
    kept = set((tmp_path / "cache" / "yaml").iterdir())
    with pytest.raises(yaml.YAMLError):
        load_yaml(broken)
    assert set((tmp_path / "cache" / "yaml").iterdir()) == kept
    with pytest.raises(OSError):
        load_yaml(tmp_path / "absent.yaml")
    assert load_yaml(table, keep=False) is None


def test_a_warm_triage_imports_no_yaml_and_no_jinja(tmp_path) -> None:
    """A warm single triage finds the database, the support tables and the known frames parsed in the cache: it
    imports no PyYAML (a cold one does, to read the signatures), and no Jinja either: the signatures' texts it fills
    were translated to Python on the cold run (match/texts.py) and the text report is written in Python
    (report/text.py). Nor the regex package's pattern parser (regex._main): its patterns are rebuilt from the
    kept code by the engine alone; nor hashlib (OpenSSL's start-up) for the cache's keys."""
    import json
    import os
    import subprocess
    import sys

    case = str(CORPUS / "seed-000-blit-kernels-device-libs-missing")
    probe = ("import io, json, sys, contextlib\nfrom triage.cli import main\nsys.argv = ['triage', *sys.argv[1:]]\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    try:\n        main()\n    except SystemExit:\n        pass\n"
             "print(json.dumps(sorted(m for m in ('yaml', 'jinja2', 'regex._main', 'hashlib') if m in sys.modules)))")
    env = {**os.environ, "TRIAGE_CACHE": str(tmp_path)}

    def imported(*args: str) -> list[str]:
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, env=env, cwd=tmp_path,
                              check=True)
        return json.loads(done.stdout.splitlines()[-1])

    # cold: the database is built from the signature files; a JSON report fills every candidate's texts (a text
    # report only the answer's), so all of them are translated now
    assert {"jinja2", "yaml", "regex._main"} <= set(imported(case, "-f", "json"))
    assert not {"jinja2", "yaml"} & set(imported(case))  # the text report's own patterns compiled and kept now
    assert imported(case) == []
    assert imported(case, "-f", "json") == []
    assert imported(case, "-f", "html") == ["hashlib", "jinja2"]  # the HTML report is a Jinja template (its cache)


def test_lazy_regex_patterns_are_kept_and_read_back(tmp_path, monkeypatch) -> None:
    """A ``regex`` pattern of triage.lazy is compiled on first use, saved in the cache's regex file, and a later
    process takes it from there without compiling it."""
    import regex

    from triage.lazy import CompiledRe, compiled_re, lazy_regex

    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path))
    pattern = lazy_regex(r"[\p{Cf}]+x")
    assert pattern.search("a\u200bx").group() == "\u200bx"
    memo = compiled_re()
    assert memo is not None and memo.file is not None
    memo.save()
    later = CompiledRe(memo.file)
    monkeypatch.setattr(regex, "compile", lambda *args, **kwargs: (_ for _ in ()).throw(AssertionError("compiled")))
    again = later.compile_regex(r"[\p{Cf}]+x")
    assert again.search("b\u200b\u200bx").group() == "\u200b\u200bx"
    assert again._pickled_data == pattern._pickled_data
