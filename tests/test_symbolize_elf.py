"""ELF symbolization checked against binutils run now on the same files.

The real library is Debian's stripped ``libamdhip64.so.5`` (package libamdhip64-5, listed in
.ci/apt-packages): names and sizes must agree with ``nm -D -S``, names with ``addr2line -f``,
and kernel-offset conversion with ``readelf -l``. Small libraries built here with gcc (and
lld, whose text segment sits 0x1000 above its file offset) cover .symtab vs .dynsym, C++
demangling, the debuginfod layout and a non-zero kernel-offset delta.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, artifact
from triage.model import Artifact, Case, Where
from triage.parsers import parse
from triage.symbolize import elf, symbolize
from triage.symbolize.demangle import available

FRAMES = ROOT / "signatures" / "frames"
HIP = Path("/usr/lib/x86_64-linux-gnu/libamdhip64.so.5")
C_SOURCE = """
int helper(int x) { return x * 3 + 1; }
static __attribute__((noinline)) int hidden(int x) { return (x ^ 5) * helper(x); }
int exported_api(int x) { return hidden(x) + helper(x); }
"""
CXX_SOURCE = """
namespace ns { struct Widget { int frob(int x); }; int Widget::frob(int x) { return x * 7; } }
"""


def _tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.skip(f"{name} is not installed (binutils/gcc, listed in .ci/apt-packages)")
    return path


def _run(*args: str) -> str:
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=120).stdout


@pytest.fixture(scope="module")
def hip() -> Path:
    if not HIP.exists():
        pytest.skip(f"{HIP} is absent: install Debian's libamdhip64-5 (apt-get install libamdhip64-5)")
    _tool("nm")
    return HIP


def nm_functions(path: Path, dynamic: bool = True) -> list[tuple[int, int, str]]:
    """(address, size, demangled name) of defined code symbols, as binutils' nm prints them."""
    out = _run("nm", *(["-D"] if dynamic else []), "-S", "-C", "--defined-only", str(path))
    rows = []
    for line in out.splitlines():
        m = re.match(r"^([0-9a-f]+) ([0-9a-f]+) [TtWwi] (.+?)(?:@@?[\w.]+)?$", line)
        if m:
            rows.append((int(m[1], 16), int(m[2], 16), m[3]))
    return rows


def load_segments(path: Path) -> list[tuple[int, int, int, bool]]:
    """(p_offset, p_vaddr, p_filesz, executable) of each LOAD header, as ``readelf -l`` prints them."""
    out = _run("readelf", "-lW", str(path))
    rows = []
    for m in re.finditer(r"^\s*LOAD\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+(.{3})",
                         out, re.M):
        rows.append((int(m[1], 16), int(m[2], 16), int(m[3], 16), "E" in m[4]))
    return rows


def symbolized(text: str, symbols: Path | None = None, binaries: list[Path] = (), build_ids: dict | None = None) -> Case:
    artifacts = [artifact(text, "stack.txt")]
    artifacts += [Artifact(name=p.name, text="", size=p.stat().st_size, data=p.read_bytes()) for p in binaries]
    case = parse(artifacts)
    for module, build_id in (build_ids or {}).items():
        case.add_fact(f"build_id:{module}", build_id, Where("core", 0), "test", 90)
    symbolize(case, FRAMES, symbols)
    return case


def stack(module: str, *offsets: int) -> str:
    return "".join(f"#{i}  0x00007f00{o:08x} n/a ({module} + 0x{o:x})\n" for i, o in enumerate(offsets))


def link_folder(tmp_path: Path, *files: Path) -> Path:
    folder = tmp_path / "symbols" / "lib"
    folder.mkdir(parents=True, exist_ok=True)
    for f in files:
        (folder / f.name).symlink_to(f.resolve())
    return folder.parent


def gcc(tmp_path: Path, name: str, source: str, *flags: str, compiler: str = "gcc", suffix: str = ".c") -> Path:
    _tool(compiler)
    src = tmp_path / f"{name}{suffix}"
    src.write_text(source)
    out = tmp_path / name
    subprocess.run([compiler, "-shared", "-fPIC", "-O1", "-o", str(out), str(src), *flags],
                   check=True, capture_output=True, timeout=120)
    return out


