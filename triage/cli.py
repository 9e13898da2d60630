"""The ``triage`` command.

``triage PATH...`` triages files, folders, zips or ``-`` (stdin); a known subcommand name
(``triage signatures ...``) wins over a path of the same name. Exit codes, like grep's:
0 a known failure was diagnosed, 1 nothing known matched (``unknown``), 2 bad usage or
unreadable input.
"""

from __future__ import annotations

import errno
import functools
import gc
import os
import sys
from enum import Enum
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

from triage import __version__
from triage.commands import COMMANDS, EXIT_DIAGNOSED, EXIT_ERROR, EXIT_UNKNOWN

if TYPE_CHECKING:
    import typer

    from triage.model import Artifact

_DEFAULT = "run"
# Every name the command line knows before a path: the subcommands (tests/test_cli.py checks this against the app).
SUBCOMMANDS = (_DEFAULT, "signatures", "schema", *COMMANDS)


class _Failed(Exception):
    """Bad usage or unreadable input: ``triage: MESSAGE`` on stderr, exit code 2."""


class Format(str, Enum):
    text = "text"
    json = "json"
    html = "html"
    md = "md"
    markdown = "markdown"


_SUFFIX_FORMAT = {".html": Format.html, ".htm": Format.html, ".md": Format.md, ".markdown": Format.md,
                  ".json": Format.json, ".txt": Format.text, ".text": Format.text, "": Format.text}


def _format_of(output: Path) -> Format:
    """The format ``-o``'s suffix names; a suffix that names none is an error, not a text report under
    a misleading name."""
    chosen = _SUFFIX_FORMAT.get(output.suffix.lower())
    if chosen is None:
        known = " ".join(sorted(s for s in _SUFFIX_FORMAT if s))
        raise _Failed(f"{output}: cannot tell the report format from {output.suffix!r}; name the file {known}, "
                      "or give -f text|json|html|md")
    return chosen


def _has_content(artifact: Artifact) -> bool:
    """Anything but blank lines: a binary file, or a text with a visible character."""
    return artifact.size > 0 and (not artifact.lines or any(line.strip() for line in artifact.lines))


def _nothing_to_read(paths: list[str], names: list[str]) -> str:
    if not names:
        return f"nothing to read in {' '.join(paths)}"
    shown = ", ".join("standard input" if name == "<stdin>" else name for name in names)
    return f"nothing to read: {shown} {'is' if len(names) == 1 else 'are'} empty"

def triage_paths(paths: list[str], fmt: Format | None = None, output: Path | None = None,
                 signatures: Path | None = None, templates: Path | None = None, symbols: Path | None = None,
                 redact: bool = False, labels: bool = False) -> int:
    """``triage PATH...``: print or write the report; return the exit code (raises ``_Failed`` for bad usage or
    unreadable input). The same whether typer read the command line or ``main``'s quick path did."""
    from triage.ingest import IngestError
    from triage.match import SignatureError
    from triage.pipeline import triage
    from triage.report import render

    chosen = fmt or (_format_of(output) if output else Format.text)
    if "-" in paths and sys.stdin.isatty():  # a user who typed `triage -` waits on a silent terminal otherwise
        print("triage: reading standard input: paste the log, then press Ctrl-D on a new line "
              "(Ctrl-Z, Enter on Windows)", file=sys.stderr, flush=True)
    try:
        result = triage(paths, stdin=sys.stdin.buffer if "-" in paths else None, signatures=signatures,
                        symbols=symbols)
        if not result.case.warnings and not any(map(_has_content, result.case.artifacts)):
            raise _Failed(_nothing_to_read(paths, [a.name for a in result.case.artifacts]))
        report = render(result, chosen.value, templates, redact=redact)
    except (IngestError, SignatureError, FileNotFoundError) as err:
        raise _Failed(str(err)) from None
    except _Failed:
        raise
    except Exception as err:
        if os.environ.get("TRIAGE_DEBUG"):
            raise
        raise _Failed(f"internal error ({type(err).__name__}: {err}); run again with TRIAGE_DEBUG=1 and "
                      "report it with the input") from None
    if output:
        try:
            output.write_text(report, encoding="utf-8")
        except OSError as err:
            raise _Failed(f"cannot write {output}: {err.strerror or err}") from None
        top = result.top
        print(f"{output}: {top.klass} ({round(top.confidence * 100)}%) {top.id}", file=sys.stderr, flush=True)
    elif not labels:
        sys.stdout.write(report if report.endswith("\n") else report + "\n")
    if labels:
        from triage.issuebot import labels_for

        print("\n".join(labels_for(result.top.klass)), flush=True)
    return EXIT_UNKNOWN if result.top.klass == "unknown" else EXIT_DIAGNOSED


