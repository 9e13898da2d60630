"""The program's and engine's version (parsers/appinfo.py): real lines, the general forms, the ranking,
and the GPU stack's own versions, frames and runtime-log records, which must give none."""

from __future__ import annotations

import pytest

from tests.conftest import artifact, shared
from triage.parsers import appinfo, parse

APP_FACTS = ("app_version", "app_name", "engine_version", "product_version", "framework_version")


def _app(text: str) -> dict[str, str]:
    facts = parse([artifact(text if text.endswith("\n") else text + "\n")]).flat_facts()
    return {name: facts[name] for name in APP_FACTS if name in facts}


# (file under ../shared, its line verbatim, what it yields)
REAL = [
    ("seeds/002_6151a11bac1fd6cf.txt",
     "- **Strata version**: `0.1.44.1` (latest on `main` at the time of this report; `MIN_ENGINE = (0, 1, 44, 1)`)",
     {"app_version": "0.1.44.1", "product_version": "0.1.44.1", "app_name": "Strata"}),
    ("seeds/002_6151a11bac1fd6cf.txt",
     "2. Run `run-iq2_xs.bat`. Engine starts, reaches `session is up (engine 0.1.44.1)`.",
     {"app_version": "0.1.44.1", "engine_version": "0.1.44.1"}),
    ("seeds/002_6151a11bac1fd6cf.txt",
     "#2781 [BUG] Engine crashes with 0xC0000005 in hipModuleLoad on first request — AMD RX 9070 XT (gfx1201) on "
     "Windows, Strata 0.1.44.1",
     {"app_version": "0.1.44.1", "product_version": "0.1.44.1", "app_name": "Strata"}),
    ("seeds/000_5cec9120d2302536.txt",
     "Strata 0.2.7 · engine 0.1.52 · variant rx9070 · build_id f-amd-vision a42cc3d7df70+rocm · engine-component.json "
     "schema 2 · hipBLASLt 100200",
     {"app_version": "0.1.52", "engine_version": "0.1.52", "product_version": "0.2.7", "app_name": "Strata"}),
    ("seeds/000_5cec9120d2302536.txt",
     "Engine 0.1.52-linux-x86_64-hip-rx9070 dies with SIGSEGV a few seconds after it starts, before the model is ready. "
     "strata-vision-hip dies at the same instruction a second earlier.",
     {"app_version": "0.1.52", "engine_version": "0.1.52"}),
    ("seeds/000_5cec9120d2302536.txt",
     "Desktop app (Windows, Linux or Mac) — Linux AppImage 0.2.7, engine installed through Update engine.",
     {"app_version": "0.2.7", "product_version": "0.2.7"}),
    ("seeds/000_5cec9120d2302536.txt",
     "3. The window reports Strata engine 0.1.52 is installed; no model is loaded yet, then both engine processes die "
     "within ~5 s and coredumpctl list shows the SIGSEGV entries.",
     {"app_version": "0.1.52", "engine_version": "0.1.52", "app_name": "Strata"}),
    ("seeds/003_2adcc3be728d651e.txt",
     "mesh-llm\t0.74.0 (release artifact, not a source build)",
     {"app_version": "0.74.0", "product_version": "0.74.0", "app_name": "mesh-llm"}),
    ("realworld/neg-ollama-9018-nvidia-cuda-illegal-access-buffer-clear/input.txt",
     "ollama version is 0.5.8",
     {"app_version": "0.5.8", "product_version": "0.5.8", "app_name": "ollama"}),
    ("realworld/neg-obs-amd-encoder-278-atidxx64-crash/input.txt",
     "libobs version: 20.0.1",
     {"app_version": "20.0.1", "product_version": "20.0.1", "app_name": "libobs"}),
    ("realworld/neg-xbmc-23071-amdxx64-dll-kodi-crash/input.txt",
     "Faulting application name: kodi.exe, version: 20.1.0.0, time stamp: 0x640d1ad6",
     {"app_version": "20.1.0.0", "product_version": "20.1.0.0", "app_name": "kodi"}),
]

