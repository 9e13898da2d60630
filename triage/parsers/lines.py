"""How long a line the line parsers read, and which lines they need to read at all.

Stack frames, environment lines, strace calls and the like are short. A longer line is a
dump of data, not one of those records, and some of their regexes would cost time
quadratic in its length, so the line parsers pass over it (the runtime-log and kernel-log
parsers, whose patterns are anchored, still read it).

Most lines of a real log concern no given parser, so each parser declares ``Needles``: regexes
one of which every line it acts on holds. The needles of all parsers are found in one pass
over each artifact (triage/scan/, Hyperscan where installed) the first time a parser asks,
and each parser then reads only its lines, in order and with their numbers, so blocks of
consecutive lines stay as they were.
"""

from __future__ import annotations

import os
import re
import threading
from collections.abc import Iterator, Sequence

from triage import deadline
from triage.digest import sha256
from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.resources import cache_dir, read_cached, write_cached
from triage.scan.scanner import LineScanner, build_key

MAX_LINE = 4096


def readable(text: str) -> bool:
    return len(text) <= MAX_LINE


_WORD = lazy(r"[A-Za-z][a-z']+")
_STOPWORDS = frozenset(
    "a an and are as at be but by for from has have i in is it its my no not of on or so that the this to "
    "was were which with without we you instead because when then also only still tried".split()
)
# (Where two parts could share the same characters, as \W* and [\w.]+ share dots, or [\d:.]+ and \S* digits, the
# line is split between them one way only: trying every split, a line of 4,000 dots or a clock of 4,000 digits took
# 0.16-0.35 s to fail.)
# The shape of a program's line, whatever its words: a clock, a logger's or a compiler's prefix, the kernel's. A line
# of this shape is a program's even where its message is a sentence in the first person.
_PROGRAM_LINE = lazy(
    r"^(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.]+:"  # Python's logging, as rocm-smi prints it
    # Julia's logging frames each message: "┌ Warning: ...", "│ ...", "└ @ AMDGPU ~/.julia/.../AMDGPU.jl:123"
    r"|^\s*[\u250c\u2502\u2514] "
    # the kernel's own lines, whatever their words: dmesg's clock, journald's "kernel:", the driver's prefix (and the
    # prefix Mesa's drivers put before theirs: radeonsi's "amdgpu: ", radv's "radv/amdgpu: ")
    r"|^\s*\[\s*\d+\.\d+\]\s|^(?:\w{3}\s+\d{1,2}\s+[\d:]{8}|\d{4}-\d\d-\d\dT[\d:.]\S*+)\s+\S+\s+kernel:\s"
    r"|^\s*(?:\w+/)?amdgpu:\s|\bamdgpu [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.\d:\s|^\s*\[drm(?::\w+)?\]"
    r"|^\W{0,3}\[(?:ERROR|WARN(?:ING)?|INFO|DEBUG|FATAL|CRITICAL)\]"  # a program's bracketed log level
    # a clock: a date and time anywhere (loggers put it first, some after the module), or a time opening the line
    # ("[Tue Sep 10 09:37:12 2024]", "12:00:01,123 INFO ..."), or llama.cpp's "0.00.906.796 W " since start
    r"|\b\d{4}-\d\d-\d\d[ T_]\d\d:\d\d:\d\d|^\W{0,3}(?:[A-Z][a-z]{2},? ){0,2}\d{0,2} ?\d\d:\d\d:\d\d\b"
    r"|(?:^|\s)\d+\.\d\d\.\d{3}\.\d{3} [DIWE] "
    r"|^\s*[IWEF]\d{4} \d\d:\d\d:\d\d"  # glog (TensorFlow, Paddle, XLA): "W0219 17:50:59.087286 3972 init.cc:181]"
    r"|(?<![\w-])[\w-]+\.(?:cc|cpp|cxx|c|h|hpp|py|go|rs|cu|hip|java):\d+\]"  # a logger's source place: "[core.py:1202]"
    r"|\b(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d\b"  # vLLM's "ERROR 07-02 07:48:27 [...]"
    r"|^:\d:[\w.-]+\s*:\s*\d+\s*:"  # the ROCm runtime's AMD_LOG_LEVEL lines
    r"|^time=\S+ level=[A-Za-z]+ "  # logfmt (Go's slog, ollama)
    r"|^[\w.-]+-\d+\s+\| "  # docker compose's service prefix: "vllm-1  | "
    # a compiler's diagnostic at a source place: "<stdin>:464:5: error: ...", "main.hip:12:3: warning: ..."
    r"|^\s*\S+?:\d+(?::\d+)?:\s*(?:fatal error|error|warning|note|remark)\b"
    r"|\bat \S+ line \d+(?:, <\w*> (?:line|chunk) \d+)?\.\s*$"  # perl's die and warn: '... at ./hipconfig line 143.'
    r"|^\s*'[^'\n]+' is not recognized as an internal or external command"  # Windows cmd.exe: no such program
    # Python's traceback between two exceptions, and the code lines it quotes
    r"|^\s*(?:During handling of the above exception, another|The above exception was the direct cause of the)"
    r"|^\s+raise [\w.]+\("
)
# What a program's line holds, also as a sentence: a program's prefix or a name or value a person seldom types out.
# A person's sentence in the first person that quotes one of these stays a person's (``I get hipErrorNoBinaryForGpu
# when ...``).
_MACHINE_MARK = lazy(
    r"^\s*(?!(?i:edit|update|upd|ps)\b)[\w.+\[\]-]+:\s"  # a program's prefix; a forum's "Edit:" is a person's
    r"|^\W*+(?:(?<=\. )|\w[\w.]*+ )(?:error|warning)\s*:|\b(?:hip|hsa|cuda)Error[A-Z]\w*|HSA_STATUS_\w+"
    r"|\b(?:RSMI|AMDSMI)_STATUS_[A-Z]\w*"  # ROCm SMI's and AMD SMI's status names
    r"|[/\\][\w.-]+[/\\]|0x[0-9a-fA-F]{4,}|=>|\b[A-Z_]{4,}="
    # a C condition as an assertion or clr's guarantee prints it: the check, && and its quoted message
    r"|\)\s*&&\s*\(\s*\""
    # Windows' loader speaks in sentences: "The procedure entry point X could not be located in the dynamic link library"
    r"|The code execution cannot (?:proceed|continue) because|The procedure entry point|\bdynamic link library\b"
    r"|The specified (?:module|procedure) could not be found|\[WinError \d+\]|\(0x0*7[EF]\)"
    # runtime messages worded as sentences (hipGetErrorString texts and their wrappers' prefixes)
    r"|HIP out of memory|no ROCm-capable device|There is no device can be used|\bHIP Error \d+|Exception during processing"
    r"|^DKMS (?:\(dkms-[\d.]+\) )?make\.log for "  # the head of a DKMS build log ("... for amdgpu/6.8.5 for kernel X")
    r"|\bNCCL (?:WARN|INFO|TRACE|ABORT)\b"  # NCCL's and RCCL's debug lines ("host:pid:tid [1] enqueue.cc:2119 NCCL WARN ...")
    r"|has detected a driver timeout|an illegal memory access was encountered|the launch timed out and was terminated"
    # Windows' TDR notice (Event 4101 and the notification's title): "Display driver amdkmdag stopped responding and has
    # successfully recovered", "Display driver stopped responding and has recovered"
    r"|\bDisplay driver (?:\S+ )?stopped responding and has (?:successfully )?recovered"
    # PyTorch's notes under a device error, and rocminfo's under a missing group
    r"|kernel errors might be asynchronously reported|\bCompile with .TORCH_USE_(?:HIP|CUDA)_DSA"
    r"|the default DRM access group"
    r"|\brequires [^,\n]{1,80}, but you have "  # pip's dependency resolver
    r"|\bsegfault at \S+ ip \S+|\berror \d+ in \S+\.so"  # a kernel fault line, addresses elided or not
    r"|\bwhat\(\):|is not a recognized processor for this target"
    r"|\b(?:NOT_FOUND|INTERNAL|INVALID_ARGUMENT|FAILED_PRECONDITION|UNIMPLEMENTED|RESOURCE_EXHAUSTED|UNAVAILABLE"
    r"|UNKNOWN|ABORTED|OUT_OF_RANGE|PERMISSION_DENIED|DEADLINE_EXCEEDED):\s"  # absl / XLA / TensorFlow status codes
    r"|cannot open shared object file|\bis missing from [^\n]{1,40}\bshared library"  # the dynamic loader, hashcat
    # DrMinGW/exchndl's report in MinGW programs (darktable, GIMP): "x.exe caused an Access Violation at location
    # 00007FF... in module y.dll Reading from location ..."
    r"|\bcaused an? [A-Z][\w ]{2,40}? at location [0-9A-Fa-f]{8,16} in module\b"
    # a launcher reporting its child's exit (ComfyUI Desktop: "Python process exited with code 3221225477 and signal null")
    r"|\bprocess exited with code -?\d+ and signal \w+"
    # package managers' dependency lines: apt's "pkg : Depends: x (= 1.0) but 2.0 is to be installed" and its indented
    # continuations, rpm's "libx.so.5(hip_5.3)(64bit) is needed by pkg"
    r"|^\s*[\w.+-]+ : (?:Pre-)?Depends: |^\s{8,}(?:Pre-)?Depends: [\w.+-]+(?: \([^)]*\))? but |\)\(64bit\) (?:is )?needed by "
    # CMake's package check (FindPackageHandleStandardArgs): "Could NOT find HIP: Found unsuitable version "1.5", but ..."
    r"|\bCould NOT find [\w-]+(?: \(missing: |: Found unsuitable version )"
    # and find_package's error text, wrapped by CMake over sentence-like lines: "By not providing "Findhip.cmake" in
    # CMAKE_MODULE_PATH this project has", "asked CMake to find a package configuration file provided by "hip", but"
    r"|^\s*By not providing \"Find[\w-]+\.cmake\" in CMAKE_MODULE_PATH\b|\bpackage configuration file provided by \"[\w-]+\""
    # a log level in capitals opening the line, the message after it ("ERROR gfx942 is not enabled in rocprofv1",
    # rocprof-compute's; "WARNING: ...", "FATAL: ...", a banner's "!!! ERROR during execution: ..." / "*** ERROR ...")
    r"|^\W{0,4}(?:ERROR|WARN(?:ING)?|FATAL|CRITICAL|INFO|DEBUG|NOTICE)\b"
    # strerror's texts after a colon, as C programs and perl put them ("execvp failed: No such file or directory")
    r"|: (?:No such file or directory|Permission denied|Operation not permitted|Device or resource busy"
    r"|Cannot allocate memory|Input/output error|No such device(?: or address)?|Bad address|Exec format error)\b"
    r"|\bat [\w./\\-]+\.(?:cc|cpp|cxx|c|h|hpp|cu|hip|py):\d+\s*$"  # a throw's source place closing the line
)
# A record's label of up to five words ("Marketing Name: "); one whitespace between words keeps it linear in the
# line's length (a run of optional separators between greedy words would try every split of a long word).
_LABEL = lazy(r"^\W{0,4}[A-Za-z][\w.()/-]*(?:\s[A-Za-z][\w.()/-]*){0,4}\s?:\s")
_PIP = lazy(r"\brequires [^,\n]{1,80}, but you have ")  # pip's resolver addresses the user, as a program
_ENV_LABEL = lazy(r"(?i)\b(?:GPU|CPU|OS|ROCm|HIP|driver|kernel|version|arch|device|runtime|component|system"
                        r"|graphics|platform|python|torch|environment|env|distro|model|card|APU|name)\b")
