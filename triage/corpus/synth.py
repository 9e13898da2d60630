"""A synthetic corpus for benchmarks: N realistic cases made by varying the real ones. Never for accuracy claims.

    python -m triage.corpus.synth OUT --cases 1000 [--size-kb 100] [--seed 0] [--unknown 0.1]

Each case starts from a real case (``corpus/`` and, when present, ``../shared/realworld``)
and varies what differs between two users with the same crash: absolute addresses, pids,
user names in paths, the GPU's gfx arch, the ROCm version; it adds the noise lines a
long run prints (the runtime's API trace, the application's progress) up to the size asked,
and takes one of the forms users send: a folder, one pasted file, a .zip, a .log.gz. A share of
cases are planted unknown crashes (``FAMILIES``): variants of a few crashes no signature
knows, to check that clustering puts each family in one cluster.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import io
import random
import re
import shutil
import sys
import zipfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
ARCHS = ("gfx1201", "gfx1200", "gfx1100", "gfx1101", "gfx1102", "gfx1030", "gfx1151", "gfx90a", "gfx942", "gfx906")
ROCM = ("6.2.4", "6.3.3", "6.4.1", "7.0.2", "7.1.1", "7.2.3")
# A planted unknown crash runs on a GPU its ROCm release supports (signatures/tables/rocm-support.yaml):
# an unsupported pair would be a known failure, not an unknown one.
SUPPORTED = (("gfx1201", "7.0.2"), ("gfx1200", "7.1.1"), ("gfx1100", "6.4.1"), ("gfx1101", "7.2.3"),
             ("gfx1030", "6.3.3"), ("gfx1151", "7.1.1"), ("gfx90a", "6.2.4"), ("gfx942", "7.0.2"))
USERS = ("alice", "bob", "chen", "dmitri", "emma", "farid", "gita", "hugo")

_ADDRESS = re.compile(r"0x0*7[fF][0-9a-fA-F]{8,12}\b")
_PID = re.compile(r"(?<=\[)\d{3,7}(?=\])|(?<=pid:)\d+")
_HOME = re.compile(r"(?<=/home/)[\w.-]+|(?<=\\Users\\)[\w.-]+")
_GFX = re.compile(r"\bgfx(?:1[0-2]\d{2}|9\d[\da-f]|\d{3}[a-f]?)\b")
_ROCM = re.compile(r"(?<=ROCm )\d+\.\d+\.\d+")

# Planted unknown crashes: {n} numbers, {x} addresses, {u} a user name; each family one crash.
FAMILIES: dict[str, tuple[str, ...]] = {
    "kv-split": (
        "engine: loading /home/{u}/models/model-{n}.gguf ({n} MiB)",
        "engine: ERROR kv-cache split mismatch: expected {n} heads, got {n} (layer {n})",
        "engine: fatal: giving up after {n} retries at {x}",
        'Thread 1 "engine" received signal SIGABRT, Aborted.',
        "#0  {x} in __pthread_kill_implementation () from /lib/x86_64-linux-gnu/libc.so.6",
        "#1  {x} in raise () from /lib/x86_64-linux-gnu/libc.so.6",
        "#2  {x} in abort () from /lib/x86_64-linux-gnu/libc.so.6",
        "#3  {x} in kvcache::Split::validate(int) () from /opt/engine/lib/libengine.so.2",
        "#4  {x} in kvcache::Split::apply() () from /opt/engine/lib/libengine.so.2",
        "#5  {x} in main ()",
    ),
    "interop-semaphore": (
        "renderer: created swapchain {n}x{n} on device {n}",
        "renderer: interop semaphore {x} cannot be imported: handle type {n} unsupported by the importer",
        "renderer: queue submit returned status -4 after {n} frames",
        'Thread 7 "render" received signal SIGSEGV, Segmentation fault.',
        "#0  {x} in interop::Semaphore::signal(unsigned long) () from /usr/lib/libvkinterop.so.1",
        "#1  {x} in interop::Queue::present() () from /usr/lib/libvkinterop.so.1",
        "#2  {x} in render_loop () from /home/{u}/app/librender.so",
    ),
    "watchdog-deadlock": (
        "worker {n}: watchdog: no progress for {n} s on queue {x}, dumping state to /tmp/dump-{n}.txt",
        "worker {n}: fatal: deadlock detected between stream {n} and stream {n} (ticket {n})",
        "supervisor: worker {n} terminated, restarting ({n} of {n})",
    ),
}


@dataclass
class Template:
    name: str
    files: dict[str, str]


def real_cases(realworld: Path | None = None) -> list[Template]:
    """The real cases to vary: every case folder of ``corpus/`` and the ``input.txt`` of each real-world case."""
    out = []
    for folder in sorted((ROOT / "corpus").glob("*/expected.yaml")):
        case = folder.parent
        out.append(Template(case.name, {p.name: p.read_text(encoding="utf-8", errors="replace")
                                        for p in sorted(case.iterdir()) if p.is_file() and p.name != "expected.yaml"}))
    realworld = realworld if realworld is not None else ROOT.parent / "shared" / "realworld"
    for file in sorted(realworld.glob("*/input.txt")) if realworld.is_dir() else []:
        out.append(Template(file.parent.name, {"input.txt": file.read_text(encoding="utf-8", errors="replace")}))
    return out


_NOISE_PID = "{pid}"  # in the noise pool: the case's one process, filled in per case


def _noise_pool(rng: random.Random, count: int = 4000) -> list[str]:
    """Lines a long run prints that concern nothing: the runtime's API trace (of one process, a few threads)
    and the application's progress."""
    lines = []
    tids = [f"0x7f{rng.randrange(16 ** 10):010x}" for _ in range(4)]
    for i in range(count):
        kind = rng.random()
        tid = rng.choice(tids)
        if kind < 0.45:
            call = rng.choice(("hipMalloc", "hipMemcpyAsync", "hipLaunchKernel", "hipStreamSynchronize", "hipFree"))
            lines.append(f":3:hip_{rng.choice(('memory', 'platform', 'stream'))}.cpp :{rng.randint(10, 900)} : "
                         f"{rng.randint(10 ** 6, 10 ** 9)} us: [pid:{_NOISE_PID} tid:{tid}]  {call} "
                         f"( 0x{rng.randrange(16 ** 12):012x}, {rng.randint(1, 1 << 30)} ) ")
        elif kind < 0.7:
            lines.append(f":4:rocvirtual.cpp :{rng.randint(10, 3000)} : {rng.randint(10 ** 6, 10 ** 9)} us: "
                         f"[pid:{_NOISE_PID} tid:{tid}] Signal = (0x{rng.randrange(16 ** 8):x}), "
                         f"Elapsed = {rng.randint(1, 10 ** 6)} ns, ticks start/end = {rng.randint(1, 10 ** 9)} / "
                         f"{rng.randint(1, 10 ** 9)}")
        else:
            lines.append(f"step {i}: loss={rng.random():.4f} lr={rng.random() / 1000:.6f} "
                         f"tokens/s={rng.randint(100, 9000)} mem={rng.randint(1, 24000)} MiB")
    return lines


