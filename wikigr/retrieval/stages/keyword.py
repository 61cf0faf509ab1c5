"""keyword: BM25 over the pack's chunks, fused with the ranking so far."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wikigr.errors import InvalidPackError
from wikigr.pack.keyword import CHUNK_IDS_FILE, KEYWORD_DIR
from wikigr.retrieval.stage import Candidate, QueryState, Stage, register
from wikigr.retrieval.stages.fusion import minmax, rrf


@dataclass
class KeywordOptions:
    candidates: int = 30  # chunks fetched per query
    fusion: Literal["rrf", "convex"] = "convex"
    weight: float = 0.4  # the keyword side's weight (the ranking so far weighs 1 - weight for convex)
    rrf_k: int = 60

    def __post_init__(self) -> None:
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError("weight must be between 0 and 1")


@register
class KeywordStage(Stage):
    name = "keyword"
    summary = "BM25 keyword search, fused with the vector ranking"
    Options = KeywordOptions

    def run(self, state: QueryState) -> None:
        index = state.ctx.keyword_index()
        keyword: dict[str, float] = {}
        for query in state.queries or [state.question]:  # read in the question's language
            for chunk_id, score in index.search(query, self.options.candidates, state.language):
                keyword[chunk_id] = max(keyword.get(chunk_id, 0.0), score)
        by_id = {c.chunk_id: c for c in state.candidates}
        missing = {cid: s for cid, s in keyword.items() if cid not in by_id}
        for hit in state.ctx.store.chunk_details(missing):
            by_id[hit.chunk_id] = Candidate.from_hit(hit, "keyword")
        uncited = [cid for cid in missing if cid not in by_id]
        if uncited and len(state.ctx.store.chunk_texts(uncited)) < len(uncited):  # not in the store at all
            raise InvalidPackError(
                f"corrupt keyword index: {KEYWORD_DIR}/{CHUNK_IDS_FILE} names chunks the store does not "
                f"hold, e.g. {uncited[0][:80]!r} (run `wikigr pack validate`)"
            )
        for chunk_id, score in keyword.items():
            if chunk_id in by_id:
                by_id[chunk_id].scores["keyword"] = score
        current = [c.chunk_id for c in state.candidates]
        w = self.options.weight
        if self.options.fusion == "rrf":
            ranked_keyword = sorted(keyword, key=lambda cid: -keyword[cid])
            fused = rrf([(current, 1.0), (ranked_keyword, w / max(1e-9, 1 - w))], self.options.rrf_k)
        else:
            dense = minmax({c.chunk_id: c.score for c in state.candidates})
            sparse = minmax(keyword)
            fused = {cid: (1 - w) * dense.get(cid, 0.0) + w * sparse.get(cid, 0.0) for cid in by_id}
        for chunk_id, candidate in by_id.items():
            candidate.score = fused.get(chunk_id, 0.0)
        state.candidates = list(by_id.values())
        state.sort()
        state.note(
            self.name,
            keyword_hits=len(keyword),
            added=len(missing),
            fusion=self.options.fusion,
            language=state.language,
        )
