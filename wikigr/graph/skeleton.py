"""Skeleton indexing (KET-RAG): choose the chunks that get the expensive extraction.

A k-nearest-neighbour graph over the chunk embeddings, PageRank over it, and the top ``beta`` of
the chunks by PageRank form the skeleton: the chunks most central to the corpus. Only they get the
full extraction (Claude, or spaCy offline); every chunk still gets the cheap keyword extraction.
"""

from __future__ import annotations

import numpy as np
import scipy.sparse as sp


def knn_graph(vectors: np.ndarray, k: int = 10, block: int = 1024) -> sp.csr_matrix:
    """The symmetric k-nearest-neighbour graph of unit ``vectors`` (cosine weights, clipped at 0)."""
    n = len(vectors)
    if n < 2:
        return sp.csr_matrix((n, n), dtype=np.float32)
    k = min(k, n - 1)
    matrix = np.ascontiguousarray(vectors, dtype=np.float32)
    rows, cols, vals = [], [], []
    for start in range(0, n, block):
        sims = matrix[start : start + block] @ matrix.T
        for i in range(len(sims)):
            sims[i, start + i] = -np.inf
        top = np.argpartition(-sims, k - 1, axis=1)[:, :k]
        rows.append(np.repeat(np.arange(start, start + len(sims)), k))
        cols.append(top.reshape(-1))
        vals.append(np.take_along_axis(sims, top, axis=1).reshape(-1))
    weights = np.clip(np.concatenate(vals), 0.0, None)
    graph = sp.csr_matrix((weights, (np.concatenate(rows), np.concatenate(cols))), shape=(n, n))
    return graph.maximum(graph.T).tocsr()


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
