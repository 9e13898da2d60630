"""Rank the signatures that fit a Case and turn the best into diagnoses with filled-in texts.

Texts are filled in when first read (``Diagnosis.pending``): most candidates are never shown.

A signature that matched nothing is not a candidate: it takes one of its anchor conditions
(strength at least the database's ``anchor_strength``, not weak evidence) to make one. The
confidence of a candidate comes from the conditions that held (match/confidence.py: the
hand-set strengths as a prior, weights fitted on real cases on top); a line a person wrote in
prose counts half. Two numbers come of it: the ``score`` from the hand-set strengths alone,
which ranks the candidates and decides whether any is sure enough (below the database
threshold the answer is ``unknown`` with what to send next; a class-level fallback ranks below
any specific signature that reaches it), so that each signature's own examples pin its
behaviour; and the ``confidence`` a report shows, the probability that such a diagnosis is
right, fitted on the labelled real cases.
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING

from triage import deadline
from triage.errors import internal
from triage.lazy import lazy_regex
from triage.match.conditions import SEPARATE_READS, Hit, Lines, evaluate
from triage.match.confidence import confidence, score
from triage.match.database import Database, Signature
from triage.model import Case, Diagnosis, Evidence, Workaround
from triage.resources import cache_dir

if TYPE_CHECKING:
    from jinja2.sandbox import SandboxedEnvironment

    from triage.match.texts import Texts


@functools.cache
def _environment() -> SandboxedEnvironment:
    """The one sandbox signature texts render in, made on first use. A template's name is its text, so the
    loader needs no table of sources and compiled templates are cached on disk across runs (by a digest
    of the name); the environment keeps no other state than Jinja's bounded cache of loaded templates.
    Jinja is imported here: a case whose texts hold no placeholder, reported as JSON, needs none."""
    from jinja2 import (
        FileSystemBytecodeCache,
        FunctionLoader,
        Undefined,
        pass_eval_context,
    )
    from jinja2.filters import do_join
    from jinja2.sandbox import SandboxedEnvironment

    class _Placeholder(Undefined):
        """A fact the case does not have shows as ``<name>`` for the user to fill in."""

        def __str__(self) -> str:
            return f"<{self._undefined_name}>"

    @pass_eval_context
    def _join(eval_ctx, value, d: str = "", attribute=None):
        """Jinja's ``join``, keeping the marks of the case's values it joins."""
        return do_join(eval_ctx, [str(v) if isinstance(v, _FromCase) else v for v in value], d, attribute)

    folder = cache_dir("templates")
    env = SandboxedEnvironment(
        undefined=_Placeholder,
        autoescape=False,
        loader=FunctionLoader(lambda name: (name, None, lambda: True)),
        bytecode_cache=FileSystemBytecodeCache(str(folder)) if folder else None,
    )
    env.filters["join"] = _join
    return env


def render(text: str, context: dict, prose: bool = True, texts: Texts | None = None) -> str:
    """Fill a signature text with the case's facts; prose is re-flowed into paragraphs, commands are not.

    In commands (``prose=False``) every value from the case enters shell-quoted (``_quoted``); the result
    is a ``Commands`` string whose ``from_input`` names the case's values it holds. A text that ``texts``
    translated is filled by its Python translation (match/texts.py), any other by Jinja.
    """
    source = text
    if "{" in text:
        values = context if prose else _from_case(context)
        filled = texts.fill(text, values) if texts is not None else None
        text = _environment().get_template(text).render(values) if filled is None else filled
    if prose:
        paragraphs = _PARAGRAPHS.split(text.strip())
        text = "\n\n".join(" ".join(p.split()) for p in paragraphs)
        return text.strip()
    return _quoted(text, source, texts)


def _asked(entries: list, case: Case, db: Database) -> list[str]:
    """The texts of the ``ask_for`` entries whose kind of input the case lacks (chosen now, rendered later)."""
    out = []
    for entry in entries:
        kind, text = (entry, db.ask_for.get(entry, entry)) if isinstance(entry, str) else (
            entry.get("input", ""), entry.get("text", ""))
        if kind not in case.inputs:
            out.append(text)
    return out


def _rendered(texts: list[str], context: dict, translated: Texts) -> list[str]:
    return list(dict.fromkeys(render(text, context, texts=translated) for text in texts))


# --- commands: what a case puts into them enters shell-quoted, and makes them unverified ---------------------

_MARK, _SEP, _END = "\ue000", "\ue001", "\ue002"  # private-use characters around a case value: MARK name SEP value END
# Compiled when first used, and kept between runs (triage.lazy): ``regex`` parses a pattern in Python.
_MARKS = lazy_regex(r"[\ue000-\ue002]")
_HIDDEN = lazy_regex(r"[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\ue000-\ue002]")
_SAFE = lazy_regex(r"[A-Za-z0-9._/:=+@%,-]+")  # a plain token: the same in any shell quoting state
_CMD_SAFE = lazy_regex(r"[A-Za-z0-9._/:=+@,\\-]+")  # cmd.exe: no %, backslashes are path separators
_CMD = lazy_regex(r"(?im)^[ \t]*(?:(?:rem|setx|ren|findstr|xcopy)\b|cd[ \t]+/d\b|set[ \t]+\w+=)")  # a Windows cmd text
_MARKED_VALUE = lazy_regex(r"\ue000[^\ue002]*\ue002?")
_PARAGRAPHS = lazy_regex(r"\n\s*\n")


class Commands(str):
    """Rendered workaround commands; ``from_input`` names the case's values in them (empty: none)."""

    from_input: tuple[str, ...] = ()


