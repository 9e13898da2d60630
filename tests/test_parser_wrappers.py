"""Log collectors' line prefixes (journald, docker compose, kubectl, CI clocks, Python logging, a
quoted reply, a failed Nix build's log lines, Ray/vLLM worker tags, srun and mpirun labels, pm2, container log files), a viewer's or grep's line numbers and a page's HTML entities are read past: a real case wrapped in any of them gets the class, signature and
evidence lines it gets bare. Kernel lines, tables and prompts keep their text."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import CORPUS
from triage.corpus.pastes import (
    PREFIXES,
    Transform,
    chat_typography,
    html_source,
    json_lines,
    prefixed,
)
from triage.model import Artifact
from triage.parsers import parse
from triage.parsers.wrappers import unwrap
from triage.pipeline import triage

REAL = CORPUS / "realworld"
# Real design cases whose records a parser or an anchored pattern reads from the line's first character:
# a gdb backtrace, the HIP runtime's own log, a Windows stack, an `ls -l` row, a Python traceback.
CASES = [
    "hip-2119-rocm351-segfault-ihipstreamcallback-default-stream",
    "mivisionx-1437-openvx-hip-missing-co-gfx942",
    "rocm-pytorch-3132-windows-scaled-mm-v2-av-torch-hip-null-call",
    "roct-36-kfd-wrong-permissions-udev",
    "flash-attention-1652-sharedobjectinit-torch-rocm-mismatch",
]
WRAPPERS = PREFIXES


def _altered(case: Path, tmp: Path, transform: Transform) -> Path:
    """A copy of the case's folder with each input file's text passed through ``transform``."""
    out = tmp / case.name
    out.mkdir()
    for path in case.iterdir():
        if path.name != "label.yaml" and path.is_file():
            (out / path.name).write_text(transform(path.read_text(encoding="utf-8")), encoding="utf-8")
    return out


@pytest.mark.parametrize("wrapper", sorted(WRAPPERS))
@pytest.mark.parametrize("name", CASES)
def test_wrapped_case_reads_as_bare(name: str, wrapper: str, tmp_path: Path) -> None:
    if wrapper == "editor-numbers" and sum(len(p.read_text().split()) > 0 for p in (REAL / name).glob("*.txt")
                                           for _ in p.read_text().splitlines()[:3]) < 3:
        pytest.skip("fewer than three lines in an editor's numbering are not told from a table's first column")
    bare = triage([str(REAL / name)])
    wrapped = triage([str(_altered(REAL / name, tmp_path, prefixed(WRAPPERS[wrapper])))])
    assert bare.top.klass != "unknown"
    assert (wrapped.top.klass, wrapped.top.id) == (bare.top.klass, bare.top.id)
    assert [e.line for e in wrapped.top.evidence] == [e.line for e in bare.top.evidence]
    for shown, plain in zip(wrapped.top.evidence, bare.top.evidence):  # quoted as sent, prefix and all
        assert shown.text.endswith(plain.text) and len(shown.text) > len(plain.text)


def _artifact(text: str) -> Artifact:
    return Artifact(name="paste.txt", text=text, size=len(text))


def test_real_journald_lines_lose_only_the_prefix() -> None:
    # Lines from a real ollama journal (corpus/realworld/ollama-9455-...).
    text = ('Mar 02 06:28:39 ubuntu ollama[1295]: time=2025-03-02T06:28:39.656Z level=ERROR source=server.go:421 '
            'msg="llama runner terminated" error="signal: aborted (core dumped)"\n'
            'Mar 02 06:28:39 ubuntu ollama[1295]: "/usr/local/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1030.dat"\n')
    plain, journal = unwrap(_artifact(text))
    assert journal == 0
    assert plain.lines == ['time=2025-03-02T06:28:39.656Z level=ERROR source=server.go:421 '
                           'msg="llama runner terminated" error="signal: aborted (core dumped)"',
                           '"/usr/local/lib/ollama/rocm/rocblas/library/TensileLibrary_lazy_gfx1030.dat"']


def test_kernel_lines_tables_and_prompts_keep_their_text() -> None:
    text = ("Mar 03 12:00:01 myhost kernel: amdgpu 0000:03:00.0: amdgpu: [gfxhub] page fault (src_id:0 ring:24 vmid:8 pasid:32770)\n"
            "2024-05-01T10:11:12+0000 myhost kernel: amdgpu: GPU reset begin!\n"
            "GPU  | Temp | Power\n"
            ">>> import torch\n"
            "2024-05-01 10:11:12 INFO loader: model loaded\n")
    plain, journal = unwrap(_artifact(text))
    assert journal == 0  # a kernel line in journald's form: left whole, and still Linux
    assert plain.lines[:4] == text.split("\n")[:4]
    assert plain.lines[4] == "INFO loader: model loaded"  # a clock alone is cut, the message's own words are not


def test_nothing_to_cut_gives_the_same_artifact() -> None:
    artifact = _artifact("RuntimeError: HIP error: invalid device function\n")
    assert unwrap(artifact) == (artifact, None)


def test_line_numbers_and_the_clock_survive() -> None:
    text = ("2024-05-01T10:11:12.1234567Z starting\n\n"
            "2024-05-01T10:11:13.1234567Z :1:hip_code_object.cpp      :616 : 0 us: [pid:1 tid:0x7f] hipErrorNoBinaryForGpu: "
            "Unable to find code object for all current devices!\n")
    case = parse([_artifact(text)])
    assert len(case.artifacts[0].lines) == 3
    assert case.artifacts[0].lines[2].startswith(":1:hip_code_object.cpp")
    assert case.events and case.events[0].where.line == 3  # the runtime's own record, read under its clock
    assert case.fact("date").value == "2024-05-01"  # read from the prefix, which the timestamps parser still sees


def test_a_journald_prefix_says_linux() -> None:
    case = parse([_artifact('Mar 02 06:28:39 ubuntu ollama[1295]: time=2025-03-02T06:28:39.656Z level=ERROR '
                            'msg="llama runner terminated" error="signal: aborted (core dumped)"\n')])
    assert case.fact("os").value == "linux"


@pytest.mark.parametrize("name", CASES)
def test_a_case_copied_from_html_source_reads_as_bare(name: str, tmp_path: Path) -> None:
    out = _altered(REAL / name, tmp_path, html_source)
    bare, html = triage([str(REAL / name)]), triage([str(out)])
    assert (html.top.klass, html.top.id) == (bare.top.klass, bare.top.id)
    assert [e.line for e in html.top.evidence] == [e.line for e in bare.top.evidence]


@pytest.mark.parametrize("field", ["log", "MESSAGE"])
@pytest.mark.parametrize("name", CASES)
def test_a_case_in_a_json_log_file_reads_as_bare(name: str, field: str, tmp_path: Path) -> None:
    """Docker's json-file driver and `journalctl -o json` write one object a line, the program's line in a field."""
    out = _altered(REAL / name, tmp_path, json_lines(field))
    bare, logged = triage([str(REAL / name)]), triage([str(out)])
    assert (logged.top.klass, logged.top.id) == (bare.top.klass, bare.top.id)
    assert [e.line for e in logged.top.evidence] == [e.line for e in bare.top.evidence]


def test_json_that_is_not_a_log_of_lines_is_kept() -> None:
    text = '{"gpu": "gfx1100", "rocm": "6.2"}\n{"gpu": "gfx1030"}\n'
    assert unwrap(_artifact(text))[0].lines == text.splitlines()


def test_labels_that_do_not_repeat_are_not_taken_for_srun_tasks() -> None:
    listing = "4: gfx1100 (Radeon RX 7900 XTX)\n0: gfx1030 (Radeon RX 6800)\n2: gfx90c (Radeon Graphics)\n"
    assert unwrap(_artifact(listing))[0].lines == listing.splitlines()


def test_a_node_label_in_brackets_before_each_line_is_cut() -> None:
    """GASNet's and Legion's "[42] " before each line of a node's gdb backtrace; labels that count up are kept."""
    text = ("[42] #5  0x00007fffe16bc52a in gasneti_defaultSignalHandler () from /opt/legion/lib/librealm.so.1\n"
            "[42] #6  <signal handler called>\n"
            "[42] #7  0x00007fffdf098c0e in ?? () from /opt/rocm-5.1.0/lib/libamdhip64.so.5\n")
    assert unwrap(_artifact(text))[0].lines[2] == "#7  0x00007fffdf098c0e in ?? () from /opt/rocm-5.1.0/lib/libamdhip64.so.5"
    refs = "[1] ROCm install guide\n[2] HIP programming guide\n[3] rocminfo output\n"
    assert unwrap(_artifact(refs))[0].lines == refs.splitlines()


