"""The records that flow through the pipeline: ingest -> parse -> symbolize -> match -> report.

Every stage reads and writes these plain dataclasses; nothing else crosses a stage boundary.
Every record that came from user input keeps its provenance (artifact name + 1-based line)
so a report can quote it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import field
from typing import Any, Callable, Iterable

from triage.lazy import dataclass


@dataclass
class Artifact:
    """One thing the user sent: a file, an archive member or a paste, decoded to text."""

    name: str
    text: str
    size: int
    lines: list[str] = field(default_factory=list)
    data: bytes | None = field(default=None, repr=False)  # the raw bytes of a binary file (minidump, core, ELF)
    # the lines as given, when parsers read them past collectors' prefixes (parsers/wrappers.py)
    given: list[str] | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        if not self.lines and self.text:
            self.lines = self.text.split("\n")
            if len(self.lines) > 1 and self.lines[-1] == "":  # the newline that ends the last line
                self.lines.pop()


@dataclass(frozen=True)
class Where:
    """Provenance of a record: the artifact and its 1-based line number."""

    artifact: str
    line: int


@dataclass
class Fact:
    """A named environment fact (gfx arch, HIP version, OS, ...) and where it was read.

    ``score`` ranks competing candidates for the same name: a value read from the failing
    run's runtime log outranks one read from prose.
    """

    name: str
    value: str
    where: Where
    text: str
    score: int = 10


@dataclass
class LogEvent:
    """One AMD_LOG_LEVEL record: ``:3:hip_context.cpp :62 : ... message``."""

    level: int
    source: str
    source_line: int
    message: str
    where: Where
    timestamp_us: int | None = None
    pid: int | None = None
    tid: str | None = None
    run: int = 0


@dataclass
class Frame:
    """One stack frame in any of the forms users paste (gdb, coredumpctl, Windows, WinDbg)."""

    index: int
    where: Where
    text: str
    address: int | None = None
    module: str | None = None
    offset: int | None = None
    symbol: str | None = None
    symbol_offset: int | None = None
    symbol_source: str | None = None
    symbol_note: str | None = None
    file: str | None = None
    file_line: int | None = None


@dataclass
class Stack:
    """A thread's frames, innermost first, as one contiguous block of the input."""

    frames: list[Frame]
    where: Where
    form: str
    thread: str | None = None
    crashing: bool = False  # set by parsers that know it (minidump exception thread, core's signalled thread)


@dataclass
class KernelFault:
    """A kernel log ``segfault at ADDR ip IP sp SP error N in LIB[...]`` line."""

    where: Where
    text: str
    comm: str
    pid: int | None
    address: int | None  # None for a general-protection fault, whose line names no address
    ip: int | None
    error: int | None
    module: str | None
    file_offset: int | None = None
    vm_start: int | None = None
    vm_size: int | None = None


@dataclass
class Fault:
    """The crash itself, merged from the best sources the case has."""

    kind: str  # "signal" | "exception"
    where: Where
    signal: str | None = None
    si_code: str | None = None
    code: str | None = None
    code_name: str | None = None
    address: int | None = None
    access: str | None = None
    module: str | None = None
    offset: int | None = None
    offset_note: str | None = None
    symbol: str | None = None
    symbol_source: str | None = None
    instruction: str | None = None
    evidence: list[Where] = field(default_factory=list)


@dataclass
class OffloadTargets:
    """Offload-bundle target counts, as ``grep -a ... | uniq -c`` or an inspector prints them."""

    where: Where
    targets: dict[str, int]
    bundles: int | None = None
    # Per bundle, when read from the binary itself: its file offset and target ids.
    sets: list[tuple[int, list[str]]] = field(default_factory=list)
    binary: str | None = None  # the file the targets were read or counted from


@dataclass
class Finding:
    """What inspecting a binary or a runtime folder found, for the report (``kind``:
    ``offload-bundles`` or ``component``)."""

    where: Where
    kind: str
    summary: str
    details: list[str] = field(default_factory=list)


LIST_FACTS = frozenset({"gfx_archs", "collect_missing", "rocm_versions", "ldd_library", "build_targets"})


FACT_REPEATS = 64  # candidates kept for one fact name, value and score


