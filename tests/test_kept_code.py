"""Records made with triage.lazy.dataclass: the same classes as ``dataclasses.dataclass`` makes, their methods' code
compiled once and read back from the per-user cache by later processes."""

from __future__ import annotations

import builtins
import dataclasses
from dataclasses import field
from pathlib import Path

import pytest

from triage.lazy import CompiledCode, dataclass


def _where() -> type:
    @dataclass(frozen=True)
    class Where:
        artifact: str
        line: int = 0
        notes: list[str] = field(default_factory=list, compare=False, hash=False)

    return Where


def test_a_record_behaves_as_dataclasses_makes_it() -> None:
    kept = _where()
    plain = dataclasses.dataclass(frozen=True)(type("Where", (), {
        "__annotations__": {"artifact": "str", "line": "int", "notes": "list[str]"},
        "line": 0, "notes": field(default_factory=list, compare=False, hash=False)}))
    for made in (kept, plain):
        a, b = made("hip.log", 3), made("hip.log", 3, ["x"])
        assert a == b and hash(a) == hash(b) and a.notes == [] and b.notes == ["x"]
        assert repr(a).endswith("Where(artifact='hip.log', line=3, notes=[])")
        with pytest.raises(dataclasses.FrozenInstanceError):
            a.line = 4
    assert [f.name for f in dataclasses.fields(kept)] == [f.name for f in dataclasses.fields(plain)]
    assert not hasattr(dataclasses, "exec")  # lent for the time a class is made, then given back


def test_a_bad_record_raises_as_dataclasses_does_and_leaves_nothing_behind() -> None:
    with pytest.raises(TypeError, match="non-default argument"):
        @dataclass
        class Bad:
            a: int = 0
            b: str  # type: ignore[misc]
    assert not hasattr(dataclasses, "exec")


def test_the_code_is_kept_and_read_back_without_compiling(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What one process compiled, a later one (a fresh memo on the same file) runs without compiling it."""
    file = tmp_path / "code.pickle"
    first = CompiledCode(file)
    source = "def __create_fn__():\n def answer(self):\n  return 42\n return answer\n"
    made: dict = {}
    first.exec(source, {}, made)
    first.save()
    later = CompiledCode(file)
    monkeypatch.setattr(builtins, "compile", lambda *args, **kwargs: (_ for _ in ()).throw(AssertionError("compiled")))
    again: dict = {}
    later.exec(source, {}, again)
    assert again["__create_fn__"]()(None) == 42
    assert made["__create_fn__"].__code__ == again["__create_fn__"].__code__