# Lines of real logs that name the GPU stack's, the platform's or a module's version, never the app's.
STACK = [
    ":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch: 1",
    "• Bundled in the component: HIP 7.2.53210.41ce572d55, COMGR 3.0, LLVM 22.0git",
    "• In /opt/rocm/lib: HIP 7.16.26385, COMGR 3.5",
    "• System ROCm: 10.1.0 (rocm-bin 10.1.0-1) at /opt/rocm; /opt/rocm/amdgcn/bitcode has the 75 .bc files",
    "• OS: CachyOS rolling (Arch-based), kernel 7.3.0-5-cachyos, amdgpu 3.64.0, linux-firmware 1:20261019-1",
    "• Userspace graphics: mesa-git 27.0.0_devel.232438.f7dd61f78f8-1, xf86-video-amdgpu 25.0.0",
    "- **Driver**: `32.0.31036.15` — AMD Software: PRO Edition 26.Q3 (released 2026-08-12). This is the latest PRO "
    "Edition for this card; the consumer Adrenalin 26.9.2 (Optional) is also available but I have not installed it.",
    "ROCm\t7.2.3",
    "OS / kernel\tNixOS 26.11, Linux 7.1.3",
    "Python 3.8.5",
    "Windows version: 10.0 build 15063 (revision: 296; 64-bit)",
    "Faulting module name: amdxx64.dll, version: 31.0.12027.7000, time stamp: 0x6351b568",
    "do_winsys_init: DRM version is 3.33.0 but this driver is only compatible with 2.12.0 (kernel 3.2) or later.",
    "Using display 0x1f55b90 with EGL version 1.4",
    "> [    2.850571] [drm] amdgpu version: 5.4.8",
    "CMake Error at /usr/share/cmake-3.22/Modules/CMakeTestCXXCompiler.cmake:62 (message):",
    "  cd /root/ROCm-CompilerSupport-rocm-6.1.2/build/test && /opt/compiler-explorer/clang-rocm-6.1.2/bin/clang-17 -c "
    "-emit-llvm -target amdgcn-amd-amdhsa -mcpu=gfx900",
    "modprobe: FATAL: Module amdgpu not found in directory /lib/modules/5.15.133.1-microsoft-standard-WSL2",
    '[GIN] 2024/05/10 - 22:52:42 | 500 |    2.7650401s |       127.0.0.1 | POST     "/api/chat"',
    "zsh: segmentation fault  llama-server -hf AesSedai/Qwen3.5-35B-A3B-GGUF:Q4_K_M -fa on  --no-warmup  8 ",
    "> torch.OutOfMemoryError: HIP out of memory. Tried to allocate 80.00 MiB. GPU 0 has a total capacity of 15.98 GiB",
    "CPU: Intel(R) Core(TM) i5-6600 CPU @ 3.30GHz",
]

# PyTorch's collect_env, the form most PyTorch-on-ROCm reports paste: only torch's line is the app's.
COLLECT_ENV = """\
PyTorch version: 2.4.0+rocm6.1
Is debug build: False
CUDA used to build PyTorch: N/A
ROCM used to build PyTorch: 6.1.40091-a8dbc0c19
OS: Ubuntu 22.04.4 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
CMake version: version 3.30.2
Libc version: glibc-2.35
Python version: 3.10.14 (main, Apr  6 2024, 18:45:05) [GCC 11.4.0] (64-bit runtime)
Python platform: Linux-6.8.0-40-generic-x86_64-with-glibc2.35
HIP runtime version: 6.1.40091
MIOpen runtime version: 3.1.0
Versions of relevant libraries:
[pip3] numpy==1.26.4
[pip3] pytorch-triton-rocm==3.0.0
[pip3] torch==2.4.0+rocm6.1
[pip3] torchvision==0.19.0+rocm6.1
"""


@pytest.mark.parametrize("source,line,expected", REAL, ids=[f"{s.split('/')[1][:24]}:{e['app_version']}" for s, _, e in REAL])
def test_real_lines(source: str, line: str, expected: dict[str, str]) -> None:
    assert _app(line) == expected


