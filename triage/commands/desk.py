"""``triage desk``: the support desk, a shared paste service that keeps every case (see triage/desk/)."""

from __future__ import annotations

import os
import re
import socket
from pathlib import Path

import typer

from triage.commands import fail

TOKEN_ENV = "HIP_TRIAGE_DESK_TOKEN"
DATABASE_ENV = "HIP_TRIAGE_DESK_DATABASE"


def register(app: typer.Typer) -> None:
    @app.command("desk")
    def desk(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default; any other "
                                 "address needs --token-file or --auth-header)."),
        port: int = typer.Option(8766, "--port", min=1, max=65535, help="Port to listen on."),
        database: str = typer.Option("", "--database", envvar=DATABASE_ENV, show_default=False,
                                     help="Database URL: sqlite:///PATH or postgresql+psycopg://USER:PASS@HOST/DB "
                                          "(default: an SQLite file in $XDG_DATA_HOME/hip-triage)."),
        token_file: Path | None = typer.Option(None, "--token-file", help="A file holding the access token "
                                               f"(or set {TOKEN_ENV}); clients send Authorization: Bearer TOKEN."),
        auth_header: str = typer.Option("", "--auth-header", help="A header your reverse proxy sets to the signed-in "
                                        "user (e.g. X-Forwarded-User); requests without it are refused."),
        public_url: str = typer.Option("", "--public-url", help="The address people open when a reverse proxy is "
                                       "in front (e.g. https://desk.example.com): its host and origin are accepted."),
        max_upload: float = typer.Option(50, "--max-upload", min=0.001, help="Largest upload accepted, in MiB."),
        max_input: float = typer.Option(8, "--keep-input", min=0, help="Largest input kept with a case for "
                                        "re-triage, in MiB."),
        timeout: float = typer.Option(60, "--timeout", min=0.5, max=3600, help="Seconds a client has to send a "
                                      "request's body, upload included; a slower one gets 408."),
        workers: int = typer.Option(os.cpu_count() or 1, "--workers", min=0, max=64, show_default="the CPUs",
                                    help="Processes that triage uploads (0: in the server's own process)."),
        migrate_only: bool = typer.Option(False, "--migrate-only", help="Create or upgrade the database schema "
                                          "and exit."),
    ) -> None:
        """Run the support desk: paste or upload logs, keep every case with its report, see what was seen before."""
        try:
            import uvicorn

            from triage.desk.app import Settings, create_app
            from triage.desk.storage import Store, StoreError
        except ImportError as err:
            raise fail(f"the desk needs its extra packages ({err.name} is missing): pip install 'hip-triage[desk]'") \
                from None
        token = os.environ.get(TOKEN_ENV) or None
        if token_file is not None:
            try:
                token = token_file.read_text(encoding="utf-8").strip() or None
            except OSError as err:
                raise fail(f"cannot read the token file {token_file}: {err.strerror or err}") from None
            if token is None:
                raise fail(f"the token file {token_file} is empty; put a long random token in it")
        if token is not None and len(token) < 16:
            raise fail("the access token is too short; use at least 16 characters (e.g. python3 -c "
                       "'import secrets; print(secrets.token_urlsafe())')")
        settings = Settings(database=database or None, host=host, port=port, max_upload=int(max_upload * (1 << 20)),
                            max_input=int(max_input * (1 << 20)), token=token, auth_header=auth_header or None,
                            workers=workers, request_timeout=timeout, public_url=public_url.rstrip("/") or None)
        if public_url and not re.fullmatch(r"https?://[^/?#\s]+/?", public_url):
            raise fail(f"--public-url {public_url!r} is not an address such as https://desk.example.com")
        refusal = settings.refusal()
        if refusal and not migrate_only:
            raise fail(refusal)
        try:
            store = Store(settings.database)
            store.migrate()
        except StoreError as err:
            raise fail(str(err)) from None
        if migrate_only:
            typer.echo(f"triage: the case database {store.safe_url} is up to date", err=True)
            return
        try:  # bound here, so that a port in use is one clear line
            sock = socket.create_server((host.strip("[]"), port), backlog=2048,
                                        family=socket.AF_INET6 if ":" in host else socket.AF_INET)
        except OSError as err:
            store.close()
            raise fail(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
        shown = f"[{host}]" if ":" in host else host
        if public_url:
            address = public_url.rstrip("/") + "/"
        elif host in ("0.0.0.0", "::", "[::]"):  # every address of this machine: name one people can open
            address = f"http://{socket.gethostname()}:{port}/ (listening on all addresses)"
        else:
            address = f"http://{shown}:{port}/"
        typer.echo(f"hip-triage desk on {address} (cases in {store.safe_url}; uploads up to "
                   f"{max_upload:g} MiB; API description at /api/openapi.json; Ctrl+C stops it)", err=True)
        try:
            config = uvicorn.Config(create_app(settings, store), log_level="warning", proxy_headers=bool(auth_header),
                                    server_header=False, limit_concurrency=512, timeout_keep_alive=5)
            uvicorn.Server(config).run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn stops gracefully, then raises the signal it caught again
            pass
        finally:
            sock.close()
            store.close()
