"""Build a pack from document URLs: fetch, parse, chunk, embed, write the store — atomically.

The pack is built in a hidden folder beside the target (``.NAME.partial``) and swapped in only at
the end, so an interrupted build (Ctrl-C, a crash) leaves the previous pack untouched. Each
document that was fetched, parsed and embedded is cached in that folder as it completes; running
the same build again resumes from the cache instead of fetching and embedding those documents again.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote, urlsplit

import numpy as np
import pyarrow as pa

from wikigr import __version__, schema
from wikigr.documents import Document, FetchResult, Section
from wikigr.documents_kind import SCHEMA_VERSION
from wikigr.embed import Embedder, default_embedder_name, get_embedder
from wikigr.errors import BuildError, UsageError, WikigrError
from wikigr.graph.build import ChunkRecord, GraphOptions, GraphReport, GraphTables, anchor_links, build_graph
from wikigr.pack import pack as layout
from wikigr.pack.keyword import KEYWORD_DIR, build_keyword_index
from wikigr.pack.manifest import (
    FORMAT_VERSION,
    EmbedderRecord,
    GraphStats,
    Manifest,
    SourceRecord,
    now_iso,
)
from wikigr.pack.store import Store, vectors_to_arrow
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.sources.chunk import chunk_sections
from wikigr.sources.fetch import FetchOptions, fetch_all
from wikigr.sources.folders import expand_sources
from wikigr.sources.parse import parse

if TYPE_CHECKING:
    from wikigr.distributed import RayOptions

CACHE_FORMAT = 2  # 2: documents carry their link texts (anchors)
EMBED_GROUP = 256  # chunks embedded between two cache writes
ARTICLE_COLUMNS = ("id", "title", "url", "source_url", "content_type", "sha256", "fetched_at", "word_count")


@dataclass
class BuildOptions:
    description: str = ""
    embedder: str = field(default_factory=default_embedder_name)
    fetch: FetchOptions = field(default_factory=FetchOptions)
    max_words: int = 200
    overlap_words: int = 30
    fresh: bool = False  # ignore the cache of an interrupted build
    # Cite documents under public URLs: (prefix fetched from, prefix to cite), e.g. a local mirror.
    public_urls: list[tuple[str, str]] = field(default_factory=list)
    graph: bool = True  # build the entity graph (wikigr/graph)
    graph_options: GraphOptions = field(default_factory=GraphOptions)
    llm: Any = None  # an LLM for the skeleton's extraction (None: offline, zero LLM calls)
    # Run the per-document work (fetch, parse, chunk, embed, names) and the graph's extraction on
    # Ray (wikigr.distributed); None: in this process.
    ray: RayOptions | None = None

    def public_url(self, url: str) -> str:
        for local, public in self.public_urls:
            if url.startswith(local):
                return public + url[len(local) :]
        return url


@dataclass
class BuildReport:
    path: Path
    manifest: Manifest
    failed: list[tuple[str, str]]  # (url, error)
    resumed: int  # documents taken from an interrupted build's cache
    fetched: int  # documents fetched in this run
    chunks_embedded: int  # chunks embedded in this run
    seconds: dict[str, float]  # fetch, embed, write, total
    graph: GraphReport | None = None  # what the entity graph build did (None: skipped)


@dataclass
class _Prepared:
    """One source after fetch + parse + chunk (+ embed): what the cache holds per document."""

    source: str
    fetch: dict[str, Any]
    title: str = ""
    sections: list[dict[str, Any]] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    anchors: list[list[str]] = field(default_factory=list)  # [URL with fragment, link text]
    chunks: list[dict[str, Any]] = field(default_factory=list)  # section, ord, text
    embeddings: np.ndarray | None = None
    error: str | None = None
    # Per chunk, its keyword mentions as [name, type, key] (graph.extract.keyword_entities), when
    # they were found where the chunk was prepared (a Ray worker); None: found at write time.
    mentions: list[list[list[str]]] | None = None


def _key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:32]


class _Cache:
    """Per-document results of an interrupted build, kept in ``.NAME.partial/cache``."""

    @classmethod
    def for_build(cls, partial: Path, embedder: Embedder, options: BuildOptions) -> _Cache:
        """The cache of a build or update in ``partial``: kept only while what it holds would be
        computed the same way (cache format, embedder, chunking, wikigr version)."""
        fingerprint = {
            "cache_format": CACHE_FORMAT,
            "embedder": embedder.name,
            "embedder_digest": embedder.digest,
            "max_words": options.max_words,
            "overlap_words": options.overlap_words,
            "wikigr": __version__,
        }
        return cls(partial / "cache", fingerprint)

    def __init__(self, root: Path, fingerprint: dict[str, Any]) -> None:
        self.root = root
        meta = root / "meta.json"
        if root.is_dir():
            try:
                same = schema.parse_json(meta.read_bytes()) == fingerprint
            except (OSError, ValueError):  # ValueError: schema.JSONError too
                same = False
            if not same:
                shutil.rmtree(root)
        root.mkdir(parents=True, exist_ok=True)
        meta.write_text(json.dumps(fingerprint), encoding="utf-8")

    def load(self, source: str) -> _Prepared | None:
        base = self.root / _key(source)
        try:  # the build's own cache; a damaged entry is prepared again
            data = schema.parse_json(base.with_suffix(".json").read_bytes())
            vectors = np.load(base.with_suffix(".npy"))
            if not isinstance(data, dict) or data.get("source") != source:
                return None
            if len(vectors) != len(data.get("chunks", [])):
                return None
            prepared = _Prepared(**{k: v for k, v in data.items() if k != "embeddings"})
        except (OSError, ValueError, TypeError):  # ValueError: schema.JSONError too
            return None
        prepared.embeddings = vectors
        return prepared

    def save(self, item: _Prepared) -> None:
        base = self.root / _key(item.source)
        assert item.embeddings is not None
        np.save(base.with_suffix(".tmp.npy"), item.embeddings)
        os.replace(base.with_suffix(".tmp.npy"), base.with_suffix(".npy"))
        data = {k: v for k, v in asdict(item).items() if k != "embeddings"}
        base.with_suffix(".tmp").write_text(json.dumps(data), encoding="utf-8")
        os.replace(base.with_suffix(".tmp"), base.with_suffix(".json"))


@contextlib.contextmanager
def _build_lock(target: Path) -> Iterator[None]:
    lock_path = target.parent / f".{target.name}.lock"
    with open(lock_path, "w") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            raise BuildError(f"another build of {target} is running") from exc
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _fetch_meta(result: FetchResult) -> dict[str, Any]:
    return {
        "url": result.url,
        "final_url": result.final_url,
        "sha256": hashlib.sha256(result.content).hexdigest() if result.ok else None,
        "fetched_at": result.fetched_at,
        "content_type": result.content_type,
        "bytes": len(result.content),
        "error": result.error,
    }


def _prepare(result: FetchResult, options: BuildOptions) -> _Prepared:
    meta = _fetch_meta(result)
    if not result.ok:
        return _Prepared(source=result.url, fetch=meta, error=result.error)
    try:
        document = parse(result)
    except WikigrError as exc:
        return _Prepared(source=result.url, fetch=meta, error=str(exc))
    return _prepare_document(result.url, document, meta, options)


def _prepare_document(
    source: str, document: Document, meta: dict[str, Any], options: BuildOptions
) -> _Prepared:
    sections = [s for s in document.sections if s.text.strip()]
    chunks = chunk_sections(sections, max_words=options.max_words, overlap_words=options.overlap_words)
    if not sections or not chunks:
        return _Prepared(source=source, fetch=meta, error="no text content")
    return _Prepared(
        source=source,
        fetch=meta,
        title=document.title,
        sections=[asdict(s) for s in sections],
        links=list(document.links),
        anchors=[[url, text] for url, text in document.anchors],
        chunks=[{"section": c.section_index, "ord": c.index, "text": c.text} for c in chunks],
    )


MAX_CORPUS_BYTES = 1024 * 1024 * 1024
#: A pack is built from documents or from a passage corpus, never both: a corpus pack cannot be
#: updated, so a mix would be a documents pack that ``pack update`` refuses.
CORPUS_ALONE = "--corpus builds a pack from a passage corpus; it cannot be combined with --url/--urls"


def read_corpus(path: Path) -> list[tuple[str, str, str]]:
    """A passage corpus as (id, title, text) triples.

    Accepted: a JSON list of objects with ``title`` and ``text`` (and optionally ``id``; the
    default id is the position in the list), the same objects one per line (JSON lines, a file
    named ``*.jsonl``), or a JSON object mapping a title to its text or to a list of its sentences
    (HotpotQA's layout; the id is the title).
    """
    if not path.is_file():
        raise UsageError(f"no such corpus file: {path}")
    if path.stat().st_size > MAX_CORPUS_BYTES:
        raise UsageError(f"corpus {path} is larger than {MAX_CORPUS_BYTES // 2**20} MiB")
    data: Any
    places: list[str] = []  # where each item is, as an error names it: "line 3" (.jsonl), "item 2"
    where = ""
    try:
        text = schema.decode_utf8(path.read_bytes())
        if path.suffix == ".jsonl":
            data = []
            for number, line in enumerate(schema.json_lines(text), 1):
                where = f" line {number}:"
                if line.strip():
                    data.append(schema.parse_json(line))
                    places.append(f"line {number}")
        else:
            data = schema.parse_json(text)
    except schema.JSONError as exc:
        raise UsageError(f"corpus {path}:{where} {exc}") from exc
    passages: list[tuple[str, str, str]] = []
    if isinstance(data, list):
        for i, row in enumerate(data):
            place = places[i] if places else f"item {i}"
            if not isinstance(row, dict) or not isinstance(row.get("text"), str):
                raise UsageError(f"corpus {path}: {place}: expected an object with a 'text' string")
            title = row.get("title", "")
            if not isinstance(title, str):
                raise UsageError(f"corpus {path}: {place}: 'title' must be a string")
            passages.append((str(row.get("id", i)), title, row["text"]))
    elif isinstance(data, dict):
        for title, value in data.items():
            if isinstance(value, list) and all(isinstance(v, str) for v in value):
                value = "".join(value)
            if not isinstance(value, str):
                raise UsageError(f"corpus {path} entry {title!r}: expected text or a list of sentences")
            passages.append((title, title, value))
    else:
        raise UsageError(f"corpus {path}: expected a JSON list of passages or an object of title -> text")
    if not passages:
        raise UsageError(f"corpus {path} has no passages")
    ids = [p[0] for p in passages]
    if len(set(ids)) != len(ids):
        raise UsageError(f"corpus {path}: passage ids are not unique")
    return passages


def passage_url(passage_id: str) -> str:
    """The identity of a corpus passage inside a pack (its Article id and cited URL)."""
    return "passage:" + quote(passage_id, safe="")


def _prepare_passage(passage: tuple[str, str, str], options: BuildOptions) -> _Prepared:
    pid, title, text = passage
    url = passage_url(pid)
    raw = text.encode("utf-8")
    meta = {
        "url": url,
        "final_url": url,
        "sha256": hashlib.sha256(raw).hexdigest(),
        "fetched_at": now_iso(),
        "content_type": "text/plain",
        "bytes": len(raw),
        "error": None,
    }
    document = Document(
        url=url, title=title, sections=[Section(title="", level=0, text=text)], content_type="text/plain"
    )
    return _prepare_document(url, document, meta, options)


def embedding_text(title: str, section: str, text: str) -> str:
    """What is embedded for a chunk: its place in the pack, then its text."""
    heading = f"{title} > {section}" if section and section != title else title
    return f"{heading}\n{text}" if heading else text


def _embed_pending(
    pending: list[_Prepared],
    embedder: Embedder,
    cache: _Cache | None,
    progress: ProgressCallback,
    known: Callable[[str], np.ndarray | None] | None = None,
) -> int:
    """Embed the chunks of ``pending`` documents in groups of about EMBED_GROUP chunks, caching
    each document as soon as its group is embedded: what an interrupted build or update resumes
    from (``cache`` None: nothing is cached, as on a Ray worker). ``known`` gives the vector of a
    text embedded before (an update's previous store), which is reused instead. Returns the number
    of chunks embedded."""
    work: list[tuple[_Prepared, list[str], list[int]]] = []  # document, texts, rows to embed
    for item in pending:
        texts = [
            embedding_text(item.title, item.sections[c["section"]]["title"], c["text"]) for c in item.chunks
        ]
        item.embeddings = np.zeros((len(texts), embedder.dimension), dtype=np.float32)
        missing: list[int] = []
        for row, text in enumerate(texts):
            vector = known(text) if known is not None else None
            if vector is None:
                missing.append(row)
            else:
                item.embeddings[row] = vector
        if missing:
            work.append((item, texts, missing))
    total = sum(len(missing) for _, _, missing in work)
    done = 0
    progress(ProgressEvent("embed", 0, total))
    while work:
        group = [work.pop(0)]
        size = len(group[0][2])
        while work and size + len(work[0][2]) <= EMBED_GROUP:
            group.append(work.pop(0))
            size += len(group[-1][2])
        vectors = embedder.embed([texts[row] for _, texts, missing in group for row in missing])
        offset = 0
        for item, _, missing in group:
            assert item.embeddings is not None
            item.embeddings[missing] = vectors[offset : offset + len(missing)]
            offset += len(missing)
            if cache is not None:
                cache.save(item)
        done += size
        progress(ProgressEvent("embed", done, total))
    return total


def _category(url: str) -> str | None:
    """The folder an article's URL path is in: ``library`` for ``/library/os.html`` and for
    ``/library/``; None for a page at the root of its site or file system (its host is no topic)."""
    folders = unquote(urlsplit(url).path).split("/")[:-1]
    return next((folder for folder in reversed(folders) if folder), None)


def _url_variants(url: str) -> list[str]:
    base = url.split("#", 1)[0]
    variants = [base, base.rstrip("/")]
    if base.endswith("/index.html"):
        variants.append(base[: -len("index.html")])
    return variants


@dataclass
class _Rows:
    """The rows of a store's tables for some documents, and what the entity graph is built from."""

    articles: dict[str, list[Any]]
    sections: dict[str, list[Any]]
    chunks: dict[str, list[Any]]
    has_section: dict[str, list[str]]
    has_chunk: dict[str, list[str]]
    categories: dict[str, str]
    in_category: dict[str, list[str]]
    link_counts: dict[tuple[str, str], int]
    link_anchors: dict[tuple[str, str], list[str]]
    section_vectors: list[np.ndarray]
    chunk_vectors: list[np.ndarray]
    chunk_titles: list[str]
    keyword_texts: list[str]
    chunk_anchors: list[str]  # each chunk's section anchor (where links land)
    chunk_mentions: list[list[list[str]] | None]  # found by a worker, or None
    chunk_docs: list[int]  # each chunk's document (its index in ``docs``)


def _rows(docs: list[_Prepared], options: BuildOptions, aliases: dict[str, str] | None) -> _Rows:
    """The rows of every prepared document. ``aliases``: other URLs of an article (duplicates),
    so that links to them land on it."""
    rows = _Rows(
        articles={k: [] for k in ARTICLE_COLUMNS},
        sections={k: [] for k in ("id", "article_id", "title", "anchor", "level", "ord", "text")},
        chunks={k: [] for k in ("id", "article_id", "section_id", "ord", "text")},
        has_section={"from": [], "to": []},
        has_chunk={"from": [], "to": []},
        categories={},
        in_category={"from": [], "to": []},
        link_counts={},
        link_anchors={},
        section_vectors=[],
        chunk_vectors=[],
        chunk_titles=[],
        keyword_texts=[],
        chunk_anchors=[],
        chunk_mentions=[],
        chunk_docs=[],
    )
    url_to_article: dict[str, str] = {}
    for d, doc in enumerate(docs):
        assert doc.embeddings is not None
        article_id = doc.fetch["final_url"] or doc.source
        for variant in _url_variants(doc.source) + _url_variants(article_id):
            url_to_article.setdefault(variant, article_id)
        words = 0
        for s_ord, section in enumerate(doc.sections):
            section_id = f"{_key(article_id)[:16]}:{s_ord}"
            found = [i for i, c in enumerate(doc.chunks) if c["section"] == s_ord]
            if not found:
                continue
            mean = doc.embeddings[found].mean(axis=0)
            rows.section_vectors.append(mean / max(float(np.linalg.norm(mean)), 1e-12))
            for key, value in (
                ("id", section_id),
                ("article_id", article_id),
                ("title", section["title"]),
                ("anchor", section.get("anchor", "")),
                ("level", section["level"]),
                ("ord", s_ord),
                ("text", section["text"]),
            ):
                rows.sections[key].append(value)
            rows.has_section["from"].append(article_id)
            rows.has_section["to"].append(section_id)
            words += len(section["text"].split())
            for i in found:
                chunk = doc.chunks[i]
                chunk_id = f"{section_id}:{chunk['ord']}"
                for key, value in (
                    ("id", chunk_id),
                    ("article_id", article_id),
                    ("section_id", section_id),
                    ("ord", chunk["ord"]),
                    ("text", chunk["text"]),
                ):
                    rows.chunks[key].append(value)
                rows.chunk_anchors.append(section.get("anchor", "") or "")
                rows.chunk_vectors.append(doc.embeddings[i])
                rows.chunk_titles.append(doc.title)
                rows.chunk_mentions.append(doc.mentions[i] if doc.mentions is not None else None)
                rows.chunk_docs.append(d)
                rows.keyword_texts.append(embedding_text(doc.title, section["title"], chunk["text"]))
                rows.has_chunk["from"].append(section_id)
                rows.has_chunk["to"].append(chunk_id)
        meta = doc.fetch
        for key, value in (
            ("id", article_id),
            ("title", doc.title),
            ("url", options.public_url(article_id)),
            ("source_url", doc.source),
            ("content_type", meta["content_type"]),
            ("sha256", meta["sha256"]),
            ("fetched_at", meta["fetched_at"]),
            ("word_count", words),
        ):
            rows.articles[key].append(value)
        category = _category(article_id)
        if category is not None:
            rows.categories.setdefault(category, category)
            rows.in_category["from"].append(article_id)
            rows.in_category["to"].append(category)

    for url, article_id in (aliases or {}).items():
        for variant in _url_variants(url):
            url_to_article.setdefault(variant, article_id)
    for doc in docs:
        source_id = doc.fetch["final_url"] or doc.source
        for link in doc.links:
            target = next((url_to_article[v] for v in _url_variants(link) if v in url_to_article), None)
            if target and target != source_id:
                rows.link_counts[(source_id, target)] = rows.link_counts.get((source_id, target), 0) + 1
        for url, text in doc.anchors:
            base, _, fragment = url.partition("#")
            target = next((url_to_article[v] for v in _url_variants(base) if v in url_to_article), None)
            if target and target != source_id:
                rows.link_anchors.setdefault((source_id, target), []).append(f"{fragment}\t{text}")
    return rows


def corpus_graph(
    docs: list[_Prepared],
    dim: int,
    options: BuildOptions,
    embedder: Embedder | None = None,
    aliases: dict[str, str] | None = None,
    parts: Sequence[int] | None = None,
    rows: _Rows | None = None,
) -> tuple[GraphTables, GraphReport]:
    """The entity graph of ``docs`` (graph.build.build_graph over all their chunks; ``embedder``
    embeds entity names for synonym edges). ``parts``: the part (shard) of each document, for
    ``GraphTables.part``; ``rows``: the documents' rows, when they were made already."""
    rows = rows or _rows(docs, options, aliases)
    chunks = rows.chunks
    records = [ChunkRecord(*row) for row in zip(chunks["id"], rows.chunk_titles, chunks["text"], strict=True)]
    extractor: Any = None
    embed = (lambda names: embedder.embed(names)) if embedder is not None else None
    if options.llm is not None:
        from wikigr.graph.claude import ClaudeExtractor

        extractor = ClaudeExtractor(options.llm)
    if options.ray is not None:  # spaCy and the names' embeddings on the cluster's workers
        from wikigr.distributed import RayEmbed, RayExtractor

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


def _write_store(
    path: Path,
    docs: list[_Prepared],
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
    rows = _rows(docs, options, aliases)

    def vectors(found: list[np.ndarray]) -> pa.Array:
        return vectors_to_arrow(np.vstack(found) if found else np.zeros((0, dim), np.float32))

    build_keyword_index(path.parent / KEYWORD_DIR, rows.chunks["id"], rows.keyword_texts)
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
            from wikigr.graph.pack import copy_graph

            copy_graph(store, graph, dim)
        store.build_vector_index()
        stats = store.stats()
        stats["vector_index"] = 1 if store.vector_path == "hnsw" else 0
    finally:
        store.close()
    return stats


def _describe(docs: Sequence[_Prepared], corpus: str | None = None) -> str:
    """The description of a pack built without ``--description``: what it holds and from where
    (the hosts of its documents, or the file name of its passage ``corpus``), and a few titles."""
    titles = [d.title for d in docs[:3] if d.title]
    more = f" and {len(docs) - len(titles)} more" if len(docs) > len(titles) else ""
    if corpus is not None:
        return f"{len(docs)} passages from the corpus {corpus}: {'; '.join(titles)}{more}"
    hosts = sorted({urlsplit(d.fetch["final_url"] or d.source).netloc or "local files" for d in docs})
    return f"{len(docs)} documents from {', '.join(hosts[:3])}: {'; '.join(titles)}{more}"


def _swap_in(partial: Path, target: Path) -> None:
    """Replace ``target`` by ``partial`` with renames; the old pack is removed only afterwards."""
    old = target.parent / f".{target.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.rename(target, old)
    os.rename(partial, target)
    if old.exists():
        shutil.rmtree(old)


def _recover(target: Path) -> None:
    """Undo a swap that was cut between its two renames."""
    old = target.parent / f".{target.name}.old"
    if old.exists() and not target.exists():
        os.rename(old, target)


def fetch_sources(urls: list[str], options: BuildOptions, progress: ProgressCallback) -> list[FetchResult]:
    """Fetch ``urls`` (results in their order), reporting "fetch" progress as each one finishes."""
    done = 0

    def on_fetched(result: FetchResult) -> None:
        nonlocal done
        done += 1
        progress(ProgressEvent("fetch", done, len(urls), result.url))

    progress(ProgressEvent("fetch", 0, len(urls)))
    return fetch_all(urls, options.fetch, on_progress=on_fetched) if urls else []


def classify_sources(
    expanded: Sequence[str], prepared: dict[str, _Prepared]
) -> tuple[list[_Prepared], list[SourceRecord], dict[str, str]]:
    """The documents to store, every source's manifest record (in source order), and the aliases:
    the URLs of duplicates, each mapped to the article that holds its content.

    One article per document: a source that lands on a page already listed (the same final URL
    after normalisation and redirects, e.g. ``/p.html`` and ``/x/../p.html``) or that has the same
    bytes as one (``/`` and ``/index.html``, a symlinked file) is ``duplicate of`` the first.
    """
    docs: list[_Prepared] = []
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
    docs: list[_Prepared],
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
    part of its pack's, wikigr.pack.shards)."""
    store_path = folder / layout.STORE_FILE
    for stale in folder.glob(layout.STORE_FILE + "*"):
        stale.unlink()
    stats = _write_store(
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
        **kept,
    )


def build_pack(
    name: str,
    sources: Sequence[str],
    out: Path | None = None,
    options: BuildOptions | None = None,
    on_progress: ProgressCallback | None = None,
    url_list: str | None = None,
    corpus: Path | None = None,
    shards: int = 1,
) -> BuildReport:
    """Build (or rebuild) the pack ``name`` from ``sources`` (URLs, file URLs or directories) or
    from a passage ``corpus`` file (see :func:`read_corpus`).

    The pack lands at ``out`` (default: ``$WIKIGR_HOME/packs/NAME``). ``url_list`` is written as the
    pack's ``urls.txt`` (default: the sources, one per line). ``shards`` > 1 writes the pack in
    that many stores (wikigr.pack.shards).
    """
    layout.check_new_name(name)
    options = options or BuildOptions()
    progress = on_progress or no_progress
    if shards != 1:
        from wikigr.pack.shards import check_count

        check_count(shards)
    if not sources and corpus is None:
        raise UsageError("no sources given")
    if sources and corpus is not None:
        raise UsageError(CORPUS_ALONE)
    passages = read_corpus(corpus) if corpus is not None else []
    # Folders are walked now, before anything is written: one without documents is a usage error.
    expanded = expand_sources(list(sources), strict=True)
    target = (out or layout.packs_home() / name).expanduser().absolute()
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a folder")
    if target.exists() and any(target.iterdir()) and not (target / layout.MANIFEST_FILE).is_file():
        raise UsageError(f"{target} exists and is not a pack: refusing to replace it")
    target.parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    embedder = get_embedder(options.embedder)
    seconds: dict[str, float] = {}

    with _build_lock(target):
        _recover(target)
        partial = target.parent / f".{target.name}.partial"
        if options.fresh and partial.exists():
            shutil.rmtree(partial)
        cache = _Cache.for_build(partial, embedder, options)

        by_url = {passage_url(p[0]): p for p in passages}
        expanded += list(by_url)
        prepared: dict[str, _Prepared] = {}
        for source in expanded:
            cached = cache.load(source)
            if cached is not None:
                prepared[source] = cached
        resumed = len(prepared)
        if options.ray is not None:  # the same work, document by document, on the cluster's workers
            from wikigr.distributed import prepare_on_ray

            to_fetch = [s for s in expanded if s not in prepared and s not in by_url]
            t0 = time.perf_counter()
            embedded = prepare_on_ray(
                [by_url[u] for u in by_url if u not in prepared], to_fetch, options, cache, prepared, progress
            )
            seconds["prepare"] = time.perf_counter() - t0
        else:
            pending: list[_Prepared] = []
            for url in [u for u in by_url if u not in prepared]:
                item = _prepare_passage(by_url[url], options)
                prepared[url] = item
                if item.error is None:
                    pending.append(item)
            to_fetch = [s for s in expanded if s not in prepared]

            t0 = time.perf_counter()
            results = fetch_sources(to_fetch, options, progress)
            for result in results:
                item = _prepare(result, options)
                prepared[result.url] = item
                if item.error is None:
                    pending.append(item)
            seconds["fetch"] = time.perf_counter() - t0

            t0 = time.perf_counter()
            embedded = _embed_pending(pending, embedder, cache, progress)
            seconds["embed"] = time.perf_counter() - t0

        docs, records, aliases = classify_sources(expanded, prepared)
        failed = [
            (r.url, r.status) for r in records if r.status != "ok" and not r.status.startswith("duplicate")
        ]
        if not docs:
            first = f" (first: {failed[0][0]}: {failed[0][1]})" if failed else ""
            raise BuildError(f"no document could be fetched and parsed: {len(failed)} failed{first}")

        t0 = time.perf_counter()
        progress(ProgressEvent("write", 0, 1))
        graph_reports: list[GraphReport] = []
        description = options.description or _describe(docs, corpus.name if corpus else None)
        if shards > 1:
            from wikigr.pack.shards import write_shards

            manifest = write_shards(
                partial,
                name,
                docs,
                records,
                embedder,
                options,
                description,
                shards,
                graph_reports,
                aliases,
            )
        else:
            shutil.rmtree(partial / "shards", ignore_errors=True)  # of an interrupted build in shards
            manifest = write_documents_pack(
                partial,
                name,
                docs,
                records,
                embedder,
                options,
                description,
                graph_reports,
                aliases,
            )
        manifest.dump(partial / layout.MANIFEST_FILE)
        _keep_user_files(target, partial)
        if url_list is None:
            url_list = "".join(f"{s}\n" for s in sources)
            if corpus is not None:
                url_list += f"# passages from the corpus {corpus.name} ({len(passages)} passages)\n"
        in_home = target == (layout.packs_home() / name).expanduser().absolute()
        _write_support_files(partial, manifest, url_list, None if in_home else str(target))
        shutil.rmtree(partial / "cache")
        _swap_in(partial, target)
        progress(ProgressEvent("write", 1, 1))
        seconds["write"] = time.perf_counter() - t0
        seconds["total"] = time.perf_counter() - started

    return BuildReport(
        path=target,
        manifest=manifest,
        failed=failed,
        resumed=resumed,
        fetched=len(to_fetch),
        chunks_embedded=embedded,
        seconds=seconds,
        graph=graph_reports[0] if graph_reports else None,
    )


def _keep_user_files(target: Path, partial: Path) -> None:
    """A rebuild keeps what the user wrote in the previous pack: config, questions, eval results."""
    if not (target / layout.MANIFEST_FILE).is_file():
        return
    for rel in (layout.CONFIG_FILE, layout.QUESTIONS_FILE, layout.RESULTS_DIR):
        src, dst = target / rel, partial / rel
        if src.is_symlink() or not src.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=False, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)


def _write_support_files(
    folder: Path, manifest: Manifest, url_list: str, query_ref: str | None = None
) -> None:
    from wikigr.skill import write_skill

    (folder / layout.URLS_FILE).write_text(url_list, encoding="utf-8")
    write_skill(folder, manifest, folder / layout.STORE_FILE, query_ref)
    config = folder / layout.CONFIG_FILE
    if not config.exists():
        config.write_text(json.dumps({"profile": "auto"}, indent=2) + "\n", encoding="utf-8")
    (folder / layout.RESULTS_DIR).mkdir(parents=True, exist_ok=True)
    questions = folder / layout.QUESTIONS_FILE
    if not questions.exists():
        questions.write_text("", encoding="utf-8")