@pytest.mark.parametrize("source,line", [(s, line) for s, line, _ in REAL])
def test_the_real_lines_are_quoted_verbatim(source: str, line: str) -> None:
    assert line in shared(source).read_text(encoding="utf-8").splitlines()


@pytest.mark.parametrize("seed,version,name,product", [
    ("000_5cec9120d2302536.txt", "0.1.52", "Strata", "0.2.7"),
    ("002_6151a11bac1fd6cf.txt", "0.1.44.1", "Strata", "0.1.44.1"),
    ("003_2adcc3be728d651e.txt", "0.74.0", "mesh-llm", "0.74.0"),
])
def test_whole_seed_reports(seed: str, version: str, name: str, product: str) -> None:
    """Seed 000 names the app (Strata AppImage 0.2.7) and the engine that crashed (0.1.52): the column is the engine's."""
    got = _app(shared("seeds", seed).read_text(encoding="utf-8"))
    assert (got["app_version"], got["app_name"], got["product_version"]) == (version, name, product)


def test_docstring_examples() -> None:
    """The module docstring's examples are real lines: each gives the facts it says."""
    examples = [line.strip().split("  =>  ") for line in appinfo.__doc__.splitlines() if "  =>  " in line]
    assert len(examples) >= 10
    for line, facts in examples:
        expected = dict(pair.split("=", 1) for pair in facts.split())
        got = _app(line)
        assert {name: got.get(name) for name in expected} == expected, line


@pytest.mark.parametrize("line,expected", [
    ("Blender 4.2.0", {"app_version": "4.2.0", "product_version": "4.2.0", "app_name": "Blender"}),
    ("LM Studio 0.3.5", {"app_version": "0.3.5", "product_version": "0.3.5", "app_name": "LM Studio"}),
    ("Running koboldcpp-1.80.exe --usecublas", {"app_version": "1.80", "product_version": "1.80", "app_name": "koboldcpp"}),
    ("Welcome to KoboldCpp - Version 1.80", {"app_version": "1.80", "product_version": "1.80", "app_name": "KoboldCpp"}),
    ("ComfyUI version: 0.3.10", {"app_version": "0.3.10", "product_version": "0.3.10", "app_name": "ComfyUI"}),
    ("torch 2.5.1+rocm6.2", {"app_version": "2.5.1+rocm6.2", "framework_version": "2.5.1+rocm6.2", "app_name": "torch"}),
    ("pip install torch==2.4.0+rocm6.1 --index-url https://download.pytorch.org/whl/rocm6.1",
     {"app_version": "2.4.0+rocm6.1", "framework_version": "2.4.0+rocm6.1", "app_name": "torch"}),
    ("llama.cpp build: 4567 (abc1234)", {"app_version": "4567", "product_version": "4567", "app_name": "llama.cpp"}),
    ("build: 4567 (abc1234) with cc (GCC) 13.2.0 for x86_64-linux-gnu", {"app_version": "4567", "product_version": "4567"}),
    ("version: 4567 (abc1234)", {"app_version": "4567", "product_version": "4567"}),
    ("main: build = 1234 (abcdef0)", {"app_version": "1234", "product_version": "1234"}),
    ("Name: torch\nVersion: 2.4.0+rocm6.1\n",
     {"app_version": "2.4.0+rocm6.1", "framework_version": "2.4.0+rocm6.1", "app_name": "torch"}),
    ("Warning: client version is 0.5.7", {"app_version": "0.5.7", "product_version": "0.5.7"}),
    ("mesh-llm v0.74.0", {"app_version": "0.74.0", "product_version": "0.74.0", "app_name": "mesh-llm"}),
    ("engine version: 0.1.44.1", {"app_version": "0.1.44.1", "engine_version": "0.1.44.1"}),
])
def test_general_forms(line: str, expected: dict[str, str]) -> None:
    assert _app(line) == expected