_PERSON = lazy(r"(?i:\b(?:i'm|i've|i'd|my|me|we|our|us|you|your)\b)|\bI\b|(?:^|[.!?]\s+)i\s")
# The first person singular: programs address the user ("you", "we recommend"), but seldom speak as "I" (a host
# named "my-server" or a path's "me" is no person).
_FIRST_PERSON = lazy(r"(?<![\w@.-])(?:I|I'm|I've|I'd|I'll|[Mm]y|me|[Mm]ine|i'm|i've)(?![\w@-])")
# Code spans, and assignments and paths a sentence may quote. A word is tried from its start or just after a code span
# only: the rest of a word tried in vain holds no = / or \ either (tried from every character of a long word that held
# none, 4,000 dots or dashes took 0.15-0.35 s).
_QUOTED = lazy(r"`[^`]*`|(?<![^\s`])\S*[=/\\]\S*")


def _sentence_words(text: str) -> tuple[int, int]:
    words = _WORD.findall(text)
    return len(words), sum(1 for w in words if w.lower() in _STOPWORDS)


def is_prose(text: str) -> bool:
    """A sentence a person wrote, as opposed to a line a program printed (evidence in prose counts half). A program's
    wording (``_PROGRAM_LINE``, some 30 us on a traceback's line) is looked for last: most lines a condition weighs
    read as no sentence by their words alone."""
    if not _speaks_as_i(text):
        words, stop = _sentence_words(text)
        if words < 8 or stop * 4 < words or _MACHINE_MARK.search(text):
            return False
    return not _PROGRAM_LINE.search(text)


