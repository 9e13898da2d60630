"""Lines that say whose GPU stack a log comes from: AMD's (HIP, ROCm, gfx, Radeon) or NVIDIA's, and
lines that name the AMD GPU without a gfx name: its PCI device id, its chip's codename, a library file
the runtime looked for on its behalf.

CUDA wording alone decides nothing: llama.cpp's and PyTorch's HIP backends print ``CUDA error``,
``cuda:0`` and ``compute capability 10.3`` on AMD GPUs. What names a vendor is a device name,
a library or a driver: ``Radeon``, ``gfx1100``, ``libamdhip64``, ``ROCm`` on one side,
``NVIDIA``/``GeForce``, ``libcuda.so``, ``nvcuda.dll``, ``nvidia-smi`` on the other. Each line
is one vote of its weight; derive/vendor.py adds them up.

The HIP platform a run was set up for is a vote as well, from machine output only (an ``env`` dump, a shell's
``export``, a Dockerfile's ``ENV``, hipconfig's ``HIP_PLATFORM : nvidia``): ``amd`` (``hcc`` before HIP 4.0) for AMD,
``nvidia`` for NVIDIA. ``nvcc``, HIP's name for NVIDIA before 4.0, is a weak vote: hipconfig of those releases chose
it by itself whenever it found no AMD GPU, so on an AMD machine whose GPU went missing it names NVIDIA too.
A datacenter NVIDIA GPU is named without ``NVIDIA`` by older drivers (``GPU 0: A100-SXM4-40GB``), by its form
factor after the model.

CuPy keeps NVIDIA's names on ROCm: its compiler module is ``cupy_backends.cuda.libs.nvrtc`` and its error
``NVRTCError`` whatever the platform (``NVRTCError: HIPRTC_ERROR_COMPILATION (6)`` on ROCm), and its
``show_config()`` prints ``NVRTC Version`` for hipRTC's. A line whose only NVIDIA words are those is no vote beside
AMD words on the line; elsewhere derive/vendor.py tells such a vote by its line (``cupy_only``) and counts it only
when no AMD evidence is in the case. ``HIPRTC_ERROR_*`` (hipRTC's status names) is AMD's.

Indirect evidence of the GPU's architecture (derive/gpu.py maps it with tables/gpu-ids.yaml and
uses it only when nothing better names the arch)::

    03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 21 [Radeon RX 6800/6800 XT / 6900 XT] [1002:73bf] (rev c1)
        gpu_pci_id 73bf:c1 and gpu_device Navi 21 (the device's name, for its codename)
    PCI\\VEN_1002&DEV_73BF&SUBSYS_0E3A1002&REV_C1                   gpu_pci_id 73bf:c1 (Windows' device instance)
      Chip ID:                 29631(0x73bf)                        gpu_pci_id 73bf (rocminfo)
    MIOpen(HIP): Warning [ParseAndLoadDb] File is unreadable: ".../gfx1151_20.HIP.fdb.txt"
        gfx_arch_file gfx1151 (MIOpen's databases are named arch + CU count: gfx1030_36.kdb, gfx90a6e.HIP.fdb.txt)
    rocblaslt error: Could not load "TensileLibrary_lazy_gfx1101.dat"   gfx_arch_file gfx1101

A library file counts only on a line that says it was looked for and not found, unreadable or failed
to load: a listing of a library folder names every architecture the library ships.
"""

from __future__ import annotations

import re

from triage.lazy import lazy
from triage.model import Artifact, Case
from triage.parsers.lines import Needles

