"""The entity graph in memory, for queries: passage and entity nodes in one sparse graph,
question-to-entity linking, and personalized PageRank (HippoRAG 2 style).

Loaded once per agent from the pack's store (:meth:`EntityGraph.load`) and cached in the
retrieval Context. Building it from the store takes a dozen store queries and scipy (~0.3 s in a
fresh process for 2,000 chunks); so the graph built is also kept in ``$WIKIGR_HOME/cache/graph/``
(:func:`read_graph_cache`), named after the store's sha256, the edge weights and this code, and a
later process reads it back in a few milliseconds without importing scipy.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import io
import re
import sys
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from wikigr.graph.extract import CONCEPT, CYRILLIC, STOP_NAMES, normalize, russian_stems, title_name

if TYPE_CHECKING:
    from wikigr.pack.reader import PackStore

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


class SparseMatrix:
    """A square CSR matrix of float64 as numpy arrays, with what PageRank needs: ``matrix @ vector``
    and ``matrix[i, j]``.

    A product sums each row's entries in stored order from 0.0, as scipy's CSR product does, so the
    two give the same bits. numpy's ``bincount`` does the first products of a process (importing
    scipy.sparse costs ~0.15 s: more than a question's PageRank); scipy's, about twice as fast, the
    others: once scipy.sparse is imported anyway, or after the first few questions
    (``SCIPY_AFTER`` products) of a long-lived process such as the MCP server."""

    SCIPY_AFTER = 100

    def __init__(self, indptr: np.ndarray, indices: np.ndarray, data: np.ndarray, size: int) -> None:
        self.indptr = indptr
        self.indices = indices
        self.data = data
        self.shape = (size, size)
        self._rows: np.ndarray | None = None
        self._scipy: Any = None
        self._products = 0

    @classmethod
    def from_scipy(cls, matrix: Any) -> SparseMatrix:
        matrix = matrix.tocsr()
        made = cls(
            np.asarray(matrix.indptr, dtype=np.int64),
            np.asarray(matrix.indices, dtype=np.int64),
            np.asarray(matrix.data, dtype=np.float64),
            int(matrix.shape[0]),
        )
        made._scipy = matrix
        return made

    @property
    def nnz(self) -> int:
        return len(self.data)

    def __matmul__(self, vector: np.ndarray) -> np.ndarray:
        if self._scipy is None:
            self._products += 1
            if self._products > self.SCIPY_AFTER:
                import scipy.sparse  # noqa: F401  (picked up below)
            csr_matrix = getattr(sys.modules.get("scipy.sparse"), "csr_matrix", None)
            if csr_matrix is not None:
                self._scipy = csr_matrix((self.data, self.indices, self.indptr), shape=self.shape)
        if self._scipy is not None:
            return np.asarray(self._scipy @ vector)
        if self._rows is None:
            self._rows = np.repeat(np.arange(self.shape[0], dtype=np.int64), np.diff(self.indptr))
        return np.bincount(self._rows, weights=self.data * vector[self.indices], minlength=self.shape[0])

    def __getitem__(self, key: tuple[int, int]) -> float:
        row, col = key
        start, end = int(self.indptr[row]), int(self.indptr[row + 1])
        return float(self.data[start:end][self.indices[start:end] == col].sum())


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
        import scipy.sparse as sp  # only to build a graph; a cached one is read without it

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
        self.transition = SparseMatrix.from_scipy((sp.diags(inv) @ adjacency).T.tocsr())
        # Document frequency of each entity: the number of chunks mentioning it.
        mention_matrix = adjacency[: self.n_chunks, self.n_chunks :]
        self.entity_df = np.asarray((mention_matrix > 0).sum(axis=0)).ravel()
        self.has_vectors = has_vectors  # the store holds name vectors (packs before them do not)
        self.stems: dict[str, int] | None = None  # see stem_index

    # -- loading -------------------------------------------------------------------------------

    @classmethod
    def load(cls, store: PackStore, weights: EdgeWeights | None = None) -> EntityGraph:
        """The store's entity graph with these edge weights: read from the cache when it holds
        this store's, else built from the store and written to the cache."""
        weights = weights or EdgeWeights()
        cache = graph_cache_file(store, weights)
        if cache is not None:
            cached = read_graph_cache(cache)
            if cached is not None:
                return cached
        graph = cls.from_store(store, weights)
        if cache is not None:
            write_graph_cache(graph, cache)
        return graph

    @classmethod
    def from_store(cls, store: PackStore, weights: EdgeWeights) -> EntityGraph:
        entities = store.entities()
        homes: list[tuple[str, str]] = []
        if weights.home > 0:
            for chunk_id, _, title in store.chunk_articles():
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

    def bridge_entities(self, chunk: int, named: set[int] | dict[int, float], max_df: int) -> list[int]:
        """The entities of a chunk that can lead to another passage: not ``named`` (by the
        question), mentioned by more than one passage and at most ``max_df`` (a specific name)."""
        df = self.entity_df
        return [e for e in map(int, self.chunk_entities(chunk)) if e not in named and 1 < df[e] <= max_df]

    def entity_chunks(self, entity: int) -> np.ndarray:
        """The chunks that mention an entity (or are its home page)."""
        nodes = self.neighbours(self.n_chunks + entity)
        return nodes[nodes < self.n_chunks]

    # -- linking -------------------------------------------------------------------------------

    def link(self, question: str, concepts: bool = True) -> dict[int, float]:
        """Entities the question names: entity index -> 1.0.

        Word n-grams of the normalised question are looked up by exact name (the longest match
        wins where matches overlap); a Russian question's n-grams also by their words' stems
        (:meth:`stem_index`), so that an inflected name finds its entity. A one-word match
        counts only where the question writes the word as a name (capitalised, not first) or as
        a code identifier; a noun phrase (``concept``) only with two words or more, and only when
        ``concepts`` is set.
        """
        words = _TOKEN.findall(question)
        tokens: list[str] = []
        named: list[bool] = []
        for i, word in enumerate(words):
            for part in normalize(word).split():
                tokens.append(part)
                named.append((word[:1].isupper() and i > 0) or any(c in word for c in "._()"))
        stems = russian_stems(tokens) if CYRILLIC.search(question) else None
        found: list[tuple[int, int, int]] = []  # (start, end, entity)
        for n in range(min(self.max_ngram, len(tokens)), 0, -1):
            for start in range(len(tokens) - n + 1):
                gram = tokens[start : start + n]
                if all(t in STOP_NAMES for t in gram):
                    continue
                e = self.entity_index.get(" ".join(gram))
                if e is None and stems is not None:  # "Кеном Томпсоном" names "Кен Томпсон"
                    e = self.stem_index().get(" ".join(stems[start : start + n]))
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

    def stem_index(self) -> dict[str, int]:
        """The entities whose names hold Cyrillic words, by the Russian stems of their words
        ("лаборатория белла" is "лаборатор белл"); made on the first Russian question."""
        if self.stems is None:
            self.stems = {}
            for e, key in enumerate(self.entity_keys):
                if CYRILLIC.search(key):
                    self.stems.setdefault(" ".join(russian_stems(key.split())), e)
        return self.stems

    def link_by_meaning(self, store: PackStore, vectors: np.ndarray, threshold: float) -> dict[int, float]:
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


