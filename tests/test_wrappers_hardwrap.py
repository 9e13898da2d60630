"""Pastes hard-wrapped at a fixed width (a terminal's copy at exactly the width, mid-word; a mail or forum editor's
at the last space that fits) read as they were printed: real cases wrapped either way get the class and signature
they get bare, with evidence on the lines the user sent; a paste that is not wrapped is never joined."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from tests.conftest import CORPUS, shared
from triage.model import Artifact
from triage.parsers import parse, read_past_wrappers
from triage.parsers.hardwrap import detect, rejoin
from triage.pipeline import triage

REAL = CORPUS / "realworld"
SEEDS = ("000_5cec9120d2302536.txt", "002_6151a11bac1fd6cf.txt", "003_2adcc3be728d651e.txt")
# Real design cases that lose their class when wrapped at 80 columns and read nothing joined.
CASES = [
    "hip-2119-rocm351-segfault-ihipstreamcallback-default-stream",  # a gdb backtrace
    "mivisionx-1437-openvx-hip-missing-co-gfx942",  # the HIP runtime's own log
    "rocm-pytorch-3132-windows-scaled-mm-v2-av-torch-hip-null-call",  # a Windows crash handler's stack
]


def fold(text: str, width: int) -> tuple[str, list[int]]:
    """``fold -w width``: each line cut every ``width`` characters; and the wrapped line number of each line."""
    out: list[str] = []
    numbers = []
    for line in text.split("\n"):
        numbers.append(len(out) + 1)
        out.extend(line[i:i + width] for i in range(0, max(len(line), 1), width))
    return "\n".join(out), numbers


def words(text: str, width: int) -> tuple[str, list[int]]:
    """A mail editor's wrap: at the last space that fits, a longer word left whole."""
    out: list[str] = []
    numbers = []
    for line in text.split("\n"):
        numbers.append(len(out) + 1)
        out.extend(textwrap.wrap(line, width, break_long_words=False, break_on_hyphens=False) or [""])
    return "\n".join(out), numbers


STYLES = {"fold": fold, "words": words}


def _copy(case: Path, tmp: Path, style: str, width: int) -> tuple[Path, dict[str, list[int]]]:
    out = tmp / f"{case.name}-{style}{width}"
    out.mkdir()
    numbers = {}
    for path in case.iterdir():
        if path.name == "label.yaml" or not path.is_file():
            continue
        text, numbers[path.name] = STYLES[style](path.read_text(encoding="utf-8"), width)
        (out / path.name).write_text(text, encoding="utf-8")
    return out, numbers


def _artifact(text: str) -> Artifact:
    return Artifact(name="paste.txt", text=text, size=len(text))


@pytest.mark.parametrize(("name", "width"), [(name, width) for name in CASES for width in (72, 80, 100)
                                              if (name, width) != (CASES[0], 100)])  # at 100 it is cut once: too few
def test_a_case_cut_by_a_terminal_reads_as_bare(name: str, width: int, tmp_path: Path) -> None:
    bare = triage([str(REAL / name)])
    folder, numbers = _copy(REAL / name, tmp_path, "fold", width)
    wrapped = triage([str(folder)])
    assert bare.top.klass != "unknown"
    assert (wrapped.top.klass, wrapped.top.id) == (bare.top.klass, bare.top.id)
    given = {p.name: p.read_text(encoding="utf-8").split("\n") for p in folder.iterdir()}
    for shown, plain in zip(wrapped.top.evidence, bare.top.evidence):
        # the record's first line as the user sent it, and its text is every line of it as sent
        assert shown.line == numbers[plain.artifact][plain.line - 1]
        sent = given[shown.artifact][shown.line - 1:shown.line - 1 + len(shown.text.split("\n"))]
        assert shown.text == "\n".join(sent).strip()
        assert "".join(shown.text.split("\n")) == plain.text


# Real design cases of one or two lines: a terminal cuts their long line once.
ONCE_CASES = [
    "llama-cpp-25807-libhipblas-so3-not-found-rocm-7-14-core-dir",  # the loader's error, one line
    "hipblaslt-856-wsl-could-not-load-tensilelibrary-segfault",  # a library's error and the shell's segfault
    "dsnote-107-vega8-apu-rocblas-no-tensile-library-flatpak",  # rocBLAS's error, cut after a capital: "TensileL|ibrary"
]


