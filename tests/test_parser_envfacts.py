"""Environment facts from free text, listings, strace and offload-bundle counts."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import artifact
from triage.derive import derive
from triage.derive.tables import load_tables
from triage.parsers import parse


def test_gpu_used_outranks_the_second_gpu() -> None:
    text = """\
• GPU: AMD Radeon AI PRO R9700 32 GB (Navi 48, 1002:7551, gfx1201), no display attached
• Second GPU: Radeon 610M iGPU (gfx1036); KFD node 1 = gfx1201, node 2 = gfx1036
• OS: CachyOS rolling (Arch-based), kernel 7.3.0-5-cachyos, amdgpu 3.64.0
• System ROCm: 10.1.0 (rocm-bin 10.1.0-1) at /opt/rocm
"""
    case = parse([artifact(text)])
    facts = case.flat_facts()
    assert facts["gfx_arch"] == "gfx1201"
    assert facts["gfx_archs"] == ["gfx1201", "gfx1036"]
    assert facts["gpu_name"] == "AMD Radeon AI PRO R9700 32 GB"
    assert facts["os_name"] == "CachyOS rolling"
    assert facts["kernel"] == "7.3.0-5-cachyos"
    assert facts["rocm_version_system"] == "10.1.0"
    assert facts["rocm_path_system"] == "/opt/rocm"
    assert facts["os"] == "linux"


def test_device_lists_and_rocminfo_isas() -> None:
    text = "device 0: AMD Radeon RX 9070 XT\n  arch gfx1201, 15.9 GiB, wave32\nrocminfo ISAs\tamdgcn-amd-amdhsa--gfx1151\n"
    facts = parse([artifact(text)]).flat_facts()
    assert facts["gfx_arch"] == "gfx1201"
    assert "gfx1151" in facts["gfx_archs"]


def test_target_lists_are_not_gpus() -> None:
    text = "GPU: gfx1151\nLLAMA_STAGE_AMDGPU_TARGETS gfx90a;gfx942;gfx1100\n    133 hipv4-amdgcn-amd-amdhsa--gfx906\n"
    assert parse([artifact(text)]).flat_facts()["gfx_archs"] == ["gfx1151"]


def test_a_table_of_supported_gpus_names_no_gpu_of_the_machine() -> None:
    """A program's list of the GPUs it supports (Mojo's, on an NVIDIA card) pairs targets with products: neither
    is the machine's, though one of them is an integrated Radeon."""
    text = ("  AMD: gfx90a (MI250X), gfx942 (MI300X), gfx1030 (Radeon 6900), gfx1103 (Radeon 780M), "
            "gfx1150/gfx1151/gfx1152 (Radeon 8xx), gfx1201 (Radeon 9070)\n")
    case = parse([artifact(text)])
    derive(case, load_tables())
    facts = case.flat_facts()
    assert "gfx_arch" not in facts and "gpu_product" not in facts and "gfx_arch_real" not in facts
    # one processor with its product on a line is still the machine's
    one = parse([artifact("  gfx1103 (Radeon 780M), 16 GiB shared\n")])
    derive(one, load_tables())
    assert one.flat_facts()["gfx_arch_real"] == "gfx1103"


def test_bundled_and_system_versions() -> None:
    text = "• Bundled in the component: HIP 7.2.53210.41ce572d55, COMGR 3.0, LLVM 22.0git\n• In /opt/rocm/lib: HIP 7.16.26385, COMGR 3.5\n"
    facts = parse([artifact(text)]).flat_facts()
    assert (facts["hip_version"], facts["comgr_version"], facts["llvm_version"]) == ("7.2.53210.41ce572d55", "3.0", "22.0git")
    assert (facts["hip_version_system"], facts["comgr_version_system"]) == ("7.16.26385", "3.5")


def test_windows_runtime_path_is_bundled() -> None:
    text = "strata generate: HIP runtime E:\\AI\\Strata\\engine\\amdhip64_7.dll\n"
    facts = parse([artifact(text)]).flat_facts()
    assert facts["hip_library_path"] == "E:\\AI\\Strata\\engine\\amdhip64_7.dll"
    assert facts["hip_runtime"] == "bundled"
    assert facts["os"] == "windows"


