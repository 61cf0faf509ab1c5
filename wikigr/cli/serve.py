"""``wikigr serve``: the REST API and the web page over the packs (wikigr/serve/)."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer


def register(app: typer.Typer) -> None:
    @app.command("serve")
    def serve(
        packs: Annotated[
            list[str] | None,
            typer.Argument(help="Packs to serve (names or paths); default: every pack in the packs home."),
        ] = None,
        host: Annotated[
            str, typer.Option("--host", help="Address to listen on; beyond loopback a token is required.")
        ] = "127.0.0.1",
        port: Annotated[int, typer.Option("--port", min=0, max=65535, help="Port (0: a free one).")] = 8700,
        token: Annotated[
            str | None,
            typer.Option("--token", help="Every request must carry it (Authorization: Bearer TOKEN)."),
        ] = None,
        token_file: Annotated[
            Path | None, typer.Option("--token-file", help="Read the token from this file's first line.")
        ] = None,
        read_only: Annotated[
            bool,
            typer.Option(
                "--read-only",
                help="Refuse every write (build, update or remove a pack from the page: 403); "
                "asking and searching still work.",
            ),
        ] = False,
    ) -> None:
        """Serve the REST API (/api/v1, OpenAPI at /api/v1/openapi.json) and the web page, where
        packs can be asked, and built, updated and removed (unless --read-only).

        Listens on 127.0.0.1:8700 until Ctrl-C or SIGTERM, then exits 0. Writes from another
        origin are refused. See docs/serve.md."""
        from wikigr.cli.servers import serve_packs

        serve_packs(packs or [], host, port, token, token_file, read_only)
