"""The ``intel`` GPU vendor: Level Zero, PyTorch's XPU device, Intel's extension for PyTorch and a discrete Intel
GPU's name say Intel; an integrated Intel GPU, its kernel driver and SYCL's runtime errors only back that up, so
the many AMD machines with an Intel processor and its integrated GPU stay AMD's. The wordings are the programs'
own (PyTorch's XPU backend, llama.cpp's SYCL backend, sycl-ls, chipStar, lspci, dmesg, rocminfo)."""

from __future__ import annotations

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)


def vendor(text: str) -> str | None:
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], DB, FOLDER).case.flat_facts().get("gpu_vendor")


# PyTorch 2.x on an Arc A770 (Windows): the XPU backend's Level Zero error
TORCH_XPU = """\
  File "H:\\sd\\comfyui\\comfy\\model_management.py", line 1839, in soft_empty_cache
    torch.xpu.synchronize()
  File "H:\\sd\\comfyui\\.ext\\Lib\\site-packages\\torch\\xpu\\__init__.py", line 703, in synchronize
    return torch._C._xpu_synchronize(device)
           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
RuntimeError: level_zero backend failed with error: 2147483646 (UR_RESULT_ERROR_UNKNOWN)
"""
# llama.cpp's SYCL backend listing its devices on a Ryzen machine with an Arc card
LLAMA_SYCL = """\
found 3 SYCL devices:
|ID|        Device Type|                                   Name|Version|units  |group   |group|size   |       Driver version|
|--|-------------------|---------------------------------------|-------|-------|--------|-----|-------|---------------------|
| 0| [level_zero:gpu:0]|                Intel Arc A770 Graphics|    1.3|    512|    1024|   32| 16225M|            1.3.29735|
| 1|     [opencl:gpu:0]|                Intel Arc A770 Graphics|    3.0|    512|    1024|   32| 16225M|         24.22.029735|
| 2|     [opencl:cpu:0]|AMD Ryzen 9 7950X 16-Core Processor            |    3.0|     32|    8192|   64| 32824M|2024.18.6.0.02_160000|
"""
# sycl-ls on a laptop with an Arc A770M and the processor's Iris Xe
SYCL_LS = """\
[opencl:cpu:1] Intel(R) OpenCL, 12th Gen Intel(R) Core(TM) i7-12700H OpenCL 3.0 (Build 0) [2023.16.12.0.12_195853.xmain-hotfix]
[opencl:gpu:2] Intel(R) OpenCL Graphics, Intel(R) Arc(TM) A770M Graphics OpenCL 3.0 NEO  [23.52.28202.51]
[opencl:gpu:3] Intel(R) OpenCL Graphics, Intel(R) Iris(R) Xe Graphics OpenCL 3.0 NEO  [23.52.28202.51]
[ext_oneapi_level_zero:gpu:0] Intel(R) Level-Zero, Intel(R) Arc(TM) A770M Graphics 1.3 [1.3.28202]
[ext_oneapi_level_zero:gpu:1] Intel(R) Level-Zero, Intel(R) Iris(R) Xe Graphics 1.3 [1.3.28202]
"""
# chipStar runs HIP programs on Intel GPUs through Level Zero: HIP's error names on its logger's lines, Intel's GPU
CHIPSTAR = """\
CHIP error [TID 152291] [1693481190.609691528] : hipErrorTbd (ZE_RESULT_ERROR_OUT_OF_DEVICE_MEMORY ) in /home/user/chipStar/src/backend/Level0/CHIPBackendLevel0.cc:1374:enqueueBarrierImpl
CHIP error [TID 152291] [1693481190.609878222] : Caught Error: hipErrorTbd
"""
# an integrated Arc GPU (Meteor Lake) running out of memory under PyTorch's XPU build
XPU_OOM = """\
00:02.0 VGA compatible controller: Intel Corporation Meteor Lake-P [Intel Arc Graphics] (rev 08) (prog-if 00 [VGA controller])
	Kernel driver in use: i915
[ERROR] [axolotl.utils.models.load_model:1273] [PID:6160] [RANK:0] XPU out of memory. Tried to allocate 7.09 GiB.
"""


@pytest.mark.parametrize("text", [TORCH_XPU, LLAMA_SYCL, SYCL_LS, CHIPSTAR, XPU_OOM],
                         ids=["torch-xpu", "llama-sycl", "sycl-ls", "chipstar", "xpu-oom"])
def test_intel_gpu_stacks_say_intel(text: str) -> None:
    assert vendor(text) == "intel"


