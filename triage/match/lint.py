"""Check the signature database before it ships: schema, ids, regexes, backtracking, ties.

Each check returns human-readable problems; an empty list means the database is fit to use.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import regex
import yaml

from triage.match.database import SHARED, Database, SignatureError, read_shared, uses
from triage.match.examples import ExampleError, example_text
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import load_yaml

# Inputs that make a regex with nested or overlapping unbounded repeats run for ever.
_ADVERSARIAL = ["a" * 20000 + "!", " " * 20000 + "x", "0x" + "0" * 20000 + "g", "/a" * 10000 + "\0",
                "a " * 10000 + "!", "::" * 10000, "-" * 20000 + "x"]
_TIMEOUT = 0.5
# The words of a pattern, repeated along one long line (with a character outside ASCII, which sends
# ``regex`` down its slower Unicode paths): the shape ``X[^\n]*\bY`` tries every X to the line's end.
_WORD = regex.compile(r"(?<![\\(?])[A-Za-z_]{3,}")
_SELF_LINE_CHARS = 40_000  # and four times that: a linear pattern takes about 4x as long there, a quadratic 16x
_UNBOUNDED = regex.compile(r"(?<!\\)(?:[+*]|\{\d*,\})")


def nested_repeat(pattern: str) -> bool:
    """True when an unboundedly repeated group itself contains an unbounded repeat, like ``(a+)+``."""
    stack: list[bool] = []
    escaped = in_class = False
    inner_unbounded = False
    i = 0
    while i < len(pattern):
        ch = pattern[i]
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            stack.append(False)
        elif ch == ")" and stack:
            inner_unbounded = stack.pop()
            after = pattern[i + 1:i + 8]
            if inner_unbounded and _UNBOUNDED.match(after):
                return True
            if stack:
                stack[-1] = stack[-1] or inner_unbounded
        elif ch in "+*" or (ch == "{" and regex.match(r"\{\d*,\}", pattern[i:])):
            if stack:
                stack[-1] = True
        i += 1
    return False


def check_regexes(db: Database) -> tuple[list[tuple[str, str, regex.Pattern]], list[str]]:
    """Compile every regex of the database: the compiled ones, and the problems."""
    compiled, problems = [], []
    for sig in db.signatures:
        for cond in (part for top in sig.conditions for part in top.walk()):
            for key in cond.sources:
                try:
                    compiled.append((sig.id, cond.id, cond.pattern(key)))
                except SignatureError as err:
                    problems.append(f"{sig.id}: {err}")
    return compiled, problems


def _read_signature_files(folder: Path) -> tuple[list[tuple[Path, Any]], list[str]]:
    """Every signature file of the folder as it parses (settings files, named ``_*``, left out), and the files that
    cannot be read."""
    files, problems = [], []
    for path in sorted(folder.glob("*.yaml")):
        if path.name.startswith("_"):
            continue
        try:
            files.append((path, load_yaml(path)))
        except (OSError, yaml.YAMLError) as err:
            problems.append(f"{path.name}: cannot be read: {err}")
    return files, problems


def check_schema(folder: Path) -> list[str]:
    import jsonschema  # only for lint: it costs start-up time

    validator = jsonschema.Draft202012Validator(json.loads((folder / "schema.json").read_text(encoding="utf-8")))
    files, problems = _read_signature_files(folder)
    for path, data in files:
        for error in validator.iter_errors(data):
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            problems.append(f"{path.name}: {where}: {error.message}")
        if isinstance(data, dict) and data.get("id") != path.stem:
            problems.append(f"{path.name}: id {data.get('id')!r} differs from the file name")
    return problems


def own_words_lines(pattern: str, chars: int = _SELF_LINE_CHARS) -> list[str]:
    """Long lines made of the pattern's own words, each repeated (see _WORD)."""
    words = dict.fromkeys(w.lower() for w in _WORD.findall(pattern))
    return [(" ".join([w] * (chars // (len(w) + 1)))) + " é" for w in list(words)[:12]]


def _seconds(pattern: regex.Pattern, text: str, timeout: float) -> float | None:
    """The processor time one search takes (other work on a busy machine does not count in it, as it would
    in wall time); None past ``timeout`` (wall time, the regex module's own limit)."""
    started = time.thread_time()
    try:
        pattern.search(text, timeout=timeout)
    except TimeoutError:
        return None
    return time.thread_time() - started


def quadratic(pattern: regex.Pattern) -> str | None:
    """The word whose repeated line the pattern reads in time growing with the square of the line's
    length (measured at two lengths: a fixed limit would also catch slow linear patterns). Four times
    the length takes about 4x as long for a linear pattern and 16x for a quadratic one; the best of
    three tries at each length keeps a busy machine from making a linear one look quadratic, and the short line
    measured again before a linear verdict keeps it from making a quadratic one look linear."""
    for short, long in zip(own_words_lines(pattern.pattern), own_words_lines(pattern.pattern, 4 * _SELF_LINE_CHARS)):
        first = _TIMEOUT
        for _ in range(3):
            took = _seconds(pattern, short, _TIMEOUT)
            if took is None:
                return short.split(" ", 1)[0]
            first = min(first, took)
        if first < 0.01:  # too quick to measure, and to matter
            continue
        for _ in range(3):
            second = _seconds(pattern, long, max(_TIMEOUT, 20 * first))
            if second is None or second > 10 * first:
                continue
            # Linear by this ratio: unless the short line's tries were slowed by the machine, which the same tries
            # made right now, in the conditions the long one met, show.
            first = min([first, *(t for t in (_seconds(pattern, short, _TIMEOUT) for _ in range(3)) if t is not None)])
            if second <= 10 * first:
                break
        else:
            return short.split(" ", 1)[0]
    return None


def check_backtracking(db: Database) -> list[str]:
    patterns, problems = check_regexes(db)
    for sig_id, cond_id, pattern in patterns:
        if nested_repeat(pattern.pattern):
            problems.append(f"{sig_id}/{cond_id}: nested unbounded repeat in {pattern.pattern!r}")
            continue
        if word := quadratic(pattern):
            problems.append(f"{sig_id}/{cond_id}: time grows with the square of a line of its own word {word!r} "
                            f"repeated (a shape like X[^\\n]*Y tries every X to the line's end; anchor it: "
                            f"^(?>[^\\n]*?X)[^\\n]*?Y): {pattern.pattern[:120]!r}")
        for text in _ADVERSARIAL:
            try:
                pattern.search(text, timeout=_TIMEOUT)
            except TimeoutError:
                problems.append(f"{sig_id}/{cond_id}: over {_TIMEOUT}s on a {len(text)}-character line: {pattern.pattern!r}")
                break
    return problems


def check_ties(db: Database, folder: Path) -> list[str]:
    """No must-match example may leave two signatures tied on confidence and priority."""
    priority = {s.id: s.priority for s in db.signatures}
    problems = []
    for sig in db.signatures:
        for number, example in enumerate(sig.tests.get("match") or [], 1):
            try:
                text = example_text(example, sig.path)
            except ExampleError as err:
                problems.append(f"{sig.id} example {number}: {err}")
                continue
            result = analyze([Artifact(name="example", text=text, size=len(text))], db, folder)
            ranked = [d for d in result.diagnoses if d.klass != "unknown"]
            if len(ranked) >= 2 and ranked[0].score == ranked[1].score \
                    and priority[ranked[0].id] == priority[ranked[1].id]:
                problems.append(f"{sig.id} example {number}: {ranked[0].id} and {ranked[1].id} tie at "
                                f"{ranked[0].score} with the same priority")
    return problems


# a module offset, or an address (longer than an 8-digit exception code such as 0xC0000005)
_CASE_NUMBER = regex.compile(r"\+\s*0x[0-9a-fA-F]{3,}\b|\b0x[0-9a-fA-F]{9,}\b")
_TEMPLATE = regex.compile(r"\{\{.*?\}\}|\{%.*?%\}", regex.DOTALL)


def _signature_files(folder: Path) -> list[tuple[Path, dict]]:
    """The signature files of the folder that parse to a mapping (check_schema reports the others)."""
    return [(path, data) for path, data in _read_signature_files(folder)[0] if isinstance(data, dict)]


def check_texts(folder: Path) -> list[str]:
    """What a signature says applies to every case it matches: a module offset or an address quoted from
    the case it was written from reads, in another user's report, as a fact about theirs."""
    problems = []
    for path, data in _signature_files(folder):
        texts = [(name, data.get(name)) for name in ("title", "root_cause", "fix")]
        for number, w in enumerate(data.get("workarounds") or [], 1):
            if isinstance(w, dict):
                texts += [(f"workarounds/{number}/{name}", w.get(name)) for name in ("title", "commands", "risk", "note")]
        for where, text in texts:
            found = _CASE_NUMBER.search(_TEMPLATE.sub("", text)) if isinstance(text, str) else None
            if found:
                problems.append(f"{path.name}: {where}: quotes one case's offset or address ({found.group(0)!r}); "
                                "say it in general terms")
    return problems


def check_shared(folder: Path) -> list[str]:
    """Each shared condition is a condition by the schema (given the id and strength a use gives it) and some
    signature uses it: a definition no signature names is dead data."""
    import jsonschema  # only for lint: it costs start-up time

    try:
        shared = read_shared(folder)
    except SignatureError:
        return []  # the database's own problems say so
    schema = json.loads((folder / "schema.json").read_text(encoding="utf-8"))
    condition = jsonschema.Draft202012Validator({**schema["$defs"]["condition"], "$defs": schema["$defs"]})
    problems = []
    for name, body in shared.items():
        for error in condition.iter_errors({"id": name, "strength": 0.5, **body}):
            where = "/".join(str(p) for p in error.absolute_path) or "(top)"
            problems.append(f"{SHARED}: {name}: {where}: {error.message}")
    used: set[str] = set()
    for _, data in _signature_files(folder):
        if isinstance(data.get("conditions"), list):
            used.update(*(uses(c) for c in data["conditions"]))
    more = list(used)  # and what those use in their parts, however deep
    while more:
        for inner in uses(shared.get(more.pop(), {})) - used:
            used.add(inner)
            more.append(inner)
    problems += [f"{SHARED}: {name}: no signature uses it" for name in shared if name not in used]
    return problems


def lint(db: Database, folder: Path) -> list[str]:
    return [*db.problems, *check_schema(folder), *check_shared(folder), *check_texts(folder), *check_backtracking(db),
            *check_ties(db, folder)]
