"""Check a runtime folder an application ships: which ROCm libraries, and whether what they need is there.

A HIP runtime shipped inside an application (an engine, a wheel, an AppImage) JIT-links its
blit kernels against the device-library bitcode (``ockl.bc``, ``ocml.bc``,
``oclc_isa_version_<arch>.bc``) of its own toolchain when it starts; without it the runtime
cannot create its BlitManager and crashes later. rocBLAS and hipBLASLt need library files
for the GPU's arch. The folder may be known completely (a real folder) or only as an ``ls``
of its top level, possibly cut with ``...``, plus its manifest: what is not visible is
reported as unknown, never as missing.
"""

from __future__ import annotations

import re
from dataclasses import field

from triage.lazy import dataclass, lazy  # compiled on first use, from the code kept between runs

_LIBRARIES = (
    ("HIP", lazy(r"^(?:lib)?amdhip64(?:_(?P<w>\d+))?\.(?:so(?P<v>(?:\.[\w]+)*)|dll)$")),
    ("COMGR", lazy(r"^(?:lib)?amd_comgr(?:_(?P<w>\d+))?\.(?:so(?P<v>(?:\.[\w]+)*)|dll)$")),
    ("HSA runtime", lazy(r"^libhsa-runtime64\.so(?P<v>(?:\.[\w]+)*)$")),
    ("LLVM", lazy(r"^libLLVM(?:-(?P<w>[\w.]+))?\.so(?P<v>(?:\.[\w]+)*)$")),
    ("rocBLAS", lazy(r"^(?:lib)?rocblas\.(?:so(?P<v>(?:\.[\w]+)*)|dll)$")),
    ("hipBLASLt", lazy(r"^(?:lib)?hipblaslt\.(?:so(?P<v>(?:\.[\w]+)*)|dll)$")),
    ("hipBLAS", lazy(r"^(?:lib)?hipblas\.(?:so(?P<v>(?:\.[\w]+)*)|dll)$")),
    ("MIOpen", lazy(r"^(?:lib)?MIOpen\.(?:so(?P<v>(?:\.[\w]+)*)|dll)$")),
)
_RUNTIMES = {"HIP", "COMGR", "HSA runtime"}
_BITCODE_NEEDED = ("ockl.bc", "ocml.bc")
_MATH_FOLDERS = {"rocBLAS": "rocblas/", "hipBLASLt": "hipblaslt/"}
_VERSION_KEY = lazy(r"(hip|comgr|hsa|llvm|rocm)", re.I)
_VERSION_VALUE = lazy(r"^\d+(?:\.\w+)+$|^\d+$")
_FILE_KEYS = lazy(r"^(?:files|contents|paths|entries|manifest)$", re.I)


@dataclass
class Library:
    """A ROCm library in the folder: its kind (``HIP``, ``rocBLAS``), name as listed, the version the name carries."""

    kind: str
    name: str
    version: str


@dataclass
class Folder:
    """What is known of a folder: relative paths (folders end with ``/``), and how completely."""

    names: list[str]
    complete: bool = True  # a real walk; False for a top-level listing
    cut: bool = False  # the listing ended with ``...``
    manifest: dict | list | None = None
    manifest_name: str = ""

    def visible(self, name: str) -> bool | None:
        """Would ``name`` (top level) show if present? None when the listing may hide it."""
        if not self.cut:
            return True
        shown = [n.rstrip("/").lower() for n in self.names if "/" not in n.rstrip("/")]
        return bool(shown) and name.rstrip("/").lower() < max(shown)

    def listed_inside(self, folder: str) -> list[str]:
        return [n for n in self.names if n.startswith(folder) and n != folder]


@dataclass
class ComponentCheck:
    """What the check of a shipped runtime folder found: its libraries, device libraries, math libraries, manifest."""

    libraries: list[Library] = field(default_factory=list)
    hip_version: str = ""
    device_libs: str = "unknown"  # present | missing | unknown (only judged when HIP is bundled)
    device_libs_note: str = ""
    math: dict[str, str] = field(default_factory=dict)
    manifest_missing: list[str] = field(default_factory=list)
    not_in_manifest: list[str] = field(default_factory=list)
    manifest_versions: dict[str, str] = field(default_factory=dict)

    @property
    def bundles_runtime(self) -> bool:
        return any(lib.kind in _RUNTIMES for lib in self.libraries)

    @property
    def summary(self) -> str:
        """One line: ``bundled HIP 7.2 without device libraries``."""
        if not any(lib.kind == "HIP" for lib in self.libraries):
            kinds = ", ".join(dict.fromkeys(lib.kind for lib in self.libraries)) or "no ROCm libraries"
            return f"no bundled HIP runtime ({kinds})"
        hip = f"bundled HIP {short_version(self.hip_version)}".rstrip()
        return {"missing": f"{hip} without device libraries",
                "present": f"{hip} with device libraries{self.device_libs_note and ' (' + self.device_libs_note + ')'}",
                }.get(self.device_libs, f"{hip}; device libraries not visible in what was sent")


def short_version(version: str) -> str:
    """``7.2.53210.41ce572d55`` -> ``7.2``; a bare soname major stays as it is."""
    return ".".join(version.split(".")[:2])


def library(name: str) -> Library | None:
    """The ROCm library a file name is, with the version its name carries."""
    base = name.rstrip("/").rsplit("/", 1)[-1]
    for kind, pattern in _LIBRARIES:
        if m := pattern.match(base):
            version = (m.groupdict().get("v") or "").lstrip(".") or (m.groupdict().get("w") or "")
            return Library(kind, name, version)
    return None


