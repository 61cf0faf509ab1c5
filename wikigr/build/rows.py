"""The rows of a store's tables for prepared documents (articles, sections, chunks, links)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import numpy as np

from wikigr.build.options import BuildOptions
from wikigr.build.prepare import PreparedDocument, embedding_text, source_key

ARTICLE_COLUMNS = ("id", "title", "url", "source_url", "content_type", "sha256", "fetched_at", "word_count")


def url_category(url: str) -> str | None:
    """The folder an article's URL path is in: ``library`` for ``/library/os.html`` and for
    ``/library/``; None for a page at the root of its site or file system (its host is no topic)."""
    folders = unquote(urlsplit(url).path).split("/")[:-1]
    return next((folder for folder in reversed(folders) if folder), None)


def url_variants(url: str) -> list[str]:
    base = url.split("#", 1)[0]
    variants = [base, base.rstrip("/")]
    if base.endswith("/index.html"):
        variants.append(base[: -len("index.html")])
    return variants


@dataclass
class StoreRows:
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
    chunk_languages: list[str]  # each chunk's document's language (wikigr.lang code)


def store_rows(
    docs: list[PreparedDocument], options: BuildOptions, aliases: dict[str, str] | None
) -> StoreRows:
    """The rows of every prepared document. ``aliases``: other URLs of an article (duplicates),
    so that links to them land on it."""
    rows = StoreRows(
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
        chunk_languages=[],
    )
    url_to_article: dict[str, str] = {}
    for d, doc in enumerate(docs):
        assert doc.embeddings is not None
        article_id = doc.fetch["final_url"] or doc.source
        for variant in url_variants(doc.source) + url_variants(article_id):
            url_to_article.setdefault(variant, article_id)
        words = 0
        for s_ord, section in enumerate(doc.sections):
            section_id = f"{source_key(article_id)[:16]}:{s_ord}"
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
                rows.chunk_languages.append(doc.language)
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
        category = url_category(article_id)
        if category is not None:
            rows.categories.setdefault(category, category)
            rows.in_category["from"].append(article_id)
            rows.in_category["to"].append(category)

    for url, article_id in (aliases or {}).items():
        for variant in url_variants(url):
            url_to_article.setdefault(variant, article_id)
    for doc in docs:
        source_id = doc.fetch["final_url"] or doc.source
        for link in doc.links:
            target = next((url_to_article[v] for v in url_variants(link) if v in url_to_article), None)
            if target and target != source_id:
                rows.link_counts[(source_id, target)] = rows.link_counts.get((source_id, target), 0) + 1
        for url, text in doc.anchors:
            base, _, fragment = url.partition("#")
            target = next((url_to_article[v] for v in url_variants(base) if v in url_to_article), None)
            if target and target != source_id:
                rows.link_anchors.setdefault((source_id, target), []).append(f"{fragment}\t{text}")
    return rows
