"""Names for the numbers crashes are reported with: POSIX signals and Windows NTSTATUS codes."""

from __future__ import annotations

# Linux's signal numbers (x86-64, arm64), the one table every parser and collect names signals by.
SIGNALS = {1: "HUP", 2: "INT", 3: "QUIT", 4: "ILL", 5: "TRAP", 6: "ABRT", 7: "BUS", 8: "FPE", 9: "KILL",
           10: "USR1", 11: "SEGV", 12: "USR2", 13: "PIPE", 14: "ALRM", 15: "TERM", 16: "STKFLT", 17: "CHLD",
           18: "CONT", 19: "STOP", 20: "TSTP", 21: "TTIN", 22: "TTOU", 23: "URG", 24: "XCPU", 25: "XFSZ",
           26: "VTALRM", 27: "PROF", 28: "WINCH", 29: "IO", 30: "PWR", 31: "SYS"}
# The signals a fault raises, whose siginfo carries the faulting address.
FAULT_SIGNALS = frozenset({"ILL", "BUS", "FPE", "SEGV"})
# Signals a crash ends with. A debugger's SIGINT (a user's Ctrl-C on a hung program), SIGSTOP or SIGTERM stop a
# process wherever it was, often waiting in the runtime: its top frame is no faulting module.
CRASH_SIGNALS = FAULT_SIGNALS | {"ABRT", "TRAP", "SYS"}
# The signals whose default action writes a core.
CORE_SIGNALS = frozenset({"QUIT", "ILL", "TRAP", "ABRT", "BUS", "FPE", "SEGV", "SYS", "XCPU", "XFSZ"})


def signal_name(number: int) -> str:
    """``11`` -> ``SEGV``; the number itself for one the table has no name for."""
    return SIGNALS.get(number, str(number))

NTSTATUS = {
    0x80000003: "BREAKPOINT",
    0xC0000005: "ACCESS_VIOLATION",
    0xC0000006: "IN_PAGE_ERROR",
    0xC0000008: "INVALID_HANDLE",
    0xC0000017: "NO_MEMORY",
    0xC000001D: "ILLEGAL_INSTRUCTION",
    0xC0000094: "INTEGER_DIVIDE_BY_ZERO",
    0xC0000096: "PRIVILEGED_INSTRUCTION",
    0xC00000FD: "STACK_OVERFLOW",
    0xC0000135: "DLL_NOT_FOUND",
    0xC0000139: "ENTRYPOINT_NOT_FOUND",
    0xC000013A: "CONTROL_C_EXIT",
    0xC0000142: "DLL_INIT_FAILED",
    0xC0000374: "HEAP_CORRUPTION",
    0xC0000409: "STACK_BUFFER_OVERRUN",
    0xC0000420: "ASSERTION_FAILURE",
}


def exit_status(raw: str) -> tuple[str, str] | None:
    """Read an exit status as printed (``139``, ``3221225477``, ``-1073741819``, ``0xc0000005``).

    Returns ("signal", "SEGV") for a shell's 128+N, ("exception", "0xC0000005") for an
    NTSTATUS code, or None for an ordinary status.
    """
    try:
        value = int(raw, 16) if raw.lower().startswith(("0x", "-0x")) else int(raw)
    except ValueError:
        return None
    if value >= 1 << 63 and not raw.lower().startswith("0x"):
        value = _from_double(value, raw)
        if value is None:
            return None
    value &= 0xFFFFFFFF
    if value in NTSTATUS or value >> 28 in (0xC, 0xE):  # errors and customer codes (0xE06D7363: a C++ throw), not -1
        return "exception", f"0x{value:08X}"
    if 128 < value < 160 and value - 128 in SIGNALS:
        return "signal", SIGNALS[value - 128]
    return None


def _from_double(value: int, raw: str) -> int | None:
    """A negative 32-bit status printed as an unsigned 64-bit number: exact (its low 32 bits are the status), or
    through a JavaScript double by an Electron launcher (LM Studio prints 18446744072635812000 for 0xC0000409), whose
    lost digits leave a dozen NTSTATUS codes equally likely: then None, not a code that was never raised."""
    if raw.endswith("000") and float(value) != value:
        found = [code for code in NTSTATUS if float(0xFFFFFFFF00000000 | code) == float(value)]
        return found[0] if len(found) == 1 else None
    return value


def ntstatus_name(code: str | None) -> str | None:
    try:
        return NTSTATUS.get(int(code, 16)) if code else None
    except ValueError:
        return None


# hipError_t values (hip_runtime_api.h), which follow CUDA's numbering for the errors both have: the
# numbers HIP programs and wrappers print without the name ("HIP error 98", "status 209").
HIP_ERRORS = {
    1: "hipErrorInvalidValue", 2: "hipErrorOutOfMemory", 3: "hipErrorNotInitialized", 4: "hipErrorDeinitialized",
    9: "hipErrorInvalidConfiguration", 13: "hipErrorInvalidSymbol", 17: "hipErrorInvalidDevicePointer",
    35: "hipErrorInsufficientDriver", 98: "hipErrorInvalidDeviceFunction", 100: "hipErrorNoDevice",
    101: "hipErrorInvalidDevice", 200: "hipErrorInvalidImage", 201: "hipErrorInvalidContext",
    209: "hipErrorNoBinaryForGpu", 218: "hipErrorInvalidKernelFile", 301: "hipErrorFileNotFound",
    302: "hipErrorSharedObjectSymbolNotFound", 303: "hipErrorSharedObjectInitFailed", 304: "hipErrorOperatingSystem",
    400: "hipErrorInvalidHandle", 500: "hipErrorNotFound", 700: "hipErrorIllegalAddress",
    701: "hipErrorLaunchOutOfResources", 702: "hipErrorLaunchTimeOut", 709: "hipErrorContextIsDestroyed",
    710: "hipErrorAssert", 719: "hipErrorLaunchFailure", 801: "hipErrorNotSupported", 999: "hipErrorUnknown",
    1052: "hipErrorRuntimeMemory", 1053: "hipErrorRuntimeOther",
}
# hipGetErrorString's texts (the same as CUDA's for these), as wrappers print them: "HIP error: <text>".
HIP_ERROR_TEXTS = {
    "invalid device function": "hipErrorInvalidDeviceFunction",
    "no kernel image is available for execution on the device": "hipErrorNoBinaryForGpu",
    "no ROCm-capable device is detected": "hipErrorNoDevice",
    "an illegal memory access was encountered": "hipErrorIllegalAddress",
    "unspecified launch failure": "hipErrorLaunchFailure",
    "shared object initialization failed": "hipErrorSharedObjectInitFailed",
    "invalid device ordinal": "hipErrorInvalidDevice",
    "out of memory": "hipErrorOutOfMemory",
    "the launch timed out and was terminated": "hipErrorLaunchTimeOut",
    "driver version is insufficient for runtime version": "hipErrorInsufficientDriver",
    "initialization error": "hipErrorNotInitialized",
}
