"""page_score: rank pages, not passages, then give each top page its best passages first.

On documentation a question is answered by a page (the reference of ``str.lower``, of
``os.listdir``), and a page is many chunks. The stage scores every page from three signals:

- **its chunks**: the cosine similarity of its best chunk to the (first) query, plus ``share`` × the
  similarities of its next ``top_chunks - 1`` best chunks — a page that answers the question in
  several places beats one lucky chunk. Similarities come from the pack's chunk vectors, held in
  memory (loaded once per agent) and scored with one matrix product: all chunks, not only the
  candidates so far.
- **its authority**: log(1 + the number of other pages linking to it) / the largest such value
  over the pack, times ``authority``. The pages everything else refers to (built-in functions and
  types) answer more questions.
- **the link texts pointing at it**: the words of the query matched against the names of the
  link targets (``dict.keys`` in ``stdtypes.html#dict.keys``, its link texts ``dict.keys()``...):
  exactly, or one a prefix of the other (4 letters at least: "dictionary" names ``dict``,
  "sort" names ``sorted``); each query word counts its idf over the targets, a target's sum is
  multiplied by 1 + log(1 + its number of links), a page takes its best target, and the
  result, scaled so that the best page has 1, weighs ``link_text``.

A question that names an API the pack defines — a dotted name or a call, ``str.join``,
``socket.settimeout``, ``sorted()``, matched to a link target: the same name, or one it ends
(``socket.socket.settimeout``) — puts the page of that target first and, first among its passages,
the chunk holding its definition (a line that shows the name, as Sphinx's ``str.join(iterable)``),
cited at the target's anchor (``stdtypes.html#str.join``): that chunk is often about something
else before it, which vector search ranks low. Any other passage that shows definitions is cited
at the one whose definition line and the line after it hold most of the question's words (two at
least): "How do I set a socket timeout?" cites ``socket.html#socket.socket.settimeout``, not the
section "Socket Objects" (``defined_names``, both).

Candidates are then ordered page by page: the best ``first_page_passages`` (2) passages of the
best page, the best ``passages_per_page`` (1) of each next page in page order, then the next ones,
and so on; each of the top ``pages`` pages gets its best chunk as a candidate when it had none. The
best page's second passage is often the definition the first one lacks: a reference page's one
section ("Module Contents") holds ``csv.reader`` and ``csv.Sniffer`` in different chunks, and
``dedup`` keeps the passages placed here though they share a section. One passage of each other
page keeps the top five broad: a question asking for a function by what it does ("Which function
returns ...?") needs its page among them. Within a page, a chunk that shows a definition
described in the question's words comes first — its definition line and the first sentence after
it hold at least ``definition_words`` (2) of them, most first: "Which function returns True if
path is an absolute pathname?" puts the chunk of ``os.path.isabs(path)`` / "Return True if path
is an absolute pathname." before the page's other chunks, which hold other definitions and, to
vector search, read much the same; then the ranking so far decides. Every chunk of the top
``described_pages`` (3) pages is looked at for such a definition, not only the candidates so far:
the page's best-described chunk joins them (read once per page and kept). "Which function returns
the absolute value of a number?" finds ``abs(x)`` / "Return the absolute value of a number." in
the chunk that opens Built-in Functions with its index of names, which vector search ranks low.

Passage packs (an article is one or two chunks: nothing to roll up) are skipped, as are packs
without chunk vectors; a pack without links (or a store written before link texts were kept)
runs without authority or link texts, and the trace says so.
"""

from __future__ import annotations

import functools
import math
import re
import time
import zipfile
import zlib
from collections import defaultdict
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from wikigr.errors import WikigrError
from wikigr.graph.extract import STOP_NAMES
from wikigr.retrieval.api_names import api_names, ends_with, shown_name
from wikigr.retrieval.stage import Candidate, Context, QueryState, Skip, Stage, register

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


def _parts(text: str) -> set[str]:
    return set(_NAME_PART.findall(text.casefold()))


def chunk_vectors(store: PackStore) -> tuple[list[str], list[str], np.ndarray]:
    """:meth:`Store.chunk_matrix`, kept in ``$WIKIGR_HOME/cache/vectors/`` under the store's digest:
    a fresh process reads the (n, dim) matrix back in milliseconds instead of a full scan of the
    store through Arrow (about 70 ms for 2,000 chunks). The file is checked like any other input:
    dtypes, shapes, counts and finite values; anything else and the store is read again."""
    from wikigr.home import store_cache_file

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
    import io

    from wikigr.home import prune, write_atomic

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
    return len(words & (_parts(line) | _parts(description)))


