"""The typer application of the ``wikigr`` command (:func:`wikigr.cli.run` runs it)."""

from __future__ import annotations

from typing import Any

import typer
from typer.core import TyperOption

from wikigr.cli import cypher as cypher_commands
from wikigr.cli import eval as eval_commands
from wikigr.cli import mcp as mcp_commands
from wikigr.cli import pack as pack_commands
from wikigr.cli import query as query_commands
from wikigr.cli import serve as serve_commands
from wikigr.cli import share as share_commands


def _flags_take_no_value() -> None:
    """A flag (``--json``, ``--help``) is shown without a value placeholder in every help.

    typer's rich help draws each option's type, a flag's too (``--json <bool>``), as if it took a
    value; its plain help does not. A flag takes none, so it shows none (as in click, git, pip)."""
    shown = TyperOption.display_type_rich
    if getattr(shown, "wikigr_flags", False):
        return

    def display_type_rich(self: TyperOption, ctx: Any) -> str | None:
        return None if self.is_flag else shown(self, ctx)

    display_type_rich.wikigr_flags = True  # type: ignore[attr-defined]
    setattr(TyperOption, "display_type_rich", display_type_rich)  # noqa: B010 - a method, replaced


_flags_take_no_value()

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
