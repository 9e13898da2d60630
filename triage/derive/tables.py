"""The support tables under ``signatures/tables/``: GPU architectures and what each ROCm release supports,
PCI device ids and chip codenames, the kernels each release lists, the releases of date-stamped wheels.

They are data with their sources in the files; this module only reads them into frozen values
that any number of analyses may share.
"""

from __future__ import annotations

import functools
import re
from dataclasses import field
from pathlib import Path

from triage.digest import sha256
from triage.lazy import dataclass, lazy
from triage.resources import cache_dir, data_dir, load_yaml, read_cached, write_cached

_ARCH = lazy(r"^gfx[0-9a-f]{3,4}$")
_TRADEMARK = lazy(r"\((?:tm|r)\)|[\u2122\u00ae]")


class TableError(ValueError):
    """A support table that cannot be used (the message names the file and the entry)."""


@dataclass(frozen=True)
class Arch:
    """One gfx processor of gpus.yaml: its family, generation, whether it is an APU and its product names."""
    name: str
    family: str
    apu: bool
    generation: str
    names: tuple[str, ...]


@dataclass(frozen=True)
class Tables:
    """The support tables of a signature folder, read once a process."""
    archs: dict[str, Arch]
    generic: dict[str, frozenset[str]]
    known_since: dict[str, tuple[int, ...]]
    supported: dict[str, tuple[tuple[tuple[int, ...], frozenset[str]], ...]]  # os -> ((release, archs), ...) newest first
    product_names: tuple[tuple[str, str], ...]  # (lower-case name, arch), longest name first
    pci_ids: dict[str, str]  # "73bf" or "73ff:df" -> arch
    codenames: tuple[tuple[re.Pattern[str], str], ...]  # (pattern of a name's start, arch), longest name first
    kernels: tuple[tuple[tuple[int, ...], dict[str, frozenset[tuple[int, ...]]]], ...]  # (release, family -> kernels), newest first
    sdk_dates: tuple[tuple[str, str], ...]  # (first build date YYYY-MM-DD, release), oldest first
    features: dict[str, frozenset[str]] = field(default_factory=dict)  # arch -> xnack, mfma, wmma (gpu-features.yaml)

    def arch(self, name: str | None) -> Arch | None:
        return self.archs.get(name or "")

    def arch_of_product(self, text: str) -> str | None:
        """The gfx arch of the first product name found in ``text`` as whole words (longest names first);
        trademark signs are no part of a name (Windows and llama.cpp print "AMD Radeon(TM) 780M Graphics")."""
        low = " ".join(_TRADEMARK.sub(" ", text.lower()).split())
        for name, arch in self.product_names:
            at = low.find(name)
            while at >= 0:
                end = at + len(name)
                if (at == 0 or not low[at - 1].isalnum()) and (end == len(low) or not low[end].isalnum()):
                    return arch
                at = low.find(name, at + 1)
        return None

    def arch_of_pci_id(self, device: str, revision: str | None = None) -> str | None:
        """``73bf`` (and the revision, where one id covers two processors) -> its gfx processor."""
        device = device.lower()
        return self.pci_ids.get(f"{device}:{revision.lower()}" if revision else "") or self.pci_ids.get(device)

    def arch_of_codename(self, text: str) -> str | None:
        """The gfx arch of the chip codename that starts a device name (``Navi 21``, ``Navi21``, ``Ellesmere XT``)."""
        for pattern, arch in self.codenames:
            if pattern.match(text.strip()):
                return arch
        return None

    def listed_kernels(self, release: tuple[int, ...]) -> dict[str, frozenset[tuple[int, ...]]] | None:
        """The kernels (major, minor) the matrix lists for the release, per distribution family (None: the
        release is not in the table)."""
        for listed, families in self.kernels:
            if listed[:2] == release[:2]:
                return families
        return None

    def release_of_date(self, date: str) -> str | None:
        """The release whose wheels had started by ``YYYY-MM-DD`` (None: older than every entry)."""
        found = None
        for since, release in self.sdk_dates:
            if date >= since:
                found = release
        return found

    def supports(self, arch: str, release: tuple[int, ...], os_name: str) -> bool | None:
        """Whether the ROCm release lists the arch as supported on the OS (None: no table for it)."""
        for since, archs in self.supported.get(os_name, ()):
            if release[:2] >= since[:2]:
                return arch in archs
        return None

    def knows(self, arch: str, release: tuple[int, ...]) -> bool | None:
        """Whether the release's runtime knows the processor at all (a processor of the table without a
        ``known_since`` is older than every release listed; None: not in the table)."""
        since = self.known_since.get(arch)
        if since is None:
            return True if arch in self.archs else None
        return release[:2] >= since[:2]


