"""``triage corpus DIR...`` (a table of every case), ``triage corpus compare OLD NEW`` and ``triage signatures draft CLUSTER``.

pandas and the rest of ``triage.corpus`` are imported inside the commands only.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer
from typer.core import TyperGroup

from triage.commands import fail

if TYPE_CHECKING:
    import pandas

_DEFAULT = "run"


class _DefaultRun(TyperGroup):
    """``triage corpus DIR...`` is short for ``triage corpus run DIR...``."""

    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
        if args and args[0] not in self.commands and args[0] not in ("--help", "-h"):
            args = [_DEFAULT, *args]
        return super().parse_args(ctx, args)


corpus_app = typer.Typer(
    cls=_DefaultRun, no_args_is_help=True, rich_markup_mode=None,
    help="Triage a whole corpus into one table (parquet/CSV), cluster its unknown cases, draw a dashboard. "
    "`triage corpus DIR...` is short for `triage corpus run DIR...`.",
)


def _guard(action: Callable[[], Any]) -> Any:
    """Run a command body: known problems and unexpected ones become one line and exit code 2, never a traceback."""
    from triage.corpus.run import CorpusError
    from triage.match import SignatureError

    try:
        return action()
    except typer.Exit:
        raise
    except (CorpusError, SignatureError, FileNotFoundError, ValueError) as err:
        raise fail(str(err)) from None
    except OSError as err:
        raise fail(f"{getattr(err, 'filename', '') or ''}: {err.strerror or err}".lstrip(": ")) from None
    except Exception as err:
        if os.environ.get("TRIAGE_DEBUG"):
            raise
        raise fail(f"internal error ({type(err).__name__}: {err}); run again with TRIAGE_DEBUG=1 and report it") from None


def write_table(table: "pandas.DataFrame", output: Path) -> None:
    """Write the table as parquet or CSV (list columns as newline-joined text), by ``output``'s suffix."""
    from triage.corpus.rows import COLUMNS
    from triage.corpus.run import CorpusError

    suffix = output.suffix.lower()
    if suffix == ".parquet":
        try:
            table.to_parquet(output, index=False)
        except ImportError:
            raise CorpusError("writing parquet needs pyarrow, which hip-triage depends on: pip install pyarrow "
                             "(or write .csv)") from None
    elif suffix == ".csv":
        flat = table.copy()
        for name in (n for n, dtype in COLUMNS.items() if dtype == "list"):
            flat[name] = ["\n".join(v) for v in flat[name]]
        flat.to_csv(output, index=False)
    else:
        raise CorpusError(f"{output}: the table is written as .parquet or .csv")


_CACHE_WORDS = {"hit": "read from the cache", "rematch": "matched again from the cache", "parse": "parsed",
                "error": "failed"}


def _cache_words(tally: dict[str, int]) -> str:
    """How the cases were done, in words (``12 read from the cache, 3 parsed``), not a dict's repr."""
    done = [f"{tally[how]} {words}" for how, words in _CACHE_WORDS.items() if tally.get(how)]
    return ", ".join(done) or "no case done"


def _summary(table: "pandas.DataFrame", clusters: list) -> str:
    known = table[table["class"].astype("object") != "unknown"]
    lines = [f"{len(table)} cases: {len(known)} diagnosed, {int((table['class'] == 'unknown').sum())} unknown, "
             f"{int(table['error'].notna().sum())} unreadable; {_cache_words(table.attrs.get('cache', {}))}"]
    lines += [f"  {int(n):>6}  {c}" for c, n in table["class"].astype("object").value_counts().items()]
    lines.append("top signatures:")
    lines += [f"  {int(n):>6}  {s}" for s, n in known["signature"].astype("object").value_counts().head(10).items()]
    if clusters:
        lines.append("unknown clusters (triage signatures draft ID --corpus ... drafts a signature):")
        lines += [f"  {c.id:>5} {c.size:>6}  {c.typical}: {(c.lines or c.frames or [''])[0][:100]}" for c in clusters[:10]]
    return "\n".join(lines)


