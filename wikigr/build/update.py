"""Incremental update of a pack: re-fetch its sources, embed only what is new, swap atomically.

``update_pack`` re-fetches every source of the pack (its ``urls.txt``, or a given list), compares
each document's sha256 with the one the manifest records, and rebuilds the pack in the partial
folder beside it (``.NAME.partial``) with the build's pipeline (wikigr.build):

- every fetched document is parsed and chunked again (cheap, and it refreshes the document's
  outgoing links, so ``LINKS_TO`` also covers links to newly added pages);
- a chunk's embedding is taken from the previous store whenever the exact text that was embedded
  (``Article title > Section title`` + chunk text) is there, so an unchanged document embeds
  nothing, and a changed one embeds only its new or edited chunks; the rest is embedded and
  cached in the partial folder, so an interrupted update resumes without embedding it again;
- documents no longer listed are dropped with their sections, chunks and links (the store is
  written anew); a document that was in the pack but cannot be fetched now is *kept* as it was
  (taken from the previous store) and reported, so a network hiccup loses nothing; when no
  source at all can be fetched and parsed, the update fails (BuildError) before writing anything
  and the pack stays as it was, byte for byte;
- statistics, the entity graph (when the pack has one: a pack built with ``--no-graph`` keeps
  none), the BM25 index, ``skill.md`` and the manifest are regenerated, the user's
  ``kg_config.json`` and ``eval/`` kept, and the folder swapped in with renames;
- when nothing changed (every source fetched again with the bytes it had, chunked into the texts
  the store holds), the store, its entity graph and BM25 index are kept as they are (copied into
  the new folder): only the manifest (each source's ``fetched_at``) and the support files are
  written again, so an unchanged update costs its fetch and little more.

A process that has the pack open keeps answering from the previous state until it reopens it.
Passage-corpus and OpenML packs cannot be updated this way (they have no URLs to re-fetch).
"""

from __future__ import annotations

import contextlib
import shutil
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from wikigr import __version__
from wikigr.build.cache import BuildCache
from wikigr.build.definitions import build_definitions
from wikigr.build.languages import choose_embedder, document_language, language_counts
from wikigr.build.options import BuildOptions
from wikigr.build.prepare import (
    PreparedDocument,
    embed_pending,
    embedding_text,
    fetch_sources,
    prepare_fetched,
)
from wikigr.build.ray import RayEmbedder, fetch_on_ray
from wikigr.build.write import (
    classify_sources,
    crawled_list,
    describe_documents,
    write_documents_pack,
    write_support_files,
)
from wikigr.documents_kind import SCHEMA_VERSION
from wikigr.embed import pack_embedder
from wikigr.errors import BuildError, UsageError
from wikigr.pack import pack as layout
from wikigr.pack.definitions import DEFINITIONS_DIR
from wikigr.pack.keyword import KEYWORD_DIR
from wikigr.pack.kind import pack_kind
from wikigr.pack.lexicon import LEXICON_DIR
from wikigr.pack.manifest import AUTO_DESCRIPTION, FORMAT_VERSION, Manifest, SourceRecord, now_iso
from wikigr.pack.shards import SHARDS_DIR, refuse_shard
from wikigr.pack.store import Store
from wikigr.pack.transaction import interrupts_held, pack_transaction
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.share.skills import refresh_pack_skill
from wikigr.sources.crawl import Crawler, CrawlFile, CrawlReport, crawl_of, kept_pages
from wikigr.sources.folders import expand_sources
from wikigr.sources.urls import load_url_list


