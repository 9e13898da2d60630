"""Conditions that compare facts and combine conditions: each reasoning step is one YAML condition."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from triage.match import conditions, load
from triage.match.database import SignatureError, load_signature
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

SIGNATURE = {
    "id": "probe", "title": "A probe signature for one condition", "class": "runtime-mismatch",
    "status": "experimental", "version": 1, "root_cause": "x", "workarounds": [], "ask_for": [], "references": [],
    "tests": {"match": [], "no_match": []},
}


def _verdict(tmp_path: Path, condition: dict, text: str) -> float:
    """The probe signature's confidence on ``text`` when its only condition is ``condition``."""
    folder = tmp_path / "db"
    if not folder.exists():
        folder.mkdir()
        shutil.copy(data_dir("signatures") / "_database.yaml", folder)
    (folder / "probe.yaml").write_text(yaml.safe_dump(
        SIGNATURE | {"conditions": [{"id": "c", "description": "d", "strength": 0.6} | condition]}))
    result = analyze([Artifact(name="paste.txt", text=text, size=len(text))], load(folder), folder)
    return next((d.confidence for d in result.diagnoses if d.id == "probe"), 0.0)


WHEEL_ON_OTHER_ROCM = "torch    2.3.0+rocm6.0\n/opt/rocm-6.4.1/lib/libamdhip64.so.6\n"
WHEEL_ON_ITS_ROCM = "torch    2.3.0+rocm6.4\n/opt/rocm-6.4.1/lib/libamdhip64.so.6\n"


@pytest.mark.parametrize("text, holds", [(WHEEL_ON_OTHER_ROCM, True), (WHEEL_ON_ITS_ROCM, False)])
def test_compare_two_facts_as_releases(tmp_path: Path, text: str, holds: bool) -> None:
    cond = {"compare": {"left": "rocm_version_wheel", "op": "ne", "right": "rocm_version_path", "as": "release"}}
    assert (_verdict(tmp_path, cond, text) > 0) is holds


@pytest.mark.parametrize("op, holds", [("lt", True), ("ge", False), ("eq", False)])
def test_compare_a_fact_with_a_value_as_versions(tmp_path: Path, op: str, holds: bool) -> None:
    cond = {"compare": {"left": "rocm_version_path", "op": op, "value": "6.10", "as": "version"}}  # 6.4.1 < 6.10
    assert (_verdict(tmp_path, cond, WHEEL_ON_ITS_ROCM) > 0) is holds


@pytest.mark.parametrize("text, holds", [(WHEEL_ON_OTHER_ROCM, True), (WHEEL_ON_ITS_ROCM, False)])
def test_two_rocm_releases_in_one_case(tmp_path: Path, text: str, holds: bool) -> None:
    cond = {"fact": {"name": "rocm_versions", "count_at_least": 2}}
    assert (_verdict(tmp_path, cond, text) > 0) is holds


def test_fact_in_a_list_and_absent(tmp_path: Path) -> None:
    rocminfo = "  Name:                    gfx1103\n"
    assert _verdict(tmp_path, {"fact": {"name": "gfx_arch", "in": ["gfx1103", "gfx1150"]}}, rocminfo) > 0
    assert _verdict(tmp_path, {"fact": {"name": "gfx_arch", "in": ["gfx1100"]}}, rocminfo) == 0
    assert _verdict(tmp_path, {"fact": {"name": "override_arch", "absent": True}}, rocminfo) > 0
    assert _verdict(tmp_path, {"fact": {"name": "gfx_arch", "absent": True}}, rocminfo) == 0


FAULT = "Memory access fault by GPU node-1 (Agent handle: 0x5581ec5a1e30) on address (nil). Reason: Unknown.\n"
COMBINED = {"all_of": [
    {"log": r"Memory access fault by GPU node-\d+"},
    {"any_of": [{"fact": {"name": "override_fits", "equals": "no"}}, {"log": r"on address \(nil\)"}]},
    {"not": {"fact": {"name": "gpu_vendor", "equals": "nvidia"}}},
]}


@pytest.mark.parametrize("text, holds", [
    (FAULT, True),
    (FAULT.replace("(nil)", "0x7f2a40001000") + "HSA_OVERRIDE_GFX_VERSION=11.0.0\n  Marketing Name: AMD Radeon RX 6600\n",
     True),
    (FAULT.replace("(nil)", "0x7f2a40001000"), False),
    (FAULT + "  Device 0: NVIDIA GeForce RTX 3060, compute capability 8.6\n" * 3, False),
])
def test_all_of_any_of_not(tmp_path: Path, text: str, holds: bool) -> None:
    assert (_verdict(tmp_path, COMBINED, text) > 0) is holds


def test_a_combination_quotes_the_lines_of_its_parts(tmp_path: Path) -> None:
    folder = tmp_path / "db"
    _verdict(tmp_path, COMBINED, FAULT)
    result = analyze([Artifact(name="p", text=FAULT, size=len(FAULT))], load(folder), folder)
    probe = next(d for d in result.diagnoses if d.id == "probe")
    assert [e.line for e in probe.evidence] == [1]


