"""The README's commands work after the README's own set-up line, and nothing more.

The set-up line (`pip install '.[X]'`) names the extras a new user has. Every package installed
here that it would not bring (its requirements and theirs, followed through the installed
metadata) is made unimportable, and each `triage` command of the README's shell blocks is run
on shipped examples (its placeholders replaced); a command that needs a package the set-up does
not install then fails, or prints a `pip install` hint. Only commands that need hardware or a
program to run (`triage collect`) and the server that runs until Ctrl-C (`triage serve`) are
left out. The README's `python3 SCRIPT` and `python3 -m MODULE` commands (benchmarks, tools that
read the whole corpus: minutes each) are checked without running them: every module they import,
through the project's own modules, must be installed by the set-up or by a `pip install` on the
same line.
"""

from __future__ import annotations

import ast
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
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
SEED = ROOT / "corpus" / "seed-000-blit-kernels-device-libs-missing"
SEEDS = sorted((ROOT / "corpus").glob("seed-*"))
SKIPPED = {"collect": "runs a program and reads this machine's GPU, kernel log and cores",
           "serve": "a server that runs until Ctrl-C (tests/test_serve.py runs it)",
           "desk": "a server that runs until Ctrl-C (tests/test_desk_app.py runs it)"}
_LOCAL = {"triage", "tools", "bench", "tests"}  # the checkout's own packages
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


def installed_by(extras: set[str]) -> set[str]:
    """Every distribution `pip install '.[extras]'` brings into a fresh virtual environment: pip, the
    project, its requirements and theirs (markers evaluated here), as far as this environment knows them."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    optional = project["optional-dependencies"]
    todo = [Requirement(r) for r in [*project["dependencies"], *(r for e in extras for r in optional[e])]]
    todo = [r for r in todo if r.marker is None or r.marker.evaluate({"extra": ""})]
    out, seen = {"pip", _name(project["name"])}, set()
    while todo:
        req = todo.pop()
        key = (_name(req.name), frozenset(req.extras))
        if key in seen:
            continue
        seen.add(key)
        out.add(key[0])
        try:
            requires = metadata.requires(req.name) or []
        except metadata.PackageNotFoundError:
            continue
        for sub in map(Requirement, requires):
            if sub.marker is None or any(sub.marker.evaluate({"extra": e}) for e in (req.extras or {""})):
                todo.append(sub)
    return out


def setup_extras(text: str) -> set[str]:
    """The extras the README's first command installs (`pip install '.[fast]'` -> {"fast"})."""
    first = _shell_lines(text)[0]
    match = re.fullmatch(r"pip install '\.(?:\[([\w,]*)\])?'", first)
    assert match, f"the README's set-up is not `pip install '.[extras]'`: {first}"
    return set(filter(None, (match.group(1) or "").split(",")))


def blocked_modules(extras: set[str]) -> set[str]:
    """Top-level modules installed here that the set-up would not bring (a fresh environment lacks them)."""
    wanted = installed_by(extras)
    return {module for module, dists in metadata.packages_distributions().items()
            if module.isidentifier() and not {_name(d) for d in dists} & wanted}


def test_the_setup_lines_name_extras_that_exist() -> None:
    text = README.read_text(encoding="utf-8")
    optional = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    for extras in re.findall(r"pip install (?:-e )?'(?:\.|hip-triage)\[([\w,]+)\]'", text):
        assert set(extras.split(",")) <= set(optional), extras
    assert "fast" in setup_extras(text)


def test_packages_the_setup_does_not_bring_are_blocked() -> None:
    """The check below has teeth: Dask and pytest (only in extras the set-up leaves out) are blocked;
    pyarrow and zstandard (core) and what they and pandas need are not."""
    blocked = blocked_modules(setup_extras(README.read_text(encoding="utf-8")))
    for module in ("distributed", "dask", "pytest"):
        if module in metadata.packages_distributions():
            assert module in blocked, module
    assert not {"pyarrow", "zstandard", "pandas", "numpy", "dateutil", "yaml", "typer", "hyperscan"} & blocked


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


def _imports(file: Path, seen: set[Path], script: bool = False) -> set[str]:
    """Top-level modules ``file`` imports, following the checkout's own modules; an import guarded by
    ``except ImportError`` (and the fallback there) is optional and left out, and so, in the script a command runs (``script``),
    is one inside a function (it runs only for the options that need it, such as another engine)."""
    if file in seen or not file.is_file():
        return set()
    seen.add(file)
    tree = ast.parse(file.read_text(encoding="utf-8"))
    skipped = {id(node) for t in ast.walk(tree) if isinstance(t, ast.Try)
               and any(isinstance(h.type, ast.Name) and h.type.id in ("ImportError", "ModuleNotFoundError")
                       for h in t.handlers)
               for stmt in [*t.body, *t.handlers] for node in ast.walk(stmt)}  # and the fallback it tries
    if script:
        skipped |= {id(node) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                    for node in ast.walk(f)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        else:
            continue
        for name in names:
            top = name.partition(".")[0]
            helper = [f for d in ("tests", "tools", "bench") for f in ROOT.glob(f"{d}/**/{top}.py")]
            if top in _LOCAL or helper:  # the checkout's own code (a script may put a helper's folder on sys.path)
                base = ROOT.joinpath(*name.split("."))
                for candidate in (base.with_suffix(".py"), base / "__init__.py", *helper):
                    out |= _imports(candidate, seen)
            else:
                out.add(top)
    return out


def _script(words: list[str]) -> Path | None:
    """The file a `python3 ...` command runs: a script, or a module's file (`-m triage.x`)."""
    if words[1] == "-m":
        base = ROOT.joinpath(*words[2].split("."))
        return next((f for f in (base.with_suffix(".py"), base / "__main__.py") if f.is_file()), None)
    return ROOT / words[1]


def test_python_commands_import_only_what_their_line_installs() -> None:
    text = README.read_text(encoding="utf-8")
    setup = setup_extras(text)
    checked, problems = 0, []
    for block in re.findall(r"^```sh\n(.*?)^```", text, re.MULTILINE | re.DOTALL):
        for line in block.splitlines():
            parts = [shlex.split(p) for p in re.sub(r"\s+#\s.*$", "", line).split("&&") if p.strip()]
            extras, packages = set(setup), set()
            for words in (w for w in parts if w[:2] == ["pip", "install"]):
                for arg in words[2:]:
                    found = re.fullmatch(r"\.\[([\w,]+)\]", arg)
                    extras |= set(found.group(1).split(",")) if found else set()
                    packages |= {_name(arg)} if not arg.startswith((".", "-")) else set()
            for words in (w for w in parts if w[0] in ("python", "python3")):
                script = _script(words)
                if script is None or words[1:3] == ["-m", "pytest"]:
                    continue
                checked += 1
                wanted = installed_by(extras)
                available = {module for module, dists in metadata.packages_distributions().items()
                             if {_name(d) for d in dists} & wanted}
                missing = (_imports(script, set(), script=True) - set(sys.stdlib_module_names) - available
                           - {p.replace("-", "_") for p in packages})
                if missing:
                    problems.append(f"{line.strip()}: imports {sorted(missing)}")
    assert checked >= 8 and not problems, problems