_MIOPEN_AS_CUDNN = r"cuDNN version (?:incompatibility|mismatch): PyTorch was compiled\s+against \([23], \d+, \d+\)"
_MIOPEN_CHECK = lazy(_MIOPEN_AS_CUDNN)
_AMD_STRONG = lazy(
    r"\bgfx\d{3,4}\b|\bgfx9\d[ac]\b|\bRadeon\b|\bInstinct\b|libamdhip64|amdhip64|\bROCm\b|/opt/rocm|\bhipError\w+"
    r"|HSA_STATUS_\w+|\bamdgpu\b|librocblas|rocBLAS|hipBLASLt|MIOpen|AMD_LOG_LEVEL|HSA_OVERRIDE_GFX_VERSION"
    r"|HIP_LAUNCH_BLOCKING=1|AMD_SERIALIZE_KERNEL|TORCH_USE_HIP_DSA|\+rocm\d|\bHIPRTC_ERROR_\w+"
    # ollama's GPU library (library=rocm), ggml's ROCm buffer and device names (ROCm0, ROCm_Host), a ROCm library's
    # own test and benchmark clients (rocblas-bench, hipblas-test, rccl-tests, MIOpenDriver)
    r"|\blibrary=(?i:rocm)\b|\bROCm(?:\d+|_Host)\b|\b(?:hip|roc)(?:blas|blaslt|solver|sparse|fft|rand|prim)\w*[-_](?:test|bench|client)s?\b"
    r"|\brccl-tests?\b|\bMIOpenDriver\b|"
    # PyTorch's ROCm builds call MIOpen "cuDNN" in their version check; MIOpen's versions are 2.x / 3.x, cuDNN's 5 and up
    + _MIOPEN_AS_CUDNN +
    # a Radeon model number however short ("RX 580", "rx7900xtx"), AMD's PCI vendor id (lspci -nn, vfio, ollama's name=)
    r"|\b(?i:RX) ?\d{3,4}(?:\s?XTX?|\s?GRE)?\b|\[1002:[0-9a-fA-F]{4}\]|\bname=1002:[0-9a-fA-F]{4}\b")
# ZLUDA runs CUDA programs on AMD GPUs through a stand-in nvcuda.dll: its lines name NVIDIA's files on an AMD GPU.
_ZLUDA = lazy(r"zluda", re.IGNORECASE)
_AMD_WEAK = lazy(r"\bhip[A-Z]\w+\(|\bHIP\b|\bhsa_\w+|\bkfd\b|/dev/kfd")
_NVIDIA_STRONG = lazy(
    r"\bNVIDIA\b|\bGeForce\b|\bQuadro\b|\bTesla [VPTAKM]\d|\b[RG]TX ?\d{3,4}\b|libcuda\.so|nvcuda\.dll|nvidia-smi"
    r"|\bcuDNN\b|libcudart|cudart64|CUDA driver version|NVRTC|\bptxas\b|\bsm_\d{2,3}[af]?\b|\[10de:[0-9a-fA-F]{4}\]"
    # PyTorch's error epilogue names the debug switches of the build it came from
    r"|CUDA_LAUNCH_BLOCKING=1|TORCH_USE_CUDA_DSA"
    # backends that exist only for NVIDIA GPUs: Kokkos' CUDA execution and memory spaces (its AMD one is Kokkos::HIP),
    # Julia's CUDA.jl and its driver/runtime artifacts (AMD's is AMDGPU.jl), in a frame or a path
    r"|\bKokkos::(?:Experimental::)?Cuda(?:Space|UVMSpace|HostPinnedSpace)?\b"
    r"|[\\/]packages[\\/]CUDA(?:_Driver_jll|_Runtime_jll)?[\\/]\w+[\\/]"
    # XLA's and TensorFlow's CUDA stream executor printing its source file (its ROCm files are rocm_*.cc)
    r"|\bcuda_(?:dnn|blas|fft|driver|executor|platform|diagnostics|gpu_executor)\.cc:\d+"
    # a datacenter GPU named by model and form factor alone (older drivers' nvidia-smi -L: "GPU 0: A100-SXM4-40GB")
    r"|\b(?:[AH][18]00|H200|A[1-4]0G?|L40S?|L4)(?:-(?:SXM\d?|PCIE)\b| (?:PCIe|SXM\d?|NVL)\b| \d+GB HBM)")