# -- the graph cache ---------------------------------------------------------------------------

GRAPH_CACHE_FORMAT = 1
GRAPH_CACHE_KEEP = 64  # graphs kept (one per pack version and edge weights)
MAX_GRAPH_CACHE_BYTES = 4 * 1024 * 1024 * 1024
_SEPARATOR = "\x00"  # between the strings of a list (no id, name or type holds it)
_ARRAYS: dict[str, np.dtype[Any]] = {
    "meta": np.dtype(np.int64),  # format, chunks, entities, relations, has_vectors, max_ngram
    "indptr": np.dtype(np.int64),
    "indices": np.dtype(np.int64),
    "data": np.dtype(np.float64),
    "dangling": np.dtype(np.bool_),
    "entity_df": np.dtype(np.int64),
    "chunk_ids": np.dtype(np.uint8),  # UTF-8, joined by _SEPARATOR
    "entity_keys": np.dtype(np.uint8),
    "entity_types": np.dtype(np.uint8),
}


_CACHED_ATTRIBUTES = frozenset(
    {
        "chunk_ids",
        "chunk_index",
        "entity_keys",
        "entity_index",
        "entity_types",
        "n_chunks",
        "size",
        "max_ngram",
        "relations",
        "dangling",
        "transition",
        "entity_df",
        "has_vectors",
        "stems",
    }
)


@functools.cache
def _code_digest() -> str:
    """The sha256 of the code that builds a graph: a cache written by other code is not read."""
    digest = hashlib.sha256()
    for module in (Path(__file__), Path(__file__).with_name("extract.py")):
        digest.update(module.read_bytes())
    return digest.hexdigest()


def graph_cache_file(store: PackStore, weights: EdgeWeights) -> Path | None:
    """Where the graph of ``store`` with ``weights`` is cached (:func:`wikigr.home.store_cache_file`:
    named after the store's files, the weights, the cache format and this code)."""
    from wikigr.home import store_cache_file

    fmt = f"wikigr entity graph {GRAPH_CACHE_FORMAT}"
    return store_cache_file(store, "graph", fmt, _code_digest(), repr(weights))


def _strings(values: list[str]) -> np.ndarray:
    return np.frombuffer(_SEPARATOR.join(values).encode("utf-8"), dtype=np.uint8)