# -- the quick path: `triage PATH... [-f F] [-o FILE] ...` without building the typer app -------------------------

_QUICK_VALUES = {"-f": "fmt", "--format": "fmt", "-o": "output", "--output": "output", "--signatures": "signatures",
                 "--templates": "templates"}
_QUICK_FLAGS = {"--redact": "redact", "--labels": "labels"}


def quick_options(args: list[str]) -> dict[str, Any] | None:
    """The options of a plain ``triage PATH... [options]``, or None for anything else (a subcommand, --help,
    --version, --symbols, an unknown or repeated option, a bad format, ``--``): typer reads those, with its help
    and its errors. Importing and building typer's app costs more than the rest of a warm triage's start."""
    if not args or args[0] in SUBCOMMANDS:
        return None
    found: dict[str, Any] = {"paths": []}
    at = 0
    while at < len(args):
        arg = args[at]
        name, equals, value = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        if name in _QUICK_VALUES:
            if not equals:
                at += 1
                if at == len(args) or (args[at].startswith("-") and args[at] != "-"):
                    return None
                value = args[at]
            if _QUICK_VALUES[name] in found:
                return None
            found[_QUICK_VALUES[name]] = value
        elif arg in _QUICK_FLAGS:
            found[_QUICK_FLAGS[arg]] = True
        elif arg == "-" or not arg.startswith("-"):
            found["paths"].append(arg)
        else:
            return None
        at += 1
    if not found["paths"] or found.get("fmt", "text") not in Format.__members__:
        return None
    if "fmt" in found:
        found["fmt"] = Format(found["fmt"])
    for key in ("output", "signatures", "templates"):
        if key in found:
            found[key] = Path(found[key])
    return found


def _quick(options: dict[str, Any]) -> int:
    """Run ``triage_paths`` as typer's command would: its messages, exit codes, Ctrl-C and closed pipes."""
    try:
        return triage_paths(**options)
    except _Failed as err:
        print(f"triage: {err}", file=sys.stderr, flush=True)
        return EXIT_ERROR
    except (EOFError, KeyboardInterrupt):
        print("\nAborted!", file=sys.stderr, flush=True)
        return 1
    except OSError as err:
        if err.errno != errno.EPIPE:
            raise
        # The reader went away (`triage x | head`): nothing more to say, and nothing on flushing at exit either.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


# -- the typer app: every other command line -----------------------------------------------------------------------