# A list of three or more CUDA targets on one line ("NVIDIA: sm_52 (Maxwell), sm_60/sm_61 (Pascal), ... sm_90 (Hopper
# H100)", Mojo's supported architectures after its GPU check failed) is what a program supports, printed on any
# machine: no sign of an NVIDIA GPU in this one.
_SM_TARGET_LIST = lazy(r"\bsm_\d{2,3}[af]?\b(?:[^\n]*?\bsm_\d{2,3}[af]?\b){2}")
# A CUDA library that could not be found is no sign of an NVIDIA GPU (AMD machines miss libcuda.so.1 all the time);
# only an NVIDIA device's name (NVIDIA_DEVICE) on such a line still counts.
_MISSING = lazy(r"cannot open shared object file|No such file|not found|could not be (?:found|loaded|located)"
                      r"|(?:cannot|failed to|unable to|could not) (?:be )?(?:load|open|find)", re.IGNORECASE)
# An NVIDIA device's name: the one NVIDIA evidence that stands on a missing-library line and under ZLUDA
# (derive/vendor.py), where NVIDIA's files and switches are no sign of an NVIDIA GPU.
NVIDIA_DEVICE = lazy(r"\bNVIDIA (?:GeForce|RTX|Quadro|Tesla|TITAN|Jetson|DGX|[AHLT]\d{1,4}[A-Z]?\b)|\bGeForce\b|\bQuadro\b"
                           r"|\bTesla [VPTAKM]\d|\b[RG]TX ?\d{3,4}\b|\bTITAN [XVR]\b"
                           r"|\b(?:[AH][18]00|H200|A[1-4]0G?|L40S?|L4)(?:-(?:SXM\d?|PCIE)\b| (?:PCIe|SXM\d?|NVL)\b| \d+GB HBM)")
# The HIP platform of a run as machine output shows it: an environment listing or assignment (env, export, a Dockerfile's
# ENV, a command's prefix) or hipconfig's "HIP_PLATFORM : nvidia" / "HIP_PLATFORM       :amd".
_PLATFORM = lazy(r"^\s*(?:[$#>]\s*)?(?:export\s+|declare -x\s+|ENV\s+|set\s+)?HIP_PLATFORM(?:\s*=\s*|\s*:\s*|\s+(?=\w))"
                 r"['\"]?(?P<p>nvidia|nvcc|amd|hcc)\b")
# CuPy's names for its runtime compiler, the same on ROCm (see the module's text).
CUPY_NVRTC = lazy(r"\bcupy(?:_backends)?(?:\.\w+)*\.nvrtc\b(?:\.\w+)*|\bNVRTCError\b|\bnvrtc\.pyx\b"
                  r"|^\s*NVRTC Version\s*:")
# A probe that found no AMD driver (ollama asks on every machine: "amdgpu driver not detected /sys/module/amdgpu")
# is no sign of an AMD GPU.
# A processor that carries a Radeon ("AMD Ryzen 7 7840HS w/ Radeon 780M Graphics", "Ryzen 5 5600G with Radeon
# Graphics") says the machine has an AMD iGPU, not that the failing program used it: laptops pair such a processor
# with an NVIDIA card. The line is a weak AMD vote unless something else on it is strong.
_APU_PROCESSOR = lazy(r"\b(?:Ryzen|Athlon)\b[^\n]*?\b(?:w/|with)\s+(?:AMD\s+)?Radeon\b[^\n]*?(?:Graphics|\d{3}M)\b")
# Numba's probe of its old ROC target (numba -s, printed on every machine, mostly NVIDIA or CPU-only ones) says that
# no ROCm is there: "NUMBA_HSA_DRIVER /opt/rocm/lib/libhsa-runtime64.so is not a valid file path", "No ROC toolchains".
_AMD_ABSENT = lazy(r"\bamdgpu (?:driver |kernel module )?(?:is )?not (?:detected|found|loaded|present)\b"
                   r"|\bNUMBA_HSA_DRIVER\b[^\n]*\bis not a valid file path|\bNo ROC toolchains found\b", re.IGNORECASE)
