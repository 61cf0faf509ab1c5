"""The sentences an extractive answer may quote, scored (:mod:`wikigr.retrieval.short_answer` makes
the answer of them), and the answer's options. No LLM.

The sentences (and list items; see :mod:`wikigr.retrieval.sentences`) of the top
``sentence_passages`` passages are scored by a weighted sum of:

- ``dense``: the cosine similarity of the sentence's embedding to the question's (the pack's
  embedder; the sentences are embedded in one batch, at most ``max_sentences`` of them — the best
  by the other signals). Its weight is 0 by default, and then nothing is embedded: it cost most of
  the answer's time and did not make the answers better on the dev questions;
- ``keyword``: the share of the question's words (not its own words: "when", "who"...) the
  sentence holds, each weighted by its IDF in the pack (from its BM25 index);
- ``context``: the same share over the passage's title and section, which the sentence's pronouns
  refer to; ``joint``: over the sentence and its title together;
- ``entity``: the share of the question's entities the sentence names; ``bridge``: whether it (or
  its passage's title, its subject) names an entity that two of the top passages share and the
  question does not, by how specific the entity is — the link of a multi-hop question (the
  entities of a passage are the names and identifiers its text shows, and those of the pack's
  entity graph when the retrieval loaded it);
- ``atype``: whether it holds what the question asks for and does not name itself — a year or a
  month for "when", a number for "how many", else a name;
- ``novelty``: the share of its words the question does not use;
- ``lead``: it opens its passage (a Wikipedia-like passage's first sentence says what its subject
  is);
- ``rank``: 1 / the passage's rank; ``fragment``: the sentence is cut by the passage's start.

A factoid question's sentences are ranked with ``weights``, any other's (how to, what X does, a
list; and a question that asks for code, "which function ...") with ``open_weights``
(:meth:`AnswerOptions.weights_for`).

Words are read as keyword search reads them, in the question's language (``QueryState.language``:
a Russian question's words and a Russian sentence's meet stemmed, «таймаут» in «таймаута»). A
question in another language than the sentences shares only the words the two languages write
alike (names, identifiers, numbers: "BLAKE2", ``socket.settimeout``); its word signals count those.
"""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from wikigr import lang
from wikigr.graph.extract import CONCEPT, STOP_NAMES, keyword_entities, normalize
from wikigr.pack.analyze import Analyzer, language_stopwords
from wikigr.pack.keyword import KeywordIndex
from wikigr.question import DATE, NUMBER, Question
from wikigr.retrieval.across import Reading, reading
from wikigr.retrieval.candidates import CANDIDATE_FEATURES, DEFAULT_CANDIDATE_WEIGHTS, asked_tokens
from wikigr.retrieval.sentences import ITEM, TEXT, Unit, split_units
from wikigr.retrieval.spans import names_in
from wikigr.retrieval.stage import Candidate, QueryState, Skip
from wikigr.retrieval.stages.ppr import loaded_entity_graph

