"""Itanium C++ demangling through libstdc++'s own ``__cxa_demangle``, loaded with ctypes.

No extra package: every Linux machine that runs a HIP program has libstdc++. Where it
cannot be loaded, names stay mangled and ``available()`` says so, so that the report can
tell the reader why.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

_LIBRARIES = ("libstdc++.so.6", "libc++abi.so.1")


@lru_cache(maxsize=1)
def _functions() -> tuple[Any, Any] | None:
    """``__cxa_demangle`` and the C library's ``free``, or None where either is missing (ctypes is
    imported here, when a name first needs it, not at start-up)."""
    import ctypes
    import ctypes.util

    names = [*_LIBRARIES, ctypes.util.find_library("stdc++")]
    for name in filter(None, names):
        try:
            library = ctypes.CDLL(name)
            demangle = library.__cxa_demangle
        except (OSError, AttributeError):
            continue
        try:
            free = ctypes.CDLL(None).free
        except (OSError, AttributeError, TypeError):
            return None
        demangle.restype = ctypes.c_void_p
        demangle.argtypes = [ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.POINTER(ctypes.c_int)]
        free.argtypes = [ctypes.c_void_p]
        free.restype = None
        return demangle, free
    return None


def available() -> bool:
    """Whether mangled names can be demangled on this machine."""
    return _functions() is not None


@lru_cache(maxsize=4096)
def demangle(name: str) -> str:
    """``_ZN3amd6Symbol15getDeviceKernelERKNS_6DeviceE`` -> ``amd::Symbol::getDeviceKernel(amd::Device const&)``.

    Anything that is not a mangled C++ name, or that the demangler rejects, comes back unchanged.
    """
    if not name.startswith("_Z") or "\0" in name or (functions := _functions()) is None:
        return name
    import ctypes

    cxa_demangle, free = functions
    status = ctypes.c_int(0)
    pointer = cxa_demangle(name.encode("utf-8", "surrogateescape"), None, None, ctypes.byref(status))
    if not pointer:
        return name
    try:
        text = ctypes.string_at(pointer)
    finally:
        free(pointer)
    return text.decode("utf-8", "replace") if status.value == 0 else name
