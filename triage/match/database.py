"""Load the signature database: one YAML file per known failure, plus ``_database.yaml`` settings.

Each regex is compiled once, when first used (``triage signatures lint`` compiles them all). A broken signature file is reported and skipped; it never
stops a triage.
"""

from __future__ import annotations

import functools
import os
import pickle
import re
import sys
import threading
from collections.abc import Callable, Collection, Sequence
from dataclasses import field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from triage import __version__
from triage.digest import sha256
from triage.lazy import dataclass, regex_build, regex_data, regex_from
from triage.match.confidence import Weights, read_weights
from triage.match.texts import Texts
from triage.resources import KeptDict, cache_dir, load_yaml, read_cached, source_key, write_cached
from triage.scan.scanner import LineScanner, build_key

if TYPE_CHECKING:
    import regex

CONDITION_KINDS = ("log", "frame", "fault", "fact", "compare", "binary", "listing", "all_of", "any_of", "not")
COMBINATORS = ("all_of", "any_of", "not")
# The input a condition reads; when that input is absent the report asks for it (a combinator
# reads what its first part reads).
CONDITION_INPUT = {"log": "text", "frame": "stack", "fault": "fault", "fact": "environment", "compare": "environment",
                   "binary": "binary", "listing": "listing"}
_REGEX_FIELDS = {"log": None, "frame": ("symbol", "module"), "fault": ("module", "instruction"),
                 "fact": ("matches",), "listing": ("has", "lacks")}
# regex.IGNORECASE, which is re's bit: a run whose patterns all come from the cache does not import regex.
_FLAGS = int(re.IGNORECASE)
# A log condition's companion line: ``then`` is a regex that one of the ``within`` lines after the line ``log`` matched
# must match (same input, in order). Only the lines after a first line's match are read for it, each once, so a
# long log costs no more than with ``log`` alone; ``within`` is small because the two lines are one message.
THEN_WITHIN = 3
THEN_WITHIN_MAX = 20


class SignatureError(ValueError):
    pass


SHARED = "_conditions.yaml"  # conditions several signatures use by name (``use:``), each with its own strength


def read_shared(folder: Path) -> dict[str, dict]:
    """The folder's shared conditions, name -> the condition as written (none when the file is absent)."""
    import yaml  # only when the database is not in the cache

    path = folder / SHARED
    if not path.is_file():
        return {}
    try:
        data = load_yaml(path, keep=False)
    except (OSError, yaml.YAMLError) as err:
        raise SignatureError(f"{SHARED}: cannot be read: {err}") from err
    if data is None:
        return {}  # an empty file shares nothing
    shared = data.get("conditions") if isinstance(data, dict) else None
    if not isinstance(shared, dict) or not all(isinstance(v, dict) for v in shared.values()):
        raise SignatureError(f"{SHARED}: 'conditions' must map each name to a condition")
    out = {str(name): body for name, body in shared.items()}
    if cycle := _cycle(out):
        raise SignatureError(f"{SHARED}: {' -> '.join(cycle)}: a shared condition uses itself")
    return out


def _cycle(shared: dict[str, dict]) -> list[str]:
    """A chain of shared conditions that comes back to its first (parts may use other shared conditions), or []."""
    done: set[str] = set()

    def visit(name: str, chain: list[str]) -> list[str]:
        if name in chain:
            return chain[chain.index(name):] + [name]
        if name in done or name not in shared:
            return []
        for used in sorted(uses(shared[name])):
            if found := visit(used, chain + [name]):
                return found
        done.add(name)
        return []

    return next((found for name in shared if (found := visit(name, []))), [])


