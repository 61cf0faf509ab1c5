"""multidoc: expand the top sources along LINKS_TO to related articles' best passages."""

from __future__ import annotations

from dataclasses import dataclass

from wikigr.pack.reader import ChunkHit
from wikigr.retrieval.page_index import PageIndex
from wikigr.retrieval.stage import Candidate, QueryState, Skip, Stage, register


@dataclass
class MultidocOptions:
    seeds: int = 3  # top articles to expand from
    max_added: int = 3  # related passages added at most
    min_similarity: float = 0.35  # a related passage must be at least this close to the question


@register
class MultidocStage(Stage):
    name = "multidoc"
    summary = "add the best passages of articles linked to the top sources"
    Options = MultidocOptions

    def run(self, state: QueryState) -> None:
        top = state.candidates[: state.top_k]
        seeds = list(dict.fromkeys(c.article_id for c in top))[: self.options.seeds]
        if not seeds:
            raise Skip("no candidates")
        if state.ctx.pack.manifest.stats.links == 0:  # nothing to ask the store
            raise Skip("the pack has no links between its articles")
        present = {c.article_id for c in top}
        store = state.ctx.store
        related = [a for a in store.linked_articles(seeds) if a not in present]
        if not related:
            raise Skip("the top sources link to no other article of the pack")
        best = self._best_chunks(state, related)
        least = self.options.min_similarity / state.cosine_scale()
        chosen = sorted((h for h in best if h.score >= least), key=lambda h: -h.score)[
            : self.options.max_added
        ]
        # Related passages extend the context: they go right after the top_k, best first.
        extra = [Candidate.from_hit(h, "vector", origin="multidoc") for h in chosen]
        known = {c.chunk_id for c in state.candidates[: state.top_k]}
        extra = [c for c in extra if c.chunk_id not in known]
        rest = [c for c in state.candidates[state.top_k :] if c.chunk_id not in {e.chunk_id for e in extra}]
        state.candidates = [*top, *extra, *rest]
        state.note(self.name, related_articles=len(related), added=len(extra))

    @staticmethod
    def _best_chunks(state: QueryState, related: list[str]) -> list[ChunkHit]:
        """Each related article's chunk closest to the question: from the chunk vectors in memory
        when the page_score stage has loaded them for this pack, else from the store."""
        index = state.ctx.cache.get("page_index")
        if isinstance(index, PageIndex):
            found = index.best_chunks(related, state.vector())
            return sorted(state.ctx.store.chunk_details(found), key=lambda h: -h.score)
        return state.ctx.store.best_chunk_per_article(related, state.vector().tolist())
