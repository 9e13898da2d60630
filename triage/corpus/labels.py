"""The labels of real-world cases: their fields, their checks, and the fixed design/held-out split.

A real-world case is a folder holding what a user posted (machine output only) and a
``label.yaml`` saying what the thread concluded. The split of cases into a design part and a
held-out part depends only on the thread the case came from (a hash of its normalised link),
so that nobody picks which cases are held out, and two cases from one thread always fall on
the same side. A held-out case somebody has read is moved to the design part by naming its
thread in ``corpus/realworld/SEEN`` (one link a line).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLASSES = (
    "device-libs-missing", "no-code-object", "math-lib-arch-missing", "code-object-load-fault",
    "gpu-memory-fault", "gpu-hang-reset", "out-of-memory", "no-device-or-permission",
    "unsupported-gpu", "runtime-mismatch", "runtime-crash", "outside-gpu-stack",
)
NEGATIVE = "outside-gpu-stack"  # a failure outside the AMD GPU stack: right when the tool names no GPU-stack class
NOT_GPU_STACK = frozenset({NEGATIVE, "unknown"})
CONFIDENCE = ("high", "medium", "low")
ANSWERABLE = ("yes", "partly", "no")
ESTABLISHED_BY = ("maintainer", "reporter", "maintainer+reporter", "contributor+reporter", "unknown")
OSES = ("linux", "windows", "wsl", "macos", "unknown")
HOLDOUT_EVERY = 3  # about a third of the threads are held out
REQUIRED = ("class", "source", "conclusion", "established_by", "label_confidence", "answerable")

_GITHUB = re.compile(r"github\.com/([\w.-]+)/([\w.-]+)/(?:issues|pull|discussions)/(\d+)", re.IGNORECASE)


class LabelError(ValueError):
    """A label file that does not say what a label must (the message names the file and the field)."""


@dataclass(frozen=True)
class Label:
    folder: Path
    klass: str
    source: str
    conclusion: str
    established_by: str
    confidence: str
    answerable: str
    accept: tuple[str, ...] = ()
    facts: dict[str, Any] = field(default_factory=dict)  # gpu_arch, gpu_name, os, rocm, app, date

    @property
    def thread(self) -> str:
        return thread_key(self.source)

    @property
    def negative(self) -> bool:
        return self.klass == NEGATIVE

    def right(self, got: str) -> bool:
        """Is ``got`` (the tool's top class) an acceptable answer for this case?"""
        if got == self.klass or got in self.accept:
            return True
        return self.negative and got in NOT_GPU_STACK


def thread_key(url: str) -> str:
    """``owner/repo#n`` for a GitHub issue, pull request or discussion (as ../shared/tools/reserved.py
    spells it); otherwise the link without scheme, query, fragment or trailing slash, lower case."""
    m = _GITHUB.search(url)
    if m:
        owner, repo, number = m.groups()
        return f"{owner}/{repo}#{int(number)}".lower()
    bare = re.sub(r"^[a-z]+://", "", url.strip().lower())
    return re.split(r"[?#]", bare, maxsplit=1)[0].rstrip("/")


# ROCm's repositories moved between organisations, and the ROCm/ROCm tracker is also kept as ROCm/legacy-rocm-build:
# one thread, several links. The held-out split keeps hashing the link as written (changing it would move cases
# between parts); these names only serve to find a thread twice, or reserved under another of its names.
_ROCM_OWNERS = ("rocm", "rocmsoftwareplatform", "radeonopencompute", "rocm-developer-tools")
_ROCM_TRACKER = ("rocm", "legacy-rocm-build")


def thread_names(url: str) -> tuple[str, ...]:
    """Every ``owner/repo#n`` under which the thread behind ``url`` may be linked, its own key first."""
    key = thread_key(url)
    m = re.fullmatch(r"([\w.-]+)/([\w.-]+)#(\d+)", key)
    if not m or m.group(1) not in _ROCM_OWNERS:
        return (key,)
    _, repo, number = m.groups()
    repos = _ROCM_TRACKER if repo in _ROCM_TRACKER else (repo,)
    others = sorted({f"{o}/{r}#{number}" for o in _ROCM_OWNERS for r in repos} - {key})
    return (key, *others)


def same_thread(url: str) -> str:
    """One key for all the links of a thread (see thread_names), to find a case twice."""
    return min(thread_names(url))


def held_out(url: str, seen: frozenset[str] = frozenset()) -> bool:
    """Whether the thread behind ``url`` belongs to the held-out part (fixed by its hash)."""
    key = thread_key(url)
    if key in seen:
        return False
    return int(hashlib.sha256(key.encode()).hexdigest(), 16) % HOLDOUT_EVERY == 0


def read_seen(corpus: Path) -> frozenset[str]:
    """The threads of held-out cases that somebody read and so moved to the design part."""
    file = corpus / "SEEN"
    if not file.is_file():
        return frozenset()
    words = (line.split() for line in file.read_text(encoding="utf-8").splitlines())
    return frozenset(thread_key(w[0]) for w in words if w and not w[0].startswith("#"))


def _text(data: dict[str, Any], name: str, file: Path, allowed: tuple[str, ...] | None = None) -> str:
    value = data.get(name)
    if isinstance(value, bool):  # YAML 1.1 reads a bare yes / no as a boolean
        value = "yes" if value else "no"
    if value is None or str(value).strip() == "":
        raise LabelError(f"{file}: `{name}` is missing")
    value = str(value).strip()
    if allowed is not None and value not in allowed:
        raise LabelError(f"{file}: `{name}: {value}` is not one of {', '.join(allowed)}")
    return value


def read_label(folder: Path, strict: bool = True) -> Label:
    """The label of one case folder. ``strict`` checks every field of the project's format; the
    older real-world set (../shared/realworld) lacks some and is read with ``strict=False``."""
    import yaml

    file = folder / "label.yaml"
    try:
        data = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise LabelError(f"{file}: cannot be read as YAML ({exc})") from None
    if not isinstance(data, dict):
        raise LabelError(f"{file}: a label is a mapping of fields")
    klass = _text(data, "class", file, CLASSES)
    source = _text(data, "source", file)
    accept = data.get("accept") or []
    if isinstance(accept, str):
        accept = [accept]
    bad = [a for a in accept if a not in CLASSES or a == klass]
    if bad and not strict:  # the older set says `accept: unknown` where the project says `answerable: no`
        accept, bad = [a for a in accept if a not in bad], []
    if bad:
        raise LabelError(f"{file}: `accept` holds {bad}, which is not another class of docs/classes.md")
    facts = {name: data.get(name) for name in ("gpu_arch", "gpu_name", "os", "rocm", "app", "date")
             if data.get(name) not in (None, "")}
    if not strict:
        return Label(folder, klass, source, str(data.get("root_cause") or data.get("conclusion") or ""),
                     "", str(data.get("label_confidence") or ""), "", tuple(accept), facts)
    if not _GITHUB.search(source) and not source.startswith("https://"):
        raise LabelError(f"{file}: `source` must be the https link of the public thread")
    if facts.get("os") is not None and facts["os"] not in OSES:
        raise LabelError(f"{file}: `os: {facts['os']}` is not one of {', '.join(OSES)}")
    inputs = [p for p in folder.iterdir() if p.is_file() and p.name != "label.yaml"]
    if not inputs or not any(p.stat().st_size for p in inputs):
        raise LabelError(f"{folder}: no input file beside label.yaml")
    return Label(folder, klass, source, _text(data, "conclusion", file),
                 _text(data, "established_by", file, ESTABLISHED_BY),
                 _text(data, "label_confidence", file, CONFIDENCE),
                 _text(data, "answerable", file, ANSWERABLE), tuple(accept), facts)


def case_folders(corpus: Path) -> list[Path]:
    """The case folders of a real-world corpus (those holding a label.yaml), in name order."""
    return sorted(p.parent for p in corpus.glob("*/label.yaml"))


def design_labels(corpus: Path) -> list[Label]:
    """The labels of a real-world corpus's design part, in name order: what a tool that fits or measures on the
    design part may read (a held-out case is left out by its thread's hash and SEEN alone)."""
    seen = read_seen(corpus)
    labels = (read_label(folder) for folder in case_folders(corpus))
    return [label for label in labels if not held_out(label.source, seen)]