FEATURES = (
    "dense",
    "keyword",
    "joint",
    "context",
    "entity",
    "bridge",
    "atype",
    "novelty",
    "lead",
    "rank",
    "fragment",
)
DEFAULT_WEIGHTS = {  # fitted on the dev halves (bench/answers.py --tune: answers_tuning.json)
    "dense": 0.0,
    "keyword": -0.332,
    "joint": 4.3,
    "context": -1.634,
    "entity": -0.741,
    "bridge": 2.139,
    "atype": 0.826,
    "novelty": -0.98,
    "lead": 0.655,
    "rank": 0.84,
    "fragment": -0.704,
}
DEFAULT_OPEN_WEIGHTS = {  # an open question's ("how do I ...?"): fitted on the open dev questions
    "dense": 0.0,
    "keyword": 0.963,
    "joint": 3.567,
    "context": 0.771,
    "entity": 0.748,
    "bridge": 2.31,
    "atype": 0.13,
    "novelty": -0.804,
    "lead": 0.109,
    "rank": 0.997,
    "fragment": 0.201,
}
API_FEATURES = ("passage", "named", "described", "sentence", "page", "dense")
DEFAULT_API_WEIGHTS = {  # a how-to answer's candidate APIs' (wikigr.retrieval.api_rank): chosen on
    "passage": 2.0,  # the dev developer questions (both sets), issue 40's six rows and CoNaLa's dev half
    "named": 1.5,
    "described": 0.5,
    "sentence": 0.5,
    "page": 1.5,
    "dense": 0.5,  # how near its definition is, among the pack's nearest definitions (``defined_top``)
}
POOL = 40  # the best sentences the selection considers
EMBED_WORDS = 24  # a sentence's words that are embedded: most sentences whole, and 3x cheaper than 40
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_YEAR = re.compile(
    r"\b(1\d{3}|20\d{2})s?\b|\b(January|February|March|April|May|June|July|August|September|"
    r"October|November|December)\b"
)


@dataclass
class AnswerOptions:
    """How the short answer is made (the ``synthesize`` stage's options of the same names)."""

    answer_words: int = 60  # the answer's length, about
    item_words: int = 25  # an enumeration item's sentence, at most
    sentence_passages: int = 5  # the top passages whose sentences are considered
    max_sentences: int = 12  # sentences embedded per question, at most (the tuning may pick 8 to 16)
    min_relative: float = 0.0  # none scoring below this share of the way from the worst to the best
    same_source: float = 1.0  # lost by a sentence of a passage already quoted
    follow: float = 0.0  # gained by a sentence that continues those chosen (see follow())
    max_share: float = 0.1  # the answer's words, at most, as a share of the passages' it draws from
    min_words: int = 25  # ... but the budget is at least this
    weights: dict[str, float] = field(default_factory=dict)  # by signal; those not set: DEFAULT_WEIGHTS
    open_weights: dict[str, float] = field(default_factory=dict)  # an open question's: DEFAULT_OPEN_WEIGHTS
    candidates: bool = True  # a factoid question: the answer is built around its best candidates
    code_names: bool = True  # ... and "which function ...?" has code identifiers among them
    candidate_weights: dict[str, float] = field(default_factory=dict)  # not set: DEFAULT_CANDIDATE_WEIGHTS
    window_words: int = 25  # the best candidate's part of its sentence, at most
    next_window_words: int = 10  # ... the next candidates'
    max_candidates: int = 1  # candidates quoted, at most
    listed: int = 12  # candidates named after those quoted ("Also possible: ..."), at most (or the budget)
    listed_when_sure: int = 3  # ... when the first answers the question outright (one_hop, a definition)
    candidate_margin: float = 5.0  # none scoring more than this below the best
    one_hop: float = 0.9  # a candidate in a sentence holding this share of the question comes first
    api_first: bool = True  # a how-to question: the API that does the job leads (wikigr.retrieval.api_lead)
    lead_margin: float = 1.0  # ... among the sentences scoring within this of the best
    look_pages: int = 3  # ... the top pages whose passage most like the question the answer may quote too
    api_weights: dict[str, float] = field(default_factory=dict)  # ... its APIs' (DEFAULT_API_WEIGHTS)
    also_margin: float = 1.5  # ... those named after it ("Also: ..."): within this of the best by merit
    also_with_page: bool = False  # ... by their score, their page's rank counted (as before 2026-11-29)
    defined_top: int = 50  # ... the pack's definitions nearest the question whose cosine counts
    defined_passages: int = 3  # ... the passages of the nearest of them the answer may quote too
    defined_margin: float = 0.08  # ... those within this cosine of the nearest
    defined_spread: float = 0.1  # ... an API's ``dense``: 1 for the nearest, 0 at this much less

    def __post_init__(self) -> None:
        for name, given in (("weights", self.weights), ("open_weights", self.open_weights)):
            unknown = sorted(set(given) - set(FEATURES))
            if unknown:
                raise ValueError(f"unknown {name} {unknown} (the signals: {', '.join(FEATURES)})")
        unknown = sorted(set(self.api_weights) - set(API_FEATURES))
        if unknown:
            raise ValueError(f"unknown api_weights {unknown} (the signals: {', '.join(API_FEATURES)})")
        self.api_weights = {**DEFAULT_API_WEIGHTS, **self.api_weights}
        if min(self.defined_top, self.defined_passages) < 0 or not 0 <= self.defined_margin <= 2:
            raise ValueError("defined_top and defined_passages must be at least 0, defined_margin 0 to 2")
        if not 0 < self.defined_spread <= 2:
            raise ValueError("defined_spread must be above 0, at most 2")
        unknown = sorted(set(self.candidate_weights) - set(CANDIDATE_FEATURES))
        if unknown:
            raise ValueError(
                f"unknown candidate_weights {unknown} (the signals: {', '.join(CANDIDATE_FEATURES)})"
            )
        self.weights = {**DEFAULT_WEIGHTS, **self.weights}
        self.open_weights = {**DEFAULT_OPEN_WEIGHTS, **self.open_weights}
        self.candidate_weights = {**DEFAULT_CANDIDATE_WEIGHTS, **self.candidate_weights}
        if min(self.window_words, self.next_window_words, self.max_candidates) < 1:
            raise ValueError("window_words, next_window_words and max_candidates must be at least 1")
        if min(self.listed, self.listed_when_sure) < 0:
            raise ValueError("listed and listed_when_sure must be at least 0")
        if min(self.answer_words, self.item_words, self.sentence_passages, self.max_sentences) < 1:
            raise ValueError(
                "answer_words, item_words, sentence_passages and max_sentences must be at least 1"
            )
        if not 0.0 <= self.min_relative <= 1.0 or not 0.0 < self.max_share <= 1.0:
            raise ValueError("min_relative must be between 0 and 1, max_share above 0 and at most 1")

    def weights_for(self, question: str) -> dict[str, float]:
        """The sentence weights for ``question``: ``weights`` for a factoid question (who, when,
        how many, which X...), ``open_weights`` for any other (how to, what X does, why) and for
        one that asks for code ("which function ...": a question on documentation)."""
        return self.open_weights if open_question(question) else self.weights