@dataclass
class UpdateReport:
    path: Path
    manifest: Manifest
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    kept: list[tuple[str, str]] = field(default_factory=list)  # in the pack, not fetchable now
    failed: list[tuple[str, str]] = field(default_factory=list)  # new sources that failed
    chunks_embedded: int = 0
    chunks_reused: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    skill: Path | None = None  # the registered Claude Code skill rewritten, if there was one
    crawl: CrawlReport | None = None  # what the crawl did (a crawled pack)
    store_kept: bool = False  # nothing changed: the store was kept as it was, only the manifest rewritten
    notes: list[str] = field(default_factory=list)  # one-line notes (an English model, other languages)

    def to_json(self) -> dict[str, Any]:
        return {
            "path": str(self.path),
            "name": self.manifest.name,
            "added": self.added,
            "changed": self.changed,
            "removed": self.removed,
            "unchanged": self.unchanged,
            "kept": [{"url": u, "error": e} for u, e in self.kept],
            "failed": [{"url": u, "error": e} for u, e in self.failed],
            "counts": {
                "added": len(self.added),
                "changed": len(self.changed),
                "removed": len(self.removed),
                "unchanged": len(self.unchanged),
                "kept": len(self.kept),
                "failed": len(self.failed),
            },
            "chunks_embedded": self.chunks_embedded,
            "chunks_reused": self.chunks_reused,
            "stats": vars(self.manifest.stats),
            "skill": str(self.skill) if self.skill else None,
            "seconds": {k: round(v, 3) for k, v in self.seconds.items()},
            "crawl": self.crawl.to_json() if self.crawl is not None else None,
            "languages": self.manifest.languages,
            "notes": self.notes,
        }


def _public_urls(store: Store) -> list[tuple[str, str]]:
    """The ``--public-url`` rewrites of the build, recovered from its articles (id vs cited url)."""
    pairs: dict[tuple[str, str], int] = {}
    for article_id, url in store.rows("MATCH (a:Article) WHERE a.url <> a.id RETURN a.id, a.url"):
        n = 0
        while n < min(len(article_id), len(url)) and article_id[-1 - n] == url[-1 - n]:
            n += 1
        local, public = article_id[: len(article_id) - n], url[: len(url) - n]
        if local and public:
            pairs[(local, public)] = pairs.get((local, public), 0) + 1
    return sorted(pairs, key=lambda p: (-len(p[0]), p))


def _vector_pool(store: Store) -> dict[str, np.ndarray]:
    """Embedded text -> embedding, for every chunk of the previous store."""
    rows = store.rows(
        "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk) "
        "RETURN a.title, s.title, c.text, c.embedding"
    )
    return {embedding_text(r[0], r[1], r[2]): np.asarray(r[3], dtype=np.float32) for r in rows}


def _previous_document(store: Store, record: SourceRecord) -> PreparedDocument | None:
    """A document of the previous pack as the build prepared it (for a source that failed now)."""
    article_id = record.final_url or record.url
    found = store.rows("MATCH (a:Article) WHERE a.id = $id RETURN a.title", {"id": article_id})
    if not found:
        return None
    sections = store.rows(
        "MATCH (s:Section) WHERE s.article_id = $id RETURN s.ord, s.title, s.level, s.text, s.anchor "
        "ORDER BY s.ord",
        {"id": article_id},
    )
    index = {row[0]: i for i, row in enumerate(sections)}
    chunks = store.rows(
        "MATCH (s:Section)-[:HAS_CHUNK]->(c:Chunk) WHERE c.article_id = $id "
        "RETURN s.ord, c.ord, c.text, c.embedding ORDER BY s.ord, c.ord",
        {"id": article_id},
    )
    links = store.rows(
        "MATCH (a:Article)-[:LINKS_TO]->(b:Article) WHERE a.id = $id RETURN b.id", {"id": article_id}
    )
    anchors = [
        [f"{target}#{fragment}" if fragment else target, text]
        for _, target, anchor in store.link_anchors(article_id)
        for fragment, _, text in [anchor.partition("\t")]
    ]
    kept = [{"title": s[1], "level": s[2], "text": s[3], "anchor": s[4] or ""} for s in sections]
    return PreparedDocument(
        source=record.url,
        fetch={
            "url": record.url,
            "final_url": record.final_url,
            "sha256": record.sha256,
            "fetched_at": record.fetched_at,
            "content_type": record.content_type or "",
            "bytes": record.bytes or 0,
            "error": None,
        },
        title=found[0][0],
        sections=kept,
        links=[row[0] for row in links],
        anchors=anchors,
        chunks=[{"section": index[c[0]], "ord": c[1], "text": c[2]} for c in chunks],
        embeddings=np.asarray([c[3] for c in chunks], dtype=np.float32),
        language=document_language(found[0][0], kept),
    )