@functools.lru_cache(maxsize=1024)
def _described_by(text: str) -> tuple[frozenset[str], ...]:
    """The words that describe each definition ``text`` shows: the name parts of its line and of
    the first sentence after it."""
    return tuple(
        frozenset(_parts(line) | _parts(_FIRST_SENTENCE.split(after, 1)[0]))
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
            names[place] |= _parts(fragment) | _parts(text)
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
                found = _described_by(texts.get(self.chunk_ids[r], ""))
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
        for word in _parts(query):
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


PAGE = "page"  # the score page_score gives each passage it places: its page's (dedup keeps them)
_WITHIN = 1e-6  # what a page's next passage in the same round loses: it follows, and no other page's


@dataclass
class PageScoreOptions:
    top_chunks: int = 3  # chunks that make a page's similarity: the best + share x each next one
    share: float = 0.3
    authority: float = 0.1  # weight of log(1 + in-links), scaled to 1 for the most linked page (see docs)
    link_text: float = 0.2  # weight of the query's match with the names of the links to the page
    pool: int = 300  # nearest chunks looked at (pages outside have no chunk score)
    pages: int = 10  # the top pages each get their best chunk as a candidate
    passages_per_page: int = 1  # passages of a page before the next page's
    first_page_passages: int = 2  # ... of the best page
    min_chunks_per_page: float = 2.0  # skip packs whose articles average fewer chunks (passages)
    defined_names: bool = True  # the page and chunk defining an API the question names come first;
    # a passage of definitions is cited at the one the question's words name
    definition_words: int = 2  # within a page, a chunk showing a definition whose line and first
    # sentence hold this many of the question's words, most first, comes first (0: off)
    described_pages: int = 3  # the top pages whose every chunk is looked at for such a definition

    def __post_init__(self) -> None:
        if min(self.definition_words, self.described_pages) < 0:
            raise ValueError("definition_words and described_pages must be at least 0")
        counts = (self.top_chunks, self.pool, self.passages_per_page, self.first_page_passages)
        if min(counts) < 1 or self.pages < 0:
            raise ValueError(
                "top_chunks, pool, passages_per_page and first_page_passages must be at least 1, "
                "pages at least 0"
            )
        for name in ("share", "authority", "link_text", "min_chunks_per_page"):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0")


@register
class PageScoreStage(Stage):
    name = "page_score"
    summary = "rank pages by all their chunks, their in-links and the link texts naming them"
    Options = PageScoreOptions

    def page_scores(
        self, index: PageIndex, query: str, vector: np.ndarray
    ) -> tuple[dict[int, float], np.ndarray]:
        """Score of each page that has a chunk among the ``pool`` nearest; and every chunk's similarity."""
        o = self.options
        # einsum, not @: BLAS threads next to the ONNX embedder's thread pool make @ ten times slower
        similarity = np.einsum("ij,j->i", index.matrix, vector.astype(np.float32))
        pool = min(o.pool, len(similarity))
        nearest = np.argpartition(-similarity, pool - 1)[:pool]
        nearest = nearest[np.argsort(-similarity[nearest], kind="stable")]
        scores: dict[int, float] = {}
        seen: dict[int, int] = {}
        for row in nearest.tolist():
            page = int(index.chunk_page[row])
            n = seen.get(page, 0)
            if n < o.top_chunks:
                scores[page] = scores.get(page, 0.0) + (1.0 if n == 0 else o.share) * float(similarity[row])
            seen[page] = n + 1
        if o.authority and index.has_links:
            for page in scores:
                scores[page] += o.authority * float(index.authority[page])
        if o.link_text and len(index.target_page):
            links = index.link_scores(query)
            for page in scores:
                scores[page] += o.link_text * float(links[page])
        return scores, similarity

    def run(self, state: QueryState) -> None:
        o = self.options
        t0 = time.perf_counter()
        index = PageIndex.of(state.ctx)
        load_ms = (time.perf_counter() - t0) * 1000
        if not index.chunk_ids:
            raise Skip("the pack has no chunks")
        if index.chunks_per_page < o.min_chunks_per_page:
            raise Skip(
                f"{index.chunks_per_page:.1f} chunks per article: passages, not pages "
                f"(min_chunks_per_page {o.min_chunks_per_page:g})"
            )
        query = (state.queries or [state.question])[0]
        scores, similarity = self.page_scores(index, query, state.vector(query))
        page_of = {p: i for i, p in enumerate(index.pages)}
        by_id = {c.chunk_id: c for c in state.candidates}
        for candidate in state.candidates:  # a candidate's page without a chunk in the pool
            page = page_of.get(candidate.article_id)
            if page is not None and page not in scores:
                scores[page] = 0.0
        ranked = sorted(scores, key=lambda p: (-scores[p], p))
        # The best chunk of each top page that has no candidate yet.
        have = {page_of.get(c.article_id) for c in state.candidates}
        wanted = [p for p in ranked[: o.pages] if p not in have]
        added: dict[str, float] = {}
        if wanted:
            rows = np.flatnonzero(np.isin(index.chunk_page, wanted))
            best: dict[int, int] = {}
            for row in rows.tolist():
                page = int(index.chunk_page[row])
                if page not in best or similarity[row] > similarity[best[page]]:
                    best[page] = row
            added = {index.chunk_ids[row]: float(similarity[row]) for row in best.values()}
            for hit in state.ctx.store.chunk_details(added):
                by_id[hit.chunk_id] = Candidate.from_hit(hit, "page_score")
        # The chunks defining what the question names: their pages first, they first in them.
        defining: set[str] = set()
        if o.defined_names:
            named = index.named(query)
            top = max(scores.values(), default=0.0) + len(named)
            for n, (page, fragment) in enumerate(named):
                found = index.defining_chunk(state.ctx.store, page, fragment, similarity)
                if found is None:
                    continue
                candidate = by_id.get(found.chunk_id) or Candidate.from_hit(found, "page_score")
                candidate.anchor = fragment
                by_id[found.chunk_id] = candidate
                defining.add(found.chunk_id)
                scores[page] = max(scores.get(page, 0.0), top - n)  # the first name's page first
            if defining:
                ranked = sorted(scores, key=lambda p: (-scores[p], p))
        # Page by page: each page's passages in the order so far (added ones last), a chunk that
        # shows a definition described in the question's words (its line and the first sentence
        # after it) before them.
        words = {w for w in _parts(query) if len(w) >= 3} - STOP_NAMES  # "how", "does", "with"...
        described: dict[str, int] = {}
        if o.definition_words:
            for candidate in by_id.values():
                held = max((len(words & parts) for parts in _described_by(candidate.text)), default=0)
                if held >= o.definition_words:
                    described[candidate.chunk_id] = held
        read_whole: dict[str, float] = {}  # the best-described chunk of each top page: similarity
        if o.definition_words and o.described_pages:
            for page in ranked[: o.described_pages]:
                held_rows = [
                    (max(len(words & parts) for parts in found), float(similarity[r]), r)
                    for r, found in index.described_chunks(state.ctx.store, page)
                ]
                held, score, row = max(held_rows, default=(0, 0.0, -1))
                if held >= o.definition_words and index.chunk_ids[row] not in by_id:
                    read_whole[index.chunk_ids[row]] = score
                    described[index.chunk_ids[row]] = held
            for hit in state.ctx.store.chunk_details(read_whole):  # one read for them all
                by_id[hit.chunk_id] = Candidate.from_hit(hit, "page_score")
        per_page: dict[int, list[Candidate]] = defaultdict(list)
        others: list[Candidate] = []
        order = sorted(
            by_id.values(),
            key=lambda c: (
                c.chunk_id not in defining,
                -described.get(c.chunk_id, 0),
                c.chunk_id in added or c.chunk_id in read_whole,
                -c.score,
                c.chunk_id,
            ),
        )
        for candidate in order:
            page = page_of.get(candidate.article_id)
            if page is None or page not in scores:
                others.append(candidate)
            else:
                per_page[page].append(candidate)
        best_page = next((p for p in ranked if per_page.get(p)), None)  # the best page with passages
        most = max(o.first_page_passages, o.passages_per_page)  # the best page never gives fewer

        def round_of(page: int, n: int) -> tuple[int, int]:
            """The round in which a page's ``n``th passage comes, and its place in that round."""
            first = most if page == best_page else o.passages_per_page
            if n < first:
                return 0, n
            step, within = divmod(n - first, o.passages_per_page)
            return step + 1, within

        rounds = max((round_of(p, len(v) - 1)[0] for p, v in per_page.items()), default=0) + 1
        low = min(scores.values()) if scores else 0.0
        spread = (max(scores.values()) - low) if scores else 0.0
        for page, passages in per_page.items():
            scaled = (scores[page] - low) / spread if spread > 0 else 1.0
            for n, candidate in enumerate(passages):
                step, within = round_of(page, n)  # within a round, the page's order holds
                candidate.scores[PAGE] = scores[page]
                candidate.score = (rounds - step - 1 + scaled - _WITHIN * within) / rounds
        for candidate in others:
            candidate.score = -1.0
        state.candidates = list(by_id.values())
        state.sort()
        if o.defined_names and index.fragments:  # a passage of definitions: cited at the one asked
            for candidate in state.candidates[: 2 * state.top_k]:  # those that may be cited
                page = page_of.get(candidate.article_id)
                if candidate.chunk_id not in defining and page is not None:
                    candidate.anchor = index.entry(candidate.text, page, words) or candidate.anchor
        state.note(
            self.name,
            top_pages=[index.urls[p] for p in ranked[:5]],
            added=len(added),
            described=len(read_whole),
            defined=[by_id[c].anchor for c in sorted(defining)] or "no name of the pack's definitions",
            authority="yes" if index.has_links else "no links in this pack",
            link_targets=len(index.target_page)
            or "no link texts in this pack (a store written before they were kept has none)",
            index_load_ms=round(load_ms, 1),
        )
