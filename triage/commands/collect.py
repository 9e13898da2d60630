"""``triage collect [-o bundle.zip] [options] -- COMMAND [ARGS...]``: make the bundle users attach.

Exit codes: 0 the bundle was written (whatever the command did), 2 bad usage or the bundle
could not be written, 130 interrupted while collecting (nothing written).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Optional

import typer

from triage.commands import fail

if TYPE_CHECKING:
    from triage.collect.progress import Progress

EXIT_INTERRUPTED = 130


def collect(
    command: Optional[list[str]] = typer.Argument(None, metavar="[-- COMMAND [ARGS...]]",
                                                  help="The program to run; without it only the system part is collected."),
    output: Optional[Path] = typer.Option(None, "--output", "-o", metavar="FILE",
                                          help="The bundle to write (default: triage-bundle-DATE-TIME.zip here)."),
    component_dir: Optional[Path] = typer.Option(None, "--component", metavar="DIR",
                                                 help="A folder the program's GPU libraries come from: list it, keep its manifests."),
    redact: bool = typer.Option(False, "--redact", help="Replace user names, host names, home folders, addresses and "
                                "serials before anything is written (leaves out the core)."),
    with_core: bool = typer.Option(False, "--with-core", help="Also keep the core file (from coredumpctl, up to 128 MiB)."),
    log_level: int = typer.Option(3, "--log-level", min=0, max=7, metavar="N", help="AMD_LOG_LEVEL for the command."),
    timeout: Optional[float] = typer.Option(None, "--timeout", min=0.1, metavar="SECONDS",
                                            help="Stop the command after this long (default: no limit; Ctrl-C also stops it)."),
    max_output: int = typer.Option(32, "--max-output", min=1, metavar="MIB",
                                   help="Keep at most this much of each of the command's output streams (head and tail)."),
) -> None:
    """Run a failing command with the HIP log on and gather what triage needs into one zip (Linux)."""
    from triage.collect.bundle import write
    from triage.collect.gather import Options, gather
    from triage.collect.progress import Progress, summary

    if not sys.platform.startswith("linux"):
        raise fail("triage collect runs on Linux only")
    output = output or Path(time.strftime("triage-bundle-%Y%m%d-%H%M%S.zip"))
    if output.is_dir():
        raise fail(f"{output} is a folder; give the bundle's file name with -o")
    if not output.parent.is_dir():
        raise fail(f"{output.parent} is not a folder; the bundle cannot be written there")
    if component_dir is not None and not component_dir.is_dir():
        raise fail(f"--component {component_dir}: not a folder")
    options = Options(command=list(command or []), component=component_dir, redact=redact, with_core=with_core,
                      log_level=log_level, timeout=timeout, output_limit=max_output << 20)
    progress = Progress()
    try:
        collection = gather(options, progress)
    except OSError as err:  # the command could not be started
        progress.clear()
        raise fail(f"cannot run {options.command[0]}: {err.strerror or err}") from None
    except KeyboardInterrupt:
        raise _interrupted(progress) from None
    try:
        size = write(output, collection.items, collection.manifest)
    except OSError as err:
        raise fail(f"cannot write {output}: {err.strerror or err}") from None
    except KeyboardInterrupt:
        raise _interrupted(progress) from None
    typer.echo(summary(str(output), size, collection.items, collection.missing, collection.ended), err=True)


def _interrupted(progress: "Progress") -> typer.Exit:
    """Ctrl-C while gathering or writing: nothing is written (a Ctrl-C during the run only stops the command)."""
    progress.clear()
    typer.echo("triage collect: interrupted; nothing was written", err=True)
    return typer.Exit(EXIT_INTERRUPTED)


def register(app: typer.Typer) -> None:
    """Add ``triage collect``; everything after ``--`` (or after the first argument) is the command."""
    app.command("collect", context_settings={"allow_interspersed_args": False})(collect)
