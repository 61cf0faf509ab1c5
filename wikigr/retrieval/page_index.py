"""The pages of a documentation pack, read once per agent for the ``page_score`` stage
(:mod:`wikigr.retrieval.stages.page_score`) and ``multidoc``: the pack's chunk vectors, each chunk's
page, the links between pages and their link texts, and the definitions a page's chunks show (a
line that shows an API's name, as Sphinx's ``str.join(iterable)``, and the sentence after it that
describes it). What is read of the store is kept in ``$WIKIGR_HOME/cache/pages/``
(:mod:`wikigr.retrieval.page_cache`): a fresh process reads it back instead of the store.
"""

from __future__ import annotations

import functools
import itertools
import math
import re
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from wikigr.errors import WikigrError
from wikigr.retrieval.api_names import api_names, ends_with, shown_name
from wikigr.retrieval.page_cache import PageTables, cached_page_tables, writable, write_page_tables
from wikigr.retrieval.stage import Context, Skip

if TYPE_CHECKING:
    from wikigr.pack.reader import ChunkHit, PackStore

_NAME_PART = re.compile(r"[a-z0-9]+")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*", re.ASCII)
MAX_NAMED = 2  # names of a question looked up
MAX_ANCHORS = 2_000_000  # link texts read from a pack
MAX_ANCHOR_CHARS = 300  # characters of one link text (fragment and text) looked at
MIN_PREFIX = 4  # shortest name or word matched by prefix


_FIRST_SENTENCE = re.compile(r"(?<=[.!?])\s+")  # where a description's summary sentence ends


def name_parts(text: str) -> set[str]:
    """The lower-case letter and digit runs of ``text``: the parts of a name or a query."""
    return set(_NAME_PART.findall(text.casefold()))


def page_tables(store: PackStore) -> PageTables:
    """What :class:`PageIndex` reads of ``store``: kept in ``$WIKIGR_HOME/cache/pages/`` under the
    store's digest (:mod:`wikigr.retrieval.page_cache`), so that a fresh process reads two files
    instead of scanning the store (every vector through Arrow, the links, every chunk's text).
    Where they cannot be kept, the definitions are not read ahead (a page's, when asked)."""
    path, cached = cached_page_tables(store)
    if cached is not None:
        return cached
    keep = path is not None and writable(path.parent)
    tables = store_page_tables(store, definitions=keep)
    if path is not None and keep:
        write_page_tables(path, tables)
    return tables


def store_page_tables(store: PackStore, definitions: bool = True) -> PageTables:
    """:class:`PageTables` read from ``store`` itself; ``definitions``: with those of every chunk
    (else none, and ``has_definitions`` False)."""
    ids, articles, matrix = store.chunk_matrix()
    pages = list(dict.fromkeys(articles))
    page_index = {p: i for i, p in enumerate(pages)}
    urls = store.article_urls()
    in_degrees = np.zeros(len(pages), dtype=np.int64)
    for article, degree in store.article_in_degrees().items():
        if article in page_index:
            in_degrees[page_index[article]] = degree

    # Link targets: (page, fragment) -> how many links, and the name parts of the fragment and of
    # the link texts; then name part -> targets.
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
    by_part: dict[str, list[int]] = defaultdict(list)
    for i, place in enumerate(targets):
        for part in names[place]:
            by_part[part].append(i)

    # The definitions each chunk shows: the name its line shows and the words that describe it.
    texts = store.chunk_texts(ids) if definitions else {}
    defining_rows: list[int] = []
    defining_indptr = [0]
    shown: list[str] = []
    described: list[str] = []
    for row, chunk_id in enumerate(ids):
        # Not through _definition_lines: every chunk once would only push out what it remembers.
        found = _descriptions(_find_definition_lines(texts.get(chunk_id, "")))
        if found:
            defining_rows.append(row)
            shown.extend(name for name, _ in found)
            described.extend(" ".join(sorted(words)) for _, words in found)
            defining_indptr.append(len(shown))

    def integers(values: list[int]) -> np.ndarray:
        return np.asarray(values, dtype=np.int64)

    return PageTables(
        chunk_ids=ids,
        pages=pages,
        urls=[urls.get(p, p) for p in pages],  # what a citation shows
        chunk_page=np.fromiter((page_index[a] for a in articles), dtype=np.int64, count=len(articles)),
        matrix=matrix,
        in_degrees=in_degrees,
        target_page=integers([page for page, _ in targets]),
        target_fragments=[fragment for _, fragment in targets],
        target_counts=integers([counts[t] for t in targets]),
        parts=list(by_part),
        part_indptr=integers([0, *itertools.accumulate(len(rows) for rows in by_part.values())]),
        part_rows=integers([i for rows in by_part.values() for i in rows]),
        defining_rows=integers(defining_rows),
        defining_indptr=integers(defining_indptr),
        shown=shown,
        described=described,
        has_definitions=definitions,
    )