class Generator:
    """Makes cases one by one from a seed; the same seed gives the same corpus."""

    def __init__(self, seed: int = 0, size_kb: float = 100, unknown: float = 0.1,
                 templates: list[Template] | None = None) -> None:
        self.rng = random.Random(seed)
        self.size = int(size_kb * 1024)
        self.unknown = unknown
        self.templates = templates if templates is not None else real_cases()
        if not self.templates:
            raise ValueError("no real cases to vary (corpus/ is empty)")
        self.noise = _noise_pool(self.rng)

    def _vary(self, text: str, arch: str, rocm: str, user: str) -> str:
        rng = self.rng
        text = _ADDRESS.sub(lambda m: m.group(0)[:4] + "".join(rng.choice("0123456789abcdef")
                                                                for _ in m.group(0)[4:]), text)
        text = _PID.sub(lambda m: str(rng.randint(1000, 999999)), text)
        text = _HOME.sub(user, text)
        text = _ROCM.sub(rocm, text)
        original = _GFX.search(text)
        return text.replace(original.group(0), arch) if original and rng.random() < 0.5 else text

    def _padding(self, have: int) -> str:
        need = self.size - have
        if need <= 0:
            return ""
        out: list[str] = []
        size = 0
        while size < need:
            start = self.rng.randrange(len(self.noise))
            chunk = self.noise[start: start + 200]
            out.extend(chunk)
            size += sum(len(line) + 1 for line in chunk)
        return "\n".join(out).replace(_NOISE_PID, str(self.rng.randint(1000, 99999))) + "\n"

    def family(self, name: str) -> dict[str, str]:
        """One variant of a planted unknown crash."""
        rng = self.rng
        user = rng.choice(USERS)
        lines = [re.sub(r"\{(\w)\}", lambda m: {"n": str(rng.randint(1, 99999)), "u": user,
                                                   "x": f"0x{rng.randrange(16 ** 12):012x}"}[m.group(1)], line)
                 for line in FAMILIES[name]]
        arch, rocm = rng.choice(SUPPORTED)
        return {"app.log": "\n".join(lines) + "\n", "environment.txt": f"GPU: AMD Radeon ({arch})\nROCm {rocm}\n"}

    def case(self) -> tuple[dict[str, str], str]:
        """The files of one case, and what it came from."""
        rng = self.rng
        if rng.random() < self.unknown:
            name = rng.choice(sorted(FAMILIES))
            files, origin = self.family(name), f"planted:{name}"
        else:
            template = rng.choice(self.templates)
            arch, rocm, user = rng.choice(ARCHS), rng.choice(ROCM), rng.choice(USERS)
            files = {n: self._vary(t, arch, rocm, user) for n, t in template.files.items()}
            origin = template.name
        main = max(files, key=lambda n: len(files[n]))
        files[main] = self._padding(sum(map(len, files.values()))) + files[main]
        return files, origin

    def write(self, folder: Path, index: int) -> tuple[Path, str]:
        """Write case number ``index`` under ``folder`` in one of the forms users send; also say what it came from."""
        files, origin = self.case()
        name = f"case-{index:06d}"
        date = f"2026-{self.rng.randint(1, 11):02d}-{self.rng.randint(1, 28):02d}"
        form = self.rng.random()
        if form < 0.55:
            target = folder / name
            target.mkdir(parents=True, exist_ok=True)
            for file, text in files.items():
                (target / file).write_text(text, encoding="utf-8")
            (target / "expected.yaml").write_text(f"# synthetic, from {origin}\ndate: {date}\n", encoding="utf-8")
            return target, origin
        pasted = "\n".join(f"--- {file} ---\n{text}" for file, text in files.items())
        if form < 0.75:
            target = folder / f"{name}.txt"
            target.write_text(pasted, encoding="utf-8")
        elif form < 0.92:
            target = folder / f"{name}.zip"
            buffer = io.BytesIO()
            with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
                for file, text in files.items():
                    archive.writestr(file, text)
            target.write_bytes(buffer.getvalue())
        else:
            target = folder / f"{name}.log.gz"
            target.write_bytes(gzip.compress(pasted.encode("utf-8"), compresslevel=1))
        return target, origin