def test_numbers_that_do_not_count_the_lines_are_kept() -> None:
    table = "  3  gfx1100  24GB\n  1  gfx1030  16GB\n  2  gfx90a  64GB\n"
    assert unwrap(_artifact(table))[0].lines == table.splitlines()
    two = "1 | hipErrorNoBinaryForGpu\n2 | done\n"
    assert unwrap(_artifact(two))[0].lines == two.splitlines()  # two lines in an editor's form are too few to say


def test_grep_context_lines_and_an_empty_matched_line_lose_their_numbers() -> None:
    text = "41-HIP version: 6.2\n42:hipErrorNoBinaryForGpu: Unable to find code object\n43:\n44-done\n"
    assert unwrap(_artifact(text))[0].lines[:4] == [
        "HIP version: 6.2", "hipErrorNoBinaryForGpu: Unable to find code object", "", "done"]


@pytest.mark.parametrize("name", CASES)
def test_a_case_through_a_chat_program_reads_as_bare(name: str, tmp_path: Path) -> None:
    """No-break spaces for spaces and curly quotes for straight ones, as chat and mail programs send them."""
    out = _altered(REAL / name, tmp_path, chat_typography)
    bare, chat = triage([str(REAL / name)]), triage([str(out)])
    assert (chat.top.klass, chat.top.id) == (bare.top.klass, bare.top.id)
    assert [e.line for e in chat.top.evidence] == [e.line for e in bare.top.evidence]


