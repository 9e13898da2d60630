"""Run the pipeline over many cases: local processes by default, a Dask cluster on request, with a cache.

What a case is: each path given that is a file (a log, a paste, a .zip/.tar.gz bundle, a dump)
is one case; a folder that holds a label (``expected.yaml``, or the real-world set's
``label.yaml``) is one case; any other folder is a
corpus, and each of its visible entries (sub-folder or file; names starting with ``.`` and the
corpus's own README are skipped) is one case. A case's id is its name (``root/name`` when
several roots are given).

The cache keeps one file a case, keyed by the SHA-256 of the case's bytes (names and
contents) and by the tool's code: the parsed ``Case`` before symbolizing (without the inputs'
text, read again to match) and the finished rows of the last few signature databases (keyed
by the database's content). A re-run with the same database reads the row; a re-run after a
signature changed re-matches the parsed case without parsing the inputs again. One file, not
one for each level: creating files is most of what the cache costs a cold run.
"""

from __future__ import annotations

import dataclasses
import functools
import gc
import hashlib
import os
import pickle
import re
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from triage import __version__
from triage.corpus.rows import COLUMNS, row
from triage.match import Database, load
from triage.model import Case
from triage.pipeline import Result, finish
from triage.ingest.reader import CASE_LABELS, case_files
from triage.resources import read_cached, write_cached

EMPTY = dict.fromkeys(COLUMNS)  # every row has every column: the table is built in C from tuples
_SAFE = re.compile(r"[^\w.-]+")
_DATABASES_KEPT = 4  # signature databases whose rows a case's cache entry keeps
_CORPUS_FILES = frozenset({"SEEN"})  # what a real-world corpus keeps beside its cases (labels.py)
_README = re.compile(r"README(?:\.(?:md|txt|rst))?$", re.IGNORECASE)  # what a corpus folder says of itself, no case


class CorpusError(ValueError):
    """The corpus cannot be analysed as asked (no such path, nothing in it, Dask missing)."""


@dataclass(frozen=True)
class CaseRef:
    id: str
    path: str


@dataclass(frozen=True)
class Settings:
    """What every worker needs; plain strings so that it pickles to any process or Dask worker."""

    signatures: str
    cache: str | None
    reports: str | None
    db_key: str
    code_key: str


def find_cases(paths: list[str | os.PathLike]) -> list[CaseRef]:
    """The cases under the given paths (see the module docstring), in name order."""
    roots = [Path(p) for p in paths]
    out: list[CaseRef] = []
    for root in roots:
        if not root.exists():
            raise CorpusError(f"{root}: no such file or folder")
        base = root.resolve()
        if root.is_file() or _label_file(root):
            out.append(CaseRef(base.name, str(base)))
            continue
        out.extend(_corpus(str(base), f"{base.name}/" if len(roots) > 1 else ""))
    return out


def _corpus(base: str, prefix: str) -> list[CaseRef]:
    """The cases of a corpus folder; a sub-folder that holds labelled cases and no file of its own
    (but its README and SEEN list) is a corpus too, read the same way (``corpus/realworld/``)."""
    out: list[CaseRef] = []
    with os.scandir(base) as entries:  # a corpus may hold many thousands of cases: no Path per entry
        children = sorted((e.name, e.is_dir()) for e in entries if not (e.name.startswith(".") or _README.match(e.name))
                          and not (prefix and e.name in _CORPUS_FILES)
                          and not e.is_symlink() and (e.is_file() or e.is_dir()))
    for name, is_dir in children:
        path = os.path.join(base, name)
        if is_dir and _nested_corpus(path):
            out.extend(_corpus(path, f"{prefix}{name}/"))
        else:
            out.append(CaseRef(prefix + name, path))
    return out