@functools.cache
def _app() -> "typer.Typer":
    """The typer app, built once when first needed."""
    import typer
    from typer.core import TyperGroup

    from triage.commands import fail, register_all

    class _PathsFirst(TyperGroup):
        """A group where anything that is not a subcommand name is a path for ``run``."""

        def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:
            if args and args[0] not in self.commands and args[0] not in ("--help", "-h", "--version"):
                args = [_DEFAULT, *args]
            return super().parse_args(ctx, args)

    app = typer.Typer(
        cls=_PathsFirst,
        no_args_is_help=True,
        add_completion=False,
        rich_markup_mode=None,
        help="Recognise known HIP/ROCm failures in logs, stacks and bundles; report the root cause, the "
        "evidence and a workaround. `triage PATH...` is short for `triage run PATH...`.\n\n"
        "Exit codes: 0 a known failure was diagnosed, 1 nothing known matched (unknown), 2 bad usage "
        "or unreadable input.",
    )
    signatures_app = typer.Typer(help="The signature database: list it, run its examples.", no_args_is_help=True)
    app.add_typer(signatures_app, name="signatures")

    def _version(value: bool) -> None:
        if value:
            typer.echo(f"hip-triage {__version__}")
            raise typer.Exit()

    @app.callback()
    def _main(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                           help="Print the version and exit.")) -> None:
        pass

    @app.command(_DEFAULT)
    def run(
        paths: list[str] = typer.Argument(..., help="Files, folders, .zip bundles, or - for standard input."),
        fmt: Optional[Format] = typer.Option(None, "--format", "-f", help="Report format (default: text, or from -o's suffix)."),
        output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write the report to this file."),
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Use this signature folder instead of the shipped one."),
        templates: Optional[Path] = typer.Option(None, "--templates", help="Use report templates from this folder."),
        symbols: Optional[Path] = typer.Option(None, "--symbols", exists=True, file_okay=False, dir_okay=True,
                                               help="A folder of ELF libraries or debug files (plain, or the "
                                               ".build-id/xx/rest.debug layout) to name frames with."),
        redact: bool = typer.Option(False, "--redact", help="Replace user names, host names, IP/MAC/e-mail addresses "
                                    "and serial numbers with placeholders"),
        labels: bool = typer.Option(False, "--labels", help="Print the issue labels for the result (triage:<class>), one "
                                    "per line, instead of the report (which still goes to -o if given)."),
    ) -> None:
        """Triage a crash: files, folders, zips or - (stdin)."""
        try:
            code = triage_paths(paths, fmt, output, signatures, templates, symbols, redact, labels)
        except _Failed as err:
            raise fail(str(err)) from None
        raise typer.Exit(code)

    @signatures_app.command("list")
    def signatures_list(
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    ) -> None:
        """Print the catalogue: id, class, status and title of every signature."""
        from triage.match import load
        from triage.resources import data_dir

        db = load(signatures or data_dir("signatures"))
        for sig in db.signatures:
            typer.echo(f"{sig.id:<40} {sig.klass:<24} {sig.status:<12} {sig.title}")
        for problem in db.problems:
            typer.echo(f"! {problem}", err=True)

    @signatures_app.command("test")
    def signatures_test(
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    ) -> None:
        """Run every signature's must-match and must-not-match examples."""
        from triage.match import load
        from triage.match.examples import run_examples
        from triage.resources import data_dir

        folder = signatures or data_dir("signatures")
        db = load(folder)
        outcomes = run_examples(db, folder)
        failed = [o for o in outcomes if not o.passed]
        for outcome in outcomes:
            typer.echo(f"{'ok  ' if outcome.passed else 'FAIL'} {outcome.signature}: {outcome.kind}: {outcome.name}"
                       + ("" if outcome.passed else f"\n     {outcome.reason}"))
        for problem in db.problems:
            typer.echo(f"! {problem}", err=True)
        typer.echo(f"{len(outcomes) - len(failed)} passed, {len(failed)} failed")
        raise typer.Exit(1 if failed or db.problems else 0)

    @signatures_app.command("lint")
    def signatures_lint(
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    ) -> None:
        """Check schema, ids, regexes (compile, catastrophic backtracking) and ties between signatures."""
        from triage.match import load
        from triage.match.lint import lint
        from triage.resources import data_dir

        folder = signatures or data_dir("signatures")
        problems = lint(load(folder), folder)
        for problem in problems:
            typer.echo(problem)
        typer.echo(f"{len(problems)} problem{'s' * (len(problems) != 1)}")
        raise typer.Exit(1 if problems else 0)

    @signatures_app.command("compile")
    def signatures_compile(
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    ) -> None:
        """Build the per-user cache ahead of runs: the parsed database and every scanner's Hyperscan database.

        A run builds a scanner's Hyperscan database only after it has read a few megabytes (compiling takes
        seconds); once compiled here, every later run on this machine starts on the fast path."""
        import time

        from triage.match import load
        from triage.parsers.lines import needle_scanners  # importing the package registers every parser's needles
        from triage.resources import cache_dir, data_dir

        folder = cache_dir("scanners")
        if folder is None:
            raise fail("the per-user cache is off (TRIAGE_CACHE=0) or cannot be written; nothing to build")
        started = time.monotonic()
        db = load(signatures or data_dir("signatures"))
        regexes = db.patterns.compile_all(db.signatures)
        scanners = [*db.prefilters.scanners, *needle_scanners()]
        fast = sum(scanner.prepare() for scanner in scanners)
        typer.echo(f"{regexes} condition regexes compiled, {len(scanners)} scanners built in "
                   f"{time.monotonic() - started:.1f} s into {folder.parent}; "
                   + (f"{fast} read by Hyperscan" if fast else
                      "none by Hyperscan (not installed: pip install 'hip-triage[fast]'), the Python way needs no more"))

    @signatures_app.command("show")
    def signatures_show(
        signature_id: str = typer.Argument(..., help="A signature id, or a class to list its signatures "
                                           "(see `triage signatures list`)."),
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    ) -> None:
        """Print one signature's story for support staff (meaning, evidence, workarounds, references),
        or the signatures of a class: a report names both, and either is what staff look up."""
        from triage.match import load
        from triage.report import render_catalogue
        from triage.resources import data_dir

        db = load(signatures or data_dir("signatures"))
        chosen = [s for s in db.signatures if s.id == signature_id]
        if chosen:
            typer.echo(render_catalogue(db, chosen, "signature.txt.j2"))
            return
        members = [s for s in db.signatures if s.klass == signature_id]
        if not members:
            raise fail(f"no signature or class {signature_id!r}; `triage signatures list` shows the ids and classes")
        typer.echo(f"class {signature_id}: {len(members)} signature{'s' * (len(members) != 1)} "
                   "(`triage signatures show ID` tells one's story)")
        for sig in members:
            typer.echo(f"  {sig.id:<40} {sig.status:<12} {sig.title}")

    @signatures_app.command("catalogue")
    def signatures_catalogue(
        signatures: Optional[Path] = typer.Option(None, "--signatures", help="Signature folder (default: the shipped one)."),
    ) -> None:
        """Print the catalogue of every signature as Markdown (docs/signatures.md is this output)."""
        from triage.match import load
        from triage.report import render_catalogue
        from triage.resources import data_dir

        db = load(signatures or data_dir("signatures"))
        typer.echo(render_catalogue(db, db.signatures, "catalogue.md.j2"), nl=False)

    @app.command("schema")
    def schema() -> None:
        """Print the JSON Schema of the JSON report (`triage PATH -f json`)."""
        from triage.resources import data_dir

        typer.echo((data_dir("reports") / "report.schema.json").read_text(encoding="utf-8"), nl=False)

    register_all(app)
    return app


def __getattr__(name: str) -> Any:
    """``triage.cli.app`` (and ``signatures_app``): the typer app, built on first use."""
    if name == "app":
        return _app()
    if name == "signatures_app":
        return next(group.typer_instance for group in _app().registered_groups if group.name == "signatures")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def main() -> None:
    """The ``triage`` command: a plain ``triage PATH...`` runs at once, anything else through typer."""
    options = quick_options(sys.argv[1:])
    try:
        if options is not None:
            sys.exit(_quick(options))
        _app()()
    finally:
        # The report is out: the collection at interpreter exit would walk every object the run made (a twentieth
        # of a warm run) for memory the process is about to give back. Frozen objects are not walked; atexit
        # handlers and the flushing of output still run.
        gc.freeze()