def test_a_malformed_combination_is_a_signature_error(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(SIGNATURE | {"conditions": [
        {"id": "c", "description": "d", "strength": 0.5, "all_of": "not a list"}]}))
    with pytest.raises(SignatureError, match="all_of takes a list"):
        load_signature(path)


def test_schema_accepts_the_new_kinds(tmp_path: Path) -> None:
    from triage.match.lint import check_schema

    folder = tmp_path / "db"
    folder.mkdir()
    shutil.copy(data_dir("signatures") / "schema.json", folder)
    body = SIGNATURE | {"id": "probe", "conditions": [{"id": "c", "description": "d", "strength": 0.5} | COMBINED]}
    (folder / "probe.yaml").write_text(yaml.safe_dump(body))
    assert [p for p in check_schema(folder) if "tests" not in p] == []


@pytest.mark.parametrize("case", ["seed-000-blit-kernels-device-libs-missing",
                                  "realworld/miopen-2049-gfx908-hiprtc-naive-conv-limits-not-found-rocm543"])
def test_the_signatures_tried_are_those_an_anchor_of_which_may_hold(case: str) -> None:
    """A case is walked past the signatures of its anchors' lines only: those with an anchor that reads no line and
    the owners of the anchor patterns found, in the database's order; a database without some signatures (the
    ablation's) tries the rest by the same rule."""
    from triage.ingest import read_inputs
    from triage.match import conditions
    from triage.match.engine import candidates
    from triage.parsers import parse

    db = load(data_dir("signatures"))
    artifacts, warnings = read_inputs([str(Path(__file__).resolve().parent.parent / "corpus" / case)])
    parsed = parse(artifacts, warnings)
    anchored = conditions.Lines(parsed, db.prefilters).anchored()

    def may_hold(signatures: list) -> list:
        return [sig for sig in signatures if not sig.anchors_need_lines or not anchored.isdisjoint(sig.anchor_patterns)]

    tried = db.trying(anchored)
    assert tried == may_hold(db.signatures) and len(tried) < len(db.signatures) / 3
    assert {sig.id for sig, _ in candidates(parsed, db)} <= {sig.id for sig in tried}
    gone = {tried[0].id, tried[-1].id}
    smaller = db.without(gone)
    assert smaller.trying(anchored) == may_hold(smaller.signatures) == [sig for sig in tried if sig.id not in gone]


@pytest.mark.parametrize("case", ["seed-000-blit-kernels-device-libs-missing",
                                  "realworld/rocm-legacy-5773-therock-tarball-rocm-path-bitcode-under-lib-llvm"])
