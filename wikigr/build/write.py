"""Writing a pack's store for prepared documents (rows, entity graph, BM25 index, vector index),
its manifest, and its support files (``urls.txt``, ``skill.md``, ``kg_config.json``, ``eval/``)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import pyarrow as pa

from wikigr import __version__
from wikigr.build.definitions import definitions_meanwhile, write_when_done
from wikigr.build.languages import language_counts
from wikigr.build.options import BuildOptions
from wikigr.build.prepare import PreparedDocument
from wikigr.build.ray import RayEmbed, RayExtractor
from wikigr.build.rows import StoreRows, store_rows
from wikigr.documents_kind import SCHEMA_VERSION
from wikigr.embed import Embedder
from wikigr.graph.build import ChunkRecord, GraphReport, GraphTables, anchor_links, build_graph
from wikigr.graph.pack import copy_graph
from wikigr.pack import pack as layout
from wikigr.pack.definitions import DEFINITIONS_DIR
from wikigr.pack.keyword import KEYWORD_DIR, KeywordIndex, build_keyword_index
from wikigr.pack.kind import pack_kind
from wikigr.pack.lexicon import LEXICON_DIR, across_languages, build_lexicon
from wikigr.pack.manifest import FORMAT_VERSION, EmbedderRecord, GraphStats, Manifest, SourceRecord, now_iso
from wikigr.pack.store import Store, vectors_to_arrow
from wikigr.skill import write_skill
from wikigr.sources.crawl import CrawlOptions


def corpus_graph(
    docs: list[PreparedDocument],
    dim: int,
    options: BuildOptions,
    embedder: Embedder | None = None,
    aliases: dict[str, str] | None = None,
    parts: Sequence[int] | None = None,
    rows: StoreRows | None = None,
) -> tuple[GraphTables, GraphReport]:
    """The entity graph of ``docs`` (graph.build.build_graph over all their chunks; ``embedder``
    embeds entity names for synonym edges). ``parts``: the part (shard) of each document, for
    ``GraphTables.part``; ``rows``: the documents' rows, when they were made already."""
    rows = rows or store_rows(docs, options, aliases)
    chunks = rows.chunks
    # Each chunk carries its document's language as the build found it: the graph does not detect it again.
    columns = (chunks["id"], rows.chunk_titles, chunks["text"], rows.chunk_languages)
    records = [ChunkRecord(*row) for row in zip(*columns, strict=True)]
    extractor: Any = None
    embed = (lambda names: embedder.embed(names)) if embedder is not None else None
    if options.llm is not None:
        from wikigr.graph.claude import ClaudeExtractor

        extractor = ClaudeExtractor(options.llm)
    if options.ray is not None:  # spaCy and the names' embeddings on the cluster's workers
        extractor = extractor or RayExtractor(options.ray)
        embed = RayEmbed(options.ray, embedder.name) if embedder is not None else None
    mentions = rows.chunk_mentions
    return build_graph(
        records,
        np.vstack(rows.chunk_vectors) if rows.chunk_vectors else np.zeros((0, dim), np.float32),
        embed,
        options.graph_options,
        extractor,
        anchor_links(
            list(zip(chunks["article_id"], rows.chunk_anchors, chunks["text"], strict=True)),
            [(a, b, anchor) for (a, b), anchors in rows.link_anchors.items() for anchor in anchors],
        ),
        mentions=mentions if any(m is not None for m in mentions) else None,
        parts=None if parts is None else [parts[d] for d in rows.chunk_docs],
    )


