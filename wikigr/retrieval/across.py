"""Keyword search for a question asked in another language than the pack's documents.

Such a question shares no words with the passages, so keyword search finds nothing and the vectors
alone rank the pages. With the pack's lexicon (:mod:`wikigr.pack.lexicon`: its words embedded by a
multilingual embedder) each word of the question — and each pair of neighbouring words, which often
say one thing ("имя хоста": *hostname*) — is looked up among the documents' words by meaning; its
``nearest`` words become keyword tokens, weighted by a softmax of their cosines (``temperature``:
the nearest word takes most of the weight unless others are as near). "Получить имя хоста
компьютера" is searched as *computers*, *name*, *host*, *hostname*... over the English man pages.
``page_score`` then fuses the pages this search ranks with its own ranking (``keyword_across``).
A word the glossary between the two languages holds (:mod:`wikigr.models.glossary`: the words of
computing documentation, Russian and English) is read as the glossary says instead ("ветку":
*branch*, where the model alone finds *gate*), at full weight.

The same words also make a vector: the sum of their vectors (the lexicon's; a glossary's word's
embedded with the question's words), each by its weight — the question as the documents' words
say it. ``page_score`` adds it to the question's vector (``reading_across``): the single words
pull the question toward the English passages that use them. Chosen on the dev half of
bench/multilingual.py (Russian questions on English man pages).
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from wikigr import lang
from wikigr.embed import embed_queries
from wikigr.models.glossary import entries
from wikigr.pack.analyze import language_stopwords, stem
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


@dataclass(frozen=True)
class Reading:
    """A question asked in another language read in the documents' words (:func:`read`)."""

    tokens: dict[str, float]  # keyword token -> weight
    words: list[str]  # the documents' words found, best first
    vector: np.ndarray | None  # the unit sum of their vectors by weight (None: no word looked up)
    # the tokens of each word of the question (or pair, or Latin name) by weight: its alternatives
    groups: list[dict[str, float]] = field(default_factory=list)


def _fold(word: str) -> str:
    return word.casefold().replace("ё", "е")


def _stem(word: str, language: str) -> str:
    name = lang.stemmer_name(language) or ("english" if language == "en" else None)
    return stem(name, _fold(word)) if name else _fold(word)


@functools.cache
def _glossary(source: str, target: str) -> tuple[dict[str, tuple[str, ...]], dict[str, tuple[str, ...]]]:
    """The glossary from ``source`` to ``target``: by each word as written (folded), and by stem."""
    written: dict[str, dict[str, None]] = {}
    stems: dict[str, dict[str, None]] = {}
    for words, said in entries(source, target):
        for word in words:
            written.setdefault(_fold(word), {}).update(dict.fromkeys(said))
            stems.setdefault(_stem(word, source), {}).update(dict.fromkeys(said))
    return {k: tuple(v) for k, v in written.items()}, {k: tuple(v) for k, v in stems.items()}


def said_as(word: str, source: str, target: str) -> tuple[str, ...]:
    """The words in ``target`` that the glossary between the two languages (:mod:`wikigr.models.
    glossary`) says ``word`` of ``source`` as: by the word as written (with ё read as е), else by
    its stem (Snowball's; English's for English), as a form the glossary does not list is found;
    none when it does not hold the word. The form first: "удалённую" is *remote*, though it shares
    its stem with "удаление" (*delete*)."""
    written, stems = _glossary(source, target)
    return written.get(_fold(word)) or stems.get(_stem(word, source), ())


