"""Vectors of texts embedded before, kept in the wikigr home so that a rebuild or a new process
embeds only the texts it has not seen (:class:`EmbeddingCache`, :func:`embed_cached`)."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

import numpy as np

from wikigr import schema
from wikigr.embed import Embedder, embed_queries


class EmbeddingCache:
    """Vectors of texts embedded before, kept in a folder of the wikigr home (``EMBEDDER.npy`` and
    ``.keys.json``: sha256 of the text -> row), so that a rebuild or a new process embeds only the
    texts it has not seen. Written atomically; at most ``MAX`` vectors; a cache that cannot be read
    or written only costs time."""

    MAX = 200_000

    def __init__(self, root: Path, embedder: Embedder) -> None:
        safe = "".join(c if c.isalnum() or c in "-._" else "_" for c in embedder.name)
        if len(safe) > 80:  # a long local path
            safe = safe[:40] + "-" + hashlib.sha256(embedder.name.encode("utf-8")).hexdigest()[:16]
        digest = getattr(embedder, "digest", "")
        if digest:  # vectors of other weights under the same name are not these
            safe += "-" + digest[:12]
        self.vectors_file = root / f"{safe}.npy"
        self.keys_file = root / f"{safe}.keys.json"
        self.dimension = embedder.dimension
        self.keys: list[str] = []
        self.vectors = np.zeros((0, self.dimension), np.float32)
        try:
            keys = schema.parse_json(self.keys_file.read_bytes())
            vectors = np.load(self.vectors_file)
            if isinstance(keys, list) and vectors.shape == (len(keys), self.dimension):
                self.keys, self.vectors = [str(k) for k in keys], vectors.astype(np.float32)
        except (OSError, ValueError):
            pass
        self.index = {k: i for i, k in enumerate(self.keys)}

    @staticmethod
    def key(text: str) -> str:
        return hashlib.sha256(text.encode("utf-8")).hexdigest()

    def get(self, texts: list[str]) -> dict[str, np.ndarray]:
        found = {}
        for text in texts:
            row = self.index.get(self.key(text))
            if row is not None:
                found[text] = self.vectors[row]
        return found

    def add(self, texts: list[str], vectors: np.ndarray) -> None:
        if not texts:
            return
        keys = self.keys + [self.key(t) for t in texts]
        matrix = np.vstack([self.vectors, vectors.astype(np.float32)])[-self.MAX :]
        keys = keys[-self.MAX :]
        try:
            self.vectors_file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.vectors_file.with_suffix(f".{os.getpid()}.tmp.npy")
            np.save(tmp, matrix)
            os.replace(tmp, self.vectors_file)
            tmp_keys = self.keys_file.with_suffix(f".{os.getpid()}.tmp")
            tmp_keys.write_text(json.dumps(keys), encoding="utf-8")
            os.replace(tmp_keys, self.keys_file)
        except OSError:
            return  # a cache that cannot be written only costs time


_QUERY_KEY = "query\x00"  # a question's key in an EmbeddingCache: not the same text as a passage's


def embed_cached(
    embedder: Embedder, texts: list[str], cache: EmbeddingCache | None = None, queries: bool = False
) -> np.ndarray:
    """Embed each distinct text once (texts the cache knows are not embedded again); ``queries``:
    the texts are questions (:func:`embed_queries`), cached apart from the same texts as passages."""
    if not texts:
        return np.zeros((0, embedder.dimension), np.float32)
    unique = list(dict.fromkeys(texts))
    mark = _QUERY_KEY if queries else ""
    found = cache.get([mark + t for t in unique]) if cache is not None else {}
    known = {t[len(mark) :]: v for t, v in found.items()}
    missing = [t for t in unique if t not in known]
    if not missing:
        fresh = np.zeros((0, embedder.dimension), np.float32)
    else:
        fresh = embed_queries(embedder, missing) if queries else embedder.embed(missing)
    if cache is not None:
        cache.add([mark + t for t in missing], fresh)
    vectors = {**known, **dict(zip(missing, fresh, strict=True))}
    return np.vstack([vectors[t] for t in texts]).astype(np.float32)
