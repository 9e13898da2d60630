"""Fuzz the bundle reader, every parser and the whole pipeline with hypothesis.

    python tools/fuzz.py --examples 100000 [--targets reader_bytes,amdlog_text,...] [--engine atheris]

Not part of the test run. Prints, per target, the inputs tried and the exceptions raised
(and the first traceback of each kind); exits 1 if any target raised. Needs hypothesis
(``pip install hypothesis``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests" / "adversarial"))

try:
    from hypothesis import HealthCheck, Phase, given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover
    sys.exit("tools/fuzz.py needs hypothesis: pip install hypothesis")

import make  # noqa: E402  tests/adversarial/make.py: seed archives to mutate

from triage.ingest.reader import Limits, read_inputs  # noqa: E402
from triage.errors import INTERNAL  # noqa: E402
from triage.model import Artifact, Case  # noqa: E402
from triage.parsers import FINISHERS, LINE_PARSERS  # noqa: E402

FRAGMENTS = [
    ":3:hip_code_object.cpp :507 : 1234 us: [pid:1 tid:0x7f] ", ":1:rocdevice.cpp :2 : ", "Segmentation fault (core dumped)",
    "#0  0x00007f3a in hipModuleLoad (a=1) at x.cpp:3", "#1 0x0000 n/a (libamdhip64.so.6 + 0x4b71c9)", " from /opt/rocm/lib/x.so",
    "Signal: 11 (SEGV)", "si_code: SEGV_MAPERR", "Stack trace of thread 42:", "Thread 1 (", "rax 0x0 0", "=> 0x7f: mov (%rax),%rdx",
    "app[123]: segfault at 0 ip 00007f sp 00007ff error 4 in libamdhip64.so[7f00,7f00+1000]", "traps: x[1] general protection fault",
    "Exception Code: 0xC0000005", "0x00007FF8, C:\\Windows\\System32\\amdhip64_6.dll(0x7FF8) + 0x10, hipMalloc() + 0x20",
    "Faulting module name: amdhip64.dll", "3221225477", "-1073741819", "exit code 139", "GPU 0: Radeon RX 7900 XTX (gfx1100)",
    "Name: gfx1201", "Gfx Major 11", "ROCm version: 6.2.1", "HIP 6.2.41133", "LD_LIBRARY_PATH=/opt/rocm/lib", "LD_PRELOAD=x.so",
    "HSA_OVERRIDE_GFX_VERSION=11.0.0", "openat(AT_FDCWD, \"/opt/rocm/lib/x\", O_RDONLY) = -1 ENOENT (No such file or directory)",
    "-rw-r--r-- 1 u u 123 Jan 1 00:00 libamdhip64.so.6", "133 hipv4-amdgcn-amd-amdhsa--gfx1100", "Windows 11 Pro", "kernel 6.8.0-45",
    "amdgpu 6.8.5", "[  12.5] amdgpu 0000:03:00.0: ", "(", ")", "[", "]", "::", "+", "0x", "=", "#", "\t", "/", "\\", "\x00", "\x1b[31m",
]

line = st.one_of(
    st.lists(st.one_of(st.sampled_from(FRAGMENTS), st.text(max_size=12)), max_size=8).map("".join),
    st.text(max_size=80),
)
text = st.lists(line, max_size=30).map("\n".join)
MAGICS = [b"", b"MDMP\x93\xa7\x00\x00", b"\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x04\x00>\x00", b"\x7fELF"]
binary = st.tuples(st.sampled_from(MAGICS), st.binary(max_size=2048)).map(lambda t: t[0] + t[1])


def _seeds() -> list[bytes]:
    small = make.small_inputs()
    return [small[n] for n in ("bundle.tar", "bundle.tgz", "bundle.tar.bz2", "bundle.tar.xz", "traversal.zip",
                               "symlink.zip", "links.tar", "mixed-nesting.bin", "truncated.zip")]


SEEDS = _seeds()


def _mutate(draw, seeds: list[bytes]) -> bytes:
    data = bytearray(draw(st.sampled_from(seeds)))
    for _ in range(draw(st.integers(0, 8))):
        how = draw(st.integers(0, 3))
        at = draw(st.integers(0, max(len(data) - 1, 0)))
        if how == 0 and data:
            data[at] = draw(st.integers(0, 255))
        elif how == 1:
            del data[at:]
        elif how == 2:
            data[at:at] = draw(st.binary(max_size=64))
        else:
            del data[at: at + draw(st.integers(1, 512))]
    return bytes(data)


@st.composite
def mutated(draw) -> bytes:
    return _mutate(draw, SEEDS)


def _binary_seeds() -> dict[str, list[bytes]]:
    """Real minidumps and core files (../shared/realdata, when present) and the ELF test binaries: the
    binary parsers are fuzzed on them mutated, since random bytes never get past a file's magic."""
    import gzip

    shared = ROOT.parent / "shared" / "realdata"
    dumps = [p.read_bytes() for p in sorted((shared / "minidumps").glob("*.dmp"))]
    cores = [gzip.decompress(p.read_bytes()) for p in sorted((shared / "elfcores").glob("*/core.gz"))]
    libraries = [p.read_bytes() for p in sorted((ROOT / "tests" / "fixtures" / "offload").iterdir())
                 if p.is_file() and p.read_bytes()[:4] == b"\x7fELF"]
    return {"minidump": dumps, "elfcore": cores, "elflib": libraries, "fatbin": libraries}


