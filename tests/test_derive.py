"""Derived facts (triage/derive/): vendor, ROCm versions and where they were seen, the GPU's real
arch beside an override's, APU or discrete, support by the ROCm release, from lines as programs print them."""

from __future__ import annotations

import pytest

from triage.derive.gpu import override_arch
from triage.derive.tables import load_tables, version_tuple
from triage.derive.versions import distinct, same_release
from triage.model import Artifact
from triage.pipeline import analyze, triage
from triage.match import load
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)


def facts(text: str) -> dict:
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], DB, FOLDER).case.flat_facts()


# llama.cpp's HIP backend says "CUDA" throughout; the device line says whose GPU it is.
LLAMA_HIP = """\
ggml_cuda_init: GGML_CUDA_FORCE_MMQ:    no
ggml_cuda_init: found 1 ROCm devices:
  Device 0: AMD Radeon RX 7900 XTX, gfx1100 (0x1100), VMM: no, Wave Size: 32
CUDA error: invalid device function
  current device: 0, in function ggml_cuda_compute_forward at ggml/src/ggml-cuda/ggml-cuda.cu:2303
"""
LLAMA_NVIDIA = """\
ggml_cuda_init: found 1 CUDA devices:
  Device 0: NVIDIA GeForce RTX 3060, compute capability 8.6, VMM: yes
CUDA error: no kernel image is available for execution on the device
"""


def test_vendor_amd_although_the_log_says_cuda() -> None:
    assert facts(LLAMA_HIP)["gpu_vendor"] == "amd"


def test_vendor_nvidia_from_the_device_line() -> None:
    assert facts(LLAMA_NVIDIA)["gpu_vendor"] == "nvidia"


def test_compute_capability_is_no_vendor_evidence() -> None:
    """ggml prints "compute capability 10.3" for AMD GPUs too."""
    got = facts("  Device 0: AMD Radeon RX 6700 XT, compute capability 10.3, VMM: no\n")
    assert got["gpu_vendor"] == "amd"


def test_no_vendor_from_cuda_wording_alone() -> None:
    assert "gpu_vendor" not in facts("CUDA error: out of memory\n  current device: 0\n")


def test_every_rocm_version_and_where_it_was_seen() -> None:
    text = ("torch                    2.3.0+rocm6.0\n"
            "lrwxrwxrwx 1 root root 22 Mar  3 10:12 /opt/rocm -> /etc/alternatives/rocm\n"
            "/opt/rocm-6.4.1/lib/libamdhip64.so.6\n"
            "ii  rocm-core  6.4.1.60401-83~24.04  amd64  ROCm Runtime software stack\n")
    got = facts(text)
    assert got["rocm_version_wheel"] == "6.0"
    assert got["rocm_version_path"] == "6.4.1"
    assert got["rocm_version_package"] == "6.4.1"
    assert got["rocm_version_library"] == "6"
    assert sorted(got["rocm_versions"]) == ["6.0", "6.4"]
    assert got["rocm_version"] == "6.4"  # the installed package before the wheel's tag


@pytest.mark.parametrize("line, name, value", [
    ("docker run -it --device=/dev/kfd --device=/dev/dri rocm/pytorch:rocm6.1_ubuntu22.04_py3.10_pytorch_2.1.2",
     "rocm_version_image", "6.1"),
    ("Status: Downloaded newer image for rocm/vllm:rocm6.3.1_instinct_vllm0.7.3_20250311", "rocm_version_image", "6.3.1"),
    ("FROM docker.io/rocm/dev-ubuntu-22.04:6.2-complete", "rocm_version_image", "6.2"),
    ("rocm/tensorflow:rocm5.7-tf2.13-dev", "rocm_version_image", "5.7"),
    ("pytorch                   2.3.1           rocm5.7_py311_0    local", "rocm_version_wheel", "5.7"),
])
def test_a_container_image_or_a_conda_build_names_its_release(line: str, name: str, value: str) -> None:
    got = facts(line + "\n")
    assert got[name] == value
    assert got["rocm_versions"] == [".".join(value.split(".")[:2])]


@pytest.mark.parametrize("line", ["ollama/ollama:0.6.2-rocm", "rocm/pytorch:latest", "ghcr.io/ggml-org/llama.cpp:server-rocm",
                                  "rocm/pytorch:2.1.2"])
def test_an_image_tag_without_a_rocm_release_names_none(line: str) -> None:
    assert "rocm_version_image" not in facts(line + "\n")


