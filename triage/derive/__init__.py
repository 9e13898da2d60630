"""Facts derived from the parsed ones, once per case, for any signature to use.

Parsers record what each line says (a gfx name, a version, an environment variable); this
stage weighs and compares them: which GPU vendor the case is about, every ROCm version seen
and where, the GPU's real architecture beside the one an override names, APU or discrete, the integrated GPU
the machine's AMD processor carries,
whether the ROCm release supports the GPU and AMD lists the running kernel for it, whether the GPU in use is an
integrated one beside a discrete card, what the GPU's hardware supports (xnack, MFMA, WMMA), the ROCm root the compiler uses, how many folders the HIP runtime was loaded from, from
how many folders and installs the ROCm libraries were loaded, whether the process
hung in a GPU call, whether the device-visibility variables leave any GPU, whether the user is in the group that
may open the GPU's device nodes. Signatures then test these facts in one
condition each instead of repeating the reasoning in regexes.
"""

from __future__ import annotations

from triage.derive import (access, apus, devices, gpu, hang, libraries, runtimes, stack, toolchain, vendor, versions,
                           visibility)
from triage.derive.tables import Tables, load_tables
from triage.model import Case

__all__ = ["Tables", "derive", "load_tables"]


def derive(case: Case, tables: Tables) -> None:
    """Add the derived facts to the case (versions first: the GPU's support depends on them)."""
    vendor.derive(case)
    versions.derive(case, tables)
    gpu.derive(case, tables)
    devices.derive(case, tables)
    apus.derive(case, tables)
    stack.derive(case)
    runtimes.derive(case)
    libraries.derive(case)
    hang.derive(case)
    toolchain.derive(case)
    visibility.derive(case)
    access.derive(case)
