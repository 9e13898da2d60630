"""Signature texts filled by their Python translation (triage/match/texts.py) read exactly as Jinja's sandbox fills them."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CORPUS, ROOT
from triage.match import engine
from triage.match.database import Database, _load
from triage.match.texts import Missing, Texts, Untranslatable, translate
from triage.pipeline import triage

# The seeds, and a design case of each failure class (Linux, Windows and WSL among them).
CASES = sorted(p.parent for p in CORPUS.glob("*/expected.yaml")) + [CORPUS / "realworld" / name for name in (
    "cmake-gitlab-24562-debian-hip-lang-config-multiarch-not-searched",
    "amdgpu-jl-738-mi100-hipmemgetinfo-invalid-value-rocm630",
    "ashleyyakeley-sd-rocm-4-nobinaryforgpu-rx6700xt-override",
    "amdgpu-jl-314-rocblas-jll-no-gfx1031-tensile-kernels-segfault",
    "clr-269-rx570-gfx803-rejected-by-rocm7-rocr-no-opencl-devices",
    "amd-igpu-yolo-1-wsl-rock-module-not-loaded",
    "amdgpu-jl-216-free-invalid-pointer-hipstreamsynchronize-steamdeck",
    "amrex-3901-single-task-wavefront-check-mem-fault-frontier",
    "amdgpu-202-rx9060xt-ring-timeout-mes-mode1",
    "adaptivecpp-116-fedora31-rpm-bitcode-not-in-opt-rocm-lib",
    "comfyui-5161-rx6600-8gb-first-generation-hip-oom",
    "comfyui-9121-rx9070xt-windows-hip-oom-14mib-with-13gib-free",
    "booth-55-hand-built-hsaco-elf-header-invalid-code-object",
)]


@pytest.fixture(scope="module")
def db() -> Database:
    return _load(ROOT / "signatures")  # the signature files as they are now, not a cached build


@pytest.fixture(scope="module")
def every_text(db: Database) -> list[str]:
    """Every text of the database the engine may fill (one with a placeholder): the signatures', the ``ask_for``
    table's, the unknown answer's."""
    out = [*db.ask_for.values(), str(db.unknown.get("title", "")), str(db.unknown.get("root_cause", ""))]
    for entries in [db.unknown.get("ask_for") or [], *(sig.ask_for for sig in db.signatures)]:
        out.extend(entry.get("text", "") if isinstance(entry, dict) else str(entry) for entry in entries)
    for sig in db.signatures:
        out.extend((sig.title, sig.root_cause, sig.fix))
        out.extend(str(w.get(key, "")) for w in sig.workarounds if isinstance(w, dict)
                   for key in ("title", "commands", "note", "risk"))
    return list(dict.fromkeys(text for text in out if "{" in text))


def _contexts() -> list[dict]:
    """What each case's texts are filled with: its facts alone, with the candidates (the unknown answer's), and
    with each candidate's captures; and nothing at all (a command cut apart is shown unfilled)."""
    out: list[dict] = [{}]
    for folder in CASES:
        result = triage([str(folder)])
        base = engine._context(result.case)
        out.append(base)
        out.append(dict(base, candidates=list(result.diagnoses[1:])))
        out.extend({**base, **d.captures} for d in result.diagnoses if d.captures)
    return out


def _filled(text: str, context: dict, prose: bool, texts: Texts | None) -> tuple[str, tuple[str, ...]] | str:
    try:
        out = engine.render(text, context, prose=prose, texts=texts)
    except Exception as err:  # noqa: BLE001 - a text Jinja refuses must be refused the same way
        return f"raised {type(err).__name__}"
    return str(out), getattr(out, "from_input", ())


