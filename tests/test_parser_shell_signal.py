"""The shell's line for a program killed by a signal, in English and in glibc's translations of "Segmentation fault".

The German line is as a user posted it (corpus/realworld/adaptivecpp-265-*, from
https://github.com/AdaptiveCpp/AdaptiveCpp/issues/265); the others are the same line in the words glibc's
translations give SIGSEGV (what bash prints, with its "(core dumped)" translated too).
"""

from __future__ import annotations

import pytest

from tests.conftest import artifact
from triage.parsers import parse


@pytest.mark.parametrize("line", [
    "Speicherzugriffsfehler (Speicherabzug geschrieben)",
    "Segmentation fault (core dumped)",
    "Erreur de segmentation (core dumped)",
    "Violación de segmento (`core' generado)",
    "段错误 (核心已转储)",
    "./test: line 1: Ошибка сегментирования",
])
def test_a_segfault_in_the_shells_words_is_the_signal(line: str) -> None:
    case = parse([artifact(f"./test\n0x523110\n{line}\n", "run.txt")])
    assert case.fact("signal").value == "SEGV"


@pytest.mark.parametrize("line", [
    "Speicherzugriffsfehler beim Kopieren der Datei (siehe Handbuch) und mehr",  # prose that begins with the word
    "the Erreur de segmentation page of the manual",
])
def test_the_word_inside_a_sentence_is_not_the_signal(line: str) -> None:
    assert parse([artifact(f"{line}\n", "run.txt")]).fact("signal") is None
