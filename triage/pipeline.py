"""The whole pipeline for one case: ingest -> parse -> symbolize -> derive -> match."""

from __future__ import annotations

from dataclasses import field
from pathlib import Path
from typing import BinaryIO

from triage import __version__, deadline
from triage.derive import derive, load_tables
from triage.ingest import read_inputs
from triage.lazy import compiled_re, dataclass
from triage.match import Database, load, match
from triage.match.similar import Similar, features, load_index, nearest
from triage.model import Artifact, Case, Diagnosis
from triage.parsers import parse
from triage.resources import data_dir
from triage.symbolize import symbolize
from triage.symbolize.known_frames import stores

SCHEMA_VERSION = "1"


@dataclass
class Result:
    """One case's triage: the parsed case, its diagnoses best first, and the versions that made them."""

    case: Case
    diagnoses: list[Diagnosis]
    versions: dict[str, str] = field(default_factory=dict)
    similar: list[Similar] = field(default_factory=list)  # labelled real cases that look alike; not the diagnosis

    @property
    def top(self) -> Diagnosis:
        return self.diagnoses[0]


def analyze(artifacts: list[Artifact], db: Database, folder: Path, warnings: list[str] | None = None,
            symbols: Path | None = None) -> Result:
    """Parse, symbolize and match artifacts that are already read; ``symbols`` is a folder of ELF files.
    Every stage shares the analysis's time budget (triage/deadline.py)."""
    with deadline.within():
        return finish(parse(artifacts, (warnings or []) + db.problems), db, folder, symbols)


def finish(case: Case, db: Database, folder: Path, symbols: Path | None = None, similar: bool = True) -> Result:
    """Symbolize and match a parsed case (a corpus run keeps parsed cases to re-match them); ``similar``: also find
    the labelled cases most like it, which only a report shows (a corpus table's row has none)."""
    with deadline.within():
        return _finish(case, db, folder, symbols, similar)


def _finish(case: Case, db: Database, folder: Path, symbols: Path | None, similar: bool) -> Result:
    symbolize(case, stores(folder / "frames"), symbols)
    try:
        deadline.check("deriving facts")
        derive(case, load_tables(folder))
    except deadline.OutOfTime:
        case.warnings.append(deadline.current().warning("deriving facts", "every derived fact"))  # type: ignore[union-attr]
    diagnoses = match(case, db)
    db.patterns.save()  # the regexes this case compiled, for the next run (nothing to do once all were)
    if (kept := compiled_re()) is not None:
        kept.save()
    versions = {"tool": __version__, "signatures": db.version, "schema": SCHEMA_VERSION}
    alike = nearest(features(case, diagnoses), load_index(folder)) if similar else []
    return Result(case=case, diagnoses=diagnoses, versions=versions, similar=alike)


def triage(paths: list[str], stdin: BinaryIO | None = None, signatures: Path | None = None,
           symbols: Path | None = None) -> Result:
    """Triage the given inputs (``-`` is stdin). Raises IngestError when an input cannot be read."""
    folder = signatures or data_dir("signatures")
    with deadline.within():
        artifacts, warnings = read_inputs(paths, stdin)
        return analyze(artifacts, load(folder), folder, warnings, symbols)