def _crawl_again(
    crawler: Crawler,
    store: Store,
    previous: dict[str, SourceRecord],
    expanded: list[str],
    options: BuildOptions,
) -> list[PreparedDocument]:
    """The pages of the crawl again, prepared (those not listed added to ``expanded``): a page the
    server says is not modified (304) is taken from the store as it was; one that is gone (404,
    410) is left out, so the update removes it. A listed source the crawl finds is among them (it
    is not fetched twice)."""
    items: list[PreparedDocument] = []
    listed = set(expanded)
    with contextlib.closing(crawler.run()) as pages:
        for result in pages:
            if result.status in (404, 410) and result.url not in listed:
                continue
            item: PreparedDocument | None = None
            if result.not_modified and result.url in previous:
                item = _previous_document(store, previous[result.url])
            if item is None:
                if result.not_modified:
                    continue  # not in the store (cannot happen in a pack it wrote): crawled next time
                item = prepare_fetched(result, options)
            items.append(item)
    expanded += crawler.report.in_order([item.source for item in items if item.source not in listed])
    return items


def has_graph(manifest: Manifest) -> bool:
    """Whether the pack has an entity graph (built by ``pack create``, or ``pack graph``): its
    statistics count entities, facts or relations. A pack built with ``--no-graph`` has none, and
    its update builds none either."""
    stats = manifest.stats
    return bool(stats.entities or stats.facts or stats.relations)


def _count(
    report: UpdateReport,
    records: list[SourceRecord],
    previous: dict[str, SourceRecord],
    prepared: dict[str, PreparedDocument],
) -> None:
    """Sort the sources into the report's added, changed, unchanged, failed and removed."""
    kept_urls = {u for u, _ in report.kept}
    for record in records:
        if record.status != "ok":
            if not record.status.startswith("duplicate"):
                report.failed.append((record.url, record.status))
        elif record.url in kept_urls:
            pass
        elif record.url not in previous:
            report.added.append(record.url)
        elif previous[record.url].sha256 != record.sha256:
            report.changed.append(record.url)
        else:
            report.unchanged.append(record.url)
    report.removed = [u for u in previous if u not in prepared]


def _record_key(record: SourceRecord) -> tuple[Any, ...]:
    """What of a source's record its rows in the store depend on (not when it was fetched)."""
    return (record.url, record.final_url, record.sha256, record.status, record.content_type, record.chunks)


def _same_store(
    store: Store,
    old: Manifest,
    records: list[SourceRecord],
    fresh: list[PreparedDocument],
    options: BuildOptions,
    report: UpdateReport,
) -> bool:
    """Whether the store written for the fetched documents would be the previous one: every source
    fetched again with the bytes it had (the same sources, in the same order, none added, removed,
    failed or kept from the store), chunked into the texts the store holds, cited under the same
    public URLs, and the store written by this wikigr's format. Then the update keeps the store
    (and its entity graph and BM25 index) as it is, and only the manifest and support files are
    written again: nothing to embed, nothing to index."""
    if report.added or report.changed or report.removed or report.kept or report.failed:
        return False
    if (old.wikigr_version, old.schema_version, old.format_version) != (
        __version__,
        SCHEMA_VERSION,
        FORMAT_VERSION,
    ):
        return False
    if options.llm is not None or [_record_key(r) for r in records] != [_record_key(r) for r in old.sources]:
        return False
    if options.public_urls != _public_urls(store):
        return False
    rows = store.rows(
        "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk) "
        "RETURN a.title, s.title, c.text"
    )
    stored = sorted(embedding_text(r[0], r[1], r[2]) for r in rows)
    return stored == sorted(text for item in fresh for text in _texts(item))


