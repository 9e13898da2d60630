"""The ROCm release a PyTorch wheel carries, as torch.version.hip and PyTorch's collect_env print it
(triage/parsers/versions.py): read as ``rocm_version_wheel`` (major.minor), never as the runtime that ran.

Lines are real output, quoted from public threads and READMEs (each test names where)."""

from __future__ import annotations

import pytest

from triage.model import Artifact
from triage.pipeline import analyze
from triage.match import load
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
    (">>> import torch\n>>> torch.cuda.is_available()\nTrue\n>>> torch.version.hip\n'7.1.25424'\n"
     ">>> torch.cuda.get_device_name()\n'AMD Instinct MI300X VF'\n", "7.1"),
    # a README about llama-cpp and torch on ROCm: the HIP build number with its git hash
    (">>> torch.version.hip or 'n/a'\n'5.7.31921-d1770ee1b'\n", "5.7"),
    # a container's check: a plain release
    (">>> torch.version.hip\n'6.1.2'\n", "6.1"),
    # the one-liner, whose print is the next line
    ('$ python3 -c "import torch; print(torch.version.hip)"\n6.2.41133-dd7f95766\n', "6.2"),
    # a one-liner that prints torch's version and is_available() first: only the HIP build number is read
    ('$ python -c "import torch; print(torch.__version__); print(torch.cuda.is_available()); print(torch.version.hip)"\n'
     "2.3.0\nTrue\n6.0.32830-d62f6a171\n", "6.0"),
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
