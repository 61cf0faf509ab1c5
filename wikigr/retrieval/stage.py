"""The seam where retrieval stages plug in.

A stage is a small class registered by name with :func:`register`. It has an ``Options``
dataclass (unknown option names are rejected when a profile or ``kg_config.json`` sets them) and a
``run(state)`` method that reads and updates the :class:`QueryState`: the candidate passages, the
flags, the answer. A stage that cannot run here raises :class:`Skip` with the reason; the trace
records it and the pipeline goes on. ``pack_kinds`` says which kinds of pack (the manifest's
``source_kind``) a stage applies to: a profile's stages that do not apply to a pack are left out.

The seam runs one way: the stages import this module, never the reverse. A built-in stage is
named in :data:`BUILTIN_STAGES`, and its module (``wikigr/retrieval/stages/NAME.py``) is imported
the first time :func:`stage_class` is asked for it, so a query imports the stages it runs and no
others. Adding a built-in stage takes:

1. its module, ``wikigr/retrieval/stages/NAME.py``, with a ``@register`` class named ``NAME``;
2. its name in :data:`BUILTIN_STAGES`;
3. its place in :data:`wikigr.retrieval.profiles.CANONICAL_ORDER` (and in the profiles, or the
   router's strategies, that run it).

A stage from elsewhere (a plugin) registers itself when its module is imported, and is then
named like a built-in (``enable=["recency"]``).
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from wikigr import lang
from wikigr.errors import InvalidPackError, UsageError
from wikigr.question import Question

if TYPE_CHECKING:
    import numpy as np

    from wikigr.embed import Embedder
    from wikigr.llm import LLM, Usage
    from wikigr.pack.definitions import Definitions
    from wikigr.pack.keyword import KeywordIndex
    from wikigr.pack.lexicon import Lexicon
    from wikigr.pack.pack import Pack
    from wikigr.pack.reader import ChunkHit, PackStore
    from wikigr.retrieval.across import Reading


class Skip(Exception):
    """Raised by a stage that cannot run here (no model, no API key...); the message says why."""


PAGE = "page"  # the score page_score gives each passage it places: its page's


@dataclass
class Candidate:
    """A passage under consideration, with the scores the stages gave it."""

    chunk_id: str
    text: str
    article_id: str
    article_title: str
    url: str  # the article's cited URL (without the section anchor)
    section_id: str
    section_title: str
    anchor: str
    score: float  # the current ranking score (higher is better)
    scores: dict[str, float] = field(default_factory=dict)  # by signal: vector, keyword, ...
    origin: str = "vector"  # the stage that brought it in
    pack: str = ""  # the pack it comes from, when several packs answer together

    @property
    def placed_by_page(self) -> bool:
        """Whether page_score placed it: ranked among its page's passages by the page's score
        (``scores[PAGE]``), which dedup keeps and graph_rerank leaves as they are."""
        return PAGE in self.scores

    @classmethod
    def from_hit(cls, hit: ChunkHit, signal: str, origin: str | None = None) -> Candidate:
        return cls(
            chunk_id=hit.chunk_id,
            text=hit.text,
            article_id=hit.article_id,
            article_title=hit.article_title,
            url=hit.url,
            section_id=hit.section_id,
            section_title=hit.section_title,
            anchor=hit.anchor,
            score=hit.score,
            scores={signal: hit.score},
            origin=origin or signal,
        )

    @property
    def citation_url(self) -> str:
        return f"{self.url}#{self.anchor}" if self.anchor and "#" not in self.url else self.url


@dataclass
class Example:
    """A few-shot example: a question of the pack's evaluation set and its ground truth."""

    id: str
    question: str
    answer: str