@pytest.mark.parametrize("name", ONCE_CASES)
def test_a_short_case_cut_once_by_a_terminal_reads_as_bare(name: str, tmp_path: Path) -> None:
    bare = triage([str(REAL / name)])
    folder, _ = _copy(REAL / name, tmp_path, "fold", 80)  # mid-word (at 100 the first is cut at a space: not taken)
    wrapped = triage([str(folder)])
    assert bare.top.klass != "unknown"
    assert (wrapped.top.klass, wrapped.top.id) == (bare.top.klass, bare.top.id)


# Real design cases that lose their class when word-wrapped at 80 columns.
WORD_CASES = [
    "miopen-47-memory-not-available-to-allocate-buffer-tf-autotune",  # a TensorFlow log
    "sdnext-913-segfault-libamdhip64-failed-pin-bo",  # a HIP runtime log and the kernel's segfault line
    "bazzite-5729-rx7900xtx-gfx-ring-timeout-mode1-reset-image-regression",  # a journal of amdgpu's lines
]


@pytest.mark.parametrize("name", WORD_CASES)
def test_a_case_wrapped_by_a_mail_editor_reads_as_bare(name: str, tmp_path: Path) -> None:
    bare = triage([str(REAL / name)])
    folder, numbers = _copy(REAL / name, tmp_path, "words", 80)
    wrapped = triage([str(folder)])
    assert (wrapped.top.klass, wrapped.top.id) == (bare.top.klass, bare.top.id)
    for shown, plain in zip(wrapped.top.evidence, bare.top.evidence):
        assert shown.line == numbers[plain.artifact][plain.line - 1]
        assert " ".join(shown.text.split()) == " ".join(plain.text.split())


@pytest.mark.parametrize("seed", SEEDS)
def test_seed_reports_are_not_wrapped_and_read_so(seed: str) -> None:
    """A whole issue as users write it: prose, lists, logs of every width. Nothing in it is joined."""
    text = shared("seeds", seed).read_text(encoding="utf-8")
    assert detect(_artifact(text).lines) is None
    assert rejoin(_artifact(text)) is None


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("style", sorted(STYLES))
def test_seed_reports_wrapped_keep_their_diagnosis(seed: str, style: str, tmp_path: Path) -> None:
    text = shared("seeds", seed).read_text(encoding="utf-8")
    (tmp_path / "bare.txt").write_text(text, encoding="utf-8")
    (tmp_path / "wrapped.txt").write_text(STYLES[style](text, 80)[0], encoding="utf-8")
    bare, wrapped = triage([str(tmp_path / "bare.txt")]), triage([str(tmp_path / "wrapped.txt")])
    assert (wrapped.top.klass, wrapped.top.id) == (bare.top.klass, bare.top.id)


def test_the_case_keeps_the_users_line_numbers() -> None:
    # One record of a real runtime log (the seed case 000's hip.log), cut by a terminal 80 columns wide.
    record = (":1:devprogram.cpp   :1390: 2367424406 us: [pid:4242 tid:0x7f36c2bff640] error: cannot find ROCm device "
              "library; provide its path with --rocm-path or --rocm-device-lib-path")
    blit = ":1:rocdevice.cpp    :730 : 2367424501 us: [pid:4242 tid:0x7f] Couldn't create blit kernels!"
    text = "\n".join([":3:hip_context.cpp  :62  :  HIP Version: 7.2.53210.41ce572d55, Direct Dispatch:",
                      record[:80], record[80:160], record[160:], blit[:80], blit[80:],
                      "Segmentation fault (core dumped)"]) + "\n"
    case = parse([_artifact(text)])
    plain = case.artifacts[0]
    assert plain.lines[1] == record and plain.lines[2:4] == ["", ""]  # the record on its first line, nothing lost
    assert plain.lines[4].endswith("Couldn't create blit kernels!") and plain.lines[5] == ""
    assert plain.given[1] == "\n".join([record[:80], record[80:160], record[160:]])
    assert [(e.where.line, e.level) for e in case.events] == [(1, 3), (2, 1), (5, 1)]
    assert case.kind_of(case.events[1].where) is not None and case.kind_of(case.events[1].where.__class__("paste.txt", 3)) is None
    assert read_past_wrappers([_artifact(text)])[0].lines == plain.lines


