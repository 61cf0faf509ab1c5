"""ppr: personalized PageRank over the pack's entity graph (HippoRAG 2 style).

Passage (chunk) nodes and entity nodes share one graph: a chunk links to the entities it
mentions, entities link to each other through facts and synonyms (and, when weighted, through
co-occurrence). The question is linked to entities by exact name match of its word n-grams (a
Russian question's also by their stems), else by meaning (its names' embeddings); the
reset distribution puts each linked entity's weight on it divided by the number of chunks that
mention it (a specific name counts more than a common one), and the ranking so far (min-max
scaled, times ``passage_weight``) on the passages. Chunks are then ranked by their PageRank mass,
optionally fused with the ranking so far. The graph is loaded once per agent.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from wikigr.graph.extract import CODE, cyrillic_names, keyword_entities, normalize
from wikigr.retrieval.stage import Candidate, Context, QueryState, Skip, Stage, register
from wikigr.retrieval.stages.fusion import minmax

if TYPE_CHECKING:  # scipy (behind the graph index) is imported only when the stage runs
    from wikigr.graph.index import EdgeWeights, EntityGraph


def entity_graph(ctx: Context, weights: EdgeWeights) -> EntityGraph:
    """The pack's entity graph with these edge weights, loaded once per agent."""
    from wikigr.graph.index import EntityGraph

    key = f"entity_graph:{weights}"
    graph = ctx.cache.get(key)
    if graph is None:
        graph = EntityGraph.load(ctx.store, weights)
        ctx.cache[key] = graph
    assert isinstance(graph, EntityGraph)
    return graph


def pack_entity_graph(ctx: Context, options: PPROptions | None = None) -> EntityGraph | None:
    """The pack's entity graph with the edge weights of ``options`` (default: the ppr stage's),
    loaded once per agent; None when the pack has none (asked before loading: no scipy then)."""
    if not ctx.has_entity_graph:
        return None
    from wikigr.graph.index import EdgeWeights

    o = options or PPROptions()
    return entity_graph(ctx, EdgeWeights(cooccur=o.cooccur, synonym=o.synonym, fact=o.fact, home=o.home))


def loaded_entity_graph(ctx: Context) -> EntityGraph | None:
    """The pack's entity graph if a stage has loaded it already (with any edge weights), else None:
    for a caller that uses the graph when it is at hand but should not pay for loading it."""
    for key, value in ctx.cache.items():
        if key.startswith("entity_graph:"):
            return value  # type: ignore[no-any-return]
    return None


@dataclass
class PPROptions:
    damping: float = 0.85  # probability of following an edge (1 - damping: back to the seeds)
    passage_weight: float = 0.05  # weight of the ranking so far in the reset, relative to entities
    candidates: int = 30  # chunks taken from the PageRank ranking
    weight: float = 1.0  # PageRank's share of the final score; the ranking so far weighs 1 - weight
    cooccur: float = 0.0  # edge weights by kind (see wikigr/graph/index.py)
    home: float = 1.0  # chunk -- the entity its title names: times all the entity's mentions
    synonym: float = 1.0
    fact: float = 1.0
    iterations: int = 30
    link_concepts: bool = False  # link the question to noun phrases too, not only to names
    link_threshold: float = 0.9  # embedding match: least cosine similarity of a question span to a name
    require_link: bool = True  # skip (keep the ranking so far) when the question names no entity

    def __post_init__(self) -> None:
        if not 0.0 < self.damping < 1.0:
            raise ValueError("damping must be between 0 and 1 (exclusive)")
        if not 0.0 <= self.weight <= 1.0:
            raise ValueError("weight must be between 0 and 1")
        if self.candidates < 1:
            raise ValueError("candidates must be at least 1")


def link_question(state: QueryState, graph: EntityGraph, options: PPROptions) -> tuple[dict[int, float], int]:
    """The entities the question names: exact matches of its word n-grams (weight 1); then, for
    each name span of the question of two words or more (one word is too little to embed) that
    matched nothing exactly, the entity nearest in meaning (weight: the similarity, when at least
    ``link_threshold``). Returns them and the number linked by meaning."""
    linked = graph.link(state.question, options.link_concepts)
    by_meaning = 0
    if graph.has_vectors and options.link_threshold < 1.0:
        names = [m.name for m in keyword_entities("", state.question) if m.type != CODE]
        spans = [
            name
            for name in [*names, *cyrillic_names(state.question)]
            if " " in normalize(name) and graph.entity_index.get(normalize(name)) not in linked
        ]
        if spans:
            nearest = graph.link_by_meaning(
                state.ctx.store, state.ctx.embedder.embed(spans), options.link_threshold
            )
            for entity, sim in nearest.items():
                if entity not in linked:
                    linked[entity] = sim
                    by_meaning += 1
    return linked, by_meaning


def run_ppr(
    state: QueryState, graph: EntityGraph, options: PPROptions, linked: dict[int, float]
) -> np.ndarray:
    """PageRank mass of every chunk for this question, seeded by the ``linked`` entities."""
    reset = np.zeros(graph.size)
    for entity, weight in linked.items():
        reset[graph.n_chunks + entity] += weight / max(1, int(graph.entity_df[entity]))
    current = minmax({c.chunk_id: c.score for c in state.candidates})
    for chunk_id, score in current.items():
        index = graph.chunk_index.get(chunk_id)
        if index is not None:
            reset[index] += options.passage_weight * max(score, 1e-3)
    mass: np.ndarray = graph.ppr(reset, options.damping, options.iterations)[: graph.n_chunks]
    return mass


@register
class PPRStage(Stage):
    name = "ppr"
    summary = "personalized PageRank over the entity graph, seeded by linked entities and the ranking"
    Options = PPROptions

    def run(self, state: QueryState) -> None:
        o = self.options
        t0 = time.perf_counter()
        graph = pack_entity_graph(state.ctx, o)
        if graph is None:
            raise Skip("the pack has no entity graph (add one: wikigr pack graph PACK)")
        load_ms = (time.perf_counter() - t0) * 1000
        if not state.candidates:
            raise Skip("no candidates to seed from")
        linked, by_meaning = link_question(state, graph, o)
        if o.require_link and not linked:
            # Without a question entity the walk only smooths the ranking over the graph: keep it.
            raise Skip("the question names no entity of the graph")
        mass = run_ppr(state, graph, o, linked)
        top = np.argsort(-mass, kind="stable")[: o.candidates]
        ppr_scores = {graph.chunk_ids[i]: float(mass[i]) for i in top if mass[i] > 0}
        by_id = {c.chunk_id: c for c in state.candidates}
        missing = {cid: s for cid, s in ppr_scores.items() if cid not in by_id}
        for hit in state.ctx.store.chunk_details(missing):
            by_id[hit.chunk_id] = Candidate.from_hit(hit, "ppr")
        scaled = minmax(ppr_scores)
        before = minmax({c.chunk_id: c.score for c in state.candidates})
        for chunk_id, candidate in by_id.items():
            if chunk_id in ppr_scores:
                candidate.scores["ppr"] = ppr_scores[chunk_id]
            old = before.get(chunk_id, 0.0)
            candidate.score = o.weight * scaled.get(chunk_id, 0.0) + (1 - o.weight) * old
        state.candidates = list(by_id.values())
        state.sort()
        state.note(
            self.name,
            linked=[graph.entity_keys[e] for e in linked][:20],
            linked_by_meaning=by_meaning if graph.has_vectors else "no entity vectors in this pack",
            added=len(missing),
            graph_load_ms=round(load_ms, 1),
        )