def _nested_corpus(path: str) -> bool:
    with os.scandir(path) as entries:
        files = dirs = 0
        for e in entries:
            if e.name.startswith(".") or _README.match(e.name) or e.name in _CORPUS_FILES:
                continue
            if e.is_dir(follow_symlinks=False):
                dirs += 1
            else:
                files += 1
    return dirs > 0 and files == 0 and any(_label_file(Path(path, e)) for e in os.listdir(path)
                                           if os.path.isdir(os.path.join(path, e)))


def content_hash(path: Path) -> str:
    """SHA-256 over the names and bytes of a case's files (its label excluded)."""
    digest = hashlib.sha256()
    for name, file in case_files(path)[0] if path.is_dir() else [(path.name, path)]:
        data = file.read_bytes()
        digest.update(f"{name}\0{len(data)}\0".encode("utf-8", "surrogateescape"))
        digest.update(data)
    return digest.hexdigest()


def _label_file(folder: Path) -> Path | None:
    return next((folder / name for name in CASE_LABELS if (folder / name).is_file()), None)


def label(path: Path) -> dict[str, Any]:
    """``expected_class``, ``expected_signature``, ``date`` and what the label says of the machine
    (``label_gfx_arch``, ``label_gpu_name``, ``label_os``, ``label_rocm``) from a case folder's label file:
    a real-world ``label.yaml`` (``gpu_arch``, ``gpu_name``, ``os``, ``rocm``) or a seed's ``expected.yaml``
    (``facts:``). "unknown" and "n/a" are no value."""
    file = _label_file(path)
    if file is None:
        return {}
    from triage.resources import load_yaml

    try:
        data = load_yaml(file, keep=False)  # a label is read once a run: not worth a cache entry a case
    except Exception:  # a broken label is no reason to skip the case
        return {}
    if not isinstance(data, dict):
        return {}
    facts = data.get("facts") if isinstance(data.get("facts"), dict) else {}
    return {"expected_class": data.get("class"), "expected_signature": data.get("signature"),
            "date": str(data["date"]) if data.get("date") else None,
            "label_gfx_arch": _said(data.get("gpu_arch"), facts.get("gfx_arch")),
            "label_gpu_name": _said(data.get("gpu_name"), facts.get("gpu_name")),
            "label_os": _said(data.get("os"), facts.get("os")),
            "label_rocm": _said(data.get("rocm"), facts.get("rocm_version_system"), facts.get("hip_version"))}


def _said(*values: Any) -> str | None:
    """The first value a label really gives: "unknown", "n/a" and blanks give none."""
    return next((str(v) for v in values
                 if v not in (None, "") and str(v).strip().lower() not in ("unknown", "n/a")), None)


def _tree_key(base: Path, files: list[Path], content: bool) -> str:
    digest = hashlib.sha256(__version__.encode())
    for file in sorted(files):
        stat = file.stat()
        digest.update(f"{file.relative_to(base).as_posix()}\0{stat.st_size}\0".encode())
        digest.update(file.read_bytes() if content else str(stat.st_mtime_ns).encode())
    return digest.hexdigest()[:16]


def database_key(folder: Path) -> str:
    """The signature database's identity: the content of every signature and known-frames file
    (the user's learned frames included, since they name frames too)."""
    from triage.symbolize.known_frames import stores

    keys = []
    for base in [folder, *stores(folder / "frames")[1:]]:
        files = [p for p in base.rglob("*") if p.is_file() and p.suffix in (".yaml", ".yml", ".json")]
        keys.append(_tree_key(base, files, True))
    return keys[0] if len(keys) == 1 else hashlib.sha256("".join(keys).encode()).hexdigest()[:16]


def code_key() -> str:
    """The tool's identity for parsed cases: its version and its Python files as installed."""
    package = Path(__file__).resolve().parent.parent
    return _tree_key(package, list(package.rglob("*.py")), False)


# -- one case -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=8)  # a worker serves a signature folder or two
def _database(folder: str) -> Database:
    """A worker's signature database, loaded once: its scanners keep what they built (the literals' trie,
    Hyperscan's scratch) from one case to the next."""
    return load(Path(folder))


