"""Baseline query: embed the question with the pack's embedder, take the top chunks, and answer
extractively with the most relevant passages and their citations. Needs no network."""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikigr.embed import Embedder, embedder_info, get_embedder
from wikigr.errors import EmbedderUnavailableError, UsageError
from wikigr.pack.pack import Pack, open_pack
from wikigr.pack.store import ChunkHit, Store

MAX_PASSAGE_CHARS = 800


@dataclass(frozen=True)
class Source:
    title: str
    section: str
    url: str
    score: float
    text: str = ""


@dataclass
class QueryResult:
    question: str
    answer: str
    sources: list[Source]
    profile: str
    trace: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "sources": [
                {"title": s.title, "section": s.section, "url": s.url, "score": round(s.score, 4)}
                for s in self.sources
            ],
            "profile": self.profile,
            "trace": self.trace,
        }


def check_embedder(pack: Pack) -> None:
    """Refuse a pack whose recorded embedder is not available (or disagrees with ours)."""
    record = pack.manifest.embedder
    info = embedder_info(record.name)
    if info.dimension != record.dimension:
        raise EmbedderUnavailableError(
            f"pack {pack.name} records embedder {record.name} with dimension {record.dimension}, "
            f"but it has dimension {info.dimension} here"
        )


def _excerpt(text: str, limit: int = MAX_PASSAGE_CHARS) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(". ", 0, limit)
    return (text[: cut + 1] if cut > limit // 2 else text[:limit].rstrip()) + " …"


def citation_url(hit: ChunkHit) -> str:
    return f"{hit.url}#{hit.anchor}" if hit.anchor and "#" not in hit.url else hit.url


def extractive_answer(hits: list[ChunkHit]) -> str:
    """The passages themselves, numbered; [n] refers to the n-th source."""
    if not hits:
        return "No passage in this pack matches the question."
    parts = []
    for n, hit in enumerate(hits, 1):
        where = f"{hit.article_title} › {hit.section_title}" if hit.section_title else hit.article_title
        parts.append(f"[{n}] {where}\n{_excerpt(hit.text)}")
    return "\n\n".join(parts)


def best_per_section(hits: list[ChunkHit], k: int) -> list[ChunkHit]:
    seen: set[str] = set()
    kept: list[ChunkHit] = []
    for hit in hits:
        if hit.section_id in seen:
            continue
        seen.add(hit.section_id)
        kept.append(hit)
        if len(kept) == k:
            break
    return kept


class PackSearcher:
    """A pack opened for querying: its store (read-only) and its embedder, loaded once."""

    def __init__(self, pack: Pack, store: Store, embedder: Embedder) -> None:
        self.pack = pack
        self.store = store
        self.embedder = embedder

    @classmethod
    def open(cls, ref: str | Path) -> PackSearcher:
        pack = open_pack(ref)
        check_embedder(pack)
        # Loading the model and opening the store are independent: do them at the same time.
        with ThreadPoolExecutor(max_workers=2) as pool:
            embedder_future = pool.submit(get_embedder, pack.manifest.embedder.name)
            store_future = pool.submit(pack.open_store)
            store = store_future.result()
            try:
                embedder = embedder_future.result()
            except BaseException:
                store.close()
                raise
        return cls(pack, store, embedder)

    def close(self) -> None:
        self.store.close()

    def __enter__(self) -> PackSearcher:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def query(self, question: str, top_k: int = 5) -> QueryResult:
        question = question.strip()
        if not question:
            raise UsageError("the question is empty")
        if top_k < 1:
            raise UsageError("--top-k must be at least 1")
        start = time.perf_counter()
        vector = self.embedder.embed([question])[0]
        embedded = time.perf_counter()
        candidates = self.store.search_chunks(vector.tolist(), top_k * 3)
        searched = time.perf_counter()
        hits = best_per_section(candidates, top_k)
        sources = [Source(h.article_title, h.section_title, citation_url(h), h.score, h.text) for h in hits]
        trace = {
            "embedder": self.embedder.name,
            "vector_path": self.store.vector_path,
            "candidates": len(candidates),
            "returned": len(hits),
            "embed_ms": round((embedded - start) * 1000, 2),
            "search_ms": round((searched - embedded) * 1000, 2),
            "total_ms": round((time.perf_counter() - start) * 1000, 2),
        }
        return QueryResult(question, extractive_answer(hits), sources, "baseline", trace)


def query_pack(ref: str | Path, question: str, top_k: int = 5) -> QueryResult:
    """Answer ``question`` from the pack ``ref`` (a path or a name in the packs home)."""
    if not question.strip():
        raise UsageError("the question is empty")
    with PackSearcher.open(ref) as searcher:
        return searcher.query(question, top_k)
