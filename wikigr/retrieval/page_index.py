"""The pages of a documentation pack, read once per agent for the ``page_score`` stage
(:mod:`wikigr.retrieval.stages.page_score`) and ``multidoc``: the pack's chunk vectors (kept in
``$WIKIGR_HOME/cache/vectors/``), each chunk's page, the links between pages and their link texts,
and the definitions a page's chunks show (a line that shows an API's name, as Sphinx's
``str.join(iterable)``, and the sentence after it that describes it).
"""

from __future__ import annotations

import functools
import io
import math
import re
import zipfile
import zlib
from collections import defaultdict
from contextlib import suppress
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wikigr.errors import WikigrError
from wikigr.home import prune, store_cache_file, write_atomic
from wikigr.retrieval.api_names import api_names, ends_with, shown_name
from wikigr.retrieval.stage import Context, Skip

if TYPE_CHECKING:
    from wikigr.pack.reader import ChunkHit, PackStore

_NAME_PART = re.compile(r"[a-z0-9]+")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
MAX_NAMED = 2  # names of a question looked up
MAX_ANCHORS = 2_000_000  # link texts read from a pack
MAX_ANCHOR_CHARS = 300  # characters of one link text (fragment and text) looked at
MIN_PREFIX = 4  # shortest name or word matched by prefix
VECTOR_CACHE_FORMAT = 1
VECTOR_CACHE_KEEP = 16  # packs whose chunk vectors are kept
MAX_VECTOR_CACHE_BYTES = 2 * 1024 * 1024 * 1024
_SEPARATOR = "\x00"  # between ids (no chunk or article id holds it)


_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+")  # where a description's summary sentence ends


def name_parts(text: str) -> set[str]:
    """The lower-case letter and digit runs of ``text``: the parts of a name or a query."""
    return set(_NAME_PART.findall(text.casefold()))


def chunk_vectors(store: PackStore) -> tuple[list[str], list[str], np.ndarray]:
    """:meth:`Store.chunk_matrix`, kept in ``$WIKIGR_HOME/cache/vectors/`` under the store's digest:
    a fresh process reads the (n, dim) matrix back in milliseconds instead of a full scan of the
    store through Arrow (about 70 ms for 2,000 chunks). The file is checked like any other input:
    dtypes, shapes, counts and finite values; anything else and the store is read again."""
    path = store_cache_file(store, "vectors", f"wikigr chunk vectors {VECTOR_CACHE_FORMAT}")
    if path is not None:
        cached = _read_vectors(path)
        if cached is not None:
            return cached
    ids, articles, matrix = store.chunk_matrix()
    if path is not None:
        _write_vectors(path, ids, articles, matrix)
    return ids, articles, matrix


def _write_vectors(path: Path, ids: list[str], articles: list[str], matrix: np.ndarray) -> None:
    """Save the chunk vectors at ``path`` (``.npz``, no pickles), whole or not at all."""
    if any(_SEPARATOR in value for value in (*ids, *articles)):
        return
    buffer = io.BytesIO()
    np.savez(
        buffer,
        allow_pickle=False,
        matrix=np.ascontiguousarray(matrix, dtype=np.float32),
        ids=np.frombuffer(_SEPARATOR.join(ids).encode("utf-8"), dtype=np.uint8),
        articles=np.frombuffer(_SEPARATOR.join(articles).encode("utf-8"), dtype=np.uint8),
    )
    with suppress(OSError):  # a cache that cannot be written only costs time
        write_atomic(path, buffer.getvalue())
        prune(path.parent, VECTOR_CACHE_KEEP)


def _read_vectors(path: Path) -> tuple[list[str], list[str], np.ndarray] | None:
    try:
        if path.stat().st_size > MAX_VECTOR_CACHE_BYTES:
            return None
        with path.open("rb") as f, np.load(f, allow_pickle=False) as npz:
            if set(npz.files) != {"matrix", "ids", "articles"}:
                return None
            matrix, ids_blob, articles_blob = npz["matrix"], npz["ids"], npz["articles"]
        if matrix.dtype != np.float32 or matrix.ndim != 2:
            return None
        if ids_blob.dtype != np.uint8 or articles_blob.dtype != np.uint8:
            return None
        ids = ids_blob.tobytes().decode("utf-8").split(_SEPARATOR) if ids_blob.size else []
        articles = articles_blob.tobytes().decode("utf-8").split(_SEPARATOR) if articles_blob.size else []
    except (OSError, ValueError, EOFError, KeyError, TypeError, UnicodeDecodeError, zipfile.BadZipFile):
        return None
    except zlib.error:
        return None
    if len(ids) != matrix.shape[0] or len(articles) != len(ids) or not bool(np.isfinite(matrix).all()):
        return None
    return ids, articles, matrix