def _copy_store(target: Path, partial: Path) -> None:
    """Stage a copy of the pack's store, BM25 index, lexicon and definitions (a copy, not links: a
    process that has the previous pack open keeps reading its own files)."""
    partial.mkdir(parents=True, exist_ok=True)
    staged = [partial / KEYWORD_DIR, partial / LEXICON_DIR, partial / DEFINITIONS_DIR, partial / SHARDS_DIR]
    for stale in [*partial.glob(layout.STORE_FILE + "*"), *staged]:
        if stale.is_dir():
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    for path in target.glob(layout.STORE_FILE + "*"):
        shutil.copy2(path, partial / path.name)
    for folder in (KEYWORD_DIR, LEXICON_DIR, DEFINITIONS_DIR):
        if (target / folder).is_dir():
            shutil.copytree(target / folder, partial / folder)


def _texts(item: PreparedDocument) -> list[str]:
    return [embedding_text(item.title, item.sections[c["section"]]["title"], c["text"]) for c in item.chunks]


def update_pack(
    ref: str | Path,
    urls_file: Path | None = None,
    options: BuildOptions | None = None,
    on_progress: ProgressCallback | None = None,
    skills_dir: Path | None = None,
) -> UpdateReport:
    """Update the pack ``ref`` (name or path) from its ``urls.txt`` (or ``urls_file``), and the
    Claude Code skill registered for it in ``skills_dir`` (default ``~/.claude/skills``), if any."""
    started = time.perf_counter()
    progress = on_progress or no_progress
    pack = layout.open_pack(ref)
    refuse_shard(pack.path, "pack update")
    old = pack.manifest
    refusal = pack_kind(old.source_kind).update_refusal(old)
    if refusal is not None:
        raise UsageError(refusal)
    if urls_file is not None and not urls_file.exists():
        raise UsageError(f"no such file: {urls_file}")
    crawl, crawled = crawl_of(pack.path, old)
    if crawl is not None and urls_file is None:  # the sources listed beside the seeds
        sources, url_list = crawled.urls, "".join(f"{u}\n" for u in crawled.urls)
    else:
        listed = load_url_list(urls_file if urls_file is not None else pack.path / layout.URLS_FILE)
        sources, url_list = listed.sources, listed.text
    options = options or BuildOptions()
    options.embedder = old.embedder.name
    options.graph = has_graph(old)  # the pack's choice (`pack create --no-graph`) is kept
    embedder = pack_embedder(old.embedder, f"pack {old.name}")
    target = pack.path
    seconds: dict[str, float] = {}
    report = UpdateReport(path=target, manifest=old)

    with contextlib.ExitStack() as finishing, pack_transaction(target) as txn:
        t0 = time.perf_counter()
        with pack.open_store() as store:
            if not options.public_urls:
                options.public_urls = _public_urls(store)
            previous = {r.url: r for r in old.sources if r.status == "ok"}
            expanded = expand_sources(list(sources))
            fetch_t0 = time.perf_counter()
            items: list[PreparedDocument] = []
            if crawl is not None:  # first: a listed source the crawl finds is not fetched twice
                crawler = Crawler(
                    crawl,
                    options.fetch,
                    folder=txn.scratch("crawl"),
                    previous=crawled.pages,
                    on_progress=progress,
                )
                items = _crawl_again(crawler, store, previous, expanded, options)
                report.crawl = crawler.report
            done = {item.source for item in items}
            to_fetch = [u for u in expanded if u not in done]
            if options.ray is not None:  # fetch, parse and chunk on Ray's workers (docs/scale.md)
                items += fetch_on_ray(to_fetch, options, progress)
            else:
                items += [prepare_fetched(r, options) for r in fetch_sources(to_fetch, options, progress)]
            seconds["fetch"] = time.perf_counter() - fetch_t0
            prepared: dict[str, PreparedDocument] = {}
            fresh: list[PreparedDocument] = []  # fetched and parsed now
            errors: list[tuple[str, str]] = []
            for item in items:
                url = item.source
                if item.error is None:
                    fresh.append(item)
                else:
                    errors.append((url, item.error))
                    kept = _previous_document(store, previous[url]) if url in previous else None
                    if kept is not None:
                        report.kept.append((url, item.error))
                        item = kept
                prepared[url] = item
            if not fresh:  # nothing to update from: fail before anything is written
                first = f" (first: {errors[0][0]}: {errors[0][1]})" if errors else ""
                raise BuildError(f"no source could be fetched and parsed: the pack is unchanged{first}")
            # Classify and collect the documents, one article per document (as a build does).
            docs, records, aliases = classify_sources(expanded, prepared)
            _count(report, records, previous, prepared)
            same = _same_store(store, old, records, fresh, options, report)
            pool = {} if same else _vector_pool(store)
        seconds["read"] = time.perf_counter() - t0 - seconds["fetch"]

        # Embeddings: a chunk whose embedded text is in the previous store or in the cache of an
        # interrupted update is not embedded again; the rest is embedded by the build's pipeline,
        # which caches each document as it is done (so this update, interrupted, resumes too).
        partial = txn.partial
        scratch = txn.scratch(BuildCache.FOLDER)
        t0 = time.perf_counter()
        if same:  # nothing to embed: every chunk is in the store, which is kept as it is
            progress(ProgressEvent("embed", 0, 0))
        else:
            cache = BuildCache.for_build(scratch, embedder, options)
            for item in fresh:
                cached = cache.load(item.source)
                if cached is not None and cached.embeddings is not None:
                    pool.update(zip(_texts(cached), cached.embeddings, strict=True))
            if options.ray is not None:
                report.chunks_embedded = embed_pending(
                    fresh, RayEmbedder(options.ray, embedder), cache, progress, pool.get
                )
            else:
                report.chunks_embedded = embed_pending(fresh, embedder, cache, progress, pool.get)
        report.chunks_reused = sum(len(item.chunks) for item in fresh) - report.chunks_embedded
        seconds["embed"] = time.perf_counter() - t0

        t0 = time.perf_counter()
        progress(ProgressEvent("write", 0, 1))
        description = old.description
        if not description or AUTO_DESCRIPTION.match(description):
            description = describe_documents(docs)
        if same:
            _copy_store(target, partial)
            report.store_kept = True
            if not (partial / DEFINITIONS_DIR).is_dir():  # a pack built before they were kept
                with Store.open(partial / layout.STORE_FILE) as copied:
                    chunks = copied.rows("MATCH (c:Chunk) RETURN c.id, c.text ORDER BY c.id")
                build_definitions(partial, [c[0] for c in chunks], [c[1] for c in chunks], embedder)
            manifest = replace(
                old,
                created_at=now_iso(),
                description=description,
                sources=records,
                files={},
                sizes={},
                languages=language_counts(d.language for d in docs),  # a pack built before: recorded now
            )
        else:
            manifest = write_documents_pack(
                partial,
                old.name,
                docs,
                records,
                embedder,
                options,
                description,
                aliases=aliases,
                version=old.version,
                eval_scores=old.eval_scores,  # the last evaluation (dated), as eval/results/ is kept
            )
        if crawl is not None and report.crawl is not None:
            manifest = replace(manifest, crawl=crawl.to_json())
            CrawlFile(list(sources), kept_pages(report.crawl)).dump(partial / layout.CRAWL_FILE, report.crawl)
            url_list += crawled_list(crawl, [u for u in report.crawl.pages if u in prepared])
        manifest.dump(partial / layout.MANIFEST_FILE)
        note = choose_embedder(manifest.languages, old.embedder.name)[1]  # the pack's embedder is kept
        report.notes += [note] if note else []
        in_home = target == (layout.packs_home() / old.name).resolve()
        write_support_files(partial, manifest, url_list, None if in_home else str(target))
        # Swapped in, the update is done: a Ctrl-C from here on is dropped, not reported as the
        # interruption of an update that happened (what is left: the skill, a small file).
        finishing.enter_context(interrupts_held(deliver=False))
        txn.commit()
        progress(ProgressEvent("write", 1, 1))
        seconds["write"] = time.perf_counter() - t0
        report.skill = refresh_pack_skill(target, skills_dir)
    seconds["total"] = time.perf_counter() - started
    report.manifest = manifest
    report.seconds = seconds
    return report