def version_tuple(text: str) -> tuple[int, ...]:
    """``"6.2.41133"`` -> (6, 2, 41133); stops at the first part that is not a number."""
    parts = []
    for part in str(text).split("."):
        m = re.match(r"\d+", part)
        if not m:
            break
        parts.append(int(m.group(0)))
        if m.end() < len(part):
            break
    return tuple(parts)


def _read(folder: Path, name: str) -> dict:
    path = folder / name
    try:
        data = load_yaml(path)
    except Exception as exc:  # noqa: BLE001 - any unreadable table is reported the same way
        raise TableError(f"{path}: cannot be read ({exc}); reinstall hip-triage or fix the file") from None
    if not isinstance(data, dict):
        raise TableError(f"{path}: a support table is a mapping")
    return data


_FILES = ("gpus.yaml", "rocm-support.yaml", "gpu-ids.yaml", "kernel-support.yaml", "rocm-wheels.yaml",
          "gpu-features.yaml")


@functools.cache
def load_tables(folder: Path | None = None) -> Tables:
    """Read the tables of a signature folder (``tables/gpus.yaml``, ``rocm-support.yaml``, ``gpu-ids.yaml``,
    ``kernel-support.yaml``, ``rocm-wheels.yaml``, ``gpu-features.yaml``); a folder without them (a user's own signatures) uses the
    shipped ones, table by table.

    The tables made are kept in the per-user cache under the stamps (path, modification time, size) of the files
    read and of this module, and read back whole while those stay the same: a warm single triage then reads one
    file instead of six and does not check and sort the rows again."""
    shipped = data_dir("signatures") / "tables"
    base = (folder or data_dir("signatures")) / "tables"
    paths = [base / name if (base / name).is_file() else shipped / name for name in _FILES]
    before = _stamps(paths)
    cache = cache_dir("tables") if before else None
    kept = cache / f"{sha256(repr(before).encode()).hexdigest()[:32]}.pickle" if cache else None
    found = read_cached(kept) if kept else None
    if isinstance(found, Tables):
        return found
    tables = _load(base, shipped)
    if kept and _stamps(paths) == before:  # not kept when a table changed while it was read
        write_cached(kept, tables)
    return tables


def _stamps(paths: list[Path]) -> list[tuple[str, int, int]] | None:
    """What tells one version of the tables (and of the code that reads them) from another; None when a file
    cannot be looked at (then nothing is kept)."""
    try:
        return [(str(path), stat.st_mtime_ns, stat.st_size)
                for path, stat in ((path, path.stat()) for path in (*paths, Path(__file__)))]
    except OSError:
        return None


