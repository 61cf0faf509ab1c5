"""Skeleton indexing (KET-RAG): choose the chunks that get the expensive extraction.

A k-nearest-neighbour graph over the chunk embeddings, PageRank over it, and the top ``beta`` of
the chunks by PageRank form the skeleton: the chunks most central to the corpus. Only they get the
full extraction (Claude, or spaCy offline); every chunk still gets the cheap keyword extraction.

Up to ``EXACT_MAX`` chunks the kNN graph is exact (every pair compared: quadratic). Above, it is
approximate, as an inverted-file index finds neighbours: the vectors are grouped into about √n
cells around centroids (k-means, seeded: the same corpus gives the same skeleton), and each
chunk's neighbours are searched in its own cell and the ``probe`` - 1 cells nearest to it, so the
work grows as n^1.5 rather than n² (bench/scale.py's cost model: hours for 1M and 30M chunks).
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp

EXACT_MAX = 100_000  # chunks up to which the kNN graph compares every pair
PROBE = 16  # cells searched per chunk above EXACT_MAX (its own and the 15 nearest)


def knn_graph(
    vectors: np.ndarray, k: int = 10, block: int = 1024, exact_max: int = EXACT_MAX, probe: int = PROBE
) -> sp.csr_matrix:
    """The symmetric k-nearest-neighbour graph of unit ``vectors`` (cosine weights, clipped at 0):
    exact up to ``exact_max`` vectors, approximate (``probe`` cells of about √n) above."""
    n = len(vectors)
    if n < 2:
        return sp.csr_matrix((n, n), dtype=np.float32)
    k = min(k, n - 1)
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    parts = (
        [_nearest(matrix, np.arange(n), None, k, block)]
        if n <= exact_max
        else [_nearest(matrix, q, c, k, block) for q, c in _cells(matrix, probe, block)]
    )
    rows = np.concatenate([p[0] for p in parts])
    cols = np.concatenate([p[1] for p in parts])
    weights = np.clip(np.concatenate([p[2] for p in parts]), 0.0, None)
    graph = sp.csr_matrix((weights, (rows, cols)), shape=(n, n))
    return graph.maximum(graph.T).tocsr()


def _nearest(
    matrix: np.ndarray, queries: np.ndarray, candidates: np.ndarray | None, k: int, block: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each query's ``k`` most similar candidates (None: every vector), itself excluded (the
    queries are the first of the candidates): rows, columns, similarities."""
    k = min(k, (len(matrix) if candidates is None else len(candidates)) - 1)
    if k < 1:
        empty = np.zeros(0, dtype=np.int64)
        return empty, empty, np.zeros(0, dtype=np.float32)
    pool = matrix if candidates is None else matrix[candidates]  # everyone: no copy
    rows, cols, vals = [], [], []
    for start in range(0, len(queries), block):
        sims = pool[start : min(start + block, len(queries))] @ pool.T
        sims[np.arange(len(sims)), np.arange(start, start + len(sims))] = -np.inf
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        rows.append(np.repeat(queries[start : start + len(sims)], k))
        cols.append(top.reshape(-1) if candidates is None else candidates[top.reshape(-1)])
        vals.append(np.take_along_axis(sims, top, axis=1).reshape(-1))
    return np.concatenate(rows), np.concatenate(cols), np.concatenate(vals)


def _cells(matrix: np.ndarray, probe: int, block: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The vectors in about √n cells (spherical k-means on a sample, seeded), each cell with the
    vectors of the ``probe`` cells nearest to its centroid as its candidates, its own first."""
    n = len(matrix)
    cells = max(2, int(np.sqrt(n)))
    rng = np.random.default_rng(0)
    sample = matrix[rng.choice(n, size=min(n, 40 * cells), replace=False)]
    centroids = sample[rng.choice(len(sample), size=cells, replace=False)].copy()
    for _ in range(5):  # Lloyd's steps on the sample
        nearest = np.argmax(sample @ centroids.T, axis=1)
        for c in range(cells):
            members = sample[nearest == c]
            if len(members):
                mean = members.sum(axis=0)
                centroids[c] = mean / (np.linalg.norm(mean) or 1.0)
    assigned = np.concatenate(
        [np.argmax(matrix[s : s + block] @ centroids.T, axis=1) for s in range(0, n, block)]
    )
    order = np.argsort(assigned, kind="stable")
    bounds = np.searchsorted(assigned[order], np.arange(cells + 1))
    members = [order[bounds[c] : bounds[c + 1]] for c in range(cells)]
    near = np.argsort(-(centroids @ centroids.T), axis=1, kind="stable")[:, : min(probe, cells)]
    return [
        (members[c], np.concatenate([members[c], *(members[d] for d in near[c] if d != c)]))
        for c in range(cells)
        if len(members[c])
    ]


def pagerank(
    graph: sp.spmatrix,
    damping: float = 0.85,
    reset: np.ndarray | None = None,
    iters: int = 50,
    tol: float = 1e-8,
) -> np.ndarray:
    """(Personalised) PageRank by power iteration over a weighted graph; sums to 1.

    ``reset`` is the teleport distribution (uniform when None). Dangling nodes teleport.
    """
    n = graph.shape[0]
    if n == 0:
        return np.zeros(0)
    adjacency = sp.csr_matrix(graph, dtype=np.float64)
    out = np.asarray(adjacency.sum(axis=1)).ravel()
    inv = np.divide(1.0, out, out=np.zeros_like(out), where=out > 0)
    transition = sp.diags(inv) @ adjacency  # row-stochastic where out > 0
    teleport = np.full(n, 1.0 / n) if reset is None else reset / reset.sum()
    dangling = out == 0
    rank = teleport.copy()
    t = transition.T.tocsr()
    for _ in range(iters):
        new = damping * (t @ rank + rank[dangling].sum() * teleport) + (1 - damping) * teleport
        if np.abs(new - rank).sum() < tol:
            rank = new
            break
        rank = new
    return np.asarray(rank)


def skeleton(vectors: np.ndarray, beta: float = 0.25, k: int = 10) -> np.ndarray:
    """Indices of the top ``beta`` share of chunks by PageRank over their kNN graph (at least one
    chunk when there are any; all of them when ``beta`` >= 1), most central first."""
    n = len(vectors)
    if n == 0 or beta <= 0:
        return np.zeros(0, dtype=np.int64)
    count = n if beta >= 1 else max(1, round(beta * n))
    rank = pagerank(knn_graph(vectors, k))
    return np.argsort(-rank, kind="stable")[:count]
