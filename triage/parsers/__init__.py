"""Parse artifacts into one Case: each format's parser finds its own lines anywhere in the input.

A parser that fails on some input becomes a warning in the report; the others still run.
Binary artifacts (``Artifact.data``) are for the binary parsers; one that no parser claims
(with ``case.claim(Where(name, 0), kind)``) is reported as unread.
"""

from __future__ import annotations

from triage.model import Artifact, Case, Where
from triage.parsers import amdlog, backtrace, elfcore, envfacts, exitstatus, fault, kernel, listing, minidump, offload, strace, windows

# envfacts runs last: it reads which lines the other parsers claimed as machine output.
LINE_PARSERS = (amdlog, backtrace, kernel, windows, exitstatus, strace, offload, listing, minidump, elfcore, envfacts)
FINISHERS = (amdlog.finish, envfacts.finish, fault.merge)


def parse(artifacts: list[Artifact], warnings: list[str] | None = None) -> Case:
    case = Case(artifacts=artifacts, warnings=list(warnings or []))
    for artifact in artifacts:
        for parser in LINE_PARSERS:
            try:
                parser.parse(artifact, case)
            except Exception as err:  # a bad input must not stop the triage
                name = parser.__name__.rsplit(".", 1)[-1]
                case.warnings.append(
                    f"{artifact.name}: the {name} parser failed ({type(err).__name__}: {err}); "
                    "the rest of the input was still read"
                )
    for artifact in artifacts:
        if artifact.data is not None and Where(artifact.name, 0) not in case.line_kinds:
            case.warnings.append(
                f"{artifact.name}: binary file ({artifact.size} bytes) of a kind this version does not read; "
                "send text logs, stacks and listings, or a minidump or core file"
            )
    for finish in FINISHERS:
        try:
            finish(case)
        except Exception as err:
            case.warnings.append(f"{finish.__module__}.{finish.__name__} failed ({type(err).__name__}: {err})")
    return case
