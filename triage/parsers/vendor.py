"""Lines that say whose GPU stack a log comes from: AMD's (HIP, ROCm, gfx, Radeon) or NVIDIA's.

CUDA wording alone decides nothing: llama.cpp's and PyTorch's HIP backends print ``CUDA error``,
``cuda:0`` and ``compute capability 10.3`` on AMD GPUs. What names a vendor is a device name,
a library or a driver: ``Radeon``, ``gfx1100``, ``libamdhip64``, ``ROCm`` on one side,
``NVIDIA``/``GeForce``, ``libcuda.so``, ``nvcuda.dll``, ``nvidia-smi`` on the other. Each line
is one vote of its weight; derive/vendor.py adds them up.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles

_AMD_STRONG = lazy(
    r"\bgfx\d{3,4}\b|\bgfx9\d[ac]\b|\bRadeon\b|\bInstinct\b|libamdhip64|amdhip64|\bROCm\b|/opt/rocm|\bhipError\w+"
    r"|HSA_STATUS_\w+|\bamdgpu\b|librocblas|rocBLAS|hipBLASLt|MIOpen|AMD_LOG_LEVEL|HSA_OVERRIDE_GFX_VERSION"
    r"|HIP_LAUNCH_BLOCKING=1|AMD_SERIALIZE_KERNEL|TORCH_USE_HIP_DSA|\+rocm\d"
    # a Radeon model number however short ("RX 580", "rx7900xtx"), AMD's PCI vendor id (lspci -nn, vfio, ollama's name=)
    r"|\b(?i:RX) ?\d{3,4}(?:\s?XTX?|\s?GRE)?\b|\[1002:[0-9a-fA-F]{4}\]|\bname=1002:[0-9a-fA-F]{4}\b")
# ZLUDA runs CUDA programs on AMD GPUs through a stand-in nvcuda.dll: its lines name NVIDIA's files on an AMD GPU.
_ZLUDA = lazy(r"zluda", re.IGNORECASE)
_AMD_WEAK = lazy(r"\bhip[A-Z]\w+\(|\bHIP\b|\bhsa_\w+|\bkfd\b|/dev/kfd")
_NVIDIA_STRONG = lazy(
    r"\bNVIDIA\b|\bGeForce\b|\bQuadro\b|\bTesla [VPTAKM]\d|\b[RG]TX ?\d{3,4}\b|libcuda\.so|nvcuda\.dll|nvidia-smi"
    r"|\bcuDNN\b|libcudart|cudart64|CUDA driver version|NVRTC|\bsm_\d{2,3}\b|\[10de:[0-9a-fA-F]{4}\]"
    # PyTorch's error epilogue names the debug switches of the build it came from
    r"|CUDA_LAUNCH_BLOCKING=1|TORCH_USE_CUDA_DSA")

# A CUDA library that could not be found is no sign of an NVIDIA GPU (AMD machines miss libcuda.so.1 all the time);
# only an NVIDIA device's name (NVIDIA_DEVICE) on such a line still counts.
_MISSING = lazy(r"cannot open shared object file|No such file|not found|could not be (?:found|loaded|located)"
                      r"|(?:cannot|failed to|unable to|could not) (?:be )?(?:load|open|find)", re.IGNORECASE)
# An NVIDIA device's name: the one NVIDIA evidence that stands on a missing-library line and under ZLUDA
# (derive/vendor.py), where NVIDIA's files and switches are no sign of an NVIDIA GPU.
NVIDIA_DEVICE = lazy(r"\bNVIDIA (?:GeForce|RTX|Quadro|Tesla|TITAN|Jetson|DGX|[AHLT]\d{1,4}[A-Z]?\b)|\bGeForce\b|\bQuadro\b"
                           r"|\bTesla [VPTAKM]\d|\b[RG]TX ?\d{3,4}\b|\bTITAN [XVR]\b")
# A probe that found no AMD driver (ollama asks on every machine: "amdgpu driver not detected /sys/module/amdgpu")
# is no sign of an AMD GPU.
_AMD_ABSENT = lazy(r"\bamdgpu (?:driver |kernel module )?(?:is )?not (?:detected|found|loaded|present)\b", re.IGNORECASE)
_NEEDLES = Needles(_AMD_STRONG, _AMD_WEAK, _NVIDIA_STRONG, _ZLUDA)
STRONG, WEAK = 3, 1


def parse(artifact: Artifact, case: Case) -> None:
    for where, text in _NEEDLES.machine_lines(artifact, case):
        zluda = _ZLUDA.search(text) is not None
        if zluda:
            case.add_fact("zluda", "yes", where, text.strip(), 30)
        amd = STRONG if zluda or _AMD_STRONG.search(text) else WEAK if _AMD_WEAK.search(text) else 0
        if amd and not zluda and _AMD_ABSENT.search(text):
            amd = 0
        nvidia = STRONG if _NVIDIA_STRONG.search(text) and not zluda else 0
        if nvidia and _MISSING.search(text) and not NVIDIA_DEVICE.search(text):
            nvidia = 0
        if amd and not nvidia:
            case.add_fact("vendor_vote", "amd", where, text.strip(), amd)
        elif nvidia and not amd:
            case.add_fact("vendor_vote", "nvidia", where, text.strip(), nvidia)
