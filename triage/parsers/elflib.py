"""ELF libraries and executables sent with a report: kept for the symbolizer, not parsed here.

A bundle that carries ``libamdhip64.so.7`` lets ``triage/symbolize/`` name that library's
frames from its own symbol table and convert kernel offsets with its program headers; this
parser only marks such files as read, so that they are not reported as unknown binaries.
Core files (``ET_CORE``) belong to the ``elfcore`` parser.
"""

from __future__ import annotations

from triage.model import Artifact, Case, Where
from triage.elf import elf_type


def parse(artifact: Artifact, case: Case) -> None:
    if artifact.data is not None and elf_type(artifact.data[:64]) in ("ET_DYN", "ET_EXEC"):
        case.claim(Where(artifact.name, 0), "elf-library")
