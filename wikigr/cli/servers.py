"""``wikigr mcp`` and ``wikigr serve`` without typer: what a client starts is parsed here when it is
plainly valid (:func:`fast_server`), so a server's start does not pay typer's import (with
pydantic and every command's module). Anything else (``--help``,
an unknown or repeated option, a bad port...) goes through typer, as every other command does, so
errors and help read the same. The typer commands (wikigr/cli/mcp.py, wikigr/cli/serve.py) call
the same functions.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

from wikigr.cli.plain import plain_args

OPTIONS = {"--host": "host", "--port": "port", "--token": "token", "--token-file": "token_file"}
FLAGS = {"--read-only": "read_only"}
_PORT = re.compile(r"[0-9]{1,5}")


def serve_mcp() -> None:
    """The MCP server on stdin/stdout (wikigr/mcp/)."""
    from wikigr.mcp import serve

    serve()


def serve_packs(
    packs: list[str],
    host: str = "127.0.0.1",
    port: int = 8700,
    token: str | None = None,
    token_file: Path | None = None,
    read_only: bool = False,
) -> None:
    """The body of ``wikigr serve``: the REST API and the web page over ``packs`` (none: the
    packs home) until Ctrl-C or SIGTERM; ``read_only``: every write refused."""
    from wikigr.cli.output import err
    from wikigr.errors import UsageError
    from wikigr.serve import read_token_file
    from wikigr.serve import serve as run

    if token is not None and token_file is not None:
        raise UsageError("give --token or --token-file, not both")
    if token_file is not None:
        token = read_token_file(token_file)

    def ready(url: str) -> None:
        what = ", ".join(packs) if packs else "the packs home"
        mode = " read-only" if read_only else ""
        err.print(
            f"Serving {what}{mode} at {url}/ (API {url}/api/v1, OpenAPI {url}/api/v1/openapi.json). "
            "Ctrl-C stops.",
            markup=False,
            highlight=False,
            soft_wrap=True,
        )

    run(packs, host=host, port=port, token=token, on_ready=ready, read_only=read_only)
    err.print("Stopped.", markup=False, highlight=False)


def fast_server(args: list[str]) -> Callable[[], None] | None:
    """For ``mcp`` alone, or a plainly valid ``serve [PACK...] [--host H] [--port N] [--token T]
    [--token-file F] [--read-only]`` (``--name VALUE`` or ``--name=VALUE``, each at most once, no value
    starting with ``-``, a port of ASCII digits from 0 to 65535), the server it starts; None for
    anything else (typer then parses it, and reports what is wrong)."""
    if args == ["mcp"]:
        return serve_mcp
    if not args or args[0] != "serve":
        return None
    parsed = plain_args(args[1:], OPTIONS, FLAGS)
    if parsed is None:
        return None  # --help, --, an unknown or repeated option, a missing value...
    packs, values = parsed
    port = values.get("port", "8700")
    if not _PORT.fullmatch(port) or int(port) > 65535:
        return None
    host = values.get("host", "127.0.0.1")
    token_file = Path(values["token_file"]) if "token_file" in values else None
    read_only = bool(values.get("read_only", False))
    return lambda: serve_packs(packs, host, int(port), values.get("token"), token_file, read_only)
