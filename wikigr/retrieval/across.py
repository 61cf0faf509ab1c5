"""Keyword search for a question asked in another language than the pack's documents.

Such a question shares no words with the passages, so keyword search finds nothing and the vectors
alone rank the pages. With the pack's lexicon (:mod:`wikigr.pack.lexicon`: its words embedded by a
multilingual embedder) each word of the question — and each pair of neighbouring words, which often
say one thing ("имя хоста": *hostname*) — is looked up among the documents' words by meaning; its
``nearest`` words become keyword tokens, weighted by a softmax of their cosines (``temperature``:
the nearest word takes most of the weight unless others are as near). "Получить имя хоста
компьютера" is searched as *computers*, *name*, *host*, *hostname*... over the English man pages.
``page_score`` then fuses the pages this search ranks with its own ranking (``keyword_across``).
Chosen on the dev half of bench/multilingual.py (Russian questions on English man pages).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Collection
from typing import TYPE_CHECKING

import numpy as np

from wikigr import lang
from wikigr.embed import embed_queries
from wikigr.pack.analyze import language_stopwords
from wikigr.retrieval.stage import Skip

if TYPE_CHECKING:
    from wikigr.pack.keyword import KeywordIndex
    from wikigr.pack.lexicon import Lexicon
    from wikigr.retrieval.page_index import PageIndex
    from wikigr.retrieval.stage import QueryState

NEAREST = 5  # the documents' words each word of the question may become
TEMPERATURE = 0.03  # of the softmax over their cosines
MIN_LETTERS = 3
_RUN = re.compile(r"[^\W\d_]+")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_.\-]*")  # names quoted as they are: "tar", "ssh-keygen"


def question_words(question: str, language: str, stopwords: Collection[str] = ()) -> list[str]:
    """The question's words to look up: those in its ``language``'s script (Cyrillic for a Russian
    question on English pages, Latin for an English one on Russian pages: the other script's words
    are names, kept as they are), none of ``stopwords`` or the language's own, ``MIN_LETTERS``
    letters at least, each once; then its pairs of neighbouring words."""
    stop = set(language_stopwords(language)) | set(stopwords)
    written = lang.language_script(language)
    runs = [w for w in _RUN.findall(question.casefold()) if lang.script(w) == written]
    words = [w for w in runs if len(w) >= MIN_LETTERS and w not in stop]
    pairs = [f"{a} {b}" for a, b in itertools.pairwise(runs) if a in words and b in words]
    return list(dict.fromkeys(words + pairs))


def translated_tokens(
    state: QueryState, index: KeywordIndex, lexicon: Lexicon, nearest: int = NEAREST
) -> tuple[dict[str, float], list[str]]:
    """The keyword tokens of the question read in the documents' words: ``(token -> weight, the
    words found, best first)``. Latin names in the question ("tar", "ssh-keygen") are kept as they
    are, at weight 1."""
    tokens: dict[str, float] = dict.fromkeys(index.tokens(" ".join(_LATIN.findall(state.question))), 1.0)
    words = question_words(state.question, state.language, index.analysis.stopwords)
    found: dict[str, float] = {}
    if words:
        vectors = embed_queries(state.ctx.embedder, words)
        for near in lexicon.nearest(vectors, nearest):
            cosines = np.array([cosine for _, cosine in near])
            weights = np.exp((cosines - cosines.max()) / TEMPERATURE)
            weights /= weights.sum()
            for (word, _), weight in zip(near, weights.tolist(), strict=True):
                found[word] = max(found.get(word, 0.0), weight)
                for token in index.tokens(word):
                    tokens[token] = max(tokens.get(token, 0.0), weight)
    return tokens, sorted(found, key=lambda w: -found[w])


def keyword_pages(state: QueryState, pages: PageIndex, pool: int = 200) -> tuple[list[int], list[str]] | None:
    """The pages (rows of ``pages``) that keyword search ranks for the question read in the
    documents' words, each by its best chunk, best first, and the words it was read as; None when
    the pack has no lexicon or no keyword index."""
    lexicon = state.ctx.lexicon()
    if lexicon is None:
        return None
    try:
        index = state.ctx.keyword_index()
    except Skip:
        return None
    tokens, words = translated_tokens(state, index, lexicon)
    rows = (pages.chunk_rows.get(chunk) for chunk, _ in index.search_tokens(tokens, pool))
    ranked = dict.fromkeys(int(pages.chunk_page[row]) for row in rows if row is not None)  # best first
    return list(ranked), words


def fuse(scores: dict[int, float], ranked: list[int], weight: float, k: int) -> dict[int, float]:
    """Reciprocal rank fusion of the pages as ``scores`` rank them (weight 1) and as ``ranked``
    does (``weight``): page -> fused score."""
    fused: dict[int, float] = {}
    for rank, page in enumerate(sorted(scores, key=lambda p: (-scores[p], p)), 1):
        fused[page] = 1.0 / (k + rank)
    for rank, page in enumerate(ranked, 1):
        fused[page] = fused.get(page, 0.0) + weight / (k + rank)
    return fused