def _visible(value: str) -> str:
    """Control and invisible format characters (bidi overrides, zero-width, newlines) written as escapes."""
    return _HIDDEN.sub(lambda m: f"\\u{ord(m[0]):04x}" if ord(m[0]) < 0x10000 else f"\\U{ord(m[0]):08x}", value)


class _FromCase(str):
    """A value from the case while commands render: ``str()`` (output, ``~``) wraps it in marks that ``_quoted``
    turns into quoting; comparisons and tests see the plain value, string methods keep the mark."""

    fact = ""

    def __str__(self) -> str:
        return f"{_MARK}{self.fact}{_SEP}{str.__str__(self)}{_END}"

    def __format__(self, spec: str) -> str:
        return format(str(self), spec)

    def __add__(self, other: object) -> str:
        return str(self) + str(other)

    def __radd__(self, other: object) -> str:
        return str(other) + str(self)


def _keep(name: str):
    method = getattr(str, name)

    def kept(self: _FromCase, *args, **kwargs):
        return _tainted(self.fact, method(self, *args, **kwargs))

    kept.__name__ = name
    return kept


for _name in ("__getitem__", "__mod__", "replace", "strip", "lstrip", "rstrip", "lower", "upper", "title",
              "capitalize", "casefold", "swapcase", "removeprefix", "removesuffix", "split", "rsplit", "partition",
              "rpartition", "splitlines", "center", "ljust", "rjust", "zfill", "expandtabs", "translate"):
    setattr(_FromCase, _name, _keep(_name))


def _tainted(fact: str, value):
    if isinstance(value, str):
        out = _FromCase(_visible(str.__str__(value)))
        out.fact = fact
        return out
    if isinstance(value, (list, tuple)):
        return type(value)(_tainted(fact, v) for v in value)
    return value


def _from_case(context: dict) -> dict:
    return {name: _tainted(name, value) for name, value in context.items()}


def _sh(value: str) -> str:
    return value if _SAFE.fullmatch(value) else "'" + value.replace("'", "'\"'\"'") + "'"


def _cmd(value: str, quoted: bool) -> str:
    """For cmd.exe: inside double quotes, with no quote of its own and % ! outside them, caret-escaped."""
    if _CMD_SAFE.fullmatch(value):
        return value
    inner = value.replace('"', "").replace("%", '"^%"').replace("!", '"^!"')
    return inner if quoted else f'"{inner}"'


def _quote_line(line: str, windows: bool, names: list[str]) -> str:
    """One line with each marked value quoted for the quoting state it stands in (POSIX sh, or cmd.exe)."""
    out: list[str] = []
    state, stack, i = "", [], 0  # state: "" plain, "'" or '"' quoted, "#" comment; stack: open $( ( `
    while i < len(line):
        c = line[i]
        if c == _MARK:
            sep, end = line.find(_SEP, i), line.find(_END, i)
            if not i < sep < end or _MARKS.search(line, sep + 1, end) or (out and out[-1] == "\x00"):
                raise ValueError("a case value cut apart, or escaped, in a command template")
            names.append(line[i + 1:sep])
            value = line[sep + 1:end]
            if windows:
                out.append(_cmd(value, state == '"'))
            elif _SAFE.fullmatch(value) or state in ("", "#"):
                out.append(_sh(value))
            else:  # close the template's quotes, the value in its own, reopen them
                out.append(state + _sh(value) + state)
            i = end + 1
            continue
        if c in (_SEP, _END):
            raise ValueError("a case value cut apart in a command template")
        nxt = line[i + 1:i + 2]
        out.append(c)
        i += 1
        if windows:
            if c == '"':
                state = "" if state else '"'
            elif c == "^" and not state:
                out.append("\x00" if nxt == _MARK else nxt)  # a caret escaping a value: refused above
                i += nxt != _MARK
        elif state == "#":
            pass
        elif state == "'":
            state = "" if c == "'" else state
        elif c == "\\":
            out.append("\x00" if nxt == _MARK else nxt)  # a backslash escaping a value: refused above
            i += nxt != _MARK
        elif c == "$" and nxt == "(":  # a command substitution quotes afresh, even within double quotes
            stack.append((")", state))
            out.append(nxt)
            state, i = "", i + 1
        elif c == "`":
            if stack and stack[-1][0] == "`" and not state:
                state = stack.pop()[1]
            else:
                stack.append(("`", state))
                state = ""
        elif c == ")" and not state and stack and stack[-1][0] == ")":
            state = stack.pop()[1]
        elif state == '"':
            state = "" if c == '"' else state
        elif c in "'\"":
            state = c
        elif c == "(":
            stack.append((")", state))
        elif c == "#" and (i == 1 or line[i - 2].isspace()):
            state = "#"
    return "".join(out)