def generate(folder: Path, cases: int, seed: int = 0, size_kb: float = 100, unknown: float = 0.1) -> list[Path]:
    """Write ``cases`` synthetic cases under ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    generator = Generator(seed, size_kb, unknown)
    return [generator.write(folder, i)[0] for i in range(cases)]


def reuse_or_generate(folder: Path, cases: int, seed: int = 0, size_kb: float = 100) -> tuple[list[Path], bool]:
    """The cases of a corpus made before with the same settings and this generator's code, else a new one
    (for benchmarks, which time many runs over one corpus); also say whether it was made now."""
    stamp = folder / ".params"
    params = f"{cases} {size_kb} {seed} {hashlib.sha256(Path(__file__).read_bytes()).hexdigest()[:12]}"
    made = not (stamp.is_file() and stamp.read_text() == params)
    if made:
        shutil.rmtree(folder, ignore_errors=True)
        generate(folder, cases, seed=seed, size_kb=size_kb)
        stamp.write_text(params)
    return sorted(p for p in folder.iterdir() if not p.name.startswith(".")), made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--size-kb", type=float, default=100, help="about this many KiB of text per case")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--unknown", type=float, default=0.1, help="share of planted unknown crashes")
    args = parser.parse_args(argv)
    try:
        written = generate(args.out, args.cases, args.seed, args.size_kb, args.unknown)
    except (OSError, ValueError) as err:
        print(f"synth: {err}", file=sys.stderr)
        return 2
    print(f"{len(written)} cases in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
