"""The reader: tar and compressed archives, nesting, limits, damaged archives, long lines."""

from __future__ import annotations

import bz2
import codecs
import gzip
import io
import lzma
import stat
import struct
import sys
import tarfile
import time
import tracemalloc
import zipfile
import zlib
from pathlib import Path

import pytest

from triage.ingest.reader import LINE_COST, TEXT_COST, Limits, _width, case_files, read_inputs

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "adversarial"))
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

    from triage import deadline

    class Stuck:
        """A parser that never finishes on one file, reading line after line as a parser's loop does
        (it checks the analysis's deadline, as every parser's needle pass does)."""

        __name__ = "stuck"

        @staticmethod
        def parse(artifact, case) -> None:
            while artifact.name == "slow.log":
                deadline.check("parsing")

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


# -- archives cannot exhaust the machine ----------------------------------------------------------
# The bombs are built here, by hand where zipfile would refuse to write them.

def _log(size: int) -> bytes:
    """``size`` bytes of runtime log whose timestamps count up: deflate packs it about 35:1, under the
    200:1 a zip member's header is checked for."""
    lines, length, i = [], 0, 0
    while length < size:
        line = f":3:hip_memory.cpp :62 : {1000 + i * 7} us: [pid:4242 tid:0x7f10] hipMemcpy ( 0x7f0000a00000, 4096 ) : hipSuccess\n"
        lines.append(line)
        length += len(line)
        i += 1
    return "".join(lines).encode()[:size]


def _deflate(data: bytes) -> bytes:
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    return packer.compress(data) + packer.flush()


def _local(name: bytes, method: int, crc: int, packed: int, size: int) -> bytes:
    return struct.pack("<4s5H3L2H", b"PK\x03\x04", 20, 0, method, 0, 0, crc, packed, size, len(name), 0) + name


def _central(name: bytes, method: int, crc: int, packed: int, size: int, offset: int) -> bytes:
    return struct.pack("<4s6H3L5H2L", b"PK\x01\x02", 20, 20, 0, method, 0, 0, crc, packed, size, len(name),
                       0, 0, 0, 0, (stat.S_IFREG | 0o644) << 16, offset) + name


def _end(count: int, directory: bytes, at: int) -> bytes:
    return struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, len(directory), at, 0)


def _raw_zip(members: list[tuple[str, int, bytes, int, int]]) -> bytes:
    """A zip written by hand: per member its name, method, packed data, CRC-32 and the size its
    headers give (which may lie)."""
    out, directory = bytearray(), bytearray()
    for name, method, packed, crc, size in members:
        raw = name.encode()
        directory += _central(raw, method, crc, len(packed), size, len(out))
        out += _local(raw, method, crc, len(packed), size) + packed
    return bytes(out + directory + _end(len(members), directory, len(out)))


def _overlap_bomb(plain: bytes, entries: int, quoted: bool = False) -> bytes:
    """David Fifield's "better zip bomb": many central-directory entries over one deflate stream.
    Full overlap: every entry names the same local header. Quoted overlap: each entry has its own
    local header, followed by a stored deflate block that quotes the next entry's header, so that
    every entry's data runs on to the one shared stream."""
    kernel = _deflate(plain)
    if not quoted:
        name = b"hip.log"
        crc = zlib.crc32(plain)
        out = _local(name, 8, crc, len(kernel), len(plain)) + kernel
        directory = _central(name, 8, crc, len(kernel), len(plain), 0) * entries
        return out + directory + _end(entries, directory, len(out))
    names = [f"{i:05d}.log".encode() for i in range(entries)]
    headers: list[bytes] = [b""] * entries
    packed, sizes, crcs = [0] * entries, [0] * entries, [0] * entries
    for i in range(entries - 1, -1, -1):  # each entry quotes the headers after it
        quoted_headers = b"".join(headers[i + 1:])
        packed[i] = len(kernel) + sum(5 + len(h) for h in headers[i + 1:])
        sizes[i] = len(quoted_headers) + len(plain)
        crcs[i] = zlib.crc32(plain, zlib.crc32(quoted_headers))
        headers[i] = _local(names[i], 8, crcs[i], packed[i], sizes[i])
    out, directory = bytearray(), bytearray()
    for i in range(entries):
        directory += _central(names[i], 8, crcs[i], packed[i], sizes[i], len(out))
        out += headers[i]
        if i + 1 < entries:  # a stored, not final, deflate block holding the next header
            out += b"\x00" + struct.pack("<HH", len(headers[i + 1]), 0xFFFF ^ len(headers[i + 1]))
    out += kernel
    return bytes(out + directory + _end(entries, directory, len(out)))


@pytest.mark.parametrize("quoted", [False, True], ids=["one-header", "quoted"])
def test_overlapping_zip_entries_are_refused(tmp_path: Path, quoted: bool) -> None:
    data = _overlap_bomb(_log(1 << 20), 40, quoted)
    archive = zipfile.ZipFile(io.BytesIO(data))  # a zip as zipfile reads it: 40 entries of (at least) 1 MiB
    assert len(archive.infolist()) == 40 and len(archive.read(archive.infolist()[-1 if quoted else 0])) == 1 << 20
    started = time.monotonic()
    artifacts, warnings = _read(tmp_path, "bomb.zip", data)
    assert time.monotonic() - started < 2
    assert artifacts == [] and warnings == ["bomb.zip: entries overlap: a zip bomb; not read"]