def open_question(question: str) -> bool:
    """Whether ``question`` is ranked as an open one (:meth:`AnswerOptions.weights_for`): no
    factoid question, or one that asks for code."""
    return factoid_kind(question) is None or Question.of(question).asks_code


_HOW_TO = re.compile(  # "How do I count how many times ...?": the task's words may count things
    r"^\s*(?:how\s+(?:do|does|can|could|should|would|to)\b|what(?:'s|\s+is)\s+the\s+"
    r"(?:best|right|correct|proper|recommended|easiest|simplest)\s+way\b)"
    # in Russian: "как" (or "каким образом") and a verb's infinitive, "Как (мне) установить ...?";
    # "какой лучший способ ..."
    r"|^\s*(?:как|каким\s+образом)\s+(?:(?:мне|можно|лучше|правильно|проще)\s+)*[а-яё]+(?:ть|ти|чь)(?:ся|сь)?\b"
    r"|^\s*как(?:ой|им)\s+(?:лучший|лучшим|правильный|правильным|простой|простым|самый\s+простой)\s+способ",
    re.I,
)
_ASKING = re.compile(
    r"\?\s*$|^\s*(?:who|whom|whose|what|when|where|which|why|how|is|are|was|were|do|does|did|can|"
    r"could|should|will|would|has|have|had)\b",
    re.I,
)


def asks_how(question: str) -> bool:
    """Whether ``question`` asks how to do something in so many words ("How do I ...?", "What is
    the best way to ...?", "Как установить ...?")."""
    return bool(_HOW_TO.search(question))


