"""The reader: tar and compressed archives, nesting, limits, damaged archives, long lines."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

from triage.ingest.reader import Limits, read_inputs

sys.path.insert(0, str(Path(__file__).resolve().parent / "adversarial"))
import make  # noqa: E402


def _read(tmp_path: Path, name: str, data: bytes, limits: Limits | None = None):
    path = tmp_path / name
    path.write_bytes(data)
    return read_inputs([str(path)], limits=limits)


def _tar(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return out.getvalue()


def _zip(members: dict[str, bytes]) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    return out.getvalue()


@pytest.mark.parametrize("wrap", [lambda b: b, gzip.compress, bz2.compress, lzma.compress])
def test_tar_in_any_wrapping_by_content(tmp_path: Path, wrap) -> None:
    artifacts, warnings = _read(tmp_path, "upload.bin", wrap(_tar({"a/hip.log": b"hello\n", "b.txt": b"x\n"})))
    assert [a.name for a in artifacts] == ["upload.bin!a/hip.log", "upload.bin!b.txt"]
    assert artifacts[0].text == "hello\n" and warnings == []


def test_tgz_name_becomes_tar(tmp_path: Path) -> None:
    artifacts, _ = _read(tmp_path, "logs.tgz", gzip.compress(_tar({"hip.log": b"x\n"})))
    assert artifacts[0].name == "logs.tar!hip.log"


def test_zip_in_tar_in_gzip(tmp_path: Path) -> None:
    data = gzip.compress(_tar({"inner.zip": _zip({"deep.log": b"found\n"})}))
    artifacts, warnings = _read(tmp_path, "b.tar.gz", data)
    assert [a.name for a in artifacts] == ["b.tar!inner.zip!deep.log"] and warnings == []


def test_nesting_past_the_depth_limit_is_skipped(tmp_path: Path) -> None:
    data = _zip({"x.log": b"x\n"})
    for level in range(4):
        data = _zip({f"l{level}.zip": data})
    artifacts, warnings = _read(tmp_path, "n.zip", data, Limits(depth=3))
    assert artifacts == [] and any("nested deeper than 3 levels" in w for w in warnings)
    artifacts, warnings = _read(tmp_path, "n.zip", data, Limits(depth=5))
    assert [a.text for a in artifacts] == ["x\n"]


def test_tar_links_devices_and_unsafe_paths_are_skipped(tmp_path: Path) -> None:
    artifacts, warnings = _read(tmp_path, "l.tar", make.small_inputs()["links.tar"])
    assert [a.name for a in artifacts] == ["l.tar!hip.log"]
    assert sum("not followed" in w for w in warnings) == 2
    assert sum("not a regular file" in w for w in warnings) == 2
    artifacts, warnings = _read(tmp_path, "t.tar", make.small_inputs()["traversal.tar"])
    assert [a.name for a in artifacts] == ["t.tar!ok/hip.log"]
    assert sum("unsafe member path" in w for w in warnings) == 2


def test_member_count_over_all_archives(tmp_path: Path) -> None:
    inner = _zip({f"{i}.log": b"x\n" for i in range(6)})
    data = _tar({"a.zip": inner, "b.zip": inner})
    artifacts, warnings = _read(tmp_path, "m.tar", data, Limits(members=8))
    assert len(artifacts) == 6 and any("more than 8 archive members in all" in w for w in warnings)


def test_tar_member_and_total_size_limits(tmp_path: Path) -> None:
    data = _tar({"big.log": b"x" * 5000, "small.log": b"y\n", "c.log": b"z" * 3000})
    artifacts, warnings = _read(tmp_path, "s.tar", data, Limits(member_bytes=4000, total_bytes=3001))
    assert [a.name for a in artifacts] == ["s.tar!small.log"]
    assert any("member limit" in w for w in warnings) and any("in all" in w for w in warnings)


def test_gzip_bomb_stops_early(tmp_path: Path) -> None:
    artifacts, warnings = _read(tmp_path, "z.log.gz", gzip.compress(bytes(50 << 20)))
    assert artifacts == [] and any("compression ratio over 200:1" in w for w in warnings)


def test_truncated_archives_keep_what_was_read(tmp_path: Path) -> None:
    whole = _tar({"first.log": b"one\n" * 100, "second.log": b"two\n" * 1000})
    artifacts, warnings = _read(tmp_path, "t.tar", whole[:2048])
    assert artifacts[0].name == "t.tar!first.log" and warnings
    data = _zip({"a.log": b"alpha\n" * 100, "b.log": b"beta\n" * 5000})
    artifacts, warnings = _read(tmp_path, "t.zip", data[: len(data) // 2])
    assert artifacts[0].name == "t.zip!a.log" and any("recovered from its local headers" in w for w in warnings)
    artifacts, warnings = _read(tmp_path, "t.log.gz", gzip.compress(b"line\n" * 100000)[:-50])
    assert artifacts and artifacts[0].text.startswith("line\n") and any("truncated" in w for w in warnings)


def test_zip_member_with_an_empty_name_is_skipped(tmp_path: Path) -> None:
    """Found by fuzzing: zipfile's ZipInfo.is_dir() raises IndexError on an empty member name."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr("hip.log", "Couldn't create blit kernels!\n")
        archive.writestr("x", "second member\n")
    data = out.getvalue()
    # Rename the second member to "" in the central directory (its name length 1 -> 0).
    central = data.rindex(b"PK\x01\x02")
    data = data[:central + 28] + b"\x00\x00" + data[central + 30: central + 46] + data[central + 47:]
    end = data.rindex(b"PK\x05\x06")
    size = int.from_bytes(data[end + 12: end + 16], "little") - 1
    data = data[: end + 12] + size.to_bytes(4, "little") + data[end + 16:]
    artifacts, warnings = _read(tmp_path, "bundle.zip", data)
    assert [a.name for a in artifacts] == ["bundle.zip!hip.log"]
    assert any("empty name" in w for w in warnings)


