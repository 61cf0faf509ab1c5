"""The short extractive answer: the few sentences of the retrieved passages that answer the
question, each citing its passage as ``[n]``, about ``answer_words`` words in all. No LLM.

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

The answer is made of them in one of three ways (:func:`answer_from`): a factoid question
("who", "when", "how many", "which X"...) leads with the part of the sentence that holds its best
answer candidate, then those of the next candidates (:func:`compose`; the candidates and their
signals: :mod:`wikigr.retrieval.candidates`); a comparison ("which ..., A or B?") gets a sentence
on each of the two things (:func:`compare`); anything else gets the best sentences. There, the
best sentence comes first (see :func:`select`); each next one gains ``follow`` × how well it
continues the answer (the question's words still missing, an entity the quoted passages introduce)
and loses ``same_source`` if its passage is quoted already; sentences are added while the word
budget lasts and their score stays above ``min_relative`` of the range. An enumeration (a global
question) gets one item per source page: its best sentence. A factoid question's sentences are
ranked with ``weights``, any other's (how to, what X does, a list; and a question that asks for
code, "which function ...") with ``open_weights``
(:meth:`AnswerOptions.weights_for`). The weights were fitted, and the options chosen, on the first
half of MuSiQue-100, HotpotQA-100 (``weights``) and the Python docs questions (``open_weights``)
(``bench/answers.py --tune``); ``bench/answers.py`` reports the other half.
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Container
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from wikigr.graph.extract import CONCEPT, STOP_NAMES, keyword_entities, normalize, title_name
from wikigr.question import DATE, NUMBER, Question
from wikigr.retrieval.api_names import api_names, same_api, shown_name
from wikigr.retrieval.candidates import (
    CANDIDATE_FEATURES,
    DEFAULT_CANDIDATE_WEIGHTS,
    AnswerCandidate,
    asked_tokens,
    candidates,
    rank_candidates,
    window,
)
from wikigr.retrieval.sentences import ITEM, TEXT, Unit, split_units
from wikigr.retrieval.spans import names_in
from wikigr.retrieval.stage import Candidate, QueryState, Skip
from wikigr.retrieval.stages.ppr import loaded_entity_graph

if TYPE_CHECKING:
    from wikigr.pack.keyword import KeywordIndex

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
NO_PASSAGE = "No passage in this pack matches the question."
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
POOL = 40  # the best sentences the selection considers
EMBED_WORDS = 24  # a sentence's words that are embedded: most sentences whole, and 3x cheaper than 40
_NUMBER = re.compile(r"\b\d[\d,.]*\b")
_YEAR = re.compile(
    r"\b(1\d{3}|20\d{2})s?\b|\b(January|February|March|April|May|June|July|August|September|"
    r"October|November|December)\b"
)
_END_PUNCT = re.compile(r"([.!?]+)([\"'”’)\]]*)$")


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

    def __post_init__(self) -> None:
        for name, given in (("weights", self.weights), ("open_weights", self.open_weights)):
            unknown = sorted(set(given) - set(FEATURES))
            if unknown:
                raise ValueError(f"unknown {name} {unknown} (the signals: {', '.join(FEATURES)})")
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
    asked = Question.of(question)
    return asked.answer_kind is None or asked.asks_code


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
    """Tokens and their IDF: the pack's BM25 index when it has one, else the passages at hand."""

    def __init__(self, index: KeywordIndex | None, passages: list[str]) -> None:
        self.index = index
        from wikigr.pack.keyword import tokenize

        self._tokenize = index.tokens if index is not None else (lambda t: tokenize(t, STOP_NAMES))
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


def _share(question: dict[str, float], tokens: set[str]) -> float:
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


