"""CMake's error messages, as users posted them, are read as a program's output: every line of a message (its
sentences wrapped two spaces deeper than its header, bare or as pip shows a build's output) is claimed, the call stack after it and the lines around it are not, and evidence
in a message counts in full."""

from __future__ import annotations

from pathlib import Path

from triage.match import load
from triage.model import Artifact, Where
from triage.parsers import parse
from triage.pipeline import analyze
from triage.resources import data_dir

FIXTURES = Path(__file__).parent / "fixtures" / "failure-wordings"
# A find_package failure under the torchaudio build, its message in two paragraphs and a file list, then CMake's stack.
FIND_PACKAGE = "ES-L1-lookalike-torchaudio-cmake-rocm56-rocrand-config-not-found.txt"
# A pip build of kerneldb whose CMake output pip shows six spaces in, the header too.
PIP_INDENTED = "GP-01-kerneldb-rocm720-pip-build-find-package-hip-config-missing.txt"
# A failed Nix build of magma for CUDA: CMake cannot find nvcc, the message under the builder's "       > " prefix.
NIX_CUDA = "IF-08-nixos-magma-cuda-build-could-not-find-nvcc.txt"


def _claims(name: str) -> tuple[list[str], dict[int, str]]:
    text = (FIXTURES / name).read_text(encoding="utf-8")
    case = parse([Artifact(name=name, text=text, size=len(text))])
    return text.splitlines(), {n: case.kind_of(Where(name, n)) for n in range(1, len(text.splitlines()) + 1)}


def test_every_line_of_a_message_is_claimed_and_its_call_stack_is_not() -> None:
    lines, kinds = _claims(FIND_PACKAGE)
    stack = lines.index("Call Stack (most recent call first):") + 1
    message = [n for n in range(1, stack) if lines[n - 1].strip()]  # the header and the message's lines
    assert len(message) > 10 and all(kinds[n] == "cmake" for n in message)
    assert all(kinds[n] != "cmake" for n in range(stack, len(lines) + 1))
    assert all(kinds[n] is None for n, line in enumerate(lines, 1) if not line.strip())


def test_a_message_under_a_nix_builder_prefix_is_claimed() -> None:
    lines, kinds = _claims(NIX_CUDA)
    said = next(n for n, line in enumerate(lines, 1) if "Could not find nvcc executable" in line)
    assert kinds[said] == "cmake"
    assert kinds[1] is None  # Nix's own "error: builder for ... failed" line is no CMake message


def test_a_message_that_pip_shows_indented_is_claimed_to_its_end() -> None:
    lines, kinds = _claims(PIP_INDENTED)
    header = next(n for n, line in enumerate(lines, 1) if line.lstrip().startswith("CMake Error at"))
    end = next(n for n, line in enumerate(lines, 1) if "Configuring incomplete" in line)
    message = [n for n in range(header, end) if lines[n - 1].strip()]
    assert len(message) > 10 and all(kinds[n] == "cmake" for n in message)
    assert kinds[end] is None and all(kinds[n] != "cmake" for n in range(1, header))


def test_evidence_in_a_message_counts_in_full() -> None:
    """Worded as a sentence, the message's line would count half and leave the CUDA build's failure unanswered."""
    text = (FIXTURES / NIX_CUDA).read_text(encoding="utf-8")
    folder = data_dir("signatures")
    top = analyze([Artifact(name=NIX_CUDA, text=text, size=len(text))], load(folder), folder).diagnoses[0]
    assert (top.id, top.klass) == ("nvidia-cuda-failure", "outside-gpu-stack")
    assert top.confidence >= 0.8


def test_a_sentence_after_the_message_is_not_claimed() -> None:
    text = ("CMake Error at CMakeLists.txt:12 (project):\n"
            "  No CMAKE_CUDA_COMPILER could be found.\n"
            "\n"
            "I tried to set CUDACXX to the compiler but the same error comes back every time.\n")
    case = parse([Artifact(name="paste", text=text, size=len(text))])
    assert case.kind_of(Where("paste", 2)) == "cmake"
    assert case.kind_of(Where("paste", 4)) is None
