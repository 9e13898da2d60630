"""Two-line log conditions: ``log`` names a line, ``then`` a line shortly after it (``within`` lines).

The inputs are real tool output: ld.lld 15 linking an object that calls the device libraries' functions without
them, glibc's ldd on a program whose libamdhip64 is gone, and CPython printing an exception with PyTorch's HIP
error message.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from triage.match import conditions, load
from triage.match.database import THEN_WITHIN_MAX, SignatureError, load_signature
from triage.match.lint import check_regexes, check_schema
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

SIGNATURE = {
    "id": "probe", "title": "A probe signature for one condition", "class": "runtime-mismatch",
    "status": "experimental", "version": 1, "root_cause": "x", "workarounds": [], "ask_for": [], "references": [],
    "tests": {"match": [], "no_match": []},
}

# ld.lld-15 k.o (clang-19 -g -c k.c: a C file calling __ockl_get_local_size and __ocml_sqrt_f32)
LLD = """\
ld.lld-15: error: undefined symbol: __ockl_get_local_size
>>> referenced by k.c:3 (/home/user/src/k.c:3)
>>>               k.o:(f)

ld.lld-15: error: undefined symbol: __ocml_sqrt_f32
>>> referenced by k.c:3 (/home/user/src/k.c:3)
>>>               k.o:(f)
"""
UNDEFINED = {"log": r"undefined symbol: (?P<symbol>__oc[km]l_\w+)", "then": r"^>>> referenced by"}

# glibc 2.39's ldd on a program linked against libamdhip64.so.6, after the library was removed
LDD = """\
$ ldd ./m
\tlinux-vdso.so.1 (0x00007fbb5d05b000)
\tlibamdhip64.so.6 => not found
\tlibc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x00007fbb5ce62000)
\t/lib64/ld-linux-x86-64.so.2 (0x00007fbb5d05d000)
"""
LDD_MISSING = {"log": r"^\$ ldd\b", "then": r"^\s*(?P<library>libamdhip64\.so[.\d]*) => not found", "within": 10}

# CPython 3.12 printing a RuntimeError raised with PyTorch's HIP error text
PYTHON = """\
Traceback (most recent call last):
  File "/home/user/run.py", line 3, in <module>
    out = model(x)
RuntimeError: HIP error: invalid device function
HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.
For debugging consider passing AMD_SERIALIZE_KERNEL=3
"""
HIP_ERROR = {"log": r"^RuntimeError: HIP error: (?P<hip_error>[^\n]+)", "then": r"AMD_SERIALIZE_KERNEL=3"}


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "db"
    if not folder.exists():
        folder.mkdir()
        shutil.copy(data_dir("signatures") / "_database.yaml", folder)
        shutil.copy(data_dir("signatures") / "schema.json", folder)
    return folder


def _write(tmp_path: Path, condition: dict) -> Path:
    folder = _folder(tmp_path)
    (folder / "probe.yaml").write_text(yaml.safe_dump(
        SIGNATURE | {"conditions": [{"id": "c", "description": "d", "strength": 0.6} | condition]}))
    return folder


def _probe(tmp_path: Path, condition: dict, text: str):  # noqa: ANN202 - a Diagnosis or None
    folder = _write(tmp_path, condition)
    result = analyze([Artifact(name="paste.txt", text=text, size=len(text))], load(folder), folder)
    return next((d for d in result.diagnoses if d.id == "probe" and d.confidence > 0), None)


def test_lld_undefined_symbol_and_its_reference_are_both_quoted(tmp_path: Path) -> None:
    found = _probe(tmp_path, UNDEFINED, LLD)
    assert found is not None
    assert [(e.line, e.text.split(":")[0]) for e in found.evidence][:4] == [
        (1, "ld.lld-15"), (2, ">>> referenced by k.c"), (5, "ld.lld-15"), (6, ">>> referenced by k.c")]
    assert found.captures.get("symbol") == "__ockl_get_local_size"


@pytest.mark.parametrize("text", [
    "ld.lld-15: error: undefined symbol: __ockl_get_local_size\n",  # no reference after it
    "ld.lld-15: error: undefined symbol: __ockl_get_local_size\n\n\n\n>>> referenced by k.c:3\n",  # too far (3)
    ">>> referenced by k.c:3\nld.lld-15: error: undefined symbol: __ockl_get_local_size\n",  # before, not after
])
def test_the_then_line_must_follow_within_the_window(tmp_path: Path, text: str) -> None:
    assert _probe(tmp_path, UNDEFINED, text) is None
    assert _probe(tmp_path, {"log": UNDEFINED["log"]}, text) is not None  # the first line alone holds


def test_within_widens_the_window(tmp_path: Path) -> None:
    far = "ld.lld-15: error: undefined symbol: __ockl_get_local_size\n\n\n\n>>> referenced by k.c:3\n"
    assert _probe(tmp_path, UNDEFINED | {"within": 4}, far) is not None
    assert _probe(tmp_path, UNDEFINED | {"within": 3}, far) is None


def test_the_then_line_is_in_the_same_input(tmp_path: Path) -> None:
    folder = _write(tmp_path, UNDEFINED)
    first, second = LLD.splitlines(keepends=True)[0], "".join(LLD.splitlines(keepends=True)[1:3])
    result = analyze([Artifact(name="a.txt", text=first, size=len(first)),
                      Artifact(name="b.txt", text=second, size=len(second))], load(folder), folder)
    assert not [d for d in result.diagnoses if d.id == "probe" and d.confidence > 0]


def test_an_ldd_block_with_the_hip_runtime_not_found(tmp_path: Path) -> None:
    found = _probe(tmp_path, LDD_MISSING, LDD)
    assert found is not None and found.captures.get("library") == "libamdhip64.so.6"
    assert [e.line for e in found.evidence] == [1, 3]
    assert _probe(tmp_path, LDD_MISSING, LDD.replace("libamdhip64.so.6 => not found",
                                                     "libamdhip64.so.6 => /opt/rocm/lib/libamdhip64.so.6")) is None


def test_a_python_exception_and_its_message(tmp_path: Path) -> None:
    found = _probe(tmp_path, HIP_ERROR, PYTHON)
    assert found is not None and found.captures.get("hip_error") == "invalid device function"
    assert [e.line for e in found.evidence] == [4, 6]


def test_a_two_line_test_inside_a_combination(tmp_path: Path) -> None:
    combined = {"any_of": [{"log": r"never printed"}, UNDEFINED | {"within": 2}]}
    assert _probe(tmp_path, combined, LLD) is not None
    assert _probe(tmp_path, combined, LLD.replace(">>> referenced", "    referenced")) is None


def test_the_then_lines_are_read_once_each(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A first line on every line of a long log, and no then line: each line is searched for the then pattern
    once, not once for each first line whose window holds it (the cost stays one search a line)."""
    searches = {"then": 0}
    search = conditions._search

    def counted(pattern, text, cond, case, where):  # noqa: ANN001, ANN202
        searches["then"] += pattern.pattern == "never printed"
        return search(pattern, text, cond, case, where)

    monkeypatch.setattr(conditions, "_search", counted)
    lines = 40_000
    text = "ld.lld: error: undefined symbol: __ockl_get_local_size\n" * lines
    assert _probe(tmp_path, {"log": UNDEFINED["log"], "then": "never printed", "within": THEN_WITHIN_MAX}, text) is None
    assert 0 < searches["then"] <= lines


