"""Program output against a person's prose: evidence in a sentence a person wrote weighs half, so a program's line
worded as a sentence must still be told for a program's, and a person's sentence that quotes an error stays prose."""

from __future__ import annotations

import time

import pytest

from triage.parsers.lines import MAX_LINE, _sentence_words, is_prose

# Lines programs printed, from the threads named; each reads as a sentence once its prefix or suffix is taken away.
PROGRAM_LINES = [
    # rocprof-compute (Omniperf) prints its level in capitals, then a sentence naming the arch
    ("https://github.com/ROCm/rocprofiler-compute/issues/339",
     "ERROR gfx942 is not enabled in rocprofv1. Available profilers include: ['rocprofv2']"),
    # perl's die/warn: strerror after the quoted program, the script and its line after that
    ("https://github.com/ROCm/hip/issues/338",
     'Can\'t exec "nvcc": No such file or directory at ./hipconfig line 143.'),
    # glog (Paddle): level letter, date, clock, thread, source place
    ("https://github.com/PaddlePaddle/PaddleX/issues/3415",
     "W0219 17:50:59.087286 3972 init.cc:181] Compiled with WITH_GPU, but no GPU found in runtime."),
    # llama.cpp's logger: time since start and a level letter
    ("https://github.com/ggml-org/llama.cpp/issues/23934",
     "0.00.044.708 I common_init_result: (for bugs during this step try to reproduce them with -fit off, or provide "
     "--verbose logs if the bug only occurs with -fit on)"),
    # a C program's perror: strerror's text after a colon
    ("https://github.com/ORNL/HeCBench/issues/173", "GPU coredump: execvp failed: No such file or directory"),
    # rocminfo's note under a group the user is not in
    ("https://github.com/ollama/ollama/issues/6685",
     'root is not member of "video" group, the default DRM access group. Users must be a member of the "video" group '
     "or another DRM access group in order for"),
    # PyTorch's note under a device error
    ("https://github.com/etched-ai/open-oasis/issues/27",
     "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be "
     "incorrect."),
    # Windows' loader, in a translated wording
    ("https://github.com/vosen/ZLUDA/issues/240",
     "Impossible to find entry point HipMemset_spt of the procedure in the dynamic link library"),
    # vLLM's logger under docker compose's service prefix
    ("https://github.com/kyuz0/amd-strix-halo-vllm-toolboxes/issues/73",
     "vllm-1  | (EngineCore pid=165) ERROR 07-02 07:48:27 [core.py:1202] AssertionError: One of GPU archs of "
     "['gfx1151'] is invalid or not supported"),
    # apt's and rpm's dependency lines (ROCm packages from two sources, or of another distribution release)
    ("https://github.com/ROCm/legacy-rocm-build/issues/4042", " hipsolver : Depends: libcholmod3 but it is not installable"),
    ("https://github.com/ROCm/legacy-rocm-build/issues/6367",
     "                        Depends: hipcc (= 1.1.1.70204-93~24.04) but 5.7.1-3 is to be installed"),
    ("https://github.com/cms-sw/cmsdist/pull/8362",
     "        libamdhip64.so.5(hip_5.3)(64bit) is needed by cms+cmssw+CMSSW_13_1_0_pre1-1-1.x86_64"),
    # CMake's package check finding an older HIP than a project asks for
    ("https://github.com/PaddlePaddle/Paddle/pull/13801",
     "  Could NOT find HIP: Found unsuitable version \"1.5.18073\", but required is"),
    # a compiler's diagnostic at a source place (the assembler MIOpen runs on its OpenCL kernels)
    ("https://github.com/ROCm/MIOpen/issues/101", "<stdin>:464:5: error: Only Gfx8 and Gfx9 ISA is supported"),
    # DrMinGW/exchndl's crash report in a MinGW program (darktable on Windows)
    ("https://github.com/darktable-org/darktable/issues/10165",
     "darktable.exe caused an Access Violation at location 00007FFBBDFB8D14 in module amdocl64.dll Writing to location "
     "0000000000600000."),
    # ComfyUI Desktop's report of its Python child's exit, copied from its dialog without the log's timestamp
    ("https://github.com/Comfy-Org/ComfyUI-Manager/issues/2724",
     "Python process exited with code 3221225477 and signal null"),
    # Windows' TDR notice in its shorter wording (Event 4101 says "has successfully recovered")
    ("https://github.com/ALaggyDev/CoordsFinder/issues/14",
     "Display driver nvlddmkm stopped responding and has recovered."),
    # CMake's find_package error, wrapped over sentence-like lines
    ("https://github.com/ggml-org/llama.cpp/issues/26060",
     '  By not providing "Findhip.cmake" in CMAKE_MODULE_PATH this project has'),
    ("https://github.com/lhl/strix-halo-testing/issues/23",
     '  Could not find a package configuration file provided by "hip" with any of'),
    # a ComfyUI node's banner ("!!! " before the level) over PyTorch's dtype check
    ("https://github.com/lum3on/comfyui_HiDream-Sampler/issues/35",
     "!!! ERROR during execution: expected mat1 and mat2 to have the same dtype, but got: struct c10::Half != struct "
     "c10::BFloat16"),
    # ROCm SMI's status name and its description, as a tool prints them (darknet under WSL2)
    ("https://github.com/hank-ai/darknet/issues/135",
     "- status #8: RSMI_STATUS_INIT_ERROR: An error occurred during initialization, during monitor discovery or when "
     "when initializing internal data structures"),
]


