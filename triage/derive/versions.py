"""Every ROCm release a case mentions, and where: the runtime that ran, the ROCm a wheel was built
for, installed trees and packages, a ROCm container image's tag, the HIP library's major in a file name,
a math library's soname major (``librocblas.so.4`` is ROCm 6: tables/rocm-library-sonames.yaml).

``rocm_versions`` lists each distinct release (``6.2``; ``6`` where only a major is known) once;
``rocm_version`` is the one the process most likely ran (the runtime's own banner first, a
DLL or soname major last). HIP and ROCm share major.minor since ROCm 5.

A wheel that names only the build date of its ROCm SDK (``torch 2.9.0+rocmsdk20251116``) gives a release
through tables/rocm-wheels.yaml (the release whose builds had started by that date): ``rocm_version_dated``,
used for ``rocm_versions`` and ``rocm_version`` only when no line of the case names a release itself, so
that a date never makes a second release beside a named one. ``rocm_build_date`` (the parser's) keeps the date.
"""

from __future__ import annotations

import functools

from triage.derive.tables import TableError, Tables, version_tuple
from triage.model import Case, Fact
from triage.resources import data_dir, load_yaml

# Fact names, best evidence of the running release first.
SOURCES = ("hip_version", "hip_version_runtime", "hip_version_system", "rocm_version_system", "rocm_version_package",
           "rocm_version_image", "rocm_version_path", "rocm_version_wheel", "rocm_version_library")


def release(value: str, parts: int = 2) -> str:
    """``6.2.41133-dd7f`` -> ``6.2``; ``7`` stays ``7``."""
    return ".".join(map(str, version_tuple(value)[:parts]))


def same_release(a: str, b: str) -> bool:
    """Two releases agree when one is a prefix of the other (``6`` and ``6.2`` agree; ``6.2`` and ``6.4`` do not)."""
    ta, tb = version_tuple(a), version_tuple(b)
    n = min(len(ta), len(tb))
    return n > 0 and ta[:n] == tb[:n]


def distinct(values: list[str]) -> list[str]:
    """The releases that disagree with one another, most precise first (``6`` is dropped beside ``6.2``)."""
    out: list[str] = []
    for value in sorted(values, key=lambda v: -len(version_tuple(v))):
        if value and not any(same_release(value, kept) for kept in out):
            out.append(value)
    return out


def _dated(case: Case, tables: Tables) -> list[tuple[str, Fact]]:
    """The release of each date-only wheel (``+rocmsdk20251116`` -> 7.1), as ``rocm_version_dated``."""
    found: list[tuple[str, Fact]] = []
    for fact in case.facts.get("rocm_sdk_date", []):
        if value := tables.release_of_date(fact.value):
            case.add_fact("rocm_version_dated", value, fact.where, fact.text, fact.score)
            found.append((value, fact))
    return found


@functools.cache
def _sonames() -> dict[str, str]:
    """tables/rocm-library-sonames.yaml (the shipped one: derive/tables.py's loader does not read it)."""
    path = data_dir("signatures") / "tables" / "rocm-library-sonames.yaml"
    try:
        return {str(k): str(v) for k, v in load_yaml(path)["sonames"].items()}
    except Exception as exc:  # noqa: BLE001 - any unreadable table is reported the same way
        raise TableError(f"{path}: cannot be read ({exc}); reinstall hip-triage or fix the file") from None


def _soname_majors(case: Case) -> None:
    """A math library's soname (``librocblas.so.4``) as the ROCm major that ships it: ``rocm_version_library``."""
    table = _sonames()
    for fact in list(case.facts.get("rocm_library_soname", [])):
        if major := table.get(fact.value):
            case.add_fact("rocm_version_library", major, fact.where, fact.text, fact.score)


def derive(case: Case, tables: Tables) -> None:
    _soname_majors(case)
    seen: list[tuple[str, Fact]] = []
    for name in SOURCES:
        for fact in case.facts.get(name, []):
            value = release(fact.value)
            if value and int(value.split(".")[0]) < 20:  # HIP 3.x-7.x; not a build number read as a version
                seen.append((value, fact))
    dated = _dated(case, tables)
    seen = seen or dated
    if not seen:
        return
    for value in distinct([v for v, _ in seen]):
        fact = next(f for v, f in seen if v == value)
        case.add_fact("rocm_versions", value, fact.where, fact.text, fact.score)
    precise = [(v, f) for v, f in seen if "." in v] or seen
    value, fact = precise[0]
    case.add_fact("rocm_version", value, fact.where, fact.text, 100)