@dataclass
class Context:
    """What the stages may use: the pack, its store and embedder, and optional parts."""

    pack: Pack
    store: PackStore
    llm: LLM | None = None
    options: dict[str, Any] = field(default_factory=dict)  # stage name -> its options, where set
    cache: dict[str, Any] = field(default_factory=dict)  # loaded once per agent (e.g. the entity graph)
    loaded_embedder: Embedder | None = None  # the pack's embedder, once loaded (see ``embedder``)
    _keyword: KeywordIndex | None = None
    _keyword_error: str | None = None
    _keyword_damage: InvalidPackError | None = None

    @property
    def embedder(self) -> Embedder:
        """The pack's embedder, loaded on first use unless the agent loaded it with the store."""
        if self.loaded_embedder is None:
            from wikigr.embed import pack_embedder

            self.loaded_embedder = pack_embedder(self.pack.manifest.embedder, f"pack {self.pack.name}")
        return self.loaded_embedder

    @property
    def has_entity_graph(self) -> bool:
        """Whether the pack's store holds an entity graph, asked once per agent (before anything
        that needs the graph is loaded)."""
        if "has_entities" not in self.cache:
            self.cache["has_entities"] = self.store.has_entities
        return bool(self.cache["has_entities"])

    def warm(self, dimension: int) -> None:
        """Make the reads every question of a passage pack makes, once, before the first question
        (the agent calls it while the model loads): whether there is an entity graph, a search for
        the chunks nearest a vector of ``dimension`` floats with their citations, and the links of
        their pages. LadybugDB prepares each statement once per connection and reads the columns it
        touches on first use: done here, the first question does not wait for it. A failure is left
        to the question that makes the same read to report."""
        try:
            self.has_entity_graph  # noqa: B018 - asked once, kept in the cache
            probe = [1.0] + [0.0] * (dimension - 1)
            hits = self.store.chunk_details(self.store.nearest_chunks(probe, 30))
            pages = sorted({hit.article_id for hit in hits})
            self.store.article_degrees(pages)
            self.store.linked_articles(pages[:3])
        except Exception:  # noqa: BLE001 - see the docstring
            pass

    def lexicon(self) -> Lexicon | None:
        """The pack's lexicon (:mod:`wikigr.pack.lexicon`: its words by meaning, for questions in
        other languages), loaded on first use; None when it has none (a pack in shards: none).
        Damaged files raise the :class:`InvalidPackError` that names them."""
        if "lexicon" not in self.cache:
            from wikigr.pack.lexicon import Lexicon

            shards = self.pack.shards()
            dimension = self.pack.manifest.embedder.dimension
            self.cache["lexicon"] = Lexicon.load(shards[0].path, dimension) if len(shards) == 1 else None
        found: Lexicon | None = self.cache["lexicon"]
        return found

    def definitions(self) -> Definitions | None:
        """The pack's definitions (:mod:`wikigr.pack.definitions`: the APIs its documents define,
        by meaning, for how-to questions; a pack in shards: all its shards'), loaded on first use;
        None when it has none. Damaged files raise the :class:`InvalidPackError` that names them."""
        if "definitions" not in self.cache:
            from wikigr.pack.definitions import Definitions

            dimension = self.pack.manifest.embedder.dimension
            parts = [Definitions.load(shard.path, dimension) for shard in self.pack.shards()]
            found = [part for part in parts if part is not None]
            self.cache["definitions"] = Definitions.joined(found) if found else None
        loaded: Definitions | None = self.cache["definitions"]
        return loaded

    def keyword_index(self) -> KeywordIndex:
        """The pack's BM25 index, loaded on first use; raises Skip when the pack has none, and the
        :class:`InvalidPackError` when its files are damaged (a wrong answer is worse than none)."""
        if self._keyword is None and self._keyword_error is None and self._keyword_damage is None:
            from wikigr.pack.keyword import KeywordIndex, KeywordUnion

            folders = [pack.path / "bm25" for pack in self.pack.shards()]  # a pack in shards: theirs
            if not all(folder.is_dir() for folder in folders):
                self._keyword_error = "the pack has no keyword index (bm25/); rebuild it"
            else:
                try:
                    self._keyword = (
                        KeywordIndex.load(folders[0]) if len(folders) == 1 else KeywordUnion.load_all(folders)
                    )
                except InvalidPackError as exc:
                    self._keyword_damage = exc  # damaged, not absent: every query says so
                    raise
        if self._keyword_damage is not None:
            raise self._keyword_damage
        if self._keyword is None:
            raise Skip(self._keyword_error or "no keyword index")
        return self._keyword


