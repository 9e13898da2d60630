"""WinDbg's and cdb's ``!analyze -v`` report: the exception, where it happened, the data address, the stack.

Users open a crash dump in WinDbg and paste its analysis. Its fields are ``NAME:`` lines, some
with the value on the lines below; real samples (modelscope/FunASR#3479, FanControl.Releases#4056,
Ponce#128) look like::

    CONTEXT:  (.ecxr)
    rax=0000000000000000 rbx=0000000000000000 rcx=00000235601dc8e0
    llama_funasr_sensevoice+0x2dfde3:
    00007ff7`1ebffde3 488b4860        mov     rcx,qword ptr [rax+60h] ds:00000000`00000060=????????????????

    EXCEPTION_RECORD:  (.exr -1)
    ExceptionAddress: 00007ff71ebffde3 (llama_funasr_sensevoice+0x00000000002dfde3)
       ExceptionCode: c0000005 (Access violation)
    Attempt to read from address 0000000000000060

    FAULTING_IP:
    amdhip64_7!hipModuleLoad+33
    00007ffe`f984a7fe 488b01          mov     rax,qword ptr [rcx]

    PROCESS_NAME:  python.exe
    READ_ADDRESS:  0000000000000060
    STACK_TEXT:
    000000a3`017aeab0 00007ffe`f9812345 : 00000000`00000000 ... : amdhip64_7!hipModuleLoad+0x33
    MODULE_NAME: amdhip64_7
    IMAGE_NAME:  amdhip64_7.dll
    FAILURE_BUCKET_ID:  INVALID_POINTER_READ_c0000005_amdadlx64.dll!Unknown

What is read: the faulting module (IMAGE_NAME, MODULE_NAME, the bucket's module, the exception
address's module), the exception code (``ExceptionCode`` is the windows parser's; the bucket's
and ``EXCEPTION_CODE_STR`` are read here), the data address and access (``Attempt to read from
address``, ``READ_ADDRESS``/``WRITE_ADDRESS``, the instruction's ``ds:ADDR=``), the process
name, and the crashing stack: STACK_TEXT's call sites, else the exception address as frame 0.
Without PDBs WinDbg names a frame by the export before it, so a symbol is a nearest export.
"""

from __future__ import annotations

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles
from triage.parsers.windows import PLAUSIBLE_FUNCTION_BYTES

_HEX = r"[0-9a-fA-F`]{8,17}"
# a call site: "module!symbol+0xOFF", "module+0xOFF", "module!symbol" (WinDbg writes the offset in hex, with or
# without 0x: FAULTING_IP's "amdhip64_7!hipModuleLoad+33")
_SITE = r"(?P<m>[A-Za-z_][\w.-]*?)(?:!(?P<s>[^\s+]+))?(?:\+(?:0x)?(?P<o>[0-9a-fA-F]+))?"
_EXCEPTION_ADDRESS = lazy(rf"^\s*ExceptionAddress:\s*(?P<a>{_HEX})\s*(?:\({_SITE}\))?\s*$")
_ATTEMPT = lazy(r"^\s*Attempt to (?P<rw>read from|write to|execute non-executable) address (?P<a>[0-9a-fA-F`]{1,17})\s*$")
_DATA_ADDRESS = lazy(r"^\s*(?P<rw>READ|WRITE)_ADDRESS:\s+(?P<a>[0-9a-fA-F`]{1,17})\b")
_FIELD = lazy(r"^\s*(?P<k>FAULTING_IP|STACK_TEXT|CONTEXT|PROCESS_NAME|MODULE_NAME|IMAGE_NAME|FAILURE_BUCKET_ID"
              r"|EXCEPTION_CODE_STR|EXCEPTION_RECORD):[ \t]*(?P<v>.*?)\s*$")
_STACK_LINE = lazy(rf"^\s*{_HEX}\s+{_HEX}\s+:(?:\s+{_HEX})+\s+:\s+(?:{_SITE}|0x0)\s*$")
_SITE_LINE = lazy(rf"^\s*{_SITE}:?\s*$")
_INSTRUCTION = lazy(rf"^\s*{_HEX}\s+[0-9a-fA-F]+\s+(?P<insn>\S.*?)(?:\s+(?:ds|ss|es|cs|fs|gs):(?P<ea>{_HEX})=\S*)?\s*$")
_BUCKET = lazy(r"_(?P<c>[cC][0-9a-fA-F]{7}|80000003)_(?P<m>[\w.-]+?\.(?:dll|exe|sys|DLL|EXE|SYS))(?:!|\b)")

_NEEDLES = Needles(r"^\s*ExceptionAddress:", r"^\s*Attempt to (?:read from|write to|execute)",
                   r"^\s*(?:READ|WRITE)_ADDRESS:", _FIELD)
MIN_FIELDS = 2  # distinct fields (ExceptionAddress counts) that make a report of !analyze, not a stray label
# lines read after a field that has its value below: FAULTING_IP's two, CONTEXT's register lines and stop, STACK_TEXT's
FOLLOWING = {"FAULTING_IP": 2, "CONTEXT": 12, "STACK_TEXT": 256}
_ACCESS = {"read from": "read", "write to": "write", "execute non-executable": "execute", "READ": "read",
           "WRITE": "write"}


