"""The shared line prefilter: which lines a parser reads must be exactly the lines its patterns could act on."""

from __future__ import annotations

import pickle

from tests.conftest import artifact
from triage.model import Diagnosis
from triage.parsers.lines import HEAD_LINES, Needles, Walk


def test_needles_give_each_line_once_in_order() -> None:
    """Exact needles give exactly their lines; others may give more (a literal's prefilter), never fewer."""
    patterns = (r"#\d", "^Thread ", r"(?i:exception)")
    lines = ["#0 a", "plain", "x #1 b #2", "", "#3", "Thread 1 (x)", "the Thread 2", "EXCEPTION CODE", "exceptıon"]
    text = "\n".join(lines)
    assert Needles(*patterns, exact=True).lines(artifact(text)) == [0, 2, 4, 5, 7, 8]
    loose = Needles(*patterns).lines(artifact(text))
    assert loose == sorted(set(loose)) and {0, 2, 4, 5, 7, 8} <= set(loose) and 1 not in loose


def test_every_parser_reads_the_lines_of_the_artifact_it_is_given() -> None:
    """Found once per artifact and kept: a second artifact (or the same text again) is scanned anew."""
    needles = Needles("segfault at")
    first, second = artifact("a\nsegfault at 0\n"), artifact("segfault at 1\nb\nc segfault at 2\n")
    assert needles.lines(first) == [1]
    assert needles.lines(second) == [0, 2]
    assert needles.lines(first) == [1]


def test_walk_reads_the_next_line_when_asked() -> None:
    walk = Walk([1, 5], 8)
    seen = []
    for index in walk:
        seen.append(index)
        if index in (1, 2, 5):
            walk.follow()
    assert seen == [1, 2, 3, 5, 6]


def test_a_pending_diagnosis_fills_its_texts_once_and_pickles() -> None:
    made = []

    def title() -> str:
        made.append("title")
        return "T"

    diagnosis = Diagnosis.pending({"title": title, "root_cause": lambda: "R"}, id="x", klass="k", confidence=0.5)
    assert made == [] and diagnosis.evidence == [] and diagnosis.fix == ""
    assert diagnosis.title == "T" and diagnosis.title == "T" and made == ["title"]
    copy = pickle.loads(pickle.dumps(diagnosis))
    assert copy == diagnosis and copy.root_cause == "R"


def test_a_head_needle_reads_only_a_files_first_lines() -> None:
    needles = Needles(r"\d+\.\d+\.\d+", r"^v\d", head=True)
    lines = ["a 1.2.3", "b", "c 4.5.6 and 7.8.9"] + ["x"] * (HEAD_LINES - 3) + ["d 7.8.9", "v1"]
    assert needles.lines(artifact("\n".join(lines))) == [0, 2]
    assert needles.lines(artifact("v2\nx\n")) == [0]


def test_a_needle_made_after_a_scan_reads_the_same_artifact_anew() -> None:
    text = artifact("alpha\nbeta needle-made-late\n")
    assert Needles("alpha").lines(text) == [0]
    assert Needles("needle-made-late").lines(text) == [1]


def test_status_codes_mark_a_program_line_however_wordy() -> None:
    """absl/XLA/TensorFlow print their errors as a status code and a sentence: machine output, full weight."""
    from triage.parsers.lines import is_prose

    assert not is_prose("Actual status is not OK as the test wants: the result was NOT_FOUND: no ROCM devices found for it")
    assert not is_prose("INTERNAL: the backend could not be initialised for the platform that was asked for")
    assert is_prose("I think the problem is that the driver is not installed for my card at all")


def test_loader_and_bracketed_level_lines_are_a_programs() -> None:
    from triage.parsers.lines import is_prose

    assert not is_prose("[ERROR] the plugin could not be loaded: libhipfile.so.0: cannot open shared object file: No such file")
    assert not is_prose("hiprtcCompileProgram is missing from the HIPRTC shared library that was found on this system.")


def test_windows_cmd_not_recognized_is_the_shells_line() -> None:
    """cmd.exe words a missing program as a sentence; it is the shell's output, full weight."""
    from triage.parsers.lines import is_prose

    assert not is_prose("'C:\\Program' is not recognized as an internal or external command,")
    assert not is_prose("'D:\\rocm\\bin\\clang++' is not recognized as an internal or external command,")
    assert is_prose("I think the command is not recognized as an internal or external command on my machine at all")


