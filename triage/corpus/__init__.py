"""Bulk analysis of a crash corpus: one DataFrame row per case, groups, unknown clusters, a dashboard.

    import triage.corpus
    cases = triage.corpus.analyze(["corpus/"])          # a pandas DataFrame, columns in rows.COLUMNS
    cases.groupby("class", observed=True).size()

Importing this package imports pandas; a single ``triage PATH`` never does.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas

from triage.corpus.rows import COLUMNS, frame
from triage.corpus.run import CorpusError, Settings, code_key, database_key, find_cases, run_dask, run_local, tally

__all__ = ["COLUMNS", "CorpusError", "analyze", "find_cases"]


def _jobs(jobs: int | None) -> int:
    if jobs is not None:
        if jobs < 1:
            raise CorpusError("--jobs must be at least 1")
        return jobs
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


@contextmanager
def _progress(total: int, show: bool) -> Iterator[Callable[[int], None]]:
    """A progress bar on stderr (rich, which typer brings) when asked; a no-op otherwise."""
    if not show:
        yield lambda n: None
        return
    try:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn
    except ImportError:
        yield lambda n: None
        return
    bar = Progress(TextColumn("triage"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn(),
                   console=Console(stderr=True), transient=True)
    with bar:
        task = bar.add_task("cases", total=total)
        yield lambda n: bar.advance(task, n)


def analyze(
    paths: list[str | os.PathLike] | str | os.PathLike,
    *,
    jobs: int | None = None,
    dask: str | None = None,
    cache: bool | str | os.PathLike | None = None,
    signatures: str | os.PathLike | None = None,
    reports: str | os.PathLike | None = None,
    progress: bool | None = None,
) -> pandas.DataFrame:
    """Triage every case under ``paths`` and return one typed row per case (columns: ``COLUMNS``).

    ``jobs`` local processes (default: one per CPU); ``dask`` a scheduler address, or ``"local"``
    for a LocalCluster of ``jobs`` worker processes, instead; ``cache`` False to turn the cache
    off or a folder to put it in (default: the per-user cache, ``TRIAGE_CACHE`` rules);
    ``reports`` a folder for each case's HTML report; ``progress`` a bar on stderr (default:
    when stderr is a terminal). ``df.attrs["cache"]`` counts how each case was done: ``hit``,
    ``rematch``, ``parse``, ``error``.
    """
    from triage.resources import cache_dir, data_dir

    roots = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    refs = find_cases(roots)
    if not refs:
        raise CorpusError(f"no cases in {' '.join(map(str, roots))}")
    folder = Path(signatures) if signatures else data_dir("signatures")
    if not (folder / "_database.yaml").is_file():
        raise CorpusError(f"{folder}: not a signature folder (no _database.yaml)")
    if cache is None or cache is True:
        where = cache_dir("corpus")
    elif cache is False:
        where = None
    else:
        where = Path(cache)
    if reports:
        Path(reports).mkdir(parents=True, exist_ok=True)
    settings = Settings(signatures=str(folder.resolve()), cache=str(where) if where else None,
                        reports=str(Path(reports).resolve()) if reports else None,
                        db_key=database_key(folder), code_key=code_key())
    workers = _jobs(jobs)
    show = sys.stderr.isatty() if progress is None else progress
    with _progress(len(refs), show) as tick:
        if dask:
            outcomes = run_dask(refs, settings, dask, workers, tick)
        else:
            outcomes = run_local(refs, settings, workers, tick)
    table = frame([values for values, _ in outcomes])
    table.attrs["cache"] = tally(outcomes)
    return table
