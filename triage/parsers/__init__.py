"""Parse artifacts into one Case: each format's parser finds its own lines anywhere in the input.

A parser that fails on some input becomes a warning in the report; the others still run.
Binary artifacts (``Artifact.data``) are for the binary parsers; one that no parser claims
(with ``case.claim(Where(name, 0), kind)``) is reported as unread.

Parsing has a time budget inside the analysis's (triage/deadline.py): ``ARTIFACT_BUDGET_S``
per artifact, checked between parsers and in the needle passes, in whatever thread the
analysis runs. The report says what was not parsed.
"""

from __future__ import annotations

import importlib
import time

from triage import deadline
from triage.errors import BadInput, internal
from triage.model import Artifact, Case, Where
from triage.parsers import (accounts, amdgpu, amdlog, aotriton, appinfo, backtrace, buildtargets, cmake, cpu, elflib, envfacts, exitstatus, fatbin,
                            fault, hang, hiperror, hserr, kernel, ldd, libloads, lines, listing, manifest, mpistack, offload,
                            profstack, sanitizer, selfstacks, stackwalk, strace, timestamps, toolchain, toolstacks, vendor, versions,
                            werfiles, wincrash, windbg, windows, windriver, wrappers)
from triage.parsers.hardwrap import Rejoined, rejoin, renumber, spread


class _BinaryOnly:
    """A parser of binary files only (it returns at once on an artifact without bytes), imported the first time an
    artifact has some: a triage of text does not load it."""

    def __init__(self, name: str) -> None:
        self.__name__ = f"{__name__}.{name}"

    def parse(self, artifact: Artifact, case: Case) -> None:
        if artifact.data:
            importlib.import_module(self.__name__).parse(artifact, case)


# not bound to the modules' own names: ``from triage.parsers import minidump`` still gives the module
_MINIDUMP = _BinaryOnly("minidump")
_ELFCORE = _BinaryOnly("elfcore")

# envfacts runs last: it reads which lines the other parsers claimed as machine output; sanitizer marks one of the
# stacks backtrace read as the crashing one.
LINE_PARSERS = (amdlog, backtrace, toolstacks, mpistack, profstack, stackwalk, selfstacks, sanitizer, kernel, amdgpu, windows, windbg, wincrash, werfiles, hserr, hang, exitstatus, hiperror, strace, offload, listing, toolchain, ldd, libloads,
                _MINIDUMP, _ELFCORE, elflib, fatbin, manifest, appinfo, timestamps, versions, vendor, buildtargets, windriver, cpu,
                aotriton, cmake, accounts, envfacts)
# fatbin.finish reads the GPU and the runtime kind that envfacts.finish settles.
FINISHERS = (amdlog.finish, envfacts.finish, fatbin.finish, fault.merge, windriver.finish)

# Seconds one artifact may take in all parsers; the parsers not yet run on it are skipped.
ARTIFACT_BUDGET_S = 20.0


def _name(parser: object) -> str:
    return parser.__name__.rsplit(".", 1)[-1]  # type: ignore[attr-defined]


def _parse_one(artifact: Artifact, original: Artifact, case: Case) -> None:
    """Run every line parser on the artifact within its share of the budget (the timestamps parser
    on the text as given: a collector's prefix is often the clock)."""
    started = time.monotonic()
    index = 0
    try:
        with deadline.narrowed(ARTIFACT_BUDGET_S):
            lines.scan(artifact)  # the passes over the text for every parser's needles
            for index, parser in enumerate(LINE_PARSERS):
                deadline.check("parsing")
                try:
                    parser.parse(original if parser is timestamps else artifact, case)
                except deadline.OutOfTime:
                    raise
                except BadInput as err:
                    case.warnings.append(f"{artifact.name}: the {_name(parser)} parser could not read it ({err})")
                except Exception as err:  # a bug: reported, counted by the fuzz tool, never a failed triage
                    case.warnings.append(f"{artifact.name}: " + internal(f"the {_name(parser)} parser", err))
    except deadline.OutOfTime:
        stopped = [_name(p) for p in LINE_PARSERS[index:]]
        case.warnings.append(
            f"{artifact.name}: parsing stopped after {time.monotonic() - started:.0f} s, over the time budget "
            f"({ARTIFACT_BUDGET_S:.0f} s a file, {deadline.TOTAL_S:.0f} s in all); not finished: {', '.join(stopped)}"
        )


def _read(artifact: Artifact) -> tuple[Artifact, Artifact, Rejoined | None, int | None]:
    """What the parsers read of an artifact (a hard-wrapped paste's records joined, parsers/hardwrap.py; collectors'
    prefixes cut, parsers/wrappers.py), what the timestamps parser reads, the joining, and the journal line."""
    rejoined = rejoin(artifact)
    given = rejoined.packed if rejoined else artifact
    plain, journal = wrappers.unwrap(given)
    return plain, given, rejoined, journal


def read_past_wrappers(artifacts: list[Artifact]) -> list[Artifact]:
    """The artifacts as programs printed them, log collectors' line prefixes cut and a hard-wrapped paste's
    records joined (each on the line it started on): what parsers and signatures read."""
    out = []
    for artifact in artifacts:
        plain, _, rejoined, _ = _read(artifact)
        out.append(spread(rejoined, plain) if rejoined else plain)
    return out


def parse(artifacts: list[Artifact], warnings: list[str] | None = None) -> Case:
    read = [_read(a) for a in artifacts]
    plain = [a for a, _, _, _ in read]
    case = Case(artifacts=plain, warnings=list(warnings or []))
    for _, given, _, journal in read:
        if journal is not None:  # journald's or syslog's own prefix: the log is a Linux system's
            case.add_fact("os", "linux", Where(given.name, journal + 1), given.lines[journal].strip(), 10)
    with deadline.within() as budget:
        for number, (artifact, original) in enumerate(zip(plain, [given for _, given, _, _ in read])):
            if budget.left() <= 0:
                case.warnings.append(
                    f"{artifact.name} and {len(artifacts) - number - 1} more files: not parsed, the "
                    f"{budget.seconds:.0f} s time budget was spent on the files before them"
                )
                break
            _parse_one(artifact, original, case)
        for artifact in artifacts:
            if artifact.data is not None and case.kind_of(Where(artifact.name, 0)) is None:
                case.warnings.append(
                    f"{artifact.name}: binary file ({artifact.size} bytes) of a kind this version does not read; "
                    "send text logs, stacks and listings, or a minidump or core file"
                )
        for finish in FINISHERS:
            try:
                deadline.check("parsing")
                finish(case)
            except deadline.OutOfTime:
                case.warnings.append(budget.warning("parsing", f"{finish.__module__}.{finish.__name__}"))
            except Exception as err:
                case.warnings.append(internal(f"{finish.__module__}.{finish.__name__}", err))
    for index, (artifact, _, rejoined, _) in enumerate(read):
        if rejoined:  # what the parsers read of a wrapped paste, back on the lines the user sent
            renumber(case, rejoined)
            case.artifacts[index] = spread(rejoined, artifact)
    return case
