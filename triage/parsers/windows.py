"""Windows crash output: exception blocks, stack lines, WinDbg ``k`` and Event Viewer records.

Examples::

    Exception Code: 0xC0000005
    0x00007FFEF984A7FE, .../engine/amdhip64_7.dll(0x00007FFEF9010000) + 0x83A7FE, hsa_system_get_major_extension_table() + 0x3AD1DE
    0x00007FFF38517374, KERNEL32.DLL, BaseThreadInitThunk() + 0x14
    00 0000005f`2b8fe3a0 00007ffe`f984a7fe amdhip64_7!hipModuleLoad+0x33
    Faulting module name: amdhip64_7.dll, version: 7.1.0.0, time stamp: 0x68f0a1b2

Without PDBs a Windows stack names a frame by the nearest export before it, whatever the
distance: a name more than 64 KiB away from its export is kept but marked unreliable.
"""

from __future__ import annotations

import re

from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles, readable

PLAUSIBLE_FUNCTION_BYTES = 0x10000

_EXCEPTION = re.compile(r"(?P<lead>^\W{0,3})?\bException\s*code\s*[:=]\s*(?:0x)?(?P<c>[0-9a-fA-F]{8})\b", re.I)
_FRAME = re.compile(
    r"^\s*(?P<a>0x[0-9A-Fa-f]{6,16}),\s*(?P<path>[^,()]+?)\s*"
    r"(?:\((?P<base>0x[0-9A-Fa-f]+)\)\s*\+\s*(?P<off>0x[0-9A-Fa-f]+))?\s*"
    r"(?:,\s*(?P<sym>[^,]+?)(?:\s*\+\s*(?P<soff>0x[0-9A-Fa-f]+))?)?\s*$"
)
_WINDBG = re.compile(
    r"^\s*(?P<i>[0-9a-fA-F]{2})\s+[0-9a-fA-F`]{8,17}\s+[0-9a-fA-F`]{8,17}\s+"
    r"(?P<m>[\w.-]+?)(?:!(?P<s>[^+\s]+))?(?:\+(?P<o>0x[0-9a-fA-F]+))?(?:\s|$)"
)
_FAULTING_MODULE = re.compile(r"Faulting module name:\s*(?P<m>[^,\s]+)")
_FAULT_OFFSET = re.compile(r"Fault offset:\s*(?P<o>0x[0-9a-fA-F]+)")
_NEEDLES = Needles(_EXCEPTION, _FRAME, _WINDBG, _FAULTING_MODULE, _FAULT_OFFSET)  # a line none matches says nothing here


def _module_name(path: str) -> str:
    return re.split(r"[\\/]", path.strip())[-1]


def _frame(where: Where, text: str) -> Frame | None:
    """One frame line; the index is -1 for forms that do not number their frames."""
    if m := _FRAME.match(text):
        symbol = (m["sym"] or "").strip()
        symbol = None if not symbol or symbol.startswith("...") else symbol.removesuffix("()")
        soff = int(m["soff"], 16) if m["soff"] and symbol else None
        frame = Frame(index=-1, where=where, text=text.strip(), address=int(m["a"], 16),
                      module=_module_name(m["path"]), offset=int(m["off"], 16) if m["off"] else None,
                      symbol=symbol, symbol_offset=soff)
    elif m := _WINDBG.match(text):
        symbol = m["s"]
        off = int(m["o"], 16) if m["o"] else None
        frame = Frame(index=int(m["i"], 16), where=where, text=text.strip(), module=m["m"],
                      offset=None if symbol else off, symbol=symbol, symbol_offset=off if symbol else None)
    else:
        return None
    if frame.symbol:
        frame.symbol_source = "nearest-export"
        if frame.symbol_offset is not None and frame.symbol_offset > PLAUSIBLE_FUNCTION_BYTES:
            frame.symbol_note = (
                f"unreliable: 0x{frame.symbol_offset:X} bytes past the export, more than any plausible "
                "function; the real function is unknown without symbols"
            )
    return frame


def parse(artifact: Artifact, case: Case) -> None:
    frames: list[Frame] = []
    last = -10
    lines = artifact.lines
    for index in _NEEDLES.lines(artifact):
        number, text = index + 1, lines[index]
        if not readable(text):
            continue
        where = Where(artifact.name, number)
        if m := _EXCEPTION.search(text):
            at_start = m["lead"] is not None
            case.add_fact("exception_code", f"0x{m['c'].upper()}", where, text.strip(), 90 if at_start else 60)
            case.claim(where, "exception", "fault")
            case.add_fact("os", "windows", where, text.strip(), 20)
        if m := _FAULTING_MODULE.search(text):
            case.add_fact("faulting_module", m["m"], where, text.strip(), 80)
            case.claim(where, "exception", "fault")
        if m := _FAULT_OFFSET.search(text):
            case.add_fact("fault_offset", m["o"], where, text.strip(), 80)
        frame = _frame(where, text)
        if frame is None:
            continue
        if frames and number - last > 1:
            case.stacks.append(Stack(frames=frames, where=frames[0].where, form="windows"))
            frames = []
        if frame.index < 0:
            frame.index = len(frames)
        frames.append(frame)
        case.claim(where, "frame", "stack")
        last = number
    if frames:
        case.stacks.append(Stack(frames=frames, where=frames[0].where, form="windows"))