def write_store(
    path: Path,
    docs: list[PreparedDocument],
    dim: int,
    options: BuildOptions,
    embedder: Embedder | None = None,
    graph_report: list[GraphReport] | None = None,
    aliases: dict[str, str] | None = None,
    graph: GraphTables | None = None,
) -> dict[str, int]:
    """Bulk-load every prepared document into a new store at ``path``; return the graph stats.

    With ``options.graph`` the entity graph is built too (:func:`corpus_graph`), unless ``graph``
    gives it (a shard's part of its pack's graph); its report is appended to ``graph_report``.
    ``aliases``: other URLs of an article (duplicates), so that links to them land on it."""
    rows = store_rows(docs, options, aliases)
    # The APIs its documents define, for how-to questions: embedded while the rest is written (the
    # entity graph's spaCy and LadybugDB's bulk copy run on one core).
    chunk_ids, texts = rows.chunks["id"], rows.chunks["text"]
    defined = None if embedder is None else definitions_meanwhile(chunk_ids, texts, embedder)

    def vectors(found: list[np.ndarray]) -> pa.Array:
        return vectors_to_arrow(np.vstack(found) if found else np.zeros((0, dim), np.float32))

    build_keyword_index(
        path.parent / KEYWORD_DIR, rows.chunks["id"], rows.keyword_texts, languages=rows.chunk_languages
    )
    if embedder is not None and across_languages(embedder):  # questions in other languages
        index = KeywordIndex.load(path.parent / KEYWORD_DIR)
        build_lexicon(path.parent, rows.keyword_texts, index, embedder)
    else:
        shutil.rmtree(path.parent / LEXICON_DIR, ignore_errors=True)
    shutil.rmtree(path.parent / DEFINITIONS_DIR, ignore_errors=True)
    if graph is None and options.graph:
        graph, report = corpus_graph(docs, dim, options, embedder, rows=rows)
        if graph_report is not None:
            graph_report.append(report)
    store = Store.create(path, dim)
    try:
        store.copy("Article", pa.table(rows.articles))
        store.copy("Section", pa.table({**rows.sections, "embedding": vectors(rows.section_vectors)}))
        store.copy("Chunk", pa.table({**rows.chunks, "embedding": vectors(rows.chunk_vectors)}))
        categories = rows.categories
        store.copy("Category", pa.table({"id": list(categories), "name": list(categories.values())}))
        store.copy("HAS_SECTION", pa.table(rows.has_section))
        store.copy("HAS_CHUNK", pa.table(rows.has_chunk))
        store.copy("IN_CATEGORY", pa.table(rows.in_category))
        links = rows.link_counts
        store.copy(
            "LINKS_TO",
            pa.table(
                {
                    "from": [a for a, _ in links],
                    "to": [b for _, b in links],
                    "count": list(links.values()),
                    "anchors": pa.array(
                        [rows.link_anchors.get(pair, []) for pair in links], pa.list_(pa.string())
                    ),
                }
            ),
        )
        if graph is not None:
            copy_graph(store, graph, dim)
        store.build_vector_index()
        stats = store.stats()
        stats["vector_index"] = 1 if store.vector_path == "hnsw" else 0
    finally:
        store.close()
    if defined is not None:
        write_when_done(path.parent, defined)
    return stats


def describe_documents(docs: Sequence[PreparedDocument], corpus: str | None = None) -> str:
    """The description of a pack built without ``--description``: what it holds and from where
    (the hosts of its documents, or the file name of its passage ``corpus``), and a few titles."""
    titles = [d.title for d in docs[:3] if d.title]
    more = f" and {len(docs) - len(titles)} more" if len(docs) > len(titles) else ""
    if corpus is not None:
        return f"{len(docs)} passages from the corpus {corpus}: {'; '.join(titles)}{more}"
    hosts = sorted({urlsplit(d.fetch["final_url"] or d.source).netloc or "local files" for d in docs})
    return f"{len(docs)} documents from {', '.join(hosts[:3])}: {'; '.join(titles)}{more}"