def lld_flags() -> list[str]:
    for folder in sorted(Path("/usr/lib").glob("llvm-*/bin"), reverse=True):
        if (folder / "ld.lld").exists():
            return [f"-B{folder}", "-fuse-ld=lld"]
    if shutil.which("ld.lld"):
        return ["-fuse-ld=lld"]
    pytest.skip("ld.lld is not installed (lld-15, listed in .ci/apt-packages)")


# -- the real libamdhip64.so.5 ---------------------------------------------------------------

def test_index_has_the_exported_functions_nm_lists(hip: Path) -> None:
    index = elf.load_index(hip)
    assert index.table == "dynsym" and index.build_id == _build_id(hip)
    ours = {(index.starts[i], index.sizes[i]) for i in range(len(index))}
    theirs = {(a, s) for a, s, _ in nm_functions(hip)}
    assert ours == theirs


def test_inside_exported_functions_named_like_nm_and_addr2line(hip: Path) -> None:
    functions = sorted(f for f in nm_functions(hip) if f[1] > 16)
    chosen = functions[:: max(1, len(functions) // 25)]
    offsets = [a + s // 2 for a, s, _ in chosen]
    case = symbolized(stack(hip.name, *offsets), binaries=[hip])
    names_at = {}
    for a, _, n in nm_functions(hip):
        names_at.setdefault(a, set()).add(n)
    addr2line = _run("addr2line", "-f", "-C", "-e", str(hip), *[hex(o - (i > 0)) for i, o in enumerate(offsets)])
    a2l_names = addr2line.splitlines()[::2]
    for i, (frame, (address, size, _)) in enumerate(zip(case.stacks[0].frames, chosen)):
        assert frame.symbol_source == "dynsym", frame
        assert frame.symbol in names_at[address]
        assert frame.symbol == a2l_names[i] or a2l_names[i] in names_at[address]
        assert frame.symbol_offset == size // 2


def test_outside_any_sized_export_is_nearest_export_and_unreliable(hip: Path) -> None:
    functions = sorted(nm_functions(hip))
    text = next(s for s in load_segments(hip) if s[3])
    gaps = [(a, s, n) for (a, s, n), (b, _, _) in zip(functions, functions[1:])
            if b - (a + s) > 8 and text[1] <= a + s < text[1] + text[2]][:10]
    assert gaps, "the library has gaps between exported functions (internal code)"
    offsets = [a + s + 4 for a, s, _ in gaps]
    case = symbolized(stack(hip.name, *offsets), binaries=[hip])
    addr2line = _run("addr2line", "-f", "-C", "-e", str(hip), *[hex(o - (i > 0)) for i, o in enumerate(offsets)])
    a2l_names = addr2line.splitlines()[::2]
    for i, (frame, (_, size, name)) in enumerate(zip(case.stacks[0].frames, gaps)):
        assert frame.symbol_source == "nearest-export"
        assert frame.symbol == name == a2l_names[i]
        assert frame.symbol_note.startswith("unreliable: 0x4 bytes past the end")
        assert frame.symbol_offset == size + 4


def test_kernel_file_offsets_convert_with_readelf_program_headers(hip: Path) -> None:
    offset_, vaddr, _, _ = next(s for s in load_segments(hip) if s[3])
    target = next(a for a, s, _ in sorted(nm_functions(hip)) if s > 16) + 8
    file_offset = target - vaddr + offset_
    text = f"kernel: app[7]: segfault at 8 ip 00007f3c2a{target:06x} sp 0 error 4 in {hip.name}[{file_offset:x},7f3c2a000000+39e000]\n"
    case = symbolized(text, binaries=[hip])
    assert case.fault.offset == target
    assert "program headers of bundle: libamdhip64.so.5" in case.fault.offset_note
    assert case.fault.symbol_source == "dynsym"


def test_old_kernel_form_converts_from_the_executable_mapping_start(hip: Path) -> None:
    _, vaddr, _, _ = next(s for s in load_segments(hip) if s[3])
    target = 0x293AB5
    vm_start = 0x7F3C2A000000 + (vaddr & ~0xFFF)
    ip = vm_start + target - (vaddr & ~0xFFF)
    text = f"kernel: app[7]: segfault at 8 ip {ip:016x} sp 0 error 4 in {hip.name}[{vm_start:x}+39e000]\n"
    case = symbolized(text, binaries=[hip])
    assert case.fault.offset == target and "executable LOAD segment" in case.fault.offset_note
    without = symbolized(text)
    assert without.fault.offset is None and "program headers" in without.fault.offset_note


def test_symbols_folder_by_file_name_and_version(hip: Path, tmp_path: Path) -> None:
    folder = link_folder(tmp_path, hip.resolve())  # libamdhip64.so.5.2.21153
    log = ":3:hip_context.cpp  :62  :  HIP Version: 5.2.21153-0, Direct Dispatch: 1\n"
    case = symbolized(log + stack(hip.name, 0x293AB5), symbols=folder)
    frame = case.stacks[0].frames[0]
    assert frame.symbol_source == "dynsym" and frame.symbol_note is None
    other = symbolized(stack("libamdhip64.so.6", 0x293AB5), symbols=folder)
    assert other.stacks[0].frames[0].symbol is None, "another major version must not be used"


def test_build_id_mismatch_is_not_used(hip: Path, tmp_path: Path) -> None:
    folder = link_folder(tmp_path, hip)
    case = symbolized(stack(hip.name, 0x293AB5), symbols=folder, build_ids={hip.name: "00" * 20})
    assert case.stacks[0].frames[0].symbol is None
    case = symbolized(stack(hip.name, 0x293AB5), symbols=folder, build_ids={hip.name: _build_id(hip)})
    assert case.stacks[0].frames[0].symbol_source == "dynsym"


def _build_id(path: Path) -> str:
    return re.search(r"Build ID: ([0-9a-f]+)", _run("readelf", "-n", str(path)))[1]


# -- libraries built here ---------------------------------------------------------------------

def test_symtab_kept_names_static_functions_stripped_falls_back_to_dynsym(tmp_path: Path) -> None:
    full = gcc(tmp_path, "libdemo.so.1", C_SOURCE)
    stripped = tmp_path / "stripped" / "libdemo.so.1"
    stripped.parent.mkdir()
    subprocess.run([_tool("strip"), "-o", str(stripped), str(full)], check=True)
    assert ".symtab" not in _run("readelf", "-SW", str(stripped))
    hidden_at, hidden_size, _ = next(f for f in nm_functions(full, dynamic=False) if f[2] == "hidden")
    exported_at, exported_size, _ = next(f for f in nm_functions(full) if f[2] == "exported_api")
    text = stack("libdemo.so.1", hidden_at + 1, exported_at + 1 + 1)
    kept = symbolized(text, binaries=[full]).stacks[0].frames
    assert [(f.symbol, f.symbol_source) for f in kept] == [("hidden", "symtab"), ("exported_api", "symtab")]
    bare = symbolized(text, binaries=[stripped]).stacks[0].frames
    assert bare[0].symbol_source in ("nearest-export", None) and bare[0].symbol != "hidden"
    assert (bare[1].symbol, bare[1].symbol_source) == ("exported_api", "dynsym")


def test_cxx_names_are_demangled_like_nm(tmp_path: Path) -> None:
    if not available():
        pytest.skip("libstdc++'s __cxa_demangle cannot be loaded here")
    lib = gcc(tmp_path, "libwidget.so", CXX_SOURCE, compiler="g++", suffix=".cpp")
    address, _, name = next(f for f in nm_functions(lib) if "frob" in f[2])
    case = symbolized(stack("libwidget.so", address + 1), binaries=[lib])
    assert case.stacks[0].frames[0].symbol == name == "ns::Widget::frob(int)"


def test_debuginfod_layout_by_build_id(tmp_path: Path) -> None:
    lib = gcc(tmp_path, "libdemo.so.1", C_SOURCE, "-Wl,--build-id")
    build_id = _build_id(lib)
    debug = tmp_path / "store" / ".build-id" / build_id[:2] / f"{build_id[2:]}.debug"
    debug.parent.mkdir(parents=True)
    subprocess.run([_tool("objcopy"), "--only-keep-debug", str(lib), str(debug)], check=True)
    hidden_at = next(f for f in nm_functions(lib, dynamic=False) if f[2] == "hidden")[0]
    case = symbolized(stack("libdemo.so.1", hidden_at), symbols=tmp_path / "store", build_ids={"libdemo.so.1": build_id})
    assert (case.stacks[0].frames[0].symbol, case.stacks[0].frames[0].symbol_source) == ("hidden", "symtab")
    cache = tmp_path / "dbg" / build_id
    cache.mkdir(parents=True)
    shutil.copy(debug, cache / "debuginfo")
    case = symbolized(stack("libdemo.so.1", hidden_at), symbols=tmp_path / "dbg", build_ids={"libdemo.so.1": build_id})
    assert case.stacks[0].frames[0].symbol == "hidden"


def test_lld_text_segment_delta_converts_kernel_offsets(tmp_path: Path) -> None:
    lib = gcc(tmp_path, "libdelta.so.1", C_SOURCE, *lld_flags())
    offset_, vaddr, _, _ = next(s for s in load_segments(lib) if s[3])
    assert vaddr - offset_ == 0x1000, "lld places the text segment 0x1000 above its file offset"
    target = next(f for f in nm_functions(lib) if f[2] == "exported_api")[0] + 2
    text = (f"Signal: 11 (SEGV)\n"
            f"kernel: app[7]: segfault at 0 ip 1 sp 0 error 4 in libdelta.so.1[{target - 0x1000:x},7f0000001000+1000]\n")
    case = symbolized(text, binaries=[lib])
    assert case.fault.offset == target and "- p_offset 0x" in case.fault.offset_note
    assert case.fault.symbol == "exported_api" and case.fault.symbol_source == "symtab"


def test_return_addresses_are_looked_up_one_byte_earlier(tmp_path: Path) -> None:
    lib = gcc(tmp_path, "libret.so.1", C_SOURCE, *lld_flags())
    functions = sorted(f for f in nm_functions(lib, dynamic=False) if f[1])
    pairs = [(a, b) for a, b in zip(functions, functions[1:]) if a[0] + a[1] == b[0]]
    if not pairs:
        pytest.skip("no two functions are adjacent in this build")
    before, after = pairs[0]
    frames = symbolized(stack("libret.so.1", after[0], after[0]), binaries=[lib]).stacks[0].frames
    assert frames[0].symbol == after[2] and frames[1].symbol == before[2]
    assert frames[1].symbol_offset == before[1]


def test_outside_every_segment_is_flagged_not_named(tmp_path: Path) -> None:
    lib = gcc(tmp_path, "libdemo.so.1", C_SOURCE)
    frame = symbolized(stack("libdemo.so.1", 0x7FFFFFF), binaries=[lib]).stacks[0].frames[0]
    assert frame.symbol is None and "outside every LOAD segment" in frame.symbol_note


# -- cache and bad input ------------------------------------------------------------------------

def test_second_index_load_comes_from_the_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lib = gcc(tmp_path, "libdemo.so.1", C_SOURCE)
    monkeypatch.setenv("TRIAGE_CACHE", str(tmp_path / "cache"))
    builds = []
    real_build = elf.build
    monkeypatch.setattr(elf, "build", lambda *a: builds.append(1) or real_build(*a))
    elf._index.cache_clear()
    first = elf.load_index(lib)
    assert builds == [1] and list((tmp_path / "cache" / "symbols").glob("*.pickle"))
    elf._index.cache_clear()  # a new process: only the disk cache is left
    second = elf.load_index(lib)
    assert builds == [1]
    assert list(second.starts) == list(first.starts) and second.strings == first.strings
    monkeypatch.setenv("TRIAGE_CACHE", "0")
    elf._index.cache_clear()
    elf.load_index(lib)
    assert builds == [1, 1]


def test_corrupt_elf_in_the_bundle_is_a_warning() -> None:
    junk = b"\x7fELF\x02\x01\x01" + b"\0" * 9 + b"\x03\x00\x3e\x00" + b"\xff" * 200
    case = parse([artifact(stack("libbad.so.1", 0x1234), "stack.txt"),
                  Artifact(name="libbad.so.1", text="", size=len(junk), data=junk)])
    symbolize(case, FRAMES)
    assert case.stacks[0].frames[0].symbol is None
    assert any("libbad.so.1: not a readable ELF" in w for w in case.warnings)
    assert not any("binary file" in w for w in case.warnings)


def test_missing_symbols_folder_is_a_warning(tmp_path: Path) -> None:
    case = symbolized(stack("libx.so.1", 0x10), symbols=tmp_path / "nope")
    assert any("no such folder" in w for w in case.warnings)


def test_cli_rejects_a_missing_symbols_folder(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "triage", "-", "--symbols", str(tmp_path / "nope")],
                          input=b"x\n", capture_output=True, timeout=120)
    assert done.returncode == 2 and b"Traceback" not in done.stderr and b"--symbols" in done.stderr


def test_windows_export_relative_names_keep_their_flag() -> None:
    """Seed 002: a PE frame named by a far-away export stays flagged; no ELF can rename it."""
    text = ("Exception Code: 0xC0000005\n0x00007FFEF984A7FE, .../engine/amdhip64_7.dll(0x00007FFEF9010000) + 0x83A7FE, "
            "hsa_system_get_major_extension_table() + 0x3AD1DE\n")
    case = symbolized(text)
    frame = case.stacks[0].frames[0]
    assert (frame.symbol, frame.symbol_source) == ("hsa_system_get_major_extension_table", "nearest-export")
    assert frame.symbol_note.startswith("unreliable: 0x3AD1DE bytes past the export")
    assert case.fault.symbol_source == "nearest-export"


def test_cli_symbols_option_names_frames_in_the_json_report(hip: Path, tmp_path: Path) -> None:
    paste = tmp_path / "stack.txt"
    paste.write_text("Signal: 11 (SEGV)\n" + stack(hip.name, 0x293AB5))
    done = subprocess.run([sys.executable, "-m", "triage", str(paste), "--symbols", str(link_folder(tmp_path, hip)),
                           "-f", "json"], capture_output=True, timeout=120)
    report = json.loads(done.stdout)
    frame = report["stacks"][0]["frames"][0]
    assert (frame["symbol"], frame["symbol_source"]) == ("hipCreateSurfaceObject(__hip_surface**, hipResourceDesc const*)",
                                                         "dynsym")
    assert report["fault"]["symbol_source"] == "dynsym"


# -- the one ELF reader (triage/elf.py) -------------------------------------------------------

def test_sections_and_build_id_agree_with_readelf(hip: Path) -> None:
    """Section names, offsets and sizes as ``readelf -SW`` lists them (NOBITS left out), and the build-id."""
    from triage.elf import build_id, open_elf, sections

    _tool("readelf")
    listed = []
    for line in _run("readelf", "-SW", str(hip)).splitlines():
        m = re.match(r"^\s*\[\s*\d+\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", line)
        if m and m[2] != "NOBITS":
            listed.append((m[1], int(m[3], 16), int(m[4], 16)))
    data = hip.read_bytes()
    assert len(listed) > 20 and sections(data) == [("", 0, 0)] + listed[1:]  # readelf names section 0 by its type
    with open(hip, "rb") as stream:
        assert build_id(open_elf(stream), stream) == _build_id(hip)


def test_cut_or_foreign_bytes_read_as_nothing(hip: Path) -> None:
    from triage.elf import ElfError, gnu_build_id, open_elf, sections

    data = hip.read_bytes()
    assert sections(data[:4096]) == [] and sections(b"MDMP" + data[4:]) == []
    notes = bytes.fromhex("040000001400000003000000474e5500") + bytes(range(20))
    assert gnu_build_id(notes) == bytes(range(20)).hex() and gnu_build_id(notes[:30]) is None
    with pytest.raises(ElfError):
        open_elf(io.BytesIO(b"\x7fELF\x02\x01" + bytes(10)))
