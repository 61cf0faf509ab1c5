"""What retrieval, the agent, serve and MCP read from a pack: :class:`PackStore`.

A pack's store opened for questions (:func:`wikigr.pack.union.open_pack_store`) is one of two
things with the same reads: the pack's one :class:`wikigr.pack.store.Store`, or for a pack in
shards a :class:`wikigr.pack.union.StoreUnion` over its shards' stores. Readers are typed against
this Protocol, so they work on both. Raw Cypher is not part of it: a pack in shards has no one
database to run a query on (:meth:`PackStore.one_store` says so, naming a shard).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    import numpy as np

    from wikigr.pack.store import Store


@dataclass(frozen=True)
class ChunkHit:
    """A chunk found by search, with what a citation needs."""

    chunk_id: str
    score: float
    text: str
    article_id: str
    article_title: str
    url: str
    section_id: str
    section_title: str
    anchor: str


class PackStore(Protocol):
    """The reads of a pack opened for questions: its one store, or the union of its shards'."""

    @property
    def path(self) -> Path:
        """The store's file (a pack in shards: its first shard's)."""
        ...

    @property
    def kind(self) -> str:
        """The pack's kind (``documents``, ``openml``)."""
        ...

    @property
    def vector_path(self) -> str:
        """``hnsw`` when nearest-chunk searches run on the vector index, else ``exact``."""
        ...

    @property
    def members(self) -> list[Store]:
        """The stores whose files hold what this one reads: itself, or a pack in shards' shards."""
        ...

    def one_store(self) -> Store:
        """The pack's one database, to run raw Cypher on; a pack in shards has none (StoreError)."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> PackStore: ...

    def __exit__(self, *exc: object) -> None: ...

    # -- chunks

    def search_chunks(self, query_vector: Sequence[float], k: int) -> list[ChunkHit]: ...

    def nearest_chunks(self, query_vector: Sequence[float], k: int) -> dict[str, float]: ...

    def chunk_details(self, scores: dict[str, float]) -> list[ChunkHit]: ...

    def chunk_texts(self, chunk_ids: list[str]) -> dict[str, str]: ...

    def chunk_similarities(self, chunk_ids: list[str], query_vector: Sequence[float]) -> dict[str, float]: ...

    def chunk_vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]: ...

    def chunk_ids(self) -> list[str]: ...

    def chunk_articles(self) -> list[tuple[str, str, str]]: ...

    def chunk_matrix(self) -> tuple[list[str], list[str], np.ndarray]: ...

    def sample_vectors(self, n: int) -> np.ndarray: ...

    def best_chunk_per_article(
        self, article_ids: list[str], query_vector: Sequence[float]
    ) -> list[ChunkHit]: ...

    def chunk_facts(self, chunk_ids: list[str]) -> list[tuple[str, str, str, str, str]]: ...

    # -- articles

    def article_urls(self) -> dict[str, str]: ...

    def article_titles(self, article_ids: list[str]) -> dict[str, tuple[str, str]]: ...

    def article_in_degrees(self) -> dict[str, int]: ...

    def article_degrees(self, article_ids: list[str], within: bool = True) -> dict[str, int]: ...

    def linked_articles(self, article_ids: list[str]) -> list[str]: ...

    def link_anchors(self, source: str | None = None) -> list[tuple[str, str, str]]: ...

    def article_edges(self, article_ids: list[str], limit: int) -> list[tuple[str, str, int]]: ...

    # -- the entity graph

    @property
    def has_entities(self) -> bool: ...

    @property
    def has_entity_vectors(self) -> bool: ...

    def entities(self) -> list[tuple[str, str]]: ...

    def entity_mentions(self) -> list[tuple[str, str]]: ...

    def entity_relations(self, skip_types: Sequence[str] = ()) -> list[tuple[str, str, str, float]]: ...

    def nearest_entity(self, query_vector: Sequence[float]) -> tuple[str, float] | None: ...

    def entity_names(self, entity_ids: list[str]) -> dict[str, str]: ...

    def entity_details(self, entity_ids: list[str]) -> dict[str, tuple[str, str]]: ...

    def chunk_entities(self, chunk_ids: list[str], per_chunk: int) -> list[tuple[str, str]]: ...

    def entity_chunks(self, entity_id: str, limit: int) -> list[str]: ...

    def entity_edges(self, entity_ids: list[str], limit: int) -> list[tuple[str, str, str, float]]: ...

    def entity_paths(
        self, chunk_ids: list[str], hops: int, max_df: int, limit: int
    ) -> list[tuple[str, str, str, int]]: ...

    # -- counts

    def count(self, table: str) -> int: ...

    def stats(self) -> dict[str, int]: ...