def _used(raw: dict, sig_id: str, shared: dict[str, dict], nested: bool = False) -> dict:
    """A condition that names a shared one (``use: NAME``) as the condition it stands for: the shared body with
    the signature's own strength, and its own id, description, ``against`` and ``weak`` where it gives them. A part
    of all_of / any_of / not may use one too (it gives only a description): the shared test stands in its place.
    A shared condition's own parts may use others the same way (read_shared refuses a cycle)."""
    name = str(raw["use"])
    if name not in shared:
        raise SignatureError(f"{sig_id}: condition uses {name!r}, which {SHARED} does not define")
    if own := [k for k in CONDITION_KINDS if k in raw]:
        raise SignatureError(f"{sig_id}: condition {raw.get('id', name)} uses {name!r} and has its own {own[0]}: one or the other")
    if kinds := [k for k in ("strength", "against", "weak") if k in shared[name]]:
        raise SignatureError(f"{SHARED}: {name} has {kinds[0]}, which each signature gives where it uses it")
    if "use" in shared[name]:
        raise SignatureError(f"{SHARED}: {name} is only a use of {shared[name]['use']!r}; a shared condition is a test "
                             f"of its own (its parts may use others)")
    if nested and (other := sorted(set(raw) - _PART_USE_KEYS)):
        raise SignatureError(f"{sig_id}: a part that uses {name!r} gives only a description, not {other[0]}")
    if other := sorted(set(raw) - _USE_KEYS):
        raise SignatureError(f"{sig_id}: condition {raw.get('id', name)} uses {name!r}; {other[0]} belongs to the shared "
                             f"condition (a use gives only {', '.join(sorted(_USE_KEYS - {'use'}))})")
    return {**shared[name], "id": name, **{k: v for k, v in raw.items() if k != "use"}}


_USE_KEYS = frozenset({"use", "id", "description", "strength", "against", "weak"})
_PART_USE_KEYS = frozenset({"use", "description"})


def uses(raw: object) -> set[str]:
    """The shared conditions a condition as written names, in itself or in any of its parts."""
    if not isinstance(raw, dict):
        return set()
    found = {str(raw["use"])} if "use" in raw else set()
    for kind in COMBINATORS:
        parts = raw.get(kind)
        for part in [parts] if kind == "not" else parts if isinstance(parts, list) else ():
            found |= uses(part)
    return found


@dataclass
class Condition:
    """One condition of a signature (a log pattern, a fact test, or a group of conditions)."""
    id: str
    kind: str
    spec: Any
    strength: float
    description: str
    input: str
    against: bool = False
    weak: bool = False  # evidence that alone names no cause (see engine.py)
    children: list[Condition] = field(default_factory=list)  # the parts of all_of / any_of / not
    scan: tuple[int, int] = (-1, -1)  # (scanner, pattern) of a log condition: see index()
    within: int = 0  # a log condition with a ``then`` line: how many lines after the first that line may be
    sources: dict[str, str] = field(default_factory=dict)
    _compiled: dict[str, regex.Pattern] = field(default_factory=dict, repr=False)
    _memo: Patterns | None = field(default=None, repr=False, compare=False)  # set by load()

    def __getstate__(self) -> dict:
        # Pickled with nothing compiled and no memo, and no __setstate__: unpickling the cached database's 1,500
        # conditions then calls no Python code per condition (a third of its load time).
        return {**{k: v for k, v in self.__dict__.items() if k not in ("_compiled", "_memo")}, "_compiled": {}, "_memo": None}

    def walk(self) -> list[Condition]:
        """This condition and every part nested in it."""
        return [self] + [c for child in self.children for c in child.walk()]

    def pattern(self, key: str) -> regex.Pattern | None:
        """The compiled regex for ``key`` (compiled on first use: most never run on a given case)."""
        if key not in self.sources:
            return None
        if key not in self._compiled:
            source = self.sources[key]
            self._compiled[key] = self._memo.get(source, self.id) if self._memo else _compile(source, self.id)
        return self._compiled[key]


class Patterns(KeptDict):
    """The condition regexes compiled so far, kept in the per-user cache from one run to the next.

    ``regex`` parses and compiles a pattern in Python, about a millisecond each: most of a warm single
    triage's matching went there. A compiled ``regex`` pattern is made from its text, flags and compiled
    code (``regex_data``) by the engine alone, without parsing it again or importing the ``regex`` package
    (some 15 microseconds), so the patterns a run compiles are added to a file beside the cached database,
    and the next run reads them all at once. The compiled code is the installed ``regex``'s own, so the
    file is named for that build and Python's.
    """

    def __init__(self, file: Path | None) -> None:
        super().__init__(file)
        self._ready: dict[str, regex.Pattern] = {}  # the patterns this process loaded or compiled

    def get(self, source: str, where: str) -> regex.Pattern:
        """``source`` compiled with the conditions' flags (raises SignatureError when it does not compile).

        The file keeps each pattern as its own pickle, loaded when first asked for: a cache that every
        condition filled holds some 1,500 patterns, and a case reaches a few dozen of them."""
        found = self._ready.get(source)
        if found is not None:
            return found
        kept = self._loaded().get(source)
        if isinstance(kept, bytes):
            try:
                data = pickle.loads(kept)
            except Exception:  # noqa: BLE001 - a damaged entry: compiled again below
                data = None
            found = regex_from(data, source)
        if found is None:
            found = _compile(source, where)
            self._add(source, pickle.dumps(regex_data(found), protocol=pickle.HIGHEST_PROTOCOL))
        self._ready[source] = found
        return found

    def compile_all(self, signatures: list[Signature]) -> int:
        """Compile every condition's regexes now and save them (``triage signatures compile``); how many there are."""
        sources = {(source, sig.id) for sig in signatures for top in sig.conditions for cond in top.walk()
                   for source in cond.sources.values()}
        for source, where in sources:
            try:
                self.get(source, where)
            except SignatureError:
                pass  # reported where the condition is used
        self.save()
        return len(self._loaded())