def test_environment_variables() -> None:
    facts = parse([artifact("HSA_OVERRIDE_GFX_VERSION=11.0.0 LD_PRELOAD=/opt/rocm/lib/libamdhip64.so.6 ./app\n")]).flat_facts()
    assert facts["env_HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"
    assert facts["env_LD_PRELOAD"] == "/opt/rocm/lib/libamdhip64.so.6"


def test_environment_set_from_python_a_dockerfile_fish_or_cmd() -> None:
    for line, value in [('os.environ["HSA_OVERRIDE_GFX_VERSION"] = "10.3.0"', "10.3.0"),
                        ("os.environ.setdefault('HSA_OVERRIDE_GFX_VERSION', '11.0.0')", "11.0.0"),
                        ("ENV HSA_OVERRIDE_GFX_VERSION 10.3.0", "10.3.0"),
                        ("set -x HSA_OVERRIDE_GFX_VERSION 9.0.0", "9.0.0"),
                        ("setx HSA_OVERRIDE_GFX_VERSION 11.0.2", "11.0.2"),
                        ('$env:HSA_OVERRIDE_GFX_VERSION="10.3.0"', "10.3.0")]:
        facts = parse([artifact(line + "\n")]).flat_facts()
        assert facts["env_HSA_OVERRIDE_GFX_VERSION"] == value, line
    # a variable named in passing is no setting
    assert "env_HSA_OVERRIDE_GFX_VERSION" not in parse([artifact("HSA_OVERRIDE_GFX_VERSION unset, trying again\n")]).flat_facts()


def test_listing_strace_and_offload_counts() -> None:
    text = """\
$ ls ~/.local/share/strata/components/engine/0.1.52-linux-x86_64-hip-rx9070/
BUILD.json  engine-component.json  hipblaslt/  libamdhip64.so.7  libamd_comgr.so.3
libhsa-runtime64.so.1  libLLVM.so.22.0git  rocblas/  strata  ...

access("lib/clang/22/lib/amdgcn/bitcode", F_OK) = -1 ENOENT (No such file or directory)
[pid  4711] openat(AT_FDCWD, "/opt/rocm/lib/llvm/amdgcn/bitcode", O_RDONLY|O_DIRECTORY) = 5

    133 hipv4-amdgcn-amd-amdhsa--gfx1151
      1 hipv4-amdgcn-amd-amdhsa--gfx906     <-- the outlier
    133 hipv4-amdgcn-amd-amdhsa--gfx90a:xnack-

134 __CLANG_OFFLOAD_BUNDLE__ markers
"""
    case = parse([artifact(text)])
    names = [n for _, n in case.files_listed]
    assert names[:5] == ["BUILD.json", "engine-component.json", "hipblaslt/", "libamdhip64.so.7", "libamd_comgr.so.3"]
    assert "strata" in names and "..." not in names
    assert [p for _, p in case.missing_files] == ["lib/clang/22/lib/amdgcn/bitcode"]
    assert case.offload[0].targets == {"gfx1151": 133, "gfx906": 1, "gfx90a:xnack-": 133}
    assert case.offload[0].bundles == 134


def test_environment_in_go_map_form() -> None:
    """ollama logs its settings as a Go map: KEY:value."""
    line = 'time=2025-01-01T10:00:00Z level=INFO msg="server config" env="map[HIP_VISIBLE_DEVICES:0 HSA_OVERRIDE_GFX_VERSION:11.0.0 OLLAMA_HOST:x]"\n'
    facts = parse([artifact(line)]).flat_facts()
    assert facts["env_HSA_OVERRIDE_GFX_VERSION"] == "11.0.0"
    assert facts["env_HIP_VISIBLE_DEVICES"] == "0"


def test_facts_come_from_what_programs_print_not_from_what_users_say() -> None:
    """A workaround quoted in a sentence is not the crashed process's environment; the same
    setting as a command line, a shell prompt or a program's own dump is."""
    said = ("I tried export LD_PRELOAD=/usr/lib/libstdc++.so.6 but it still crashes the same way\n"
            "My card is a Radeon RX 6700 XT and I am on ROCm 6.2 with the 10.3.0 override set\n")
    facts = parse([artifact(said)]).flat_facts()
    assert not {"env_LD_PRELOAD", "gpu_product", "rocm_version_system"} & set(facts)
    printed = ("$ export LD_PRELOAD=/usr/lib/libstdc++.so.6\n"
               "  Marketing Name:          AMD Radeon RX 6700 XT\n"
               'time=2024-06-01T10:00:00.000Z level=INFO source=routes.go:1 msg="server config" '
               'env="map[HSA_OVERRIDE_GFX_VERSION:10.3.0 OLLAMA_HOST:]"\n')
    facts = parse([artifact(printed)]).flat_facts()
    assert facts["env_LD_PRELOAD"] == "/usr/lib/libstdc++.so.6"
    assert facts["env_HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    assert "RX 6700 XT" in facts["gpu_product"]


def test_wsl_is_linux_and_an_unset_variable_in_ollamas_config_is_no_fact() -> None:
    facts = parse([artifact("[    0.000000] Linux version 5.15.167.4-microsoft-standard-WSL2 (root@f9c826d3017f)\n"
                            'time=2025-01-01T10:00:00.000Z level=INFO source=routes.go:1 msg="server config" '
                            'env="map[CUDA_VISIBLE_DEVICES: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION:10.3.0 OLLAMA_HOST:]"\n')]
                   ).flat_facts()
    assert (facts["os"], facts["wsl"], facts["kernel"]) == ("linux", "yes", "5.15.167.4-microsoft-standard-WSL2")
    assert facts["env_HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    assert "env_HIP_VISIBLE_DEVICES" not in facts and "env_CUDA_VISIBLE_DEVICES" not in facts


def test_the_os_a_report_names_outweighs_a_paths_hint() -> None:
    # a Windows user's report whose paths were written the Linux way, and hipInfo's "Architecture:" line
    text = ("OS: Microsoft Windows 11 Pro\nArchitecture: gfx900\nName: Radeon RX Vega\n"
            "loading /home/models/libggml-hip.so\n")
    assert parse([artifact(text)]).flat_facts()["os"] == "windows"
    assert "os" not in parse([artifact("Architecture: gfx900\nName: Radeon RX Vega\n")]).flat_facts()
    wsl = "OS: Ubuntu 22.04.4 LTS on Windows 10 x86_64 (WSL2)\nC:\\Users\\ana\\models\\x.gguf\n"
    assert parse([artifact(wsl)]).flat_facts()["os"] == "linux"


def test_an_unset_variable_before_a_cut_in_ollamas_config_is_no_fact() -> None:
    """A paste cut inside the next key (real, ollama#15752's log) leaves a name where the value would be."""
    line = ('time=2025-01-01T10:00:00.000Z level=INFO source=routes.go:1 msg="server config" '
            'env="map[CUDA_VISIBLE_DEVICES:-1 GPU_DEVICE_ORDINAL: HIP_VISIBLE_DEVICES: HSA_OVERRIDE_GFX_VERSION: HTTPS_P\n')
    facts = parse([artifact(line)]).flat_facts()
    assert "env_HSA_OVERRIDE_GFX_VERSION" not in facts
    assert facts["env_CUDA_VISIBLE_DEVICES"] == "-1"


def test_a_required_arch_is_not_the_machines() -> None:
    # TensorFlow refusing an old GPU names it first and the minimum it needs after (tensorflow-upstream#237, #225:
    # TensorFlow 1.x wrote the ISA spaced)
    for text, arch in (("Ignoring visible gpu device (device: 0, name: AMD A10-8700P Radeon R6, pci bus id: 0000:00:01.0)"
                        " with AMDGPU ISA gfx801. The minimum required AMDGPU ISA is gfx803.\n", "gfx801"),
                       ("Ignoring visible gpu device with AMDGPU ISA gfx 701. The minimum required AMDGPU ISA is gfx803.\n",
                        "gfx701")):
        facts = parse([artifact(text)]).flat_facts()
        assert facts["gfx_arch"] == arch
        assert facts["gfx_archs"] == [arch]


def test_a_product_name_far_into_a_long_line_is_kept_whole() -> None:
    """TensorFlow names the GPU at the end of its long "Created TensorFlow device" line (here an RX 580, Polaris:
    ROCm/legacy-rocm-build#1574): the product must reach the tables whole, which make it gfx803."""
    name = "Z-18-tf22-ellesmere-rx580-training-memory-access-fault.txt"
    text = (Path(__file__).parent / "fixtures" / "failure-wordings" / name).read_text(encoding="utf-8")
    case = parse([artifact(text, name)])
    assert any("Radeon RX 470/480/570/570X/580/580X/590]" in f.value for f in case.facts["gpu_product"])
    derive(case, load_tables())
    assert case.value("gfx_arch_real") == "gfx803"


def test_a_product_line_that_fits_is_kept_whole() -> None:
    line = ("0000:c3:00.0 Display controller [0380]: Advanced Micro Devices, Inc. [AMD/ATI] Navi 10 XL "
            "[Radeon RX 5600 OEM/5600 XT / 5700/5700 XT] [1002:731f] (rev ca)")
    case = parse([artifact(line + "\n")])
    assert [f.value for f in case.facts["gpu_product"]] == [line]


def test_rocminfos_cpu_agent_is_no_gpu_name_and_wsls_d3d12_escape_says_wsl() -> None:
    """rocminfo lists the processor first, with a Marketing Name; on WSL with no GPU agent it lists only that
    (nix-community/NixOS-WSL#623, beside dxgkrnl's "Dropped Escape call" lines that only WSL prints)."""
    name = "AA-20-nixos-wsl-rocminfo-names-cpu-only-d3d12-escape.txt"
    text = (Path(__file__).parent / "fixtures" / "failure-wordings" / name).read_text(encoding="utf-8")
    facts = parse([artifact(text, name)]).flat_facts()
    assert "gpu_name" not in facts
    assert facts["wsl"] == "yes"
    gpu = parse([artifact("  Marketing Name:          AMD Radeon RX 7900 XTX\n")]).flat_facts()
    assert gpu["gpu_name"] == "AMD Radeon RX 7900 XTX"


def test_a_device_list_is_one_value_and_an_argument_list_stops_at_its_comma() -> None:
    from tests.conftest import derived_case, fact_values

    listed = derived_case('$ ROCR_VISIBLE_DEVICES=0,1 HIP_VISIBLE_DEVICES=GPU-7685bd29c5086f3d,GPU-12ab34cd ./app')
    assert fact_values(listed, "env_ROCR_VISIBLE_DEVICES") == ["0,1"]
    assert fact_values(listed, "env_HIP_VISIBLE_DEVICES") == ["GPU-7685bd29c5086f3d,GPU-12ab34cd"]
    called = derived_case("launch(HIP_VISIBLE_DEVICES=0,verbose=1)")
    assert fact_values(called, "env_HIP_VISIBLE_DEVICES") == ["0"]


def test_the_radeon_of_a_host_name_or_path_is_no_product() -> None:
    """apt's fetch lines from repo.radeon.com and firmware paths under radeon/ name no GPU; a listing beside them does."""
    text = """\
Get:3 https://repo.radeon.com/rocm/apt/6.1.2 jammy/main amd64 hip-runtime-amd amd64 6.1.40093.60102-119~22.04 [27.1 MB]
W: Possible missing firmware /lib/firmware/radeon/hawaii_mc.bin for module radeon
"""
    assert "gpu_product" not in parse([artifact(text)]).flat_facts()
    listed = parse([artifact(text + "  Marketing Name:          AMD Radeon RX 7900 XTX\n")]).flat_facts()
    assert listed["gpu_product"] == "Marketing Name:          AMD Radeon RX 7900 XTX"