def sentence_features(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> list[Scored]:
    """Every sentence of the top passages that an answer may quote, with its signals (all but
    ``dense``: see :func:`add_dense`), in passage order."""
    top = passages[: options.sentence_passages]
    try:
        index: KeywordIndex | None = state.ctx.keyword_index()
    except Skip:
        index = None
    vocabulary = Vocabulary(index, [c.text for c in top])
    question_weights = {t: vocabulary.idf(t) for t in asked_tokens(vocabulary, state.question)}
    question_entities, per_passage = _entities(state, top)
    bridges = _bridges(
        question_entities, state.question, per_passage, [c.article_id for c in top], vocabulary
    )
    asked = f" {normalize(state.question)} "
    kind = state.asked.answer_kind
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
        context_share = _share(question_weights, context)
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
                "keyword": _share(question_weights, tokens),
                "joint": _share(question_weights, tokens | context),
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


def clip(text: str, words: int) -> str:
    """``text`` cut to at most ``words`` words (marked with …)."""
    parts = text.split()
    if len(parts) <= words:
        return text
    return " ".join(parts[:words]).rstrip(",;:") + " …"


# a page's footnote mark after a word: "all cased characters [4] in", "... the default [2]." (not
# code: "[0] * 3", "returns [1, 2]")
_FOOTNOTE = re.compile(r"(?<=[A-Za-z]) \[\d{1,3}\](?=\s+[a-z]|[.,;:!?)]|$)")


def cite(text: str, source: int) -> str:
    """``text`` as a cited sentence: ``[source]`` before its final stop ("... in seconds [1]."),
    before the last mark of a title's own ("the FAQ entry How do I create a list? [2]."); a
    sentence that ends without one (a list item, one that introduced code with ":") gets a full
    stop, one cut with "…" keeps it. The page's own footnote marks ("[4]") are left out: they
    would read as citations of the answer's sources."""
    text = _FOOTNOTE.sub("", text)
    if text.endswith("…"):
        return f"{text} [{source}]"
    body = text.rstrip(":;,").rstrip()
    match = _END_PUNCT.search(body)
    if match:
        stops, after = match.group(1), match.group(2)
        kept = stops[:-1] if stops.endswith(".") and len(set(stops)) > 1 else ""  # "list?." : "list? [2]."
        return f"{body[: match.start()]}{kept} [{source}]{stops[len(kept) :]}{after}"
    return f"{body} [{source}]."


def _similar(x: frozenset[str], y: frozenset[str]) -> bool:
    return bool(x and y) and len(x & y) / min(len(x), len(y)) >= 0.8


def follow(s: Scored, chosen: list[Scored]) -> float:
    """How well ``s`` continues the sentences chosen so far (0-1): the share of the question's
    words they leave unanswered that it holds, and whether it (or its passage's title) names an
    entity that their passages introduce — the next hop of a multi-hop question."""
    return _follow(s, *_continuation(s.asked, chosen))


def _continuation(asked: Asked, chosen: list[Scored]) -> tuple[dict[str, float], frozenset[str]]:
    """What :func:`follow` needs of the sentences chosen so far: the question's words they leave
    unanswered (with their weights), and the names their passages introduce."""
    covered = frozenset().union(*(c.tokens for c in chosen))
    residual = {t: w for t, w in asked.weights.items() if t not in covered}
    links = frozenset().union(*(c.passage_names for c in chosen)) - asked.names
    return residual, links


def _follow(s: Scored, residual: dict[str, float], links: frozenset[str]) -> float:
    link = max((s.asked.specific.get(n, 0.0) for n in s.names & links), default=0.0)
    return (_share(residual, set(s.tokens)) + link) / 2


_VERSION_NOTE = re.compile(
    r"(?:New in version|Changed in version|Deprecated since version|Availability:)"
)  # "Changed in version 3.6: Returned rows are now of type OrderedDict", "Availability: Unix."
# (not under a signature: "tempfile.mktemp(...): Deprecated since version 2.3: Use mkstemp()" defines it)
_ASKS_VERSION = re.compile(  # "When was asyncio.timeout introduced?", "Is os.fork available on Windows?"
    r"\b(?:versions?|added|changed|deprecated|introduced|availab\w*|appear\w*|platforms?|since|when"
    r"|windows|unix|linux|macos|posix|\d+\.\d+)\b",
    re.I,
)


def select(scored: list[Scored], options: AnswerOptions, passage_words: int = 0) -> list[Scored]:
    """The best sentences within the word budget (the best one, cut to it if it is longer). After
    the first, a sentence gains ``follow`` × :func:`follow` and, if its passage is quoted already,
    loses ``same_source``; none scoring below ``min_relative`` of the way from the lowest score to
    the best is taken. The budget is
    ``answer_words``, and at most ``max_share`` of the ``passage_words`` the sentences come from
    (but at least ``min_words``)."""
    chosen: list[Scored] = []
    if not scored:
        return chosen
    room = budget(options, passage_words)
    best, lowest = scored[0].score, min(s.score for s in scored)
    floor = lowest + options.min_relative * (best - lowest)
    # best first: the answer takes a few of them, that read on their own if there are any, and
    # that are no version note unless the question asks about versions
    notes = not _ASKS_VERSION.search(scored[0].asked.question)
    left = [
        s for s in scored[:POOL] if s.unit.readable and not (notes and _VERSION_NOTE.match(s.unit.text))
    ] or list(scored[:POOL])
    ranked: list[tuple[float, Scored]] = []
    while left:
        if not ranked:  # the values change only when a sentence is chosen
            ranked = _ranked(left, chosen, options)
        worth, pick = ranked.pop(0)
        left.remove(pick)
        if chosen and worth < floor:
            break
        if any(_similar(pick.words, c.words) or pick.unit.text in c.unit.rows for c in chosen):
            continue  # said already (a row: with the sentence that points at its table)
        its_rows = [c for c in chosen if c.unit.text in pick.unit.rows]  # quoted one by one
        kept = [c for c in chosen if c not in its_rows]
        if chosen and sum(_cost(c) for c in kept) + _cost(pick) > room:
            continue  # (the rows it would replace stay)
        if its_rows:  # the sentence and its table take the place of the first of its rows
            kept.insert(chosen.index(its_rows[0]), pick)
        else:
            kept.append(pick)
        chosen = kept
        ranked = []
        if sum(_cost(c) for c in chosen) >= room:
            break
    return chosen


def _cost(s: Scored) -> int:
    """The words quoting ``s`` takes: its own, and the name of the definition it describes."""
    return s.unit.words + bool(s.unit.owner_name)


def _ranked(left: list[Scored], chosen: list[Scored], options: AnswerOptions) -> list[tuple[float, Scored]]:
    """``left`` with the value of choosing each next, best first (equal values in their order, as
    max() would pick): its score, plus ``follow`` × :func:`follow`, minus ``same_source`` if its
    passage is quoted already."""
    if not chosen:
        values = [(s.score, s) for s in left]
    else:
        used = {c.source for c in chosen}
        continuations: dict[int, tuple[dict[str, float], frozenset[str]]] = {}
        values = []
        for s in left:
            gain = 0.0
            if options.follow:
                key = id(s.asked)  # one Asked per question: computed once per step
                if key not in continuations:
                    continuations[key] = _continuation(s.asked, chosen)
                gain = options.follow * _follow(s, *continuations[key])
            values.append((s.score + gain - options.same_source * (s.source in used), s))
    return sorted(values, key=lambda pair: -pair[0])


def budget(options: AnswerOptions, passage_words: int) -> int:
    """The answer's words, at most: ``answer_words``, and at most ``max_share`` of the
    ``passage_words`` it draws from (but at least ``min_words``)."""
    if not passage_words:
        return options.answer_words
    return min(options.answer_words, max(options.min_words, round(options.max_share * passage_words)))


def answer_candidates(question: str, scored: list[Scored], options: AnswerOptions) -> list[AnswerCandidate]:
    """The candidate answers of a factoid question in its ``scored`` sentences, best first (none
    for a question that is not a factoid one)."""
    kind = Question.of(question).answer_kind
    if kind is None or not options.candidates or not scored:
        return []
    asked = scored[0].asked
    found = candidates(
        question, kind, scored, asked.vocabulary, asked.articles, len(asked.articles), options.code_names
    )
    return rank_candidates(found, options.candidate_weights, options.one_hop)


ALSO = "Also possible:"  # leads the list of the candidates named after the quoted ones


def asserted(answer: str) -> str:
    """``answer`` without its list of other candidates ("Also possible: ..."): what it states."""
    return answer.split(f" {ALSO} ", 1)[0] if not answer.startswith(ALSO) else ""


def compose(found: list[AnswerCandidate], options: AnswerOptions, passage_words: int) -> str:
    """The answer built around the best candidates: the part of its sentence that holds the best
    one, then those of the next ones (each cited) while the budget lasts and they score within
    ``candidate_margin`` of the best, at most ``max_candidates``; then, at most ``listed`` more
    candidates by name alone, each cited, in what is left of the budget ("Also possible: Studio 33
    [4], Codemasters [5]."): those of the type asked for (a date for "when"...), at most
    ``listed_when_sure`` when the best answers the question outright (a sentence holding the
    question, a definition: :func:`rank_candidates`). A quoted part that spells a code candidate
    otherwise (a module its page is about, where the sentence says "JSON" or "this module") is led
    by it ("json: The JSON produced by this module ...")."""
    room = budget(options, passage_words)
    sure = bool(found) and found[0].answered
    listed_at_most = min(options.listed, options.listed_when_sure) if sure else options.listed
    parts: list[str] = []
    listed: list[str] = []
    shown = ""
    keys: list[str] = []  # the candidates named so far ("re.search": not "search()" again)
    used = 0  # the answer's words so far
    for c in found[: options.max_candidates + listed_at_most]:
        if parts and c.score < found[0].score - options.candidate_margin:
            break
        if f" {c.key} " in shown or any(same_api(c.key, k) for k in keys):  # already quoted or listed
            continue
        left = room - used
        o = c.best
        if len(parts) < options.max_candidates:
            if parts and left < 6:
                break
            width = options.next_window_words if parts else options.window_words
            text = window(o.scored.unit.text, o.start, o.end, min(width, left))
            unit = o.scored.unit
            if unit.rows and len(unit.text.split()) < min(width, left):  # with the table it points at
                text = clip(unit.shown, min(width, left))
            quoted = as_quoted(o.scored, text)
            if c.coded and o.scored.unit.text[o.start : o.end] != c.text:  # a module: "JSON", "this module"
                quoted = f"{c.text}: {quoted}"
            parts.append(cite(quoted, o.scored.source))
        else:
            if not c.features.get("type"):  # named only if it is the kind of thing asked for
                continue
            text = c.text
            cost = len(text.split()) + 1 + (0 if listed else len(ALSO.split()))
            if cost > left:
                continue  # a shorter one may fit
            listed.append(f"{text} [{o.scored.source}]")
        used = len(" ".join(parts + listed).split()) + (len(ALSO.split()) if listed else 0)
        shown += f" {normalize(text)} "
        keys.append(c.key)
        if used >= room:
            break
    if listed:
        parts.append(f"{ALSO} {', '.join(listed)}.")
    return " ".join(parts)


COMPARATIVES = frozenset(
    """first last earlier earliest later latest older oldest younger youngest larger largest bigger
    biggest smaller smallest taller tallest higher highest longer longest shorter shortest more most
    less least better best""".split()  # noqa: SIM905
)  # how a comparison asks, never what its sentences say


def compare(things: tuple[str, str], scored: list[Scored], options: AnswerOptions, passage_words: int) -> str:
    """The answer to a question that compares two things: for each, the sentence that names it
    (or of a passage about it) holding most of what the question asks of them (its words but the
    two names: "founded first"), in half the budget, cited; "" when neither is found."""
    each = max(6, budget(options, passage_words) // 2)
    asked = scored[0].asked
    names = [set(asked.vocabulary.tokens(name)) for name in things]
    relation = {
        t: w for t, w in asked.weights.items() if not any(t in n for n in names) and t not in COMPARATIVES
    }
    parts: list[str] = []
    for name in things:
        key = normalize(name)
        words = set(key.split())
        about = [
            s for s in scored if words <= s.words or normalize(title_name(asked.articles[s.source][1])) == key
        ]
        if not about:
            continue
        best = max(about, key=lambda s: (_share(relation, set(s.tokens)), s.score))
        text = best.unit.text
        tokens = asked.vocabulary.tokens
        at = next((m for m in re.finditer(r"\S+", text) if relation.keys() & set(tokens(m.group()))), None)
        # the part of a long sentence around what is asked ("founded in 1930")
        text = window(text, at.start(), at.end(), each) if at else clip(text, each)
        text = as_quoted(best, text)
        if not words <= set(normalize(text).split()):
            text = f"{name}: {text}"
        parts.append(cite(text, best.source))
    return " ".join(parts)


def definition_first(question: str, scored: list[Scored]) -> list[Scored]:
    """``scored`` with, first, the best sentence that shows the definition of an API the question
    names ("str.join(iterable): Return a string which is the concatenation ..." for "What does
    str.join do?"); as it is when there is none."""
    names = api_names(question)
    if names:
        for n, s in enumerate(scored):
            shown = shown_name(s.unit.text)
            if shown and any(same_api(shown, name) for name in names):  # first, with the best score
                return [dataclasses.replace(s, score=scored[0].score), *scored[:n], *scored[n + 1 :]]
    return scored


def answer_from(question: str, scored: list[Scored], options: AnswerOptions, passage_words: int) -> str:
    """The short answer made of the ``scored`` sentences (best first): one sentence per thing a
    comparison names; for a factoid question, the parts of sentences that hold its best candidates
    (:func:`compose`); else the best sentences (:func:`select`), the definition of an API the
    question names first (:func:`definition_first`). "" when there is no sentence."""
    things = Question.of(question).compared if options.candidates else None
    if things is not None and scored:
        answer = compare(things, scored, options, passage_words)
        if answer:
            return answer
    found = answer_candidates(question, scored, options)
    if found:
        return compose(found, options, passage_words)
    chosen = select(definition_first(question, scored), options, passage_words)
    quoted: set[str] = set()  # the definitions quoted so far
    parts = []
    for s in chosen:
        parts.append(cite(as_quoted(s, clip(s.unit.shown, options.answer_words), quoted), s.source))
        quoted.add(s.unit.label or s.unit.owner)
    return " ".join(parts)


def as_quoted(s: Scored, text: str, quoted: Container[str] = ()) -> str:
    """``text`` (of ``s``) as quoted: marked "… " where the passage's start cuts its sentence
    ("… or socket's handle."), which the reader would otherwise take for a whole one; and led by
    the name of the definition it goes on describing, unless one of ``quoted`` is that definition
    ("os.environ: … This mapping is captured the first time the os module is imported")."""
    if s.unit.owner_name and s.unit.owner not in quoted:
        return f"{s.unit.owner_name}: … {text.removeprefix('… ')}"
    return f"… {text}" if s.unit.fragment and not text.startswith("…") else text


def short_answer(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> str:
    """The short answer to ``state.question`` from ``passages`` (numbered from 1)."""
    if not passages:
        return NO_PASSAGE
    passage_words = sum(len(c.text.split()) for c in passages[: options.sentence_passages])
    answer = answer_from(state.question, score_sentences(state, passages, options), options, passage_words)
    if not answer:  # passages without a sentence: their opening words
        return cite(clip(" ".join(passages[0].text.split()), options.answer_words), 1)
    return answer


def where(candidate: Candidate) -> str:
    if candidate.section_title and candidate.section_title != candidate.article_title:
        return f"{candidate.article_title} › {candidate.section_title}"
    return candidate.article_title


def enumeration(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> str:
    """A list for a global question: one item per source page, its best sentence, cited."""
    if not passages:
        return NO_PASSAGE
    wide = dataclasses.replace(options, sentence_passages=len(passages))
    by_source: dict[int, list[Scored]] = {}
    for scored in sentence_features(state, passages, wide):
        by_source.setdefault(scored.source, []).append(scored)
    weights = options.weights_for(state.question)
    if weights["dense"]:  # the few worth embedding, from each source
        each = max(2, options.max_sentences // max(1, len(by_source)))
        kept = [s for group in by_source.values() for s in preselect(group, weights, each)]
        add_dense(state, kept)
    else:  # nothing to embed (the default): every sentence competes
        kept = [s for group in by_source.values() for s in group]
    best: dict[int, Scored] = {}
    for scored in rank(kept, weights):
        best.setdefault(scored.source, scored)
    items: list[str] = []
    seen: set[str] = set()
    for n, c in enumerate(passages, 1):
        if c.article_id in seen:
            continue
        seen.add(c.article_id)
        top = best.get(n)
        if top is not None:
            text = as_quoted(top, clip(top.unit.shown, options.item_words))
        else:
            text = clip(" ".join(c.text.split()), options.item_words)
        items.append(f"- {where(c)} [{n}]: {text}")
    return "\n".join(items)
