"""A log pasted as one escaped string (a JSON field, a Python exception's repr of captured output) is read as
the lines it holds; a line that merely has a ``\\n`` in a C string, a path or a regex keeps its text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.corpus.pastes import TRANSFORMS, Transform, json_escaped, json_lines, python_repr
from triage.ingest.escaped import open_escaped, open_line
from triage.ingest.reader import read_inputs
from triage.pipeline import triage

REAL = CORPUS / "realworld"
# A real exception's repr as a program printed it on one line (a public repository's shell.nix quotes it).
ACCELERATOR_ERROR = (
    "AcceleratorError('HIP error: invalid device function\\nHIP kernel errors might be asynchronously reported at "
    "some other API call, so the stacktrace below might be incorrect.\\nFor debugging consider passing "
    "AMD_SERIALIZE_KERNEL=3\\nCompile with `TORCH_USE_HIP_DSA` to enable device-side assertions.\\n')"
)
# Design cases whose records a parser reads from the line's first character (a gdb backtrace, the HIP runtime's
# log, a Windows crash report, a Julia stack, a Windows call-site stack): read as one line, none is named.
CASES = [
    "hip-2119-rocm351-segfault-ihipstreamcallback-default-stream",
    "mivisionx-1437-openvx-hip-missing-co-gfx942",
    "rocm-pytorch-3132-windows-scaled-mm-v2-av-torch-hip-null-call",
    "amdgpu-jl-216-free-invalid-pointer-hipstreamsynchronize-steamdeck",
    "clr-18-znver4-hip-nontemporal-memcpy-segfault-fixed-rocm62",
]


def test_a_real_exception_repr_is_read_as_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "error.txt"
    path.write_text(ACCELERATOR_ERROR + "\n", encoding="utf-8")
    artifacts, warnings = read_inputs([str(path)])
    assert artifacts[0].lines == [
        "AcceleratorError(",
        "HIP error: invalid device function",
        "HIP kernel errors might be asynchronously reported at some other API call, so the stacktrace below "
        "might be incorrect.",
        "For debugging consider passing AMD_SERIALIZE_KERNEL=3",
        "Compile with `TORCH_USE_HIP_DSA` to enable device-side assertions.",
    ]
    assert any("line 1 holds 5 lines" in w for w in warnings)
    result = triage([str(path)])
    assert result.top.id == "pytorch-hip-invalid-device-function"
    assert (2, "HIP error: invalid device function") in {(e.line, e.text) for e in result.top.evidence}


@pytest.mark.parametrize("transform", ["json-escaped", "python-repr"])
@pytest.mark.parametrize("name", CASES)
def test_a_case_pasted_as_one_escaped_string_reads_as_bare(name: str, transform: str, tmp_path: Path) -> None:
    for path in (REAL / name).iterdir():
        if path.name != "label.yaml" and path.is_file():
            (tmp_path / path.name).write_text(TRANSFORMS[transform](path.read_text(encoding="utf-8")), encoding="utf-8")
    bare = triage([str(REAL / name)])
    blob = triage([str(tmp_path)])
    assert bare.top.klass != "unknown"
    assert (blob.top.klass, blob.top.id) == (bare.top.klass, bare.top.id)
    assert [e.text for e in blob.top.evidence] == [e.text for e in bare.top.evidence]


def test_json_that_carries_a_python_repr_is_opened_through_both() -> None:
    log = (REAL / CASES[0] / "input.txt").read_text(encoding="utf-8")
    opened = open_line(json_escaped(python_repr(log)))
    assert opened is not None
    body = [line for line in log.split("\n") if line.strip()]
    assert [line for line in opened if line in body] == body


@pytest.mark.parametrize("transform", [python_repr, json_escaped])
def test_crlf_ends_backslashes_and_utf8_come_back_as_printed(transform: Transform) -> None:
    # Windows console output captured by a program: CRLF ends, a path's backslashes (one before a slash), a Russian
    # pause prompt (UTF-8 bytes in a bytes repr, \\u escapes in JSON).
    lines = (REAL / "rocmlibs-gfx1103-12-rocblas-lazy-load-windows-zluda" / "input.txt").read_text(
        encoding="utf-8").rstrip("\n").split("\n")
    assert "\\/rocblas" in lines[0] and any(ord(c) > 127 for c in lines[-1])
    opened = open_line(transform("\r\n".join(lines) + "\r\n"))
    assert opened is not None and opened[1:len(lines) + 1] == lines


@pytest.mark.parametrize("line", [
    # gdb's frame of glibc's abort message: a C format string with one \n (llvm-57536's backtrace)
    '#2  0x00007ffff6c1d26e in __libc_message (action=action@entry=do_abort, fmt=fmt@entry=0x7ffff6d47298 "%s\\n")',
    # Windows paths whose folders start with n, run together as a chat paste that lost its line breaks
    "#81 0x00007ffb1042af28 (C:\\WINDOWS\\SYSTEM32\\ntdll.dll+0x5af28) The procedure entry point hipDeviceSetLimit "
    "could not be found in the dynamic link library D:\\Apps\\ZLUDA\\nvcuda.dll The procedure entry point "
    "hipGraphCreate could not be located in the dynamic link library ...\\zluda\\nvcuda.dll",
    # a regex with newlines in a quoted string: \s and \d are no escapes of a printed string
    'pattern = "^(\\s*)\\n#(\\d+)\\n(\\S+)\\n"',
    # a source line: the literal is a program's output call, not its output
    'printf("device %d\\n  name: %s\\n  arch: %s\\n", i, props.name, props.gcnArchName);',
])
def test_lines_with_a_newline_in_a_c_string_a_path_or_a_regex_keep_their_text(line: str) -> None:
    text = line + "\nnext line\n"
    assert open_escaped(text) == (text, [])


def test_a_log_of_one_json_object_a_line_is_left_to_the_wrappers() -> None:
    # Docker's json-file log: a record of several lines is one object; the wrappers read it on its line.
    log = (REAL / CASES[0] / "input.txt").read_text(encoding="utf-8").split("\n")
    record = json.dumps({"log": "\n".join(log[2:8]) + "\n", "stream": "stderr", "time": "2024-05-01T10:11:12Z"})
    text = json_lines("log")("\n".join(log[:2])) + "\n" + record + "\n"
    assert open_line(record) is not None  # alone, the record would be opened
    assert open_escaped(text) == (text, [])


# systemd-coredump's journal message as rsyslog wrote it to a log file, #012 for each newline (khoj-ai/khoj#455,
# the two lines GitHub wrapped it into joined again).
RSYSLOG = (
    "Aug 21 14:48:38 sumomo systemd-coredump[20753]: Process 20719 (Khoj) of user 1000 dumped core.#012#012"
    "Found module /tmp/_MEI6CwCPv/PySide6/QtPrintSupport.abi3.so without build-id.#012"
    "Found module /tmp/_MEI6CwCPv/PySide6/QtWebEngineCore.abi3.so without build-id.#012"
    "Found module /tmp/_MEI6CwCPv/PySide6/QtNetwork.abi3.so without build-id.#012"
    "Found module /tmp/_MEI6CwCPv/libxshmfence.so.1 with build-id: 2f059343453436272930d81557a2f5d7db5fb4cb#012"
    "Found module /tmp/_MEI6CwCPv/libk5crypto.so.3 with build-id: f77b9cc59d0814c9cc6e47c83c9995a102702d8b"
)


def test_an_rsyslog_message_is_read_as_its_lines(tmp_path: Path) -> None:
    path = tmp_path / "messages"
    path.write_text(RSYSLOG + "\n", encoding="utf-8")
    artifacts, warnings = read_inputs([str(path)])
    assert artifacts[0].lines[:3] == [
        "Aug 21 14:48:38 sumomo systemd-coredump[20753]: Process 20719 (Khoj) of user 1000 dumped core.", "",
        "Found module /tmp/_MEI6CwCPv/PySide6/QtPrintSupport.abi3.so without build-id."]
    assert len(artifacts[0].lines) == 7 and any("line 1 holds 7 lines" in w for w in warnings)
    assert artifacts[0].lines[-1] == ("Found module /tmp/_MEI6CwCPv/libk5crypto.so.3 with build-id: "
                                      "f77b9cc59d0814c9cc6e47c83c9995a102702d8b")

