"""What the OS and the kernel keep in files: versions, ROCm installs, core settings, the environment.

No external command is needed for these. The lines are written in the shapes triage's
environment parser reads (``OS: ...``, ``kernel 6.8.0-45-generic``, ``amdgpu driver: 6.8.5``,
``ROCm version: 6.2.1``, ``LD_LIBRARY_PATH=...``).
"""

from __future__ import annotations

import os
import re
import resource
from pathlib import Path

from triage.collect.items import Item
from triage.redact import secret_name, secret_value

# Variables that change how the HIP / ROCm runtime behaves, by prefix or by name. One whose name
# or value may be a credential is never written (``triage.redact`` knows the kinds).
ENV_PREFIXES = ("HIP_", "HSA_", "ROCR_", "AMD_", "ROCM_")
ENV_NAMES = frozenset({"LD_LIBRARY_PATH", "LD_PRELOAD"})
_HIP_RUNTIME_GLOBS = ("/usr/lib/libamdhip64.so*", "/usr/lib64/libamdhip64.so*", "/usr/lib/*-linux-gnu/libamdhip64.so*")


def _read(path: str, limit: int = 1 << 16) -> str | None:
    try:
        with open(path, "rb") as handle:
            return handle.read(limit).decode("utf-8", "replace")
    except OSError:
        return None


def _os_name(release: str | None) -> str:
    if release is None:
        return "unknown (no /etc/os-release)"
    fields = dict(re.findall(r'^(\w+)="?(.*?)"?\s*$', release, re.M))
    return fields.get("PRETTY_NAME") or fields.get("NAME") or "unknown"


def _driver() -> str:
    version = _read("/sys/module/amdgpu/version")
    if version and version.strip():
        return f"amdgpu driver: {version.strip()}"
    if Path("/sys/module/amdgpu").is_dir():
        return "amdgpu: loaded, the kernel's own build (no /sys/module/amdgpu/version)"
    return "amdgpu: not loaded (no /sys/module/amdgpu)"


def rocm_installs() -> list[str]:
    """``/opt/rocm*`` folders (with link targets and versions) and distribution HIP runtimes."""
    out = []
    for path in sorted(Path("/opt").glob("rocm*")):
        version = _read(str(path / ".info" / "version"), 256)
        line = str(path)
        if path.is_symlink():
            line += f" -> {os.readlink(path)}"
        line += f" (version {version.strip()})" if version and version.strip() else ""
        out.append(line)
    for pattern in _HIP_RUNTIME_GLOBS:
        out.extend(str(p) for p in sorted(Path("/").glob(pattern.lstrip("/"))))
    return out


def core_settings() -> str:
    """Where the kernel sends a crashing process's core, and whether this shell allows one."""
    pattern = (_read("/proc/sys/kernel/core_pattern") or "?").strip()
    soft, _ = resource.getrlimit(resource.RLIMIT_CORE)
    size = "unlimited" if soft == resource.RLIM_INFINITY else f"{soft} bytes"
    return f"kernel.core_pattern is '{pattern}', core size limit (ulimit -c) {size}"


def system_item() -> Item:
    """OS, kernel, amdgpu driver, ROCm installs, core settings and /etc/os-release."""
    release = _read("/etc/os-release")
    uname = os.uname()
    rocm = rocm_installs()
    default = _read("/opt/rocm/.info/version", 256)
    lines = [
        f"OS: {_os_name(release)}",
        f"uname -a: {uname.sysname} {uname.nodename} {uname.release} {uname.version} {uname.machine}",
        f"kernel {uname.release}",
        _driver(),
    ]
    if default and default.strip():
        lines.append(f"ROCm version: {default.strip()} (/opt/rocm)")
    lines.append("ROCm installs: " + (", ".join(rocm) if rocm else "none found (/opt/rocm*, /usr/lib*/libamdhip64.so*)"))
    lines.append(core_settings())
    if release:
        lines += ["", "/etc/os-release:", *("  " + ln for ln in release.splitlines() if ln.strip())]
    return Item("system.txt", "OS, kernel and amdgpu driver versions, ROCm installs, core settings",
                "\n".join(lines) + "\n")


def environment_item(env: dict[str, str]) -> Item:
    """The variables that change the HIP/ROCm runtime's behaviour; never one that may be a credential."""
    kept, withheld = [], 0
    for name in sorted(env):
        if not (name.startswith(ENV_PREFIXES) or name in ENV_NAMES):
            continue
        if secret_name(name) or secret_value(env[name]):
            withheld += 1
            continue
        kept.append(f"{name}={env[name]}")
    lines = ["# Environment of the command: HIP_*, HSA_*, ROCR_*, AMD_*, ROCM_*, LD_LIBRARY_PATH, LD_PRELOAD"]
    if withheld:
        lines.append(f"# {withheld} variable{'s' * (withheld != 1)} left out: the name or value looks like a credential")
    return Item("environment.txt", "the HIP/ROCm environment variables the command ran with",
                "\n".join(lines + kept) + "\n")