def _speaks_as_i(text: str) -> bool:
    """A sentence in the first person, what it quotes (code, paths, settings, error names) left aside: ``I tried
    `HSA_OVERRIDE_GFX_VERSION=10.3.0` and my card still gives hipErrorNoBinaryForGpu``, ``Edit: I reinstalled ...``."""
    plain = _QUOTED.sub(" ", text)
    if not _FIRST_PERSON.search(plain):
        return False
    words, stop = _sentence_words(plain)
    return words >= 6 and stop * 4 >= words


def is_sentence(text: str) -> bool:
    """A user's sentence, even one that quotes a command, a path or a setting (``I tried `export X=1` but
    ...``): facts about the crashed system come only from what programs printed, never from what a user
    says. Programs print English too ("No such file or directory for GPU arch"), but seldom in the first
    or second person; a ``GPU: ...`` record is a record whatever its value says."""
    if (m := _LABEL.match(text)) and _ENV_LABEL.search(m.group(0)):
        return False
    if not _PERSON.search(text) or _PIP.search(text):
        return False
    words, stop = _sentence_words(_QUOTED.sub(" ", text))
    return words >= 4 and stop * 4 >= words


class Needles:
    """What every line a parser acts on holds: one of these regexes, searched in one line.

    A needle is a regex in ``re`` syntax, or a compiled ``re`` pattern (the parser's own: its
    IGNORECASE is kept). Case-blind parts of a text needle say so inline (``(?i:driver)``); ``^``
    is the start of a line. A needle only chooses lines: it may choose more than the parser then
    reads, never fewer. With Hyperscan a parser's own patterns make the best needles: only the
    lines they match reach the parser.
    """

    def __init__(self, *needles: str | re.Pattern[str], exact: bool = False, head: bool = False) -> None:
        """``exact``: ``lines`` gives exactly the lines a needle matches (no more), so that the parser
        need not search them again. ``head``: only a file's first ``HEAD_LINES`` lines count (the
        banner a program prints as it starts); they have a pass of their own, which suits needles
        made of digits and separators (``\\d+\\.\\d+``), slow to look for in every line of a long log."""
        patterns = [needle if isinstance(needle, str) else (
            f"(?i:{needle.pattern})" if needle.flags & re.IGNORECASE else needle.pattern) for needle in needles]
        self._pass = _HEAD if head else _WHOLE
        self.slots = self._pass.add(patterns, exact)
        self._given = needles

    def each(self, artifact: Artifact) -> dict[object, set[int]]:
        """Each needle's lines apart, by the needle as given: a line a needle did not choose cannot match its
        regex, so a parser that tries several regexes on a line tries only those whose needle chose it."""
        found = self._pass.scan(artifact)
        return {needle: set(found[slot]) for needle, slot in zip(self._given, self.slots)}

    def lines(self, artifact: Artifact) -> Sequence[int]:
        """Indexes of the artifact's lines holding one of the needles, in order (a parser's start: the
        analysis's deadline is checked here)."""
        deadline.check("parsing")
        found = self._pass.scan(artifact)
        if len(self.slots) == 1:
            return found[self.slots[0]]
        return sorted(set().union(*(found[slot] for slot in self.slots)))

    def readable_lines(self, artifact: Artifact) -> Iterator[tuple[int, Where, str]]:
        """The needles' lines a parser reads, with their index and place: those short enough to be a record
        (a longer line is pasted data, not output, and would cost every regex of the parser its length)."""
        for index in self.lines(artifact):
            text = artifact.lines[index]
            if readable(text):
                yield index, Where(artifact.name, index + 1), text

    def machine_lines(self, artifact: Artifact, case: Case) -> Iterator[tuple[Where, str]]:
        """The needles' lines a parser of facts reads: short enough to be a record, and not a user's sentence
        (a line another parser claimed as machine output is read whatever its words)."""
        for _, where, text in self.readable_lines(artifact):
            if case.kind_of(where) is not None or not is_sentence(text):
                yield where, text