@pytest.mark.parametrize("text, release", [("$ uname -r\n6.8.0-40-generic\n", "6.8.0-40-generic"),
                                            ("user@box:~$ uname -r\n5.15.0-105-generic\n", "5.15.0-105-generic"),
                                            ("uname -r\n6.14.0-29-generic\n", "6.14.0-29-generic")])
def test_the_kernel_release_from_uname_r(text: str, release: str) -> None:
    assert facts(text)["kernel_uname"] == release


def test_a_version_after_other_commands_is_no_kernel() -> None:
    assert "kernel_uname" not in facts("$ hipcc --version\n6.2.41133\n$ uname -r\n")


def test_ollamas_runner_folder_gives_its_rocm_release_and_the_gpus_support() -> None:
    text = ('time=2024-09-01T10:00:00.000Z level=INFO source=types.go:107 msg="inference compute" id=0 library=rocm '
            'variant="" compute=gfx1031 driver=6.8 name=1002:73df total="12.0 GiB" available="11.9 GiB"\n'
            'time=2024-09-01T10:00:01.000Z level=INFO source=server.go:388 msg="starting llama server" '
            'cmd="/usr/lib/ollama/runners/rocm_v60102/ollama_llama_server --model /root/.ollama/models/blobs/sha256-x"\n')
    got = facts(text)
    assert got["rocm_version_wheel"] == "6.1.2"  # packed as 60102 in the folder name
    assert got["arch_supported"] == "no"  # gfx1031 is not among ROCm 6.1's GPUs


def test_one_release_seen_in_many_places_is_one_version() -> None:
    text = ("ROCM used to build PyTorch: 6.2.41133-dd7f95766\n"
            "HIP runtime version: 6.2.41133\n"
            "C:\\Windows\\System32\\amdhip64_6.dll\n")
    got = facts(text)
    assert got["rocm_versions"] == ["6.2"]


def test_windows_dll_majors_differ() -> None:
    got = facts("C:\\Program Files\\AMD\\ROCm\\6.2\\bin\\amdhip64_6.dll\n"
                "C:\\Windows\\System32\\amdhip64_7.dll\n")
    assert sorted(got["rocm_versions"]) == ["6.2", "7"]  # the HIP SDK's folder names the release


@pytest.mark.parametrize("a, b, same", [("6", "6.2", True), ("6.2", "6.2.41133", True), ("6.2", "6.4", False),
                                         ("5.7", "6", False)])
def test_releases_agree_by_prefix(a: str, b: str, same: bool) -> None:
    assert same_release(a, b) is same
    assert len(distinct([a, b])) == (1 if same else 2)


@pytest.mark.parametrize("value, arch", [("10.3.0", "gfx1030"), ("11.0.0", "gfx1100"), ("9.0.10", "gfx90a"),
                                         ("9.0.12", "gfx90c"), ("12.0.1", "gfx1201"), ("gfx1030", None), ("10.3", None)])
def test_override_names_a_processor(value: str, arch: str | None) -> None:
    assert override_arch(value) == arch


ROCMINFO_OVERRIDDEN = """\
export HSA_OVERRIDE_GFX_VERSION={override}
  Name:                    gfx{reported}
  Marketing Name:          AMD Radeon RX 6700 XT
"""


def test_an_override_of_the_gpus_own_family_fits() -> None:
    got = facts(ROCMINFO_OVERRIDDEN.format(override="10.3.0", reported="1030"))
    assert got["gfx_arch_real"] == "gfx1031"  # the product name, not what the runtime reports under the override
    assert got["override_arch"] == "gfx1030"
    assert got["override_fits"] == "yes"


def test_an_override_of_another_family_does_not_fit() -> None:
    got = facts(ROCMINFO_OVERRIDDEN.format(override="11.0.0", reported="1100"))
    assert got["gfx_arch_real"] == "gfx1031"
    assert (got["gpu_family"], got["override_family"], got["override_fits"]) == ("rdna2", "rdna3", "no")


def test_a_leftover_override_on_an_instinct_card() -> None:
    text = "HSA_OVERRIDE_GFX_VERSION=10.3.0\n  Marketing Name:          AMD Instinct MI210\n"
    got = facts(text)
    assert (got["gfx_arch_real"], got["override_fits"]) == ("gfx90a", "no")


