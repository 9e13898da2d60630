"""Write the small adversarial inputs in this folder (run again to regenerate them).

    python tests/adversarial/make.py [FOLDER]

Big inputs (a member that unpacks to more than 1 GB, a 100 MB single line) are not kept
here: ``big_inputs`` writes them into a temporary folder for tests/test_adversarial.py.
"""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import random
import stat
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SEED = HERE.parent.parent / "corpus" / "seed-000-blit-kernels-device-libs-missing"

# A real failure, so archive tests can check the members really were read.
LOG = b"""\
:3:rocdevice.cpp            :468 : 0x7f0 us: [pid:4242 tid:0x7f0] Initializing HSA stack.
:1:rocprogram.cpp :156 : 0x7f0 us: [pid:4242 tid:0x7f0] Error: Cannot find the device library (bitcode) for gfx1100
:1:rocblit.cpp :1063 : 0x7f0 us: [pid:4242 tid:0x7f0] Error: Couldn't create blit kernels!
Segmentation fault (core dumped)
"""


def _zip(members: list[tuple[str, bytes]], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", compression) as archive:
        for name, data in members:
            archive.writestr(name, data)
    return out.getvalue()


def _tar(members: list[tarfile.TarInfo | tuple[str, bytes]]) -> bytes:
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.GNU_FORMAT) as archive:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                archive.addfile(member)
            else:
                info = tarfile.TarInfo(member[0])
                info.size = len(member[1])
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(member[1]))
    return out.getvalue()


