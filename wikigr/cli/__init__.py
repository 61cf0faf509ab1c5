"""The ``wikigr`` command: a thin typer adapter over the library. Only this package imports typer
and rich. Results go to stdout (``--json`` for machines); diagnostics and progress to stderr."""

from __future__ import annotations

import os
import sys

import typer
from typer._click.exceptions import NoArgsIsHelpError

from wikigr.cli import cypher as cypher_commands
from wikigr.cli import eval as eval_commands
from wikigr.cli import mcp as mcp_commands
from wikigr.cli import pack as pack_commands
from wikigr.cli import query as query_commands
from wikigr.cli import share as share_commands
from wikigr.cli.output import err
from wikigr.errors import WikigrError

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


def _fail(message: str, code: int) -> int:
    err.print(f"Error: {' '.join(message.split())}", markup=False, highlight=False, soft_wrap=True)
    return code


def run(argv: list[str] | None = None) -> int:
    """Run the CLI and return its exit code; every failure is one ``Error: ...`` line."""
    try:
        app(args=argv, prog_name="wikigr", standalone_mode=False)
    except WikigrError as exc:
        return _fail(exc.message, exc.exit_code)
    except NoArgsIsHelpError as exc:
        print(exc.format_message())
        return 0
    except typer.Exit as exc:
        return int(exc.exit_code or 0)
    except (KeyboardInterrupt, typer.Abort):
        return _fail("interrupted", 130)
    except typer.TyperException as exc:  # usage errors (exit 2) and other click-style errors
        message = exc.format_message() if hasattr(exc, "format_message") else str(exc)
        return _fail(message, int(getattr(exc, "exit_code", 1)))
    except BrokenPipeError:
        return 0
    except Exception as exc:
        if os.environ.get("WIKIGR_DEBUG"):
            raise
        return _fail(f"internal error: {type(exc).__name__}: {exc} (set WIKIGR_DEBUG=1 for details)", 1)
    return 0


def main() -> None:
    sys.exit(run())