@corpus_app.command(_DEFAULT)
def corpus_run(
    paths: list[Path] = typer.Argument(..., help="Corpus folders (each entry a case) or case folders/files."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the table: cases.parquet or cases.csv."),
    reports: Optional[Path] = typer.Option(None, "--reports", help="Write each case's HTML report into this folder."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", help="Local worker processes (default: one per CPU)."),
    dask: Optional[str] = typer.Option(None, "--dask", help="Run on a Dask scheduler (tcp://HOST:PORT) or 'local'."),
    dashboard: Optional[Path] = typer.Option(None, "--dashboard", help="Write a self-contained HTML dashboard here."),
    signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the per-case cache."),
) -> None:
    """Triage every case of a corpus; print a summary, write the table, reports and a dashboard."""

    def body() -> None:
        from triage.corpus import analyze
        from triage.corpus.clusters import cluster
        from triage.corpus.dashboard import render

        table = analyze(paths, jobs=jobs, dask=dask, cache=False if no_cache else None, signatures=signatures,
                        reports=reports)
        clusters = cluster(table)
        if output:
            write_table(table, output)
            typer.echo(f"{output}: {len(table)} cases", err=True)
        if dashboard:
            title = "Crash corpus: " + ", ".join(p.name or str(p) for p in paths)
            dashboard.write_text(render(table, clusters, title, reports, dashboard), encoding="utf-8")
            typer.echo(f"{dashboard}: dashboard", err=True)
        typer.echo(_summary(table, clusters))

    _guard(body)


@corpus_app.command("compare")
def corpus_compare(
    old: str = typer.Argument(..., help="The earlier corpus: a folder, or a .parquet/.csv from `triage corpus -o`."),
    new: str = typer.Argument(..., help="The later corpus, the same way."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Also write the comparison as .csv."),
    show_same: bool = typer.Option(False, "--all", help="Also list the groups that did not change."),
) -> None:
    """Signatures and unknown clusters that appeared, grew, shrank or vanished from OLD to NEW."""

    def body() -> None:
        from triage.corpus.compare import compare, load_table

        changes = compare(load_table(old), load_table(new))
        if output:
            if output.suffix.lower() != ".csv":
                raise ValueError(f"{output}: the comparison is written as .csv")
            changes.to_csv(output, index=False)
        shown = changes if show_same else changes[changes["change"] != "same"]
        for item in shown.itertuples():
            example = f"  {item.example[:90]}" if item.example else ""
            typer.echo(f"{item.change:<9} {item.kind:<9} {item.group:<44} {item.old:>6} -> {item.new:<6}"
                       f" ({item.old_share:.1%} -> {item.new_share:.1%}){example}")
        if shown.empty:
            typer.echo("no signature or unknown cluster changed")

    _guard(body)


def signatures_draft(
    cluster_id: str = typer.Argument(..., help="An unknown cluster id (U1, U2, ...) as `triage corpus` lists them."),
    corpus: str = typer.Option(..., "--corpus", help="The corpus: a folder, or a .parquet/.csv from `triage corpus -o`."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the YAML to this file, or into this folder as ID.yaml."),
    signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
) -> None:
    """Draft a signature YAML skeleton from an unknown cluster: its distinguishing lines as conditions."""

    def body() -> None:
        import yaml

        from triage.corpus.clusters import cluster
        from triage.corpus.compare import load_table
        from triage.corpus.draft import draft
        from triage.match import load
        from triage.resources import data_dir

        clusters = cluster(load_table(corpus, signatures=signatures))
        chosen = next((c for c in clusters if c.id.lower() == cluster_id.lower()), None)
        if chosen is None:
            known = ", ".join(c.id for c in clusters[:20]) or "none: the corpus has no unknown case"
            raise ValueError(f"no unknown cluster {cluster_id!r} (clusters: {known})")
        db = load(signatures or data_dir("signatures"))
        klass = next((s.klass for s in db.signatures if s.id == chosen.hint), "runtime-crash")
        text = draft(chosen, clusters, klass)
        if output:
            target = output / f"{yaml.safe_load(text)['id']}.yaml" if output.is_dir() else output
            target.write_text(text, encoding="utf-8")
            typer.echo(f"{target}: draft of {chosen.id} ({chosen.size} cases)", err=True)
        else:
            sys.stdout.write(text)

    _guard(body)


def register(app: typer.Typer) -> None:
    app.add_typer(corpus_app, name="corpus")
    for group in app.registered_groups:
        if group.name == "signatures" and group.typer_instance is not None:
            group.typer_instance.command("draft")(signatures_draft)