def test_a_gdb_frame_cut_in_three_is_one_frame() -> None:
    # Frames of a real backtrace (design case hip-2119), each longer than 80 columns.
    frames = ["#0  0x00007ffff5b9e2a8 in ihipStreamCallback (stream=0x0, status=hipSuccess, userData=0x6020000000f0) "
              "at /src/HIP/rocclr/hip_stream.cpp:412",
              "#1  0x00007ffff5c01b3e in amd::Command::notifyCmdQueue (this=0x7fffe8003c40, cpuWait=false) at "
              "/src/ROCclr/platform/command.cpp:374",
              "#2  0x00007ffff5c0a5f2 in amd::HostQueue::loop (this=0x555555f0a230, virtualDevice=0x555555f0d0c0) at "
              "/src/ROCclr/platform/commandqueue.cpp:130"]
    text = "\n".join(["Thread 3 \"app\" received signal SIGSEGV, Segmentation fault.", *frames]) + "\n"
    case = parse([_artifact(fold(text, 72)[0])])
    stacks = [s for s in case.stacks if s.frames]
    assert len(stacks) == 1
    assert [f.symbol for f in stacks[0].frames] == ["ihipStreamCallback", "amd::Command::notifyCmdQueue",
                                                    "amd::HostQueue::loop"]
    assert [f.where.line for f in stacks[0].frames] == [2, 4, 6]  # each frame where its first piece is


def test_a_python_error_wrapped_at_spaces_is_one_line() -> None:
    # A real PyTorch traceback's form (design cases of the invalid-device-function class): paths longer than the width.
    lines = ["Traceback (most recent call last):",
             '  File "/home/user/stable-diffusion-webui/venv/lib/python3.10/site-packages/torch/nn/modules/module.py", '
             "line 1501, in _call_impl",
             "    return forward_call(*args, **kwargs)",
             '  File "/home/user/stable-diffusion-webui/repositories/k-diffusion/k_diffusion/sampling.py", line 145, '
             "in sample_euler_ancestral",
             "    denoised = model(x, sigmas[i] * s_in, **extra_args)",
             "RuntimeError: HIP error: invalid device function",
             "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below might "
             "be incorrect.",
             "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
             "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions."]
    wrapped, numbers = words("\n".join(lines) + "\n", 72)
    plain = read_past_wrappers([_artifact(wrapped)])[0]
    assert [plain.lines[n - 1] for n in numbers[:-1]] == lines


def test_textwrap_leaves_a_long_word_whole_and_it_is_joined_with_its_record() -> None:
    # A real rocBLAS failure (design case rocm-legacy-2914's form) with its library path longer than the width.
    lines = ["rocBLAS error: Cannot read /opt/rocm-6.1.0/lib/python3.10/site-packages/torch/lib/rocblas/library/"
             "TensileLibrary.dat: Illegal seek for GPU arch : gfx1102",
             "List of available TensileLibrary Files : \"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1030.dat\" "
             "\"/opt/rocm/lib/rocblas/library/TensileLibrary_lazy_gfx1100.dat\"",
             "rocBLAS warning: hipBlasLT failed, falling back to tensile. This message will be only be displayed once, "
             "unless the ROCBLAS_VERBOSE_HIPBLASLT_ERROR environment variable is set.",
             "Aborted (core dumped)"]
    text = "\n".join(lines) + "\n"
    wrapped, numbers = words(text, 76)
    assert max(map(len, wrapped.split("\n"))) > 76  # the path is left whole
    plain = read_past_wrappers([_artifact(wrapped)])[0]
    assert [plain.lines[n - 1] for n in numbers[:-1]] == lines


