"""``triage serve``: the local paste page for support staff (see triage/server.py)."""

from __future__ import annotations

import typer

from triage.commands import fail


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        host: str = typer.Option("127.0.0.1", "--host", help="Address to listen on (loopback by default)."),
        port: int = typer.Option(8765, "--port", min=0, max=65535, help="Port to listen on (0: any free port)."),
        max_upload: float = typer.Option(50, "--max-upload", min=0.001, help="Largest upload accepted, in MiB."),
        timeout: float = typer.Option(60, "--timeout", min=0.5, max=3600,
                                      help="Seconds a client has to send a whole request, upload included; "
                                           "a slower or silent client is dropped."),
    ) -> None:
        """Run a local web page where support staff paste a log or drop a bundle and get the HTML report."""
        from triage.server import LISTEN_BACKLOG, PasteServer, is_loopback

        if not is_loopback(host):
            typer.echo(f"triage: warning: listening on {host}, not loopback: anyone who can reach this machine "
                       "can upload logs to it and read the reports", err=True)
        try:
            server = PasteServer(host, port, int(max_upload * (1 << 20)), request_timeout=timeout)
        except OSError as err:
            raise fail(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
        typer.echo(f"hip-triage paste page on {server.url} (uploads up to {max_upload:g} MiB, {timeout:g} s per "
                   f"request, backlog {LISTEN_BACKLOG}; Ctrl+C stops it)", err=True)
        try:
            server.serve_forever()
        except KeyboardInterrupt:
            pass
        finally:
            server.server_close()