def defines(text: str, fragment: str) -> bool:
    """Whether a line of ``text`` shows the definition of ``fragment``: the name alone, or with its
    signature or value, as the fragment or its end (``socket.settimeout(value)`` for
    ``socket.socket.settimeout``), after a decorator's @ or a keyword such as ``class``."""
    return _shown(text, fragment) > 0


def _find_definition_lines(text: str) -> tuple[tuple[str, str, str], ...]:
    """The lines of ``text`` that show a definition: (the line, the line after it, the name it
    shows), in order; code blocks are not looked at (``@lru_cache`` there decorates an example)."""
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


# Remembered for recent texts: a candidate's is read for its place in its page and its anchor.
_definition_lines = functools.lru_cache(maxsize=1024)(_find_definition_lines)


DEFINITION_WORDS = 40  # of "name: sentence" embedded for a definition (wikigr.pack.definitions)


def definition_texts(text: str) -> list[tuple[str, str]]:
    """Each definition ``text`` shows and describes, in order: the name its line shows, and what
    the pack's definitions embed of it (:mod:`wikigr.pack.definitions`): "name: the first sentence
    after its line", its first ``DEFINITION_WORDS`` words. A line with no sentence after it (the
    chunk's last: the next chunk, which begins before it, describes it) and a table's row ("From |
    To" in 2to3's fixers, where a row shows a name) describe nothing, and are left out."""
    found = []
    for line, after, shown in _find_definition_lines(text):
        sentence = _FIRST_SENTENCE.split(after, 1)[0]
        if sentence and "|" not in line + sentence:
            found.append((shown, " ".join(f"{shown}: {sentence}".split()[:DEFINITION_WORDS])))
    return found


def _descriptions(lines: tuple[tuple[str, str, str], ...]) -> list[tuple[str, frozenset[str]]]:
    """Each definition of ``lines`` (:func:`_find_definition_lines`): the name its line shows, and
    the words that describe it (the name parts of its line and of the first sentence after it)."""
    return [
        (shown, frozenset(name_parts(line) | name_parts(_FIRST_SENTENCE.split(after, 1)[0])))
        for line, after, shown in lines
    ]


def _held(words: set[str], line: str, description: str) -> int:
    """How many of the question's ``words`` a definition's line and its ``description`` hold."""
    return len(words & (name_parts(line) | name_parts(description)))