@dataclass
class QueryState:
    """Everything a query carries from stage to stage."""

    question: str
    ctx: Context
    top_k: int = 5
    question_id: str | None = None
    fallback: bool = False  # on a Claude failure, answer extractively instead of failing
    queries: list[str] = field(default_factory=list)  # the question and any rephrasings
    candidates: list[Candidate] = field(default_factory=list)
    confidence: float = 0.0  # best raw vector similarity seen
    low_confidence: bool = False
    absent: list[str] = field(default_factory=list)  # the question's words no chunk holds (gate)
    packs: int = 1  # how many packs the candidates come from
    examples: list[Example] = field(default_factory=list)
    facts: list[str] = field(default_factory=list)
    answer: str | None = None
    answer_mode: str = ""  # "claude" or "extractive"
    usage: Usage | None = None
    notes: dict[str, Any] = field(default_factory=dict)  # stage name -> detail for the trace
    trace: dict[str, Any] = field(default_factory=dict)  # added to the top of the trace (tool_calls...)
    _vectors: dict[str, np.ndarray] = field(default_factory=dict)
    _nearest: dict[str, tuple[int, dict[str, float]]] = field(default_factory=dict)  # see nearest
    _language: str | None = None  # see language
    # defined_near's, by text: how many were asked for, and those
    _defined: dict[str, tuple[int, list[tuple[str, str, float]]]] = field(default_factory=dict)
    readings: list[Reading | None] = field(default_factory=list)  # the one of across.reading, once read
    move_across: bool = True  # move the vector of a question asked across languages (see vector)
    moved: str = ""  # how the question's vector was moved across languages (see vector), for the trace

    @property
    def asked(self) -> Question:
        """The question's analysis (its kind, what it asks for, its words), made once."""
        return Question.of(self.question)

    @property
    def language(self) -> str:
        """The question's language (a :mod:`wikigr.lang` code), told once per query from its script
        and the pack's languages (:func:`wikigr.lang.question_language`): keyword search and the
        answer read the question in it."""
        if self._language is None:
            self._language = lang.question_language(self.question, self.ctx.pack.manifest.language_codes())
        return self._language

    @property
    def pack_languages(self) -> list[str]:
        """The languages of the pack's documents, most documents first (``und`` left out; an old
        pack's: English)."""
        return [code for code in self.ctx.pack.manifest.language_codes() if code != lang.UNKNOWN] or [
            lang.ENGLISH
        ]

    @property
    def across(self) -> bool:
        """Whether the question is in another language than most of the pack's documents (a Russian
        question on English pages, some Russian ones among them or not): its words are not the
        documents' words, and it is matched by meaning (the router leans on the vectors; the answer
        says nothing of its "missing" words). On a mixed pack, asking "in none of the documents'
        languages" instead left a Russian question on English man pages with a few Russian ones to
        keyword search in Russian, which finds the Russian pages alone (bench/multilingual.py,
        ``mixed``)."""
        return self.language != lang.UNKNOWN and self.language != self.pack_languages[0]

    def across_note(self) -> str:
        """``"the question is in Russian and the pack in English: matched by meaning"``, ``"... and
        most of the pack in English: ..."`` when some of its documents are in other languages
        (traced)."""
        most = "the pack" if len(self.pack_languages) == 1 else "most of the pack"
        pack = lang.name(self.pack_languages[0])
        note = f"the question is in {lang.name(self.language)} and {most} in {pack}: matched by meaning"
        return f"{note} ({self.moved})" if self.moved else note

    def vector(self, text: str | None = None) -> np.ndarray:
        """The embedding of ``text`` (default: the question), computed once. A question asked across
        languages (:attr:`across`) is moved to the side of the pack's main language where the
        embedder is calibrated for both (:func:`wikigr.embed.move_queries`: ``multilingual``, Russian
        and English; not with ``move_across`` False: the router's option), and :attr:`moved` says so."""
        key = self.question if text is None else text
        if key not in self._vectors:
            from wikigr.embed import embed_question, move_queries

            vector = embed_question(self.ctx.embedder, [key], self.language, self.pack_languages)
            if self.across and self.move_across:
                source, target = self.language, self.pack_languages[0]
                moved = move_queries(self.ctx.embedder, vector, source, target)
                if moved is not vector:
                    self.moved = f"the question's vector moved to the side of {lang.name(target)}"
                vector = moved
            self._vectors[key] = vector[0]
        return self._vectors[key]

    def cosine_scale(self) -> float:
        """What the question's cosines are multiplied by before a threshold reads them
        (:func:`wikigr.embed.cosine_scale`: 1 but for a ``multilingual`` question)."""
        from wikigr.embed import cosine_scale

        return cosine_scale(self.ctx.embedder, self.vector())

    def defined_near(self, k: int, text: str | None = None) -> list[tuple[str, str, float]]:
        """The pack's ``k`` definitions nearest ``text`` (default: the question;
        :meth:`Context.definitions`): (chunk id, name, cosine), best first; computed once per text
        (a later ask for as many or fewer reuses them); [] when the pack has none."""
        key = self.question if text is None else text
        found = self._defined.get(key)
        if found is None or found[0] < k:
            definitions = self.ctx.definitions()
            found = (k, definitions.nearest(self.vector(key), k) if definitions is not None else [])
            self._defined[key] = found
        return found[1][:k]

    def nearest(self, k: int, text: str | None = None) -> dict[str, float]:
        """The ``k`` chunks nearest ``text`` (default: the question) by embedding, chunk id ->
        cosine similarity, best first. The store is searched once per text: a later ask for as many
        or fewer reuses the search (several packs: the search that measures a pack's relevance is
        the one its vector stage uses)."""
        key = self.question if text is None else text
        searched = self._nearest.get(key)
        if searched is None or searched[0] < k:
            searched = (k, self.ctx.store.nearest_chunks(self.vector(key).tolist(), k))
            self._nearest[key] = searched
        return dict(list(searched[1].items())[:k])

    def set_vector(self, text: str, vector: np.ndarray) -> None:
        """Give the embedding of ``text`` when it is already known (several packs, one embedder)."""
        self._vectors[text] = vector

    def sort(self) -> None:
        self.candidates.sort(key=lambda c: (-c.score, c.chunk_id))

    def note(self, stage: str, **detail: Any) -> None:
        self.notes.setdefault(stage, {}).update(detail)