def test_apu_or_discrete_from_the_product() -> None:
    assert facts("  Marketing Name:          AMD Radeon 780M Graphics\n")["apu"] == "yes"
    assert facts("  Marketing Name:          AMD Radeon RX 7900 XTX\n")["apu"] == "no"


def test_support_of_the_gpu_by_the_rocm_release() -> None:
    got = facts("  Name:                    gfx1031\nROCm version: 6.2.0\n")
    assert (got["arch_supported"], got["arch_known"]) == ("no", "yes")
    got = facts("  Name:                    gfx1100\nROCm version: 6.2.0\n")
    assert got["arch_supported"] == "yes"
    got = facts("  Marketing Name:          AMD Radeon 8060S Graphics\n/opt/rocm-6.0.2/lib/libamdhip64.so.6\n")
    assert (got["gfx_arch_real"], got["arch_known"]) == ("gfx1151", "no")


def test_tables_name_their_sources_and_cover_the_generic_targets() -> None:
    text = (FOLDER / "tables" / "gpus.yaml").read_text() + (FOLDER / "tables" / "rocm-support.yaml").read_text()
    assert "llvm.org/docs/AMDGPUUsage" in text and "rocm.docs.amd.com" in text
    tables = load_tables(FOLDER)
    assert "gfx1151" in tables.generic["gfx11-generic"]
    assert all(arch in tables.archs for members in tables.generic.values() for arch in members)
    assert tables.arch_of_product("AMD Radeon RX 6800M") == "gfx1031"  # the longer name wins
    assert tables.arch_of_product("AMD Radeon RX 6800") == "gfx1030"
    assert tables.arch_of_product("RX 68000") is None
    assert version_tuple("6.2.41133-dd7f95766") == (6, 2, 41133)


def test_derived_facts_on_a_seed() -> None:
    from tests.conftest import CORPUS

    got = triage([str(CORPUS / "seed-003-getdevicekernel-null-gfx906-only-kernel")]).case.flat_facts()
    assert got["gpu_vendor"] == "amd"
    assert got["gfx_arch_real"] == "gfx1151" and got["apu"] == "yes"


def test_package_version_from_apt_show() -> None:
    got = facts("Package: rocm-core\nVersion: 6.4.0.60400-47~22.04\nPriority: optional\nSection: devel\n"
                "torch 2.5.1+rocm6.2\n")
    assert got["rocm_version_package"] == "6.4.0"
    assert sorted(got["rocm_versions"]) == ["6.2", "6.4"]


def test_zluda_is_an_amd_gpu_although_its_lines_name_nvcuda() -> None:
    text = ("C:\\ZLUDA\\nvcuda.dll loaded\n"
            "The procedure entry point hipGraphCreate could not be located in the dynamic link library C:\\ZLUDA\\nvcuda.dll.\n")
    assert facts(text)["gpu_vendor"] == "amd"


def test_under_zluda_cuda_switches_are_no_nvidia_vote() -> None:
    text = ("Using ZLUDA in C:\\ComfyUI-Zluda\\.zluda\n"
            "RuntimeError: CUDA error: out of memory\n"
            "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
            "For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
            "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n")
    assert facts(text)["gpu_vendor"] == "amd"
    # NVIDIA devices named in the same log still count (a ZLUDA folder on an NVIDIA machine)
    assert facts(text + "GPU 0: NVIDIA GeForce RTX 3060\nGPU 1: NVIDIA GeForce RTX 3090\n")["gpu_vendor"] == "nvidia"


@pytest.mark.parametrize("line, vendor", [
    ("device: rx580 8GB, CUDA error: out of memory", "amd"),
    ("03:00.0 VGA compatible controller [0300]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 23 [1002:73ff] (rev c7)", "amd"),
    ("vfio-pci 0000:0b:00.0: not ready 65535ms after bus reset; giving up [1002:744c]", "amd"),
    ("01:00.0 VGA compatible controller [0300]: NVIDIA Corporation GA104 [10de:2484] (rev a1)", "nvidia"),
    ("GPU 0: NVIDIA GeForce RTX 3090 (UUID: GPU-1234)", "nvidia"),
])
def test_model_numbers_and_pci_ids_name_the_vendor(line: str, vendor: str) -> None:
    assert facts(line + "\n")["gpu_vendor"] == vendor