_NEEDLES = Needles(_AMD_STRONG, _AMD_WEAK, _NVIDIA_STRONG, _ZLUDA)
_PLATFORMS = Needles(_PLATFORM)
STRONG, WEAK = 3, 1
_PLATFORM_VOTE = {"nvidia": ("nvidia", STRONG), "nvcc": ("nvidia", WEAK), "amd": ("amd", STRONG), "hcc": ("amd", STRONG)}

# AMD's graphics PCI vendor id is 1002 (1022 is its CPUs' and chipsets'): lspci -nn, lspci's "Device 67df" for an id
# its name list lacks, ollama's name=, Windows' device instance path, rocminfo's Chip ID (decimal, then hex).
_PCI_ID = lazy(r"\[1002:(?P<d>[0-9a-fA-F]{4})\](?:[^\[\]]*?\(rev (?P<r>[0-9a-fA-F]{2})\))?"
               r"|\[AMD/ATI\] Device (?P<l>[0-9a-f]{4})\b(?: \(rev (?P<lr>[0-9a-f]{2})\))?"
               r"|\bname=1002:(?P<n>[0-9a-fA-F]{4})\b"
               r"|\bVEN_1002&DEV_(?P<w>[0-9A-Fa-f]{4})(?:&SUBSYS_[0-9A-Fa-f]{8})?(?:&REV_(?P<wr>[0-9A-Fa-f]{2}))?"
               r"|^\s*Chip ID:\s+\d+\(0x(?P<c>[0-9a-fA-F]{4})\)")
# The name of an AMD graphics device as lspci, rocm-smi (Card series) and rocminfo (Marketing Name) print it: a
# codename that starts it counts ("Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]"), not one inside a product name
# ("AMD Radeon(TM) Vega 10 Graphics" is a Raven APU's 10 CUs). The other functions of a card (its audio, its PCIe
# switch "Navi 10 XL Downstream Port", on a Navi 31 card) are not the GPU.
_AMD_DEVICE = lazy(r"(?:\[AMD/ATI\]|\bCard [Ss]eries\s*:|\bMarketing Name\s*:)\s*(?P<name>[^\s\[(][^\[(]*)")
_NOT_GPU = lazy(r"PCI Express Switch|\bAudio\b|\bHDMI\b|\bUSB\b|\b(?:Upstream|Downstream) Port\b|Host Bridge|\bPSP\b"
                r"|Crypto|Encryption|Root Complex", re.IGNORECASE)
# Library files named for one architecture: rocBLAS / hipBLASLt (Tensile) and MIOpen's databases, which end in the
# CU count (gfx1030_36, hex without the underscore: gfx90a6e, gfx942130).
# rocminfo names the CPU agents too ("Marketing Name: AMD Ryzen 9 7950X 16-Core Processor", and on an APU "AMD Ryzen 7
# 7840HS w/ Radeon 780M Graphics"): a processor's name is not the GPU's.
CPU_NAME = lazy(r"\b(?:Processor|CPU|Ryzen|EPYC|Threadripper|Athlon|Opteron|Xeon|Intel|Core\(TM\))\b", re.IGNORECASE)
_LIB_FILE = lazy(r"\bTensileLibrary\w*?_(?P<t>gfx[0-9a-f]{3,4})(?:[-_][\w+-]*)?\.(?:dat|co|yaml|msgpack|hsaco)\b"
                 r"|\bKernels\.so-\d+-(?P<k>gfx[0-9a-f]{3,4})(?:-[\w+-]*)?\.hsaco\b"
                 r"|(?<![\w])(?P<m>gfx(?:[6-9][0-9a-f]{2}|1[0-9][0-9a-f]{2}))(?:_\d+|[0-9a-f]{1,3})"
                 r"\.(?:HIP\.)?(?:u?fdb\.txt|db\.txt|u?kdb|u?db)\b")
# What makes a named file the one the runtime wanted for this GPU: it looked for it and failed, or loaded it.
_LOOKED_FOR = lazy(r"\b(?:cannot|can't|could ?n[o']t|unable|unreadable|no such file|not found|fail(?:ed|s|ure)?|missing"
                   r"|does not exist|loading)\b", re.IGNORECASE)