def _special(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def _zero_stream_zip(name: str, size: int) -> bytes:
    """A zip whose one member is ``size`` zero bytes (deflate packs them about 1000:1)."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as archive:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        with archive.open(info, "w", force_zip64=size > 0x7FFFFFFF) as member:
            block = bytes(1 << 20)
            left = size
            while left:
                member.write(block[: min(left, len(block))])
                left -= min(left, len(block))
    return out.getvalue()


def _claims_huge(size: int) -> bytes:
    """A zip whose central directory says its small member unpacks to ``size`` bytes."""
    data = bytearray(_zip([("huge.log", LOG)]))
    central = data.rfind(b"PK\x01\x02")
    data[central + 24: central + 28] = min(size, 0xFFFFFFFE).to_bytes(4, "little")  # uncompressed size
    return bytes(data)


def small_inputs() -> dict[str, bytes]:
    rnd = random.Random(20240601)
    files: dict[str, bytes] = {}
    files["bomb.zip"] = _zero_stream_zip("zeros.log", 20 << 20)
    files["claims-4gb.zip"] = _claims_huge(4_000_000_000)
    files["traversal.zip"] = _zip([("../../evil.log", LOG), ("/etc/evil.log", LOG), ("C:/evil.log", LOG), ("ok/hip.log", LOG)])
    link = zipfile.ZipInfo("link.log")
    link.external_attr = (stat.S_IFLNK | 0o777) << 16
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        archive.writestr(link, "/etc/passwd")
        archive.writestr("hip.log", LOG)
    files["symlink.zip"] = out.getvalue()
    files["traversal.tar"] = _tar([("../../evil.log", LOG), ("/etc/evil.log", LOG), ("ok/hip.log", LOG)])
    files["links.tar"] = _tar([
        _special("sym.log", tarfile.SYMTYPE, "/etc/passwd"),
        _special("hard.log", tarfile.LNKTYPE, "/etc/shadow"),
        _special("dev.log", tarfile.CHRTYPE),
        _special("fifo.log", tarfile.FIFOTYPE),
        ("hip.log", LOG),
    ])
    plain = _tar([("bundle/hip.log", LOG)])
    files["bundle.tar"] = plain
    files["bundle.tgz"] = gzip.compress(plain, mtime=0)
    files["bundle.tar.bz2"] = bz2.compress(plain)
    files["bundle.tar.xz"] = lzma.compress(plain)
    # A zip inside a tar inside a gzip, and nothing named for what it is.
    files["mixed-nesting.bin"] = gzip.compress(_tar([("inner.zip", _zip([("hip.log", LOG)]))]), mtime=0)
    nested = _zip([("hip.log", LOG)])
    for level in range(10):
        nested = _zip([(f"level{level}.zip", nested)], zipfile.ZIP_STORED)
    files["nested10.zip"] = nested
    whole = _zip([("a/hip.log", LOG * 50), ("b/other.log", LOG * 50)])
    files["truncated.zip"] = whole[: len(whole) // 2]
    broken = bytearray(whole)
    for at in range(60, 200):
        broken[at] ^= 0x5A
    files["corrupt.zip"] = bytes(broken)
    big = _tar([("first.log", LOG), ("second.log", LOG * 100)])
    files["truncated.tar"] = big[: 512 * 3 + 100]
    files["truncated.tar.gz"] = gzip.compress(big, mtime=0)[:-200]
    files["truncated.log.gz"] = gzip.compress(LOG * 200, mtime=0)[:-100]
    corrupt_gz = bytearray(gzip.compress(LOG * 20, mtime=0))
    for at in range(20, 60):
        corrupt_gz[at] ^= 0xFF
    files["corrupt.gz"] = bytes(corrupt_gz)
    files["random.dmp"] = bytes(rnd.getrandbits(8) for _ in range(4096))
    files["random.core"] = bytes(rnd.getrandbits(8) for _ in range(4096))
    files["fake-header.dmp"] = b"MDMP\x93\xa7\x00\x00" + bytes(rnd.getrandbits(8) for _ in range(2048))
    files["fake-header.core"] = b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x04\x00>\x00" + bytes(rnd.getrandbits(8) for _ in range(2048))
    text = LOG.decode()
    files["utf16le-bom.log"] = b"\xff\xfe" + text.encode("utf-16-le")
    files["utf16be-bom.log"] = b"\xfe\xff" + text.encode("utf-16-be")
    files["utf16le.log"] = text.encode("utf-16-le")
    files["utf16be.log"] = text.encode("utf-16-be")
    files["mixed-encodings.log"] = LOG + "Gerät: Radeon ü\n".encode("latin-1") + "路径 ✓\n".encode("utf-8") + b"\x93cp1252\x94\n" + "héllo\n".encode("utf-16-le")
    files["nul-bytes.log"] = LOG[:40] + b"\x00" + LOG[40:] + b"\x00" * 3
    files["garbage.zip"] = b"PK\x03\x04" + bytes(rnd.getrandbits(8) for _ in range(1024))
    files["garbage.tar"] = bytes(257) + b"ustar" + bytes(rnd.getrandbits(8) for _ in range(1000))
    files["garbage.xz"] = b"\xfd7zXZ\x00" + bytes(rnd.getrandbits(8) for _ in range(500))
    files["garbage.bz2"] = b"BZh91AY&SY" + bytes(rnd.getrandbits(8) for _ in range(500))
    return files


def big_inputs(folder: Path) -> dict[str, Path]:
    """Write the inputs too big to keep in git; return their paths by name."""
    paths = {}
    path = folder / "over-1gb.zip"
    path.write_bytes(_zero_stream_zip("zeros.log", (1 << 30) + (64 << 20)))
    paths[path.name] = path
    path = folder / "long-line.log"
    with path.open("wb") as out:
        out.write(LOG)
        block = b"/" * (1 << 20)
        for _ in range(100):
            out.write(block)
        out.write(b"\n" + LOG)
    paths[path.name] = path
    path = folder / "big.log.gz"  # a gzip bomb: 600 MiB of zeros
    with gzip.GzipFile(path, "wb", compresslevel=9, mtime=0) as out:
        block = bytes(1 << 20)
        for _ in range(600):
            out.write(block)
    paths[path.name] = path
    return paths


def main() -> None:
    folder = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE
    for name, data in small_inputs().items():
        (folder / name).write_bytes(data)


if __name__ == "__main__":
    main()
