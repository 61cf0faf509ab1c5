"""A pack in shards read as one store: the query side of ``pack create --shards N``.

``open_pack_store(pack)`` opens a pack's store for questions: its one store, or for a pack in
shards a :class:`StoreUnion` over its shards' stores. The union answers every read the retrieval
stages make as the one store of the same documents would: a vector search runs in every shard at
once and keeps the ``k`` best of all (exact search: the same chunks one store returns), a lookup of
chunks by id asks every shard (a chunk is in one), and what builds the pack's entity graph and
title index (chunk ids, entities, mentions, relations, titles) is the shards' put together — an
entity has the same id, its normalised name, in every shard, so the graph assembled from the
shards is the whole pack's, and personalised PageRank, the bridge stage's next hop and the title
links walk across shard boundaries. So a pack in shards runs its profile once, as one pack.

What stays inside a shard: ``LINKS_TO`` between articles of different shards (a store holds only
its own articles, so the links a build found between them are not stored) and the paths of the
``vector_cypher`` stage (one walk per shard). (The entity graph is built once for the whole pack
and each shard stores its part: wikigr.pack.shards.) Both the one store and the union are
:class:`wikigr.pack.reader.PackStore`; the union has no database of its own, so raw Cypher
(:meth:`StoreUnion.one_store`) is refused with a :class:`StoreError`: a shard's folder is a pack
of its own for that, and ``wikigr cypher`` runs a query on each shard.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

import numpy as np

from wikigr.errors import StoreError
from wikigr.pack.reader import ChunkHit, PackStore
from wikigr.pack.store import Store, query_buffer_pool_size

if TYPE_CHECKING:
    from wikigr.pack.pack import Pack

T = TypeVar("T")


def open_pack_store(pack: Pack) -> PackStore:
    """The pack's store opened read-only for questions: its own, or the union of its shards'."""
    if not pack.sharded:
        return pack.open_store(query_buffer_pool_size(pack.store_path))
    shards = pack.shards()
    stores: list[Store] = []
    try:
        with ThreadPoolExecutor(max_workers=min(len(shards), 8)) as pool:
            futures = [pool.submit(s.open_store, query_buffer_pool_size(s.store_path)) for s in shards]
            errors: list[BaseException] = []
            for future in futures:
                try:
                    stores.append(future.result())
                except BaseException as exc:  # noqa: BLE001 - close what opened, then raise the first
                    errors.append(exc)
            if errors:
                raise errors[0]
    except BaseException:
        for store in stores:
            store.close()
        raise
    return StoreUnion(stores, f"pack {pack.name} in {len(stores)} shards")


def _by_score(hits: list[ChunkHit]) -> list[ChunkHit]:
    return sorted(hits, key=lambda h: (-h.score, h.chunk_id))


class StoreUnion:
    """The stores of a pack's shards, read as the pack's one store (see the module's docstring):
    a :class:`~wikigr.pack.reader.PackStore`, with no database of its own."""

    def __init__(self, stores: Sequence[Store], name: str) -> None:
        if not stores:
            raise ValueError("a union needs at least one store")
        self.stores = list(stores)
        self.name = name
        self.path = self.stores[0].path
        self.kind = self.stores[0].kind
        self.vector_path = "hnsw" if all(s.vector_path == "hnsw" for s in self.stores) else "exact"
        self._pool = ThreadPoolExecutor(max_workers=min(len(self.stores), 8), thread_name_prefix="shard")

    @property
    def members(self) -> list[Store]:
        return list(self.stores)

    def one_store(self) -> Store:
        raise StoreError(
            f"{self.name} has no one database to run a query on: name one shard's folder (a pack of its own)"
        )

    def close(self) -> None:
        for store in self.stores:
            store.close()
        self._pool.shutdown(wait=False)

    def __enter__(self) -> StoreUnion:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _each(self, read: Callable[[Store], T]) -> list[T]:
        """``read`` of every shard's store, in the shards' order (in parallel)."""
        if len(self.stores) == 1:
            return [read(self.stores[0])]
        return list(self._pool.map(read, self.stores))

    def _joined(self, read: Callable[[Store], Sequence[T]]) -> list[T]:
        """``read`` of every shard's store, one list after the other."""
        return [item for part in self._each(read) for item in part]

    def _merged(self, read: Callable[[Store], dict[str, T]]) -> dict[str, T]:
        merged: dict[str, T] = {}
        for part in self._each(read):
            merged.update(part)
        return merged

    # -- chunks ------------------------------------------------------------------------------------

    def search_chunks(self, query_vector: Sequence[float], k: int) -> list[ChunkHit]:
        return self.chunk_details(self.nearest_chunks(query_vector, k))

    def nearest_chunks(self, query_vector: Sequence[float], k: int) -> dict[str, float]:
        vector = [float(x) for x in query_vector]
        found = [pair for part in self._each(lambda s: s.nearest_chunks(vector, k)) for pair in part.items()]
        return dict(sorted(found, key=lambda pair: (-pair[1], pair[0]))[:k])

    def chunk_details(self, scores: dict[str, float]) -> list[ChunkHit]:
        if not scores:
            return []
        return _by_score(self._joined(lambda s: s.chunk_details(scores)))

    def chunk_texts(self, chunk_ids: list[str]) -> dict[str, str]:
        return self._merged(lambda s: s.chunk_texts(chunk_ids))

    def chunk_similarities(self, chunk_ids: list[str], query_vector: Sequence[float]) -> dict[str, float]:
        return self._merged(lambda s: s.chunk_similarities(chunk_ids, query_vector))

    def chunk_vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        return self._merged(lambda s: s.chunk_vectors(chunk_ids))

    def chunk_ids(self) -> list[str]:
        return sorted(self._joined(Store.chunk_ids))

    def sample_vectors(self, n: int) -> np.ndarray:
        """The embeddings of up to ``n`` chunks spread evenly over the pack (in id order)."""
        ids = self.chunk_ids()
        picked = ids[:: max(1, len(ids) // n)][:n] if ids else []
        vectors = self.chunk_vectors(picked)
        return np.asarray([vectors[i] for i in picked if i in vectors], dtype=np.float32)

    def chunk_articles(self) -> list[tuple[str, str, str]]:
        return self._joined(Store.chunk_articles)

    def chunk_matrix(self) -> tuple[list[str], list[str], np.ndarray]:
        parts = self._each(Store.chunk_matrix)
        ids = [c for part in parts for c in part[0]]
        articles = [a for part in parts for a in part[1]]
        return ids, articles, np.vstack([part[2] for part in parts])

    def best_chunk_per_article(self, article_ids: list[str], query_vector: Sequence[float]) -> list[ChunkHit]:
        return _by_score(self._joined(lambda s: s.best_chunk_per_article(article_ids, query_vector)))

    def chunk_facts(self, chunk_ids: list[str]) -> list[tuple[str, str, str, str, str]]:
        return self._joined(lambda s: s.chunk_facts(chunk_ids))

    # -- articles (their links stay in their shard) --------------------------------------------------

    def article_urls(self) -> dict[str, str]:
        return self._merged(Store.article_urls)

    def article_titles(self, article_ids: list[str]) -> dict[str, tuple[str, str]]:
        return self._merged(lambda s: s.article_titles(article_ids))

    def article_in_degrees(self) -> dict[str, int]:
        return self._summed(self._each(Store.article_in_degrees))

    def article_degrees(self, article_ids: list[str], within: bool = True) -> dict[str, int]:
        return self._summed(self._each(lambda s: s.article_degrees(article_ids, within)))

    @staticmethod
    def _summed(parts: list[dict[str, int]]) -> dict[str, int]:
        total: dict[str, int] = {}
        for part in parts:
            for key, value in part.items():
                total[key] = total.get(key, 0) + value
        return total

    def linked_articles(self, article_ids: list[str]) -> list[str]:
        parts = self._each(lambda s: s.linked_articles(article_ids))
        ranked: dict[str, None] = {}  # the shards' lists taken in turn, each most linked first
        for rank in range(max(map(len, parts), default=0)):
            for part in parts:
                if rank < len(part):
                    ranked.setdefault(part[rank], None)
        return list(ranked)

    def link_anchors(self, source: str | None = None) -> list[tuple[str, str, str]]:
        return self._joined(lambda s: s.link_anchors(source))

    def article_edges(self, article_ids: list[str], limit: int) -> list[tuple[str, str, int]]:
        edges = self._joined(lambda s: s.article_edges(article_ids, limit))
        return sorted(edges, key=lambda e: (-e[2], e[0], e[1]))[:limit]

    # -- the entity graph: one entity (its normalised name) in every shard that mentions it ---------

    @property
    def has_entities(self) -> bool:
        return any(self._each(lambda s: s.has_entities))

    @property
    def has_entity_vectors(self) -> bool:
        return all(self._each(lambda s: s.has_entity_vectors))

    def entities(self) -> list[tuple[str, str]]:
        merged: dict[str, str] = {}
        for part in self._each(Store.entities):
            for key, kind in part:
                merged.setdefault(key, kind)
        return sorted(merged.items())

    def entity_mentions(self) -> list[tuple[str, str]]:
        return self._joined(Store.entity_mentions)

    def entity_relations(self, skip_types: Sequence[str] = ()) -> list[tuple[str, str, str, float]]:
        return self._joined(lambda s: s.entity_relations(skip_types))

    def nearest_entity(self, query_vector: Sequence[float]) -> tuple[str, float] | None:
        found = [n for n in self._each(lambda s: s.nearest_entity(query_vector)) if n is not None]
        return max(found, key=lambda n: (n[1], n[0])) if found else None

    def entity_names(self, entity_ids: list[str]) -> dict[str, str]:
        return self._merged(lambda s: s.entity_names(entity_ids))

    def entity_details(self, entity_ids: list[str]) -> dict[str, tuple[str, str]]:
        return self._merged(lambda s: s.entity_details(entity_ids))

    def chunk_entities(self, chunk_ids: list[str], per_chunk: int) -> list[tuple[str, str]]:
        return self._joined(lambda s: s.chunk_entities(chunk_ids, per_chunk))

    def entity_chunks(self, entity_id: str, limit: int) -> list[str]:
        return sorted(self._joined(lambda s: s.entity_chunks(entity_id, limit)))[:limit]

    def entity_edges(self, entity_ids: list[str], limit: int) -> list[tuple[str, str, str, float]]:
        edges = set(self._joined(lambda s: s.entity_edges(entity_ids, limit)))
        return sorted(edges, key=lambda e: (e[2] == "CO_OCCURS", -e[3], e[0], e[1], e[2]))[:limit]

    def entity_paths(
        self, chunk_ids: list[str], hops: int, max_df: int, limit: int
    ) -> list[tuple[str, str, str, int]]:
        """Each shard's paths from the chunks it holds (a path stays in its shard)."""
        return self._joined(lambda s: s.entity_paths(chunk_ids, hops, max_df, limit))

    # -- counts --------------------------------------------------------------------------------------

    def count(self, table: str) -> int:
        return sum(self._each(lambda s: s.count(table)))

    def stats(self) -> dict[str, int]:
        return self._summed(self._each(Store.stats))