def how_to(question: str) -> bool:
    """Whether ``question`` asks how to do something: "How do I ...?", "How can I ...?", "What is
    the best way to ...?", or an instruction ("sort a list by key"), which is no question."""
    return asks_how(question) or not _ASKING.search(question)


def factoid_kind(question: str) -> str | None:
    """What the answer reads a factoid ``question`` to ask for (:attr:`Question.answer_kind`), and
    None for a question that asks how to do something, whatever words its task holds: "How do I
    count how many times each item occurs?" asks for the API that counts, not a number. (On a
    document pack a count question is no aggregate: there are no tools that count.)"""
    return None if asks_how(question) else Question.of(question).answer_kind


@dataclass
class Asked:
    """What the selection needs to know of the question and the passages."""

    weights: dict[str, float]  # the question's words, by IDF
    names: set[str]  # the entities the question names
    specific: dict[str, float]  # how specific each name of the passages is (0-1)
    vocabulary: Vocabulary
    articles: dict[int, tuple[str, str]]  # each source's article id and title
    question: str = ""


@dataclass
class Scored:
    """A sentence of a passage, with its signals and score."""

    unit: Unit
    source: int  # the passage's number in the sources (1-based)
    features: dict[str, float]
    asked: Asked
    tokens: frozenset[str] = frozenset()  # its words and its passage's title's
    names: frozenset[str] = frozenset()  # the entities it (or its passage's title) names
    passage_names: frozenset[str] = frozenset()  # the entities its passage names
    score: float = 0.0
    norm: str = ""  # its text, normalised
    words: frozenset[str] = frozenset()  # its normalised words (to tell near-duplicates)


class Vocabulary:
    """Tokens and their IDF: the pack's BM25 index when it has one, else the passages at hand. Text
    is read in ``language`` (the question's), as the index reads it."""

    def __init__(self, index: KeywordIndex | None, passages: list[str], language: str | None = None) -> None:
        self.index = index
        self._tokenize: Callable[[str], list[str]]
        if index is None:
            self._tokenize = _analyzer(language).tokens
        else:
            self._tokenize = functools.partial(index.tokens, language=language)
        self._local: dict[str, int] = {}
        self._tokens: dict[str, list[str]] = {}
        if index is None:
            for text in passages:
                for token in set(self.tokens(text)):
                    self._local[token] = self._local.get(token, 0) + 1
        self._docs = len(index) if index is not None else len(passages)
        self._idf: dict[str, float] = {}
        self.max_idf = math.log(1 + (self._docs - 0.5) / 1.5)  # a word in one chunk

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text`` (remembered: a word or a name is asked for many times)."""
        known = self._tokens.get(text)
        if known is None:
            known = self._tokens[text] = self._tokenize(text)
        return known

    def idf(self, token: str) -> float:
        if token not in self._idf:
            df = self.index.document_frequency(token) if self.index is not None else self._local.get(token, 0)
            self._idf[token] = math.log(1 + (self._docs - df + 0.5) / (df + 0.5))
        return self._idf[token]


def _analyzer(language: str | None) -> Analyzer:
    """How text in ``language`` is read without a keyword index: entity stop names dropped, and
    the language's own stopwords and stemmer where it has one (English: none)."""
    stemmer = lang.stemmer_name(language) if language else None
    own = frozenset(language_stopwords(language)) if language and stemmer else frozenset()
    return Analyzer(frozenset(STOP_NAMES) | own, stemmer, lang.language_script(language or lang.ENGLISH))


def share(question: dict[str, float], tokens: set[str]) -> float:
    total = sum(question.values())
    return sum(w for t, w in question.items() if t in tokens) / total if total else 0.0


