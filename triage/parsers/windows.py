"""Windows crash output: exception blocks, stack lines, WinDbg ``k``, Visual Studio call stacks,
Event Viewer and WER records in the languages Windows ships, one-line crash summaries, and
Python's own reports of a native access violation.

Examples::

    Exception Code: 0xC0000005
    0x00007FFEF984A7FE, .../engine/amdhip64_7.dll(0x00007FFEF9010000) + 0x83A7FE, hsa_system_get_major_extension_table() + 0x3AD1DE
    0x00007FFF38517374, KERNEL32.DLL, BaseThreadInitThunk() + 0x14
    0x00007FFFA52E98D5, C:\\...\\torch_hip.dll(0x00007FFFA3FB0000) + 0x13398D5 byte(s), ?topk@cuda@at@@...Z() + 0xEA byte(s)
    amdhip64_6.dll (0x00007FFB12340000) + 0x1A2B3 byte(s)                                       (a crash handler, no address)
    python311.dll       :0x00007FFB6F74D710  PyComplex_AsCComplex                               (Blender's crash log, with
    0x00007FFB6F6F0000 3.11.7150.1013    python311.dll                                            its Loaded Modules: offsets)
    00 0000005f`2b8fe3a0 00007ffe`f984a7fe amdhip64_7!hipModuleLoad+0x33
    Faulting module name: amdhip64_7.dll, version: 7.1.0.0, time stamp: 0x68f0a1b2
    Name des fehlerhaften Moduls: amdhip64_7.dll, Version: 7.1.0.0, Zeitstempel: 0x68f0a1b2       (and fr, es, ja, zh, ru, ko)
    Fault Module Name:	amdhip64_7.dll   /   Exception Code:	c0000005                            (a WER report)
     	amdhip64_7.dll!00007ff91753806f()	Unknown                                                 (Visual Studio)
    amdhip64.dll -> hipMemUnmap + 340128 - Access Violation reading location 0x00000020           (one-line summary)
    OSError: exception: access violation reading 0x0000000000000000                              (ctypes)
    Windows fatal exception: access violation                                                    (faulthandler)

Without PDBs a Windows stack names a frame by the nearest export before it, whatever the
distance: a name more than 64 KiB away from its export is kept but marked unreliable.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Frame, Stack, Where
from triage.parsers.lines import Needles, readable

PLAUSIBLE_FUNCTION_BYTES = 0x10000

# The labels of an "Application Error" record (event 1000) and of a WER report, in English and in
# the languages Windows is most often pasted in (real records of each are in the tests).
CRASH_LABELS = {
    "module": ("Faulting module name", "Fault Module Name", "Name des fehlerhaften Moduls", "Fehlerhafter Modulname",
               "Nom du module défaillant", "Nombre del módulo con errores", "障害が発生しているモジュール名",
               "障害が発生しているモジュールの名前", "出错模块名称", "错误模块名称", "錯誤模組名稱", "Имя сбойного модуля",
               "Имя модуля с ошибкой", "오류 있는 모듈 이름", "Exception Module",
               # the labels of a WER "problem signature" (Problemsignatur / 问题签名 / 問題の署名) where they differ
               "故障模块名称", "Fehlermodulname", "障害モジュールの名前"),
    "code": ("Exception code", "Ausnahmecode", "Code d’exception", "Code d'exception", "Code de l’exception",
             "Código de excepción", "例外コード", "异常代码", "例外狀況代碼", "Код исключения", "예외 코드"),
    "offset": ("Fault offset", "Exception Offset", "Fehleroffset", "Décalage d’erreur", "Décalage de l’erreur",
               "Desplazamiento de errores", "Desplazamiento de excepción", "障害オフセット", "错误偏移量", "错误偏移",
               "Смещение ошибки", "오류 오프셋", "异常偏移", "Ausnahmeoffset", "例外オフセット"),
}
_SEP = r"[ \t\u00a0]*[:：=\t][ \t\u00a0]*"


def _labelled(kind: str, value: str) -> re.Pattern[str]:
    # an apostrophe either way: Windows writes the curly one, a paste made plain (parsers/wrappers.py) the straight one
    names = "|".join(re.escape(n).replace(r"\ ", r"\s*").replace("’", "['’]") for n in CRASH_LABELS[kind])
    return lazy(rf"(?P<lead>^\W{{0,3}})?(?:{names}){_SEP}{value}", re.IGNORECASE)


_EXCEPTION = _labelled("code", r"(?:0x)?(?P<c>[0-9a-fA-F]{8})\b")
_FAULTING_MODULE = _labelled("module", r"(?P<m>[^\s,，、:：]+)(?:\s*[,，、]\s*(?:version|Version|versión|версия|版本|バージョン|버전)"
                                       r"[ \t\u00a0]*[:：]?[ \t\u00a0]*(?P<v>\d+(?:\.\d+){1,3}))?")
_FAULT_OFFSET = _labelled("offset", r"(?:0x)?(?P<o>[0-9a-fA-F]{4,16})\b")
# (PyTorch's crash handler writes " byte(s)" after each offset: "PATH(BASE) + 0xOFF byte(s), f() + 0xOFF byte(s)".)
_FRAME = lazy(
    r"^\s*(?P<a>0x[0-9A-Fa-f]{6,16}),\s*(?P<path>[^,()]+?)\s*"
    r"(?:\((?P<base>0x[0-9A-Fa-f]+)\)\s*\+\s*(?P<off>0x[0-9A-Fa-f]+)(?:\s*byte\(s\))?)?\s*"
    r"(?:,\s*(?P<sym>[^,]+?)(?:\s*\+\s*(?P<soff>0x[0-9A-Fa-f]+)(?:\s*byte\(s\))?)?)?\s*$"
)
# The same without the address: "amdhip64_6.dll (0x00007FFB12340000) + 0x1A2B3 byte(s)[, hipMemcpy() + 0x12 byte(s)]".
# The module is a file name that ends in its extension right before the base (tried once, from the line's start).
_BASED_FRAME = lazy(
    r"^\s*(?P<a>)(?P<path>[^\s,()][^,()]*?\.(?:dll|exe|pyd|sys|DLL|EXE|PYD|SYS)) ?\((?P<base>0x[0-9A-Fa-f]{6,16})\)\s*\+\s*"
    r"(?P<off>0x[0-9A-Fa-f]+)\s*byte\(s\)(?:,\s*(?P<sym>[^,]+?)(?:\s*\+\s*(?P<soff>0x[0-9A-Fa-f]+)\s*byte\(s\))?)?\s*$"
)
# Blender's crash log: "python311.dll       :0x00007FFB6F74D710  PyComplex_AsCComplex" under "Stack trace:" (the symbol is
# "Symbols not available" without one), and "0x00007FFB6F6F0000 3.11.7150.1013   python311.dll" under "Loaded Modules :",
# whose bases turn each frame's address into the module offset.
_COLON_FRAME = lazy(r"^(?P<m>[\w.-]+\.(?:dll|exe|pyd|sys|DLL|EXE|PYD|SYS))\s*:(?P<a>0x[0-9A-Fa-f]{8,16})\s+(?P<s>\S.*?)\s*$")
_LOADED_MODULE = lazy(r"^(?P<base>0x[0-9A-Fa-f]{8,16})\s+(?:\d+(?:\.\d+){1,3}\s+)?(?P<m>[\w.-]+\.(?:dll|exe|pyd|sys|DLL|EXE|PYD|SYS))"
                      r"(?:\s|$)")
# Its exception record: "ExceptionCode         : EXCEPTION_ACCESS_VIOLATION (0xc0000005)" (older ones name it only), and
# "Exception Address     : 0x00007FFDA03CC97F" (an offset in the Exception Module, by its base).
_NAMED_EXCEPTION = lazy(r"^\s*Exception\s*Code\s*:\s*EXCEPTION_(?P<name>[A-Z_]+)(?:\s*\((?:0x)?(?P<c>[0-9a-fA-F]{8})\))?")
_EXCEPTION_ADDRESS = lazy(r"^\s*Exception\s*Address\s*:\s*(?P<a>0x[0-9A-Fa-f]{6,16})\b")
_EXCEPTION_NAMES = {"ACCESS_VIOLATION": "0xC0000005", "ILLEGAL_INSTRUCTION": "0xC000001D", "STACK_OVERFLOW": "0xC00000FD",
                    "INT_DIVIDE_BY_ZERO": "0xC0000094", "PRIV_INSTRUCTION": "0xC0000096", "IN_PAGE_ERROR": "0xC0000006",
                    "ARRAY_BOUNDS_EXCEEDED": "0xC000008C", "DATATYPE_MISALIGNMENT": "0x80000002",
                    "BREAKPOINT": "0x80000003"}
_NO_SYMBOL = "Symbols not available"
_WINDBG = lazy(
    r"^\s*(?P<i>[0-9a-fA-F]{2})\s+[0-9a-fA-F`]{8,17}\s+[0-9a-fA-F`]{8,17}\s+"
    r"(?P<m>[\w.-]+?)(?:!(?P<s>[^+\s]+))?(?:\+(?P<o>0x[0-9a-fA-F]+))?(?:\s|$)"
)
# PyTorch's crash handler on Windows: "0x00007FFCED7FCDE7, torch_hip.dll + 0x25BCDE7 byte(s)", and on the
# next line, indented, the symbol when it knows one: "  at::cuda::_scaled_mm_v2() + 0x487 byte(s)".
_HANDLER_FRAME = lazy(r"^\s*(?P<a>0x[0-9A-Fa-f]{6,16}),\s*(?P<m>[^,()]+?)\s*\+\s*(?P<off>0x[0-9A-Fa-f]+)\s*byte\(s\)\s*$")
_HANDLER_SYMBOL = lazy(r"^\s+(?P<s>[A-Za-z_~][^\n]*?)\s*\+\s*(?P<off>0x[0-9A-Fa-f]+)\s*byte\(s\)\s*$")
# Visual Studio's Call Stack window: "module!function(args) Line N\tLanguage", or "module!ADDRESS()" without symbols.
# (The module starts at a character that is no space: where \s* and the module could both take the line's leading
# spaces, a line of 1,500 spaces and a DLL's name took 9 s to fail.) The symbol takes a run of spaces whole, and the
# white space after it is matched one way only (``\s*(?:\t.*)?$`` is "only white space, or white space holding a
# tab, then anything"): where the symbol could end at each of a run's spaces and \s+ and \s* then scanned the rest
# of it, x.dll!f and 4,000 spaces took 0.6 s to fail.
_VISUAL_STUDIO = lazy(
    r"^\s*(?:>\s*)?(?P<m>[\w.-][\w. -]*?\.(?:dll|exe|pyd|sys|DLL|EXE))!(?:(?P<a>[0-9a-fA-F]{8,16})\(\)"
    r"|(?P<s>[A-Za-z_~](?:[\w:~<>,*&]| ++)*?)(?:\(.*\))?(?:\s++Line\s++(?P<l>\d+))?)(?:[^\S\t]*+\t.*|\s*+)$")
# One-line crash summaries: "amdhip64.dll -> hipMemUnmap + 340128 - Access Violation reading location 0x00000020".
# (The module is tried from a word's start only: tried from every character of a long dotted word it cost 0.2 s.)
_SUMMARY = lazy(
    r"(?<![\w.-])(?P<m>[\w.-]+\.(?:dll|exe|DLL|EXE))\s*->\s*(?P<s>[A-Za-z_][\w:~]*)\s*\+\s*(?P<o>\d+|0x[0-9a-fA-F]+)\s*-\s*"
    r"(?P<what>Access Violation|Stack Overflow|Illegal Instruction|Integer Divide by Zero)"
    r"(?:\s+(?P<rw>reading|writing|executing)(?:\s+location)?\s+(?P<addr>0x[0-9a-fA-F]+))?", re.IGNORECASE)
# ctypes' OSError for a native exception in a call, and faulthandler's report of one.
_PYTHON = lazy(
    r"\b(?:OSError|WindowsError): exception: (?P<what>access violation|stack overflow|integer divide by zero|"
    r"illegal instruction)(?: (?P<rw>reading|writing|executing) (?P<addr>0x[0-9a-fA-F]+))?"
    r"|^Windows fatal exception: (?P<fatal>access violation|stack overflow|illegal instruction|"
    r"integer divide by zero|code 0x[0-9a-fA-F]{8})", re.IGNORECASE)
_CODES = {"access violation": "0xC0000005", "stack overflow": "0xC00000FD", "illegal instruction": "0xC000001D",
          "integer divide by zero": "0xC0000094"}
_ACCESS = {"reading": "read", "writing": "write", "executing": "execute"}
# A line none of these matches says nothing here.
_NEEDLES = Needles(_EXCEPTION, _FRAME, _WINDBG, _FAULTING_MODULE, _FAULT_OFFSET, _VISUAL_STUDIO, _SUMMARY, _PYTHON,
                   _HANDLER_FRAME, _HANDLER_SYMBOL, _BASED_FRAME, _COLON_FRAME, _LOADED_MODULE, _NAMED_EXCEPTION,
                   _EXCEPTION_ADDRESS)


_HIP_DLL = lazy(r"(?i)amdhip64(?:_(?P<major>\d+))?\.dll")


def is_hip_release(module: str, version: str) -> bool:
    """Whether an amdhip64 DLL's file version is its HIP release: the HIP SDK's are (amdhip64_6.dll 6.1.40252.0), some
    a display driver ships are not (amdhip64_7.dll 10.0.3581.0); the release's major is the one in the DLL's name
    (amdhip64.dll: 5 or older)."""
    if not (m := _HIP_DLL.fullmatch(module_name(module))):
        return False
    major = version.split(".", 1)[0]
    if not major.isdigit():
        return False
    return int(major) == int(m["major"]) if m["major"] else int(major) <= 5


def module_name(path: str) -> str:
    return re.split(r"[\\/]", path.strip())[-1]


def _frame(where: Where, text: str, tried: set) -> Frame | None:
    """One frame line (of the regexes, only those ``tried``); the index is -1 for forms that do not number their frames."""
    if _HANDLER_FRAME in tried and (m := _HANDLER_FRAME.match(text)):
        return Frame(index=-1, where=where, text=text.strip(), address=int(m["a"], 16), module=module_name(m["m"]),
                     offset=int(m["off"], 16))
    if _COLON_FRAME in tried and (m := _COLON_FRAME.match(text)):
        symbol = None if m["s"] == _NO_SYMBOL else m["s"]
        return Frame(index=-1, where=where, text=text.strip(), address=int(m["a"], 16), module=m["m"], symbol=symbol,
                     symbol_source="nearest-export" if symbol else None)  # named from a PDB or, without one, an export
    if m := (_FRAME in tried and _FRAME.match(text)) or (_BASED_FRAME in tried and _BASED_FRAME.match(text)):
        symbol = (m["sym"] or "").strip()
        symbol = None if not symbol or symbol.startswith("...") else symbol.removesuffix("()")
        soff = int(m["soff"], 16) if m["soff"] and symbol else None
        frame = Frame(index=-1, where=where, text=text.strip(), address=int(m["a"], 16) if m["a"] else None,
                      module=module_name(m["path"]), offset=int(m["off"], 16) if m["off"] else None,
                      symbol=symbol, symbol_offset=soff)
    elif _VISUAL_STUDIO in tried and (m := _VISUAL_STUDIO.match(text)) and ": (caller:" not in text:
        symbol = (m["s"] or "").strip() or None
        frame = Frame(index=-1, where=where, text=text.strip(), address=int(m["a"], 16) if m["a"] else None,
                      module=m["m"].strip(), symbol=symbol, file_line=int(m["l"]) if m["l"] else None)
        frame.symbol_source = "input" if symbol else None
        return frame
    elif _WINDBG in tried and (m := _WINDBG.match(text)):
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
    bases: dict[str, int] = {}  # module (lower case) -> load address, from a crash log's module list
    stacks = len(case.stacks)
    thrown: tuple[int, Where, str] | None = None  # an exception record's address, for its module's offset
    holding = _NEEDLES.each(artifact)
    for index in _NEEDLES.lines(artifact):
        number, text = index + 1, lines[index]
        if not readable(text):
            continue
        where = Where(artifact.name, number)
        tried = {pattern for pattern, chosen in holding.items() if index in chosen}  # the regexes that may match
        if _LOADED_MODULE in tried and (m := _LOADED_MODULE.match(text)):
            bases.setdefault(m["m"].lower(), int(m["base"], 16))
            continue
        if _EXCEPTION_ADDRESS in tried and (m := _EXCEPTION_ADDRESS.match(text)):
            thrown = (int(m["a"], 16), where, text.strip())
            case.claim(where, "exception", "fault")
            continue
        _record(text, where, case, tried)
        frame = _frame(where, text, tried)
        if frame is None:
            if (frames and number == last + 1 and _HANDLER_SYMBOL in tried and (m := _HANDLER_SYMBOL.match(text))
                    and not frames[-1].symbol):
                frames[-1].symbol, frames[-1].symbol_offset = m["s"].removesuffix("()"), int(m["off"], 16)
                frames[-1].symbol_source = "input"  # the handler named it from the PDB
                case.claim(where, "frame", "stack")
                last = number
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
    if bases:
        _offsets(case, case.stacks[stacks:], bases, thrown)


def _offsets(case: Case, stacks: list[Stack], bases: dict[str, int], thrown: tuple[int, Where, str] | None) -> None:
    """Module offsets of frames that give an address and a module a module list gives the base of, and of an
    exception record's address in its module (the offset a known-frames store and a fault offset are in)."""
    def offset(module: str | None, address: int | None) -> int | None:
        base = bases.get((module or "").lower())
        return address - base if base is not None and address is not None and 0 <= address - base < 1 << 32 else None

    for stack in stacks:
        for frame in stack.frames:
            if frame.offset is None:
                frame.offset = offset(frame.module, frame.address)
    module = case.fact("faulting_module")
    if thrown and module and (at := offset(module_name(module.value), thrown[0])) is not None:
        case.add_fact("fault_offset", f"0x{at:x}", thrown[1], thrown[2], 70)