def test_an_html_no_break_space_is_made_plain_too() -> None:
    text = ("&lt;frozen runpy&gt;:128: RuntimeWarning<br />\n"
            "hipErrorNoBinaryForGpu:&nbsp;Unable to find code object for all current devices!<br />\n")
    assert unwrap(_artifact(text))[0].lines == [
        "<frozen runpy>:128: RuntimeWarning", "hipErrorNoBinaryForGpu: Unable to find code object for all current devices!"]


def test_a_task_label_under_a_ci_clock_is_cut_too(tmp_path: Path) -> None:
    """A CTest run in a GitHub Actions log: the runner's clock, then CTest's test number, before every line. The real
    lines of a MIOpen test that aborted in comgr (ROCm/rocm-libraries#3732) read the same under both prefixes."""
    bare = Path(__file__).parent / "fixtures" / "failure-wordings" / "Y-11-miopen-gtest-windows-comgr-abort-80000003.txt"
    wrapped = tmp_path / "ci.log"
    wrapped.write_text("".join(f"2026-06-18T11:46:02.6593437Z 12: {line}\n" for line in bare.read_text().splitlines()))
    expected, got = triage([str(bare)]), triage([str(wrapped)])
    assert got.case.fault is not None and got.case.fault.module == expected.case.fault.module == "amd_comgr0702.dll"
    assert [d.id for d in got.diagnoses][:1] == [d.id for d in expected.diagnoses][:1] == ["rocm-library-crash-fallback"]


@pytest.mark.parametrize("text", [
    "Jan 12 10:11:12 host ollama[881]: hipErrorNoBinaryForGpu\nplain line\n",  # the prefix on the first line only
    "plain line\nJan 12 10:11:12 host ollama[881]: hipErrorNoBinaryForGpu\n",  # on a later line
])
def test_a_prefix_is_found_on_the_first_line_as_on_any_other(text: str) -> None:
    unwrapped, _ = unwrap(_artifact(text))
    assert "hipErrorNoBinaryForGpu" in unwrapped.lines and "plain line" in unwrapped.lines


def test_pytest_live_log_prefix_is_cut() -> None:
    # A test's captured command output through pytest's live log (TheRock's sanity tests, ROCm/TheRock#3312's form).
    text = ("ERROR    test_rocm_sanity:test_rocm_sanity.py:48 ==714==ERROR: AddressSanitizer: heap-use-after-free on "
            "address 0x7bb39bde4790 at pc 0x7f439d3faf91 bp 0x7ffc07a72230 sp 0x7ffc07a72228\n"
            "ERROR    test_rocm_sanity:test_rocm_sanity.py:48     #0 0x7f439d3faf90  "
            "(/__w/TheRock/TheRock/build/bin/../lib/libhsa-runtime64.so.1+0x1faf90)\n"
            "INFO     test_rocm_sanity:test_rocm_sanity.py:33 ++ Run [/build/bin]$ ./hipcc_check\n")
    lines = unwrap(_artifact(text))[0].lines
    assert lines[0].startswith("==714==ERROR: AddressSanitizer: heap-use-after-free")
    assert lines[1].startswith("    #0 0x7f439d3faf90  (/__w/")
    assert lines[2] == "++ Run [/build/bin]$ ./hipcc_check"
