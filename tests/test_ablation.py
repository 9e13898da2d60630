"""tools/ablation.py: design cases matched again without the signatures that named them."""

from __future__ import annotations

import dataclasses
import functools
import importlib.util
import subprocess
import sys
from types import ModuleType

import pytest

from tests.conftest import ROOT
from triage.corpus.labels import read_label
from triage.ingest import read_inputs
from triage.match import load, match
from triage.model import Case
from triage.pipeline import analyze
from triage.resources import data_dir

REALWORLD = ROOT / "corpus" / "realworld"
SIGNATURES = data_dir("signatures")
# Design cases: an invalid-kernel-file message that a specific signature
# and the class's fallback both read; a crash that only the runtime-crash fallback reads.
TWO_SIGNATURES = "dlss-nr-on-amd-29-rx9060xt-gfx1200-invalid-kernel-file-no-gfx1200-kernels"
FALLBACK_ONLY = "clr-18-znver4-hip-nontemporal-memcpy-segfault-fixed-rocm62"


@functools.cache
def _tool() -> ModuleType:
    """tools/ablation.py as a module (tools/ is no package); registered first, as its dataclasses need."""
    spec = importlib.util.spec_from_file_location("ablation", ROOT / "tools" / "ablation.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def _case(name: str) -> Case:
    db = load(SIGNATURES)
    artifacts, warnings = read_inputs([str(REALWORLD / name)])
    return analyze(artifacts, db, SIGNATURES, warnings).case


def test_a_left_out_signature_is_no_candidate_and_the_rest_still_match() -> None:
    db = load(SIGNATURES)
    case = _case(TWO_SIGNATURES)
    full = [d.id for d in match(case, db)]
    top = full[0]
    fewer = [d.id for d in match(case, db.without([top]))]
    assert top not in fewer
    assert set(full) - {top, "unknown"} == set(fewer) - {"unknown"}  # every other candidate is still one
    assert len(db.without([top]).signatures) == len(db.signatures) - 1
    assert len(db.signatures) == len(load(SIGNATURES).signatures)  # the database itself is unchanged


def test_a_specific_signature_left_out_leaves_the_class_fallback() -> None:
    tool = _tool()
    name = TWO_SIGNATURES
    result = tool.ablate(_case(name), read_label(REALWORLD / name), load(SIGNATURES))
    assert result.answer.klass == "no-code-object" and not result.answer.fallback
    assert result.answer.signature in result.left_out["class"]
    fallback = result.without["class"]
    assert fallback.fallback and fallback.klass == "no-code-object"
    assert fallback.signature not in result.left_out["class"]
    assert tool.outcome(read_label(REALWORLD / name), fallback) == "right"


def test_a_case_only_a_fallback_names_loses_it_in_the_top_run_only() -> None:
    tool = _tool()
    name = FALLBACK_ONLY
    label = read_label(REALWORLD / name)
    result = tool.ablate(_case(name), label, load(SIGNATURES))
    assert result.answer.fallback and result.answer.klass == "runtime-crash"
    assert result.left_out["class"] == ()  # no specific signature of the class held: nothing to take away
    assert result.without["class"] == result.answer
    assert result.without["top"].signature != result.answer.signature


def test_a_case_named_wrong_is_not_ablated_and_outcomes_count_as_accuracy_does() -> None:
    tool = _tool()
    name = FALLBACK_ONLY
    label = read_label(REALWORLD / name)
    other = dataclasses.replace(label, klass="out-of-memory", accept=())
    assert tool.ablate(_case(name), other, load(SIGNATURES)) is None
    assert tool.outcome(label, tool.Answer("unknown", "unknown")) == "unknown"
    assert tool.outcome(label, tool.Answer("out-of-memory", "hip-error-out-of-memory")) == "wrong"
    assert tool.outcome(label, tool.Answer("runtime-crash", "rocm-library-crash-fallback", True)) == "right"


def test_fixture_mode_takes_the_positive_fixtures_with_their_indexed_class() -> None:
    tool = _tool()
    rows = tool.fixture_positives()
    classes = {klass for _, klass in rows}
    assert "unknown" not in classes and "outside-gpu-stack" not in classes
    assert {"runtime-crash", "no-code-object", "gpu-hang-reset"} <= classes
    indexed = [line.split("\t") for line in (tool.FIXTURES / "index.tsv").read_text(encoding="utf-8").splitlines()
               if line.strip() and not line.startswith("#")]
    assert len(rows) == sum(klass not in ("unknown", "outside-gpu-stack") for _, klass, _ in indexed)
    path, klass = next((p, k) for p, k in rows if k == "no-code-object")
    result = tool._run(str(path), klass)
    assert result is not None and result.label == klass and result.answer.klass == klass
    assert result.answer.signature in result.left_out["top"]
    assert tool.outcome(tool.fixture_label(path, klass), tool.Answer("runtime-crash", "x")) == "wrong"


@pytest.mark.parametrize("argument", ["--corpus=/nonexistent-corpus"])
def test_a_missing_corpus_is_a_clear_usage_error(argument: str) -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "ablation.py"), argument],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2
    assert "no corpus folder" in done.stderr and "Traceback" not in done.stderr
