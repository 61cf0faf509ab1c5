"""The ``documents`` kind of pack: documents (web pages, files) or a passage corpus, cut into
passages in a document graph (see :mod:`wikigr.pack.kind`).

Its store holds the node tables ``Article``, ``Section``, ``Chunk``, ``Entity``, ``Fact``,
``Category`` and the rel tables ``HAS_SECTION`` (Article→Section), ``HAS_CHUNK`` (Section→Chunk),
``LINKS_TO`` (Article→Article), ``IN_CATEGORY`` (Article→Category), ``HAS_ENTITY`` (Chunk→Entity),
``HAS_FACT`` (Chunk→Fact) and ``ENTITY_RELATION`` (Entity→Entity). The kind lives with the code
that builds and answers such packs (wikigr's top-level modules: build, update, documents, skill).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from wikigr.pack.kind import PackKind, register_kind
from wikigr.pack.manifest import Manifest
from wikigr.pack.store import Store
from wikigr.skill import digest, render_skill

SCHEMA_VERSION = 2  # 2: Entity.embedding, LINKS_TO.anchors (stores with 1 are read without them)
NODE_TABLES = ("Article", "Section", "Chunk", "Entity", "Fact", "Category")
REL_TABLES = (
    "HAS_SECTION",
    "HAS_CHUNK",
    "LINKS_TO",
    "IN_CATEGORY",
    "HAS_ENTITY",
    "HAS_FACT",
    "ENTITY_RELATION",
)


def schema(dim: int) -> list[str]:
    """The document graph's tables, vectors of ``dim`` floats."""
    return [
        "CREATE NODE TABLE Article(id STRING, title STRING, url STRING, source_url STRING, "
        "content_type STRING, sha256 STRING, fetched_at STRING, word_count INT64, PRIMARY KEY(id))",
        "CREATE NODE TABLE Section(id STRING, article_id STRING, title STRING, anchor STRING, "
        f"level INT64, ord INT64, text STRING, embedding FLOAT[{dim}], PRIMARY KEY(id))",
        "CREATE NODE TABLE Chunk(id STRING, article_id STRING, section_id STRING, ord INT64, "
        f"text STRING, embedding FLOAT[{dim}], PRIMARY KEY(id))",
        "CREATE NODE TABLE Entity(id STRING, name STRING, type STRING, description STRING, "
        f"embedding FLOAT[{dim}], PRIMARY KEY(id))",
        "CREATE NODE TABLE Fact(id STRING, subject STRING, predicate STRING, object STRING, "
        "text STRING, PRIMARY KEY(id))",
        "CREATE NODE TABLE Category(id STRING, name STRING, PRIMARY KEY(id))",
        "CREATE REL TABLE HAS_SECTION(FROM Article TO Section)",
        "CREATE REL TABLE HAS_CHUNK(FROM Section TO Chunk)",
        "CREATE REL TABLE LINKS_TO(FROM Article TO Article, count INT64, anchors STRING[])",
        "CREATE REL TABLE IN_CATEGORY(FROM Article TO Category)",
        "CREATE REL TABLE HAS_ENTITY(FROM Chunk TO Entity)",
        "CREATE REL TABLE HAS_FACT(FROM Chunk TO Fact)",
        "CREATE REL TABLE ENTITY_RELATION(FROM Entity TO Entity, type STRING, weight DOUBLE)",
    ]


class DocumentsKind(PackKind):
    """Packs of documents: passages answer, an entity graph may be built over them."""

    name = "documents"
    schema_version = SCHEMA_VERSION
    node_tables = NODE_TABLES
    rel_tables = REL_TABLES
    marker_table = "Article"
    stats: ClassVar[Mapping[str, str]] = {
        "articles": "Article",
        "sections": "Section",
        "chunks": "Chunk",
        "links": "LINKS_TO",
        "categories": "Category",
        "entities": "Entity",
        "facts": "Fact",
        "relations": "ENTITY_RELATION",
    }
    label = "a document pack"
    plural = "document packs"
    passages = True
    entity_graph = True

    def ddl(self, dim: int) -> list[str]:
        return schema(dim)

    def size(self, manifest: Manifest) -> str:
        return f"{manifest.stats.articles:,} articles, {manifest.stats.chunks:,} chunks"

    def info_counts(self, stats: Mapping[str, int]) -> list[tuple[str, str]]:
        counts = [(key, str(stats[key])) for key in ("articles", "sections", "chunks", "links", "categories")]
        graph = f"{stats['entities']} / {stats['facts']} / {stats['relations']}"
        return [*counts, ("entities / facts / relations", graph)]

    def skill(self, manifest: Manifest, store: Store, query_ref: str | None = None) -> str:
        return render_skill(manifest, digest(store), query_ref)

    def update_refusal(self, manifest: Manifest) -> str | None:
        """A pack built from documents is updated from its URL list; a passage corpus is not."""
        if any(s.url.startswith("passage:") for s in manifest.sources):
            return self.refusal("a passage corpus")
        return None


KIND = register_kind(DocumentsKind())
