"""(Re)build the entity graph of an existing pack in place, from the chunks and embeddings its
store already holds: nothing is fetched or re-embedded. The manifest's statistics are updated (and
the checksums it may list dropped: the store is no longer the one they describe)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from wikigr.embed import pack_embedder
from wikigr.errors import UsageError
from wikigr.graph.build import ChunkRecord, GraphOptions, GraphReport, GraphTables, anchor_links, build_graph
from wikigr.pack import pack as layout
from wikigr.pack.kind import pack_kind
from wikigr.pack.manifest import GraphStats, load_manifest
from wikigr.pack.shards import refuse_shard
from wikigr.pack.store import Store
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress

RELATION_SCHEMA = pa.schema(
    [("from", pa.string()), ("to", pa.string()), ("type", pa.string()), ("weight", pa.float64())]
)


def copy_graph(store: Store, graph: GraphTables, dim: int) -> None:
    """Bulk-load the graph tables into a store whose graph tables are empty."""
    vectors = graph.entity["embedding"]
    entity = {
        **graph.entity,
        "embedding": pa.array(
            [None if v is None else np.asarray(v, dtype=np.float32) for v in vectors],
            type=pa.list_(pa.float32(), dim),
        ),
    }
    store.copy("Entity", pa.table(entity))
    store.copy("Fact", pa.table(graph.fact))
    store.copy("HAS_ENTITY", pa.table(graph.has_entity))
    store.copy("HAS_FACT", pa.table(graph.has_fact))
    store.copy("ENTITY_RELATION", pa.table(graph.relation, schema=RELATION_SCHEMA))


def rebuild_graph(
    path: Path,
    options: GraphOptions | None = None,
    llm: Any = None,
    on_progress: ProgressCallback | None = None,
) -> GraphReport:
    """Replace the entity graph of the pack folder ``path``; return the build's report. Only a
    document pack has one: another kind (openml) is refused before its store is opened.
    ``on_progress`` hears of its phases: ``read``, ``graph`` (the extraction) and ``write``."""
    progress = on_progress or no_progress
    manifest = load_manifest(path / layout.MANIFEST_FILE)
    if not pack_kind(manifest.source_kind).entity_graph:
        raise UsageError(
            f"graph is not supported for this pack kind ({manifest.source_kind}): "
            "an entity graph is built from a document pack's chunks"
        )
    if manifest.shards:
        raise UsageError(
            f"pack {manifest.name} is in {len(manifest.shards)} shards: its entity graph, built over all "
            "of them by `pack create`, is rebuilt with the pack (`pack graph` takes a pack in one store)"
        )
    refuse_shard(path, "pack graph")
    embedder = pack_embedder(manifest.embedder, f"pack {manifest.name}")
    extractor = None
    if llm is not None:
        from wikigr.graph.claude import ClaudeExtractor

        extractor = ClaudeExtractor(llm)
    with Store.open(path / layout.STORE_FILE, read_only=False) as store:
        progress(ProgressEvent("read", 0, 1))
        rows = store.graph_inputs()
        records = [ChunkRecord(r[0], r[1], r[2]) for r in rows]
        vectors = (
            np.asarray([r[3] for r in rows], dtype=np.float32)
            if rows
            else np.zeros((0, embedder.dimension), np.float32)
        )
        links = anchor_links(store.chunk_places(), store.link_anchors())
        progress(ProgressEvent("read", 1, 1))
        progress(ProgressEvent("graph", 0, 1, f"{len(records)} chunks"))
        graph, report = build_graph(
            records, vectors, lambda names: embedder.embed(names), options, extractor, links
        )
        progress(ProgressEvent("graph", 1, 1, f"{len(records)} chunks"))
        progress(ProgressEvent("write", 0, 1))
        store.clear_graph(embedder.dimension)
        copy_graph(store, graph, embedder.dimension)
        stats = store.stats()
        progress(ProgressEvent("write", 1, 1))
    manifest.stats = GraphStats(**stats)
    # The store changed: checksums listed for it (a shipped or installed pack) would refuse the
    # pack at its next install. An export lists them again, as after `pack update`.
    manifest.files, manifest.sizes = {}, {}
    manifest.dump(path / layout.MANIFEST_FILE)
    return report