def test_every_text_reads_the_same_translated_and_through_jinja(every_text: list[str]) -> None:
    """Every text of every signature (and the unknown answer's), filled from every case's contexts as prose and as
    commands, is the same string (with the same values named as from the input) both ways; and the translation,
    not Jinja, filled nearly all of them."""
    texts = Texts.build(every_text)
    assert len(every_text) > 100 and all(texts.function(text) for text in every_text)  # every one translates today
    translated = declined = 0
    for context in _contexts():
        for text in every_text:
            for prose in (True, False):
                assert _filled(text, context, prose, texts) == _filled(text, context, prose, None), (text, prose)
                if texts.fill(text, context if prose else engine._from_case(context)) is None:
                    declined += 1
                else:
                    translated += 1
    assert translated > 50 * declined


def test_hostile_values_read_the_same_translated_and_through_jinja(every_text: list[str]) -> None:
    """Every name a text reads set to a value made to break quoting (shell and cmd.exe metacharacters, a line break,
    a bidi control), on Linux and on Windows: prose and commands are the same strings both ways."""
    from jinja2 import Environment, meta

    env, texts = Environment(), Texts.build(every_text)
    for text in every_text:
        names = meta.find_undeclared_variables(env.parse(text))
        for os_name in ("linux", "windows"):
            for value in ("x;$(id)&y'z\"w|v", "a\nrm -rf ~ \u202e", "gfx1100 %PATH% !x! ^&"):
                context = {name: value for name in names} | {"os": os_name}
                for prose in (True, False):
                    assert _filled(text, context, prose, texts) == _filled(text, context, prose, None), (text, value)


def test_a_missing_fact_shows_its_name_and_tests_as_jinja_does() -> None:
    texts = Texts.build(["{{ gfx_arch }} on {{ os | default('linux') }}{% if rocm is defined %} x{% endif %}",
                         "{% set a = arch | default('') %}{{ a == '' }} {{ missing == other }} {{ not arch }}"])
    assert texts.fill("{{ gfx_arch }} on {{ os | default('linux') }}{% if rocm is defined %} x{% endif %}", {}) \
        == "<gfx_arch> on linux"
    assert texts.fill("{% set a = arch | default('') %}{{ a == '' }} {{ missing == other }} {{ not arch }}", {}) \
        == "True True True"
    assert str(Missing("x")) == "<x>" and not Missing("x")


def test_values_from_the_case_keep_their_marks_through_methods_and_filters(db: Database) -> None:
    """In commands a case value passed through ``split``, a subscript, ``default`` or ``join`` is still quoted."""
    text = ("{{ (version | default('3')).split('.')[0] }} {{ names | join(' ') }} "
            "{% if arch.startswith('gfx11') %}{{ arch }}{% endif %}")
    texts = Texts.build([text])
    context = {"version": "6.2.1", "names": ["a b", "c"], "arch": "gfx1100;rm -rf /"}
    out = engine.render(text, context, prose=False, texts=texts)
    assert out == engine.render(text, context, prose=False)
    assert str(out) == "6 'a b' c 'gfx1100;rm -rf /'"
    assert out.from_input == ("version", "names", "arch")


@pytest.mark.parametrize("text", [
    "{{ x.__class__ }}",  # no attribute outside the allowed string methods
    "{{ x.format(1) }}",
    "{{ x.split }}",  # a method is called, never read
    "{{ range(3) }}",  # Jinja's globals are not facts
    "{{ self }}",
    "{% for a in b %}{{ a }}{% endfor %}",
    "{{ x | upper }}",  # a filter not translated
    "{{ x + 1 }}",
    "{{ x if y }}",  # Jinja's undefined with a hint
    "{{ x[1:2] }}",
])
def test_jinja_beyond_the_translated_part_is_left_to_jinja(text: str) -> None:
    with pytest.raises(Untranslatable):
        translate(text)
    assert Texts.build([text]).function(text) is None
    assert Texts.build([text]).fill(text, {"x": "a", "y": True, "b": []}) is None