def _quoted(text: str, source: str, texts: Texts | None) -> Commands:
    """Filled commands with every marked case value quoted, and the names of those values."""
    names: list[str] = []
    windows = _CMD.search(_MARKED_VALUE.sub("\ue000", text)) is not None  # by the template's words
    try:
        out = Commands("\n".join(_quote_line(line, windows, names) for line in text.split("\n")).strip())
    except ValueError:  # a template cut a value apart: show it unfilled rather than half-quoted
        out = Commands(render(source, {}, prose=False, texts=texts))
        names.append("(values left out)")
    out.from_input = tuple(dict.fromkeys(names))
    return out


def _workarounds(sig: Signature, context: dict, texts: Texts | None = None) -> list[Workaround]:
    out = []
    for w in sig.workarounds:
        commands = render(str(w.get("commands", "")), context, prose=False, texts=texts)
        note = render(str(w.get("note", "")), context, texts=texts)
        used = getattr(commands, "from_input", ())
        if used:  # a tested command is no longer the one tested once the case's own values are in it
            note = (f"{note} " if note else "") + (
                "Shown as untested: these commands hold values read from the input (" + ", ".join(used)
                + "), shell-quoted where needed; check them before running.")
        verified = bool(w.get("verified", False)) and not used
        out.append(Workaround(
            title=render(str(w.get("title", "")), context, texts=texts),
            commands=str(commands),
            verified=verified,
            risk=render(str(w.get("risk", "")), context, texts=texts),
            note=note,
            verified_by=str(w.get("verified_by", "")) if verified else "",
            verified_link=str(w.get("verified_link", "")) if verified else "",
        ))
    return out


def held(sig: Signature, hits: dict[str, Hit]) -> dict[str, tuple[float, float, bool]]:
    """The conditions of ``sig`` that held: id -> (strength, factor, against), the confidence model's input."""
    return {c.id: (c.strength, hits[c.id].factor, c.against) for c in sig.conditions if c.id in hits}


def _diagnose(sig: Signature, hits: dict[str, Hit], case: Case, db: Database, base: dict) -> Diagnosis:
    evidence: list[Evidence] = []
    captures: dict[str, str] = {}
    for cond in sig.conditions:
        hit = hits.get(cond.id)
        if hit and not cond.against:
            evidence.extend(hit.evidence)
            captures.update(hit.captures)
    context = {**base, **captures}
    missing = [f"{c.description or c.id}" + ("" if c.input in case.inputs or c.input == "text" else f" (no {c.input} input)")
               for c in sig.conditions if c.id not in hits and not c.against]
    asks = _asked(sig.ask_for, case, db)
    conditions = held(sig, hits)
    return Diagnosis.pending(
        {
            "title": lambda: render(sig.title, context, texts=db.texts),
            "root_cause": lambda: render(sig.root_cause, context, texts=db.texts),
            "workarounds": lambda: _workarounds(sig, context, db.texts),
            "fix": lambda: render(sig.fix, context, texts=db.texts),
            "ask_for": lambda: _rendered(asks, context, db.texts),
        },
        id=sig.id,
        klass=sig.klass,
        confidence=round(score(conditions), 2),  # the answer's is fitted in match()
        score=round(score(conditions), 2),
        evidence=_dedupe(evidence),
        matched=[c.description or c.id for c in sig.conditions if c.id in hits and not c.against],
        against=[c.description or c.id for c in sig.conditions if c.id in hits and c.against],
        missing=missing,
        references=sig.references,
        status=sig.status,
        captures=captures,
    )


def _dedupe(evidence: list[Evidence]) -> list[Evidence]:
    seen: set[tuple[str, int]] = set()
    out = []
    for e in evidence:
        if (e.artifact, e.line) not in seen:
            seen.add((e.artifact, e.line))
            out.append(e)
    return out