def _has_type(kind: str | None, text: str, question: str, asked: str) -> bool:
    """Whether ``text`` holds something of ``kind`` that the question does not."""
    if kind == DATE:
        return any(m.group(0) not in question for m in _YEAR.finditer(text))
    if kind == NUMBER:
        return any(n not in question for n in _NUMBER.findall(text))
    return any(not _named(key, asked) for _, key in names_in(text)[:20])


def _named(key: str, text: str) -> bool:
    return f" {key} " in text


def _entities(state: QueryState, passages: list[Candidate]) -> tuple[set[str], list[set[str]]]:
    """The question's entity keys and each passage's: the names and identifiers of the text, and
    the pack's entity graph's where the retrieval loaded it (the graph profiles and, on passage
    corpora, auto)."""
    question = {m.key for m in keyword_entities("", state.question)} - STOP_NAMES
    per_passage = [{m.key for m in keyword_entities(c.article_title, c.text)} for c in passages]
    graph = loaded_entity_graph(state.ctx)
    if graph is not None:
        question |= {graph.entity_keys[e] for e in graph.link(state.question, concepts=False)}
        for keys, c in zip(per_passage, passages, strict=True):
            row = graph.chunk_index.get(c.chunk_id)
            if row is not None:
                keys |= {
                    graph.entity_keys[e]
                    for e in graph.chunk_entities(row)
                    if graph.entity_types[e] != CONCEPT
                }
    return question, per_passage


def _bridges(
    question: set[str],
    question_text: str,
    per_passage: list[set[str]],
    articles: list[str],
    vocabulary: Vocabulary,
) -> dict[str, float]:
    """Entities named by passages of two different articles that the question does not name, by
    how specific they are (the IDF of their rarest word over that of a word in one chunk)."""
    seen: dict[str, set[str]] = {}
    for keys, article in zip(per_passage, articles, strict=True):
        for key in keys:
            seen.setdefault(key, set()).add(article)
    asked = f" {normalize(question_text)} "
    bridges: dict[str, float] = {}
    for key, where in seen.items():
        if len(where) < 2 or key in question or len(key) < 3 or key in STOP_NAMES or _named(key, asked):
            continue
        idf = max((vocabulary.idf(t) for t in vocabulary.tokens(key)), default=0.0)
        bridges[key] = min(1.0, idf / vocabulary.max_idf)
    return bridges


def read_weights(found: Reading, vocabulary: Vocabulary) -> dict[str, float]:
    """The weights of the words a question in another language is read as (:func:`wikigr.retrieval.
    across.read`), as a question's own words are weighed (by IDF): of each of its words, the
    alternatives the pack has share the word's weight ("установить" is read as *install* and *set*;
    the pack has *set*: it has the word's whole weight; "сокета" as *socket* and *sockets*: half
    each), so that no word counts twice."""
    weights: dict[str, float] = {}
    for group in found.groups:
        idf = {t: vocabulary.idf(t) for t in group}
        present = {t: w for t, w in group.items() if idf[t] <= vocabulary.max_idf}  # in a chunk at least
        share = sum(present.values())
        for t, w in present.items():
            weights[t] = max(weights.get(t, 0.0), w / share * idf[t])
    return weights


