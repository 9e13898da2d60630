"""The GPU architectures a program or library was built for, wherever a build or a program prints them.

Examples::

    ['gfx900', 'gfx906', 'gfx908', 'gfx90a', 'gfx1030', 'gfx1100', 'gfx942']      torch.cuda.get_arch_list()
    -DAMDGPU_TARGETS="gfx1030;gfx1100"    GPU_TARGETS=gfx1100    PYTORCH_ROCM_ARCH=gfx90a;gfx942
    hipcc --offload-arch=gfx1100 --offload-arch=gfx1101 -c k.hip
    -DHIPSYCL_TARGETS='hip:gfx908'    acpp --acpp-targets="hip:gfx90a;omp" (AdaptiveCpp: backend, then targets)
    Built for gfx1200:                                                              (a build script's summary)
    msg="amdgpu is not supported" gpu_type=gfx906 supported_types="[gfx1030 gfx1100 gfx1101 gfx1102]"   (ollama)

Each target becomes a ``build_targets`` fact (a list); derive/gpu.py says whether the GPU's own
architecture (or the one an override names) is among them: ``arch_in_build_targets``.

A target names what a program was built for, never the GPU of the machine: none of these is a ``gfx_arch``.
The other way round, HIP's fat-binary loader names the GPU's own processor when no code object fits it, in ROCm 7
as advice to rebuild ("No compatible code objects with HIP_FORCE_SPIRV_CODEOBJECT: 0. Rebuild the application with
option --offload-arch=gfx1201"), before that as "No compatible code objects found for: gfx1201, value of
HIP_FORCE_SPIRV_CODEOBJECT: 0", and in ROCm 6's runtime log as "Missing CO for these ISAs - " with one ISA a line
after it ("amdgcn-amd-amdhsa--gfx1151"): the arch the build lacks, ``missing_code_object_arch``, and no build target.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles

_TARGET = lazy(r"\bgfx(?:[0-9]{3,4}|9[0-9][a-f]|\d+(?:-\d+)?-generic)(?::[a-z]+[+-])*")
_PY_LIST = lazy(r"\[\s*'gfx[^\]]*\]")
# AdaptiveCpp (hipSYCL) names a backend before its targets: -DHIPSYCL_TARGETS='hip:gfx908', --acpp-targets="hip:gfx90a".
_VARIABLE = lazy(r"(?:\b|(?<=-D))(?:AMDGPU_TARGETS|GPU_TARGETS|CMAKE_HIP_ARCHITECTURES|PYTORCH_ROCM_ARCH|HCC_AMDGPU_TARGETS?|"
                       r"(?:HIPSYCL|ACPP|OPENSYCL)_TARGETS|"
                       r"ROCM_ARCH|AMDGPU_ARCH|OLLAMA_(?:ROCM_)?GFX|HIP_ARCHITECTURES)(?::(?:STRING|INTERNAL|UNINITIALIZED))?"
                       r"\s*[=:]\s*['\"]?(?P<v>[\w:;, +-]+)")
_FLAG = lazy(r"--(?:offload-arch|amdgpu-target|cuda-gpu-arch|acpp-targets|hipsycl-targets|opensycl-targets)[= ]['\"]?"
             r"(?P<v>[\w:;,+-]+)")
# A build script's or a program's own word for what it compiled: "Built for gfx1200:", "compiled for targets: gfx90a, gfx942"
_BUILT_FOR = lazy(r"\b(?:built|compiled|code objects?|kernels)\s+(?:only\s+)?for(?:\s+(?:targets?|arch(?:itecture)?s?))?:?\s+"
                        r"(?P<v>gfx[\w:+-]*(?:(?:[\s,;/]|\band\b)+gfx[\w:+-]*)*)", re.IGNORECASE)
_SUPPORTED = lazy(r"supported[_ ]types[=:]\s*\"?\[(?P<v>[^\]]*)\]")
# clang-offload-bundler --list / llvm-objdump --offloading entries, and libomptarget's "Found N image(s): (gfx90a)"
_BUNDLE_ENTRY = lazy(r"^\s*(?:hipv4|hip|openmp)-amdgcn-amd-amdhsa-*-(?P<v>gfx[\w:+-]+)\s*$|Found \d+ image\(s\): \((?P<w>[^)]*)\)")
# The loader's word for the GPU no code object fits (see the module's text): its target id, features and all.
_LACKING = lazy(r"\bNo compatible code objects?\b[^\n]*?(?:\bRebuild the application with (?:the )?(?:option )?"
                r"--offload-arch=|\bfound for:?\s*)(?P<v>gfx[0-9a-f]{3,4}(?::[a-z]+[+-])*)")
# ROCm 6's runtime log: the header, then each ISA on a record of its own right after the record's prefix.
_MISSING_HEAD = lazy(r"\bMissing CO for these ISAs\b")
_MISSING_ISA = lazy(r"\]\s+amdgcn-amd-amdhsa--(?P<v>gfx[0-9a-f]{3,4}(?::[a-z]+[+-])*)\s*$")
_MISSING_LINES = 3  # how far after the header (or the ISA before) the next ISA's record may be
_NEEDLES = Needles(_PY_LIST, _VARIABLE, _FLAG, _SUPPORTED, _BUNDLE_ENTRY, _BUILT_FOR, _LACKING, _MISSING_HEAD,
                   _MISSING_ISA)


def parse(artifact: Artifact, case: Case) -> None:
    listed = -10  # the line of the last "Missing CO for these ISAs" header or ISA under it
    for where, text in _NEEDLES.machine_lines(artifact, case):
        if _MISSING_HEAD.search(text):
            listed = where.line
            continue
        under = where.line - listed <= _MISSING_LINES and _MISSING_ISA.search(text)
        if lacking := _LACKING.search(text) or under:  # the GPU's processor, which the build lacks: no target of it
            case.add_fact("missing_code_object_arch", lacking["v"], where, text.strip(), 50)
            listed = where.line if under else listed
            continue
        spans = [m.group(0) for m in _PY_LIST.finditer(text)]
        spans += [m["v"] for pattern in (_VARIABLE, _FLAG, _SUPPORTED, _BUILT_FOR) for m in pattern.finditer(text)]
        spans += [m["v"] or m["w"] for m in _BUNDLE_ENTRY.finditer(text)]
        for target in dict.fromkeys(t for span in spans for t in _TARGET.findall(span)):
            case.add_fact("build_targets", target, where, text.strip(), 40)