HEAD_LINES = 200


class _Pass:
    """Every needle of every parser that reads the same part of a file: one scanner finds them all."""

    def __init__(self, name: str, head: int | None) -> None:
        self.name, self.head = name, head
        self.patterns: list[str] = []
        self.exact: list[int] = []
        self._scanner: LineScanner | None = None
        # Per thread, the artifact last scanned and what was found: the parsers of one artifact ask in
        # turn, and another thread's analysis reads other artifacts meanwhile.
        self._local = threading.local()
        self._generation = 0  # a needle added makes every memo stale (it holds no slot for it)

    def _last(self) -> tuple[list[str] | None, int, int, list[Sequence[int]]]:
        return getattr(self._local, "last", (None, 0, -1, []))

    def add(self, patterns: list[str], exact: bool) -> range:
        self._generation += 1
        start = len(self.patterns)
        self.patterns.extend(patterns)
        if exact:
            self.exact.extend(range(start, len(self.patterns)))
        return range(start, len(self.patterns))

    def scanner(self) -> LineScanner:
        """The scanner, from the disk cache when built before (Hyperscan takes a while)."""
        if self._scanner is None or len(self._scanner.patterns) != len(self.patterns):
            key = sha256(repr((self.patterns, self.exact, os.environ.get("TRIAGE_SCANNER"),
                                       build_key())).encode()).hexdigest()[:24]
            folder = cache_dir("needles")
            file = folder / f"{self.name}-{key}.pickle" if folder else None
            scanner = read_cached(file) if file else None
            if not isinstance(scanner, LineScanner):
                scanner = LineScanner(self.patterns, 0, None, "re", self.exact)
                if file:
                    write_cached(file, scanner)
            self._scanner = scanner
        return self._scanner

    def scan(self, artifact: Artifact) -> list[Sequence[int]]:
        """For each needle, its lines in the artifact (kept for the parsers that ask next)."""
        lines = artifact.lines
        last = self._last()
        if last[0] is lines and last[1] == len(lines) and last[2] == self._generation:
            return last[3]
        if self.head is None:
            found = self.scanner().scan(lines, artifact.text if artifact.text else None)
        else:
            found = self.scanner().scan(lines[:self.head])
        self._local.last = (lines, len(lines), self._generation, found)
        return found

    def reset(self) -> None:
        """Build the scanner again when next asked (the engine chosen by ``TRIAGE_SCANNER`` changed)."""
        self._scanner = None
        self._generation += 1


_WHOLE = _Pass("whole", None)
_HEAD = _Pass("head", HEAD_LINES)


def needle_scanners() -> list[LineScanner]:
    """The scanners of every parser's needles (each parser module registers its needles when imported)."""
    return [_WHOLE.scanner(), _HEAD.scanner()]


def scan(artifact: Artifact) -> None:
    """The passes over an artifact for every parser's needles, before the parsers ask."""
    _WHOLE.scan(artifact)
    _HEAD.scan(artifact)


class Walk:
    """Candidate line indexes in order, for a parser whose record may go on in the lines after it.

    ``follow()`` while at a line asks for the next line too, candidate or not: a listing that a
    command introduced goes on over lines that hold none of the parser's needles.
    """

    def __init__(self, candidates: Sequence[int], count: int) -> None:
        self._candidates, self._count, self._follow = candidates, count, False

    def follow(self) -> None:
        self._follow = True

    def __iter__(self) -> Iterator[int]:
        index, at = -1, 0
        while True:
            if self._follow and index + 1 < self._count:
                index += 1
            else:
                while at < len(self._candidates) and self._candidates[at] <= index:
                    at += 1
                if at == len(self._candidates):
                    return
                index = self._candidates[at]
            self._follow = False
            yield index
