"""The ROCm root the HIP compiler uses, when no compiler or hipconfig line says it: the environment it reads.

hipcc takes its ROCm from ``ROCM_PATH`` (then ``HIP_PATH``) when they are set; the parsers record those from
machine lines (``env`` output, a Dockerfile's ``ENV``, a script's ``export``, never a user's sentence). Only
when nothing the compiler itself printed names a root (parsers/toolchain.py) do they give ``hipcc_rocm_root``,
with a lower score than any printed one.
"""

from __future__ import annotations

from triage.model import Case

FROM_ENVIRONMENT = 30  # below every root the compiler or hipconfig printed (45-70)


def derive(case: Case) -> None:
    """Add hipcc_rocm_root from ROCM_PATH or HIP_PATH when no printed line gave one."""
    if case.fact("hipcc_rocm_root") is not None:
        return
    for name in ("env_ROCM_PATH", "env_HIP_PATH"):
        fact = case.fact(name)
        if fact is None:
            continue
        value = fact.value
        if value.startswith(("/", "~", "$")) or value[1:3] in (":\\", ":/"):  # a path (POSIX, a variable, a drive)
            case.add_fact("hipcc_rocm_root", value.rstrip("/\\") or value, fact.where, fact.text, FROM_ENVIRONMENT)
            return
