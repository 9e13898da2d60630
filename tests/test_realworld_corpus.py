"""The real-world corpus (corpus/realworld): valid labels, its size and spread, no reserved thread,
a fixed held-out split, and the accuracy report that reads it."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import ROOT
from triage.corpus.labels import (CLASSES, NEGATIVE, LabelError, case_folders, held_out, read_label, read_seen,
                                  same_thread, thread_key, thread_names)

REALWORLD = ROOT / "corpus" / "realworld"
SHARED = ROOT.parent / "shared"
LABELS = [read_label(f) for f in case_folders(REALWORLD)]


def test_every_label_is_valid_and_every_thread_appears_once() -> None:
    assert len(LABELS) == len(list(REALWORLD.glob("*/label.yaml")))
    # a thread once, under any of its names (ROCm/ROCm is also ROCm/legacy-rocm-build; see thread_names)
    threads = Counter(same_thread(label.source) for label in LABELS)
    assert [t for t, n in threads.items() if n > 1] == []


def test_size_and_spread() -> None:
    classes = Counter(label.klass for label in LABELS)
    assert len(LABELS) >= 250
    assert {c: classes[c] for c in CLASSES if classes[c] < 10} == {}
    assert classes[NEGATIVE] >= 40
    oses = Counter(label.facts.get("os") for label in LABELS)
    assert oses["linux"] >= 50 and oses["windows"] >= 30 and oses["wsl"] >= 5
    series = Counter(str(label.facts.get("rocm", ""))[:2] for label in LABELS)
    assert all(series[s] >= 10 for s in ("5.", "6.", "7."))


def test_inputs_hold_no_email_address_or_token() -> None:
    import re

    # an address, not a systemd unit instance ("user@1000.service", "app-x@autostart.service")
    secret = re.compile(r"[\w.+-]+@(?![\w.-]*\.(?:service|socket|scope|slice|target|mount|timer|path)\b)[\w-]+\.[\w.]+\.?[a-z]{2,}\b|\bghp_\w{20,}|github_pat_\w+|\bAKIA[0-9A-Z]{16}\b|\bhf_\w{20,}")
    leaks = [p.name for f in case_folders(REALWORLD) for p in f.iterdir()
             if p.name != "label.yaml" and secret.search(p.read_text(errors="replace"))]
    assert leaks == []


@pytest.mark.skipif(not (SHARED / "tools" / "reserved.py").is_file(),
                    reason="../shared/tools/reserved.py is absent (a user's clone): reserved threads cannot be checked")
def test_no_reserved_thread_in_signatures_tests_or_corpus() -> None:
    done = subprocess.run([sys.executable, str(SHARED / "tools" / "reserved.py"), "--scan",
                           str(ROOT / "signatures"), str(ROOT / "tests"), str(ROOT / "corpus")],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout


@pytest.mark.skipif(not (SHARED / "tools" / "reserved.py").is_file(),
                    reason="../shared/tools/reserved.py is absent (a user's clone): reserved threads cannot be checked")
def test_no_reserved_thread_under_the_other_name_of_rocms_issue_tracker() -> None:
    """ROCm/ROCm's issues are also linked as ROCm/legacy-rocm-build, and ROCm's repositories moved between
    organisations (one thread, several names; see thread_names): a link under one name must not be a reserved
    thread under another, which the scan above, reading links as written, cannot see."""
    import re

    hub = re.compile(r"github\.com/(?:ROCm|ROCmSoftwarePlatform|RadeonOpenCompute|ROCm-Developer-Tools)/[\w.-]+/"
                     r"(?:issues|pull|discussions)/\d+", re.IGNORECASE)
    found = set()
    for folder in ("signatures", "tests", "corpus"):
        for path in (ROOT / folder).rglob("*"):
            if path.is_file() and path.suffix in {".yaml", ".yml", ".tsv", ".txt", ".md", ".json", ".py"}:
                found.update(hub.findall(path.read_text(errors="replace")))
    twins = sorted({name for link in found for name in thread_names(link)[1:]})
    assert len(twins) > 100  # the fixtures and the corpus link hundreds of this tracker's threads
    done = subprocess.run([sys.executable, str(SHARED / "tools" / "reserved.py"), *twins],
                          capture_output=True, text=True, timeout=300)
    reserved = [line for line in done.stdout.splitlines() if line.split()[-1:] == ["reserved"]]
    assert reserved == [], reserved


def test_the_split_depends_only_on_the_thread() -> None:
    """Two spellings of one thread fall on the same side; about a third is held out; SEEN moves a case to design."""
    assert thread_key("https://github.com/ROCm/ROCm/issues/5238#issuecomment-1") == "rocm/rocm#5238"
    assert held_out("https://github.com/ROCm/ROCm/issues/5238") == held_out("http://GITHUB.com/rocm/rocm/issues/5238/")
    share = sum(held_out(label.source) for label in LABELS) / len(LABELS)
    assert 0.25 < share < 0.42
    some = next(label for label in LABELS if held_out(label.source))
    assert not held_out(some.source, frozenset({some.thread}))
    seen = read_seen(REALWORLD)
    assert all(not held_out(label.source, seen) for label in LABELS if label.thread in seen)


def test_a_broken_label_names_the_file_and_the_field(tmp_path: Path) -> None:
    case = tmp_path / "x"
    case.mkdir()
    (case / "input.txt").write_text("Segmentation fault\n")
    (case / "label.yaml").write_text("class: no-such-class\nsource: https://github.com/a/b/issues/1\n")
    with pytest.raises(LabelError, match=r"label\.yaml: `class: no-such-class` is not one of"):
        read_label(case)
    (case / "label.yaml").write_text("class: out-of-memory\nsource: https://github.com/a/b/issues/1\n")
    with pytest.raises(LabelError, match="`conclusion` is missing"):
        read_label(case)


def test_accuracy_report_parts_and_floor() -> None:
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "accuracy.py"), "--json"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["cases"] == len(LABELS)
    for figures in (report["parts"]["design"], report["parts"]["holdout"], report["floor"]["design"],
                    report["floor"]["holdout"]):
        assert {"positives_right", "positives", "negatives_right", "negatives", "confident_wrong",
                "calibration", "per_class", "abstention_rate"} <= set(figures)
    assert report["parts"]["design"]["cases"] + report["parts"]["holdout"]["cases"] == len(LABELS)
    text = subprocess.run([sys.executable, str(ROOT / "tools" / "accuracy.py")], capture_output=True, text=True,
                          timeout=600).stdout
    design, holdout = text.split("== hip-triage, holdout")
    assert "wrong answers:" in design and "wrong answers:" not in holdout.split("== grep floor")[0]
