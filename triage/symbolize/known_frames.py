"""The known-frames store: names that real symbolized stacks gave to offsets of one library build.

One YAML file per library build in ``signatures/frames/``::

    library: libamdhip64.so
    version: 7.2.53211
    file_offset_delta: 0x1000      # module offset = kernel-log file offset + delta
    source: where the names were seen
    frames:
      "0x48a610": amd::Symbol::getDeviceKernel(amd::Device const&)

A name is used only for exactly the same build: another version's offsets mean nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import re
import yaml

from triage.resources import load_yaml

_SONAME = re.compile(r"^(?P<base>.+?\.so)(?:\.(?P<ver>\d+(?:\.\d+)*))?$")


@dataclass
class Build:
    library: str
    version: str
    source: str
    file_offset_delta: int | None = None
    frames: dict[int, str] = field(default_factory=dict)


def split_module(name: str) -> tuple[str, str | None]:
    """``libamdhip64.so.7.2.53211`` -> (``libamdhip64.so``, ``7.2.53211``); other names unchanged."""
    base = name.replace("\\", "/").rsplit("/", 1)[-1]
    m = _SONAME.match(base)
    return (m["base"], m["ver"]) if m else (base, None)


def _int(value: object) -> int:
    return value if isinstance(value, int) else int(str(value), 16)


def load(folder: Path) -> tuple[list[Build], list[str]]:
    """Read every build file; a broken file is a warning, not a failure."""
    builds: list[Build] = []
    problems: list[str] = []
    for path in sorted(folder.glob("*.yaml")):
        try:
            data = load_yaml(path)
            delta = data.get("file_offset_delta")
            builds.append(Build(
                library=str(data["library"]),
                version=str(data["version"]),
                source=str(data.get("source", path.name)),
                file_offset_delta=None if delta is None else _int(delta),
                frames={_int(k): str(v) for k, v in (data.get("frames") or {}).items()},
            ))
        except (OSError, yaml.YAMLError, KeyError, TypeError, ValueError, AttributeError) as err:
            problems.append(f"known frames {path.name} skipped: {err}")
    return builds, problems


def find(builds: list[Build], library: str, version: str | None) -> Build | None:
    """The build record for exactly this library and version (a longer version string may add a build hash)."""
    if not version:
        return None
    for build in builds:
        if build.library == library and (version == build.version or version.startswith(build.version + ".")):
            return build
    return None
