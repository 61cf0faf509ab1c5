"""``wikigr query PACK QUESTION``: answer through the agent's profile of retrieval stages."""

from __future__ import annotations

from typing import Annotated

import typer

from wikigr.cli.answer import answer


def register(app: typer.Typer) -> None:
    @app.command("query")
    def query(
        pack: Annotated[
            str, typer.Argument(help="Pack name or path; several as a,b; every installed pack as all.")
        ],
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
        top_k: Annotated[
            int | None,
            typer.Option(
                "--top-k",
                "-k",
                min=1,
                max=100,
                help="Passages to retrieve (default: the pack's kg_config.json top_k, else 5). Profiles "
                "that run multidoc (all but baseline) list up to 3 passages of linked pages after "
                "them, marked (related); --disable multidoc for K sources exactly.",
            ),
        ] = None,
        model: Annotated[
            str | None, typer.Option("--model", help="Claude model (default: $WIKIGR_MODEL).")
        ] = None,
        fallback: Annotated[
            bool, typer.Option("--fallback", help="If Claude fails, print the extractive answer instead.")
        ] = False,
        trace: Annotated[bool, typer.Option("--trace", help="Print the per-stage trace as a table.")] = False,
        json_out: Annotated[
            bool,
            typer.Option(
                "--json", help="Print JSON on stdout (answer, answer_mode, sources with their text...)."
            ),
        ] = False,
        passages: Annotated[
            bool, typer.Option("--passages", help="Print each source's whole passage under it.")
        ] = False,
        timeout: Annotated[
            float | None,
            typer.Option(
                "--timeout",
                min=0.001,
                help="Seconds Claude may take over the answer, retries included (default: "
                "$WIKIGR_TIMEOUT, else 30); then --fallback answers extractively.",
            ),
        ] = None,
    ) -> None:
        """Answer a question from a pack, citing the passages it used."""
        answer(
            pack,
            question,
            profile=profile,
            enable=enable,
            disable=disable,
            top_k=top_k,
            model=model,
            fallback=fallback,
            trace=trace,
            json_out=json_out,
            timeout=timeout,
            passages=passages,
        )
