"""The README's commands work after the README's own set-up line, and nothing more.

The set-up line (`pip install '.[X]'`) names the extras a new user has. Every other extra's
packages are made unimportable, and each `triage` command of the README's shell blocks is run
on shipped examples (its placeholders replaced); a command that needs a package the set-up does
not install then fails, or prints a `pip install` hint. Only commands that need hardware or a
program to run (`triage collect`) and the server that runs until Ctrl-C (`triage serve`) are
left out.
"""

from __future__ import annotations

import gzip
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import metadata
from importlib.metadata import packages_distributions
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SEED = ROOT / "corpus" / "seed-000-blit-kernels-device-libs-missing"
SEEDS = sorted((ROOT / "corpus").glob("seed-*"))
SKIPPED = {"collect": "runs a program and reads this machine's GPU, kernel log and cores",
           "serve": "a server that runs until Ctrl-C (tests/test_serve.py runs it)"}
_REQUIREMENT_NAME = re.compile(r"^\s*([A-Za-z0-9][A-Za-z0-9._-]*)")
_BLOCKER = """
import importlib.abc, sys
blocked = frozenset(filter(None, sys.argv[1].split(",")))
class NotInstalled(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ModuleNotFoundError(f"No module named {name!r} (the README's set-up does not install it)", name=name)
        return None
sys.meta_path.insert(0, NotInstalled())
sys.argv = ["triage", *sys.argv[2:]]
from triage.cli import main
main()
"""


def _shell_lines(text: str) -> list[str]:
    """Every command of the README's ```sh blocks, comments dropped, `a && b` split."""
    out: list[str] = []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            line = re.sub(r"\s+#\s.*$", "", line).strip()
            out += [part.strip() for part in line.split("&&") if part.strip()]
    return out


def _name(requirement: str) -> str:
    match = _REQUIREMENT_NAME.match(requirement)
    assert match, requirement
    return re.sub(r"[-_.]+", "-", match.group(1)).lower()


def _names(requirement: str) -> set[str]:
    """The package a requirement names and, for `pkg[extra]`, the packages that extra of it adds."""
    name = _name(requirement)
    extras = re.match(r"[^\[;]*\[([^\]]*)\]", requirement)
    out = {name}
    for extra in (extras.group(1).split(",") if extras else []):
        try:
            requires = metadata.requires(name) or []
        except metadata.PackageNotFoundError:
            continue
        out |= {_name(r) for r in requires if re.search(rf"extra\s*==\s*['\"]{re.escape(extra.strip())}['\"]", r)}
    return out


def setup_extras(text: str) -> set[str]:
    """The extras the README's first command installs (`pip install '.[fast]'` -> {"fast"})."""
    first = _shell_lines(text)[0]
    match = re.fullmatch(r"pip install '\.(?:\[([\w,]*)\])?'", first)
    assert match, f"the README's set-up is not `pip install '.[extras]'`: {first}"
    return set(filter(None, (match.group(1) or "").split(",")))


def blocked_modules(extras: set[str]) -> set[str]:
    """Top-level modules of packages that only extras the set-up leaves out bring."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    installed = set().union(*(_names(r) for r in [*project["dependencies"], *(r for e in extras for r in optional[e])]))
    left_out = set().union(*(_names(r) for e, reqs in optional.items() if e not in extras for r in reqs)) - installed
    return {module for module, dists in packages_distributions().items()
            if module.isidentifier() and {_name(d) for d in dists} <= left_out}


def test_the_setup_lines_name_extras_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extras in re.findall(r"pip install (?:-e )?'(?:\.|hip-triage)\[([\w,]+)\]'", text):
        assert set(extras.split(",")) <= set(optional), extras
    assert "fast" in setup_extras(text)


def test_packages_of_left_out_extras_are_blocked() -> None:
    """The check below has teeth: Dask (only in [dask] and [test]) is blocked, pyarrow and zstandard are not."""
    blocked = blocked_modules(setup_extras(README.read_text(encoding="utf-8")))
    if "distributed" in packages_distributions():
        assert "distributed" in blocked
    assert not {"pyarrow", "zstandard", "pandas", "yaml", "triage"} & blocked


@pytest.fixture(scope="module")
def examples(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    """Shipped examples for the README's placeholders."""
    tmp = tmp_path_factory.mktemp("readme")
    bundle = tmp / "bundle.zip"
    with zipfile.ZipFile(bundle, "w") as archive:
        for file in sorted(SEED.iterdir()):
            if file.name != "expected.yaml":
                archive.write(file, file.name)
    core = tmp / "core.gz"
    core.write_bytes(gzip.compress((SEED / "coredump.txt").read_bytes()))
    corpus = tmp / "corpus"
    for seed in SEEDS:
        shutil.copytree(seed, corpus / seed.name)
    (corpus / "unknown.log").write_text("fatal error: the flux capacitor stopped responding\n"
                                        "Segmentation fault (core dumped)\n", encoding="utf-8")
    binary = str(ROOT / "tests" / "fixtures" / "offload" / "libcompressed.so")
    return {
        "PATH...": str(SEED), "crash.log": str(SEED / "hip.log"), "bundle.zip": str(bundle),
        "report.html": str(tmp / "report.html"), "core.gz": str(core), "DIR": str(SEED),
        "DIR...": str(corpus), "corpus/": str(corpus), "BINARY": binary, "mesh-llm": binary,
        "~/.local/share/strata/components/engine/0.1.52-linux-x86_64-hip-rx9070/": str(SEED),
        "ID": "hip-blit-kernels-device-libs-missing", "cases.parquet": str(tmp / "cases.parquet"),
        "corpus.html": str(tmp / "corpus.html"), "out/": str(tmp / "out"), "reports/": str(tmp / "reports"),
        "OLD": str(tmp / "cases.parquet"), "NEW": str(tmp / "cases.parquet"), "frames-dir": str(tmp / "frames"),
        "cache": str(tmp / "cache"),
    }


def _commands(examples: dict[str, str]) -> list[tuple[str, list[str]]]:
    """(README text, argv) for every `triage` command to run, in README order (a table before its readers)."""
    out = []
    for line in _shell_lines(README.read_text(encoding="utf-8")):
        words = shlex.split(line)
        if words[0] != "triage" or words[1] in SKIPPED:
            continue
        argv = [examples.get(word, word) for word in words[1:]]
        if argv[:2] == ["frames", "learn"]:  # never into the checkout's own signatures/frames
            argv += ["--frames-dir", examples["frames-dir"]]
        out.append((line, argv))
    corpus_first = sorted(out, key=lambda item: item[1][:1] != ["corpus"] or "-o" not in item[1])
    return corpus_first


def test_every_readme_command_runs_after_the_setup_line(examples: dict[str, str]) -> None:
    text = README.read_text(encoding="utf-8")
    blocked = ",".join(sorted(blocked_modules(setup_extras(text))))
    env = {**os.environ, "TRIAGE_CACHE": examples["cache"], "TERM": "dumb"}
    env.pop("TRIAGE_DEBUG", None)
    commands = _commands(examples)
    assert len(commands) >= 20, [c for c, _ in commands]
    failures = []
    for line, argv in commands:
        done = subprocess.run([sys.executable, "-c", _BLOCKER, blocked, *argv], capture_output=True, text=True,
                              cwd=ROOT, env=env, stdin=subprocess.DEVNULL, timeout=300)
        said = done.stdout + done.stderr
        if done.returncode not in (0, 1) or "pip install" in said or "Traceback" in said:
            failures.append(f"{line}\n  exit {done.returncode}: {said.strip()[-600:]}")
    assert not failures, "\n".join(failures)
