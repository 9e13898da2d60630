"""ELF symbol index: build time, cached load time and lookups per second on a large library.

    python bench/bench_symbolize.py [--library PATH] [--runs 5] [--lookups 200000]

By default the largest of Debian's ROCm/LLVM libraries installed here (libLLVM-15.so.1 from
libllvm15, or libamd_comgr.so.2 from libamd-comgr2). Times, as medians over the runs:
the cold index build (no cache: the symbol table read and sorted, then cached), the cached
load (what every later triage pays), lookups of random addresses in the text segment (bare,
and with the demangled name), and ``nm -D --defined-only`` on the same file for scale, with
the ratios measured in the same run.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from triage.symbolize import elf
from triage.symbolize.demangle import demangle

CANDIDATES = ("libLLVM-15.so.1", "libLLVM-14.so.1", "libamd_comgr.so.2", "libamdhip64.so.5")
LIBDIR = Path("/usr/lib/x86_64-linux-gnu")


def largest_library() -> Path | None:
    found = [LIBDIR / name for name in CANDIDATES if (LIBDIR / name).exists()]
    return max(found, key=lambda p: p.resolve().stat().st_size, default=None)


def timed(action: object, runs: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(runs):
        started = time.perf_counter()
        result = action()  # type: ignore[operator]
        times.append(time.perf_counter() - started)
    return statistics.median(times), result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--library", type=Path, help="ELF library to index (default: the largest Debian one here)")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--lookups", type=int, default=200_000)
    args = parser.parse_args()
    library = args.library or largest_library()
    if library is None or not library.exists():
        sys.exit("no library to index: apt-get install libllvm15 (or libamd-comgr2), or pass --library")

    with tempfile.TemporaryDirectory() as cache:
        os.environ["TRIAGE_CACHE"] = cache

        def cold() -> elf.SymbolIndex:
            shutil.rmtree(Path(cache) / "symbols", ignore_errors=True)
            elf._index.cache_clear()  # the per-process memo of indexes
            return elf.load_index(library)

        def cached() -> elf.SymbolIndex:
            elf._index.cache_clear()  # the per-process memo of indexes
            return elf.load_index(library)

        cold_s, index = timed(cold, args.runs)
        cached_s, _ = timed(cached, args.runs)

    text = next(s for s in index.segments if s.executable)
    rng = random.Random(5)
    addresses = [rng.randrange(text.vaddr, text.vaddr + text.memsz) for _ in range(args.lookups)]
    lookup_s, _ = timed(lambda: [index.lookup(a) for a in addresses], args.runs)
    sample = addresses[: max(1, args.lookups // 10)]
    named_s, _ = timed(lambda: [demangle(h.name) for a in sample if (h := index.lookup(a))], args.runs)
    nm = shutil.which("nm")
    nm_s = None
    if nm:
        nm_s, _ = timed(lambda: subprocess.run([nm, "-D", "--defined-only", str(library)], stdout=subprocess.DEVNULL,
                                               check=True), args.runs)

    size = library.resolve().stat().st_size
    print(f"library          {library} ({size / 2**20:.1f} MiB, {len(index)} functions from .{index.table}, "
          f"build-id {index.build_id})")
    print(f"runs             {args.runs} (medians)")
    print(f"index, cold      {cold_s * 1000:8.1f} ms   (read, sort, write the cache)")
    print(f"index, cached    {cached_s * 1000:8.1f} ms   ({cold_s / cached_s:.0f}x faster than cold)")
    print(f"lookups          {args.lookups / lookup_s:12,.0f} /s   (random text addresses, bare)")
    print(f"lookups+names    {len(sample) / named_s:12,.0f} /s   (with the demangled name)")
    if nm_s is not None:
        print(f"nm -D --defined-only {nm_s * 1000:8.1f} ms   (cold index {nm_s / cold_s:.2f}x nm's speed, "
              f"cached {nm_s / cached_s:.0f}x)")


if __name__ == "__main__":
    main()
