"""graph_rerank: favour articles that the other candidates' articles link to (degree centrality
over LINKS_TO), fused with the ranking so far by reciprocal rank.

The centrality side contributes ``weight * (k + 1) / (k + rank)`` (1.0 x weight for the most
linked article); the ranking so far contributes its min-max scaled score, so a clear lead is kept
and centrality decides between close candidates.

Candidates page_score placed are left as they are: their scores place each page's passages in
rounds (a page's first passage, then its second...), so the gaps between pages are divided by the
number of rounds and the centrality term would outweigh any page's lead. page_score weighs the
same links among its pages itself (its ``centrality``), at the pages' scale.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wikigr.retrieval.stage import QueryState, Skip, Stage, register
from wikigr.retrieval.stages.fusion import minmax


@dataclass
class GraphRerankOptions:
    weight: float = 0.1  # weight of the centrality ranking; the ranking so far weighs 1 - weight
    scope: Literal["candidates", "pack"] = "candidates"  # degree among the candidates, or overall
    rrf_k: int = 60


@register
class GraphRerankStage(Stage):
    name = "graph_rerank"
    summary = "rerank by article degree centrality over LINKS_TO (reciprocal-rank fusion)"
    Options = GraphRerankOptions

    def run(self, state: QueryState) -> None:
        if not state.candidates:
            raise Skip("no candidates")
        if state.ctx.pack.manifest.stats.links == 0:  # nothing to ask the store
            raise Skip("the pack has no links between its articles")
        if any(c.placed_by_page for c in state.candidates):
            raise Skip("page_score ranked these pages, with their links among them (its centrality)")
        articles = list(dict.fromkeys(c.article_id for c in state.candidates))
        degree = state.ctx.store.article_degrees(articles, within=self.options.scope == "candidates")
        if not any(degree.values()):
            raise Skip("no links between these articles")
        # Articles ranked by degree (ties share a rank); each candidate gets its article's term.
        levels = sorted({d for d in degree.values() if d}, reverse=True)
        rank_of = {d: i + 1 for i, d in enumerate(levels)}
        k, w = self.options.rrf_k, self.options.weight
        current = minmax({c.chunk_id: c.score for c in state.candidates})
        for candidate in state.candidates:
            d = degree.get(candidate.article_id, 0)
            candidate.scores["degree"] = float(d)
            central = (k + 1) / (k + rank_of[d]) if d else 0.0
            candidate.score = (1 - w) * current[candidate.chunk_id] + w * central
        state.sort()
        state.note(self.name, linked_articles=sum(1 for d in degree.values() if d))
