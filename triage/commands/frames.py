"""``triage frames learn PATH...``: add the names symbolized stacks gave to offsets to the known-frames store.

Each PATH is one case, read like ``triage PATH`` reads it. The store is ``signatures/frames/``
in a source checkout, else ``$XDG_DATA_HOME/hip-triage/frames``, or ``--frames-dir``;
symbolization reads the shipped folder and the user's store together. A name that disagrees
with the store is never written: it is reported, and the exit status is 1.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from triage.commands import fail

frames_app = typer.Typer(help="The known-frames store: names of module offsets, per library build.",
                         no_args_is_help=True)


@frames_app.command("learn")
def learn(
    paths: list[str] = typer.Argument(..., help="Cases: files, folders or bundles whose stacks name their frames."),
    frames_dir: Optional[Path] = typer.Option(None, "--frames-dir", file_okay=False,
                                              help="Store folder (default: signatures/frames in a source "
                                              "checkout, else $XDG_DATA_HOME/hip-triage/frames)."),
) -> None:
    """Learn frame names from cases whose frames carry both a name and `module + offset`."""
    from triage.ingest import IngestError, read_inputs
    from triage.parsers import parse
    from triage.symbolize.known_frames import default_store
    from triage.symbolize.learn import LearnError, Learned, collect, update

    learned: list[Learned] = []
    conflicts: list[str] = []
    for path in paths:
        try:
            artifacts, warnings = read_inputs([path])
        except IngestError as err:
            raise fail(str(err)) from None
        case = parse(artifacts, warnings)
        notes, clashes = collect(case, learned)
        conflicts.extend(clashes)
        for note in notes:
            typer.echo(f"{path}: {note}", err=True)
    store = frames_dir or default_store()
    try:
        outcomes = update(store, learned, f"learned from {', '.join(paths)}"[:300]) if learned else []
    except LearnError as err:
        raise fail(f"{store}: {err}") from None
    for outcome in outcomes:
        typer.echo(f"{outcome.build}: {outcome.added} new, {outcome.known} already known -> {outcome.path}")
        conflicts.extend(outcome.conflicts)
    if not learned:
        typer.echo("no frame with both a name and a module offset of a known library build")
    for conflict in conflicts:
        typer.echo(f"conflict: {conflict}", err=True)
    raise typer.Exit(1 if conflicts else 0)


def register(app: typer.Typer) -> None:
    app.add_typer(frames_app, name="frames")