@pytest.mark.parametrize("line", STACK)
def test_the_gpu_stack_and_platform_are_not_the_app(line: str) -> None:
    assert _app(line) == {}


@pytest.mark.parametrize("line", [
    "Package: rocm-hip-runtime\nVersion: 6.1.2.60102-119~22.04\n",  # dpkg -s
    "    DRIVER:\n        NAME: amdgpu\n        VERSION: 6.8.5\n",  # amd-smi static
    "Runtime Version:         1.1\nRuntime Ext Version:     1.4\n",  # rocminfo
    "Version: 1.2.3\n",  # a bare label says whose version it is only under a Name: line
    "the llama-3.1-8b model\nMeta-Llama-3.1-8B-Instruct-Q4_K_M.gguf\n",  # models, not programs
    "Server listening on 127.0.0.1:8080\n",
])
def test_other_versions_are_not_the_app(line: str) -> None:
    assert _app(line) == {}


def test_collect_env_gives_torch() -> None:
    assert _app(COLLECT_ENV) == {"app_version": "2.4.0+rocm6.1", "framework_version": "2.4.0+rocm6.1", "app_name": "PyTorch"}


def test_a_package_listing_counts_only_its_framework() -> None:
    assert _app("accelerate==0.30.1\nnumpy==1.26.4\nsafetensors==0.4.3\n") == {}
    listed = "$ pip list | grep torch\ntorch                    2.4.0+rocm6.1\ntorchaudio               2.4.0+rocm6.1\n"
    assert _app(listed)["app_version"] == "2.4.0+rocm6.1" and _app(listed)["app_name"] == "torch"
    # A GPU stack row beside the app's makes an environment table, not a listing.
    assert _app("mesh-llm\t0.74.0\nROCm\t7.2.3\n")["app_version"] == "0.74.0"


@pytest.mark.parametrize("record,bare", [
    ('#4  0x00005581b2c3d4e5 in load_model (path=0x55d1 "Blender 4.2.0") at loader.cpp:88',
     'load_model (path=0x55d1 "Blender 4.2.0") at loader.cpp:88'),
    (":3:hip_code_object.cpp :505 : 114369963532 us: [pid:403868 tid:0x7f37b81ff640] Strata version: 0.2.7",
     "Strata version: 0.2.7"),
    ("[    3.214117] Bluetooth: Core ver 2.22", "Bluetooth: Core ver 2.22"),
])
def test_frames_runtime_log_records_and_kernel_lines_give_none(record: str, bare: str) -> None:
    """The same words read as prose give a version: the record's claim (or the kernel prefix) is what stops them."""
    assert _app(bare)
    assert _app(record) == {}


def test_a_labelled_field_outranks_a_passing_mention() -> None:
    got = _app("It also crashed on Blender 4.1.1 last week\nBlender version: 4.2.0\n")
    assert got["app_version"] == "4.2.0"


def test_the_product_outranks_its_framework() -> None:
    comfy = "pytorch version: 2.4.0+rocm6.1\nSet vram state to: NORMAL_VRAM\nComfyUI version: 0.3.10\n"
    got = _app(comfy)
    assert (got["app_version"], got["app_name"], got["framework_version"]) == ("0.3.10", "ComfyUI", "2.4.0+rocm6.1")


def test_the_engine_outranks_the_product_that_ships_it() -> None:
    got = _app("Strata version: 0.2.7\nThe window reports engine 0.1.52 is installed\n")
    assert (got["app_version"], got["engine_version"], got["product_version"]) == ("0.1.52", "0.1.52", "0.2.7")


@pytest.mark.parametrize("text", [
    "version " * 600,
    "a" * 4000 + "==1.2.3",
    "x-1.2 " * 680,
    "1.2.3 " * 680,
    "engine 1.2 " * 370,
    "Version: 1.2.3",
    "==1.2\n-1.2\nv1.2\n",
])
def test_odd_lines_do_not_raise(text: str) -> None:
    case = parse([artifact(text + "\n")])
    assert not case.warnings
