"""A stack hash: the crash's informative frames, normalized, so one bug seen a thousand times is one group.

In the spirit of Mozilla's signature generation (siggen): each frame becomes ``module!symbol``
(or ``module+0xOFFSET`` when it has no trustworthy name), frames that say nothing about the
crash (libc's abort path, exception dispatch, the runtime's own error reporting; the lists
in ``siglists/``) are skipped, and the first ``DEPTH`` frames left are hashed. A name from the
nearest export is a guess, so such a frame counts by its offset. A case with no stack but a
faulting module and offset (a kernel ``segfault`` line) hashes that one frame.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

from triage.model import Case, Frame

DEPTH = 5
SIGLISTS = Path(__file__).resolve().parent / "siglists"

_PARAMS = re.compile(r"\((?!anonymous namespace\)).*$")
_SYMBOL_OFFSET = re.compile(r"\s*\+\s*(?:0x)?[0-9a-fA-F]+$")
_SO_VERSION = re.compile(r"\.so(?:\.\d+)+$")


def read_list(name: str) -> list[str]:
    """The patterns of one skip list: one per line, without blanks and ``#`` comments."""
    text = (SIGLISTS / name).read_text(encoding="utf-8")
    return [line.strip() for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")]


@lru_cache(maxsize=1)
def _skips() -> tuple[re.Pattern, re.Pattern]:
    symbols = re.compile("|".join(f"(?:{p})" for p in read_list("skip_symbols.txt")))
    modules = re.compile("|".join(f"(?:{p})" for p in read_list("skip_modules.txt")), re.IGNORECASE)
    return symbols, modules


def module_name(module: str) -> str:
    """A module's base name: ``/opt/rocm/lib/libamdhip64.so.7`` -> ``libamdhip64.so.7``."""
    return re.split(r"[/\\]", module.strip())[-1]


def symbol_name(symbol: str) -> str:
    """``amd::Symbol::getDeviceKernel(amd::Device const&) + 0x10`` -> ``amd::Symbol::getDeviceKernel``."""
    name = _SYMBOL_OFFSET.sub("", symbol.strip())
    return _PARAMS.sub("", name).strip() or name


def normalize(frame: Frame) -> str | None:
    """One frame as ``module!symbol`` / ``module+0xOFFSET``, or None when it says nothing."""
    symbols, modules = _skips()
    module = module_name(frame.module) if frame.module else None
    symbol = frame.symbol if frame.symbol and frame.symbol_source != "nearest-export" else None
    if symbol and symbol.strip() not in ("??", "n/a"):
        name = symbol_name(symbol)
        if symbols.fullmatch(name):
            return None
        return f"{_SO_VERSION.sub('.so', module)}!{name}" if module else name
    if module and frame.offset is not None:
        if modules.fullmatch(module):
            return None
        return f"{module}+0x{frame.offset:x}"
    return None


def crash_stack(case: Case) -> list[Frame]:
    """The frames of the crashing thread: the stack a parser marked crashing, else the first one."""
    stacks = [s for s in case.stacks if s.frames]
    if not stacks:
        return []
    return next((s for s in stacks if s.crashing), stacks[0]).frames


def frames(case: Case, depth: int = DEPTH) -> list[str]:
    """The first ``depth`` informative frames of the crash, normalized."""
    out = [name for frame in crash_stack(case) if (name := normalize(frame))][:depth]
    fault = case.fault
    if not out and fault and fault.module and (fault.offset is not None or fault.symbol):
        where = fault.evidence[0] if fault.evidence else fault.where
        one = normalize(Frame(0, where, "", module=fault.module, offset=fault.offset, symbol=fault.symbol,
                              symbol_source=fault.symbol_source))
        out = [one] if one else []
    return out


def stack_hash(names: list[str]) -> str | None:
    """16 hex digits identifying the normalized frames, or None for a case without any."""
    if not names:
        return None
    return hashlib.sha1("\n".join(names).encode("utf-8")).hexdigest()[:16]