def write_graph_cache(graph: EntityGraph, path: Path) -> None:
    """Save ``graph`` at ``path`` (``.npz``, no pickles), whole or not at all; a cache that cannot
    be written only costs time."""
    from wikigr.home import prune, write_atomic

    if set(vars(graph)) != _CACHED_ATTRIBUTES:
        return  # EntityGraph has attributes this cache does not know (read_graph_cache sets these)
    lists = (graph.chunk_ids, graph.entity_keys, graph.entity_types)
    if any(_SEPARATOR in value for values in lists for value in values):
        return
    arrays = {
        "meta": np.array(
            [
                GRAPH_CACHE_FORMAT,
                graph.n_chunks,
                len(graph.entity_keys),
                graph.relations,
                int(graph.has_vectors),
                graph.max_ngram,
            ],
            dtype=np.int64,
        ),
        "indptr": graph.transition.indptr,
        "indices": graph.transition.indices,
        "data": graph.transition.data,
        "dangling": np.asarray(graph.dangling, dtype=np.bool_),
        "entity_df": np.asarray(graph.entity_df, dtype=np.int64),
        "chunk_ids": _strings(graph.chunk_ids),
        "entity_keys": _strings(graph.entity_keys),
        "entity_types": _strings(graph.entity_types),
    }
    buffer = io.BytesIO()
    np.savez(buffer, allow_pickle=False, **arrays)
    with contextlib.suppress(OSError):
        write_atomic(path, buffer.getvalue())
        prune(path.parent, GRAPH_CACHE_KEEP)


def _split(blob: np.ndarray, count: int) -> list[str] | None:
    if count == 0:
        return [] if blob.size == 0 else None
    values = blob.tobytes().decode("utf-8").split(_SEPARATOR)
    return values if len(values) == count else None


def read_graph_cache(path: Path) -> EntityGraph | None:
    """The graph saved at ``path``, or None when there is none or it does not check out: every
    array must have its dtype and shape, the matrix must be a valid CSR matrix over the graph's
    nodes with finite weights, and the ids must be unique (a file is data, never code: no pickles)."""
    try:
        if path.stat().st_size > MAX_GRAPH_CACHE_BYTES:
            return None
        with path.open("rb") as f:
            loaded = np.load(f, allow_pickle=False)
            if not isinstance(loaded, np.lib.npyio.NpzFile):
                return None
            with loaded as npz:
                if set(npz.files) != set(_ARRAYS):
                    return None
                arrays = {name: npz[name] for name in _ARRAYS}
    except (OSError, ValueError, EOFError, KeyError, TypeError, zipfile.BadZipFile, zlib.error):
        return None
    for name, dtype in _ARRAYS.items():
        if arrays[name].dtype != dtype or arrays[name].ndim != 1:
            return None
    meta = arrays["meta"]
    if len(meta) != 6 or int(meta[0]) != GRAPH_CACHE_FORMAT or int(meta[1:].min()) < 0:
        return None
    n_chunks, n_entities, relations, has_vectors, max_ngram = (int(v) for v in meta[1:])
    size = n_chunks + n_entities
    indptr, indices, data = arrays["indptr"], arrays["indices"], arrays["data"]
    if len(indptr) != size + 1 or indptr[0] != 0 or indptr[-1] != len(indices) or len(data) != len(indices):
        return None
    if np.any(indptr[1:] < indptr[:-1]) or not bool(np.isfinite(data).all()):
        return None
    if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= size):
        return None
    if len(arrays["dangling"]) != size or len(arrays["entity_df"]) != n_entities:
        return None
    if n_entities and int(arrays["entity_df"].min()) < 0:
        return None
    try:
        chunk_ids = _split(arrays["chunk_ids"], n_chunks)
        entity_keys = _split(arrays["entity_keys"], n_entities)
        entity_types = _split(arrays["entity_types"], n_entities)
    except UnicodeDecodeError:
        return None
    if chunk_ids is None or entity_keys is None or entity_types is None:
        return None
    graph = EntityGraph.__new__(EntityGraph)
    graph.chunk_ids = chunk_ids
    graph.chunk_index = {c: i for i, c in enumerate(chunk_ids)}
    graph.entity_keys = entity_keys
    graph.entity_index = {k: i for i, k in enumerate(entity_keys)}
    graph.entity_types = entity_types
    if len(graph.chunk_index) != n_chunks or len(graph.entity_index) != n_entities:
        return None
    graph.n_chunks = n_chunks
    graph.size = size
    graph.max_ngram = max_ngram
    graph.relations = relations
    graph.dangling = arrays["dangling"]
    graph.transition = SparseMatrix(indptr, indices, data, size)
    graph.entity_df = arrays["entity_df"]
    graph.has_vectors = bool(has_vectors)
    graph.stems = None
    return graph
