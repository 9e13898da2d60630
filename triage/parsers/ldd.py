"""``ldd PROGRAM`` output: the shared libraries a program loads, and whether any is a GPU library.

Example (``triage collect`` writes the command line first)::

    $ ldd /home/u/bin/app
            linux-vdso.so.1 (0x00007ffd5e1c9000)
            libamdhip64.so.6 => /opt/rocm/lib/libamdhip64.so.6 (0x00007f3c2a000000)
            libcrashme.so => not found

Facts: ``ldd_program`` (from the command line), ``ldd_library`` (one per library, a list) and
``ldd_gpu_library`` (the first GPU library listed). derive/stack.py weighs them.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case, Where
from triage.parsers.lines import Needles, readable

_COMMAND = lazy(r"^\$\s+ldd\s+(?P<p>\S+)\s*$")
_LIBRARY = lazy(r"^\s+(?P<name>[\w.+-]+\.so(?:\.[\w.]+)?)(?:\s+=>\s+(?:(?P<path>/\S+)|not found))?(?:\s+\(0x[0-9a-fA-F]+\))?\s*$")
# Libraries of a GPU compute or graphics stack: AMD's, NVIDIA's, and the vendor-neutral loaders.
GPU_LIBRARY = lazy(
    r"^lib(?:amdhip64|hsa-runtime64|hsa-ext-\w+|amdocl(?:64|32)?|hsakmt|amd_comgr|hiprtc|rocblas|hipblas(?:lt)?|MIOpen|rccl|rocfft|rocsparse"
    r"|rocsolver|rocrand|hiprand|roctracer64|rocprofiler\w*|drm_amdgpu|cuda|cudart|cublas\w*|cudnn\w*|nvrtc|nvidia-\w+"
    r"|nccl|OpenCL|vulkan|ggml-hip|ggml-cuda|torch_hip|torch_cuda|c10_hip|c10_cuda)\b", re.IGNORECASE)
_NEEDLES = Needles(_COMMAND, r"\.so(?:\.[\w.]+)?(?:\s+=>|\s+\(0x)")


def parse(artifact: Artifact, case: Case) -> None:
    last = -10
    for index in _NEEDLES.lines(artifact):
        text = artifact.lines[index]
        if not readable(text):
            continue
        where = Where(artifact.name, index + 1)
        if m := _COMMAND.match(text):
            case.add_fact("ldd_program", m["p"], where, text.strip(), 60)
            case.claim(where, "ldd")
            last = index
            continue
        m = _LIBRARY.match(text)
        if m is None or index - last > 1 and "=>" not in text and "(0x" not in text:
            continue
        last = index
        case.add_fact("ldd_library", m["name"], where, text.strip(), 40)
        case.claim(where, "ldd", "environment")
        if GPU_LIBRARY.match(m["name"]):
            case.add_fact("ldd_gpu_library", m["name"], where, text.strip(), 60)