def test_signatures_own_groups_read_in_one_pass_hold_the_same(case: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Past a few signatures' own groups the rest are read in one pass of them all (when that pays): every condition
    holds or fails on the same lines, with the same captures, as when each group is read by itself."""
    from triage.ingest import read_inputs
    from triage.match import conditions
    from triage.match.conditions import Lines, evaluate
    from triage.parsers import parse

    folder = Path(__file__).resolve().parent.parent / "corpus" / case
    db = load(data_dir("signatures"))
    artifacts, warnings = read_inputs([str(folder)])
    parsed = parse(artifacts, warnings)

    def verdicts(together: bool) -> tuple[list, int]:
        monkeypatch.setattr(conditions.Lines, "_together_pays", lambda self: together)
        lines = Lines(parsed, db.prefilters)
        out = []
        for sig in db.signatures:
            for cond in sig.conditions:
                hit = evaluate(cond, parsed, lines)
                out.append((sig.id, cond.id, None if hit is None else (hit.factor, hit.evidence, hit.captures)))
        return out, sum(found is not None for found in lines._candidates)

    one_by_one, read_alone = verdicts(False)
    in_one_pass, _ = verdicts(True)
    assert read_alone > conditions.SEPARATE_READS + 1  # the case reads many groups: the one pass is taken
    assert any(hit for *_, hit in one_by_one)
    assert in_one_pass == one_by_one


def test_a_pattern_on_many_program_lines_quotes_the_first_three_and_captures_from_the_first(tmp_path: Path) -> None:
    """A condition whose pattern matches every line of a long runtime log stops reading after three program lines a
    parser claimed: the quoted lines, the captures and the weight are those a full read gives (program lines outrank
    a person's sentence before them, in input order)."""
    calls = [f":3:hip_memory.cpp           :{600 + n:<4}: 2117{n:06d} us: [pid:4242  tid:0x7f01] hipMalloc ( 0x7ffd1000, {n + 1}024 )"
             for n in range(40)]
    text = "\n".join(["I think hipMalloc ( 0x1, 5024 ) is what fails here, because the app crashes right after it", *calls])
    folder = tmp_path / "db"
    _verdict(tmp_path, {"log": r"hipMalloc \( 0x[0-9a-f]+, (?P<alloc_size>\d+) \)"}, text)
    result = analyze([Artifact(name="hip.log", text=text, size=len(text))], load(folder), folder)
    probe = next(d for d in result.diagnoses if d.id == "probe")
    assert [e.line for e in probe.evidence] == [2, 3, 4]
    assert probe.captures.get("alloc_size") == "1024"


def test_a_pattern_on_a_repeated_error_reads_until_three_lines_of_full_weight(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A log that repeats its error on lines no parser claims: the condition quotes what a full read would (the line a
    parser claimed first, though it comes last; then program lines in input order; a person's sentence after them)
    and stops reading once three lines of full weight are found."""
    record = ":1:hip_memory.cpp           :600 : 2117000000 us: [pid:4242  tid:0x7f01] allocation of 9999 bytes failed"
    repeated = [f"worker {n}: allocation of {n + 1}024 bytes failed" for n in range(40)]
    text = "\n".join(["I think the allocation of 512 bytes failed because the card is too small for this model",
                      *repeated, record])
    folder = tmp_path / "db"
    _verdict(tmp_path, {"log": r"allocation of (?P<alloc_size>\d+) bytes failed"}, text)
    searched: list[str] = []
    search = conditions._search
    monkeypatch.setattr(conditions, "_search",
                        lambda pattern, line, *rest: searched.append(line) or search(pattern, line, *rest))
    result = analyze([Artifact(name="app.log", text=text, size=len(text))], load(folder), folder)
    probe = next(d for d in result.diagnoses if d.id == "probe")
    assert [e.line for e in probe.evidence] == [42, 2, 3]
    assert probe.captures.get("alloc_size") == "9999"
    assert searched == [record, text.split("\n")[0], repeated[0], repeated[1]]


def test_what_an_anchor_needs(tmp_path: Path) -> None:
    """A combining anchor is tried only when a line it needs was found by the anchors' pass: one part of an all_of, one
    of each part of an any_of; an anchor that may hold without a line needs none (and is always tried)."""
    from triage.match.database import _needs

    _verdict(tmp_path, COMBINED, FAULT)
    sig = next(s for s in load(tmp_path / "db").signatures if s.id == "probe")
    (combined,) = sig.conditions
    fault_line, either, _ = combined.children
    assert _needs(combined) == (fault_line,)
    assert _needs(either) is None  # the override fact alone may make it hold
    assert _needs(either.children[1]) == (either.children[1],)
    assert sig.anchors_need_lines and sig.anchor_needs == (frozenset({fault_line.scan[1]}),)
    assert fault_line.scan[0] == 0 and either.children[1].scan[0] > 0  # the needed line is read with the anchors


@pytest.mark.parametrize("ready", [True, False])
@pytest.mark.parametrize("case", ["seed-000-blit-kernels-device-libs-missing",
                                  "realworld/rocm-legacy-5773-therock-tarball-rocm-path-bitcode-under-lib-llvm",
                                  "realworld/miopen-2049-gfx908-hiprtc-naive-conv-limits-not-found-rocm543"])  # many
def test_trying_a_signature_reads_only_the_anchors_pass(case: str, ready: bool, monkeypatch: pytest.MonkeyPatch) -> None:
    """A signature none of whose anchors found a line it needs costs the case no pass of its own patterns: its
    anchors' log parts are read in the anchors' pass (a long trace then reads a few small passes, not one of every
    pattern); the rest of a combining anchor is read when its needed line is there. All other groups are read in one
    pass only where Hyperscan reads that pass (``ready``): the Python way would look for every group's literals (a
    forum thread of 150 KB: 150 ms against 20 ms for the groups read one by one)."""
    from triage.ingest import read_inputs
    from triage.match import conditions
    from triage.match.engine import candidates
    from triage.parsers import parse

    db = load(data_dir("signatures"))
    monkeypatch.setattr(db.prefilters.together, "hyperscan_ready", lambda reading=0: ready)
    artifacts, warnings = read_inputs([str(Path(__file__).resolve().parent.parent / "corpus" / case)])
    parsed = parse(artifacts, warnings)
    anchored = conditions.Lines(parsed, db.prefilters).anchored()
    read: list[object] = []
    real_read = conditions.Lines._read
    monkeypatch.setattr(conditions.Lines, "_read", lambda self, scanner, *rest: (read.append(scanner),
                                                                                  real_read(self, scanner, *rest))[1])
    found = candidates(parsed, db)
    tried = [sig for sig in db.signatures if any(need is not None and not anchored.isdisjoint(need)
                                                 for need in sig.anchor_needs)]
    own = {db.prefilters.groups[c.scan[0]] for sig in tried + [sig for sig, _ in found] for top in sig.conditions
           for c in top.walk() if c.kind == "log" and c.scan[0]}
    assert found and read[0] is db.prefilters.groups[0] and len(tried) < len(db.signatures) / 4
    assert set(read[1:]) - {db.prefilters.together} <= own
    # one pass of all the other groups where Hyperscan reads it: for many candidates, or once SEPARATE_READS groups
    # were read one by one
    many = sum(sig.log_support for sig, _ in found) > conditions.SEPARATE_READS
    together = read.index(db.prefilters.together) if db.prefilters.together in read else None
    if not ready:
        assert together is None
    else:
        assert (together is not None) if many else (together is None or together - 1 >= conditions.SEPARATE_READS)
