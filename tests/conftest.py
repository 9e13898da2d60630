"""Shared test helpers: the repository layout and the optional ../shared data."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Iterator

import pytest

from triage.model import Artifact, Case

if TYPE_CHECKING:
    from tests import cdp

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "corpus"
FIXTURES = Path(__file__).resolve().parent / "fixtures"
SHARED = Path(os.environ.get("TRIAGE_SHARED", ROOT.parent / "shared"))


def shared(*parts: str) -> Path:
    """A path under ../shared, or skip the test: a user's clone has no ../shared."""
    path = SHARED.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent: the seed reports and real data live beside the repository, not in it")
    return path


def artifact(text: str, name: str = "paste.txt") -> Artifact:
    return Artifact(name=name, text=text, size=len(text))


def derived_case(text: str, name: str = "log.txt") -> Case:
    """A pasted text parsed and its facts derived with the shipped tables, as an analysis does before matching."""
    from triage.derive import derive
    from triage.derive.tables import load_tables
    from triage.parsers import parse

    case = parse([artifact(text, name)])
    derive(case, load_tables())
    return case


def fact_values(case: Case, name: str) -> list[str]:
    """The values of one fact, in the order they were found."""
    return [f.value for f in case.facts.get(name, [])]


@pytest.fixture(autouse=True, scope="session")
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Tests (and the commands they start) cache into a temporary folder, not the user's."""
    os.environ["TRIAGE_CACHE"] = str(tmp_path_factory.mktemp("cache"))
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))  # no user's learned frames


@pytest.fixture(scope="module")
def browser() -> Iterator["cdp.Browser"]:
    """One headless Chromium per test module (tests/cdp.py); the modules skip when it is absent."""
    from tests import cdp

    b = cdp.Browser()
    try:
        yield b
    finally:
        b.close()