def test_ratio_applies_to_all_an_input_unpacks(tmp_path: Path) -> None:
    """Members under 1 MiB escape the per-member ratio check; their sum does not, nested or not."""
    plain = (b"x" * 1023 + b"\n") * 1023
    packed = _deflate(plain)
    assert len(plain) / len(packed) > 200
    data = _raw_zip([(f"{i}.log", 8, packed, zlib.crc32(plain), len(plain)) for i in range(100)])
    artifacts, warnings = _read(tmp_path, "many.zip", data)
    assert len(artifacts) < 50 and sum(a.size for a in artifacts) <= 200 * len(data)
    assert any(w.startswith("many.zip!") and "compression ratio over 200:1 (a zip bomb?)" in w for w in warnings)
    # The same members one to a zip, the zips in a tar: one input, one ratio.
    one = _raw_zip([("x.log", 8, packed, zlib.crc32(plain), len(plain))])
    data = _tar({f"{i}.zip": one for i in range(100)})
    artifacts, warnings = _read(tmp_path, "many.tar", data)
    assert len(artifacts) < 100 and sum(a.size for a in artifacts) <= 200 * len(data)
    assert any("compression ratio over 200:1" in w for w in warnings)


def test_many_members_under_every_member_limit_stop_at_the_total(tmp_path: Path) -> None:
    """80 members of just under 1 MiB of log, 35:1 each: each passes every member check, and their sum
    is past what one analysis keeps. Reading stops there, with a warning; no member after it is read."""
    plain = _log((1 << 20) - 1)
    packed = _deflate(plain)
    data = _raw_zip([(f"{i:02d}.log", 8, packed, zlib.crc32(plain), len(plain)) for i in range(80)])
    started = time.monotonic()
    artifacts, warnings = _read(tmp_path, "b.zip", data)
    assert time.monotonic() - started < 30
    kept = sum(TEXT_COST * sys.getsizeof(a.text) + LINE_COST * (a.text.count("\n") + 1) for a in artifacts)
    assert 40 < len(artifacts) < 80 and kept <= Limits().memory
    assert [a.name for a in artifacts] == [f"b.zip!{i:02d}.log" for i in range(len(artifacts))]
    assert [a.text == plain.decode() for a in artifacts] == [True] * (len(artifacts) - 1) + [False]
    assert "bytes left out here" in artifacts[-1].text
    assert len(warnings) == 1 and "over what one analysis reads in all" in warnings[0]


def test_what_is_unpacked_counts_even_when_it_is_not_kept(tmp_path: Path) -> None:
    """Members whose CRC-32 is wrong are unpacked, then dropped: the total counts them all the same."""
    plain = _log((1 << 20) - 1)
    packed = _deflate(plain)
    data = _raw_zip([(f"{i}.log", 8, packed, zlib.crc32(plain) ^ 1, len(plain)) for i in range(64)])
    artifacts, warnings = _read(tmp_path, "crc.zip", data, Limits(total_bytes=16 << 20))
    assert artifacts == []
    assert sum("corrupt member (bad CRC-32" in w for w in warnings) == 16
    assert "over 16 MiB in all" in warnings[-1]


def test_high_ratio_member_is_stopped_whatever_its_header_says(tmp_path: Path) -> None:
    """A few hundred bytes of bzip2 that unpack to 200 MiB, in a zip whose headers say under 1 MiB:
    zipfile hands bzip2 all the packed data at once and gets the 200 MiB back in one piece. Read here
    in steps, it is stopped after the first."""
    packed = bz2.compress(b"x" * (200 << 20), 9)  # some 5 s to make
    assert len(packed) < 1 << 10
    data = _raw_zip([("big.log", 12, packed, 0, 1_000_000), ("hip.log", 0, b"fine\n", zlib.crc32(b"fine\n"), 5)])
    tracemalloc.start()
    try:
        started = time.monotonic()
        artifacts, warnings = _read(tmp_path, "x.zip", data)
        seconds = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20 and seconds < 2, (peak, seconds)
    assert [a.name for a in artifacts] == ["x.zip!hip.log"]
    assert warnings == ["x.zip!big.log: larger than its header says, skipped"]
    # Its header telling the truth, it is stopped before it is unpacked.
    data = _raw_zip([("big.log", 12, packed, 0, 200 << 20)])
    artifacts, warnings = _read(tmp_path, "y.zip", data)
    assert artifacts == [] and "over the 128 MiB member limit" in warnings[0]