@dataclass
class Signature:
    """One signature file as the engine reads it: what it names, its conditions and its texts."""
    id: str
    title: str
    klass: str
    status: str
    version: int
    priority: int
    conditions: list[Condition]
    root_cause: str
    workarounds: list[dict]
    fix: str
    ask_for: list[Any]
    references: list[str]
    falsepositives: list[str]
    tests: dict
    path: Path
    applies_to: dict[str, list[str]] = field(default_factory=dict)
    fallback: bool = False  # a class-level catch-all: any specific signature that holds outranks it
    # Set by index(): the conditions that can make the signature a candidate, and the others; the anchors' scanner's
    # patterns one of which each anchor needs a line of; whether every anchor needs one, and all those patterns (one
    # test that passes over most signatures on every case: derived here, not in the engine's loop, where it cost
    # some 0.1-0.2 ms a case).
    anchors: list[Condition] = field(default_factory=list, repr=False)
    support: list[Condition] = field(default_factory=list, repr=False)
    anchor_needs: tuple[frozenset[int] | None, ...] = field(default=(), repr=False)  # each anchor's; None: no line
    anchors_need_lines: bool = field(default=False, repr=False)
    anchor_patterns: frozenset[int] = field(default_factory=frozenset, repr=False)
    log_support: bool = field(default=False, repr=False)

    def __getstate__(self) -> dict:
        # The examples (``tests``: a third of the cached database, read only by ``signatures test`` and lint) are
        # kept in a cache file of their own (see load), and read from there when first asked for. A case reads the
        # anchors of some signatures and the rest of a few candidates: those go as two pickles of their own
        # (``_ANCHORS``, ``_REST``), loaded when first asked for (see __getattr__), and the path as its text.
        state = {k: v for k, v in self.__dict__.items()
                 if k not in ("tests", "path", "_patterns", "anchors", *_REST)}
        if "path" in self.__dict__:
            state["_path"] = str(self.path)
        if "anchors" in self.__dict__:
            state[_ANCHORS] = _dumps(self.anchors)
        if "conditions" in self.__dict__:
            # a condition that is an anchor is named by its place among the anchors: one object, as before pickling
            places = {id(cond): at for at, cond in enumerate(self.anchors)}
            rest = {name: self.__dict__[name] for name in _REST}
            rest["conditions"] = [places.get(id(cond), cond) for cond in self.conditions]
            state[_REST_PACKED] = _dumps(rest)
        return state

    def __getattr__(self, name: str) -> Any:  # only for what the instance lacks: what a cached signature loads late
        if name.startswith("__"):
            raise AttributeError(name)
        if name in _LATE and (_ANCHORS in self.__dict__ or _REST_PACKED in self.__dict__):
            self._unpack(rest=name != "anchors")
            return self.__dict__[name]
        if name == "path" and "_path" in self.__dict__:
            self.path = Path(self.__dict__["_path"])
            return self.path
        if name != "tests":
            raise AttributeError(name)
        kept = self.__dict__.get("_examples")
        found = _examples(kept).get(self.id) if kept else None
        if not isinstance(found, dict):
            try:
                found = load_signature(self.path).tests
            except SignatureError:
                found = {}
        self.tests = found
        return found

    def _unpack(self, rest: bool) -> None:
        """Load what a cached signature keeps packed: its anchors (every case whose log may hold one reads them), and
        with ``rest`` its other conditions and texts (few are read: a candidate's). Threads load it once, in turn."""
        with _unpacking():
            known = self.__dict__
            memo = known.get("_patterns")
            if _ANCHORS in known:
                anchors = pickle.loads(known[_ANCHORS])
                _attach(anchors, memo)
                known["anchors"] = anchors
                del known[_ANCHORS]
            if rest and _REST_PACKED in known:
                rest = pickle.loads(known[_REST_PACKED])
                conditions = [known["anchors"][c] if isinstance(c, int) else c for c in rest["conditions"]]
                _attach([c for c in conditions if not isinstance(c, int)], memo)
                known.update(rest, conditions=conditions)
                del known[_REST_PACKED]

    def applies(self, os_name: str | None, inputs: set[str]) -> bool:
        """The ``applies_to`` prefilter: skip a signature whose OS or inputs the case cannot have."""
        oses = self.applies_to.get("os")
        if oses and os_name and os_name not in oses:
            return False
        kinds = self.applies_to.get("inputs")
        return not kinds or any(k in inputs for k in kinds)


