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
        shard: Annotated[
            int | None,
            typer.Option(
                "--shard",
                min=0,
                help="A pack in shards: run the query on shard N only (0 is shards/00), not on each.",
            ),
        ] = None,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    ) -> None:
        """Run a read-only Cypher query on a pack (CREATE, SET, DELETE, COPY, LOAD... are refused).

        On a pack in shards the query runs on each shard in turn (or on the one --shard names):
        every row starts with a shard column (its folder, shards/00), and what the query counts,
        orders or limits is counted, ordered or limited per shard."""
        from rich.table import Table

        from wikigr.openml.tool_specs import to_json
        from wikigr.pack.cypher import MAX_RESULT_BYTES, check_read_only, read_pack_query
        from wikigr.pack.pack import open_pack

        check_read_only(query)  # refuse before opening anything
        result = read_pack_query(open_pack(pack), query, max_rows=max_rows, shard=shard)
        data = [[to_json(v) for v in row] for row in result.rows]
        if json_out:
            shown = {
                "columns": result.columns,
                "rows": data,
                "row_count": len(data),
                "truncated": result.truncated,
            }
            print_json({**shown, "shards": result.shards} if result.shards else shown)
            return
        table = Table(*(printable(c) for c in result.columns))
        for row in data:
            table.add_row(*("" if v is None else printable(v) for v in row))
        out.print(table)
        cut = f"{max_rows} rows or {MAX_RESULT_BYTES >> 20} MiB"
        more = f" (truncated at {cut}; use --max-rows or a narrower query)" if result.truncated else ""
        where = ""
        if len(result.shards) > 1:
            where = f" from {len(result.shards)} shards (the query ran on each)"
        elif result.shards:
            where = f" from {result.shards[0]}"
        out.print(f"{len(data)} row(s){where}{more}", markup=False)
