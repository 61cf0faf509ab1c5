"""The entity graph in memory, for queries: passage and entity nodes in one sparse graph,
question-to-entity linking, and personalized PageRank (HippoRAG 2 style).

Loaded once per agent from the pack's store (:meth:`EntityGraph.load`) and cached in the
retrieval Context.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import scipy.sparse as sp

from wikigr.graph.extract import CONCEPT, STOP_NAMES, normalize, title_name

if TYPE_CHECKING:
    from wikigr.pack.store import Store

CO_OCCURS = "CO_OCCURS"
SYNONYM = "SYNONYM"

_TOKEN = re.compile(r"[\w.+#()'’]+")


@dataclass
class EdgeWeights:
    """Edge weights of the PPR graph, by kind."""

    mention: float = 1.0  # chunk -- entity
    home: float = 0.0  # chunk -- the entity its article's title names, times the entity's df
    cooccur: float = 0.0  # entity -- entity, per co-occurring chunk (capped at 3)
    synonym: float = 1.0  # entity -- entity, times the similarity
    fact: float = 1.0  # entity -- entity, per fact


class EntityGraph:
    """Chunks (nodes ``0..n_chunks-1``) and entities (``n_chunks..``) in one undirected graph."""

    def __init__(
        self,
        chunk_ids: Sequence[str],
        entity_keys: Sequence[str],
        entity_types: Sequence[str],
        mentions: Sequence[tuple[str, str]],
        relations: Sequence[tuple[str, str, str, float]],
        weights: EdgeWeights | None = None,
        max_ngram: int = 8,
        homes: Sequence[tuple[str, str]] = (),
        has_vectors: bool = False,
    ) -> None:
        weights = weights or EdgeWeights()
        self.chunk_ids = list(chunk_ids)
        self.chunk_index = {c: i for i, c in enumerate(self.chunk_ids)}
        self.entity_keys = list(entity_keys)
        self.entity_index = {k: i for i, k in enumerate(self.entity_keys)}
        self.entity_types = list(entity_types)
        self.n_chunks = len(self.chunk_ids)
        self.size = self.n_chunks + len(self.entity_keys)
        self.max_ngram = max_ngram
        rows: list[int] = []
        cols: list[int] = []
        vals: list[float] = []
        for chunk_id, key in mentions:
            c, e = self.chunk_index.get(chunk_id), self.entity_index.get(key)
            if c is not None and e is not None:
                rows.append(c)
                cols.append(self.n_chunks + e)
                vals.append(weights.mention)
        if weights.home > 0:
            mentions_of = np.bincount(np.asarray(cols, dtype=np.int64), minlength=self.size)
            for chunk_id, key in homes:
                c, e = self.chunk_index.get(chunk_id), self.entity_index.get(key)
                if c is not None and e is not None:
                    rows.append(c)
                    cols.append(self.n_chunks + e)
                    vals.append(weights.home * max(1, int(mentions_of[self.n_chunks + e])))
        self.relations = 0
        for a, b, kind, weight in relations:
            i, j = self.entity_index.get(a), self.entity_index.get(b)
            if i is None or j is None or i == j:
                continue
            if kind == CO_OCCURS:
                w = weights.cooccur * min(weight, 3.0)
            elif kind == SYNONYM:
                w = weights.synonym * weight
            else:
                w = weights.fact * weight
            if w > 0:
                rows.append(self.n_chunks + i)
                cols.append(self.n_chunks + j)
                vals.append(w)
                self.relations += 1
        half = sp.csr_matrix(
            (np.asarray(vals, dtype=np.float64), (np.asarray(rows, dtype=np.int64), cols)),
            shape=(self.size, self.size),
        )
        adjacency = (half + half.T).tocsr()
        degree = np.asarray(adjacency.sum(axis=1)).ravel()
        self.dangling = degree == 0
        inv = np.divide(1.0, degree, out=np.zeros_like(degree), where=degree > 0)
        # Column-stochastic transition (transposed row-normalised adjacency): p' = T @ p.
        self.transition = (sp.diags(inv) @ adjacency).T.tocsr()
        # Document frequency of each entity: the number of chunks mentioning it.
        mention_matrix = adjacency[: self.n_chunks, self.n_chunks :]
        self.entity_df = np.asarray((mention_matrix > 0).sum(axis=0)).ravel()
        self.has_vectors = has_vectors  # the store holds name vectors (packs before them do not)

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, store: Store, weights: EdgeWeights | None = None) -> EntityGraph:
        weights = weights or EdgeWeights()
        entities = store.entities()
        homes: list[tuple[str, str]] = []
        if weights.home > 0:
            for chunk_id, title in store.chunk_titles():
                key = normalize(title_name(title))
                if key:
                    homes.append((chunk_id, key))
        skip = [CO_OCCURS] if weights.cooccur == 0 else []  # the bulk of the relations: load only if used
        return cls(
            store.chunk_ids(),
            [e[0] for e in entities],
            [e[1] for e in entities],
            store.entity_mentions(),
            store.entity_relations(skip),
            weights,
            homes=homes,
            has_vectors=store.has_entity_vectors,
        )

    @property
    def empty(self) -> bool:
        return not self.entity_keys

    def neighbours(self, node: int) -> np.ndarray:
        """The nodes joined to ``node`` by an edge (the graph is undirected: the transition matrix's
        row of a node lists them). Chunks are ``0..n_chunks-1``, entities ``n_chunks + e``."""
        start, end = int(self.transition.indptr[node]), int(self.transition.indptr[node + 1])
        return np.asarray(self.transition.indices[start:end])

    def chunk_entities(self, chunk: int) -> np.ndarray:
        """The entities (indices) a chunk mentions (or whose home page it is)."""
        nodes = self.neighbours(chunk)
        return nodes[nodes >= self.n_chunks] - self.n_chunks

    def entity_chunks(self, entity: int) -> np.ndarray:
        """The chunks that mention an entity (or are its home page)."""
        nodes = self.neighbours(self.n_chunks + entity)
        return nodes[nodes < self.n_chunks]

    # -- linking -------------------------------------------------------------------------------

    def link(self, question: str, concepts: bool = True) -> dict[int, float]:
        """Entities the question names: entity index -> 1.0.

        Word n-grams of the normalised question are looked up by exact name (the longest match
        wins where matches overlap). A one-word match counts only where the question writes the
        word as a name (capitalised, not first) or as a code identifier; a noun phrase
        (``concept``) only with two words or more, and only when ``concepts`` is set.
        """
        words = _TOKEN.findall(question)
        tokens: list[str] = []
        named: list[bool] = []
        for i, word in enumerate(words):
            for part in normalize(word).split():
                tokens.append(part)
                named.append((word[:1].isupper() and i > 0) or any(c in word for c in "._()"))
        found: list[tuple[int, int, int]] = []  # (start, end, entity)
        for n in range(min(self.max_ngram, len(tokens)), 0, -1):
            for start in range(len(tokens) - n + 1):
                gram = tokens[start : start + n]
                if all(t in STOP_NAMES for t in gram):
                    continue
                e = self.entity_index.get(" ".join(gram))
                if e is None:
                    continue
                if n == 1 and not named[start]:
                    continue
                if self.entity_types[e] == CONCEPT and (n == 1 or not concepts):
                    continue
                if any(s <= start and start + n <= end for s, end, _ in found):
                    continue  # inside a longer match
                found.append((start, start + n, e))
        return {e: 1.0 for _, _, e in found}

    def link_by_meaning(self, store: Store, vectors: np.ndarray, threshold: float) -> dict[int, float]:
        """For each row of ``vectors`` (name spans of the question, embedded), the entity whose
        name vector is nearest (exact cosine, in the store), when the similarity is at least
        ``threshold``: entity index -> similarity."""
        found: dict[int, float] = {}
        if not self.has_vectors:
            return found
        for vector in vectors:
            nearest = store.nearest_entity(vector.tolist())
            if nearest is None or nearest[1] < threshold or nearest[0] not in self.entity_index:
                continue
            entity = self.entity_index[nearest[0]]
            found[entity] = max(found.get(entity, 0.0), nearest[1])
        return found

    # -- personalized PageRank -----------------------------------------------------------------

    def ppr(self, reset: np.ndarray, damping: float = 0.5, iters: int = 30, tol: float = 1e-7) -> np.ndarray:
        """Personalized PageRank with the teleport distribution ``reset`` (over all nodes)."""
        total = float(reset.sum())
        if total <= 0:
            return np.zeros(self.size)
        teleport = reset / total
        rank = teleport.copy()
        for _ in range(iters):
            new = damping * (self.transition @ rank + rank[self.dangling].sum() * teleport)
            new += (1 - damping) * teleport
            if float(np.abs(new - rank).sum()) < tol:
                return np.asarray(new)
            rank = new
        return np.asarray(rank)