# An AMD card beside the processor's integrated Intel GPU: lspci, the i915 driver's boot lines, rocminfo's agents
AMD_BESIDE_IGPU = """\
00:02.0 VGA compatible controller [0300]: Intel Corporation AlderLake-S GT1 [8086:4680] (rev 0c)
03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 31 [Radeon RX 7900 XT/7900 XTX] [1002:744c] (rev c8)
[    3.101234] i915 0000:00:02.0: [drm] Finished loading DMC firmware i915/adls_dmc_ver2_01.bin (v2.1)
[    3.201234] i915 0000:00:02.0: [drm] GuC firmware i915/tgl_guc_70.bin version 70.5.1
[    3.301234] i915 0000:00:02.0: [drm] HuC firmware i915/tgl_huc.bin version 7.9.3
[    3.401234] [drm] Initialized i915 1.6.0 20201103 for 0000:00:02.0 on minor 0
  Marketing Name:          13th Gen Intel(R) Core(TM) i9-13900K
  Marketing Name:          Intel(R) UHD Graphics 770
"""
# DPC++'s HIP backend on an AMD GPU: SYCL's runtime errors name no Intel GPU
SYCL_ON_HIP = """\
[ext_oneapi_hip:gpu:0] AMD HIP BACKEND, AMD Radeon RX 7900 XTX gfx1100 [HIP 60140.9]
terminate called after throwing an instance of 'sycl::_V1::exception'
  what():  Native API failed. Native API returns: 2147483646 (UR_RESULT_ERROR_UNKNOWN)
"""
# ollama looking for Intel's management library on an AMD machine
OLLAMA_PROBE = """\
time=2025-01-06T10:00:00.000Z level=DEBUG source=gpu.go:501 msg="Searching for GPU library" name=libze_intel_gpu.so*
time=2025-01-06T10:00:00.000Z level=DEBUG source=gpu.go:525 msg="gpu library search" globs="[/usr/lib/ollama/libze_intel_gpu.so* /usr/lib*/libze_intel_gpu.so*]"
time=2025-01-06T10:00:00.000Z level=DEBUG source=gpu.go:558 msg="discovered GPU libraries" paths=[]
time=2025-01-06T10:00:00.000Z level=INFO source=amd_linux.go:386 msg="amdgpu is supported" gpu=0 gpu_type=gfx1030
"""
# TensorFlow's oneDNN banner on a ROCm build
TENSORFLOW = """\
I tensorflow/core/platform/cpu_feature_guard.cc:142] This TensorFlow binary is optimized with oneAPI Deep Neural Network Library (oneDNN) to use the following CPU instructions in performance-critical operations:  AVX2 FMA
2021-03-01 10:00:00.000000: I tensorflow/core/common_runtime/gpu/gpu_device.cc:1720] Found device 0 with properties: pciBusID: 0000:03:00.0 name: Vega 10 XL/XT [Radeon RX Vega 56/64]
"""


@pytest.mark.parametrize("text", [AMD_BESIDE_IGPU, SYCL_ON_HIP, OLLAMA_PROBE, TENSORFLOW],
                         ids=["igpu", "sycl-on-hip", "ollama-probe", "onednn"])
def test_amd_stays_amd_beside_intel_words(text: str) -> None:
    assert vendor(text) == "amd"


def test_integrated_intel_gpu_alone_names_no_vendor() -> None:
    """An integrated GPU, its driver and SYCL's errors back Intel up; alone they name no vendor (the machine's
    other GPU may be anyone's)."""
    text = "  Marketing Name:          Intel(R) UHD Graphics 770\n[    3.4] i915 0000:00:02.0: [drm] GuC firmware\n"
    assert vendor(text) is None
    assert vendor("  what():  Native API failed. Native API returns: -30 (PI_ERROR_INVALID_VALUE)\n") is None


def test_nvidia_stays_nvidia_beside_an_integrated_intel_gpu() -> None:
    text = ("GPU 0: NVIDIA GeForce RTX 3060 (UUID: GPU-1234)\n"
            "00:02.0 VGA compatible controller: Intel Corporation CometLake-H GT2 [UHD Graphics] (rev 05)\n")
    assert vendor(text) == "nvidia"


def test_a_missing_intel_library_is_no_intel_vote() -> None:
    text = "OSError: libze_loader.so.1: cannot open shared object file: No such file or directory\n"
    assert vendor(text) is None
    # a device's name still counts there (a line made for the test: a probe that names the card)
    assert vendor("Unable to load oneAPI management library for Intel(R) Arc(TM) A770 Graphics: not found\n") == "intel"


def test_more_amd_than_intel_evidence_stays_amd() -> None:
    """A ROCm user who once tried the XPU build: AMD's lines outweigh one Intel line twice over."""
    text = (TORCH_XPU.splitlines()[-1] + "\n" + "  Name:                    gfx1100\n" * 2
            + "  Marketing Name:          AMD Radeon RX 7900 XTX\n")
    assert vendor(text) == "amd"
