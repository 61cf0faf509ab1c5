"""``wikigr query PACK QUESTION``: answer through the agent's profile of retrieval stages."""

from __future__ import annotations

from typing import Annotated, Any

import typer

from wikigr.cli.output import err, out, print_json


def register(app: typer.Typer) -> None:
    @app.command("query")
    def query(
        pack: Annotated[str, typer.Argument(help="Pack name or path.")],
        question: Annotated[str, typer.Argument(help="The question.")],
        profile: Annotated[
            str | None,
            typer.Option(
                "--profile",
                "-p",
                help="auto, baseline, balanced, max, graph or routed (default: the pack's, else auto).",
            ),
        ] = None,
        enable: Annotated[
            list[str] | None, typer.Option("--enable", help="Add a stage (repeatable).")
        ] = None,
        disable: Annotated[
            list[str] | None, typer.Option("--disable", help="Remove a stage (repeatable).")
        ] = None,
        top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100, help="Passages to return.")] = 5,
        model: Annotated[
            str | None, typer.Option("--model", help="Claude model (default: $WIKIGR_MODEL).")
        ] = None,
        fallback: Annotated[
            bool, typer.Option("--fallback", help="If Claude fails, print the extractive answer instead.")
        ] = False,
        trace: Annotated[bool, typer.Option("--trace", help="Print the per-stage trace as a table.")] = False,
        json_out: Annotated[bool, typer.Option("--json", help="Print JSON on stdout.")] = False,
    ) -> None:
        """Answer a question from a pack, citing the passages it used."""
        from wikigr.agent import KnowledgeGraphAgent
        from wikigr.errors import UsageError

        if not question.strip():
            raise UsageError("the question is empty")
        with KnowledgeGraphAgent(
            pack, profile=profile, enable=enable, disable=disable, model=model, top_k=top_k, fallback=fallback
        ) as agent:
            result = agent.query(question)
        for entry in result.trace["stages"]:  # synthesize, or the router when the OpenML tools answered
            detail: dict[str, Any] = entry.get("detail") or {}
            why = str(detail.get("why", ""))
            if why.startswith("Claude failed"):
                then = detail.get("fallback", "the answer below is extractive")
                err.print(f"Warning: {why}; {then}.", markup=False, highlight=False)
        if json_out:
            print_json(result.to_json())
        else:
            out.print(result.answer, markup=False, highlight=False)
            out.print()
            out.print("[bold]Sources[/]")
            for n, source in enumerate(result.sources, 1):
                where = f"{source.title} › {source.section}" if source.section else source.title
                related = " (related)" if source.origin == "multidoc" else ""
                out.print(
                    f"[{n}] {where}{related} ({source.score:.3f})\n    {source.url}",
                    markup=False,
                    highlight=False,
                )
        if trace:
            from rich.table import Table

            table = Table("stage", "ms", "in", "out", "top scores", "note", title=f"profile {result.profile}")
            for entry in result.trace["stages"]:
                skipped = entry.get("skipped")
                detail = entry.get("detail") or {}
                note = (
                    f"skipped: {skipped}"
                    if skipped
                    else ", ".join(f"{key}={value}" for key, value in detail.items())
                )
                scores = ", ".join(f"{s:.3f}" for s in entry["top_scores"])
                table.add_row(
                    entry["stage"], f"{entry['ms']:.1f}", str(entry["in"]), str(entry["out"]), scores, note
                )
            err.print(table)
            usage = result.trace.get("usage")
            if usage:
                err.print(
                    f"Claude: {usage['calls']} call(s), {usage['input_tokens']} in / "
                    f"{usage['output_tokens']} out tokens, ~${usage['cost_usd']:.4f}",
                    markup=False,
                )