def test_where_the_translation_could_differ_jinja_fills_the_text() -> None:
    """An operation Jinja's undefined value refuses, or an index out of range: the translation declines."""
    texts = Texts.build(["{{ x.split('.')[3] }}", "{{ x | float }}", "{{ 'a' in x }}", "{{ x | truncate(9) }}"])
    assert texts.fill("{{ x.split('.')[3] }}", {"x": "6.2"}) is None
    assert texts.fill("{{ x.split('.')[1] }}", {"x": "6.2"}) == "2"  # translated when first filled
    assert texts.fill("{{ x | float }}", {}) is None
    assert texts.fill("{{ x | float }}", {"x": "2.5"}) == "2.5"
    assert texts.fill("{{ 'a' in x }}", {}) is None
    assert texts.fill("{{ x | truncate(9) }}", {"x": "one two three four"}) == "one..."
    assert engine.render("{{ x | truncate(9) }}", {"x": "one two three four"}) == "one..."


def test_a_text_filled_once_is_read_back_without_jinja(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first fill translates a text and keeps its code in the cache folder; the next run (a new ``Texts`` on the
    same folder) fills it from there, with neither the translation nor Jinja."""
    from triage.match import texts as texts_module

    text = "{{ gfx_arch | default('gfx') }}{% if os == 'windows' %} (Windows){% endif %}"
    untranslatable = "{{ x | upper }}"
    first = Texts(tmp_path)
    assert first.fill(text, {"os": "windows"}) == "gfx (Windows)" and first.fill(untranslatable, {"x": "a"}) is None
    assert len(list(tmp_path.glob("*.code"))) == 2
    monkeypatch.setattr(texts_module, "translate", lambda text: (_ for _ in ()).throw(AssertionError("translated")))
    monkeypatch.setattr(engine, "_environment", lambda: (_ for _ in ()).throw(AssertionError("jinja used")))
    again = Texts(tmp_path)
    assert again.fill(text, {"os": "linux", "gfx_arch": "gfx1100"}) == "gfx1100"
    assert again.fill(untranslatable, {"x": "a"}) is None  # kept as "Jinja fills it"


def test_kept_code_of_another_python_or_damaged_is_translated_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept code is read back only by the Python (and the translation) that made it; a damaged file is made again."""
    from triage.match import texts as texts_module

    text = "{{ gfx_arch | default('gfx') }}"
    assert Texts(tmp_path).fill(text, {}) == "gfx"
    (kept,) = tmp_path.glob("*.code")
    kept.write_bytes(b"not code")
    assert Texts(tmp_path).fill(text, {"gfx_arch": "gfx90a"}) == "gfx90a"
    assert kept.read_bytes() != b"not code"
    monkeypatch.setattr(texts_module, "_build_tag", lambda: "another python")
    assert Texts(tmp_path).fill(text, {}) == "gfx"
    assert len(list(tmp_path.glob("*.code"))) == 2


def test_a_warm_json_triage_imports_no_jinja(tmp_path: Path) -> None:
    """With the database in the cache, a case whose texts hold placeholders is reported as JSON without Jinja."""
    import json
    import os
    import subprocess
    import sys

    case = str(CORPUS / "seed-000-blit-kernels-device-libs-missing")
    probe = ("import io, json, sys, contextlib\nfrom triage.cli import main\nsys.argv = ['triage', *sys.argv[1:]]\n"
             "with contextlib.redirect_stdout(io.StringIO()) as out:\n    try:\n        main()\n    except SystemExit:\n"
             "        pass\nprint(json.dumps([sorted(m for m in ('yaml', 'jinja2') if m in sys.modules), out.getvalue()]))")
    env = {**os.environ, "TRIAGE_CACHE": str(tmp_path)}

    def run() -> list:
        done = subprocess.run([sys.executable, "-c", probe, case, "-f", "json"], capture_output=True, text=True,
                              env=env, cwd=tmp_path, check=True)
        return json.loads(done.stdout.splitlines()[-1])

    cold_modules, cold = run()
    warm_modules, warm = run()
    assert "jinja2" in cold_modules and warm_modules == []
    assert warm == cold and "<" not in json.loads(warm)["diagnoses"][0]["root_cause"]
