"""The known-frames store: names that real symbolized stacks gave to offsets of one library build.

One YAML file per library build, in ``signatures/frames/`` (shipped) and in the user's
store (``$XDG_DATA_HOME/hip-triage/frames``, where ``triage frames learn`` writes for an
installed package); both are read and merged::

    library: libamdhip64.so
    version: 7.2.53211
    build_id: 0123abcd...          # optional: the GNU build-id, when it is known
    file_offset_delta: 0x1000      # module offset = kernel-log file offset + delta
    source: where the names were seen
    frames:
      "0x48a610": amd::Symbol::getDeviceKernel(amd::Device const&)
    crash_sites:                   # optional: a crash at this offset has a known cause
      "0x4b71c9": blit-kernels-failed

A crash site becomes the case's ``crash_site`` fact; signatures name the causes they explain.

A name is used only for exactly the same build: another version's offsets mean nothing, and
a record with a build-id never serves a module whose build-id differs.
"""

from __future__ import annotations

import functools
import os
from dataclasses import field
from pathlib import Path
from typing import Any

from triage.lazy import dataclass, lazy
from triage.model import Case
from triage.resources import data_dir, load_yaml

_SONAME = lazy(r"^(?P<base>.+?\.so)(?:\.(?P<ver>\d+(?:\.\d+)*))?$")


@dataclass
class Build:
    """One library build's record in a store: the names of its frame offsets and its known crash sites."""

    library: str
    version: str
    source: str
    file_offset_delta: int | None = None
    frames: dict[int, str] = field(default_factory=dict)
    build_id: str | None = None
    path: Path | None = None
    crash_sites: dict[int, str] = field(default_factory=dict)


def split_module(name: str) -> tuple[str, str | None]:
    """``libamdhip64.so.7.2.53211`` -> (``libamdhip64.so``, ``7.2.53211``); other names unchanged."""
    base = split_module_path(name)
    m = _SONAME.match(base)
    return (m["base"], m["ver"]) if m else (base, None)


def kernel_versions(case: Case) -> dict[str, str]:
    """Library -> full version, from the kernel's fault lines (read once: a log may hold thousands)."""
    out: dict[str, str] = {}
    for kf in case.kernel_faults:
        kf_library, kf_version = split_module(kf.module or "")
        if kf_version and kf_version.count(".") >= 2:
            out.setdefault(kf_library, kf_version)
    return out


def module_version(case: Case, module: str, from_kernel: dict[str, str] | None = None) -> str | None:
    """The version of a library as loaded in this case: from its full file name, the kernel's fault lines
    (``from_kernel``: kernel_versions(case), made once by a caller naming many frames) or the runtime's own log."""
    library, version = split_module(module)
    if version and version.count(".") >= 2:
        return version
    known = (from_kernel if from_kernel is not None else kernel_versions(case)).get(library)
    if known:
        return known
    hip = case.fact("hip_version")
    if library == "libamdhip64.so" and hip and hip.score >= 100:
        major = hip.value.split(".")[0]
        if version in (None, major):
            return hip.value
    return None


def module_build_id(case: Case, module: str) -> str | None:
    """The GNU build-id of the module the crashed process loaded, when a core file recorded it."""
    fact = case.fact(f"build_id:{split_module_path(module)}")
    return fact.value.lower() if fact else None


def split_module_path(module: str) -> str:
    """``/opt/rocm/lib/libamdhip64.so.7`` -> ``libamdhip64.so.7``."""
    return module.replace("\\", "/").rsplit("/", 1)[-1]


def _int(value: object) -> int:
    return value if isinstance(value, int) else int(str(value), 16)


def user_store() -> Path:
    """The user's known-frames folder: ``$XDG_DATA_HOME/hip-triage/frames`` (``~/.local/share/...``)."""
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "hip-triage" / "frames"


def default_store() -> Path:
    """Where learned frames go: ``signatures/frames/`` in a source checkout, else the user's store."""
    shipped = data_dir("signatures")
    if "_data" not in shipped.parts and (shipped.parent / "pyproject.toml").is_file() and os.access(shipped / "frames", os.W_OK):
        return shipped / "frames"
    return user_store()


def stores(shipped: Path) -> list[Path]:
    """The folders symbolization reads, shipped first: the shipped one and the user's store when it exists."""
    user = user_store()
    return [shipped] + ([user] if user.is_dir() and user.resolve() != shipped.resolve() else [])


def _parsed(path: Path) -> Any:
    """The file's YAML, parsed again only when the file changed (callers only read it): every triage of
    a corpus run reads the same files."""
    stat = path.stat()
    return _parse_once(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=256)
def _parse_once(path: str, mtime: int, size: int) -> Any:
    return load_yaml(Path(path))


def _yaml_error() -> type[Exception]:
    """PyYAML's error, imported only when a file failed (an except clause names it then): the parsed files come
    from the per-user cache, and a warm triage imports no PyYAML."""
    import yaml

    return yaml.YAMLError


def load(folder: Path) -> tuple[list[Build], list[str]]:
    """Read every build file; a broken file is a warning, not a failure."""
    builds: list[Build] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = _parsed(path)
            delta = data.get("file_offset_delta")
            build_id = data.get("build_id")
            if not data.get("version") and not build_id:
                raise ValueError("neither a version nor a build_id")
            builds.append(Build(
                library=str(data["library"]),
                version=str(data.get("version") or ""),
                source=str(data.get("source", path.name)),
                file_offset_delta=None if delta is None else _int(delta),
                frames={_int(k): str(v) for k, v in (data.get("frames") or {}).items()},
                build_id=str(build_id).lower() if build_id else None,
                path=path,
                crash_sites={_int(k): str(v) for k, v in (data.get("crash_sites") or {}).items()},
            ))
        except (OSError, _yaml_error(), KeyError, TypeError, ValueError, AttributeError) as err:
            problems.append(f"known frames {path.name} skipped: {err}")
    return builds, problems


def load_all(folders: list[Path]) -> tuple[list[Build], list[str]]:
    """Read several stores; the same build in two of them is merged, the earlier store winning a disagreement."""
    merged: list[Build] = []
    problems: list[str] = []
    for folder in folders:
        builds, found = load(folder)
        problems.extend(found)
        for build in builds:
            same = next((b for b in merged if b.library == build.library and b.version == build.version
                         and b.build_id == build.build_id), None)
            if same is None:
                merged.append(build)
                continue
            for offset, name in build.frames.items():
                if same.frames.setdefault(offset, name) != name:
                    problems.append(f"known frames {build.path}: 0x{offset:x} is {name!r} there but "
                                    f"{same.frames[offset]!r} in {same.path}; kept the latter")
            if same.file_offset_delta is None:
                same.file_offset_delta = build.file_offset_delta
            for offset, cause in build.crash_sites.items():
                same.crash_sites.setdefault(offset, cause)
    return merged, problems


def find(builds: list[Build], library: str, version: str | None, build_id: str | None = None) -> Build | None:
    """The build record for exactly this library and version (a longer version string may add a build hash),
    or for this build-id; a record whose build-id differs from the module's is never used."""
    for build in builds:
        if build.library != library:
            continue
        if build_id and build.build_id:
            if build.build_id == build_id:
                return build
            continue
        if version and (version == build.version or version.startswith(build.version + ".")):
            return build
    return None
