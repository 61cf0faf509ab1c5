"""``wikigr mcp``: serve the packs to agents over MCP (stdio)."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    @app.command("mcp")
    def mcp() -> None:
        """Run an MCP server on stdin/stdout with the tools list_packs, pack_info, query_pack, search.

        Configure it in an MCP client as the command `wikigr mcp` (packs from $WIKIGR_HOME/packs)."""
        from wikigr.cli.servers import serve_mcp

        serve_mcp()
