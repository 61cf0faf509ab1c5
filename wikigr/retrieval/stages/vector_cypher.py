"""vector_cypher: vector entry points, then a Cypher traversal of the graph.

The top ``seeds`` passages of the ranking so far are the entry points. From each, Cypher follows
``Chunk→Entity←Chunk`` (a shared entity mentioned by at most ``max_df`` chunks, so hubs like
"United States" are not followed) up to ``hops`` times, and ``LINKS_TO`` between articles. Every
passage reached is scored by its cosine similarity to the question, discounted by ``decay`` per
hop, and added to (or lifted in) the ranking; the paths that reached the best of them are recorded
as facts ("A —[entity]→ B") with the facts those passages state.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from wikigr.retrieval.stage import Candidate, QueryState, Skip, Stage, register
from wikigr.retrieval.stages.fusion import minmax


@dataclass
class VectorCypherOptions:
    seeds: int = 5  # entry points: the top passages so far
    hops: int = 2  # Chunk-Entity-Chunk steps
    max_df: int = 20  # entities mentioned by more chunks than this are not followed
    limit: int = 200  # passages reached per hop, at most
    decay: float = 0.8  # score discount per hop
    weight: float = 0.25  # how much a reached passage's (scaled) similarity counts against the ranking
    max_facts: int = 8  # paths and facts added to the answer's context

    def __post_init__(self) -> None:
        if self.seeds < 1 or self.hops < 1:
            raise ValueError("seeds and hops must be at least 1")


@register
class VectorCypherStage(Stage):
    name = "vector_cypher"
    summary = "from the top passages, Cypher traversal through shared entities and page links"
    Options = VectorCypherOptions

    def run(self, state: QueryState) -> None:
        o = self.options
        if not state.candidates:
            raise Skip("no entry points")
        store = state.ctx.store
        seeds = [c.chunk_id for c in state.candidates[: o.seeds]]
        paths = store.entity_paths(seeds, o.hops, o.max_df, o.limit)
        if not paths:
            raise Skip("no path from the entry points (no entity graph, or only hub entities)")
        reached = {b: (a, e, hop) for a, e, b, hop in paths}
        vectors = store.chunk_vectors(list(reached))
        question = state.vector()
        sims = {cid: float(np.dot(v, question)) for cid, v in vectors.items()}
        scaled = minmax({c.chunk_id: c.score for c in state.candidates})
        by_id = {c.chunk_id: c for c in state.candidates}
        for cid, c in by_id.items():
            c.score = scaled[cid]
        top_sim = max(sims.values(), default=1.0) or 1.0
        scored = {
            cid: o.weight * max(sim, 0.0) / top_sim * o.decay ** (reached[cid][2] - 1)
            for cid, sim in sims.items()
        }
        best = dict(sorted(scored.items(), key=lambda kv: -kv[1])[: max(state.top_k, 10)])
        missing = {cid: s for cid, s in best.items() if cid not in by_id}
        for hit in store.chunk_details(missing):
            by_id[hit.chunk_id] = Candidate.from_hit(hit, "vector_cypher")
        for cid, score in best.items():
            candidate = by_id[cid]
            candidate.scores["path"] = score
            candidate.score = max(candidate.score, score)
        state.candidates = list(by_id.values())
        state.sort()
        # The context: the paths to the best reached passages, and the facts they state.
        top_ids = [c.chunk_id for c in state.candidates[: state.top_k] if c.chunk_id in reached]
        names = store.entity_names([reached[cid][1] for cid in top_ids])
        titles = {c.chunk_id: c.article_title for c in by_id.values()}
        lines = []
        for cid in top_ids[: o.max_facts]:
            start, entity, _ = reached[cid]
            lines.append(f"{titles.get(start, start)} —[{names.get(entity, entity)}]→ {titles.get(cid, cid)}")
        for _, subject, predicate, obj, _ in store.chunk_facts(top_ids)[: o.max_facts]:
            lines.append(f"{subject} — {predicate} — {obj}")
        state.facts.extend(line for line in lines if line not in state.facts)
        state.note(
            self.name, entry_points=len(seeds), reached=len(reached), added=len(missing), paths=lines[:5]
        )
