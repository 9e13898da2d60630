"""Weak evidence alone names no cause: a bare segfault, a null read in a library outside the GPU
stack, a general-protection fault, an exit code, a failed build step, a glibc heap abort, a line
that only says what is installed. None gives a class at 0.45 or more, and none adds a candidate
above 0.2. A crash in the HIP runtime with nothing more is a runtime crash, not a specific cause."""

from __future__ import annotations

import pytest

from triage.match import load
from triage.model import Artifact
from triage.pipeline import analyze
from triage.resources import data_dir

FOLDER = data_dir("signatures")
DB = load(FOLDER)


def _diagnoses(text: str) -> list:
    return analyze([Artifact(name="paste.txt", text=text, size=len(text))], DB, FOLDER).diagnoses


WEAK = {
    "a bare segfault": "Segmentation fault (core dumped)\n",
    "a shell's segfault with a program name": "./run.sh: line 12: 48211 Segmentation fault      (core dumped) python3 app.py\n",
    "a null read in a library outside the GPU stack": (
        "kernel: python3[4242]: segfault at 10 ip 00007f3c2a4b71c9 sp 00007ffd5e1c9e40 error 4 in libfoo.so[7f3c2a000000+5f3000]\n"),
    "a general-protection fault": (
        "traps: python3[99] general protection fault ip:7f1c2a4b71c9 sp:7ffd5e1c9e40 error:0 in libfoo.so[7f1c2a000000+5f3000]\n"),
    "an exit code": "Process exited with code 3221225477\n",
    "an exit status of a runner": 'level=ERROR source=sched.go:339 msg="error loading llama server" error="llama runner process has terminated: exit status 0xc0000005 "\n',
    "a Windows access violation with no module": "Exception Code: 0xC0000005\n",
    "a failed build step": "make: *** [Makefile:24: test] Aborted (core dumped)\n",
    "a stopped ninja build": "FAILED: src/CMakeFiles/app.dir/main.cpp.o\nninja: build stopped: subcommand failed.\n",
    "a glibc heap abort": "free(): invalid pointer\nAborted (core dumped)\n",
    "a double free": "double free or corruption (out)\nAborted\n",
}


# Lines that say what is installed or in use and nothing of a failure: context, never a cause on their own.
CONTEXT = {
    "a ROCm wheel's version": "PyTorch version: 2.4.1+rocm6.1\n",
    "ggml's ROCm device count": "ggml_cuda_init: found 1 ROCm devices:\n",
    "a ROCm buffer size": "llm_load_tensors:      ROCm0 buffer size =  4155.99 MiB\n",
    "an override export": "export HSA_OVERRIDE_GFX_VERSION=10.3.0\n",
    "a debugging variable export": "export AMD_SERIALIZE_KERNEL=3\n",
    "an APU's device line": "  Device 0: AMD Radeon Graphics, gfx1151 (0x1151), VMM: no, Wave Size: 32\n",
    "ollama naming its ROCm library": (
        'time=2024-10-26T14:35:44.590+01:00 level=INFO source=types.go:123 msg="inference compute" id=1 library=rocm '
        'variant="" compute=gfx1032 driver=6.2 name="AMD Radeon RX 6700S" total="8.0 GiB" available="7.8 GiB"\n'),
    "rocminfo's ISA name": "  Name:                    amdgcn-amd-amdhsa--gfx1100\n",
    "an HCC-era compiler's version": "HCC clang version 5.0.0  (based on HCC 1.0.17262-e8cf396-540c9ca-363dd5c )\n",
}


@pytest.mark.parametrize("text", [*WEAK.values(), *CONTEXT.values()], ids=[*WEAK.keys(), *CONTEXT.keys()])
def test_weak_evidence_alone_names_no_class(text: str) -> None:
    diagnoses = _diagnoses(text)
    assert diagnoses[0].klass == "unknown"
    assert all(d.score <= 0.2 for d in diagnoses[1:]), [(d.id, d.score) for d in diagnoses[1:]]