@pytest.mark.parametrize("condition, problem", [
    ({"fact": {"name": "gpu_vendor", "equals": "amd"}, "then": "x"}, "then belongs to a log condition"),
    ({"log": "x", "within": 3}, "it has none"),
    ({"log": "x", "then": "y", "within": 0}, "from 1 to"),
    ({"log": "x", "then": "y", "within": THEN_WITHIN_MAX + 1}, "from 1 to"),
    ({"log": "x", "then": "y", "within": "3"}, "from 1 to"),
    ({"log": "x", "then": ""}, "then is a regex"),
])
def test_malformed_then_is_a_signature_error(tmp_path: Path, condition: dict, problem: str) -> None:
    path = _write(tmp_path, condition) / "probe.yaml"
    with pytest.raises(SignatureError, match=problem):
        load_signature(path)


def test_lint_reports_a_bad_then_regex(tmp_path: Path) -> None:
    folder = _write(tmp_path, {"log": "undefined symbol", "then": r">>> (referenced"})
    _, problems = check_regexes(load(folder))
    assert any("bad regex" in p and "referenced" in p for p in problems)


@pytest.mark.parametrize("condition, valid", [
    (UNDEFINED, True),
    (UNDEFINED | {"within": 5}, True),
    ({"any_of": [UNDEFINED | {"within": 2}]}, True),
    ({"fact": {"name": "gpu_vendor", "equals": "amd"}, "then": "x"}, False),
    ({"log": "x", "within": 2}, False),
    (UNDEFINED | {"within": 0}, False),
    (UNDEFINED | {"within": THEN_WITHIN_MAX + 1}, False),
    ({"any_of": [{"fact": {"name": "gpu_vendor", "equals": "amd"}, "then": "x"}]}, False),
])
def test_schema_knows_then_and_within(tmp_path: Path, condition: dict, valid: bool) -> None:
    folder = _write(tmp_path, condition)
    problems = [p for p in check_schema(folder) if ": tests" not in p]
    assert (problems == []) is valid, problems


def test_a_cached_database_keeps_the_window(tmp_path: Path) -> None:
    folder = _write(tmp_path, UNDEFINED | {"within": 7})
    for _ in range(2):  # built, then read back from the cache
        cond = load(folder).signatures[0].conditions[0]
        assert (cond.within, cond.sources["then"]) == (7, UNDEFINED["then"])


@pytest.mark.parametrize("condition, words", [
    (UNDEFINED | {"within": 1}, f"log: {UNDEFINED['log']}, then within 1 line: {UNDEFINED['then']}"),
    (UNDEFINED, f"log: {UNDEFINED['log']}, then within 3 lines: {UNDEFINED['then']}"),
    ({"any_of": [{"fact": {"name": "gpu_vendor", "equals": "amd"}}, HIP_ERROR]},
     f"any of [fact: gpu_vendor, equals amd; log: {HIP_ERROR['log']}, then within 3 lines: {HIP_ERROR['then']}]"),
])
def test_signatures_show_names_the_second_line(tmp_path: Path, condition: dict, words: str) -> None:
    """`triage signatures show` and the catalogue say a condition's second line and its window, at the top or
    inside a combination, not only its first line."""
    from triage.report import condition_text

    assert condition_text(load(_write(tmp_path, condition)).signatures[0].conditions[0]) == words