class Target:
    def __init__(self, name: str) -> None:
        self.name, self.inputs, self.exceptions, self.kinds, self.seconds = name, 0, 0, {}, 0.0

    def run(self, fn, *args) -> None:
        self.inputs += 1
        try:
            fn(*args)
        except Exception as err:  # counted and shown, the fuzzing goes on
            self.exceptions += 1
            key = (type(err).__name__, traceback.extract_tb(err.__traceback__)[-1][:2])
            if key not in self.kinds:
                self.kinds[key] = traceback.format_exc()
                print(f"[{self.name}] {type(err).__name__}: {err}\n{self.kinds[key]}", file=sys.stderr)


SMALL = Limits(member_bytes=4 << 20, total_bytes=16 << 20, file_bytes=16 << 20)
_TMP = Path(tempfile.mkdtemp(prefix="triage-fuzz-"))


def _read_bytes(data: bytes) -> None:
    path = _TMP / "input.bin"
    path.write_bytes(data)
    _, warnings = read_inputs([str(path)], limits=SMALL)
    for w in warnings:
        if "could not be read (" in w:  # the reader's last-resort catch: an unforeseen error
            raise RuntimeError(w)


def _internal(case: Case) -> None:
    """A warning of an unforeseen error (triage/errors.py) is a failure like an uncaught exception."""
    for w in case.warnings:
        if INTERNAL in w:
            raise RuntimeError(w)


def _parse_text(parser, text_: str) -> None:
    artifact = Artifact(name="fuzz.log", text=text_, size=len(text_))
    case = Case(artifacts=[artifact], warnings=[])
    parser.parse(artifact, case)
    for finish in FINISHERS:
        finish(case)
    _internal(case)


def _parse_binary(parser, data: bytes) -> None:
    artifact = Artifact(name="fuzz.dmp", text="", size=len(data), data=data)
    case = Case(artifacts=[artifact], warnings=[])
    parser.parse(artifact, case)
    for finish in FINISHERS:
        finish(case)
    _internal(case)


def _analyzer():
    from triage.match import load
    from triage.pipeline import analyze
    from triage.resources import data_dir

    folder = data_dir("signatures")
    db = load(folder)

    def run(text_: str, data: bytes) -> None:
        artifacts = [Artifact(name="a.log", text=text_, size=len(text_)),
                     Artifact(name="b.dmp", text="", size=len(data), data=data)]
        _internal(analyze(artifacts, db, folder).case)

    return run


def _targets() -> dict[str, tuple]:
    """Name -> (strategy, function). Text and binary inputs are drawn once and given to every
    line parser, each counted as its own target: generating inputs costs more than parsing them."""
    analyze_run = _analyzer()
    targets: dict[str, tuple] = {
        "reader_bytes": (st.binary(max_size=4096), _read_bytes),
        "reader_mutated": (mutated(), _read_bytes),
    }
    for module in LINE_PARSERS:
        short = module.__name__.rsplit(".", 1)[-1]
        targets[f"{short}_text"] = (text, lambda t, m=module: _parse_text(m, t))
        targets[f"{short}_binary"] = (binary, lambda b, m=module: _parse_binary(m, b))
    for short, seeds in _binary_seeds().items():
        if seeds:
            module = next(m for m in LINE_PARSERS if m.__name__.endswith("." + short))
            strategy = st.composite(lambda draw, s=seeds: _mutate(draw, s))()
            targets[f"{short}_mutated"] = (strategy, lambda b, m=module: _parse_binary(m, b))
    targets["analyze"] = (st.tuples(text, binary), lambda pair: analyze_run(*pair))
    return targets