@pytest.mark.parametrize("line", [line for _, line in PROGRAM_LINES], ids=[url for url, _ in PROGRAM_LINES])
def test_a_programs_line_worded_as_a_sentence_is_not_prose(line: str) -> None:
    assert not is_prose(line)


# A program's message worded as a sentence, alone prose; behind each common prefix a program puts before it, not.
MESSAGE = "the device could not be opened because the driver is not loaded for it"
PREFIXES = [
    "ERROR:root:",  # Python's logging, default format
    "WARNING:torch.distributed:",
    "[ERROR] ",  # a bracketed level
    "[WARN] ",
    "E1203 12:00:00.123456  1234 gpu_device.cc:123] ",  # glog
    "2024-12-03 12:00:00,123 - app - ERROR - ",  # Python's logging with a clock
    "[Tue Sep 10 09:37:12 2024] ",  # dmesg -T
    "12:00:01.123 INFO ",
    "error: ",  # a compiler's or a tool's own
    "clang++: error: ",
    "main.hip:12:3: error: ",
    "FATAL: ",
    "ERROR ",
    "WARNING ",
    "RuntimeError: ",  # a Python exception
    "torch.cuda.OutOfMemoryError: ",
    "time=2024-09-10T21:59:54.408Z level=ERROR source=amd_linux.go:364 msg=",  # logfmt
    ":1:hip_fatbin.cpp           :687 : 114369963532 us:  ",  # the ROCm runtime's log
]


def test_the_message_alone_is_a_sentence() -> None:
    """So each prefix below is what tells the program's line apart."""
    assert is_prose(MESSAGE)


@pytest.mark.parametrize("prefix", PREFIXES)
def test_a_programs_prefix_makes_a_sentence_its_output(prefix: str) -> None:
    assert not is_prose(prefix + MESSAGE)


def test_perls_and_a_throws_source_place_at_the_end() -> None:
    assert not is_prose(f"Cannot start {MESSAGE} at /usr/bin/hipcc line 12, <FH> line 3.")
    assert not is_prose(f"CUDA Runtime Error: {MESSAGE}. at src/scene.cpp:35")


def test_pythons_traceback_connectors_are_a_programs() -> None:
    assert not is_prose("The above exception was the direct cause of the following exception:")
    assert not is_prose("During handling of the above exception, another exception occurred:")
    assert not is_prose('    raise AssertionError("Torch not compiled with CUDA enabled")')


# A person's sentences: they stay prose whatever they quote (an error's name, a setting, a path, a program's line).
PERSON_LINES = [
    "I tried reinstalling ROCm 6.1 and my GPU is still not detected by the driver at all",
    "Edit: I tried reinstalling ROCm 6.1 and my GPU is still not detected by the driver at all",
    "Update: the same thing happens with ROCm 6.2 on the other machine as well",
    "I get hipErrorNoBinaryForGpu when I run the model on my RX 6600 card with the latest torch",
    "I tried HSA_OVERRIDE_GFX_VERSION=10.3.0 but it still crashes with the same error on my card",
    "My GPU is listed in /opt/rocm/bin/rocminfo but not in torch when I start the script",
    "When I run omniperf I get ERROR gfx942 is not enabled in rocprofv1 on my node, is that expected?",
    "I see 0x1002 as the vendor of my card in lspci, so the card is an AMD one as far as I can tell",
    "My kernel: 6.8 with the card that resets when I start the game and then it hangs again",
    "The rocm meta package depends on hipcc but it is not installable here, so the install stops for me",
    "My display driver stopped responding and has recovered twice today while I was rendering",
]


@pytest.mark.parametrize("line", PERSON_LINES)
def test_a_persons_sentence_stays_prose(line: str) -> None:
    assert is_prose(line)


def test_a_programs_clock_or_logger_wins_over_a_first_person_message() -> None:
    """What a program logged is its output, even where it logs a user's words."""
    sentence = "I tried reinstalling ROCm 6.1 and my GPU is still not detected by the driver at all"
    assert not is_prose(f"2024-12-03 12:00:00,123 INFO {sentence}")
    assert not is_prose(f"[ 1234.567890] {sentence}")
    assert not is_prose(f"ERROR:app.main:{sentence}")


def test_a_host_or_path_named_my_is_no_person() -> None:
    line = "root@my-server:~# the device could not be opened because the driver is not loaded /home/me/x"
    assert not is_prose(line)
    assert _sentence_words(line)[0] >= 8  # long enough to be a sentence, were it a person's


def test_long_hostile_lines_are_answered_in_linear_time() -> None:
    """Lines of one repeated piece, the shapes that make a regex try every split; at 4,000 characters a
    quadratic pattern takes 0.1-0.4 s on each, a linear one some milliseconds."""
    run = MAX_LINE - 100
    pieces = [".", "0", " ", ":", "-", "a", "1:", "a-", "a.", "at ", "0.", "I ", "my ", "a-1", "2024-01-01 "]
    lines = [piece * (run // len(piece)) + " my GPU kernel crashed and I do not know why" for piece in pieces]
    start = time.perf_counter()
    for line in lines:
        is_prose(line)
    assert time.perf_counter() - start < 3.0