# A cached signature's fields that are loaded when first asked for (see Signature.__getstate__): its anchors, and
# the rest that only a candidate reads.
_ANCHORS = "_packed_anchors"
_REST_PACKED = "_packed_rest"
_REST = ("conditions", "support", "title", "root_cause", "workarounds", "fix", "ask_for", "references", "falsepositives")
_LATE = frozenset(("anchors", *_REST))


def _dumps(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


@functools.cache
def _unpacking() -> threading.RLock:
    """Held while a packed part of the database is loaded: two threads asking at once load it once."""
    return threading.RLock()


def _attach(conditions: list[Condition], memo: Patterns | None) -> None:
    """Have these conditions and their parts take their compiled patterns from ``memo`` (the cache's)."""
    if memo is None:
        return
    for top in conditions:
        for cond in top.walk():
            if cond.sources:
                cond._memo = memo


class Packed(Sequence):
    """Objects kept as a pickle each and loaded when first asked for (the prefilters' scanners: a case reads the
    anchors' and a few candidates' own); ``ready`` is called on each as it is loaded."""

    def __init__(self, items: list[bytes]) -> None:
        self._items: list[Any] = list(items)
        self._loaded = [False] * len(self._items)
        self.ready: Callable[[Any, int], None] | None = None  # called with the item and its place

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, at: Any) -> Any:
        if isinstance(at, slice):
            return [self[i] for i in range(*at.indices(len(self)))]
        if not self._loaded[at]:
            with _unpacking():
                if not self._loaded[at]:
                    item = pickle.loads(self._items[at])
                    if self.ready is not None:
                        self.ready(item, at)
                    self._items[at] = item
                    self._loaded[at] = True
        return self._items[at]

    def __reduce__(self) -> tuple:
        return type(self), ([item if not done else _dumps(item) for item, done in zip(self._items, self._loaded)],)


@dataclass
class Prefilters:
    """The log conditions' prefilters (see ``index``). Pickled with each scanner apart, loaded when first read."""

    groups: Sequence[LineScanner]  # [0]: every anchor; then each signature's other log conditions
    together: LineScanner  # those other conditions of all signatures at once
    places: list[tuple[int, int]]  # each pattern of ``together``: its (group, pattern)
    owners: list[list[int]] = field(default_factory=list)  # each group's patterns: their signature's place

    @property
    def scanners(self) -> tuple[LineScanner, ...]:
        return (*self.groups, self.together)

    def compile_with(self, compile: Callable[[str], Any],  # noqa: A002 - the scanners' own name
                     examples: Callable[[int], Sequence[str]] | None = None) -> None:
        """Have every scanner take the patterns it tries itself from ``compile`` (see LineScanner.compile_with), a
        packed one when it is loaded; and, with ``examples`` (a signature's place -> its test inputs' lines), check
        a Hyperscan build on them (LineScanner.check_with)."""
        def owner(at: int | None, index: int) -> int:
            """The signature's place of pattern ``index`` of group ``at`` (None: of ``together``)."""
            group, pattern = (at, index) if at is not None else self.places[index]
            return self.owners[group][pattern]

        def ready(scanner: LineScanner, at: int | None) -> None:
            scanner.compile_with(compile)
            if examples is not None and self.owners:
                scanner.check_with(lambda index: examples(owner(at, index)))

        self.__dict__["_ready"] = ready
        if isinstance(self.groups, Packed):
            self.groups.ready = ready
            for at, done in enumerate(self.groups._loaded):
                if done:
                    ready(self.groups[at], at)
        else:
            for at, scanner in enumerate(self.groups):
                ready(scanner, at)
        if "together" in self.__dict__:
            ready(self.together, None)

    def __getstate__(self) -> dict:
        state = {k: v for k, v in self.__dict__.items() if k not in ("together", "_ready")}
        state["groups"] = self.groups if isinstance(self.groups, Packed) else Packed([_dumps(g) for g in self.groups])
        state["_packed_together"] = self.__dict__.get("_packed_together") or _dumps(self.together)
        return state

    def __getattr__(self, name: str) -> Any:  # a cached database's ``together``, loaded when first read
        if name != "together" or "_packed_together" not in self.__dict__:
            raise AttributeError(name)
        with _unpacking():
            if "together" not in self.__dict__:
                together = pickle.loads(self.__dict__["_packed_together"])
                if self.__dict__.get("_ready") is not None:
                    self.__dict__["_ready"](together, None)
                self.__dict__["together"] = together
        return self.__dict__["together"]