@dataclass
class NoOptions:
    """For stages without options."""


class Stage:
    """Base class of a retrieval stage. Subclasses set ``name``, ``Options`` and ``run``."""

    name: ClassVar[str] = ""
    summary: ClassVar[str] = ""
    Options: ClassVar[type[Any]] = NoOptions
    pack_kinds: ClassVar[tuple[str, ...]] = ("documents",)  # the packs it applies to, by source_kind

    def __init__(self, options: Any | None = None) -> None:
        self.options = options if options is not None else self.Options()

    def run(self, state: QueryState) -> None:
        raise NotImplementedError


# The built-in stages, by name: each is the module of that name in wikigr/retrieval/stages/.
BUILTIN_STAGES = (
    "bridge",
    "cross_encoder",
    "dedup",
    "few_shot",
    "gate",
    "graph_rerank",
    "keyword",
    "literals",
    "multi_query",
    "multidoc",
    "openml_tools",
    "page_score",
    "pair",
    "ppr",
    "quality",
    "router",
    "synthesize",
    "title_match",
    "vector",
    "vector_cypher",
)
STAGES: dict[str, type[Stage]] = {}  # the stages registered so far: built-ins once loaded, plugins

StageT = TypeVar("StageT", bound=type[Stage])


def register(cls: StageT) -> StageT:
    """Class decorator: make a stage available by its ``name`` to profiles and the CLI."""
    if not cls.name:
        raise TypeError(f"{cls.__name__} has no name")
    if cls.name in STAGES and STAGES[cls.name] is not cls:
        raise TypeError(f"a stage named {cls.name!r} is already registered")
    STAGES[cls.name] = cls
    return cls


def stage_class(name: str) -> type[Stage]:
    """The stage registered as ``name``; a built-in stage's module is imported on first use."""
    if name not in STAGES and name in BUILTIN_STAGES:
        importlib.import_module(f"wikigr.retrieval.stages.{name}")
    if name not in STAGES:
        raise UsageError(f"unknown stage {name!r} (known: {', '.join(sorted({*STAGES, *BUILTIN_STAGES}))})")
    return STAGES[name]


def builtin_stages() -> dict[str, type[Stage]]:
    """Every stage by name: the built-ins (all loaded) and those registered from elsewhere."""
    for name in BUILTIN_STAGES:
        stage_class(name)
    return dict(STAGES)