def test_a_missing_cuda_library_is_no_nvidia_vote() -> None:
    text = ("OSError: libcuda.so.1: cannot open shared object file: No such file or directory\n"
            "OSError: libhipfft.so.0: cannot open shared object file: No such file or directory\n")
    assert facts(text).get("gpu_vendor") != "nvidia"
    assert facts("libcuda.so.1 => /usr/lib/x86_64-linux-gnu/libcuda.so.1 (0x00007f0000000000)\n")["gpu_vendor"] == "nvidia"
    # the word NVIDIA on a missing-library line names no device; a device's name does
    assert facts("Could not load the NVIDIA driver library libnvidia-ml.so.1: not found\n").get("gpu_vendor") != "nvidia"
    assert facts("libcudart.so.12 not found on NVIDIA A100-SXM4-80GB\n")["gpu_vendor"] == "nvidia"


@pytest.mark.parametrize("device", ["NVIDIA A100-SXM4-80GB", "NVIDIA H100 80GB HBM3", "NVIDIA TITAN RTX", "Tesla V100-SXM2-16GB",
                                    "NVIDIA L40S", "Quadro RTX 6000"])
def test_an_nvidia_device_counts_under_zluda_and_on_missing_library_lines(device: str) -> None:
    zluda = "Using ZLUDA in C:\\ComfyUI-Zluda\\.zluda\nRuntimeError: CUDA error: out of memory\n"
    assert facts(zluda + f"GPU 0: {device}\nGPU 1: {device}\nGPU 2: {device}\n")["gpu_vendor"] == "nvidia"
    assert facts(f"libcuda.so.1: cannot open shared object file ({device})\n")["gpu_vendor"] == "nvidia"


def test_kernel_version_from_the_dmesg_banner() -> None:
    line = "[    0.000000] Linux version 5.15.0-133-generic (buildd@lcy02-amd64-001) (gcc 11.4.0) #143-Ubuntu SMP\n"
    assert facts(line)["kernel"] == "5.15.0-133-generic"


@pytest.mark.parametrize("text, inside", [
    ("  Marketing Name:          AMD Radeon RX 6700 XT\n"
     ">>> torch.cuda.get_arch_list()\n['gfx900', 'gfx906', 'gfx908', 'gfx90a', 'gfx1030', 'gfx1100', 'gfx942']\n", "no"),
    ("export HSA_OVERRIDE_GFX_VERSION=10.3.0\n  Marketing Name:          AMD Radeon RX 6700 XT\n"
     ">>> torch.cuda.get_arch_list()\n['gfx900', 'gfx906', 'gfx908', 'gfx90a', 'gfx1030', 'gfx1100', 'gfx942']\n", "yes"),
    ("  Name:                    gfx1151\n$ hipcc --offload-arch=gfx11-generic -c k.hip\n", "yes"),
    ("  Name:                    gfx1151\ncmake -B build -DAMDGPU_TARGETS=\"gfx1100;gfx1101\" -DGGML_HIP=ON\n", "no"),
    ('  Name:                    gfx906\nmsg="amdgpu is not supported" gpu=0 gpu_type=gfx906 '
     'supported_types="[gfx1030 gfx1100 gfx1101 gfx1102 gfx900 gfx940 gfx941 gfx942]"\n', "no"),
    # a build script's summary (a real RDNA4 llama.cpp fork's), then the GPU llama.cpp found
    ("  Device 0: AMD Radeon Graphics, gfx1201 (0x1201), VMM: no, Wave Size: 32, VRAM: 32624 MiB\n\n"
     "Built for gfx1200:\n  build-rdna4/bin/llama-cli\n", "no"),
    ("  Name:                    gfx942\n[build] kernels compiled for targets: gfx90a, gfx942\n", "yes"),
])
def test_is_the_gpu_among_the_build_targets(text: str, inside: str) -> None:
    assert facts(text)["arch_in_build_targets"] == inside


def test_gcn_1_to_3_are_in_the_table() -> None:
    got = facts("  Marketing Name:          AMD Radeon R7 370 Series\n")
    assert (got["gfx_arch_real"], got["gpu_family"]) == ("gfx601", "gcn1")


