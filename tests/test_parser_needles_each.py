"""Each needle's own lines: a parser that tries several regexes on a line tries only those whose needle chose it,
so every line a needle's regex matches must be among that needle's lines, whatever the scanner engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import artifact
from triage.parsers import vendor, windows
from triage.parsers.lines import Needles

FIXTURES = Path(__file__).parent / "fixtures" / "windows"


def _texts() -> list[str]:
    """Real Windows crash records in several languages (a line outside ASCII goes the scanner's Python way)."""
    return [path.read_text(encoding="utf-8") for path in sorted(FIXTURES.glob("*.txt"))]


@pytest.mark.parametrize("engine", ["python", "hyperscan"])
@pytest.mark.parametrize(("needles", "patterns"), [
    (windows._NEEDLES, (windows._EXCEPTION, windows._FRAME, windows._WINDBG, windows._FAULTING_MODULE,
                        windows._FAULT_OFFSET, windows._VISUAL_STUDIO, windows._SUMMARY, windows._PYTHON,
                        windows._HANDLER_FRAME, windows._HANDLER_SYMBOL, windows._BASED_FRAME, windows._COLON_FRAME,
                        windows._LOADED_MODULE, windows._NAMED_EXCEPTION, windows._EXCEPTION_ADDRESS)),
    (vendor._NEEDLES, (vendor._AMD_STRONG, vendor._AMD_WEAK, vendor._NVIDIA_STRONG, vendor._ZLUDA)),
], ids=["windows", "vendor"])
def test_each_needle_holds_every_line_its_regex_matches(needles: Needles, patterns: tuple, engine: str,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    if engine == "hyperscan":
        pytest.importorskip("hyperscan")
    monkeypatch.setenv("TRIAGE_SCANNER", engine)
    from triage.parsers import lines

    lines._WHOLE.reset()
    try:
        if engine == "hyperscan":  # built now (a scan would read a few MB the Python way first)
            assert lines._WHOLE.scanner().prepare()
        for text in _texts():
            given = artifact(text)
            each = needles.each(given)
            assert list(each) == list(patterns)
            for pattern in patterns:
                matched = {i for i, line in enumerate(given.lines) if pattern.search(line)}
                assert matched <= each[pattern], (pattern.pattern, sorted(matched - each[pattern]))
            assert sorted(set().union(*each.values())) == needles.lines(given)
    finally:
        monkeypatch.delenv("TRIAGE_SCANNER")
        lines._WHOLE.reset()


def test_a_line_no_needle_chose_is_in_no_set() -> None:
    given = artifact("Faulting module name: amdhip64_7.dll, version: 7.1.0.0\nnothing here\n"
                     "0x00007FFF38517374, KERNEL32.DLL, BaseThreadInitThunk() + 0x14\n")
    each = windows._NEEDLES.each(given)
    assert 1 not in set().union(*each.values())
    assert 0 in each[windows._FAULTING_MODULE] and 2 in each[windows._FRAME]