def classify_sources(
    expanded: Sequence[str], prepared: dict[str, PreparedDocument]
) -> tuple[list[PreparedDocument], list[SourceRecord], dict[str, str]]:
    """The documents to store, every source's manifest record (in source order), and the aliases:
    the URLs of duplicates, each mapped to the article that holds its content.

    One article per document: a source that lands on a page already listed (the same final URL
    after normalisation and redirects, e.g. ``/p.html`` and ``/x/../p.html``) or that has the same
    bytes as one (``/`` and ``/index.html``, a symlinked file) is ``duplicate of`` the first.
    """
    docs: list[PreparedDocument] = []
    by_url: dict[str, str] = {}  # final URL -> the first source that landed there
    by_content: dict[str, str] = {}  # sha256 of the fetched bytes -> the first source with them
    article: dict[str, str] = {}  # a stored source -> its article id
    aliases: dict[str, str] = {}
    records: list[SourceRecord] = []
    for source in expanded:
        item = prepared[source]
        final = item.fetch.get("final_url") or source
        sha = item.fetch.get("sha256") or ""
        first = by_url.get(final) or by_content.get(sha)
        status = "ok"
        if item.error is not None:
            status = item.error
        elif first is not None:
            status = f"duplicate of {first}"
            for url in (source, final):
                aliases.setdefault(url, article[first])
        else:
            by_url[final] = source
            if sha:
                by_content[sha] = source
            article[source] = final
            docs.append(item)
        records.append(
            SourceRecord(
                url=source,
                final_url=item.fetch.get("final_url"),
                sha256=item.fetch.get("sha256"),
                fetched_at=item.fetch.get("fetched_at"),
                status=status,
                content_type=item.fetch.get("content_type") or None,
                bytes=item.fetch.get("bytes"),
                chunks=len(item.chunks) if status == "ok" else 0,
            )
        )
    return docs, records, aliases


def write_documents_pack(
    folder: Path,
    name: str,
    docs: list[PreparedDocument],
    records: list[SourceRecord],
    embedder: Embedder,
    options: BuildOptions,
    description: str,
    graph_reports: list[GraphReport] | None = None,
    aliases: dict[str, str] | None = None,
    graph: GraphTables | None = None,
    **kept: Any,
) -> Manifest:
    """Write a new store for ``docs`` in ``folder`` and return the manifest that describes it
    (``kept``: manifest fields carried over from a previous pack, e.g. by an update; the entity
    graph build's report, when it ran, is appended to ``graph_reports``; ``aliases``: see
    :func:`classify_sources`; ``graph``: the store's entity graph, built already — a shard's
    part of its pack's, wikigr.build.shards)."""
    store_path = folder / layout.STORE_FILE
    for stale in folder.glob(layout.STORE_FILE + "*"):
        stale.unlink()
    stats = write_store(
        store_path, docs, embedder.dimension, options, embedder, graph_reports, aliases, graph
    )
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        description=description,
        created_at=now_iso(),
        wikigr_version=__version__,
        source_kind="documents",
        embedder=EmbedderRecord(embedder.name, embedder.dimension, embedder.backend, embedder.digest),
        schema_version=SCHEMA_VERSION,
        vector_index="hnsw" if stats.pop("vector_index") else "exact",
        stats=GraphStats(**stats),
        sources=records,
        languages=language_counts(d.language for d in docs),
        **kept,
    )


def write_support_files(
    folder: Path, manifest: Manifest, url_list: str, query_ref: str | None = None
) -> None:
    """Write a new pack's files beside its store and manifest: ``urls.txt``, ``skill.md``, the
    kind's default ``kg_config.json`` and an empty ``eval/`` (the last two unless the user's own
    were kept). ``query_ref``: how the skill names the pack (None: by its name)."""
    (folder / layout.URLS_FILE).write_text(url_list, encoding="utf-8")
    write_skill(folder, manifest, folder / layout.STORE_FILE, query_ref)
    config = folder / layout.CONFIG_FILE
    if not config.exists():
        default = pack_kind(manifest.source_kind).default_config
        config.write_text(json.dumps(default, indent=2) + "\n", encoding="utf-8")
    (folder / layout.RESULTS_DIR).mkdir(parents=True, exist_ok=True)
    questions = folder / layout.QUESTIONS_FILE
    if not questions.exists():
        questions.write_text("", encoding="utf-8")


def crawled_list(crawl: CrawlOptions, pages: list[str]) -> str:
    """What a crawled pack's ``urls.txt`` says of its crawl: the seeds, then the pages found."""
    seeds = " ".join(crawl.seeds)
    head = f"# crawled from {seeds}: `wikigr pack update` crawls again (manifest.json has its options)\n"
    return head + "".join(f"{u}\n" for u in pages)
