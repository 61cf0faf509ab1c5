"""``wikigr query PACK QUESTION``."""

from __future__ import annotations

from typing import Annotated

import typer

from wikigr.cli.output import out, print_json
from wikigr.query import query_pack


def register(app: typer.Typer) -> None:
    @app.command("query")
    def query(
        pack: Annotated[str, typer.Argument(help="Pack name or path.")],
        question: Annotated[str, typer.Argument(help="The question.")],
        top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100, help="Passages to return.")] = 5,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    ) -> None:
        """Answer a question from a pack, with the passages and their citations."""
        result = query_pack(pack, question, top_k=top_k)
        if json_out:
            print_json(result.to_json())
            return
        out.print(result.answer, markup=False, highlight=False)
        out.print()
        out.print("[bold]Sources[/]")
        for n, source in enumerate(result.sources, 1):
            where = f"{source.title} › {source.section}" if source.section else source.title
            out.print(f"[{n}] {where} ({source.score:.3f})\n    {source.url}", markup=False, highlight=False)
