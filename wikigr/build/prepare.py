"""Each source of a build, prepared: fetched (or read from a passage corpus), parsed, chunked and
embedded — what the resume cache holds per document (:class:`PreparedDocument`)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import numpy as np

from wikigr import lang, schema
from wikigr.build.languages import document_language
from wikigr.build.options import BuildOptions
from wikigr.documents import Document, FetchResult, Section
from wikigr.embed import Embedder
from wikigr.errors import UsageError, WikigrError, shown
from wikigr.pack.manifest import now_iso
from wikigr.progress import ProgressCallback, ProgressEvent
from wikigr.sources.chunk import chunk_sections
from wikigr.sources.fetch import fetch_all
from wikigr.sources.parse import parse

if TYPE_CHECKING:
    from wikigr.build.cache import BuildCache

EMBED_GROUP = 256  # chunks embedded between two cache writes


@dataclass
class PreparedDocument:
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
    language: str = lang.UNKNOWN  # what its title and text are written in (wikigr.lang.detect)


def source_key(source: str) -> str:
    return hashlib.sha256(source.encode("utf-8")).hexdigest()[:32]


def fetch_meta(result: FetchResult) -> dict[str, Any]:
    return {
        "url": result.url,
        "final_url": result.final_url,
        "sha256": hashlib.sha256(result.content).hexdigest() if result.ok else None,
        "fetched_at": result.fetched_at,
        "content_type": result.content_type,
        "bytes": len(result.content),
        "error": result.error,
    }


def prepare_fetched(result: FetchResult, options: BuildOptions) -> PreparedDocument:
    meta = fetch_meta(result)
    if not result.ok:
        return PreparedDocument(source=result.url, fetch=meta, error=result.error)
    try:
        document = parse(result)
    except WikigrError as exc:
        return PreparedDocument(source=result.url, fetch=meta, error=str(exc))
    return prepare_document(result.url, document, meta, options)


def prepare_document(
    source: str, document: Document, meta: dict[str, Any], options: BuildOptions
) -> PreparedDocument:
    sections = [s for s in document.sections if s.text.strip()]
    chunks = chunk_sections(sections, max_words=options.max_words, overlap_words=options.overlap_words)
    if not sections or not chunks:
        return PreparedDocument(source=source, fetch=meta, error="no text content")
    kept = [asdict(s) for s in sections]
    return PreparedDocument(
        source=source,
        fetch=meta,
        title=document.title,
        sections=kept,
        links=list(document.links),
        anchors=[[url, text] for url, text in document.anchors],
        chunks=[{"section": c.section_index, "ord": c.index, "text": c.text} for c in chunks],
        language=document_language(document.title, kept),
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
    for number, passage in enumerate(passages):
        if not schema.is_unicode(passage):  # JSON spells a lone surrogate, "\udcff"; UTF-8 cannot
            place = places[number] if places else f"item {number}" if isinstance(data, list) else "entry"
            name = shown(passage[0].encode("utf-8", "backslashreplace").decode("utf-8"))
            raise UsageError(f"corpus {path}: {place} (passage {name}) holds a lone surrogate, not text")
    ids = [p[0] for p in passages]
    if len(set(ids)) != len(ids):
        raise UsageError(f"corpus {path}: passage ids are not unique")
    return passages


def passage_url(passage_id: str) -> str:
    """The identity of a corpus passage inside a pack (its Article id and cited URL)."""
    return "passage:" + quote(passage_id, safe="")


def prepare_passage(passage: tuple[str, str, str], options: BuildOptions) -> PreparedDocument:
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
    return prepare_document(url, document, meta, options)


def embedding_text(title: str, section: str, text: str) -> str:
    """What is embedded for a chunk: its place in the pack, then its text."""
    heading = f"{title} > {section}" if section and section != title else title
    return f"{heading}\n{text}" if heading else text


def fetch_sources(urls: list[str], options: BuildOptions, progress: ProgressCallback) -> list[FetchResult]:
    """Fetch ``urls`` (results in their order), reporting "fetch" progress as each one finishes."""
    done = 0

    def on_fetched(result: FetchResult) -> None:
        nonlocal done
        done += 1
        progress(ProgressEvent("fetch", done, len(urls), result.url))

    progress(ProgressEvent("fetch", 0, len(urls)))
    return fetch_all(urls, options.fetch, on_progress=on_fetched) if urls else []


def embed_pending(
    pending: list[PreparedDocument],
    embedder: Embedder,
    cache: BuildCache | None,
    progress: ProgressCallback,
    known: Callable[[str], np.ndarray | None] | None = None,
) -> int:
    """Embed the chunks of ``pending`` documents in groups of about EMBED_GROUP chunks, caching
    each document as soon as its group is embedded: what an interrupted build or update resumes
    from (``cache`` None: nothing is cached, as on a Ray worker). ``known`` gives the vector of a
    text embedded before (an update's previous store), which is reused instead. Returns the number
    of chunks embedded."""
    work: list[tuple[PreparedDocument, list[str], list[int]]] = []  # document, texts, rows to embed
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
