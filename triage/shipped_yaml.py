"""The shipped YAML files (signatures, tables, known frames) already parsed, so that a first run on a new machine
does not parse them with PyYAML (about a third of a cold triage).

``parsed_yaml.json`` maps the SHA-256 of a file's text to what the file parses to, as JSON text. A file is looked up
by its text, wherever it lies: one the user changed is not in the table and is parsed as usual, so the table can
never give stale data. Only files whose parse JSON keeps exactly (no dates, no keys that are not strings) are in it.

    python3 -m triage.shipped_yaml      # rebuild the table after changing a shipped YAML file
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any

from triage.digest import sha256

TABLE = Path(__file__).with_name("parsed_yaml.json")
_FOLDERS = ("signatures", "reports")


def digest(text: str) -> str:
    return sha256(text.encode("utf-8")).hexdigest()


@functools.cache
def _table() -> Mapping[str, str]:
    """The table, read once a process and never changed (each lookup parses its own copy of a file's data)."""
    import json  # here, not at import: a warm single triage needs no JSON

    try:
        files = json.loads(TABLE.read_text(encoding="utf-8")).get("files", {})
    except (OSError, ValueError, AttributeError):
        return MappingProxyType({})
    return MappingProxyType(files if isinstance(files, dict) else {})


def shipped(text: str) -> tuple[bool, Any]:
    """(True, what ``text`` parses to) when it is a shipped file's text; (False, None) otherwise."""
    import json  # here, not at import: a warm single triage needs no JSON

    found = _table().get(digest(text))
    return (False, None) if found is None else (True, json.loads(found))


def build(root: Path) -> dict[str, str]:
    """The table for every YAML file under ``root``'s shipped folders whose parse JSON keeps exactly."""
    import json  # here, not at import: a warm single triage needs no JSON

    import yaml  # noqa: I001 - a tool's import, as json's above

    files: dict[str, str] = {}
    for folder in _FOLDERS:
        for path in sorted((root / folder).rglob("*.yaml")):
            text = path.read_text(encoding="utf-8")
            data = yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
            try:
                written = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
            except (TypeError, ValueError):
                continue
            if json.loads(written) == data:
                files[digest(text)] = written
    return dict(sorted(files.items()))


def main() -> None:
    import json  # here, not at import: a warm single triage needs no JSON

    root = Path(__file__).resolve().parent.parent
    files = build(root)
    TABLE.write_text(json.dumps({"files": files}, ensure_ascii=False, indent=0) + "\n", encoding="utf-8")
    print(f"{len(files)} parsed YAML files written to {TABLE}")


if __name__ == "__main__":
    main()