def _frame(index: int, where: Where, text: str, m: object) -> Frame | None:
    module, symbol, off = m["m"], m["s"], m["o"]  # type: ignore[index]
    if not module:
        return None
    offset = int(off, 16) if off else None
    frame = Frame(index=index, where=where, text=text.strip(), module=module, symbol=symbol,
                  offset=None if symbol else offset, symbol_offset=offset if symbol else None)
    if symbol:
        frame.symbol_source = "nearest-export"
        if offset is not None and offset > PLAUSIBLE_FUNCTION_BYTES:
            frame.symbol_note = (f"unreliable: 0x{offset:X} bytes past the export, more than any plausible function; "
                                 "the real function is unknown without symbols")
    return frame


def _hex(text: str) -> int:
    return int(text.replace("`", ""), 16)


def parse(artifact: Artifact, case: Case) -> None:
    """Add the facts and the crashing stack of each ``!analyze -v`` report in the artifact."""
    lines = artifact.lines
    found = list(_NEEDLES.readable_lines(artifact))
    fields = {m["k"] for _, _, text in found if (m := _FIELD.match(text))}
    if len(fields) + any(_EXCEPTION_ADDRESS.match(text) for _, _, text in found) < MIN_FIELDS:
        return  # a "MODULE_NAME:" or "CONTEXT:" line alone is some other program's
    stack: list[Frame] = []
    thrown: Frame | None = None  # the exception address as a frame: the stack's top when STACK_TEXT is missing
    analysed = False
    for index, where, text in found:
        quoted = text.strip()
        if m := _EXCEPTION_ADDRESS.match(text):
            analysed = True
            case.claim(where, "exception", "fault")
            if m["m"] and thrown is None:
                thrown = _frame(0, where, text, m)
                if thrown:
                    thrown.address = _hex(m["a"])
            continue
        if m := _ATTEMPT.match(text) or _DATA_ADDRESS.match(text):
            case.add_fact("fault_address", f"0x{_hex(m['a']):x}", where, quoted, 75)
            case.add_fact("fault_access", _ACCESS[m["rw"]], where, quoted, 75)
            case.claim(where, "fault")
            continue
        if not (m := _FIELD.match(text)):
            continue
        key, value = m["k"], m["v"]
        analysed = True
        case.claim(where, "exception")
        if key == "PROCESS_NAME" and value:
            case.add_fact("program", value.split()[0], where, quoted, 70)
        elif key in ("IMAGE_NAME", "MODULE_NAME") and value and " " not in value:
            case.add_fact("faulting_module", value, where, quoted, 75 if key == "IMAGE_NAME" else 70)
        elif key == "FAILURE_BUCKET_ID" and (b := _BUCKET.search(value)):
            case.add_fact("exception_code", f"0x{b['c'].upper()}", where, quoted, 70)
            case.add_fact("faulting_module", b["m"], where, quoted, 70)
        elif key == "EXCEPTION_CODE_STR" and len(value) == 8:
            case.add_fact("exception_code", f"0x{value.upper()}", where, quoted, 70)
        elif key in FOLLOWING:
            found = _below(artifact, index, key, case)
            if key == "STACK_TEXT" and found and not stack:
                stack = found
    if not analysed:
        return
    if not stack and thrown is not None:
        stack = [thrown]
    if stack:
        case.stacks.append(Stack(frames=stack, where=stack[0].where, form="windbg",
                                 crashing=not any(s.crashing for s in case.stacks)))
    if lines:
        case.add_fact("os", "windows", Where(artifact.name, stack[0].where.line if stack else 1),
                      stack[0].text if stack else lines[0].strip(), 20)


def _below(artifact: Artifact, start: int, key: str, case: Case) -> list[Frame]:
    """Read the lines under a field: STACK_TEXT's frames; FAULTING_IP's and CONTEXT's instruction and its address."""
    frames: list[Frame] = []
    lines = artifact.lines
    for index in range(start + 1, min(len(lines), start + 1 + FOLLOWING[key])):
        text = lines[index]
        if not text.strip() or len(text) > 4096:
            break
        where = Where(artifact.name, index + 1)
        if key == "STACK_TEXT":
            if not (m := _STACK_LINE.match(text)):
                break
            if frame := _frame(len(frames), where, text, m):
                frames.append(frame)
            elif frames or "0x0" in text:  # a call through a null pointer: WinDbg's call site "0x0"
                frames.append(Frame(index=len(frames), where=where, text=text.strip(), address=0))
            case.claim(where, "frame", "stack")
            continue
        if (m := _INSTRUCTION.match(text)) and not _SITE_LINE.match(text):
            case.claim(where, "instruction", "fault")
            if m["ea"]:
                case.add_fact("fault_address", f"0x{_hex(m['ea']):x}", where, text.strip(), 60)
            break
        if key == "CONTEXT" and "=" not in text and not _SITE_LINE.match(text):
            break
    return frames
