"""A pack's lexicon: the words of its documents and their vectors, for questions in other languages.

A pack built with an embedder that reads many languages (``multilingual``: e5 places "файл" near
"file") keeps, beside its keyword index, the words its passages use most — each keyword token once,
as its most frequent spelling, in at least :data:`MIN_CHUNKS` (3) chunks, at most :data:`MAX_WORDS` —
each embedded once as a query (``lexicon/words.json``, ``lexicon/vectors.npy``). A question asked in
another language than the pack's documents shares no words with them; its words are looked up here
(:meth:`Lexicon.nearest`): "Получить имя хоста компьютера" finds *computers*, *host*, *hostname*,
and keyword search then runs on those (``page_score``'s ``keyword_across``, wikigr/retrieval/
across.py). The lexicon is data like the rest of the pack: read with ``allow_pickle=False``, its
size capped, its shape and values checked (:meth:`Lexicon.load`, which ``pack validate`` runs).
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from wikigr.embed import Embedder, embed_queries
from wikigr.pack.keyword import KeywordIndex
from wikigr.pack.vectors import Items, read_vectors_folder, write_vectors_folder

LEXICON_DIR = "lexicon"
WORDS_FILE = "words.json"
MAX_WORDS = 20_000  # 30 MB of 384-d vectors
MIN_CHUNKS = 3  # a rarer word seldom names what a question asks for (3 chose best on the dev half)
MAX_WORD_LENGTH = 40
MAX_WORDS_BYTES = 4 * 1024 * 1024
WORD = re.compile(r"[^\W\d_]{3,40}")  # letters only: no numbers, no identifiers with underscores
ITEMS = Items(
    "lexicon",
    WORDS_FILE,
    "words",
    MAX_WORDS,
    MAX_WORDS_BYTES,
    lambda word: isinstance(word, str) and 0 < len(word) <= MAX_WORD_LENGTH,
)


def across_languages(embedder: Embedder) -> bool:
    """Whether ``embedder`` places the same meaning in different languages near each other (it says
    so: ``across_languages``; ``multilingual`` and e5)."""
    return bool(getattr(embedder, "across_languages", False))


def lexicon_words(texts: Sequence[str], index: KeywordIndex, max_words: int = MAX_WORDS) -> list[str]:
    """The words of ``texts`` worth a vector: one per keyword token of ``index`` (its most frequent
    spelling, lower-cased), tokens in at least :data:`MIN_CHUNKS` (3) chunks, the most frequent tokens
    first up to ``max_words``; sorted."""
    spellings: Counter[str] = Counter()
    for text in texts:
        spellings.update(WORD.findall(text.casefold()))
    by_token: dict[str, str] = {}
    for word, _ in spellings.most_common():
        tokens = index.tokens(word)
        if len(tokens) == 1 and tokens[0] not in by_token:
            by_token[tokens[0]] = word
    kept = [(index.document_frequency(token), word) for token, word in by_token.items()]
    kept = [(df, word) for df, word in kept if df >= MIN_CHUNKS]
    kept.sort(key=lambda pair: (-pair[0], pair[1]))
    return sorted(word for _, word in kept[:max_words])


def write_lexicon(folder: Path, words: list[str], vectors: np.ndarray) -> None:
    """Save ``words`` and their unit ``vectors`` as ``folder``, as a whole."""
    write_vectors_folder(folder, WORDS_FILE, words, vectors)


def build_lexicon(pack: Path, texts: Sequence[str], index: KeywordIndex, embedder: Embedder) -> int:
    """Write ``pack``'s lexicon from its passages' ``texts`` (their keyword ``index``), each word
    embedded as a query by ``embedder``; the number of words."""
    words = lexicon_words(texts, index)
    embed = getattr(embedder, "embed_words", None)  # e5: many short texts at once
    if not words:
        vectors = np.zeros((0, embedder.dimension), np.float32)
    else:
        vectors = embed(words) if callable(embed) else embed_queries(embedder, words)
    write_lexicon(pack / LEXICON_DIR, words, vectors)
    return len(words)


@dataclass(frozen=True)
class Lexicon:
    """A loaded lexicon: ``words[i]`` has the unit vector ``vectors[i]``."""

    words: list[str]
    vectors: np.ndarray

    @classmethod
    def load(cls, pack: Path, dimension: int) -> Lexicon | None:
        """``pack``'s lexicon (None if it has none), checked: an :class:`InvalidPackError` names what
        is wrong with one that is damaged, too large, or not of the pack's embedder's ``dimension``."""
        found = read_vectors_folder(pack / LEXICON_DIR, ITEMS, dimension)
        return None if found is None else cls(*found)

    @functools.cached_property
    def _rows(self) -> dict[str, int]:
        return {word: i for i, word in enumerate(self.words)}

    def row(self, word: str) -> int | None:
        """The row of ``word``, or None when the lexicon does not hold it (whatever the words'
        order in a pack made elsewhere)."""
        return self._rows.get(word)

    def nearest(self, vectors: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """For each of ``vectors`` (unit rows), its ``k`` nearest words and their cosines, best first."""
        return [[(self.words[i], cosine) for i, cosine in near] for near in self.nearest_rows(vectors, k)]

    def nearest_rows(self, vectors: np.ndarray, k: int) -> list[list[tuple[int, float]]]:
        """:meth:`nearest` by the words' rows (of ``words`` and ``vectors``)."""
        if not self.words or not len(vectors):
            return [[] for _ in range(len(vectors))]
        k = min(k, len(self.words))
        similarity = np.asarray(vectors, np.float32) @ self.vectors.T
        found = []
        for row in similarity:
            top = np.argpartition(-row, k - 1)[:k]
            top = top[np.argsort(-row[top], kind="stable")]
            found.append([(i, float(row[i])) for i in top.tolist()])
        return found