@dataclass
class Database:
    """Every signature of a folder with its settings and prefilters: loaded once, kept in the per-user cache."""
    version: str
    threshold: float
    anchor_strength: float
    ask_for: dict[str, str]
    signatures: list[Signature]
    problems: list[str]
    unknown: dict
    prefilters: Prefilters
    weights: Weights = field(default_factory=Weights)
    patterns: Patterns = field(default_factory=lambda: Patterns(None), repr=False, compare=False)
    # the texts as Python, translated when first filled (match/texts.py); not part of the cached database
    texts: Texts = field(default_factory=lambda: Texts(cache_dir("texts")), repr=False, compare=False)

    def __getstate__(self) -> dict:
        return {k: v for k, v in self.__dict__.items() if k not in ("patterns", "texts", "_by_anchor")}

    def trying(self, anchored: Collection[int]) -> list[Signature]:
        """The signatures one of whose anchors may hold, in the database's order: those with an anchor that reads
        no line, and the owners of the anchor patterns found (``anchored``). Most of a database is neither, and a
        case is not walked past them one by one."""
        index = self.__dict__.get("_by_anchor")
        if index is None:  # made on first use: ``without`` gives a database of its own
            owners: dict[int, list[int]] = {}
            for place, sig in enumerate(self.signatures):
                for pattern in sig.anchor_patterns:
                    owners.setdefault(pattern, []).append(place)
            index = self.__dict__["_by_anchor"] = (
                [place for place, sig in enumerate(self.signatures) if not sig.anchors_need_lines], owners)
        always, owners = index
        places = set(always)
        for pattern in anchored:
            places.update(owners.get(pattern, ()))
        return [self.signatures[place] for place in sorted(places)]

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state, patterns=Patterns(None), texts=Texts(cache_dir("texts")))

    def without(self, ids: Collection[str]) -> Database:
        """This database with the signatures ``ids`` left out, to ask whether a case still gets its class when
        the signature that named it is gone (tools/ablation.py). The prefilters are shared: the left-out
        signatures' patterns are still scanned, and nothing reads what they find."""
        gone = frozenset(ids)
        return replace(self, signatures=[sig for sig in self.signatures if sig.id not in gone])


def is_anchor(cond: Condition, anchor_strength: float) -> bool:
    """A condition that can make its signature a candidate (the others are read only for candidates).
    Weak evidence (a bare segfault, an exit code) never can: alone it names no cause."""
    return not cond.against and not cond.weak and cond.strength >= anchor_strength