def _freeze(case: Case) -> bytes:
    """A parsed case without its inputs (which would make the cache as large as the corpus): only the
    name and size of each artifact, to check them against when the inputs are read again. Pickled
    apart inside the cache entry, so that a hit does not pay for reading it back."""
    frozen = [(a.name, a.size) for a in case.artifacts], dataclasses.replace(case, artifacts=[])
    return pickle.dumps(frozen, protocol=pickle.HIGHEST_PROTOCOL)


def _thaw(frozen: bytes, path: str) -> Case | None:
    """The cached parsed case with its inputs read again (matching must see the text), or None when
    it cannot be read back or the inputs are not what was parsed."""
    from triage.ingest import read_inputs

    try:
        names, case = pickle.loads(frozen)
    except Exception:  # a cache entry of another version or a damaged one: parse again
        return None
    artifacts, _ = read_inputs([path])
    if [(a.name, a.size) for a in artifacts] != names:
        return None
    from triage.parsers import read_past_wrappers

    case.artifacts = read_past_wrappers(artifacts)
    return case


def _parse(path: str) -> Case:
    from triage import parsers
    from triage.ingest import read_inputs

    artifacts, warnings = read_inputs([path])
    return parsers.parse(artifacts, warnings)


def process(ref: CaseRef, settings: Settings) -> tuple[dict[str, Any], str]:
    """Triage one case into its row; also say how: ``hit`` (row cached), ``rematch``, ``parse`` or ``error``."""
    path = Path(ref.path)
    base: dict[str, Any] = {**EMPTY, "case": ref.id, "path": ref.path}
    try:
        # What the label gives wins over the row: a labeller's date over a timestamp in the input.
        labelled = {name: value for name, value in label(path).items() if value is not None}
        base.update(labelled)
        digest = content_hash(path)
        file = Path(settings.cache) / digest[:2] / f"{digest}-{settings.code_key}.pickle" if settings.cache else None
        entry = read_cached(file) if file else None
        entry = entry if isinstance(entry, dict) else {}
        rows: dict[str, dict[str, Any]] = entry.get("rows") or {}
        if settings.db_key in rows and not settings.reports:
            return {**base, **rows[settings.db_key], **labelled, "case": ref.id, "path": ref.path}, "hit"
        frozen: bytes | None = entry.get("parsed")
        case = _thaw(frozen, ref.path) if frozen is not None else None
        how = "rematch" if case is not None else "parse"
        if case is None:
            case = _parse(ref.path)
            frozen = _freeze(case)
        values = row(_triage(case, settings, ref))
        if file:  # the rows of the last few databases are kept
            kept = dict(list(rows.items())[-(_DATABASES_KEPT - 1):])
            write_cached(file, {"parsed": frozen, "rows": {**kept, settings.db_key: values}})
        return {**base, **values, **labelled, "case": ref.id, "path": ref.path}, how
    except Exception as err:
        from triage.ingest import IngestError

        reason = str(err) if isinstance(err, (IngestError, OSError)) else f"internal error ({type(err).__name__}: {err})"
        return {**base, "error": reason}, "error"


def _triage(case: Case, settings: Settings, ref: CaseRef) -> Result:
    result = finish(case, _database(settings.signatures), Path(settings.signatures), similar=bool(settings.reports))
    if settings.reports:
        from triage.report import render

        (Path(settings.reports) / report_name(ref.id)).write_text(render(result, "html"), encoding="utf-8")
    return result


def report_name(case_id: str) -> str:
    """The file name of a case's HTML report in the ``--reports`` folder."""
    return _SAFE.sub("_", case_id) + ".html"


# Allocations between two collections of the youngest generation while cases run (Python's default is 700). 100
# synthetic 50 KB cases in one process: 245 young collections and one full one took 0.24 s at 700; with the database
# frozen, 9 took 0.03 s at 10,000.
_YOUNG_COLLECTION = 10_000