def test_long_line_is_cut_with_a_warning(tmp_path: Path) -> None:
    text = b"first\n" + b"a" * 3000 + b"\nlast\n"
    artifacts, warnings = _read(tmp_path, "l.log", text, Limits(line_chars=1000))
    assert artifacts[0].lines == ["first", "a" * 1000, "last"]
    assert warnings == ["l.log: line 2 cut at 1000 bytes (it was 3000 characters long)"]
    artifacts, warnings = _read(tmp_path, "ok.log", b"short\r\nlines\n")
    assert artifacts[0].text == "short\nlines\n" and warnings == []


def test_parse_budget_stops_a_slow_artifact(monkeypatch: pytest.MonkeyPatch) -> None:
    import triage.parsers as parsers
    from triage.model import Artifact

    class Stuck:
        """A parser that never finishes on one file, as a pathological regex would."""

        __name__ = "stuck"

        @staticmethod
        def parse(artifact, case) -> None:
            while artifact.name == "slow.log":
                pass

    monkeypatch.setattr(parsers, "ARTIFACT_BUDGET_S", 0.5)
    monkeypatch.setattr(parsers, "LINE_PARSERS", (Stuck, *parsers.LINE_PARSERS))
    case = parsers.parse([Artifact(name="slow.log", text="x\n", size=2),
                          Artifact(name="fine.log", text="Segmentation fault\n", size=19)])
    assert any(w.startswith("slow.log: parsing stopped after") for w in case.warnings)
    assert not any(w.startswith("fine.log") for w in case.warnings)


@pytest.mark.parametrize("label", ["expected.yaml", "label.yaml"])
def test_a_case_label_is_never_evidence(tmp_path: Path, label: str) -> None:
    (tmp_path / label).write_text("class: device-libs-missing\nsummary: Couldn't create blit kernels!\n")
    (tmp_path / "hip.log").write_text("nothing here\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / label).write_text("only a label at the case's top is skipped\n")
    artifacts, _ = read_inputs([str(tmp_path)])
    assert sorted(a.name for a in artifacts) == ["hip.log", f"sub/{label}"]


def test_a_folder_is_read_in_name_order_without_its_label_or_its_links(tmp_path: Path) -> None:
    """Links in a folder may point anywhere (another user's home, /etc): they are named in a warning, never read."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("not the user's to send\n")
    case = tmp_path / "case"
    (case / "sub").mkdir(parents=True)
    (case / "b.log").write_text("b\n")
    (case / "sub" / "a.log").write_text("a\n")
    (case / "expected.yaml").write_text("class: unknown\n")
    (case / "sub" / "expected.yaml").write_text("kept: only the top-level label is one\n")
    (case / "linked-dir").symlink_to(outside, target_is_directory=True)
    (case / "linked-file.txt").symlink_to(outside / "secret.txt")
    artifacts, warnings = read_inputs([str(case)])
    assert [a.name for a in artifacts] == ["b.log", "sub/a.log", "sub/expected.yaml"]
    assert all("not the user's" not in a.text for a in artifacts)
    assert sorted(w.split(":")[0] for w in warnings) == ["linked-dir", "linked-file.txt"]