@dataclass
class Case:
    """Everything parsed from one user's submission."""

    artifacts: list[Artifact] = field(default_factory=list)
    facts: dict[str, list[Fact]] = field(default_factory=dict)
    events: list[LogEvent] = field(default_factory=list)
    failing_run: int | None = None
    stacks: list[Stack] = field(default_factory=list)
    kernel_faults: list[KernelFault] = field(default_factory=list)
    fault: Fault | None = None
    offload: list[OffloadTargets] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    registers: dict[str, int] = field(default_factory=dict)
    instructions: list[tuple[Where, str]] = field(default_factory=list)
    files_listed: list[tuple[Where, str]] = field(default_factory=list)
    missing_files: list[tuple[Where, str]] = field(default_factory=list)
    claims: dict[str, dict[int, str]] = field(default_factory=dict)  # artifact -> line -> kind of machine output
    inputs: set[str] = field(default_factory=set)
    warnings: list[str] = field(default_factory=list)
    fact_repeats: dict[tuple[str, str, int], int] = field(default_factory=dict, repr=False)  # see add_fact

    def add_fact(self, name: str, value: str, where: Where, text: str, score: int = 10) -> None:
        """Record a candidate; past FACT_REPEATS of one name, value and score the rest are dropped: a later
        one is never the best (``fact``), and a log that repeats a line a million times costs no memory."""
        seen = self.fact_repeats.get((name, value, score), 0)
        if seen >= FACT_REPEATS:
            return
        self.fact_repeats[(name, value, score)] = seen + 1
        self.facts.setdefault(name, []).append(Fact(name, value, where, text, score))

    def fact(self, name: str) -> Fact | None:
        """The best candidate for a fact: highest score, then earliest in the input."""
        candidates = self.facts.get(name)
        if not candidates:
            return None
        position = {a.name: i for i, a in enumerate(self.artifacts)}
        return max(candidates, key=lambda f: (f.score, -position.get(f.where.artifact, len(position)), -f.where.line))

    def value(self, name: str) -> str | None:
        best = self.fact(name)
        return best.value if best else None

    def flat_facts(self) -> dict[str, Any]:
        """Fact name -> best value; names that hold a set of values (``gfx_archs``) -> list."""
        out: dict[str, Any] = {}
        for name, candidates in sorted(self.facts.items()):
            if name in LIST_FACTS:
                out[name] = list(dict.fromkeys(f.value for f in candidates))
            elif best := self.fact(name):
                out[name] = best.value
        return out

    def claim(self, where: Where, kind: str, input_kind: str | None = None) -> None:
        """Mark a line as machine output of a known format (used to weigh evidence); the first claim stands."""
        self.claims.setdefault(where.artifact, {}).setdefault(where.line, kind)
        if input_kind:
            self.inputs.add(input_kind)

    def claim_lines(self, artifact: str, numbers: Iterable[int], kind: str) -> None:
        """``claim`` for many lines of one artifact at once (a runtime log claims most of its lines)."""
        claimed = self.claims.setdefault(artifact, {})
        if claimed:
            for number in numbers:
                claimed.setdefault(number, kind)
        else:
            claimed.update(dict.fromkeys(numbers, kind))

    def kind_of(self, where: Where) -> str | None:
        """The kind of machine output a parser claimed the line to be, if any."""
        return self.claims.get(where.artifact, {}).get(where.line)

    def line(self, where: Where) -> str:
        """The text of a line as the parsers read it ("" for a line the case does not have)."""
        for artifact in self.artifacts:
            if artifact.name == where.artifact:
                return artifact.lines[where.line - 1] if 0 < where.line <= len(artifact.lines) else ""
        return ""


@dataclass
class Evidence:
    """A quoted input line that satisfied a signature condition."""

    artifact: str
    line: int
    text: str
    condition: str


@dataclass
class Workaround:
    """One way around the cause, with its commands and whether (and by whom) it is known to work."""
    title: str
    commands: str
    verified: bool
    risk: str = ""
    note: str = ""
    verified_by: str = ""  # who found that it works, and where (a public link): shown with a verified one
    verified_link: str = ""


@dataclass
class Diagnosis:
    """A candidate answer. Its texts may be pending (``Diagnosis.pending``): filled in when first read."""

    id: str
    klass: str
    title: str
    confidence: float  # how likely it is right, fitted on labelled cases (match/confidence.py)
    root_cause: str
    workarounds: list[Workaround] = field(default_factory=list)
    fix: str = field(default_factory=str)  # no class attribute, so that a pending fix reaches __getattr__
    evidence: list[Evidence] = field(default_factory=list)
    matched: list[str] = field(default_factory=list)
    against: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    ask_for: list[str] = field(default_factory=list)
    references: list[str] = field(default_factory=list)
    status: str = "stable"
    captures: dict[str, str] = field(default_factory=dict)
    score: float = 0.0  # the hand-set evidence score: ranks candidates, and decides whether any is sure enough

    @classmethod
    def pending(cls, texts: dict[str, Callable[[], Any]], **known: Any) -> Diagnosis:
        """A diagnosis whose fields in ``texts`` are made by their function when first read.

        Matching ranks every candidate, but most of them are never shown: their texts (templates
        filled with the case's facts) are rendered only if a report or a template reads them.
        """
        for f in dataclasses.fields(cls):  # the other fields as __init__ would set them
            if f.name not in known and f.name not in texts:
                known[f.name] = f.default_factory() if f.default is dataclasses.MISSING else f.default
        diagnosis = cls.__new__(cls)
        diagnosis.__dict__.update(known, _pending=dict(texts))
        return diagnosis

    def __getattr__(self, name: str) -> Any:
        """Only called for a field not set yet: a pending text, made now and kept."""
        pending = self.__dict__.get("_pending")
        if not pending or name not in pending:
            raise AttributeError(name)
        value = self.__dict__[name] = pending.pop(name)()
        if not pending:
            del self.__dict__["_pending"]
        return value

    def __getstate__(self) -> dict[str, Any]:
        """Every text made (a pending one is a function, which does not pickle)."""
        for name in list(self.__dict__.get("_pending", ())):
            getattr(self, name)
        return self.__dict__


def to_plain(obj: Any) -> Any:
    """Dataclasses to JSON-ready dicts (``klass`` is spelled ``class`` outside Python)."""
    if dataclasses.is_dataclass(obj):
        out = {}
        for f in dataclasses.fields(obj):
            key = "class" if f.name == "klass" else f.name
            out[key] = to_plain(getattr(obj, f.name))
        return out
    if isinstance(obj, dict):
        return {str(k): to_plain(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_plain(v) for v in obj]
    return obj