def defines(text: str, fragment: str) -> bool:
    """Whether a line of ``text`` shows the definition of ``fragment``: the name alone, or with its
    signature or value, as the fragment or its end (``socket.settimeout(value)`` for
    ``socket.socket.settimeout``), after a decorator's @ or a keyword such as ``class``."""
    return _shown(text, fragment) > 0


@functools.lru_cache(maxsize=1024)
def _definition_lines(text: str) -> tuple[tuple[str, str, str], ...]:
    """The lines of ``text`` that show a definition: (the line, the line after it, the name it
    shows), in order; code blocks are not looked at (``@lru_cache`` there decorates an example).
    Remembered for recent texts: a candidate's is read for its place in its page and its anchor."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = []
    code = False
    for n, line in enumerate(lines):
        if line.startswith(("```", "~~~")):
            code = not code
            continue
        shown = "" if code else shown_name(line)
        if shown:
            found.append((line, lines[n + 1] if n + 1 < len(lines) else "", shown))
    return tuple(found)


def _held(words: set[str], line: str, description: str) -> int:
    """How many of the question's ``words`` a definition's line and its ``description`` hold."""
    return len(words & (name_parts(line) | name_parts(description)))


@functools.lru_cache(maxsize=1024)
def described_by(text: str) -> tuple[frozenset[str], ...]:
    """The words that describe each definition ``text`` shows: the name parts of its line and of
    the first sentence after it."""
    return tuple(
        frozenset(name_parts(line) | name_parts(_FIRST_SENTENCE.split(after, 1)[0]))
        for line, after, _ in _definition_lines(text)
    )


def _shown(text: str, fragment: str) -> int:
    """How much of ``fragment`` a definition line of ``text`` shows, in dotted parts (0: none):
    the fragment or its end."""
    return max(
        (shown.count(".") + 1 for _, _, shown in _definition_lines(text) if ends_with(fragment, shown)),
        default=0,
    )


class PageIndex:
    """What the stage needs of a pack, loaded once per agent (``ctx.cache``) and checked: the
    chunk vectors and their pages, each page's in-degree, and the link-target names."""

    def __init__(self, ctx: Context) -> None:
        store = ctx.store
        ids, articles, matrix = chunk_vectors(store)
        dim = ctx.embedder.dimension
        if matrix.ndim != 2 or (len(ids) and matrix.shape[1] != dim):
            raise Skip(f"the pack's chunk vectors have {matrix.shape[-1]} dimensions, the embedder {dim}")
        if not np.isfinite(matrix).all():
            raise Skip("the pack's chunk vectors are not all finite numbers")
        self.chunk_ids = ids
        self.pages = list(dict.fromkeys(articles))
        urls = store.article_urls()
        self.urls = [urls.get(p, p) for p in self.pages]  # what a citation shows
        page_index = {p: i for i, p in enumerate(self.pages)}
        self.page_index = page_index
        self.chunk_page = np.fromiter((page_index[a] for a in articles), dtype=np.int64, count=len(articles))
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._norms: np.ndarray | None = None  # the rows' norms, when best_chunks first needs them
        self._described: dict[int, list[tuple[int, tuple[frozenset[str], ...]]]] = {}
        self.chunks_per_page = len(ids) / max(1, len(self.pages))

        degrees = store.article_in_degrees()
        self.authority = np.zeros(len(self.pages))
        for article, degree in degrees.items():
            if article in page_index and degree > 0:
                self.authority[page_index[article]] = math.log1p(degree)
        top = float(self.authority.max()) if len(self.authority) else 0.0
        if top > 0:
            self.authority /= top
        self.has_links = top > 0

        # Link targets: (page, fragment) -> how many links, and the name parts of the fragment and
        # of the link texts; then name part -> targets.
        counts: dict[tuple[int, str], int] = defaultdict(int)
        names: dict[tuple[int, str], set[str]] = defaultdict(set)
        for n, (_source, target, anchor) in enumerate(store.link_anchors()):
            if n >= MAX_ANCHORS:
                break
            if not isinstance(anchor, str) or target not in page_index:
                continue
            fragment, _, text = anchor[:MAX_ANCHOR_CHARS].partition("\t")
            if not fragment:
                continue  # a link to a page, not to a definition in it
            place = (page_index[target], fragment)
            counts[place] += 1
            names[place] |= name_parts(fragment) | name_parts(text)
        targets = list(counts)
        self.fragments: dict[str, list[tuple[int, str]]] = defaultdict(list)  # last part -> targets
        for page, fragment in sorted(targets, key=lambda t: -counts[t]):
            if _DOTTED.fullmatch(fragment):  # a name (it becomes a citation's anchor): nothing else
                self.fragments[fragment.rsplit(".", 1)[-1]].append((page, fragment))
        self.target_page = np.asarray([t[0] for t in targets], dtype=np.int64)
        self.target_weight = np.asarray([1.0 + math.log1p(counts[t]) for t in targets])
        by_part: dict[str, list[int]] = defaultdict(list)
        for i, place in enumerate(targets):
            for part in names[place]:
                by_part[part].append(i)
        self.by_part = {part: np.asarray(rows, dtype=np.int64) for part, rows in by_part.items()}
        self.by_prefix: dict[str, list[str]] = defaultdict(list)
        for part in self.by_part:
            if len(part) >= MIN_PREFIX:
                self.by_prefix[part[:MIN_PREFIX]].append(part)

    def best_chunks(self, articles: list[str], vector: np.ndarray) -> dict[str, float]:
        """For each of ``articles``, its chunk most similar (cosine) to ``vector``: chunk id ->
        similarity (what :meth:`Store.best_chunk_per_article` finds, from the vectors in memory)."""
        pages = [self.page_index[a] for a in articles if a in self.page_index]
        rows = np.flatnonzero(np.isin(self.chunk_page, pages))
        if not len(rows):
            return {}
        if self._norms is None:
            self._norms = np.linalg.norm(self.matrix, axis=1)
        query = np.asarray(vector, dtype=np.float32)
        norms = self._norms[rows] * (float(np.linalg.norm(query)) or 1.0)
        scores = (self.matrix[rows] @ query) / np.where(norms > 0, norms, 1.0)
        best: dict[int, int] = {}  # page -> the row of its best chunk
        for i in np.argsort(-scores, kind="stable").tolist():
            best.setdefault(int(self.chunk_page[rows[i]]), i)
        return {self.chunk_ids[rows[i]]: float(scores[i]) for i in best.values()}

    def named(self, query: str) -> list[tuple[int, str]]:
        """The link targets (page, fragment) that ``query`` names: a dotted name or a call
        (``str.join``, ``sorted()``) that is a target's fragment or the end of one
        (``socket.settimeout``: ``socket.socket.settimeout``; a call's name only when one target
        ends so: ``lru_cache()`` but not ``join()``); the most linked first, at most ``MAX_NAMED``
        names."""
        found: list[tuple[int, str]] = []
        for name in api_names(query):
            targets = self.fragments.get(name.rsplit(".", 1)[-1], [])
            exact = [t for t in targets if t[1] == name]
            ends = [t for t in targets if ends_with(t[1], name)]
            chosen = exact or (ends if "." in name or len(ends) == 1 else [])
            if chosen and chosen[0] not in found:
                found.append(chosen[0])
            if len(found) >= MAX_NAMED:
                break
        return found

    def defining_chunk(
        self, store: PackStore, page: int, fragment: str, similarity: np.ndarray
    ) -> ChunkHit | None:
        """The chunk of ``page`` that shows the definition of ``fragment`` (the one showing most of
        its name, then the most similar to the question, when several do), or None."""
        rows = np.flatnonzero(self.chunk_page == page).tolist()
        texts = store.chunk_texts([self.chunk_ids[r] for r in rows])
        last = fragment.rsplit(".", 1)[-1]
        shown = [
            (_shown(text, fragment), float(similarity[r]), self.chunk_ids[r])
            for r in rows
            if last in (text := texts.get(self.chunk_ids[r], ""))
        ]
        parts, score, chunk_id = max(shown, default=(0, 0.0, ""))
        return store.chunk_details({chunk_id: score})[0] if parts else None

    def described_chunks(self, store: PackStore, page: int) -> list[tuple[int, tuple[frozenset[str], ...]]]:
        """Each chunk of ``page`` that shows definitions: (its row, the name parts of each
        definition's line and the first sentence after it). Read once per page and kept."""
        kept = self._described.get(page)
        if kept is None:
            rows = np.flatnonzero(self.chunk_page == page).tolist()
            texts = store.chunk_texts([self.chunk_ids[r] for r in rows])
            kept = []
            for r in rows:
                found = described_by(texts.get(self.chunk_ids[r], ""))
                if found:
                    kept.append((r, found))
            self._described[page] = kept
        return kept

    def definitions_in(self, text: str, page: int) -> list[tuple[str, str, str, bool]]:
        """The definitions ``text`` shows, in order: (their line, the line after it, their anchor
        in ``page``, whether that anchor is a link target). The anchor of a dotted name no page
        links to, shown with its signature, is the one its siblings give: Sphinx shows
        ``socket.settimeout`` for the target ``socket.socket.settimeout``, so when
        ``socket.setblocking`` is shown for ``socket.socket.setblocking``, ``socket.settimeout``
        is at ``socket.socket.settimeout`` (siblings that disagree give none); "" when none does.
        Code blocks are not looked at."""
        found: list[tuple[str, str, str, str]] = []  # line, next line, shown name, known target
        prefixes: dict[str, set[str]] = defaultdict(set)  # what a shown qualifier stands for in anchors
        for line, following, shown in _definition_lines(text):
            known = next(
                (
                    f
                    for p, f in self.fragments.get(shown.rsplit(".", 1)[-1], ())
                    if p == page and ends_with(f, shown)
                ),
                "",
            )
            if known and "." in shown:  # what its qualifier stands for: "socket." for "socket.socket.
                prefixes[shown.rsplit(".", 1)[0]].add(known[: len(known) - len(shown)])
            found.append((line, following, shown, known))
        out = []
        for line, following, shown, known in found:
            anchor = known
            given = prefixes.get(shown.rsplit(".", 1)[0], set()) if "." in shown else set()
            if not anchor and "(" in line and len(given) == 1:  # siblings that disagree say nothing
                anchor = next(iter(given)) + shown
            out.append((line, following, anchor, bool(known)))
        return out

    def entry(self, text: str, page: int, words: set[str]) -> str:
        """The anchor in ``page`` of the definition that ``text`` shows where the question's
        ``words`` are: of its definitions (:meth:`definitions_in`), the one whose line and the
        line after it hold most of them (two at least, the first of equals); "" when it has no
        anchor (the next best is not what was asked)."""
        best, most = "", 1
        for line, following, anchor, _known in self.definitions_in(text, page):
            held = _held(words, line, following)
            if held > most:
                best, most = anchor, held
        return best

    @classmethod
    def of(cls, ctx: Context) -> PageIndex:
        cached = ctx.cache.get("page_index")
        if isinstance(cached, Skip):
            raise cached
        if cached is None:
            try:
                cached = cls(ctx)
            except Skip as skip:
                ctx.cache["page_index"] = skip
                raise
            except WikigrError as exc:
                failed = Skip(f"cannot load the page index: {exc}")
                ctx.cache["page_index"] = failed
                raise failed from exc
            ctx.cache["page_index"] = cached
        assert isinstance(cached, PageIndex)
        return cached

    def _targets(self, word: str) -> np.ndarray | None:
        """The link targets whose names match ``word``: exactly, or one a prefix of the other."""
        found = [self.by_part[word]] if word in self.by_part else []
        if len(word) >= MIN_PREFIX:
            for part in self.by_prefix.get(word[:MIN_PREFIX], ()):
                if part != word and (
                    word.startswith(part) or (part.startswith(word) and len(part) - len(word) <= 3)
                ):
                    found.append(self.by_part[part])
        return np.unique(np.concatenate(found)) if found else None

    def link_scores(self, query: str) -> np.ndarray:
        """Per page: how well the query's words name its link targets (the best page has 1)."""
        scores = np.zeros(len(self.target_page))
        n_targets = len(self.target_page)
        for word in name_parts(query):
            if len(word) < 2:
                continue
            rows = self._targets(word)
            if rows is not None:
                scores[rows] += math.log(1 + n_targets / len(rows))
        pages = np.zeros(len(self.pages))
        hit = scores > 0
        if hit.any():
            np.maximum.at(pages, self.target_page[hit], scores[hit] * self.target_weight[hit])
            pages /= pages.max()
        return pages