def _record(text: str, where: Where, case: Case, tried: set) -> None:
    """Facts of an exception record, an Event Viewer / WER entry, a summary line or a Python report (of the
    regexes, only those ``tried``)."""
    quoted = text.strip()
    if _EXCEPTION in tried and (m := _EXCEPTION.search(text)):
        at_start = m["lead"] is not None
        case.add_fact("exception_code", f"0x{m['c'].upper()}", where, quoted, 90 if at_start else 60)
        case.claim(where, "exception", "fault")
        case.add_fact("os", "windows", where, quoted, 20)
    if _NAMED_EXCEPTION in tried and (m := _NAMED_EXCEPTION.match(text)):
        code = f"0x{m['c'].upper()}" if m["c"] else _EXCEPTION_NAMES.get(m["name"])
        if code:
            case.add_fact("exception_code", code, where, quoted, 90)
            case.claim(where, "exception", "fault")
            case.add_fact("os", "windows", where, quoted, 20)
    if _FAULTING_MODULE in tried and (m := _FAULTING_MODULE.search(text)):
        case.add_fact("faulting_module", m["m"], where, quoted, 80)
        case.claim(where, "exception", "fault")
        if m["v"]:
            case.add_fact(f"module_version:{m['m'].lower()}", m["v"], where, quoted, 80)
            if is_hip_release(m["m"], m["v"]):
                case.add_fact("hip_version_runtime", m["v"], where, quoted, 80)
    if _FAULT_OFFSET in tried and (m := _FAULT_OFFSET.search(text)):
        case.add_fact("fault_offset", f"0x{m['o'].lower()}", where, quoted, 80)
    if _SUMMARY in tried and (m := _SUMMARY.search(text)):
        case.add_fact("exception_code", _CODES[m["what"].lower()], where, quoted, 70)
        case.add_fact("faulting_module", m["m"], where, quoted, 70)
        offset = int(m["o"], 0)
        frame = Frame(index=0, where=where, text=quoted, module=m["m"], symbol=m["s"], symbol_offset=offset,
                      symbol_source="nearest-export")
        if offset > PLAUSIBLE_FUNCTION_BYTES:
            frame.symbol_note = (f"unreliable: 0x{offset:X} bytes past the export, more than any plausible function; "
                                 "the real function is unknown without symbols")
        case.stacks.append(Stack(frames=[frame], where=where, form="summary", crashing=True))
        _address(m, where, quoted, case)
        case.claim(where, "exception", "fault")
        case.add_fact("os", "windows", where, quoted, 20)
    if _PYTHON in tried and (m := _PYTHON.search(text)):
        what = (m["what"] or m["fatal"]).lower()
        code = _CODES.get(what) or f"0x{what[-8:].upper()}"
        case.add_fact("exception_code", code, where, quoted, 50)
        _address(m, where, quoted, case)
        case.claim(where, "exception", "fault")
        case.add_fact("os", "windows", where, quoted, 20)  # ctypes and faulthandler say so only on Windows


def _address(m: re.Match[str], where: Where, quoted: str, case: Case) -> None:
    if m["addr"]:
        case.add_fact("fault_address", f"0x{int(m['addr'], 16):x}", where, quoted, 60)
        case.add_fact("fault_access", _ACCESS[m["rw"].lower()], where, quoted, 60)
