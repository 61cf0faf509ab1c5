"""multi_query: alternative phrasings of the question from Claude; the search stages then run
every phrasing and fuse the results. Without an API key there are none (the stage is skipped)."""

from __future__ import annotations

from dataclasses import dataclass

from wikigr.llm import LLMError
from wikigr.retrieval.stage import QueryState, Skip, Stage, register

PROMPT = (
    "Rewrite the user's question in {n} different ways that a search engine over technical "
    "documentation would match better: other words, expanded abbreviations, the likely API or "
    "concept names. One rewrite per line, no numbering, nothing else."
)


@dataclass
class MultiQueryOptions:
    n: int = 2
    max_tokens: int = 200


@register
class MultiQueryStage(Stage):
    name = "multi_query"
    summary = "alternative phrasings from Claude, searched and fused"
    Options = MultiQueryOptions

    def run(self, state: QueryState) -> None:
        llm = state.ctx.llm
        if llm is None:
            raise Skip("no Claude API key: no rephrasings")
        try:
            completion = llm.complete(
                PROMPT.format(n=self.options.n),
                [{"role": "user", "content": state.question}],
                max_tokens=self.options.max_tokens,
            )
        except LLMError as exc:
            if not state.fallback:
                raise
            raise Skip(f"Claude failed: {exc}") from exc
        if state.usage is not None:
            state.usage.add(completion)
        lines = [line.strip(" -*\t") for line in completion.text.splitlines()]
        rephrasings = [line for line in lines if line and line.lower() != state.question.lower()]
        state.queries = [state.question, *rephrasings[: self.options.n]]
        state.note(self.name, queries=state.queries)
