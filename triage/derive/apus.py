"""The integrated GPU the machine's AMD processor carries: ``apu_arch`` (``gfx90c`` for a Ryzen 7 4800U, ``gfx1103``
for a Ryzen 7 7840HS, ``gfx1150`` for a Ryzen AI 9 HX 370, ``gfx1151`` for a Ryzen AI Max), from the CPU names
programs print (parsers/cpu.py's ``cpu_model``) and tables/apus.yaml.

It is a fact of its own, never ``gfx_arch`` or ``gfx_arch_real``: a machine with a discrete Radeon has this iGPU too,
and which of the two a program used is what rocminfo, the runtime or the device list says. A signature may weigh it
where nothing else names the GPU, or test it beside a discrete GPU's arch (``apu_arch`` present and ``apu`` no).

The table is read from the shipped signatures (tables/apus.yaml), once per process; a folder of a user's own
signatures does not replace it (the support tables' loader, derive/tables.py, would be the place for that).
"""

from __future__ import annotations

import functools
import re

from triage.derive.tables import TableError, Tables
from triage.model import Case
from triage.resources import data_dir, load_yaml


@functools.cache
def _rows() -> tuple[tuple[re.Pattern[str], str], ...]:
    path = data_dir("signatures") / "tables" / "apus.yaml"
    try:
        data = load_yaml(path)
        rows = tuple((re.compile(str(row["match"]), re.IGNORECASE), str(row["arch"])) for row in data["apus"])
    except Exception as exc:  # noqa: BLE001 - any unreadable table is reported the same way
        raise TableError(f"{path}: cannot be read ({exc}); reinstall hip-triage or fix the file") from None
    return rows


def arch_of_cpu(name: str) -> str | None:
    """The gfx processor of a CPU model's integrated GPU, or None (no graphics, or a model the table lacks)."""
    return next((arch for pattern, arch in _rows() if pattern.search(name)), None)


def derive(case: Case, tables: Tables) -> None:
    for fact in sorted(case.facts.get("cpu_model", []), key=lambda f: -f.score):
        arch = arch_of_cpu(fact.value)
        if arch and tables.arch(arch) is not None:
            case.add_fact("apu_arch", arch, fact.where, fact.text, 50)
            return
