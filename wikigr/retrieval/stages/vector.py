"""vector: nearest chunks by cosine similarity (exact in Cypher, or the HNSW index)."""

from __future__ import annotations

from dataclasses import dataclass

from wikigr.retrieval.stage import Candidate, QueryState, Stage, register
from wikigr.retrieval.stages.fusion import rrf


@dataclass
class VectorOptions:
    candidates: int = 30  # chunks fetched per query

    def __post_init__(self) -> None:
        if self.candidates < 1:
            raise ValueError("candidates must be at least 1")


@register
class VectorStage(Stage):
    name = "vector"
    summary = "nearest chunks by embedding similarity"
    Options = VectorOptions

    def run(self, state: QueryState) -> None:
        store = state.ctx.store
        queries = state.queries or [state.question]
        by_id: dict[str, Candidate] = {c.chunk_id: c for c in state.candidates}
        rankings: list[tuple[list[str], float]] = []
        for i, query in enumerate(queries):
            hits = store.chunk_details(state.nearest(self.options.candidates, query))
            if i == 0 and hits:
                state.confidence = max(state.confidence, hits[0].score * state.cosine_scale())
            for hit in hits:
                known = by_id.get(hit.chunk_id)
                if known is None:
                    by_id[hit.chunk_id] = Candidate.from_hit(hit, "vector")
                else:
                    known.scores["vector"] = max(known.scores.get("vector", -1.0), hit.score)
            rankings.append(([h.chunk_id for h in hits], 1.0))
        if len(rankings) > 1:  # several phrasings: fuse their rankings
            fused = rrf(rankings)
            for chunk_id, score in fused.items():
                by_id[chunk_id].score = score
        state.candidates = list(by_id.values())
        state.sort()
        state.note(self.name, path=store.vector_path, queries=len(queries))
