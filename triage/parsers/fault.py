"""Merge what the parsers found about the crash into one Fault.

Sources, best first: a debugger's signal line and crashing stack, a Windows exception block,
the kernel's segfault line, a shell's message or an exit status. ``x/i``'s current
instruction and ``info registers`` give the memory operand's address where the kernel
line is missing.
"""

from __future__ import annotations


from triage.lazy import lazy
from triage.model import Case, Fault, Frame, Stack
from triage.parsers.codes import CRASH_SIGNALS, ntstatus_name
from triage.parsers.kernel import access_from_error
from triage.parsers.lines import readable

# A decimal displacement is tried from the start of its digits only (from inside them it could match only where
# their start already had): tried from every digit of a long number not followed by (%, it took 0.4 s to fail.
_ATT_OPERAND = lazy(r"(?P<disp>-?0x[0-9a-fA-F]+|(?:-|(?<!\d))\d+)?\(%(?P<base>\w+)")
_INTEL_OPERAND = lazy(r"\[(?P<base>[a-z0-9]+)\s*(?:(?P<sign>[+-])\s*(?P<disp>0x[0-9a-fA-F]+|\d+))?\]")


def _displacement(text: str | None) -> int:
    """``0x18``, ``-0x18`` or decimal ``24``/``08`` (disassemblers print decimals with leading zeros)."""
    if not text:
        return 0
    return int(text, 16) if "0x" in text else int(text, 10)


def operand_address(instruction: str, registers: dict[str, int]) -> int | None:
    """The address a faulting instruction's memory operand refers to, when its base register is known."""
    if m := _ATT_OPERAND.search(instruction):
        disp = _displacement(m["disp"])
    elif m := _INTEL_OPERAND.search(instruction):
        disp = _displacement(m["disp"])
        disp = -disp if m["sign"] == "-" else disp
    else:
        return None
    base = registers.get(m["base"])
    return None if base is None else (base + disp) & 0xFFFFFFFFFFFFFFFF


def crash_stack(case: Case, windows: bool) -> Stack | None:
    """The stack a parser marked as the crashing thread's, else the first that starts at frame 0
    in the form that matches the fault's platform."""
    for stack in case.stacks:
        if stack.crashing:
            return stack
    for stack in case.stacks:
        if stack.frames[0].index == 0 and (stack.form == "windows") == windows:
            return stack
    return None


def merge(case: Case) -> None:
    signal = case.fact("signal")
    exception = case.fact("exception_code")
    if signal is None and exception is None:
        return
    if exception and (signal is None or exception.score >= signal.score):
        fault = Fault(kind="exception", where=exception.where, code=exception.value,
                      code_name=ntstatus_name(exception.value))
        stack = crash_stack(case, windows=True)
    else:
        fault = Fault(kind="signal", where=signal.where, signal=signal.value)
        si_code = case.fact("si_code")
        fault.si_code = si_code.value if si_code else None
        stack = crash_stack(case, windows=False) if signal.value in CRASH_SIGNALS else None
    fault.evidence.append(fault.where)
    if stack:
        stack.crashing = True  # the one crashing stack the fault, the report and the stack hash all use
        top = _at_exception_address(case, stack) if fault.kind == "exception" else stack.frames[0]
        fault.module, fault.offset = top.module, top.offset
        fault.symbol, fault.symbol_source = top.symbol, top.symbol_source
        fault.evidence.append(top.where)
    if address := case.fact("fault_address"):  # a core's siginfo or a minidump's exception record
        fault.address = int(address.value, 16)
        access = case.fact("fault_access")
        fault.access = access.value if access else None
        fault.evidence.append(address.where)
    if fault.kind == "signal":
        _kernel(case, fault)
        _instruction(case, fault)
    elif module := case.fact("faulting_module"):
        fault.module = fault.module or module.value
        offset = case.fact("fault_offset")
        if fault.offset is None and offset:
            fault.offset = int(offset.value, 16)
        fault.evidence.append(module.where)
    case.fault = fault


def _kernel(case: Case, fault: Fault) -> None:
    if not case.kernel_faults:
        return
    stem = (fault.module or "").split(".so")[0]
    kf = next((k for k in case.kernel_faults if stem and (k.module or "").startswith(stem)), case.kernel_faults[0])
    if fault.address is None and kf.address is not None:  # a GP fault's line gives no address
        fault.address = kf.address
        fault.access = access_from_error(kf.error)
    fault.module = fault.module or kf.module
    if kf.where not in fault.evidence:
        fault.evidence.append(kf.where)


def _instruction(case: Case, fault: Fault) -> None:
    if not case.instructions:
        return
    where, text = case.instructions[0]
    fault.instruction = text
    fault.evidence.append(where)
    if fault.address is None and readable(text):
        fault.address = operand_address(text, case.registers)


def _at_exception_address(case: Case, stack: Stack) -> Frame:
    """The frame at the address a crash handler's record gives as the exception's (a handler that walks its own
    stack lists its own frames first), else frame 0."""
    given = case.fact("exception_address")
    if given is not None:
        address = int(given.value, 16)
        for frame in stack.frames:
            if frame.address == address:
                return frame
    return stack.frames[0]
