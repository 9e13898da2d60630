"""``ldd PROGRAM`` output: the shared libraries a program loads, and whether any is a GPU library.

Example (``triage collect`` writes the command line first)::

    $ ldd /home/u/bin/app
            linux-vdso.so.1 (0x00007ffd5e1c9000)
            libamdhip64.so.6 => /opt/rocm/lib/libamdhip64.so.6 (0x00007f3c2a000000)
            libcrashme.so => not found

Facts: ``ldd_program`` (from the command line), ``ldd_library`` (one per library, a list) and
``ldd_gpu_library`` (the first GPU library listed). derive/stack.py weighs them.

Two other listings show the HIP runtime a running process has loaded, one ``hip_library_loaded`` fact (its
path) each, which derive/runtimes.py counts by folder::

    python3 40213 u  mem  REG  259,2  6543210 1234567 /opt/rocm-6.2.0/lib/libamdhip64.so.6.2.60200    lsof -p PID
         40213:     calling init: /home/u/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so   LD_DEBUG=libs

(LD_DEBUG=files' ``file=/PATH [0];  dynamically loaded by`` counts too; its ``trying file=`` lines are a search, not
a load, and a directory listing of copies on disk is none either.)
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
# lsof's memory-mapped rows (FD "mem", or "DEL" for a file deleted since), COMMAND PID [TID] USER FD TYPE ... NAME.
_LSOF = lazy(r"^\s*\S+\s+\d+\s+(?:\d+\s+)?\S+\s+(?:mem|DEL)(?:-\w)?\s+(?:REG|DEL)\s.*?\s(?P<p>/\S*?[\\/]libamdhip64\.so[\w.]*)(?:\s|$)")
# glibc's LD_DEBUG lines, "PID:<tab>" first: an initialised library, or one dlopen() loaded by its path.
_LD_DEBUG = lazy(r"^\s*\d+:\s+(?:calling init:\s+(?P<p>/\S*?libamdhip64\.so[\w.]*)\s*$"
                 r"|file=(?P<q>/\S*?libamdhip64\.so[\w.]*)\s+\[\d+\];\s+(?:dynamically loaded by|generating link map))")
_NEEDLES = Needles(_COMMAND, r"\.so(?:\.[\w.]+)?(?:\s+=>|\s+\(0x)", _LSOF, _LD_DEBUG)


def parse(artifact: Artifact, case: Case) -> None:
    last = -10
    for index in _NEEDLES.lines(artifact):
        text = artifact.lines[index]
        if not readable(text):
            continue
        where = Where(artifact.name, index + 1)
        if m := _LSOF.match(text) or _LD_DEBUG.match(text):
            case.add_fact("hip_library_loaded", m["p"] or m["q"], where, text.strip(), 50)
            continue
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