_IDENTITY = Needles(_PCI_ID, _AMD_DEVICE, _LIB_FILE)


def cupy_only(text: str) -> bool:
    """Whether the line's only NVIDIA words are CuPy's names for its runtime compiler (the same on ROCm)."""
    return CUPY_NVRTC.search(text) is not None and not _NVIDIA_STRONG.search(CUPY_NVRTC.sub(" ", text))


def parse(artifact: Artifact, case: Case) -> None:
    _votes(artifact, case)
    _identity(artifact, case)


def _identity(artifact: Artifact, case: Case) -> None:
    """The GPU's PCI ids, its AMD device lines and the architecture-named library files it was denied."""
    for where, text in _IDENTITY.machine_lines(artifact, case):
        quoted = text.strip()
        if _NOT_GPU.search(text):
            continue
        for m in _PCI_ID.finditer(text):
            device = (m["d"] or m["l"] or m["n"] or m["w"] or m["c"]).lower()
            revision = m["r"] or m["lr"] or m["wr"]
            case.add_fact("gpu_pci_id", f"{device}:{revision.lower()}" if revision else device, where, quoted, 40)
        if (m := _AMD_DEVICE.search(text)) and not CPU_NAME.search(m["name"]):
            case.add_fact("gpu_device", m["name"].strip()[:120], where, quoted, 40)
        if _LOOKED_FOR.search(text):
            for m in _LIB_FILE.finditer(text):
                case.add_fact("gfx_arch_file", m["t"] or m["k"] or m["m"], where, quoted, 30)


def _votes(artifact: Artifact, case: Case) -> None:
    holding = _NEEDLES.each(artifact)  # a needle's regex is tried on the lines it chose only
    zludas, strong, weak, nvidias = (holding[n] for n in (_ZLUDA, _AMD_STRONG, _AMD_WEAK, _NVIDIA_STRONG))
    platforms = set()
    for where, text in _PLATFORMS.machine_lines(artifact, case):
        if m := _PLATFORM.match(text):  # the line's one vote
            vendor, weight = _PLATFORM_VOTE[m["p"]]
            case.add_fact("vendor_vote", vendor, where, text.strip(), weight)
            platforms.add(where.line)
    for where, text in _NEEDLES.machine_lines(artifact, case):
        index = where.line - 1
        if where.line in platforms:
            continue
        zluda = index in zludas and _ZLUDA.search(text) is not None
        if zluda:
            case.add_fact("zluda", "yes", where, text.strip(), 30)
        amd = (STRONG if zluda or (index in strong and _AMD_STRONG.search(text))
               else WEAK if index in weak and _AMD_WEAK.search(text) else 0)
        if amd and not zluda and _AMD_ABSENT.search(text):
            amd = 0
        if amd == STRONG and not zluda and (m := _APU_PROCESSOR.search(text)) \
                and not _AMD_STRONG.search(text[:m.start()] + " " + text[m.end():]):
            amd = WEAK
        nvidia = STRONG if index in nvidias and _NVIDIA_STRONG.search(text) and not zluda else 0
        if nvidia and _MISSING.search(text) and not NVIDIA_DEVICE.search(text):
            nvidia = 0
        if nvidia and _SM_TARGET_LIST.search(text):
            nvidia = 0  # a program's list of the CUDA targets it supports, printed whatever the GPU
        if nvidia and amd and _MIOPEN_CHECK.search(text):
            nvidia = 0  # the "cuDNN" of that line, however often it says it, is MIOpen
        if nvidia and amd and cupy_only(text):
            nvidia = 0  # CuPy's nvrtc names beside AMD's words: CuPy built for ROCm
        if amd and not nvidia:
            case.add_fact("vendor_vote", "amd", where, text.strip(), amd)
        elif nvidia and not amd:
            case.add_fact("vendor_vote", "nvidia", where, text.strip(), nvidia)
