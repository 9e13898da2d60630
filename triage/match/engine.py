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

import hashlib

import regex
from jinja2 import FileSystemBytecodeCache, FunctionLoader, Undefined
from jinja2.sandbox import SandboxedEnvironment

from triage.match.conditions import Hit, Lines, evaluate
from triage.match.confidence import confidence, score
from triage.match.database import Database, Signature
from triage.model import Case, Diagnosis, Evidence, Workaround
from triage.resources import cache_dir


# Candidates with other log conditions past which those of all signatures are read in one pass.
_MANY_CANDIDATES = 6


class _Placeholder(Undefined):
    """A fact the case does not have shows as ``<name>`` for the user to fill in."""

    def __str__(self) -> str:
        return f"<{self._undefined_name}>"


_SOURCES: dict[str, str] = {}


def _environment() -> SandboxedEnvironment:
    """Signature texts are templates named by their hash, so compiled ones are cached on disk across runs."""
    folder = cache_dir("templates")
    return SandboxedEnvironment(
        undefined=_Placeholder,
        autoescape=False,
        loader=FunctionLoader(lambda name: (_SOURCES[name], None, lambda: True)),
        bytecode_cache=FileSystemBytecodeCache(str(folder)) if folder else None,
    )


_ENV = _environment()


def render(text: str, context: dict, prose: bool = True) -> str:
    """Fill a signature text with the case's facts; prose is re-flowed into paragraphs, commands are not."""
    if "{" in text:
        name = hashlib.sha1(text.encode()).hexdigest()
        _SOURCES[name] = text
        text = _ENV.get_template(name).render(context)
    if prose:
        paragraphs = regex.split(r"\n\s*\n", text.strip())
        text = "\n\n".join(" ".join(p.split()) for p in paragraphs)
    return text.strip()


def _asked(entries: list, case: Case, db: Database) -> list[str]:
    """The texts of the ``ask_for`` entries whose kind of input the case lacks (chosen now, rendered later)."""
    out = []
    for entry in entries:
        kind, text = (entry, db.ask_for.get(entry, entry)) if isinstance(entry, str) else (
            entry.get("input", ""), entry.get("text", ""))
        if kind not in case.inputs:
            out.append(text)
    return out


def _rendered(texts: list[str], context: dict) -> list[str]:
    return list(dict.fromkeys(render(text, context) for text in texts))


def _workarounds(sig: Signature, context: dict) -> list[Workaround]:
    return [
        Workaround(
            title=render(str(w.get("title", "")), context),
            commands=render(str(w.get("commands", "")), context, prose=False),
            verified=bool(w.get("verified", False)),
            risk=render(str(w.get("risk", "")), context),
            note=render(str(w.get("note", "")), context),
        )
        for w in sig.workarounds
    ]


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
            "title": lambda: render(sig.title, context),
            "root_cause": lambda: render(sig.root_cause, context),
            "workarounds": lambda: _workarounds(sig, context),
            "fix": lambda: render(sig.fix, context),
            "ask_for": lambda: _rendered(asks, context),
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
        except Exception as err:  # a bad condition must not stop the triage
            case.warnings.append(f"signature {sig.id}, condition {cond.id} failed: {type(err).__name__}: {err}")
            continue
        if hit:
            hits[cond.id] = hit
    return hits


def candidates(case: Case, db: Database) -> list[tuple[Signature, dict[str, Hit]]]:
    """The signatures one of whose anchors holds, each with every condition that held."""
    lines = Lines(case, db.prefilters)
    os_name = case.value("os")
    anchored = lines.anchored()
    found = []
    for sig in db.signatures:
        if (sig.log_anchors_only and anchored.isdisjoint(sig.anchor_patterns)) or not sig.applies(os_name, case.inputs):
            continue  # no anchor can hold
        if hits := _evaluate(sig, sig.anchors, case, lines):
            found.append((sig, hits))
    if sum(sig.log_support for sig, _ in found) > _MANY_CANDIDATES:
        lines.read_together()
    for sig, hits in found:  # only a candidate needs its context, captures and counter-evidence
        hits.update(_evaluate(sig, sig.support, case, lines))
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
        asks = _rendered(own, context)
        for candidate in closest:
            asks.extend(a for a in candidate.ask_for if a not in asks)
        return asks

    return Diagnosis.pending(
        {
            "title": lambda: render(str(db.unknown.get("title", "No known failure matched")), context),
            "root_cause": lambda: render(str(db.unknown.get("root_cause", "")), context),
            "ask_for": ask_for,
        },
        id="unknown",
        klass="unknown",
        confidence=0.0,
    )
