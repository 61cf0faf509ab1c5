"""The typer application of the ``wikigr`` command (:func:`wikigr.cli.run` runs it)."""

from __future__ import annotations

import typer

from wikigr.cli import cypher as cypher_commands
from wikigr.cli import eval as eval_commands
from wikigr.cli import mcp as mcp_commands
from wikigr.cli import pack as pack_commands
from wikigr.cli import query as query_commands
from wikigr.cli import serve as serve_commands
from wikigr.cli import share as share_commands

app = typer.Typer(
    name="wikigr",
    help="Local-first knowledge packs: build from document URLs, query, evaluate, share.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
share_commands.register(pack_commands.app)
app.add_typer(pack_commands.app, name="pack")
app.add_typer(eval_commands.app, name="eval")
query_commands.register(app)
mcp_commands.register(app)
cypher_commands.register(app)
serve_commands.register(app)


def _print_version(value: bool) -> None:
    if value:
        from wikigr import __version__

        print(f"wikigr {__version__}")
        raise typer.Exit(0)


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", is_eager=True, callback=_print_version, help="Print the version and exit."
    ),
) -> None:
    """Local-first knowledge packs: build from document URLs, query, evaluate, share."""