def _hypothesis(targets: dict[str, tuple], chosen: list[str], examples: int) -> list[Target]:
    config = settings(max_examples=examples, deadline=None, database=None, derandomize=False,
                      phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    groups: dict[int, list[str]] = {}
    for name in chosen:  # targets sharing one strategy object run off the same drawn inputs
        groups.setdefault(id(targets[name][0]), []).append(name)
    done = []
    for names in groups.values():
        strategy = targets[names[0]][0]
        members = [(Target(n), targets[n][1]) for n in names]
        started = time.monotonic()

        def make_fuzz(members: list = members):
            @config
            @given(strategy)
            def fuzz(value) -> None:
                for target, fn in members:
                    target.run(fn, value)

            return fuzz

        make_fuzz()()
        for target, _ in members:
            target.seconds = (time.monotonic() - started) / len(members)
            _print(target)
        done += [t for t, _ in members]
    return done


def _atheris(chosen: list[str], examples: int) -> list[Target]:
    """One libFuzzer process per target (coverage-guided), started from the seed corpus."""
    import subprocess

    done = []
    for name in chosen:
        target, started = Target(name), time.monotonic()
        report = _TMP / f"{name}.exceptions"
        proc = subprocess.run([sys.executable, __file__, "--atheris-child", name, f"-runs={examples}",
                               "-max_len=8192", "-rss_limit_mb=4096", "-print_final_stats=1"],
                              capture_output=True, text=True, env={**os.environ, "TRIAGE_FUZZ_REPORT": str(report)})
        runs = [int(line.split()[1]) for line in proc.stderr.splitlines() if line.startswith("stat::number_of_executed_units:")]
        target.inputs = runs[-1] if runs else 0
        target.exceptions = len(report.read_text().split("\0")) - 1 if report.exists() else 0
        if proc.returncode or not runs:
            target.exceptions = max(target.exceptions, 1)
            print(f"[{name}] libFuzzer ended with {proc.returncode}:\n{proc.stderr[-3000:]}", file=sys.stderr)
        target.seconds = time.monotonic() - started
        _print(target)
        done.append(target)
    return done


def _atheris_child(name: str, argv: list[str]) -> None:
    import atheris

    fn = _targets()[name][1]
    report = Path(os.environ["TRIAGE_FUZZ_REPORT"])
    as_text = name.endswith("_text")

    def one(data: bytes) -> None:
        value = data.decode("utf-8", "replace") if as_text else data
        if name == "analyze":
            value = (data.decode("utf-8", "replace"), data)
        try:
            fn(value)
        except Exception:  # recorded for the parent; the fuzzing goes on
            with report.open("a") as out:
                out.write(traceback.format_exc() + "\0")
            sys.stderr.write(traceback.format_exc())

    corpus = _TMP / f"{name}.corpus"
    corpus.mkdir(exist_ok=True)
    for i, seed in enumerate(SEEDS + [p.read_bytes()[:8192] for p in sorted((ROOT / "corpus").rglob("*.*"))]):
        (corpus / f"seed{i}").write_bytes(seed)
    atheris.instrument_all()  # coverage of the already imported triage modules guides the mutations
    atheris.Setup([sys.argv[0], *argv, str(corpus)], one)
    atheris.Fuzz()


def _print(target: Target) -> None:
    print(f"{target.name:<22} inputs {target.inputs:>8}  exceptions {target.exceptions:>6}  "
          f"({target.seconds:.0f} s)", flush=True)


def main() -> int:
    if len(sys.argv) > 2 and sys.argv[1] == "--atheris-child":
        _atheris_child(sys.argv[2], sys.argv[3:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--examples", type=int, default=100_000, help="inputs per target (default 100000)")
    parser.add_argument("--targets", default="", help="comma-separated subset of targets")
    parser.add_argument("--engine", choices=("hypothesis", "atheris"), default="hypothesis",
                        help="hypothesis (default) or atheris (coverage-guided libFuzzer; pip install atheris)")
    args = parser.parse_args()
    os.environ.setdefault("TRIAGE_CACHE", "0")
    targets = _targets()
    chosen = [t for t in args.targets.split(",") if t] or list(targets)
    unknown = [t for t in chosen if t not in targets]
    if unknown:
        parser.error(f"unknown target {', '.join(unknown)}; targets: {', '.join(targets)}")
    done = (_atheris(chosen, args.examples) if args.engine == "atheris"
            else _hypothesis(targets, chosen, args.examples))
    failed = any(t.exceptions for t in done)
    print("FAIL" if failed else "OK: no uncaught exception")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