def index(signatures: list[Signature], anchor_strength: float, engine: str | None = None) -> Prefilters:
    """The prefilters of the log conditions; sets each signature's ``anchors`` and ``support`` and each log
    condition's ``scan``.

    The first holds every signature's anchors (of a combining anchor, the log part it needs, or every log part when
    it needs none) and reads every case. Each signature's other log conditions have a prefilter of their own, read
    only when its anchors held (or a combining anchor's needed line was found): broad support
    evidence (a HIP call named in the log) matches much of a long trace, and most signatures
    are not candidates. When many are (a bundle of many logs), one prefilter of all those
    conditions together reads the case once instead.
    """
    groups: list[list[Condition]] = [[]]
    owners: list[list[int]] = [[]]  # the same places: the signature's
    for place, sig in enumerate(signatures):
        sig.anchors = [c for c in sig.conditions if is_anchor(c, anchor_strength)]
        sig.support = [c for c in sig.conditions if not is_anchor(c, anchor_strength)]
        support: list[Condition] = []
        supported: list[int] = []
        # Read with the anchors: the log conditions an anchor needs (an anchor none of whose is found is not
        # tried), and every log part of an anchor that needs none; so trying a signature reads no other scanner.
        # The rest of a combinator is read with the signature's support, when its need is met.
        needs = [_needs(c) for c in sig.anchors]
        needed = {id(cond) for anchor, need in zip(sig.anchors, needs)
                  for cond in (need if need is not None else [c for c in anchor.walk() if c.kind == "log"])}
        for top in sig.conditions:
            for cond in (c for c in top.walk() if c.kind == "log"):
                anchor = id(cond) in needed
                group, number = (groups[0], 0) if anchor else (support, len(groups))
                cond.scan = (number, len(group))
                group.append(cond)
                (owners[0] if anchor else supported).append(place)
        if support:
            groups.append(support)
            owners.append(supported)
        sig.anchor_needs = tuple(None if need is None else frozenset(c.scan[1] for c in need) for need in needs)
        sig.anchors_need_lines = None not in needs
        sig.log_support = bool(support)
        sig.anchor_patterns = frozenset().union(*(need for need in sig.anchor_needs if need is not None))
    places = [(number, at) for number, group in enumerate(groups[1:], 1) for at in range(len(group))]
    prefilters = Prefilters(
        # the anchors' lines are checked (a widened expression's, scan/expression.py): they decide which signatures
        # are tried, and each one tried may cost a pass of its own patterns
        groups=tuple(LineScanner([c.sources["log"] for c in group], _FLAGS, engine,
                                 exact=range(len(group)) if not number else ()) for number, group in enumerate(groups)),
        together=LineScanner([c.sources["log"] for group in groups[1:] for c in group], _FLAGS, engine),
        places=places,
        owners=owners,
    )
    # Every pattern's literals (the scanners' Python way) now, from the shipped table: they are kept in the cached
    # database, so a warm run reads them with it instead of one cache file for each of the scanners it asks (and
    # imports no triage.scan.literals).
    from triage.scan.literals import literals_for

    literals = [[literals_for(c.sources["log"], _FLAGS) for c in group] for group in groups]
    for scanner, sets in zip(prefilters.groups, literals):
        scanner.keep_literals(sets)
    prefilters.together.keep_literals([found for sets in literals[1:] for found in sets])  # the same sets, pickled once
    # the examples a Hyperscan build is checked on (load() wires them), named here where they are at hand: a build
    # checked on other examples is not reused
    examples_key = sha256(repr([(sig.id, sig.tests) for sig in signatures]).encode()).hexdigest()[:16]
    for scanner in prefilters.scanners:
        scanner.examples_key = examples_key
    return prefilters


def _needs(cond: Condition) -> tuple[Condition, ...] | None:
    """Log conditions one of which must hold for ``cond`` to (the fewest there are); None when it may hold without
    a line of the log."""
    if cond.kind == "log":
        return (cond,)
    if cond.kind == "all_of":
        found = [n for n in map(_needs, cond.children) if n is not None]
        return min(found, key=len) if found else None
    if cond.kind == "any_of":
        found = [_needs(c) for c in cond.children]
        return tuple(c for n in found for c in n) if found and None not in found else None  # type: ignore[union-attr]
    return None


def _compile(pattern: str, where: str) -> regex.Pattern:
    import regex  # only for a pattern not in the cache

    try:
        return regex.compile(pattern, _FLAGS)
    except regex.error as err:
        raise SignatureError(f"condition {where}: bad regex {pattern!r}: {err}") from err