@contextmanager
def _collecting_rarely(settings: Settings) -> Iterator[None]:
    """While a run of cases lasts, the garbage collector leaves alone what outlives them (the signature database,
    loaded first, and the modules) and collects the young seldom: each case makes many short-lived containers that
    point to its long line lists, and a collection walks them. Without this a 100-case run spent about a tenth of
    its time collecting, most of it walking the database's objects in a full collection that freed none of them."""
    try:
        _database(settings.signatures)  # loaded now, to be frozen with the rest
    except Exception:  # a database that does not load: each case's row says why
        pass
    threshold, mine = gc.get_threshold(), gc.get_freeze_count() == 0  # a caller's own freeze is left as it is
    if mine:
        gc.freeze()
    gc.set_threshold(max(threshold[0], _YOUNG_COLLECTION), *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        if mine:
            gc.unfreeze()


def work(batch: list[CaseRef], settings: Settings) -> list[tuple[dict[str, Any], str]]:
    """A batch of cases in one task: fewer round trips to the pool or the scheduler."""
    with _collecting_rarely(settings):
        return [process(ref, settings) for ref in batch]


# -- many cases -----------------------------------------------------------------------------------

def batches(refs: list[CaseRef], jobs: int) -> list[list[CaseRef]]:
    """Tasks of a few cases each: enough tasks to balance the workers, few enough to be cheap."""
    size = max(1, min(32, len(refs) // (jobs * 8) or 1))
    return [refs[i: i + size] for i in range(0, len(refs), size)]


def run_local(refs: list[CaseRef], settings: Settings, jobs: int, tick: Callable[[int], None]) -> list[tuple[dict, str]]:
    """Every case on ``jobs`` local processes (in this process when ``jobs`` is 1)."""
    if jobs <= 1 or len(refs) <= 1:
        out = []
        with _collecting_rarely(settings):
            for ref in refs:
                out.append(process(ref, settings))
                tick(1)
        return out
    from concurrent.futures import ProcessPoolExecutor, as_completed

    tasks = batches(refs, jobs)
    results: dict[int, list] = {}
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(work, batch, settings): number for number, batch in enumerate(tasks)}
        for future in as_completed(futures):
            results[futures[future]] = future.result()
            tick(len(results[futures[future]]))
    return [item for number in range(len(tasks)) for item in results[number]]


def run_dask(refs: list[CaseRef], settings: Settings, address: str, jobs: int,
             tick: Callable[[int], None]) -> list[tuple[dict, str]]:
    """Every case on a Dask cluster (``local``: a LocalCluster of ``jobs`` worker processes).

    Workers read the cases by path, so on a real cluster the corpus must be on storage they share.
    """
    try:
        from distributed import Client, LocalCluster, as_completed
    except ImportError:
        raise CorpusError("--dask needs Dask: pip install 'hip-triage[dask]'") from None
    cluster = None
    try:
        if address == "local":
            cluster = LocalCluster(n_workers=jobs, threads_per_worker=1, processes=True, dashboard_address=None)
            client = Client(cluster)
        else:
            client = Client(address, timeout="20s")
    except OSError as err:
        if cluster is not None:
            cluster.close()
        raise CorpusError(f"cannot reach the Dask scheduler at {address}: {err}") from None
    try:
        tasks = batches(refs, jobs)
        futures = client.map(work, tasks, settings=settings, pure=False)
        number = {future.key: i for i, future in enumerate(futures)}
        results: dict[int, list] = {}
        for future in as_completed(futures):
            results[number[future.key]] = future.result()
            tick(len(results[number[future.key]]))
        return [item for i in range(len(tasks)) for item in results[i]]
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def tally(outcomes: list[tuple[dict, str]]) -> dict[str, int]:
    """How each case was done: cache ``hit``, ``rematch`` (parsed case reused), ``parse`` or ``error``."""
    return dict(Counter(how for _, how in outcomes))
