"""Run the examples each signature carries (``tests: match / no_match``), like Semgrep's rule tests.

A must-match example passes when its signature is the top diagnosis (the whole database
runs, so a signature that steals another's case fails), its evidence score at or above the database threshold,
with every expected capture; a must-not-match example passes when its signature stays below
the threshold.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from triage.match.database import Database
from triage.model import Artifact
from triage.pipeline import analyze


@dataclass
class Outcome:
    signature: str
    kind: str
    name: str
    passed: bool
    reason: str = ""


class ExampleError(Exception):
    """An example's file cannot be read."""


def example_text(example: dict, sig_path: Path) -> str:
    """The example's ``input``, or the text of its ``file`` (relative to the signature file)."""
    if "file" not in example:
        return str(example.get("input", ""))
    try:
        return (sig_path.parent / str(example["file"])).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ExampleError(f"example file {example['file']} cannot be read ({getattr(err, 'strerror', None) or err}); "
                           "keep example files inside the signature folder, or inline the text as input") from None


def run_examples(db: Database, folder: Path) -> list[Outcome]:
    outcomes = []
    for sig in db.signatures:
        for kind in ("match", "no_match"):
            for number, example in enumerate(sig.tests.get(kind) or [], 1):
                name = str(example.get("name", f"example {number}"))
                try:
                    text = example_text(example, sig.path)
                except ExampleError as err:
                    outcomes.append(Outcome(sig.id, kind, name, False, str(err)))
                    continue
                result = analyze([Artifact(name=f"{sig.id}#{kind}{number}", text=text, size=len(text))], db, folder)
                mine = next((d for d in result.diagnoses if d.id == sig.id), None)
                confidence = mine.score if mine else 0.0  # the decision rests on the evidence score
                if kind == "match":
                    top = result.top
                    if top.id != sig.id:
                        reason = f"the top diagnosis is {top.id} ({top.score}), not this signature ({confidence})"
                    else:
                        reason = "" if confidence >= db.threshold else f"confidence {confidence} below {db.threshold}"
                    for key, want in (example.get("captures") or {}).items():
                        got = (mine.captures.get(key) if mine else None) or result.case.value(key)
                        if str(got) != str(want) and not reason:
                            reason = f"capture {key}: expected {want!r}, got {got!r}"
                else:
                    reason = "" if confidence < db.threshold else f"matched with confidence {confidence}"
                outcomes.append(Outcome(sig.id, kind, name, not reason, reason))
    return outcomes