def _context(case: Case) -> dict:
    """What signature texts may use: every fact, and the fault as ``fault_*``."""
    context = case.flat_facts()
    fault = case.fault
    if fault:
        for name in ("kind", "signal", "code", "code_name", "module", "symbol", "access"):
            if getattr(fault, name):
                context[f"fault_{name}"] = getattr(fault, name)
        for name in ("offset", "address"):
            if getattr(fault, name) is not None:
                context[f"fault_{name}"] = f"0x{getattr(fault, name):x}"
    return context


def _evaluate(sig: Signature, conditions: list, case: Case, lines: Lines) -> dict[str, Hit]:
    hits = {}
    for cond in conditions:
        try:
            hit = evaluate(cond, case, lines)
        except deadline.OutOfTime:
            raise
        except Exception as err:  # a bad condition must not stop the triage; it is a bug all the same
            case.warnings.append(internal(f"signature {sig.id}, condition {cond.id}", err))
            continue
        if hit:
            hits[cond.id] = hit
    return hits


def candidates(case: Case, db: Database) -> list[tuple[Signature, dict[str, Hit]]]:
    """The signatures one of whose anchors holds, each with every condition that held. When the
    analysis's time runs out, the signatures tried so far (a warning says how many)."""
    lines = Lines(case, db.prefilters)
    os_name = case.value("os")
    found: list[tuple[Signature, dict[str, Hit]]] = []
    trying: list[Signature] = db.signatures  # until the anchors' lines are known, any of them
    tried = 0
    try:
        anchored = lines.anchored()
        trying = db.trying(anchored)
        for tried, sig in enumerate(trying):
            deadline.check("matching")
            if not sig.applies(os_name, case.inputs):
                continue
            tried_anchors = [anchor for anchor, need in zip(sig.anchors, sig.anchor_needs)
                             if need is None or not anchored.isdisjoint(need)]
            if hits := _evaluate(sig, tried_anchors, case, lines):
                found.append((sig, hits))
        tried = len(trying)
        if sum(sig.log_support for sig, _ in found) > SEPARATE_READS:  # many candidates: one pass of all their groups
            lines.read_together()
        for sig, hits in found:  # only a candidate needs its context, captures and counter-evidence
            deadline.check("matching")
            hits.update(_evaluate(sig, sig.support, case, lines))
    except deadline.OutOfTime:
        budget = deadline.current()
        unfinished = f"{len(trying) - tried} of {len(trying)} signatures not tried, candidates' other conditions"
        case.warnings.append(budget.warning("matching", unfinished) if budget else f"matching stopped: {unfinished}")
    return found


def rank(found: list[tuple[Signature, dict[str, Hit]]], threshold: float) -> list[tuple[Signature, dict[str, Hit], float]]:
    """Candidates best first, with their scores: a specific signature at or above the threshold
    outranks every class-level fallback; then by score, priority, id."""
    scored = [(sig, hits, score(held(sig, hits))) for sig, hits in found]
    scored.sort(key=lambda c: (c[0].fallback or round(c[2], 2) < threshold, -round(c[2], 2), -c[0].priority, c[0].id))
    return scored


def match(case: Case, db: Database) -> list[Diagnosis]:
    """All candidate diagnoses, best first; ``unknown`` first when none is confident enough."""
    base = _context(case)
    ranked = rank(candidates(case, db), db.threshold)
    diagnoses = [_diagnose(sig, hits, case, db, base) for sig, hits, _ in ranked]
    if not diagnoses or diagnoses[0].score < db.threshold:
        diagnoses.insert(0, _unknown(case, db, base, diagnoses))
    else:
        sig, hits, _ = ranked[0]
        runner_up = ranked[1][2] if len(ranked) > 1 else 0.0
        diagnoses[0].confidence = round(confidence(db.weights, sig.id, held(sig, hits), runner_up), 2)
    return diagnoses


def _unknown(case: Case, db: Database, base: dict, candidates: list[Diagnosis]) -> Diagnosis:
    context = dict(base, candidates=list(candidates))  # a copy: the answer is put in front of the list
    own = _asked(list(db.unknown.get("ask_for", [])), case, db)
    closest = candidates[:2]

    def ask_for() -> list[str]:
        asks = _rendered(own, context, db.texts)
        for candidate in closest:
            asks.extend(a for a in candidate.ask_for if a not in asks)
        return asks

    return Diagnosis.pending(
        {
            "title": lambda: render(str(db.unknown.get("title", "No known failure matched")), context, texts=db.texts),
            "root_cause": lambda: render(str(db.unknown.get("root_cause", "")), context, texts=db.texts),
            "ask_for": ask_for,
        },
        id="unknown",
        klass="unknown",
        confidence=0.0,
    )