@pytest.mark.parametrize("text", CONTEXT.values(), ids=CONTEXT.keys())
def test_context_alone_makes_no_candidate(text: str) -> None:
    """Context is weighed only beside a failure's own line: alone it lists no "other candidates" (a report of a clinfo
    crash once offered ollama's out-of-memory because the log named ollama's ROCm library)."""
    assert [d.id for d in _diagnoses(text)] == ["unknown"]


def test_cudas_allocation_failure_alone_names_no_amd_class() -> None:
    """PyTorch on CUDA and ggml's CUDA builds print it; ROCm builds say HIP or ROCm (or print it beside ROCm's names)."""
    diagnoses = _diagnoses("RuntimeError: CUDA error: out of memory\n")
    assert diagnoses[0].klass == "unknown"
    assert all(d.score <= 0.2 for d in diagnoses[1:] if d.klass != "outside-gpu-stack"), [(d.id, d.score) for d in diagnoses]


def test_a_general_protection_fault_has_no_invented_address() -> None:
    text = WEAK["a general-protection fault"]
    case = analyze([Artifact(name="p", text=text, size=len(text))], DB, FOLDER).case
    assert case.fault.signal == "SEGV" and case.fault.address is None and case.fault.module == "libfoo.so"


def test_a_null_read_inside_the_hip_runtime_is_a_runtime_crash() -> None:
    """Nothing about blit kernels or device libraries: not device-libs-missing, whatever the instruction."""
    text = ("kernel: python3[4242]: segfault at 10 ip 00007f3c2a4b71c9 sp 00007ffd5e1c9e40 error 4 in "
            "libamdhip64.so.6[7f3c2a000000+5f3000]\n"
            "Program terminated with signal SIGSEGV, Segmentation fault.\n"
            "=> 0x7f3c2a4b71c9:\tmov    0x10(%rax),%rdx\n"
            "rax            0x0                 0\n")
    diagnoses = _diagnoses(text)
    assert diagnoses[0].klass == "runtime-crash"
    assert "device-libs-missing" not in {d.klass for d in diagnoses if d.score > 0.2}


# A GPU listed beside a program's generic crash, with nothing that names a GPU compute runtime.
LISTED_GPU = {
    "an RDNA1 card in lspci and a shell's segfault": (
        "03:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Navi 10 [Radeon RX 5600 OEM/5600 XT / "
        "5700/5700 XT] (rev c1)\n$ ./myprog --input data.bin\nSegmentation fault (core dumped)\n"),
    "an APU in lspci and a Python segfault": (
        "05:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Cezanne [Radeon Vega Series / Radeon "
        "Vega Mobile Series] (rev c5)\n$ python train.py\nSegmentation fault (core dumped)\n"),
    "a Polaris card in lspci and the program's own segfault line": (
        "01:00.0 VGA compatible controller: Advanced Micro Devices, Inc. [AMD/ATI] Ellesmere [Radeon RX 470/480/570/570X/"
        "580/580X/590] (rev e7)\n[ 1234.567890] myprog[4242]: segfault at 0 ip 000055d1c0a1b2c3 sp 00007ffd5e6f7a80 "
        "error 4 in myprog[55d1c0a00000+20000]\n"),
}


@pytest.mark.parametrize("text", LISTED_GPU.values(), ids=LISTED_GPU.keys())
def test_a_gpu_listed_beside_a_generic_crash_is_no_confident_class(text: str) -> None:
    diagnoses = _diagnoses(text)
    assert diagnoses[0].klass == "unknown", [(d.id, d.confidence) for d in diagnoses]
    assert all(d.confidence < 0.45 for d in diagnoses[1:]), [(d.id, d.confidence) for d in diagnoses[1:]]


def test_the_same_crash_with_the_compute_stack_named_keeps_the_unsupported_reading() -> None:
    """Once the output shows the ROCm stack at work on the card, its missing support is the reading again."""
    diagnoses = _diagnoses("GPU: AMD Radeon RX 580 (gfx803)\nROCm 6.2\n$ ./app\nSegmentation fault (core dumped)\n")
    assert diagnoses[0].klass == "unsupported-gpu" and diagnoses[0].confidence >= 0.8