@pytest.mark.parametrize("text, folders", [
    # gdb frames from a wheel's bundled runtime and from the system's
    ("#0  0x00007fffe1234567 in hipLaunchKernel () from /usr/lib/python3/dist-packages/torch/lib/libamdhip64.so\n"
     "#1  0x00007fffd2222222 in hipModuleLaunchKernel () from /opt/rocm-6.2.0/lib/libamdhip64.so.6\n",
     ["/usr/lib/python3/dist-packages/torch/lib", "/opt/rocm-6.2.0/lib"]),
    # one install under its usual names: the versioned folder, its /opt/rocm symlink, lib64, hip/lib
    ("#0  0x00007fffe1234567 in hipMemcpy () from /opt/rocm/lib/libamdhip64.so.6\n"
     "#1  0x00007fffd2222222 in hipLaunchKernel () from /opt/rocm-6.2.0/lib64/libamdhip64.so.6\n"
     "#2  0x00007fffd2222333 in hipMalloc () from /opt/rocm/hip/lib/libamdhip64.so.6\n",
     ["/opt/rocm/lib"]),
    # ldd of the program: the one runtime it links
    ("$ ldd ./app\n\tlibamdhip64.so.6 => /opt/rocm/lib/libamdhip64.so.6 (0x00007f0000000000)\n", ["/opt/rocm/lib"]),
    # Windows: WinDbg's module load and Visual Studio's output, the driver's DLL and the application's own
    ("ModLoad: 00007ff8`12340000 00007ff8`1abc0000   C:\\WINDOWS\\SYSTEM32\\amdhip64_6.dll\n"
     "'sd.exe' (Win32): Loaded 'C:\\Tools\\sd\\amdhip64_6.dll'. Symbols loaded.\n",
     ["C:\\WINDOWS\\SYSTEM32", "C:\\Tools\\sd"]),
    # /proc/PID/maps of the running process: two copies mapped
    ("7f3a1c200000-7f3a1c400000 r-xp 00000000 08:02 1234567  /opt/rocm-6.4.1/lib/libamdhip64.so.6.4.60401\n"
     "7f3b00000000-7f3b00200000 r-xp 00000000 08:02 7654321  /home/u/venv/lib/python3.12/site-packages/torch/lib/libamdhip64.so\n",
     ["/opt/rocm-6.4.1/lib", "/home/u/venv/lib/python3.12/site-packages/torch/lib"]),
    # a listing of copies on disk is no load
    ("$ find / -name 'libamdhip64.so*'\n/opt/rocm/lib/libamdhip64.so.6\n/home/u/venv/lib/python3.11/site-packages/torch/lib/libamdhip64.so\n", []),
])
def test_folders_the_hip_runtime_was_loaded_from(text: str, folders: list[str]) -> None:
    case = analyze([Artifact(name="log.txt", text=text, size=len(text))], DB, FOLDER).case
    assert [f.value for f in case.facts.get("hip_runtime_dir", [])] == folders


@pytest.mark.parametrize("text, arch, apu", [
    ("ggml_cuda_init: found 1 ROCm devices:\n  Device 0: AMD Radeon(TM) 780M Graphics, compute capability 11.0, VMM: no\n", "gfx1103", "yes"),
    ("Name:                    AMD Radeon(TM) 680M\n", "gfx1035", "yes"),
    ("GPU: AMD Radeon™ RX 7900 XTX\n", "gfx1100", "no"),
    # hipInfo and PyTorch's device properties name the architecture as gcnArchName
    ("device#                           0\nName:                             AMD Radeon Graphics\ngcnArchName:                      gfx1036\n",
     "gfx1036", "yes"),
    ("_CudaDeviceProperties(name='AMD Radeon Graphics', major=11, minor=0, gcnArchName='gfx1103', total_memory=16384MB)\n",
     "gfx1103", "yes"),
    # ComfyUI prints the same gcnArchName at start-up
    ("pytorch version: 2.7.0+rocm6.2.4\nAMD arch: gfx1103\nDevice: cuda:0 AMD Radeon Graphics : native\n", "gfx1103", "yes"),
])
def test_trademark_signs_and_gcn_arch_names_give_the_real_gpu(text: str, arch: str, apu: str) -> None:
    found = facts(text)
    assert (found["gfx_arch_real"], found["apu"]) == (arch, apu)


def test_a_probe_that_found_no_amd_driver_is_no_amd_vote() -> None:
    probe = 'time=2024-10-01T10:00:00.000Z level=DEBUG source=amd_linux.go:60 msg="amdgpu driver not detected /sys/module/amdgpu"\n'
    nvidia = "GPU 0: NVIDIA GeForce RTX 3060 (UUID: GPU-1234)\n"
    assert "gpu_vendor" not in facts(probe)
    assert facts(probe * 3 + nvidia)["gpu_vendor"] == "nvidia"