def sentence_features(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> list[Scored]:
    """Every sentence of the top passages that an answer may quote, with its signals (all but
    ``dense``: see :func:`add_dense`), in passage order."""
    top = passages[: options.sentence_passages]
    try:
        index: KeywordIndex | None = state.ctx.keyword_index()
    except Skip:
        index = None
    vocabulary = Vocabulary(index, [c.text for c in top], state.language)
    found = reading(state) if state.across else None
    if found is not None:  # a question in another language: the documents' words it is read as
        question_weights = read_weights(found, vocabulary)
    else:
        question_weights = {t: vocabulary.idf(t) for t in asked_tokens(vocabulary, state.question)}
    question_entities, per_passage = _entities(state, top)
    bridges = _bridges(
        question_entities, state.question, per_passage, [c.article_id for c in top], vocabulary
    )
    asked = f" {normalize(state.question)} "
    kind = factoid_kind(state.question)
    question_tokens = set(question_weights)
    specific = {
        key: min(
            1.0, max((vocabulary.idf(t) for t in vocabulary.tokens(key)), default=0.0) / vocabulary.max_idf
        )
        for keys in per_passage
        for key in keys
        if key not in question_entities
    }
    articles = {n: (c.article_id, c.article_title) for n, c in enumerate(top, 1)}
    shared = Asked(question_weights, question_entities, specific, vocabulary, articles, state.question)
    scored: list[Scored] = []
    seen: set[str] = set()
    for rank, candidate in enumerate(top, 1):
        context = set(vocabulary.tokens(f"{candidate.article_title} {candidate.section_title}"))
        context_share = share(question_weights, context)
        passage_names = per_passage[rank - 1]
        title = f" {normalize(candidate.article_title)} "
        title_names = {k for k in passage_names if _named(k, title)}
        for unit in split_units(candidate.text):
            if unit.kind not in (TEXT, ITEM) or unit.words < 3:
                continue
            key = normalize(unit.text)
            if key in seen:  # the same sentence in an overlapping chunk
                continue
            seen.add(key)
            text = f" {key} "
            tokens = set(vocabulary.tokens(unit.text))
            names = title_names | {k for k in passage_names if _named(k, text)}
            features = {
                "dense": 0.0,
                "keyword": share(question_weights, tokens),
                "joint": share(question_weights, tokens | context),
                "context": context_share,
                "entity": (
                    sum(1 for k in question_entities if _named(k, text)) / len(question_entities)
                    if question_entities
                    else 0.0
                ),
                "bridge": max((bridges.get(k, 0.0) for k in names), default=0.0),
                "atype": float(_has_type(kind, unit.text, state.question, asked)),
                "novelty": len(tokens - question_tokens) / len(tokens) if tokens else 0.0,
                "lead": float(unit.index == 0 and not unit.fragment),
                "rank": 1.0 / rank,
                "fragment": float(unit.fragment),
            }
            scored.append(
                Scored(
                    unit,
                    rank,
                    features,
                    shared,
                    frozenset(tokens | context),
                    frozenset(names),
                    frozenset(passage_names),
                    norm=key,
                    words=frozenset(key.split()),
                )
            )
    return scored


def preselect(scored: list[Scored], weights: dict[str, float], limit: int) -> list[Scored]:
    """The ``limit`` sentences that score best without ``dense`` (those worth embedding)."""
    cheap = [sum(weights[f] * s.features[f] for f in FEATURES if f != "dense") for s in scored]
    order = np.argsort(-np.asarray(cheap), kind="stable")[:limit]
    return [scored[i] for i in sorted(order)]


def add_dense(state: QueryState, scored: list[Scored], embed_words: int = EMBED_WORDS) -> None:
    """Set ``dense``: the sentences' embeddings (their first ``embed_words`` words, in one batch)
    against the question's."""
    if scored:
        vectors = state.ctx.embedder.embed([" ".join(s.unit.text.split()[:embed_words]) for s in scored])
        for s, similarity in zip(scored, vectors @ state.vector(), strict=True):
            s.features["dense"] = float(similarity)


def rank(scored: list[Scored], weights: dict[str, float]) -> list[Scored]:
    """``scored`` with their scores set, best first."""
    for s in scored:
        s.score = sum(weights[f] * s.features[f] for f in FEATURES)
    return sorted(scored, key=lambda s: (-s.score, s.source, s.unit.index))


def score_sentences(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> list[Scored]:
    """The sentences of the top passages an answer may quote, scored (see the module's docstring),
    best first."""
    scored = sentence_features(state, passages, options)
    weights = options.weights_for(state.question)
    if weights["dense"]:
        scored = preselect(scored, weights, options.max_sentences)
        add_dense(state, scored)
    return rank(scored, weights)
