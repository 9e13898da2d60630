"""Where the process loaded the HIP runtime from: one ``hip_runtime_dir`` fact per distinct folder, and
``hip_runtime_dirs``, how many there are (``2`` for two copies; a single value, so a report's fact list shows it).

Two folders mean two copies of ``libamdhip64`` / ``amdhip64_N.dll`` met in one process (a wheel's
bundled runtime beside /opt/rocm's, an application's DLL beside the driver's in System32), the
shape of many release mixes. Only places that show a load count: a stack frame's or the faulting
module's path, an ``ldd`` line, and lines the environment parser read as the runtime loaded or used
(``hip_library_path``). A ``find`` or ``ls`` listing of copies on disk is not a load.

Folders that are one install under different names count once: ``/opt/rocm-6.2.0`` is
``/opt/rocm`` (the usual symlink), ``lib64`` is ``lib``, ROCm 3-5's ``/opt/rocm/hip/lib`` is
``/opt/rocm/lib``; Windows folders compare case-blind.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Case, Where

_RUNTIME = lazy(r"(?:^|[\\/])(?:lib)?amdhip64(?:_\d+)?\.(?:dll|so(?:\.\d+)*)$", re.IGNORECASE)
_LDD_PATH = lazy(r"\blibamdhip64\.so[\w.]*\s+=>\s+(?P<p>/\S+)")
# Folders of one install: a versioned tree and its /opt/rocm link, and ROCm 5's hip/lib beside lib.
_SAME_INSTALL = ((lazy(r"/opt/rocm-\d[\w.-]*"), "/opt/rocm"), (lazy(r"/opt/rocm/hip/lib(?=/|$)"), "/opt/rocm/lib"))
_DRIVE = lazy(r"[A-Za-z]:/")
_LIB64 = lazy(r"/lib64(?=/|$)")


def folder_of(path: str) -> tuple[str, str] | None:
    """(the folder of a file's path as printed, a form to compare: forward slashes, a Windows drive's path in lower
    case, lib64 as lib, no trailing slash), or None for a bare file name."""
    path = path.strip().strip("'\"`")
    cut = max(path.rfind("/"), path.rfind("\\"))
    if cut <= 0:
        return None
    folder = path[:cut]
    key = folder.replace("\\", "/").rstrip("/")
    if _DRIVE.match(key):
        key = key.lower()
    return folder, _LIB64.sub("/lib", key)


def _folder(path: str) -> tuple[str, str] | None:
    """(the folder as printed, its canonical form: one for every folder of the same install), or None."""
    if (found := folder_of(path)) is None:
        return None
    folder, key = found
    for pattern, canonical in _SAME_INSTALL:
        key = pattern.sub(canonical, key)
    return folder, key


def derive(case: Case) -> None:
    found: list[tuple[str, Where, str]] = []
    for stack in case.stacks:
        for frame in stack.frames:
            if frame.module and _RUNTIME.search(frame.module):
                found.append((frame.module, frame.where, frame.text))
    fault = case.fault
    if fault is not None and fault.module and _RUNTIME.search(fault.module):
        found.append((fault.module, fault.where, case.line(fault.where).strip()))
    for fact in case.facts.get("ldd_gpu_library", []):
        if m := _LDD_PATH.search(fact.text):
            found.append((m["p"], fact.where, fact.text))
    for name in ("hip_library_loaded", "hip_library_path"):
        for fact in case.facts.get(name, []):
            found.append((fact.value, fact.where, fact.text))
    kept: dict[str, tuple[str, Where, str]] = {}
    for path, where, text in found:
        folder = _folder(path)
        if folder is not None and folder[1] not in kept:
            kept[folder[1]] = (folder[0], where, text)
            case.add_fact("hip_runtime_dir", folder[0], where, text, 50)
    if kept:  # quoted at the line that adds the last folder: the one that makes a second copy
        _, where, text = list(kept.values())[-1]
        case.add_fact("hip_runtime_dirs", str(len(kept)), where, text, 50)
