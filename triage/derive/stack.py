"""Whether the crashed process had a GPU stack loaded at all: ``gpu_stack_loaded`` = yes or no.

Yes when the HIP runtime logged anything, a GPU library is on a stack or is the faulting
module, or ``ldd`` lists one. No only when ``ldd`` of a compiled program (an interpreter loads
its GPU libraries later, by dlopen) lists none, and either the faulting module is known and is
not a GPU library, or the run's output was captured with the runtime's log on (a
``triage collect`` bundle) and holds no runtime record. A crash in such a process lies outside
the GPU stack.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Case
from triage.parsers.ldd import GPU_LIBRARY

_GPU_DLL = lazy(r"^(?:amdhip64\w*|hiprtc\w*|rocblas|hipblas\w*|MIOpen|amd_comgr\w*|nvcuda|cudart\w*|cublas\w*|"
                      r"nvrtc\w*|OpenCL|vulkan-1|atiumd\w*|amdvlk\w*)\.dll$", re.IGNORECASE)
_INTERPRETER = lazy(r"^(?:python[\d.]*|pypy\d*|node|java|ruby|perl|julia|Rscript|R|dotnet|bash|sh|zsh|lua\w*|php"
                          r"|wine\w*|conda|uv|pixi)$")


def is_gpu_module(module: str | None) -> bool:
    name = (module or "").replace("\\", "/").rsplit("/", 1)[-1]
    return bool(name) and (GPU_LIBRARY.match(name) is not None or _GPU_DLL.match(name) is not None)


def derive(case: Case) -> None:
    fault = case.fault
    modules = [f.module for s in case.stacks for f in s.frames if f.module] + ([fault.module] if fault and fault.module else [])
    gpu_frame = next((m for m in modules if is_gpu_module(m)), None)
    linked = case.fact("ldd_gpu_library")
    if case.events or gpu_frame or linked:
        where = linked or case.fact("hip_version") or case.fact("gfx_arch")
        if where is not None:
            case.add_fact("gpu_stack_loaded", "yes", where.where, where.text, 60)
        elif case.events:
            case.add_fact("gpu_stack_loaded", "yes", case.events[0].where, case.events[0].message, 60)
        return
    program = case.fact("ldd_program")
    listed = case.facts.get("ldd_library")
    if not listed or program is None or _INTERPRETER.match(program.value.rsplit("/", 1)[-1]):
        return
    known_elsewhere = bool(fault and fault.module)
    logged_nothing = "hip-log" in case.inputs and not case.events
    if known_elsewhere or logged_nothing:
        case.add_fact("gpu_stack_loaded", "no", program.where, program.text, 60)
