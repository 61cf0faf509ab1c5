"""Writing a pack in shards (``pack create --shards N``; the layout is wikigr.pack.shards'):
the documents dealt out to shards (:func:`assign_shards`), the entity graph built once over all of
them and each shard's part written with its store (:func:`write_shards`, :func:`write_shard`, on
Ray with :func:`write_shards_on_ray`), and the checks of a pack in shards (:func:`validate_shards`).
"""

from __future__ import annotations

import io
import math
import shutil
import tarfile
import tempfile
from collections import deque
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from wikigr.build.languages import language_counts
from wikigr.build.options import BuildOptions
from wikigr.build.prepare import PreparedDocument
from wikigr.build.ray import connect, embedder_dimension, from_arrow, remote_task, to_arrow
from wikigr.build.rows import url_variants
from wikigr.build.write import corpus_graph, write_documents_pack, write_support_files
from wikigr.embed import Embedder, get_embedder
from wikigr.errors import UsageError
from wikigr.graph.build import GraphReport, GraphTables
from wikigr.graph.extract import CONCEPT, keyword_entities
from wikigr.pack import pack as layout
from wikigr.pack.keyword import KEYWORD_DIR
from wikigr.pack.manifest import FORMAT_VERSION, Manifest, ShardRecord, SourceRecord, load_manifest, now_iso
from wikigr.pack.shards import SHARDS_DIR, check_count, shard_name, store_digest, summed_stats

if TYPE_CHECKING:
    import pyarrow as pa

MAX_SHARED_DF = 50  # a name mentioned by more documents than this does not tie them to one shard
PASSES = 3  # of the streaming partition (chosen on MuSiQue's dev questions: bench/scale.py)


def document_names(doc: PreparedDocument) -> set[str]:
    """The keys of the names a document's chunks mention (as the entity graph finds them: on the
    workers of a distributed build, else here), concepts left out."""
    if doc.mentions is not None:
        return {row[2] for mentions in doc.mentions for row in mentions if row[1] != CONCEPT}
    return {m.key for c in doc.chunks for m in keyword_entities(doc.title, c["text"]) if m.type != CONCEPT}


def assign_shards(
    docs: Sequence[PreparedDocument], count: int, max_df: int = MAX_SHARED_DF, passes: int = PASSES
) -> list[int]:
    """The shard of each document: documents that share rare names (mentioned by 2 to ``max_df``
    documents) or link to each other go together, so that what a multi-hop question walks through
    stays in one store; a shard holds at most 5% (and one document) more than an equal share of
    the chunks.

    A streaming graph partition, restreamed (linear deterministic greedy: Stanton and Kliot, 2012;
    restreaming: Nishimura and Ugander, 2013): documents in breadth-first order over that graph,
    each to the shard holding most of its neighbours — a shared name weighs 1 / (the other
    documents that mention it), a link 1 — discounted by how full the shard is; a document with no
    neighbour placed goes to the emptiest shard. Each pass after the first counts the neighbours
    not yet placed where the previous pass put them."""
    keys = [document_names(doc) for doc in docs]
    postings: dict[str, list[int]] = {}
    for i, names in enumerate(keys):
        for key in names:
            postings.setdefault(key, []).append(i)
    weights: list[dict[int, float]] = [{} for _ in docs]
    for found in postings.values():
        if 2 <= len(found) <= max_df:
            for i in found:
                for j in found:
                    if i != j:
                        weights[i][j] = weights[i].get(j, 0.0) + 1.0 / (len(found) - 1)
    by_url: dict[str, int] = {}
    for i, doc in enumerate(docs):
        for url in url_variants(doc.source) + url_variants(doc.fetch.get("final_url") or doc.source):
            by_url.setdefault(url, i)
    for i, doc in enumerate(docs):
        for link in doc.links:
            target = next((by_url[v] for v in url_variants(link) if v in by_url), None)
            if target is not None and target != i:
                weights[i][target] = weights[i].get(target, 0.0) + 1.0
                weights[target][i] = weights[target].get(i, 0.0) + 1.0
    order: list[int] = []  # breadth-first over the graph, component by component
    seen = [False] * len(docs)
    for start in range(len(docs)):
        if not seen[start]:
            seen[start] = True
            queue = deque([start])
            while queue:
                i = queue.popleft()
                order.append(i)
                for j in weights[i]:
                    if not seen[j]:
                        seen[j] = True
                        queue.append(j)
    sizes = [max(1, len(doc.chunks)) for doc in docs]
    capacity = math.ceil(1.05 * sum(sizes) / count) + max(sizes, default=1)  # 5% and a document
    shard: list[int | None] = [None] * len(docs)
    for _ in range(max(1, passes)):
        previous, shard, load = shard, [None] * len(docs), [0] * count
        for i in order:
            votes: dict[int, float] = {}
            for j, weight in weights[i].items():
                placed = shard[j] if shard[j] is not None else previous[j]
                if placed is not None:
                    votes[placed] = votes.get(placed, 0.0) + weight
            fits = [s for s in range(count) if load[s] + sizes[i] <= capacity] or list(range(count))
            best = max(fits, key=lambda s: (votes.get(s, 0.0) * (1 - load[s] / capacity), -load[s], -s))
            shard[i] = best
            load[best] += sizes[i]
    return [s if s is not None else 0 for s in shard]