def _walk_json(node: object, key: str = "") -> tuple[list[str], dict[str, str]]:
    """File paths listed under ``files``-like keys, and ``*hip*version*``-like values."""
    files: list[str] = []
    versions: dict[str, str] = {}
    if isinstance(node, dict):
        for k, v in node.items():
            sub_files, sub_versions = _walk_json(v, f"{key}.{k}" if key else str(k))
            if _FILE_KEYS.match(str(k)) and isinstance(v, (list, dict)):
                # ["a.so", ...], [{"path": "a.so", ...}, ...] or {"a.so": {...}, ...}
                files.extend(_paths(v if isinstance(v, list) else list(v)))
            else:
                files.extend(sub_files)
            versions.update(sub_versions)
    elif isinstance(node, list):
        for item in node:
            sub_files, sub_versions = _walk_json(item, key)
            files.extend(sub_files)
            versions.update(sub_versions)
    elif isinstance(node, (str, int, float)) and _VERSION_KEY.search(key) and _VERSION_VALUE.match(str(node)):
        if "version" in key.lower() or key.lower().rsplit(".", 1)[-1] in ("hip", "comgr", "hsa", "llvm", "rocm"):
            versions[key] = str(node)
    return files, versions


def manifest_files(manifest: dict | list) -> list[str]:
    """The file paths a manifest lists."""
    return list(dict.fromkeys(_walk_json(manifest)[0]))


def _paths(items: list) -> list[str]:
    out = []
    for item in items:
        if isinstance(item, dict):
            item = item.get("path") or item.get("name") or item.get("file")
        if isinstance(item, str) and item.strip():
            out.append(item.strip().removeprefix("./"))
    return out


def read_manifest(text: str) -> dict | list | None:
    """A manifest's JSON, or None when it is not JSON."""
    import json  # only for a manifest: a triage of logs imports no JSON

    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return data if isinstance(data, (dict, list)) else None


def check(folder: Folder, arch: str | None = None, hip_version: str = "") -> ComponentCheck:
    """Check a folder for the GPU ``arch`` (``gfx1201``); ``hip_version`` from a log, if any."""
    result = ComponentCheck(libraries=[lib for n in folder.names if (lib := library(n))])
    hip = next((lib for lib in result.libraries if lib.kind == "HIP"), None)
    manifest_files, result.manifest_versions = _walk_json(folder.manifest) if folder.manifest is not None else ([], {})
    known = hip.version if hip else ""
    wider = next((v for k, v in result.manifest_versions.items() if "hip" in k.lower()), "")
    for candidate in (hip_version, wider):
        if candidate and (not known or candidate.startswith(known.split(".")[0] + ".")) and len(candidate) > len(known):
            known = candidate
    result.hip_version = known
    if hip:
        _device_libs(folder, result, arch)
    for kind, prefix in _MATH_FOLDERS.items():
        _math(folder, result, kind, prefix, arch)
    _manifest(folder, result, manifest_files)
    return result


def _device_libs(folder: Folder, result: ComponentCheck, arch: str | None) -> None:
    bitcode = [n for n in folder.names if n.endswith(".bc")]
    have = {n.rsplit("/", 1)[-1] for n in bitcode}
    if bitcode:
        lacking = [b for b in _BITCODE_NEEDED if b not in have]
        isa = f"oclc_isa_version_{arch[3:]}.bc" if arch else ""
        if isa and isa not in have:
            lacking.append(isa)
        result.device_libs = "present"
        result.device_libs_note = f"lacks {', '.join(lacking)}" if lacking else ""
        return
    holders = [n for n in folder.names if re.search(r"(?:^|/)amdgcn/", n)]
    unknown_dirs = [n for n in folder.names if n in ("lib/", "llvm/", "amdgcn/") and not folder.listed_inside(n)]
    if folder.complete and not unknown_dirs:
        result.device_libs = "missing"
        result.device_libs_note = "amdgcn/ has no bitcode" if holders else "no amdgcn/bitcode folder"
    elif holders or unknown_dirs:
        result.device_libs_note = f"{', '.join(unknown_dirs or holders[:1])} listed, its contents not"
    elif folder.visible("amdgcn/"):
        result.device_libs = "missing"
        result.device_libs_note = "no amdgcn/ among the names sent"
    else:
        result.device_libs_note = "the listing is cut before where amdgcn/ would be"


def _math(folder: Folder, result: ComponentCheck, kind: str, prefix: str, arch: str | None) -> None:
    inside = folder.listed_inside(prefix)
    if prefix not in folder.names and not inside:
        return
    archs = sorted({m.group(0) for n in inside for m in re.finditer(r"gfx[0-9a-f]{3,4}(?:-generic)?", n)})
    if not inside:
        result.math[kind] = f"{prefix} listed, its contents not"
    elif arch and arch in archs:
        result.math[kind] = f"has library files for {arch}"
    elif arch:
        result.math[kind] = f"no library files for {arch}" + (f" (has {', '.join(archs)})" if archs else "")
    else:
        result.math[kind] = f"library files for {', '.join(archs) or 'no gfx arch'}"


def _manifest(folder: Folder, result: ComponentCheck, files: list[str]) -> None:
    if not files:
        return
    names = set(folder.names)
    top = {n.rstrip("/").split("/", 1)[0] for n in folder.names}
    for path in dict.fromkeys(files):
        head = path.split("/", 1)[0]
        present = path in names or path + "/" in names if folder.complete else head in top
        if not present and (folder.complete or folder.visible(head)):
            result.manifest_missing.append(path)
    listed = {p.split("/", 1)[0] if not folder.complete else p for p in files}
    skip = {folder.manifest_name, "..."}
    result.not_in_manifest = [n for n in folder.names if not n.endswith("/") and n not in skip
                              and (n if folder.complete else n.split("/", 1)[0]) not in listed
                              and (folder.complete or "/" not in n)]