def _condition(raw: dict, sig_id: str, nested: bool = False, shared: dict[str, dict] | None = None) -> Condition:
    """One condition; ``nested``: a part of all_of / any_of / not, which has no id or strength of its own;
    ``shared``: the conditions a signature may use by name."""
    if not isinstance(raw, dict):
        raise SignatureError(f"{sig_id}: a condition is a mapping, not {raw!r}")
    if "use" in raw:
        raw = _used(raw, sig_id, shared or {}, nested)
    kinds = [k for k in CONDITION_KINDS if k in raw]
    if len(kinds) != 1:
        raise SignatureError(f"{sig_id}: condition {raw.get('id', '?')} needs exactly one of {', '.join(CONDITION_KINDS)}")
    kind = kinds[0]
    spec = raw[kind]
    cond = Condition(
        id=str(raw.get("id") or f"{kind}-{len(str(spec))}"),
        kind=kind,
        spec=spec,
        strength=float(raw.get("strength", 0.5)),
        description=str(raw.get("description", "")),
        input=str(raw.get("input") or CONDITION_INPUT.get(kind, "")),
        against=bool(raw.get("against", False)),
        weak=bool(raw.get("weak", False)),
    )
    if not nested and not 0 < cond.strength < 1:
        raise SignatureError(f"{sig_id}: condition {cond.id}: strength must be between 0 and 1")
    if kind != "log" and ("then" in raw or "within" in raw):
        raise SignatureError(f"{sig_id}: condition {cond.id}: "
                             f"{'then' if 'then' in raw else 'within'} belongs to a log condition, not to {kind}")
    if kind in COMBINATORS:
        parts = [spec] if kind == "not" else spec
        if not isinstance(parts, list) or not parts:
            raise SignatureError(f"{sig_id}: condition {cond.id}: {kind} takes {'a condition' if kind == 'not' else 'a list of conditions'}")
        cond.children = [_condition(part, f"{sig_id}: {cond.id}", nested=True, shared=shared) for part in parts]
        cond.input = cond.input if raw.get("input") else cond.children[0].input
    elif kind == "log":
        cond.sources["log"] = str(spec)
        _then(raw, cond, sig_id)
    elif isinstance(spec, dict):
        for key in _REGEX_FIELDS.get(kind) or ():
            if key in spec:
                cond.sources[key] = str(spec[key])
    return cond


def _then(raw: dict, cond: Condition, sig_id: str) -> None:
    """A log condition's ``then`` line and its ``within`` (see THEN_WITHIN)."""
    if "then" not in raw:
        if "within" in raw:
            raise SignatureError(f"{sig_id}: condition {cond.id}: within says how far a then line may be; it has none")
        return
    then, within = raw["then"], raw.get("within", THEN_WITHIN)
    if not isinstance(then, str) or not then.strip():
        raise SignatureError(f"{sig_id}: condition {cond.id}: then is a regex, not {then!r}")
    if isinstance(within, bool) or not isinstance(within, int) or not 1 <= within <= THEN_WITHIN_MAX:
        raise SignatureError(f"{sig_id}: condition {cond.id}: within is a number of lines from 1 to {THEN_WITHIN_MAX}, "
                             f"not {within!r}")
    cond.sources["then"] = then
    cond.within = within


def load_signature(path: Path, shared: dict[str, dict] | None = None) -> Signature:
    """One signature file; ``shared``: its folder's shared conditions (read from the folder when not given)."""
    import yaml  # only when the database is not in the cache

    try:
        data = load_yaml(path, keep=False)  # kept in the cached database instead
    except (OSError, yaml.YAMLError) as err:
        raise SignatureError(f"{path.name}: cannot be read: {err}") from err
    if not isinstance(data, dict):
        raise SignatureError(f"{path.name}: not a mapping")
    missing = [k for k in ("id", "title", "class", "conditions", "root_cause") if k not in data]
    if missing:
        raise SignatureError(f"{path.name}: missing {', '.join(missing)}")
    sig_id = str(data["id"])
    if shared is None and any(uses(c) for c in data["conditions"] or ()):
        shared = read_shared(path.parent)
    conditions = [_condition(c, sig_id, shared=shared) for c in data["conditions"]]
    ids = [c.id for c in conditions]
    if twice := sorted({i for i in ids if ids.count(i) > 1}):
        raise SignatureError(f"{path.name}: condition id {twice[0]} stands twice (weights and reports name conditions by id)")
    return Signature(
        id=sig_id,
        title=str(data["title"]),
        klass=str(data["class"]),
        status=str(data.get("status", "experimental")),
        version=int(data.get("version", 1)),
        priority=int(data.get("priority", 50)),
        conditions=conditions,
        root_cause=str(data["root_cause"]),
        workarounds=list(data.get("workarounds") or []),
        fix=str(data.get("fix", "")),
        ask_for=list(data.get("ask_for") or []),
        references=[str(r) for r in data.get("references") or []],
        falsepositives=[str(r) for r in data.get("falsepositives") or []],
        tests=dict(data.get("tests") or {}),
        path=path,
        applies_to={str(k): [str(v) for v in vs] for k, vs in (data.get("applies_to") or {}).items()},
        fallback=bool(data.get("fallback", False)),
    )


