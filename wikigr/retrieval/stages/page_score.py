"""page_score: rank pages, not passages, then give each top page its best passages first.

On documentation a question is answered by a page (the reference of ``str.lower``, of
``os.listdir``), and a page is many chunks. The stage scores every page from three signals:

- **its chunks**: the cosine similarity of its best chunk to the (first) query, plus ``share`` × the
  similarities of its next ``top_chunks - 1`` best chunks — a page that answers the question in
  several places beats one lucky chunk. Similarities come from the pack's chunk vectors, held in
  memory (loaded once per agent) and scored with one matrix product: all chunks, not only the
  candidates so far.
- **the page as a whole** (``page_vector``, and ``page_vector_across`` for a question in another
  language than the pack's documents): the cosine similarity of the query to the mean of the page's
  chunk vectors (from the same vectors in memory), times the weight. A man page's chunks each say
  one thing (an option, an example); their mean says what the page is about, as a short question
  does ("Получить имя хоста компьютера"). 2 across languages (bench/multilingual.py, Russian
  questions on English man pages, chosen on the dev half). For a question in the documents'
  language the embedder decides (``page_vector`` unset: :func:`wikigr.embed.page_vector`): off (0)
  with the built-in model, where the best passages already tell the page; 2 with ``multilingual``,
  whose cosines lie in a narrow band where they tell it less well (English questions on the same
  pages, dev half).
- **its words, for a question in another language** (``keyword_across``): with the pack's lexicon,
  the question's words are read as the documents' nearest words (wikigr/retrieval/across.py), and
  the pages keyword search ranks for them, each by its best chunk, are fused with the ranking by
  all the other signals, last, by reciprocal rank (weight 0.7, k ``keyword_rrf`` 10; the trace's
  ``read_as`` shows the words). The same words' lexicon vectors, summed by their weights, are added to the
  question's vector before the chunks are scored (weight ``reading_across`` 0.6, the trace's
  ``read_vector``): the question as the documents' words say it. Chosen on the dev half of
  bench/multilingual.py.
- **the APIs it defines, for a how-to question** (``defined_near``): with the pack's definitions
  (:mod:`wikigr.pack.definitions`: every API its chunks define, embedded as "name: first
  sentence"), the ``defined_top`` (200) nearest the query; a page defining one of them gains
  ``defined_near`` (0.3) times 1 for the page of the nearest, down to 0 at ``defined_spread`` (1.0)
  less cosine (a page counts its nearest). Alone (``centrality`` 0), it puts ``time.sleep``'s page
  first for "How do I pause my program for two seconds?", whose chunks, to vector search, read less
  like the question than os.html's (with the links os.html, more linked, stays first;
  ``time.sleep`` leads the short answer either way). Only for a question that asks how to do
  something (an instruction too: "sort a list by key") or for a code name ("which function ...");
  not for one in another language than the documents; a pack without definitions ranks as before,
  and so does one whose definitions are not an API's: under ``defined_qualified`` (0.3) of their
  names qualified (``time.sleep``; the Python docs' 0.62, man pages' 0.03, whose definition lines
  are options and words: there it put the pages of such words first for English questions, even
  with only the 10 nearest definitions). Tried on the dev half of bench/docqa.py
  --whole (``--tune defined``: weight 0 to 0.4, spread 0.3 or 1, 50 or 200 definitions); the
  definitions are compared once per question (``QueryState.defined_near``, which the short answer
  reads too). It was off while graph_rerank reordered this stage's pages: the short answer to "How
  do I compute the SHA-256 of a file?" on packs/pydocs then led with a near API (``array.tofile``,
  ``os.preadv``); with ``centrality`` below, with ``hashlib.file_digest`` again.
- **its authority**: log(1 + the number of other pages linking to it) / the largest such value
  over the pack, times ``authority``. The pages everything else refers to (built-in functions and
  types) answer more questions.
- **the links among the pages in play** (``centrality``): each page's links (in or out) to the
  other pages the candidates are on and the top ``pages`` pages, log(1 + their number) / the
  largest such value, times ``centrality`` (0.2). The pages the others refer to, for this
  question. graph_rerank weighed the same links after this stage, on its passages' scores; but
  those place a page's passages in rounds, so the gaps between pages were divided by the number of
  rounds (20 or more) and its 0.1 outweighed any page's lead: the links decided the order of the
  top pages. Weighed here, among the page's other signals, a clear lead is kept, and graph_rerank
  leaves the candidates this stage placed. Chosen on the dev halves of bench/docqa.py (whole docs
  and packs/pydocs) with ``defined_near`` 0.3: 0.2 to 0.25 best on both (R@1 / R@5 49.7 / 77.5 ->
  51.3 / 82.1 on the whole docs, 50.5 / 82.1 -> 51.3 / 88.9 on packs/pydocs); the linear form
  (degree / largest) scored higher on the whole docs but put hubs first: ``os.html`` above
  ``shutil.html`` for "copy a whole directory tree", and ``hashlib.html`` out of the top pages of
  the SHA-256 question. The log form keeps 11 of the 12 spot checks of bench/docqa.py (10 before).
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

import math
import time
from collections import defaultdict
from dataclasses import dataclass

import numpy as np

from wikigr.embed import page_vector
from wikigr.graph.extract import STOP_NAMES
from wikigr.retrieval.across import fuse, keyword_pages, reading, with_reading
from wikigr.retrieval.page_index import PageIndex, described_by, name_parts
from wikigr.retrieval.sentence_scores import how_to
from wikigr.retrieval.stage import PAGE, Candidate, QueryState, Skip, Stage, register

_WITHIN = 1e-6  # what a page's next passage in the same round loses: it follows, and no other page's


@dataclass
class PageScoreOptions:
    top_chunks: int = 3  # chunks that make a page's similarity: the best + share x each next one
    share: float = 0.3
    authority: float = 0.1  # weight of log(1 + in-links), scaled to 1 for the most linked page (see docs)
    link_text: float = 0.2  # weight of the query's match with the names of the links to the page
    pool: int = 300  # nearest chunks looked at (pages outside have no chunk score)
    page_vector: float | None = None  # weight of the query's similarity to the page's mean chunk
    # vector (None: the embedder's, wikigr.embed.page_vector: 0, or 2 for multilingual)
    page_vector_across: float = 2.0  # ... for a question in another language than the pack's
    keyword_across: float = 0.7  # such a question read in the documents' words (its lexicon): the
    # weight of the pages keyword search ranks, fused by reciprocal rank (0: off)
    keyword_rrf: int = 10  # the k of that fusion
    reading_across: float = 0.6  # the weight of its reading's vector (the lexicon's vectors of the
    # words it is read as) added to the question's vector (0: off)
    pages: int = 10  # the top pages each get their best chunk as a candidate
    passages_per_page: int = 1  # passages of a page before the next page's
    first_page_passages: int = 2  # ... of the best page
    min_chunks_per_page: float = 2.0  # skip packs whose articles average fewer chunks (passages)
    defined_names: bool = True  # the page and chunk defining an API the question names come first;
    # a passage of definitions is cited at the one the question's words name
    definition_words: int = 2  # within a page, a chunk showing a definition whose line and first
    # sentence hold this many of the question's words, most first, comes first (0: off)
    described_pages: int = 3  # the top pages whose every chunk is looked at for such a definition
    defined_near: float = 0.3  # weight of a page defining one of the APIs nearest a how-to question
    # (the pack's definitions; see above), 0: off
    defined_top: int = 200  # ... the pack's definitions nearest the question looked at
    defined_spread: float = 1.0  # ... a page's share: 1 for the nearest, 0 at this much less cosine
    defined_qualified: float = 0.3  # ... only in a pack whose definitions are this share qualified
    # names at least (an API's reference: the Python docs 0.62; man pages' option lines 0.03)
    centrality: float = 0.2  # weight of a page's links among the pages in play (see above), 0: off

    def __post_init__(self) -> None:
        if min(self.definition_words, self.described_pages, self.defined_top) < 0:
            raise ValueError("definition_words, described_pages and defined_top must be at least 0")
        if not 0 < self.defined_spread <= 2:
            raise ValueError("defined_spread must be above 0, at most 2")
        counts = (self.top_chunks, self.pool, self.passages_per_page, self.first_page_passages)
        if min(*counts, self.keyword_rrf) < 1 or self.pages < 0:
            raise ValueError(
                "top_chunks, pool, passages_per_page, first_page_passages and keyword_rrf must be at "
                "least 1, pages at least 0"
            )
        for name in (
            "share",
            "authority",
            "link_text",
            "min_chunks_per_page",
            "page_vector_across",
            "keyword_across",
            "reading_across",
            "defined_near",
            "defined_qualified",
            "centrality",
        ):
            value = getattr(self, name)
            if not math.isfinite(value) or value < 0:
                raise ValueError(f"{name} must be a number >= 0")
        if self.page_vector is not None and not (math.isfinite(self.page_vector) and self.page_vector >= 0):
            raise ValueError("page_vector must be a number >= 0 (or unset: the embedder's)")


@register
class PageScoreStage(Stage):
    name = "page_score"
    summary = "rank pages by all their chunks, their in-links and the link texts naming them"
    Options = PageScoreOptions

    def page_scores(
        self, index: PageIndex, query: str, vector: np.ndarray, whole: float = 0.0
    ) -> tuple[dict[int, float], np.ndarray]:
        """Score of each page that has a chunk among the ``pool`` nearest; and every chunk's
        similarity. ``whole``: the weight of the page's mean vector (``page_vector``)."""
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
        if whole:
            means = np.einsum("ij,j->i", index.page_means, vector.astype(np.float32))
            for page in scores:
                scores[page] += whole * float(means[page])
        if o.authority and index.has_links:
            for page in scores:
                scores[page] += o.authority * float(index.authority[page])
        if o.link_text and len(index.target_page):
            links = index.link_scores(query)
            for page in scores:
                scores[page] += o.link_text * float(links[page])
        return scores, similarity

    def defined_pages(self, state: QueryState, index: PageIndex, query: str) -> tuple[dict[int, float], str]:
        """For a question that asks how to do something or for an API, the pages of the pack's
        ``defined_top`` definitions nearest ``query``, best first: page -> its share of the bonus, 1
        for the page of the nearest, down to 0 at ``defined_spread`` less cosine (a page counts
        its nearest definition); and, when there are none, why (for the trace)."""
        o = self.options
        if not o.defined_near or state.across:  # the definitions are in the documents' words
            return {}, "off" if not o.defined_near else "the question is in another language"
        if not (how_to(state.question) or state.asked.asks_code):
            return {}, "not a how-to question"
        definitions = state.ctx.definitions()
        if definitions is not None and definitions.qualified < o.defined_qualified:
            share = f"{definitions.qualified:.0%} qualified names"
            return {}, f"the pack's definitions are not an API's ({share})"
        near = state.defined_near(o.defined_top, query)
        found: dict[int, float] = {}
        for chunk, _name, cosine in near:
            row = index.chunk_rows.get(chunk)
            if row is not None:
                found.setdefault(int(index.chunk_page[row]), 1.0 - (near[0][2] - cosine) / o.defined_spread)
        return {page: share for page, share in found.items() if share > 0}, "no definitions in this pack"

    def centrality_of(self, state: QueryState, index: PageIndex, scores: dict[int, float]) -> int:
        """Add ``centrality`` x each page's share of the links among the pages in play: those the
        candidates are on and the top ``pages`` by ``scores`` (log(1 + its linked pages among
        them) / the largest); return how many are linked. Degree as graph_rerank counts it."""
        page_of = index.page_index
        ranked = sorted(scores, key=lambda p: (-scores[p], p))[: self.options.pages]
        chosen = [page_of[c.article_id] for c in state.candidates if c.article_id in page_of]
        ids = [index.pages[p] for p in dict.fromkeys([*chosen, *ranked])]
        degree = state.ctx.store.article_degrees(ids, within=True)
        top = math.log1p(max(degree.values(), default=0))
        if not top:
            return 0
        for article, d in degree.items():
            if d:
                page = page_of[article]
                scores[page] = scores.get(page, 0.0) + self.options.centrality * math.log1p(d) / top
        return sum(1 for d in degree.values() if d)

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
        whole = o.page_vector_across if state.across else o.page_vector
        if whole is None:  # the embedder's: how well its best passages alone tell a page
            whole = page_vector(state.ctx.embedder)
        # A question in another language read in the documents' words (the pack's lexicon).
        read = reading(state) if state.across and (o.keyword_across or o.reading_across) else None
        read_vector = o.reading_across if read is not None and read.vector is not None else 0.0
        vector = with_reading(state.vector(query), read, read_vector)
        scores, similarity = self.page_scores(index, query, vector, whole)
        defined, why_not = self.defined_pages(state, index, query)  # the APIs nearest a how-to question
        for near_page, share in defined.items():
            scores[near_page] = scores.get(near_page, 0.0) + o.defined_near * share
        page_of = {p: i for i, p in enumerate(index.pages)}
        by_id = {c.chunk_id: c for c in state.candidates}
        for candidate in state.candidates:  # a candidate's page without a chunk in the pool
            page = page_of.get(candidate.article_id)
            if page is not None and page not in scores:
                scores[page] = 0.0
        linked = self.centrality_of(state, index, scores) if o.centrality and index.has_links else 0
        # The pages keyword search finds for the words a question in another language is read as,
        # fused by rank last: the bonuses above are in the scores' own units, not in the fusion's.
        if read is not None and o.keyword_across:
            scores = fuse(scores, keyword_pages(state, index, read), o.keyword_across, o.keyword_rrf)
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
        words = {w for w in name_parts(query) if len(w) >= 3} - STOP_NAMES  # "how", "does", "with"...
        described: dict[str, int] = {}
        if o.definition_words:
            for candidate in by_id.values():
                held = max((len(words & parts) for parts in described_by(candidate.text)), default=0)
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
            defined_near=[index.urls[p] for p in list(defined)[:3]] or why_not,
            authority="yes" if index.has_links else "no links in this pack",
            centrality=(linked if index.has_links else "no links") if o.centrality else "off",
            link_targets=len(index.target_page)
            or "no link texts in this pack (a store written before they were kept has none)",
            index_load_ms=round(load_ms, 1),
            **({"page_vector": whole} if whole else {}),
            **({"read_as": read.words[:8]} if read is not None else {}),
            **({"read_vector": read_vector} if read_vector else {}),
        )
