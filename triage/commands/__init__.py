"""Subcommands beyond ``run`` and ``signatures``: one module per command, each with ``register(app)``.

The modules only declare their typer commands at import; heavy imports happen inside the
command functions so that ``triage PATH`` stays quick to start.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import typer

EXIT_DIAGNOSED, EXIT_UNKNOWN, EXIT_ERROR = 0, 1, 2

# Each name is a module in this package with a ``register(app: typer.Typer) -> None``.
COMMANDS: tuple[str, ...] = ("frames", "collect", "inspect", "corpus", "serve", "desk")


def fail(message: str) -> "typer.Exit":
    """Print ``triage: message`` on stderr and return the exit for bad usage or unreadable input."""
    import typer  # here: a plain `triage PATH` never imports typer (triage/cli.py)

    typer.echo(f"triage: {message}", err=True)
    return typer.Exit(EXIT_ERROR)


def register_all(app: "typer.Typer") -> None:
    for name in COMMANDS:
        importlib.import_module(f"{__name__}.{name}").register(app)
