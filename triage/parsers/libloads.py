"""Listings that say from which file a process loaded each ROCm library: one ``rocm_library_loaded`` fact (the
library's path as printed) per line, for derive/libraries.py to group by folder and by install.

A process whose ROCm libraries come from two installs (a PyTorch wheel's torch/lib beside /opt/rocm, /opt/rocm-6.2
beside /opt/rocm-6.4) fails in ways no single line says; the listings below show it, and they name every ROCm
library, not only the HIP runtime (librocblas, libMIOpen, librccl, libhsa-runtime64, libamd_comgr, ...)::

    libhsa-runtime64.so.1 => /opt/rocm-6.2.0/lib/libhsa-runtime64.so.1 (0x00007f7a5285d000)        ldd
         4714:  calling init: /opt/rocm-6.2.0/lib/librocblas.so.4                               LD_DEBUG=libs
    7f97edff7000-7f97edff8000 r--p 00000000 fe:00 2172260      /opt/rocm-6.2.0/lib/librocblas.so.4   /proc/PID/maps
    app  4922 root  mem  REG  254,0  15144 2172260 /opt/rocm-6.2.0/lib/librocblas.so.4          lsof -p PID
    0x00007ffff7fbc050  0x00007ffff7fbc12c  Yes (*)     /opt/rocm-6.2.0/lib/librocblas.so.4     gdb: info sharedlibrary
    ModLoad: 00007ffb`1a2b0000 00007ffb`1c3d4000   C:\\Program Files\\AMD\\ROCm\\6.1\\bin\\rocblas.dll   WinDbg
    0x00007ffb1a2b0000 - 0x00007ffb1c3d4000        C:\\...\\torch\\lib\\MIOpen.dll                   hs_err's module list

LD_DEBUG's ``trying file=`` lines are the loader's search, not a load, and a ``find`` or ``ls`` of copies on disk is
none either: neither is read. A stack frame's or the faulting module's path is a load too; derive/libraries.py reads
those from the stacks.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles

# ROCm's own shared libraries by file name (Linux lib*.so[.N...], Windows *.dll); not libdrm_amdgpu (the
# distribution's) nor the application's own HIP modules.
_NAMES = (r"amdhip64(?:_\d+)?|hsa-runtime64|hsakmt|amd_comgr(?:_\d+)?|hiprtc(?:-builtins)?(?:\d+)?"
          r"|rocblas|hipblas(?:lt)?|MIOpen|rccl|rocfft|hipfft|rocsparse|hipsparse(?:lt)?|rocsolver|hipsolver|rocrand|hiprand"
          r"|roctracer64|roctx64|rocprofiler(?:-sdk|64)?|rocm_smi64|amd_smi|rocm-core|rocm-dbgapi|amd-dbgapi|migraphx\w*"
          r"|rocroller|hipdnn\w*|rocdecode|rocjpeg|amdocl64")
ROCM_LIBRARY = lazy(r"(?:^|[\\/])(?:lib)?(?P<name>" + _NAMES + r")\.(?:so(?:\.\d+)*|dll)$", re.IGNORECASE)

_LIB = r"(?P<p>(?:/|[A-Za-z]:\\)[^\s\t]*?[\\/](?:lib)?[\w+-]+\.(?:so(?:\.\d+)*|dll))"
_LDD = lazy(r"^\s+[\w.+-]+\.so[\w.]*\s+=>\s+" + _LIB + r"\s+\(0x[0-9a-fA-F]+\)\s*$")
_LD_DEBUG = lazy(r"^\s*\d+:\s+(?:calling init:\s+" + _LIB + r"\s*$"
                 r"|file=(?P<q>/\S*?\.so[\w.]*)\s+\[\d+\];\s+(?:dynamically loaded by|generating link map))")
_MAPS = lazy(r"^\s*[0-9a-f]{8,16}-[0-9a-f]{8,16}\s+[r-][w-][x-][ps-]\s+[0-9a-f]{8}\s+[0-9a-f]{2,3}:[0-9a-f]{2,3}\s+\d+\s+"
             + _LIB + r"(?: \(deleted\))?\s*$")
_LSOF = lazy(r"^\s*\S+\s+\d+\s+(?:\d+\s+)?\S+\s+(?:mem|DEL)(?:-\w)?\s+(?:REG|DEL)\s.*?\s" + _LIB + r"\s*$")
_GDB = lazy(r"^\s*(?:0x[0-9a-fA-F]+\s+0x[0-9a-fA-F]+\s+)?(?:Yes|No)(?: \(\*\))?\s+" + _LIB + r"\s*$")
_WINDBG = lazy(r"^\s*ModLoad:\s+[0-9a-fA-F`]{8,17}\s+[0-9a-fA-F`]{8,17}\s+(?P<p>[A-Za-z]:\\.*?\.dll)\s*$", re.IGNORECASE)
_MODULE_RANGE = lazy(r"^\s*0x[0-9a-fA-F]{8,16} - 0x[0-9a-fA-F]{8,16}\s+(?P<p>[A-Za-z]:\\[^\t]*?\.dll)\s*$", re.IGNORECASE)
_FORMATS = (_LDD, _LD_DEBUG, _MAPS, _LSOF, _GDB, _WINDBG, _MODULE_RANGE)
_NEEDLES = Needles(r"(?i:(?:" + _NAMES + r")\.(?:so|dll))")


def parse(artifact: Artifact, case: Case) -> None:
    seen: set[str] = set()  # /proc/PID/maps lists a library once per mapping: its first line says it
    for _, where, text in _NEEDLES.readable_lines(artifact):
        for pattern in _FORMATS:
            m = pattern.match(text)
            if m is None:
                continue
            path = m["p"] or m.groupdict().get("q")
            if path and path not in seen and ROCM_LIBRARY.search(path):
                seen.add(path)
                case.add_fact("rocm_library_loaded", path, where, text.strip(), 50)
            break


def library_name(path: str) -> str | None:
    """The ROCm library a path or file name is (``rocblas``, ``amdhip64``), or None for any other file."""
    m = ROCM_LIBRARY.search(path.strip().strip("'\"`"))
    return m["name"].lower() if m else None