def load(folder: Path) -> Database:
    """Load the database in ``folder``, from the per-user cache when no file there has changed."""
    # The folder listed with os.scandir, not pathlib (a Path made for each of the some 130 files was a few percent
    # of a warm run): the same names, in the same order, as sorted(folder.glob("*.yaml")).
    try:
        with os.scandir(folder) as entries:
            stats = sorted((entry.name, entry.stat()) for entry in entries if entry.name.endswith(".yaml"))
    except OSError:  # no such folder: reported as before, by the parse below
        stats = []
    stamp = sha256(repr([(__version__, build_key(), source_key("match"), os.environ.get("TRIAGE_SCANNER"))] + [
        (name, st.st_mtime_ns, st.st_size) for name, st in stats]).encode()).hexdigest()[:24]
    cache = cache_dir("signatures")
    cached = cache / f"{stamp}.pickle" if cache else None
    db = read_cached(cached) if cached else None
    examples = cache / f"{stamp}-examples.pickle" if cache else None
    if not isinstance(db, Database):
        db = _load(folder)
        if cached and examples:
            write_cached(examples, {sig.id: sig.tests for sig in db.signatures})
            write_cached(cached, db)
    elif examples:
        for sig in db.signatures:
            sig._examples = str(examples)
    if cache:
        build = sha256(regex_build().encode()).hexdigest()[:12]
        memo = Patterns(cache / f"{stamp}-regex-{build}-py{sys.version_info[0]}.{sys.version_info[1]}.pickle")
        db.patterns = memo
        for sig in db.signatures:
            if _ANCHORS in sig.__dict__ or _REST_PACKED in sig.__dict__:
                sig.__dict__["_patterns"] = memo  # its conditions take it when they are loaded
            else:
                _attach(sig.conditions, memo)
        db.prefilters.compile_with(lambda source: memo.get(source, "a log condition"), _example_lines(db.signatures))
    return db


def _example_lines(signatures: list[Signature]) -> Callable[[int], list[str]]:
    """A signature's place -> the lines of its examples, inline or in a file (read when a scanner is built, which
    is rare; each signature's once, though it owns many patterns)."""
    split: dict[int, list[str]] = {}

    def text(example: object, sig: Signature) -> str:
        from triage.match.examples import ExampleError, example_text  # imported only when a scanner is built

        try:
            return example_text(example, sig.path) if isinstance(example, dict) else ""
        except ExampleError:  # lint and `signatures test` report it
            return ""

    def lines(place: int) -> list[str]:
        if place not in split:
            sig = signatures[place]
            split[place] = [line for kind in ("match", "no_match") for example in sig.tests.get(kind) or []
                            for line in text(example, sig).splitlines()]
        return split[place]

    return lines


@functools.lru_cache(maxsize=4)
def _examples(file: str) -> dict:
    """The signatures' examples kept beside a cached database: id -> tests (empty when the file is gone)."""
    found = read_cached(Path(file))
    return found if isinstance(found, dict) else {}


def _load(folder: Path) -> Database:
    """Load every ``*.yaml`` signature in the folder; files starting with ``_`` are settings."""
    import yaml  # only when the database is not in the cache

    settings_path = folder / "_database.yaml"
    try:
        settings = load_yaml(settings_path, keep=False) or {}
    except (OSError, yaml.YAMLError) as err:
        raise SignatureError(f"{settings_path}: cannot be read: {err}") from err
    problems: list[str] = []
    signatures: list[Signature] = []
    seen: set[str] = set()
    try:
        shared = read_shared(folder)
    except SignatureError as err:
        problems.append(str(err))
        shared = {}
    for path in sorted(folder.glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        try:
            sig = load_signature(path, shared)
        except SignatureError as err:
            problems.append(f"signature skipped: {err}")
            continue
        if sig.id in seen:
            problems.append(f"signature skipped: {path.name}: duplicate id {sig.id}")
            continue
        seen.add(sig.id)
        signatures.append(sig)
    anchor_strength = float(settings.get("anchor_strength", 0.2))
    weights, trouble = read_weights(folder / "_weights.yaml")
    problems.extend(trouble)
    return Database(
        weights=weights,
        prefilters=index(signatures, anchor_strength),
        version=str(settings.get("version", "0")),
        threshold=float(settings.get("threshold", 0.45)),
        anchor_strength=anchor_strength,
        ask_for={str(k): str(v).strip() for k, v in (settings.get("ask_for") or {}).items()},
        signatures=signatures,
        problems=problems,
        unknown=dict(settings.get("unknown") or {}),
    )

