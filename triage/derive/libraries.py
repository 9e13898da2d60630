"""Where the process loaded its ROCm libraries from, and from how many installs.

Facts (each folder or root once, in the order first seen; the counts are single values a report shows):

- ``rocm_library_dir``: a folder a ROCm library (libamdhip64, librocblas, libMIOpen, librccl, libhsa-runtime64,
  libamd_comgr, ... or their Windows DLLs) was loaded from; ``rocm_library_dirs``: how many.
- ``rocm_library_root``: the install that folder belongs to; ``rocm_library_roots``: how many. Two roots is
  "ROCm libraries from two installs in one process", the shape of many release mixes, as one fact condition
  (``count_at_least: 2`` on ``rocm_library_root``).

Only places that show a load count: the paths of stack frames and of the faulting module, and the listings
parsers/libloads.py reads (ldd, LD_DEBUG, /proc/PID/maps, lsof, gdb's ``info sharedlibrary``, WinDbg's ModLoad, a
crash report's module list), plus the HIP runtime paths the other parsers read (``hip_library_loaded``,
``hip_library_path``). A bare file name (``librocblas.so.4`` in a frame) has no folder and adds none.

An install's root is the folder above its ``lib``, ``lib64``, ``bin`` or ``lib/<multiarch triplet>``: ``/opt/rocm-6.2.0``,
``/usr`` (a distribution's packages), ``C:\\Program Files\\AMD\\ROCm\\6.1``; a Python package's is the package
(``site-packages/torch``), and TheRock's ``_rocm_sdk_core`` and ``_rocm_sdk_libraries_*`` packages are one install
(``site-packages/_rocm_sdk``). ``/opt/rocm`` is the usual link to the one versioned ``/opt/rocm-X.Y.Z`` beside it and
counts with it; two versioned ones are two. Windows paths compare case-blind.
"""

from __future__ import annotations

import re

from triage.derive.runtimes import folder_of
from triage.lazy import lazy
from triage.model import Case, Where
from triage.parsers.libloads import library_name

_PACKAGE = lazy(r"^(?P<site>.*?/(?:site|dist)-packages)/(?P<pkg>[^/]+)")
_VERSIONED_OPT = lazy(r"^/opt/rocm-\d[\w.-]*$")
_TAIL = lazy(r"/(?:lib(?:64)?(?:/[\w]+-linux-gnu\w*)?|bin)$")
_OPT = lazy(r"^(?P<r>/opt/rocm(?:-\d[\w.-]*)?)(?:/|$)")


def root_of(folder: str) -> str:
    """The install a library folder belongs to, as a comparable key (forward slashes; Windows lower-cased)."""
    key = folder.replace("\\", "/").rstrip("/")
    if re.match(r"[A-Za-z]:/", key):
        key = key.lower()
    if m := _PACKAGE.match(key):
        package = "_rocm_sdk" if m["pkg"].startswith("_rocm_sdk") else m["pkg"]
        return f"{m['site']}/{package}"
    if m := _OPT.match(key):
        return m["r"]
    return _TAIL.sub("", key) or key


def _loads(case: Case) -> list[tuple[str, Where, str]]:
    """Every (path, line, text) that shows a ROCm library loaded from a folder."""
    found: list[tuple[str, Where, str]] = []
    for stack in case.stacks:
        for frame in stack.frames:
            if frame.module and library_name(frame.module):
                found.append((frame.module, frame.where, frame.text))
    fault = case.fault
    if fault is not None and fault.module and library_name(fault.module):
        found.append((fault.module, fault.where, case.line(fault.where).strip()))
    for name in ("rocm_library_loaded", "hip_library_loaded", "hip_library_path"):
        for fact in case.facts.get(name, []):
            if library_name(fact.value):
                found.append((fact.value, fact.where, fact.text))
    return found


def _folder(path: str) -> tuple[str, str] | None:
    """(the folder as printed, its comparable form: ROCm 5's hip/lib and hsa/lib as the tree's lib), or None."""
    if (found := folder_of(path)) is None:
        return None
    folder, key = found
    return folder, re.sub(r"^(/opt/rocm(?:-[\w.-]+)?)/(?:hip|hsa)/lib(?=/|$)", r"\1/lib", key)


def derive(case: Case) -> None:
    loads = []
    for path, where, text in _loads(case):
        if (folder := _folder(path)) is not None:
            loads.append((folder[0], folder[1], root_of(folder[0]), where, text))
    versioned = {root for *_, root, _, _ in loads if _VERSIONED_OPT.match(root)}
    # /opt/rocm is the usual link to the one versioned /opt/rocm-X.Y.Z beside it: one install
    alias = {"/opt/rocm": next(iter(versioned))} if len(versioned) == 1 else {}
    dirs: dict[str, tuple[str, Where, str]] = {}
    roots: dict[str, tuple[str, Where, str]] = {}
    for printed, key, root, where, text in loads:
        if root in alias:
            key, root = alias[root] + key[len(root):], alias[root]
        dirs.setdefault(key, (printed, where, text))
        roots.setdefault(root, (root, where, text))
    for value, where, text in dirs.values():
        case.add_fact("rocm_library_dir", value, where, text, 50)
    for value, where, text in roots.values():
        case.add_fact("rocm_library_root", value, where, text, 50)
    if dirs:  # quoted at the line that adds the last one: the one that makes a second
        _, where, text = list(dirs.values())[-1]
        case.add_fact("rocm_library_dirs", str(len(dirs)), where, text, 50)
    if roots:
        _, where, text = list(roots.values())[-1]
        case.add_fact("rocm_library_roots", str(len(roots)), where, text, 50)
