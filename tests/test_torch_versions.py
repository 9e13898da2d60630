"""The ROCm release a PyTorch wheel carries, as torch.version.hip and PyTorch's collect_env print it
(triage/parsers/versions.py): read as ``rocm_version_wheel`` (major.minor), never as the runtime that ran.

Lines are real output, quoted from public threads and READMEs (each test names where)."""

from __future__ import annotations

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)


def facts(text: str) -> dict:
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], DB, FOLDER).case.flat_facts()


# vLLM's collect_env on MI300X (vllm-project/vllm, a ROCm bug report): torch's own block, then vLLM's
# "ROCM Version", which hipcc reports for the installed ROCm.
VLLM_COLLECT_ENV = """\
GPU models and configuration: AMD Instinct MI300X (gfx942:sramecc+:xnack-)
Nvidia driver version: Could not collect
cuDNN version: Could not collect
HIP runtime version: 6.1.40093
MIOpen runtime version: 3.1.0
Is XNNPACK available: True

Versions of relevant libraries:
[pip3] torch==2.4.1+rocm6.1
[pip3] torchaudio==2.4.1+rocm6.1
"""


def test_collect_env_hip_runtime_line_is_the_wheels_release() -> None:
    """collect_env reads "HIP runtime version" from torch._C._show_config()'s "HIP Runtime": the build's HIP."""
    got = facts(VLLM_COLLECT_ENV)
    assert got["rocm_version_wheel"] == "6.1"
    assert "hip_version_runtime" not in got
    assert got["rocm_versions"] == ["6.1"]  # the line and the +rocm6.1 wheel are one release, counted once


def test_hipconfig_still_names_the_installed_runtime() -> None:
    got = facts("HIP version: 6.2.41133-dd7f95766\n")
    assert got["hip_version_runtime"] == "6.2.41133" and "rocm_version_wheel" not in got


@pytest.mark.parametrize("text, release", [
    # a REPL session in a README about ROCm Python packages on MI300X
    ((">>> import torch\n>>> torch.cuda.is_available()\nTrue\n>>> torch.version.hip\n'7.1.25424'\n"
     ">>> torch.cuda.get_device_name()\n'AMD Instinct MI300X VF'\n"), "7.1"),
    # a README about llama-cpp and torch on ROCm: the HIP build number with its git hash
    (">>> torch.version.hip or 'n/a'\n'5.7.31921-d1770ee1b'\n", "5.7"),
    # a container's check: a plain release
    (">>> torch.version.hip\n'6.1.2'\n", "6.1"),
    # the one-liner, whose print is the next line
    ('$ python3 -c "import torch; print(torch.version.hip)"\n6.2.41133-dd7f95766\n', "6.2"),
    # a one-liner that prints torch's version and is_available() first: only the HIP build number is read
    (('$ python -c "import torch; print(torch.__version__); print(torch.cuda.is_available()); print(torch.version.hip)"\n'
     "2.3.0\nTrue\n6.0.32830-d62f6a171\n"), "6.0"),
    ("torch.version.hip: 6.2.41133-dd7f95766\n", "6.2"),
])
def test_torch_version_hip_is_the_wheels_release(text: str, release: str) -> None:
    got = facts(text)
    assert got["rocm_version_wheel"] == release
    assert got["rocm_versions"] == [release]


@pytest.mark.parametrize("text", [
    # torch's own version on the line after a command that printed it first is no ROCm release
    '$ python -c "import torch; print(torch.__version__); print(torch.version.hip)"\n2.3.0\n6.1.2\n',
    # a CUDA build prints None
    ">>> torch.version.hip\nNone\n",
    # a sentence that names the attribute states nothing about this machine
    "The ROCm version is in torch.version.hip, 6.2 here I think\n",
])
def test_no_release_without_the_value(text: str) -> None:
    assert "rocm_version_wheel" not in facts(text)


def test_pip_list_of_the_torch_family() -> None:
    """flash-attention#1652 (design case flash-attention-1652-sharedobjectinit-torch-rocm-mismatch): pip list."""
    got = facts("flash_attn               2.7.4.post1\ntorch                    2.4.1+rocm6.0\n"
                "torchaudio               2.4.1+rocm6.0\ntorchvision              0.19.1+rocm6.0\n")
    assert (got["torch_version"], got["torchvision_version"], got["torchaudio_version"]) == \
        ("2.4.1+rocm6.0", "0.19.1+rocm6.0", "2.4.1+rocm6.0")


def test_collect_env_pip_rows_with_nightly_dates() -> None:
    """pytorch#164346 (design case pytorch-164346-gfx1151-rocm70-nightly-invalid-device-function): collect_env."""
    got = facts("[pip3] pytorch-triton-rocm==3.5.0+gitbbb06c03\n[pip3] torch==2.10.0.dev20250929+rocm7.0\n"
                "[pip3] torchaudio==2.8.0.dev20250930+rocm7.0\n[pip3] torchsde==0.2.6\n"
                "[pip3] torchvision==0.25.0.dev20250930+rocm7.0\n")
    assert (got["torch_version"], got["torchvision_version"], got["torchaudio_version"]) == \
        ("2.10.0.dev20250929+rocm7.0", "0.25.0.dev20250930+rocm7.0", "2.8.0.dev20250930+rocm7.0")


@pytest.mark.parametrize("text, name, version", [
    # vLLM's collect_env above: a torchvision built from source carries a git tag, not a ROCm one
    (VLLM_COLLECT_ENV + "[pip3] torchvision==0.16.1+fdea156\n", "torchvision_version", "0.16.1+fdea156"),
    # collect_env's header line (a vLLM report on MI100)
    ("PyTorch version: 2.5.0.dev20240613+rocm6.1\nIs debug build: False\n", "torch_version", "2.5.0.dev20240613+rocm6.1"),
    # collect_env's conda rows: name, version, build, channel
    ("[conda] pytorch                   2.0.1           py3.10_cuda11.8_cudnn8.7.0_0    pytorch\n", "torch_version", "2.0.1"),
    # pip's last line after an install from the ROCm index
    ("Successfully installed filelock-3.13.1 torch-2.4.0+rocm6.1 torchvision-0.19.0+rocm6.1 triton-3.0.0\n",
     "torchvision_version", "0.19.0+rocm6.1"),
    # pip show torch
    (("Name: torch\nVersion: 2.3.1+rocm5.7\nSummary: Tensors and Dynamic neural networks in Python with strong GPU "
     "acceleration\n"), "torch_version", "2.3.1+rocm5.7"),
])
def test_torch_family_versions(text: str, name: str, version: str) -> None:
    assert facts(text)[name] == version


@pytest.mark.parametrize("text", [
    "torch 2.0 is what I use here\n",  # a sentence, and no full version
    "pip install torch==2.3.0+rocm5.7 --index-url https://download.pytorch.org/whl/rocm5.7\n",  # asked for, not had
    "[pip3] torchsde==0.2.6\n",  # another package of the torch name
    "Name: rocm-core\nVersion: 6.2.0.60200-66~22.04\n",
])
def test_no_torch_version(text: str) -> None:
    assert not {"torch_version", "torchvision_version", "torchaudio_version"} & facts(text).keys()