# Lines that sit at one width by design and must stay apart: a table padded to its width, a drawn box, one record
# per line near the width, a config file's assignments, a ruler.
NOT_WRAPPED = {
    "rocminfo": "\n".join(["  Workgroup Max Size per Dimension:",
                           "    x                        1024(0x400)                        ",
                           "    y                        1024(0x400)                        ",
                           "    z                        1024(0x400)                        ",
                           "  Max Waves Per CU:        32(0x20)                           ",
                           "  Grid Max Size per Dimension:",
                           "    x                        4294967295(0xffffffff)             ",
                           "    y                        4294967295(0xffffffff)             ",
                           "    z                        4294967295(0xffffffff)             "]),
    "rich-box": "\n".join(["╭───────────────────── Traceback (most recent call last) ──────────────────────╮",
                           "│ /app/modules/devices.py:158 in <module>                                      │",
                           "│   155 │   backend = 'directml'                                               │",
                           "│   156 elif torch.cuda.is_available() and torch.version.cuda:                 │",
                           "│ ❱ 158 elif torch.cuda.is_available() and torch.version.rocm:                 │",
                           "╰──────────────────────────────────────────────────────────────────────────────╯",
                           "AttributeError: module 'torch.version' has no attribute 'rocm'"]),
    "strace": "\n".join(['access("lib/clang/22/lib/amdgcn/bitcode", F_OK) = -1 ENOENT (No such file or directory)',
                         'stat("/lib/clang/22/lib/amdgcn/amdhsa", 0x7ffd53a8c3d0) = -1 ENOENT (No such file or di',
                         'stat("/opt/rocm/lib/llvm/amdgcn/bitcode", {st_mode=S_IFDIR|0755, st_size=4096, ...}) = 0',
                         'openat(AT_FDCWD, "/opt/rocm/lib/llvm/amdgcn/bitcode", O_RDONLY|O_DIRECTORY) = 5']),
    "dmesg": "\n".join(["[  950.818171] amdgpu 0000:c5:00.0: amdgpu: failed to remove hardware queue from MES,",
                        "[  950.818174] amdgpu 0000:c5:00.0: amdgpu: MES might be in unrecoverable state, issue a",
                        "[  950.818218] amdgpu 0000:c5:00.0: amdgpu: remove_all_kfd_queues_mes: Failed to remove q",
                        "[  950.818301] amdgpu 0000:c5:00.0: amdgpu: GPU reset begin!"]),
    "config": "\n".join(["# we expect to overfit on this small dataset, so only save when val improves",
                         "always_save_checkpoint = False",
                         "learning_rate = 1e-3 # with baby networks can afford to go a bit higher",
                         "max_iters = 5000",
                         "beta2 = 0.99 # make a bit bigger because number of tokens per iter is small",
                         "warmup_iters = 100 # not super necessary potentially",
                         "eval_interval = 250 # keep frequent because we'll overfit on this tiny set",
                         "eval_iters = 200"]),
    # rocminfo | grep Name under WSL: three fields whose values end at one column.
    "rocminfo-grep": "\n".join(["$ rocminfo | grep Name",
                                 "  Name:                    AMD Ryzen 5 5500",
                                 "  Marketing Name:          AMD Ryzen 5 5500",
                                 "  Vendor Name:             CPU"]),
    # a fault line that happens to end at 80 columns, and the runtime's next line
    "fault-then-reason": "\n".join(["Memory access fault by GPU node-1 (Agent handle: 0x55d5dc4ab9c0) on address 0x10",
                                     "Reason: Page not present or supervisor privilege."]),
    "rulers": "\n".join(["=" * 80, "rocminfo", "=" * 80, "ROCk module is loaded", "=" * 80, "HSA Agents", "=" * 80]),
    # tab-separated rows longer than the header (the only line with spaces): no long word left whole by a word wrap
    # (read so, the whole table was one record of 2,878 lines and took a second to read)
    "tab-separated": "\n".join(["# file\tthe failure class the output shows\twhere the output was posted",
                                 "gdb-hiprtc-comgr-null-call.txt\truntime-mismatch\thttps://github.com/ROCm/rocFFT/issues/422",
                                 "rocclr-assertion-os-posix.txt\truntime-crash\thttps://github.com/ROCm/clr/issues/158",
                                 "rocm-smi-library-assertion.txt\truntime-crash\thttps://github.com/ROCm/rocm_smi_lib/issues/182",
                                 "debug-agent-memory-fault.txt\tgpu-memory-fault\thttps://github.com/ROCm/rocr/issues/9"]),
}


@pytest.mark.parametrize("name", sorted(NOT_WRAPPED))
def test_lines_at_one_width_by_design_are_not_joined(name: str) -> None:
    text = NOT_WRAPPED[name] + "\n"
    assert rejoin(_artifact(text)) is None
    assert read_past_wrappers([_artifact(text)])[0].lines == text.split("\n")[:-1]


@pytest.mark.parametrize("seed_case", sorted(p.name for p in CORPUS.glob("seed-*")))
def test_seed_cases_files_are_not_joined(seed_case: str) -> None:
    for path in (CORPUS / seed_case).iterdir():
        if path.suffix in (".txt", ".log"):
            assert rejoin(_artifact(path.read_text(encoding="utf-8"))) is None, path.name
