"""``wikigr cypher PACK QUERY``: read-only Cypher over a pack's graph (refused if it writes)."""

from __future__ import annotations

from typing import Annotated

import typer

from wikigr.cli.output import out, print_json, printable


def register(app: typer.Typer) -> None:
    @app.command("cypher")
    def cypher(
        pack: Annotated[str, typer.Argument(help="Pack name or path.")],
        query: Annotated[str, typer.Argument(help="A read-only Cypher query.")],
        max_rows: Annotated[
            int, typer.Option("--max-rows", min=1, max=100_000, help="Rows to return.")
        ] = 1000,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    ) -> None:
        """Run a read-only Cypher query on a pack (CREATE, SET, DELETE, COPY, LOAD... are refused)."""
        from rich.table import Table

        from wikigr.openml.tools import to_json
        from wikigr.pack.cypher import check_read_only
        from wikigr.pack.pack import open_pack

        check_read_only(query)  # refuse before opening anything
        opened = open_pack(pack)
        with opened.open_store() as store:
            columns, rows, truncated = store.read_query(query, max_rows=max_rows)
        data = [[to_json(v) for v in row] for row in rows]
        if json_out:
            print_json({"columns": columns, "rows": data, "row_count": len(data), "truncated": truncated})
            return
        table = Table(*(printable(c) for c in columns))
        for row in data:
            table.add_row(*("" if v is None else printable(v) for v in row))
        out.print(table)
        more = f" (truncated at {max_rows}; use --max-rows)" if truncated else ""
        out.print(f"{len(data)} row(s){more}", markup=False)