def read(state: QueryState, index: KeywordIndex, lexicon: Lexicon, nearest: int = NEAREST) -> Reading:
    """The question read in the documents' words: each word the glossary between the two
    languages holds as the words it says (weight 1), each other word (and pair of words) as its
    ``nearest`` lexicon words, weighted by a softmax of their cosines. Latin names in the question
    ("tar", "ssh-keygen") are kept as they are, as tokens at weight 1. The reading's vector sums
    the lexicon's vectors of the words found by their weights (a glossary line's words share its
    weight; a word the documents hardly use, not in the lexicon, adds its keyword token alone): no
    English word is embedded, so a Russian question never loads the ``multilingual`` embedder's
    English half."""
    target = state.pack_languages[0]
    names = [dict.fromkeys(index.tokens(name), 1.0) for name in _LATIN.findall(state.question)]
    groups = [group for group in names if group]
    words = question_words(state.question, state.language, index.analysis.stopwords)
    said = {w: said_as(w, state.language, target) for w in words if " " not in w}
    lines = [line for line in said.values() if line]
    looked_up = [w for w in words if not said.get(w)]
    found: dict[str, float] = {}
    total = np.zeros(lexicon.vectors.shape[1], np.float32)
    if looked_up or lines:
        vectors = embed_queries(state.ctx.embedder, looked_up) if looked_up else lexicon.vectors[:0]
        for line in lines:
            group: dict[str, float] = {}
            for word in line:
                row = lexicon.row(word.casefold())
                if row is not None:  # the documents' word: its vector is the lexicon's
                    total += lexicon.vectors[row] / len(line)
                found[word] = 1.0
                group.update(dict.fromkeys(index.tokens(word, target), 1.0))
            groups.append(group)
        for near in lexicon.nearest_rows(vectors, nearest):
            if not near:  # a lexicon of no words
                continue
            cosines = np.array([cosine for _, cosine in near])
            weights = np.exp((cosines - cosines.max()) / TEMPERATURE)
            weights /= weights.sum()
            group = {}
            for (row, _), weight in zip(near, weights.tolist(), strict=True):
                total += weight * lexicon.vectors[row]
                word = lexicon.words[row]
                found[word] = max(found.get(word, 0.0), weight)
                for token in index.tokens(word, target):
                    group[token] = max(group.get(token, 0.0), weight)
            groups.append(group)
    tokens: dict[str, float] = {}
    for group in groups:
        for token, weight in group.items():
            tokens[token] = max(tokens.get(token, 0.0), weight)
    norm = float(np.linalg.norm(total))
    vector = total / norm if norm > 0 else None
    return Reading(tokens, sorted(found, key=lambda w: -found[w]), vector, groups)


def reading(state: QueryState) -> Reading | None:
    """The question read in the documents' words (:func:`read`), once per query (page_score ranks
    the pages by it, the offline answer weighs the sentences by it); None when the pack has no
    lexicon or no keyword index."""
    if not state.readings:
        state.readings.append(_reading(state))
    return state.readings[0]


def _reading(state: QueryState) -> Reading | None:
    lexicon = state.ctx.lexicon()
    if lexicon is None:
        return None
    try:
        index = state.ctx.keyword_index()
    except Skip:
        return None
    return read(state, index, lexicon)


def keyword_pages(state: QueryState, pages: PageIndex, found: Reading, pool: int = 200) -> list[int]:
    """The pages (rows of ``pages``) that keyword search ranks for the question ``found`` in the
    documents' words, each by its best chunk, best first."""
    index = state.ctx.keyword_index()
    rows = (pages.chunk_rows.get(chunk) for chunk, _ in index.search_tokens(found.tokens, pool))
    return list(dict.fromkeys(int(pages.chunk_page[row]) for row in rows if row is not None))  # best first


def with_reading(vector: np.ndarray, found: Reading | None, weight: float) -> np.ndarray:
    """The question's unit ``vector`` plus ``weight`` × its reading's, at unit length (``vector``
    itself without a reading, or when the reading has no vector)."""
    if found is None or found.vector is None or not weight:
        return vector
    vector = np.asarray(vector, np.float32)
    total = vector / (float(np.linalg.norm(vector)) or 1.0) + weight * found.vector
    out: np.ndarray = total / (float(np.linalg.norm(total)) or 1.0)
    return out


def fuse(scores: dict[int, float], ranked: list[int], weight: float, k: int) -> dict[int, float]:
    """Reciprocal rank fusion of the pages as ``scores`` rank them (weight 1) and as ``ranked``
    does (``weight``): page -> fused score."""
    fused: dict[int, float] = {}
    for rank, page in enumerate(sorted(scores, key=lambda p: (-scores[p], p)), 1):
        fused[page] = 1.0 / (k + rank)
    for rank, page in enumerate(ranked, 1):
        fused[page] = fused.get(page, 0.0) + weight / (k + rank)
    return fused