@functools.lru_cache(maxsize=1024)
def described_by(text: str) -> tuple[frozenset[str], ...]:
    """The words that describe each definition ``text`` shows: the name parts of its line and of
    the first sentence after it."""
    return tuple(words for _, words in _descriptions(_definition_lines(text)))


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

    def __init__(self, tables: PageTables, dimension: int) -> None:
        ids, matrix = tables.chunk_ids, tables.matrix
        if matrix.ndim != 2 or (len(ids) and matrix.shape[1] != dimension):
            raise Skip(
                f"the pack's chunk vectors have {matrix.shape[-1]} dimensions, the embedder {dimension}"
            )
        if not np.isfinite(matrix).all():
            raise Skip("the pack's chunk vectors are not all finite numbers")
        self.chunk_ids = ids
        self.pages = tables.pages
        self.urls = tables.urls  # what a citation shows
        self.page_index = {p: i for i, p in enumerate(self.pages)}
        self.chunk_page = tables.chunk_page
        self.matrix = np.ascontiguousarray(matrix, dtype=np.float32)
        self._norms: np.ndarray | None = None  # the rows' norms, when best_chunks first needs them
        self.chunks_per_page = len(ids) / max(1, len(self.pages))

        self.authority = np.zeros(len(self.pages))
        for page, degree in enumerate(tables.in_degrees.tolist()):
            if degree > 0:
                self.authority[page] = math.log1p(degree)
        top = float(self.authority.max()) if len(self.authority) else 0.0
        if top > 0:
            self.authority /= top
        self.has_links = top > 0

        # Link targets (a page and a fragment in it), and name part -> the targets it names.
        counts = tables.target_counts.tolist()
        self.fragments: dict[str, list[tuple[int, str]]] = defaultdict(list)  # last part -> targets
        for i in sorted(range(len(counts)), key=lambda i: -counts[i]):  # the most linked first
            page, fragment = int(tables.target_page[i]), tables.target_fragments[i]
            if _DOTTED.fullmatch(fragment):  # a name (it becomes a citation's anchor): nothing else
                self.fragments[fragment.rsplit(".", 1)[-1]].append((page, fragment))
        self.target_page = tables.target_page
        self.target_weight = np.asarray([1.0 + math.log1p(count) for count in counts])
        bounds = tables.part_indptr.tolist()
        self.by_part = {
            part: tables.part_rows[bounds[i] : bounds[i + 1]] for i, part in enumerate(tables.parts)
        }
        self.by_prefix: dict[str, list[str]] = defaultdict(list)
        for part in self.by_part:
            if len(part) >= MIN_PREFIX:
                self.by_prefix[part[:MIN_PREFIX]].append(part)

        # The definitions chunks show, read per page when asked.
        self._tables = tables
        self._defining = {row: i for i, row in enumerate(tables.defining_rows.tolist())}
        self._described: dict[int, list[tuple[int, list[tuple[str, frozenset[str]]]]]] = {}

    @functools.cached_property
    def chunk_rows(self) -> dict[str, int]:
        """Each chunk's row (of ``matrix`` and ``chunk_page``) by its id, made on first use."""
        return {chunk: row for row, chunk in enumerate(self.chunk_ids)}

    @functools.cached_property
    def page_means(self) -> np.ndarray:
        """Each page's mean chunk vector at unit length (a row per page): the page as a whole, which
        ``page_score``'s ``page_vector`` compares with the question. Made on first use."""
        order = np.argsort(self.chunk_page, kind="stable")
        pages = self.chunk_page[order]
        starts = np.flatnonzero(np.r_[True, pages[1:] != pages[:-1]]) if len(pages) else pages
        means = np.zeros((len(self.pages), self.matrix.shape[1]), np.float32)
        if len(pages):
            means[pages[starts]] = np.add.reduceat(self.matrix[order], starts, axis=0)
        norms = np.linalg.norm(means, axis=1, keepdims=True)
        out: np.ndarray = means / np.where(norms > 0, norms, 1.0)
        return out

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
        its name, as the fragment or its end, then the most similar to the question, when several
        do), or None."""
        shown = [
            (parts, float(similarity[r]), self.chunk_ids[r])
            for r, found in self._page_definitions(store, page)
            if (parts := max((n.count(".") + 1 for n, _ in found if ends_with(fragment, n)), default=0))
        ]
        parts, score, chunk_id = max(shown, default=(0, 0.0, ""))
        return store.chunk_details({chunk_id: score})[0] if parts else None

    def described_chunks(self, store: PackStore, page: int) -> list[tuple[int, tuple[frozenset[str], ...]]]:
        """Each chunk of ``page`` that shows definitions: (its row, the name parts of each
        definition's line and the first sentence after it)."""
        return [(r, tuple(words for _, words in found)) for r, found in self._page_definitions(store, page)]

    def _page_definitions(
        self, store: PackStore, page: int
    ) -> list[tuple[int, list[tuple[str, frozenset[str]]]]]:
        """Each chunk of ``page`` that shows definitions: (its row, each definition's shown name
        and the words that describe it), from the tables or, when they hold none, from the
        chunks' texts in ``store``. Kept per page."""
        kept = self._described.get(page)
        if kept is not None:
            return kept
        kept = []
        rows = np.flatnonzero(self.chunk_page == page).tolist()
        t = self._tables
        if t.has_definitions:
            for r in rows:
                if (i := self._defining.get(r)) is not None:
                    shows = range(int(t.defining_indptr[i]), int(t.defining_indptr[i + 1]))
                    kept.append((r, [(t.shown[d], frozenset(t.described[d].split())) for d in shows]))
        else:
            texts = store.chunk_texts([self.chunk_ids[r] for r in rows])
            for r in rows:
                if found := _descriptions(_definition_lines(texts.get(self.chunk_ids[r], ""))):
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
                cached = cls(page_tables(ctx.store), ctx.embedder.dimension)
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
        if not found:
            return None
        hit = np.zeros(len(self.target_page), dtype=bool)  # not np.unique: it imports numpy.ma (20 ms)
        for rows in found:
            hit[rows] = True
        return np.flatnonzero(hit)

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