def test_the_kernels_lines_are_machine_output_whatever_their_words() -> None:
    """amdgpu words some messages as sentences; under dmesg's clock, journald's "kernel:" or the driver's own
    prefix they are still the kernel's, full weight."""
    from triage.parsers.lines import is_prose

    sentence = "The cp might be in an unrecoverable state due to an unsuccessful queues preemption"
    assert is_prose(sentence)
    assert not is_prose(f"Oct 07 12:00:01 myhost kernel: amdgpu: {sentence}")
    assert not is_prose(f"[ 1234.567890] amdgpu 0000:03:00.0: amdgpu: {sentence}")
    assert not is_prose(f"[drm] {sentence}")
    assert is_prose("I think the kernel is the problem because the card resets when I start the game and then hangs")
    assert is_prose("My kernel: 6.8 with the card that resets when I start the game and then it hangs again")
    assert not is_prose(f"2024-10-07T12:00:01.123456+02:00 myhost kernel: amdgpu: {sentence}")
    # Mesa's drivers word the lost context as sentences too, under their own prefix (radeonsi "amdgpu: ", radv's).
    lost = "The CS has been cancelled because the context is lost. This context is guilty of a hard recovery."
    assert not is_prose(f"radv/amdgpu: {lost}")
    assert is_prose(f"I think the {lost}")


def test_julias_framed_log_messages_are_a_programs() -> None:
    from triage.parsers.lines import is_prose

    assert not is_prose("┌ Warning: The device libraries are not available so that the GPU code cannot be compiled for it")
    assert not is_prose("│ Run the build step again if the libraries are installed in a place that is not the default one")


def test_a_long_word_without_a_colon_is_read_in_linear_time() -> None:
    """A line of one long word once took seconds (a label regex tried every split of the word); now the answer
    is immediate, and a real label still marks a record."""
    import regex

    from triage.parsers.lines import _LABEL, is_sentence

    # The old pattern, like the lint's check of signatures, runs out of a generous allowance here (minutes of
    # backtracking on 200 characters); the current one answers at once.
    assert regex.compile(_LABEL.pattern).match("a" * 200 + " b" * 3, timeout=10.0) is None
    assert not is_sentence("GPU: my card is an AMD Radeon RX 6600 and I use it")


def test_what_a_sentence_quotes_weighs_as_a_programs_line(tmp_path) -> None:
    from triage.match.conditions import quoted
    from triage.pipeline import triage

    said = 'I get "RuntimeError: HIP error: invalid device function" when I run the script on my RX 6600 card.'
    start = said.index("HIP error")
    assert quoted(said, start, start + 9)
    ticked = "it prints `hipErrorNoBinaryForGpu` and stops"
    assert quoted(ticked, ticked.index("hip"), ticked.index("` and"))
    assert not quoted('I think the HIP error is mine and "x" is not', 12, 21)
    assert not quoted('a "b" then HIP error then "d"', 11, 20)  # between two quoted words, not inside one
    (tmp_path / "said.txt").write_text(said + "\n")
    (tmp_path / "unquoted.txt").write_text(said.replace('"', "") + "\n")
    assert triage([str(tmp_path / "said.txt")]).top.klass == "no-code-object"
    plain = triage([str(tmp_path / "unquoted.txt")])
    assert plain.top.klass == "unknown"  # the same words told, not quoted, weigh as a person's


def test_a_printed_c_condition_is_a_program_line_not_prose() -> None:
    # clr's guarantee() prints the failed check's source text (ROCm/clr#173's form): code, though worded like a sentence
    from triage.parsers.lines import is_prose
    assert not is_prose('((global_flag & HSA_REGION_GLOBAL_FLAG_COARSE_GRAINED) != 0) && ("Memory Segments that are '
                        'not fine grained has to be coarse grained")')
    # parentheses joined by && in a person's sentence stay prose: only a quoted message after the && marks a check
    assert is_prose("It fails only when (the card is in the box) && (the box is on the shelf) and never otherwise")


def test_nccl_debug_lines_are_a_programs_however_wordy() -> None:
    """NCCL's and RCCL's debug lines carry a host:pid:tid prefix and their message is often a quoted sentence."""
    from triage.parsers.lines import is_prose

    assert not is_prose("node7:1234:1290 [1] enqueue.cc:2119 NCCL WARN HIP failure 'the operation cannot be performed in "
                        "the present state'")
    assert not is_prose("gpu-node:27907:27907 [0] NCCL INFO Call to connect returned Connection refused, retrying")
    # a person's sentence that names the level stays prose
    assert is_prose("I see NCCL WARN lines all the time when my job hangs in the middle of the run")


def test_the_head_of_a_dkms_build_log_is_a_programs_line() -> None:
    """DKMS opens each build's make.log with a line of words ("... make.log for amdgpu/X for kernel Y"); it counts
    whole as evidence of the build, in both dkms 2's and dkms 3's form."""
    from triage.parsers.lines import is_prose

    assert not is_prose("DKMS (dkms-3.0.11) make.log for amdgpu/6.10.5-2119913.24.04 for kernel 6.14.0-15-generic (x86_64)")
    assert not is_prose("DKMS make.log for amdgpu-5.11.32.21.40-1292797.20.04 for kernel 5.15.0-41-generic (x86_64)")
    # a person's sentence about the log stays prose
    assert is_prose("The DKMS make.log for the amdgpu module is too long for me to paste here so I attached it")
