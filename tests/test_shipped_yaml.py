"""The parsed shipped YAML files (triage/parsed_yaml.json) that spare a first run PyYAML: current, exact, and never
used for a file whose text differs from the shipped one."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from tests.conftest import ROOT
from triage import shipped_yaml
from triage.resources import load_yaml


def test_the_table_is_current_and_holds_every_shipped_file() -> None:
    table = json.loads(shipped_yaml.TABLE.read_text(encoding="utf-8"))["files"]
    assert table == shipped_yaml.build(ROOT), "stale table: run python3 -m triage.shipped_yaml"
    assert len(table) == len(list((ROOT / "signatures").rglob("*.yaml"))) + len(list((ROOT / "reports").rglob("*.yaml")))


def test_a_shipped_file_reads_as_pyyaml_parses_it_and_each_read_is_its_own_copy() -> None:
    path = ROOT / "signatures" / "tables" / "gpus.yaml"
    text = path.read_text(encoding="utf-8")
    known, data = shipped_yaml.shipped(text)
    assert known and data == yaml.safe_load(text)
    data.clear()
    assert shipped_yaml.shipped(text)[1] == yaml.safe_load(text)


def test_a_changed_file_is_parsed_from_its_own_text(tmp_path: Path) -> None:
    text = (ROOT / "signatures" / "_database.yaml").read_text(encoding="utf-8")
    changed = tmp_path / "_database.yaml"
    changed.write_text(text + "\nextra_setting: 7\n", encoding="utf-8")
    assert shipped_yaml.shipped(changed.read_text(encoding="utf-8")) == (False, None)
    assert load_yaml(changed, keep=False)["extra_setting"] == 7


def test_a_file_json_cannot_keep_exactly_is_left_to_pyyaml(tmp_path: Path) -> None:
    """Dates and keys that are not strings change in JSON: such a file is not in the table."""
    for name, text in (("dated.yaml", "released: 2024-05-01\n"), ("numbered.yaml", "1: one\n")):
        (tmp_path / "signatures").mkdir(exist_ok=True)
        (tmp_path / "signatures" / name).write_text(text, encoding="utf-8")
    (tmp_path / "signatures" / "plain.yaml").write_text("a: [1, 2.5, yes, null]\n", encoding="utf-8")
    built = shipped_yaml.build(tmp_path)
    assert list(built.values()) == ['{"a":[1,2.5,true,null]}']