def test_gzip_of_10_gib_of_zeros_stops_at_the_limit_quickly(tmp_path: Path) -> None:
    # 16 MiB of zeros deflated and flushed is a run of whole blocks: repeated, a valid stream.
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = packer.compress(bytes(16 << 20)) + packer.flush(zlib.Z_FULL_FLUSH)
    data = (b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff" + block * 640 + zlib.compressobj(9, zlib.DEFLATED, -15).flush()
            + struct.pack("<LL", 0, 0))
    started = time.monotonic()
    artifacts, warnings = _read(tmp_path, "zeros.gz", data)
    assert time.monotonic() - started < 5
    assert artifacts == [] and warnings == ["zeros.gz: over 128 MiB when unpacked; skipped"]


BUNDLED = [HERE.parent / "corpus" / "seed-000-blit-kernels-device-libs-missing",
           HERE.parent / "corpus" / "seed-002-hipmoduleload-access-violation-windows",
           HERE / "fixtures" / "windows", HERE / "fixtures" / "rocm5-nogpu", HERE / "fixtures" / "offload"]


class _Unseekable(io.RawIOBase):
    """Where zipfile writes data descriptors after each member, as when it writes to a pipe."""

    def __init__(self) -> None:
        self.out = bytearray()

    def writable(self) -> bool:
        return True

    def write(self, data) -> int:
        self.out += data
        return len(data)


def _zip_as(files: dict[str, bytes], how: str) -> bytes:
    out: io.BytesIO | _Unseekable = _Unseekable() if how == "streamed" else io.BytesIO()
    method = {"stored": zipfile.ZIP_STORED, "bzip2": zipfile.ZIP_BZIP2, "lzma": zipfile.ZIP_LZMA}.get(how, zipfile.ZIP_DEFLATED)
    with zipfile.ZipFile(out, "w", method) as archive:
        for name, data in files.items():
            with archive.open(name, "w", force_zip64=how == "zip64") as member:
                member.write(data)
    return bytes(out.out) if isinstance(out, _Unseekable) else out.getvalue()


@pytest.mark.parametrize("kind", ["zip", "zip-stored", "zip-bzip2", "zip-lzma", "zip-streamed", "zip-zip64",
                                  "tar.gz", "tar.xz"])
def test_real_bundles_are_read_whole(tmp_path: Path, kind: str) -> None:
    files = {f"{folder.name}/{name}": path.read_bytes() for folder in BUNDLED for name, path in case_files(folder)[0]}
    assert len(files) > 30 and sum(map(len, files.values())) > 200_000
    if kind.startswith("zip"):
        data = _zip_as(files, kind[4:])
        assert zipfile.ZipFile(io.BytesIO(data)).testzip() is None
    else:
        data = (gzip.compress if kind == "tar.gz" else lzma.compress)(_tar(files))
    artifacts, warnings = _read(tmp_path, f"bundle.{kind}", data)
    assert warnings == []
    assert [a.name.split("!", 1)[1] for a in artifacts] == list(files)
    direct = [(f"{folder.name}/{a.name}", a.text, a.data, a.size) for folder in BUNDLED
              for a in read_inputs([str(folder)])[0]]
    assert [(a.name.split("!", 1)[1], a.text, a.data, a.size) for a in artifacts] == direct


@pytest.mark.parametrize("text, width", [("plain ASCII\n", 1), ("caf\u00e9\n", 2), ("loading \u2588\u2588 50%\n", 2),
                                         ("done \U0001f680\n", 4), ("\U0001f680" + "x" * 5000, 4)])
def test_a_text_is_costed_at_the_widest_character_it_holds(text: str, width: int) -> None:
    """Python holds a text in one, two or four bytes a character, by its widest character; the cost takes the most its
    UTF-8 bytes allow: two outside ASCII, four where a character takes four bytes in UTF-8 (an emoji)."""
    assert _width(text.encode("utf-8"), "utf-8") == width



def test_a_text_past_the_budget_keeps_its_first_and_last_parts(tmp_path: Path) -> None:
    lines = [f"line {i:07d} of a long runtime log\n".encode() for i in range(200_000)]  # 7 MB
    path = tmp_path / "long.log"
    path.write_bytes(b"".join(lines))
    (tmp_path / "later.log").write_bytes(b"never read\n")
    limits = Limits(memory=TEXT_COST * (1 << 20) + LINE_COST * 40_000)
    artifacts, warnings = read_inputs([str(path), str(tmp_path / "later.log")], limits=limits)
    assert [a.name for a in artifacts] == ["long.log"]
    text = artifacts[0].text
    assert text.startswith("line 0000000 of") and text.endswith("line 0199999 of a long runtime log\n")
    assert "bytes left out here ...]" in text and len(text) < 1_500_000
    assert TEXT_COST * sys.getsizeof(text) + LINE_COST * (text.count("\n") + 1) <= limits.memory
    assert len(warnings) == 1 and warnings[0].startswith("long.log: 7000000 bytes of text; only its first")
    # UTF-16 is cut on character boundaries, and its last part read as UTF-16.
    path.write_bytes(codecs.BOM_UTF16_LE + b"".join(lines).decode().encode("utf-16-le"))
    artifacts, _ = read_inputs([str(path)], limits=limits)
    text = artifacts[0].text
    assert text.startswith("line 0000000 of") and text.endswith("line 0199999 of a long runtime log\n")
    assert "\ufffd" not in text
