"""Windows crashes as debuggers' one-line messages and applications' own crash handlers print them.

Real forms (ValveSoftware/source-sdk-2013#1260, ChaiScript#627, HemulGM/ChatGPT#45, StreaMonitor#6)::

    Unhandled exception at 0x00007FFC19C51738 (datacache.dll) in hl2_win64.exe: 0xC0000005: Access violation
        reading location 0x0000000000000000.                                         (Visual Studio, one line)
    Exception thrown at 0x00007FF670E8E0C0 in Chaiscript.exe: 0xC0000005: Access violation reading location 0x18.
    Access violation at address 00BA601B in module 'ChatGPT.exe'. Read of address 0000000C.    (Delphi's RTL)
      Exception: 0xC0000005  (EXCEPTION_ACCESS_VIOLATION)                                       (a handler's record)
      Address  : 0x00007FF83EF32F58                                                           (the faulting frame's)
      AV Type  : READ at 0x0000000000000000
    Unhandled exception: EXCEPTION_ACCESS_VIOLATION
    amdhip64_6!hipMemcpy+0x12                                                        (call sites, one a line, as
    amdhip64_6!hipLaunchKernel+0x44                                                   crash reporters print them)

Each gives the exception code, the data address and access, the faulting module (the debugger's module in brackets,
Delphi's module), and the program; call sites in WinDbg's ``module!export+0xOFF`` form, two or more on consecutive
lines, are a stack (the first after such a crash line is the crashing one). An export named without PDBs is the
nearest one, as in the windows parser.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles
from triage.parsers.windows import _EXCEPTION_NAMES as EXCEPTION_NAMES
from triage.parsers.windows import PLAUSIBLE_FUNCTION_BYTES

_ACCESS = {"reading": "read", "writing": "write", "executing": "execute", "read": "read", "write": "write",
           "execute": "execute"}
_VS = lazy(r"\b(?:Unhandled exception|Exception thrown|First-chance exception) at (?P<a>0x[0-9A-Fa-f]{6,16})"
           r"(?: \((?P<m>[^()\s][^()]*?)\))? in (?P<p>[^:\n]+?): (?P<c>0x[0-9A-Fa-f]{8})"
           r"(?:: [^.\n]*?(?:(?P<rw>reading|writing|executing) location (?P<addr>0x[0-9A-Fa-f]+))?)?[.\s]*$")
_DELPHI = lazy(r"\bAccess violation at address (?P<a>[0-9A-Fa-f]{8,16}) in module '(?P<m>[^']+)'\. "
               r"(?P<rw>Read|Write|Execution) of address (?P<addr>[0-9A-Fa-f]{8,16})")
_HANDLER_CODE = lazy(r"^\s*Exception\s*:\s*(?P<c>0x[0-9A-Fa-f]{8})\b")
_HANDLER_ADDRESS = lazy(r"^\s*Address\s*:\s*(?P<a>0x[0-9A-Fa-f]{6,16})\s*$")
_NAMED = lazy(r"\b(?:Unhandled exception|Exception(?: code)?)\s*:\s*EXCEPTION_(?P<name>[A-Z_]+)\b")
_AV_TYPE = lazy(r"^\s*AV Type\s*:\s*(?P<rw>READ|WRITE|EXECUTE) at (?P<addr>0x[0-9A-Fa-f]+)", re.IGNORECASE)
# "module!export+0xOFF" alone on a line (a leading frame number, "> " or "at " allowed); module names without ".dll"
_SITE = lazy(r"^\s*(?:>\s*|at\s+|#?\d{1,3}[:.]?\s+)?(?P<m>[A-Za-z_][\w.-]*?)(?:\.(?:dll|exe|DLL|EXE))?!"
             r"(?P<s>[A-Za-z_?@$~][\w:?@$<>~.`-]*?)(?:\s*\+\s*(?P<o>0x[0-9A-Fa-f]+))?\s*$")

_NEEDLES = Needles(_VS, _DELPHI, _HANDLER_CODE, _HANDLER_ADDRESS, _NAMED, _AV_TYPE, _SITE)


def parse(artifact: Artifact, case: Case) -> None:
    """Add the exception facts, the faulting module and the stacks of call sites found in the artifact."""
    frames: list[Frame] = []
    last = -10
    crash_line = -10
    for index, where, text in _NEEDLES.readable_lines(artifact):
        frame = _site(where, text)
        if frame is not None:
            if frames and index != last + 1:
                _close(case, frames, crash_line)
                frames = []
            frame.index = len(frames)
            frames.append(frame)
            last = index
            continue
        if index <= crash_line + 3 and (m := _HANDLER_ADDRESS.match(text)):
            # the handler's record: the faulting instruction's address, which names the faulting frame of its stack
            case.add_fact("exception_address", f"0x{int(m['a'], 16):x}", where, text.strip(), 70)
            case.claim(where, "exception", "fault")
        elif _crash(where, text, case):
            crash_line = index
    _close(case, frames, crash_line)


def _crash(where: Where, text: str, case: Case) -> bool:
    quoted = text.strip()
    if m := _VS.search(text):
        case.add_fact("exception_code", m["c"].upper().replace("0X", "0x"), where, quoted, 80)
        case.add_fact("program", m["p"].strip(), where, quoted, 60)
        if m["m"]:
            case.add_fact("faulting_module", m["m"].strip(), where, quoted, 75)
            case.stacks.append(Stack(frames=[Frame(index=0, where=where, text=quoted, address=int(m["a"], 16),
                                                   module=m["m"].strip())],
                                     where=where, form="windows", crashing=not any(s.crashing for s in case.stacks)))
        if m["addr"]:
            _address(case, where, quoted, m["addr"], m["rw"], 75)
    elif m := _DELPHI.search(text):
        case.add_fact("exception_code", "0xC0000005", where, quoted, 70)
        case.add_fact("faulting_module", m["m"], where, quoted, 70)
        _address(case, where, quoted, "0x" + m["addr"], m["rw"].lower().replace("execution", "execute"), 70)
    elif m := _HANDLER_CODE.match(text):
        case.add_fact("exception_code", m["c"].upper().replace("0X", "0x"), where, quoted, 70)
    elif (m := _NAMED.search(text)) and m["name"] in EXCEPTION_NAMES:
        case.add_fact("exception_code", EXCEPTION_NAMES[m["name"]], where, quoted, 60)
    elif m := _AV_TYPE.match(text):
        _address(case, where, quoted, m["addr"], m["rw"].lower(), 70)
        case.claim(where, "fault")
        return False
    else:
        return False
    case.claim(where, "exception", "fault")
    case.add_fact("os", "windows", where, quoted, 20)
    return True


def _address(case: Case, where: Where, quoted: str, address: str, access: str, score: int) -> None:
    case.add_fact("fault_address", f"0x{int(address, 16):x}", where, quoted, score)
    case.add_fact("fault_access", _ACCESS.get(access.lower(), access.lower()), where, quoted, score)


def _site(where: Where, text: str) -> Frame | None:
    if not (m := _SITE.match(text)):
        return None
    offset = int(m["o"], 16) if m["o"] else None
    frame = Frame(index=0, where=where, text=text.strip(), module=m["m"], symbol=m["s"], symbol_offset=offset,
                  symbol_source="nearest-export")
    if offset is not None and offset > PLAUSIBLE_FUNCTION_BYTES:
        frame.symbol_note = (f"unreliable: 0x{offset:X} bytes past the export, more than any plausible function; "
                             "the real function is unknown without symbols")
    return frame


def _close(case: Case, frames: list[Frame], crash_line: int) -> None:
    """Keep two or more consecutive call sites as a stack; the first after a crash line is the crashing one."""
    if len(frames) < 2:
        return
    for frame in frames:
        case.claim(frame.where, "frame", "stack")
    after_crash = 0 <= crash_line < frames[0].where.line - 1
    crashing = after_crash and not any(s.crashing for s in case.stacks)
    case.stacks.append(Stack(frames=frames, where=frames[0].where, form="windows", crashing=crashing))