def write_shards(
    folder: Path,
    name: str,
    docs: list[PreparedDocument],
    records: list[SourceRecord],
    embedder: Embedder,
    options: BuildOptions,
    description: str,
    count: int,
    graph_reports: list[GraphReport] | None = None,
    aliases: dict[str, str] | None = None,
) -> Manifest:
    """Write ``docs`` as ``count`` shards into ``folder/shards/`` (each with
    ``write_documents_pack`` and support files) and return the manifest of the logical pack (not
    yet written: the caller writes it and the pack's own support files).

    The entity graph is built once, over all the documents (``corpus_graph``, as for
    one store: its report is appended to ``graph_reports``), and each shard stores its part
    (``GraphTables.part``)."""
    check_count(count)
    if count > len(docs):
        raise UsageError(f"--shards {count}: more shards than documents ({len(docs)})")
    groups: list[list[PreparedDocument]] = [[] for _ in range(count)]
    for doc, index in zip(docs, assign_shards(docs, count), strict=True):
        groups[index].append(doc)
    if any(not group for group in groups):  # a tiny corpus: deal the documents out instead
        groups = [docs[i::count] for i in range(count)]
    graphs: list[GraphTables | None] = [None] * count
    if options.graph:
        shard_of = {id(doc): index for index, group in enumerate(groups) for doc in group}
        parts = [shard_of[id(doc)] for doc in docs]
        graph, report = corpus_graph(docs, embedder.dimension, options, embedder, aliases, parts)
        if graph_reports is not None:
            graph_reports.append(report)
        graphs = [graph.part(index) for index in range(count)]
    for stale in [folder / SHARDS_DIR, folder / KEYWORD_DIR, *folder.glob(layout.STORE_FILE + "*")]:
        if stale.is_dir():  # what an interrupted build left (in shards, or in one store)
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    by_source = {r.url: r for r in records}
    width = max(2, len(str(count - 1)))
    jobs = [
        (
            f"{SHARDS_DIR}/{index:0{width}d}",
            index,
            group,
            [by_source[doc.source] for doc in group],
            graphs[index],
        )
        for index, group in enumerate(groups)
    ]
    if options.ray is not None and options.llm is None:  # each shard's store written by a Ray task
        manifests = write_shards_on_ray(folder, name, count, jobs, options, aliases)
    else:
        manifests = [
            write_shard(folder / rel, name, i, count, group, sources, embedder, options, aliases, graph)
            for rel, i, group, sources, graph in jobs
        ]
    shard_records = [
        ShardRecord(
            path=rel,
            name=manifest.name,
            sha256=store_digest(folder / rel / layout.STORE_FILE),
            articles=manifest.stats.articles,
            chunks=manifest.stats.chunks,
        )
        for (rel, *_), manifest in zip(jobs, manifests, strict=True)
    ]
    first = manifests[0]
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        description=description,
        created_at=now_iso(),
        wikigr_version=first.wikigr_version,
        source_kind="documents",
        embedder=first.embedder,
        schema_version=first.schema_version,
        vector_index="hnsw" if all(m.vector_index == "hnsw" for m in manifests) else "exact",
        stats=summed_stats(manifests),
        sources=records,
        shards=shard_records,
        languages=language_counts(doc.language for doc in docs),
    )