def _load(base: Path, shipped: Path) -> Tables:
    """The tables read from their files (``base``, else ``shipped``), checked."""
    def read(name: str) -> dict:
        return _read(base if (base / name).is_file() else shipped, name)

    gpus, support = read("gpus.yaml"), read("rocm-support.yaml")
    ids, kernels, wheels = read("gpu-ids.yaml"), read("kernel-support.yaml"), read("rocm-wheels.yaml")
    archs = {}
    for name, row in (gpus.get("archs") or {}).items():
        if not _ARCH.match(str(name)) or not isinstance(row, dict):
            raise TableError(f"{base / 'gpus.yaml'}: entry {name!r} is not a gfx processor with its fields")
        archs[str(name)] = Arch(str(name), str(row.get("family", "")), bool(row.get("apu", False)),
                                str(row.get("generation", "")), tuple(str(n) for n in row.get("names") or ()))
    products = sorted(((" ".join(n.lower().split()), a.name) for a in archs.values() for n in a.names),
                      key=lambda item: (-len(item[0]), item[0]))
    supported = {}
    for os_name in ("linux", "windows"):
        rows = [(version_tuple(release), frozenset(map(str, listed)))
                for release, listed in (support.get(os_name) or {}).items()]
        supported[os_name] = tuple(sorted(rows, reverse=True))
    return Tables(
        archs=archs,
        generic={str(g): frozenset(map(str, members)) for g, members in (gpus.get("generic") or {}).items()},
        known_since={str(a): version_tuple(v) for a, v in (support.get("known_since") or {}).items()},
        supported=supported,
        product_names=tuple(products),
        pci_ids=_pci_ids(ids, archs, base),
        codenames=_codenames(ids, archs, base),
        kernels=_kernels(kernels, base),
        sdk_dates=_dates(wheels, base),
        features=_features(read("gpu-features.yaml"), archs, base),
    )


def _known(arch: object, archs: dict, where: str) -> str:
    if str(arch) not in archs:
        raise TableError(f"{where}: {arch!r} is not a processor of gpus.yaml")
    return str(arch)


def _pci_ids(data: dict, archs: dict, base: Path) -> dict[str, str]:
    out = {}
    for key, arch in (data.get("ids") or {}).items():
        key = str(key).lower()
        if not re.fullmatch(r"[0-9a-f]{4}(?::[0-9a-f]{2})?", key):
            raise TableError(f"{base / 'gpu-ids.yaml'}: {key!r} is not a 4-digit hex device id (with :rev)")
        out[key] = _known(arch, archs, f"{base / 'gpu-ids.yaml'}: id {key}")
    return out


def _codenames(data: dict, archs: dict, base: Path) -> tuple[tuple[re.Pattern[str], str], ...]:
    rows = []
    for name, arch in (data.get("codenames") or {}).items():
        words = str(name).split()
        pattern = lazy(r"\s?".join(map(re.escape, words)) + r"(?![\w-])", re.IGNORECASE)
        rows.append((len(str(name)), pattern, _known(arch, archs, f"{base / 'gpu-ids.yaml'}: codename {name}")))
    return tuple((p, a) for _, p, a in sorted(rows, key=lambda r: -r[0]))


def _kernels(data: dict, base: Path) -> tuple[tuple[tuple[int, ...], dict[str, frozenset[tuple[int, ...]]]], ...]:
    rows = []
    for release, families in (data.get("releases") or {}).items():
        if not isinstance(families, dict):
            raise TableError(f"{base / 'kernel-support.yaml'}: release {release} maps families to kernel lists")
        table = {str(f): frozenset(version_tuple(str(k))[:2] for k in kernels) for f, kernels in families.items()}
        rows.append((version_tuple(str(release)), table))
    return tuple(sorted(rows, reverse=True))


def _dates(data: dict, base: Path) -> tuple[tuple[str, str], ...]:
    rows = []
    for row in data.get("dated") or []:
        since, release = str((row or {}).get("from", "")), str((row or {}).get("release", ""))
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", since) or not version_tuple(release):
            raise TableError(f"{base / 'rocm-wheels.yaml'}: {row!r} needs from: YYYY-MM-DD and release: X.Y")
        rows.append((since, release))
    return tuple(sorted(rows))


FEATURES = frozenset({"xnack", "mfma", "wmma"})


def _features(data: dict, archs: dict, base: Path) -> dict[str, frozenset[str]]:
    """arch -> the hardware features gpu-features.yaml lists for it (an arch gpus.yaml lacks, or a feature this
    version does not know, is a broken table)."""
    out = {}
    for arch, listed in (data.get("features") or {}).items():
        named = frozenset(map(str, listed or ()))
        if str(arch) not in archs or not named <= FEATURES:
            raise TableError(f"{base / 'gpu-features.yaml'}: entry {arch!r} names an unknown processor or feature "
                             f"(features: {', '.join(sorted(FEATURES))})")
        out[str(arch)] = named
    return out
