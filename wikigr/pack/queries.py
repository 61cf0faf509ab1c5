"""What a store reads for questions, as Cypher: chunks and their citations, articles and their
links, the entity graph (:class:`StoreQueries`, the reads of :class:`wikigr.pack.store.Store`).

Written over two primitives a store provides, :meth:`StoreQueries.rows` and
:meth:`StoreQueries.arrow` (wikigr.pack.store runs them on LadybugDB; nothing here imports the
driver). The reads of a pack in shards are put together from its shards' (wikigr.pack.union);
both are :class:`wikigr.pack.reader.PackStore`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from wikigr.errors import StoreError
from wikigr.pack.reader import ChunkHit

if TYPE_CHECKING:  # pyarrow is only loaded by a query that reads through Arrow
    import pyarrow as pa

CHUNK_INDEX = "chunk_embedding_idx"


class StoreQueries(ABC):
    """The read queries of a store (see the module's docstring)."""

    vector_path: str  # "hnsw" when the chunk index answers nearest-chunk searches, else "exact"

    @abstractmethod
    def rows(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """Run a Cypher query and return all rows."""

    @abstractmethod
    def arrow(self, query: str, params: dict[str, Any] | None = None) -> pa.Table:
        """Run a Cypher query and return the result as an Arrow table (fast for many rows)."""

    def search_chunks(self, query_vector: Sequence[float], k: int) -> list[ChunkHit]:
        """The top ``k`` chunks by cosine similarity to ``query_vector``, best first."""
        return self.chunk_details(self.nearest_chunks(query_vector, k))

    def nearest_chunks(self, query_vector: Sequence[float], k: int) -> dict[str, float]:
        """The ids of the top ``k`` chunks by cosine similarity to ``query_vector`` with their
        similarity, best first (:meth:`chunk_details` gives their citations)."""
        vector = [float(x) for x in query_vector]
        if self.vector_path == "hnsw":
            top = self.rows(
                f"CALL QUERY_VECTOR_INDEX('Chunk', '{CHUNK_INDEX}', $q, $k) RETURN node.id, 1.0 - distance",
                {"q": vector, "k": int(k)},
            )
        else:
            # Rank on (id, score) only: carrying whole nodes through ORDER BY is several times slower.
            top = self.rows(
                "MATCH (c:Chunk) RETURN c.id, array_cosine_similarity(c.embedding, $q) AS score "
                "ORDER BY score DESC LIMIT $k",
                {"q": vector, "k": int(k)},
            )
        return dict(sorted(((row[0], float(row[1])) for row in top), key=lambda pair: (-pair[1], pair[0])))

    def chunk_details(self, scores: dict[str, float]) -> list[ChunkHit]:
        """Citations for the chunks in ``scores`` (id -> score), best score first."""
        if not scores:
            return []
        # Three primary-key lookups (UNWIND): the path pattern with `WHERE c.id IN $ids` scans
        # every chunk, 4-6 ms at 10,000 chunks against about 1.5 ms.
        chunks = self._chunks_by_id(list(scores), "c.text, c.section_id, c.article_id")
        sections = {
            r[0]: r
            for r in self.rows(
                "UNWIND $ids AS i MATCH (s:Section {id: i}) RETURN s.id, s.article_id, s.title, s.anchor",
                {"ids": list({r[2] for r in chunks})},
            )
        }
        articles = {
            r[0]: r
            for r in self.rows(
                "UNWIND $ids AS i MATCH (a:Article {id: i}) RETURN a.id, a.title, a.url",
                {"ids": list({r[3] for r in chunks})},
            )
        }
        hits = []
        for chunk_id, text, section_id, article_id in chunks:
            section, article = sections.get(section_id), articles.get(article_id)
            if section is None or article is None or section[1] != article_id:
                continue  # a chunk outside the Article -> Section -> Chunk tree is not cited
            hits.append(
                ChunkHit(
                    chunk_id=chunk_id,
                    score=scores[chunk_id],
                    text=text,
                    article_id=article_id,
                    article_title=article[1],
                    url=article[2],
                    section_id=section_id,
                    section_title=section[2],
                    anchor=section[3] or "",
                )
            )
        return sorted(hits, key=lambda h: (-h.score, h.chunk_id))

    def chunk_similarities(self, chunk_ids: list[str], query_vector: Sequence[float]) -> dict[str, float]:
        """Cosine similarity of each of ``chunk_ids`` to ``query_vector``."""
        rows = self._chunks_by_id(
            chunk_ids, "array_cosine_similarity(c.embedding, $q)", {"q": [float(x) for x in query_vector]}
        )
        return {r[0]: float(r[1]) for r in rows}

    def chunk_vectors(self, chunk_ids: list[str]) -> dict[str, np.ndarray]:
        rows = self._chunks_by_id(chunk_ids, "c.embedding")
        return {r[0]: np.asarray(r[1], dtype=np.float32) for r in rows}

    def chunk_texts(self, chunk_ids: list[str]) -> dict[str, str]:
        """The text of each of the given chunks (id -> text)."""
        return {str(r[0]): str(r[1]) for r in self._chunks_by_id(chunk_ids, "c.text")}

    def _chunks_by_id(
        self, chunk_ids: list[str], expression: str, params: dict[str, Any] | None = None
    ) -> list[list[Any]]:
        """``(id, expression)`` of the given chunks, found by one primary-key lookup each (UNWIND):
        a scan with a list test (``WHERE c.id IN $ids``) is several times slower at 10,000 chunks."""
        return self.rows(
            f"UNWIND $ids AS i MATCH (c:Chunk {{id: i}}) RETURN c.id, {expression}",
            {"ids": chunk_ids, **(params or {})},
        )

    def article_degrees(self, article_ids: list[str], within: bool = True) -> dict[str, int]:
        """LINKS_TO degree (in + out) of each article; ``within``: counting only links among them."""
        if within:
            rows = self.rows(
                "MATCH (a:Article)-[:LINKS_TO]-(b:Article) WHERE a.id IN $ids AND b.id IN $ids "
                "RETURN a.id, count(DISTINCT b)",
                {"ids": article_ids},
            )
        else:
            rows = self.rows(
                "MATCH (a:Article)-[:LINKS_TO]-(b:Article) WHERE a.id IN $ids RETURN a.id, count(DISTINCT b)",
                {"ids": article_ids},
            )
        degrees = dict.fromkeys(article_ids, 0)
        degrees.update({r[0]: int(r[1]) for r in rows})
        return degrees

    def linked_articles(self, article_ids: list[str]) -> list[str]:
        """Articles linked to or from any of ``article_ids`` (the given ones excluded), most links first."""
        rows = self.rows(
            "MATCH (a:Article)-[r:LINKS_TO]-(b:Article) WHERE a.id IN $ids AND NOT b.id IN $ids "
            "RETURN b.id, count(r) AS n ORDER BY n DESC, b.id",
            {"ids": article_ids},
        )
        return [r[0] for r in rows]

    def best_chunk_per_article(self, article_ids: list[str], query_vector: Sequence[float]) -> list[ChunkHit]:
        """For each article, its chunk most similar to ``query_vector``."""
        rows = self.rows(
            "MATCH (c:Chunk) WHERE c.article_id IN $ids "
            "RETURN c.article_id, c.id, array_cosine_similarity(c.embedding, $q) AS score",
            {"ids": article_ids, "q": [float(x) for x in query_vector]},
        )
        best: dict[str, tuple[str, float]] = {}
        for article_id, chunk_id, score in rows:
            if article_id not in best or score > best[article_id][1]:
                best[article_id] = (chunk_id, float(score))
        return self.chunk_details({chunk_id: score for chunk_id, score in best.values()})

    # -- links, vectors, the entity graph --------------------------------------------------------

    def link_anchors(self, source: str | None = None) -> list[tuple[str, str, str]]:
        """Every stored link text (of the article ``source``, or of all): (source article id,
        target article id, "FRAGMENT\\tTEXT"). Empty for a store written before link texts were kept."""
        if not self.has_column("LINKS_TO", "anchors"):
            return []
        where = "WHERE a.id = $id " if source is not None else ""
        rows = self.rows(
            f"MATCH (a:Article)-[r:LINKS_TO]->(b:Article) {where}RETURN a.id, b.id, r.anchors",
            {"id": source} if source is not None else None,
        )
        return [(a, b, anchor) for a, b, anchors in rows for anchor in anchors or []]

    def chunk_matrix(self) -> tuple[list[str], list[str], np.ndarray]:
        """Every chunk's id, article id and embedding: ``(ids, article ids, matrix)``, the embeddings
        as one (n, dim) float32 matrix (through Arrow: no per-row Python lists), row i for ids[i].
        A chunk without an embedding raises :class:`StoreError`."""
        table = self.arrow("MATCH (c:Chunk) RETURN c.id, c.article_id, c.embedding")
        ids = [str(v) for v in table.column(0).to_pylist()]
        articles = [str(v) for v in table.column(1).to_pylist()]
        column = table.column(2).combine_chunks()
        if column.null_count:
            raise StoreError(f"{column.null_count} chunks have no embedding")
        import pyarrow  # loaded by the query already

        if isinstance(column, pyarrow.FixedSizeListArray):  # FLOAT[dim]: its values, no pyarrow.compute
            start, size = column.offset * column.type.list_size, len(column) * column.type.list_size
            values = column.values.to_numpy(zero_copy_only=False)[start : start + size]
        else:  # ListArray.flatten imports pyarrow.compute (80 ms on a fresh process)
            values = column.flatten().to_numpy(zero_copy_only=False)
        flat = np.asarray(values, dtype=np.float32)
        if len(ids) and flat.size % len(ids):
            raise StoreError("chunk embeddings of different lengths")
        return ids, articles, flat.reshape(len(ids), flat.size // len(ids) if ids else 0)

    def article_urls(self) -> dict[str, str]:
        """Every article's id -> its cited URL."""
        return {str(r[0]): str(r[1] or r[0]) for r in self.rows("MATCH (a:Article) RETURN a.id, a.url")}

    def article_in_degrees(self) -> dict[str, int]:
        """For each article that other articles link to: how many of them do (LINKS_TO, self-links
        not counted)."""
        rows = self.rows(
            "MATCH (a:Article)-[:LINKS_TO]->(b:Article) WHERE a.id <> b.id RETURN b.id, count(DISTINCT a)"
        )
        return {str(r[0]): int(r[1]) for r in rows}

    def chunk_places(self) -> list[tuple[str, str, str]]:
        """Every chunk as (article id, its section's anchor, text), in chunk id order (the order
        of :meth:`graph_inputs`)."""
        rows = self.rows(
            "MATCH (s:Section)-[:HAS_CHUNK]->(c:Chunk) RETURN c.article_id, s.anchor, c.text ORDER BY c.id"
        )
        return [(r[0], r[1] or "", r[2]) for r in rows]

    def graph_inputs(self) -> list[tuple[str, str, str, list[float]]]:
        """Every chunk as (id, article title, text, embedding), in id order: what the graph build reads."""
        rows = self.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk) "
            "RETURN c.id, a.title, c.text, c.embedding ORDER BY c.id"
        )
        return [(r[0], r[1], r[2], r[3]) for r in rows]

    def has_column(self, table: str, column: str) -> bool:
        """Whether ``table`` has the column ``column`` (stores written by older versions may not)."""
        return any(row[1] == column for row in self.rows(f"CALL table_info('{table}') RETURN *"))

    @property
    def has_entities(self) -> bool:
        """Whether the store holds an entity graph (a store of another kind has no Entity table)."""
        if not any(row[0] == "Entity" for row in self.rows("CALL show_tables() RETURN name")):
            return False
        return bool(self.rows("MATCH (e:Entity) RETURN e.id LIMIT 1"))

    @property
    def has_entity_vectors(self) -> bool:
        """Whether the store has the ``Entity.embedding`` column (stores written before it do not)."""
        return self.has_column("Entity", "embedding")

    def nearest_entity(self, query_vector: Sequence[float]) -> tuple[str, float] | None:
        """The entity whose name vector is nearest to ``query_vector`` (exact cosine), with the
        similarity; None when no entity has a vector."""
        rows = self.rows(
            "MATCH (e:Entity) WHERE e.embedding IS NOT NULL "
            "RETURN e.id, array_cosine_similarity(e.embedding, $q) AS score ORDER BY score DESC LIMIT 1",
            {"q": [float(x) for x in query_vector]},
        )
        return (rows[0][0], float(rows[0][1])) if rows else None

    def sample_vectors(self, n: int) -> np.ndarray:
        """The embeddings of up to ``n`` chunks spread evenly over the pack (in id order)."""
        ids = self.chunk_ids()
        picked = ids[:: max(1, len(ids) // n)][:n] if ids else []
        vectors = self.chunk_vectors(picked)
        return np.asarray([vectors[i] for i in picked if i in vectors], dtype=np.float32)

    def chunk_ids(self) -> list[str]:
        """Every chunk id, in id order."""
        return [r[0] for r in self.rows("MATCH (c:Chunk) RETURN c.id ORDER BY c.id")]

    def _columns(self, query: str, params: dict[str, Any] | None = None) -> list[list[Any]]:
        """A query's result as columns (through Arrow: several times faster than rows for big results)."""
        table = self.arrow(query, params)
        return [table.column(i).to_pylist() for i in range(table.num_columns)]

    def chunk_articles(self) -> list[tuple[str, str, str]]:
        """Every chunk as (chunk id, article id, article title)."""
        # Rows, not Arrow columns: a fresh query process then needs no pyarrow (an import of ~0.1 s).
        rows = self.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(:Section)-[:HAS_CHUNK]->(c:Chunk) RETURN c.id, a.id, a.title"
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def entities(self) -> list[tuple[str, str]]:
        """Every entity as (id, type), in id order."""
        ids, types = self._columns("MATCH (e:Entity) RETURN e.id, e.type ORDER BY e.id")
        return list(zip(ids, types, strict=True))

    def entity_mentions(self) -> list[tuple[str, str]]:
        """Every HAS_ENTITY edge as (chunk id, entity id)."""
        chunks, entities = self._columns("MATCH (c:Chunk)-[:HAS_ENTITY]->(e:Entity) RETURN c.id, e.id")
        return list(zip(chunks, entities, strict=True))

    def entity_relations(self, skip_types: Sequence[str] = ()) -> list[tuple[str, str, str, float]]:
        """Every ENTITY_RELATION edge as (from, to, type, weight), but those of ``skip_types``."""
        columns = self._columns(
            "MATCH (a:Entity)-[r:ENTITY_RELATION]->(b:Entity) WHERE NOT r.type IN $skip "
            "RETURN a.id, b.id, r.type, r.weight",
            {"skip": list(skip_types)},
        )
        return [(a, b, t, float(w)) for a, b, t, w in zip(*columns, strict=True)]

    def entity_names(self, entity_ids: list[str]) -> dict[str, str]:
        rows = self.rows("MATCH (e:Entity) WHERE e.id IN $ids RETURN e.id, e.name", {"ids": entity_ids})
        return {r[0]: r[1] for r in rows}

    def entity_details(self, entity_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Each entity's (name, type), by id (ids that are not entities are left out)."""
        rows = self._entities_by_id(entity_ids, "e.name, e.type")
        return {r[0]: (r[1], r[2] or "") for r in rows}

    def _entities_by_id(self, entity_ids: list[str], expression: str) -> list[list[Any]]:
        """``(id, expression)`` of the given entities, one primary-key lookup each."""
        return self.rows(
            f"UNWIND $ids AS i MATCH (e:Entity {{id: i}}) RETURN e.id, {expression}", {"ids": entity_ids}
        )

    def chunk_entities(self, chunk_ids: list[str], per_chunk: int) -> list[tuple[str, str]]:
        """The entities each of ``chunk_ids`` mentions, at most ``per_chunk`` each, the rarest in
        the pack first: (chunk id, entity id)."""
        rows = self.rows(
            "UNWIND $ids AS i MATCH (c:Chunk {id: i})-[:HAS_ENTITY]->(e:Entity) "
            "WITH c, e MATCH (e)<-[:HAS_ENTITY]-(x:Chunk) WITH c.id AS chunk, e.id AS entity, count(x) AS df "
            "RETURN chunk, entity ORDER BY chunk, df, entity",
            {"ids": chunk_ids},
        )
        kept: dict[str, int] = {}
        found: list[tuple[str, str]] = []
        for chunk, entity in rows:
            if kept.get(chunk, 0) < per_chunk:
                kept[chunk] = kept.get(chunk, 0) + 1
                found.append((chunk, entity))
        return found

    def entity_edges(self, entity_ids: list[str], limit: int) -> list[tuple[str, str, str, float]]:
        """Up to ``limit`` ENTITY_RELATION edges touching ``entity_ids`` (either end): (from, to,
        type, weight); named relations before co-occurrences, heavier first."""
        edges: set[tuple[str, str, str, float]] = set()
        for pattern in (
            "(a:Entity {id: i})-[r:ENTITY_RELATION]->(b:Entity)",
            "(a:Entity)-[r:ENTITY_RELATION]->(b:Entity {id: i})",
        ):
            rows = self.rows(
                f"UNWIND $ids AS i MATCH {pattern} RETURN a.id, b.id, r.type, r.weight", {"ids": entity_ids}
            )
            edges.update((r[0], r[1], r[2] or "", float(r[3] or 0.0)) for r in rows)
        ranked = sorted(edges, key=lambda e: (e[2] == "CO_OCCURS", -e[3], e[0], e[1], e[2]))
        return ranked[:limit]

    def entity_chunks(self, entity_id: str, limit: int) -> list[str]:
        """Up to ``limit`` chunks that mention the entity, in id order."""
        rows = self.rows(
            "MATCH (c:Chunk)-[:HAS_ENTITY]->(e:Entity {id: $id}) RETURN c.id ORDER BY c.id LIMIT $limit",
            {"id": entity_id, "limit": int(limit)},
        )
        return [r[0] for r in rows]

    def article_edges(self, article_ids: list[str], limit: int) -> list[tuple[str, str, int]]:
        """Up to ``limit`` LINKS_TO edges touching ``article_ids`` (either end), most used first:
        (from, to, count). Self-links are left out."""
        rows = self.rows(
            "MATCH (a:Article)-[r:LINKS_TO]->(b:Article) "
            "WHERE (a.id IN $ids OR b.id IN $ids) AND a.id <> b.id "
            "RETURN a.id, b.id, r.count ORDER BY r.count DESC, a.id, b.id LIMIT $limit",
            {"ids": article_ids, "limit": int(limit)},
        )
        return [(r[0], r[1], int(r[2] or 1)) for r in rows]

    def article_titles(self, article_ids: list[str]) -> dict[str, tuple[str, str]]:
        """Each article's (title, cited URL), by id."""
        rows = self.rows(
            "UNWIND $ids AS i MATCH (a:Article {id: i}) RETURN a.id, a.title, a.url", {"ids": article_ids}
        )
        return {r[0]: (r[1] or r[0], r[2] or r[0]) for r in rows}

    def chunk_facts(self, chunk_ids: list[str]) -> list[tuple[str, str, str, str, str]]:
        """The facts stated in these chunks as (chunk id, subject, predicate, object, sentence)."""
        rows = self.rows(
            "MATCH (c:Chunk)-[:HAS_FACT]->(f:Fact) WHERE c.id IN $ids "
            "RETURN c.id, f.subject, f.predicate, f.object, f.text",
            {"ids": chunk_ids},
        )
        return [(r[0], r[1], r[2], r[3], r[4]) for r in rows]

    def entity_paths(
        self, chunk_ids: list[str], hops: int, max_df: int, limit: int
    ) -> list[tuple[str, str, str, int]]:
        """Chunks reached from ``chunk_ids`` through shared entities (Chunk→Entity←Chunk), up to
        ``hops`` such steps, skipping entities mentioned by more than ``max_df`` chunks:
        (start chunk, entity id, reached chunk, hop)."""
        found: list[tuple[str, str, str, int]] = []
        frontier = {c: c for c in chunk_ids}  # reached chunk -> the start chunk it came from
        seen = set(chunk_ids)
        for hop in range(1, hops + 1):
            if not frontier:
                break
            rows = self.rows(
                "MATCH (a:Chunk)-[:HAS_ENTITY]->(e:Entity)<-[:HAS_ENTITY]-(b:Chunk) WHERE a.id IN $ids "
                "WITH a, e, b MATCH (e)<-[:HAS_ENTITY]-(x:Chunk) WITH a, e, b, count(x) AS df "
                "WHERE df <= $max_df AND a.id <> b.id "
                "RETURN a.id, e.id, b.id, df ORDER BY df, b.id LIMIT $limit",
                {"ids": list(frontier), "max_df": int(max_df), "limit": int(limit)},
            )
            nxt: dict[str, str] = {}
            for a, e, b, _ in rows:
                if b in seen:
                    continue
                found.append((frontier[a], e, b, hop))
                seen.add(b)
                nxt[b] = frontier[a]
            frontier = nxt
        return found