def write_shard(
    shard: Path,
    name: str,
    index: int,
    count: int,
    docs: list[PreparedDocument],
    sources: list[SourceRecord],
    embedder: Embedder,
    options: BuildOptions,
    aliases: dict[str, str] | None = None,
    graph: GraphTables | None = None,
) -> Manifest:
    """Write one shard of the pack ``name`` — a complete pack folder — at ``shard``, with
    ``graph``: its part of the pack's entity graph (see :func:`write_shards`)."""
    shard.mkdir(parents=True)
    manifest = write_documents_pack(
        shard,
        shard_name(name, index),
        docs,
        sources,
        embedder,
        options,
        f"shard {index + 1} of {count} of the pack {name}",
        None,
        aliases,
        graph,
    )
    manifest.dump(shard / layout.MANIFEST_FILE)
    write_support_files(shard, manifest, "".join(f"{s.url}\n" for s in sources))
    return manifest


def write_shard_task(
    name: str,
    index: int,
    count: int,
    table: pa.Table,
    sources: list[SourceRecord],
    options: BuildOptions,
    aliases: dict[str, str],
    graph: GraphTables | None,
    target: str,
    driver_node: str,
) -> bytes:
    """On a worker: write one shard of a pack in shards (:func:`write_shard`: its
    store, its part ``graph`` of the pack's entity graph, BM25 index and support files). On the
    driver's machine, straight into ``target`` (returns no bytes); elsewhere in a temporary
    folder, returned as an uncompressed tar archive."""
    import ray

    docs = from_arrow(table)
    embedder = get_embedder(options.embedder)
    if ray.get_runtime_context().get_node_id() == driver_node:
        write_shard(Path(target), name, index, count, docs, sources, embedder, options, aliases, graph)
        return b""
    with tempfile.TemporaryDirectory(prefix="wikigr-shard-") as tmp:
        folder = Path(tmp) / "shard"
        write_shard(folder, name, index, count, docs, sources, embedder, options, aliases, graph)
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            tar.add(folder, arcname=".")
    return buffer.getvalue()


def write_shards_on_ray(
    folder: Path,
    name: str,
    count: int,
    jobs: Sequence[tuple[str, int, list[PreparedDocument], list[SourceRecord], GraphTables | None]],
    options: BuildOptions,
    aliases: dict[str, str] | None = None,
) -> list[Manifest]:
    """Write the shards of ``jobs`` (folder, index, documents, sources, its part of the pack's
    entity graph) in parallel, one Ray task each, and unpack each into ``folder``; return their
    manifests, in the order of ``jobs``."""
    assert options.ray is not None
    ray = connect(options.ray)
    remote = remote_task(ray, write_shard_task)
    shipped = ray.put(replace(options, llm=None, ray=None))
    shared_aliases = ray.put(aliases or {})
    dim = embedder_dimension(options.embedder)
    node = ray.get_runtime_context().get_node_id()
    refs = [
        remote.remote(
            name,
            index,
            count,
            to_arrow(docs, dim),
            sources,
            shipped,
            shared_aliases,
            graph,
            str(folder / rel),
            node,
        )
        for rel, index, docs, sources, graph in jobs
    ]
    manifests: list[Manifest] = []
    try:
        for (rel, *_), ref in zip(jobs, refs, strict=True):
            data = ray.get(ref)
            target = folder / rel
            if data:  # written on another machine: unpack it here
                target.mkdir(parents=True)
                with tarfile.open(fileobj=io.BytesIO(data)) as tar:
                    tar.extractall(target, filter="data")
            manifests.append(load_manifest(target / layout.MANIFEST_FILE))
    except BaseException:
        for ref in refs:
            ray.cancel(ref)
        raise
    return manifests
