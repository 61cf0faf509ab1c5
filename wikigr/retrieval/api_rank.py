"""The APIs a how-to answer may lead with, ranked as a senior engineer would weigh them.

The candidates are every definition in the passages the answer reads — a signature line and the
sentence that describes it (``csv.DictReader(f, ...)``: "Create an object that operates like a
regular reader but maps the information in each row to a dict ...") — not only those among the
best-scoring sentences: the best sentence of each API, none the documents advise against
(:func:`wikigr.retrieval.api_lead.discouraged`), none whose description is a version note, no
special method (``date.__format__``: a caller writes ``format(d)``); one that shares no word with
the question (in its name or its description) may be named after the lead, never lead
(:attr:`Api.on_task`). Each is scored (:func:`rank_apis`) by a weighted sum of:

- ``passage``: how close its passage is to the question: the cosine of the passage's stored
  vector (the pack's, read with the passages' ids: no model call);
- ``named``: the share of its name that spells the question's words
  (:func:`wikigr.retrieval.api_lead.named_for`: ``collections.Counter`` for "count");
- ``described``: the share of the question's words (by IDF) its description holds;
- ``sentence``: its sentence's score among the answer's sentences, over the best's;
- ``page``: 1 / the rank of its page among the passages' pages;
- ``dense``: how near its definition is to the question, by meaning, among the pack's definitions
  (:mod:`wikigr.pack.definitions`: "name: what it does", embedded at build time; no model call):
  1 for the nearest, down to 0 at ``defined_spread`` less cosine (0 for the others, and in a pack
  without definitions).

The weights were chosen on the dev developer questions (bench/data/developer_questions.json and
developer_questions_dev2.json), the six rows of issue 40 and the dev half of CoNaLa (bench/answers.py).

The page's rank is what makes ``collections.Counter`` (the first page's) lead over ``list.count``
(whose definition is nearer the question, on the fifth of the passages' pages) for "count how many
times each item occurs". It says where the documents answer, not how well an API does the task:
every API a page defines gets it alike. So the runners-up named after the lead ("Also: ...": another
page's way to do it) are those within ``also_margin`` of the best by :attr:`Api.merit`, the score
without the page's rank: an API is not left out of them for being on another page than the lead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from wikigr.retrieval.api_lead import VERSION_NOTE, advised_against, api_of, discouraged, named_for
from wikigr.retrieval.sentence_scores import DEFAULT_API_WEIGHTS, Scored, share

SUMMED = ("passage", "named", "described", "sentence", "page", "dense")
_SPECIAL = re.compile(r"(?:^|\.)__\w+__$")


@dataclass
class Closeness:
    """How close the passages and the pack's nearest definitions are to the question."""

    passages: Mapping[int, float] = field(default_factory=dict)  # source number -> cosine
    definitions: Mapping[str, float] = field(default_factory=dict)  # an API's name -> cosine


@dataclass
class Api:
    """An API a how-to answer may lead with: its definition's sentence, signals and score."""

    name: str  # as its definition shows it ("csv.DictReader")
    scored: Scored  # the sentence that defines it
    features: dict[str, float]
    score: float = 0.0
    merit: float = 0.0  # its score without its page's rank: how well it does the task itself

    @property
    def on_task(self) -> bool:
        """Whether it shares a word with the question, in its name or its description: only such
        an API leads (the others may be named after it)."""
        return bool(self.features["named"] or self.features["described"])

    @property
    def description(self) -> str:
        """What its definition's sentence says of it, without the signature."""
        return description(self.scored)


def description(s: Scored) -> str:
    """What a definition's sentence says, without its signature ("Create an object ...")."""
    return s.unit.text.split(": ", 1)[1] if s.unit.label and ": " in s.unit.text else s.unit.text


def definitions(scored: list[Scored]) -> list[Scored]:
    """The sentences of ``scored`` (best first) that define an API: the best one of each API, none
    the sentences advise against, none whose description is a version note or unreadable, and no
    special method (``date.__format__``: a class implements it, a caller uses ``format()``)
    unless the question writes one."""
    bad = discouraged(scored)
    special = "__" in scored[0].asked.question if scored else False
    seen: set[str] = set()
    found: list[Scored] = []
    for s in scored:
        name = api_of(s) if s.unit.label else ""
        if not name or name in seen or advised_against(name, bad) or (_SPECIAL.search(name) and not special):
            continue
        seen.add(name)
        if not VERSION_NOTE.match(description(s)) and s.unit.readable:
            found.append(s)
    return found


def rank_apis(
    scored: list[Scored], near: Closeness | None = None, weights: Mapping[str, float] | None = None
) -> list[Api]:
    """The APIs the ``scored`` sentences (best first) define, best first (see the module's
    docstring); ``near``: how close the passages and the definitions are to the question (None:
    not known, 0)."""
    if not scored:
        return []
    near = near or Closeness()
    w = {**DEFAULT_API_WEIGHTS, **(weights or {})}
    best = max(scored[0].score, 1e-9)
    asked = scored[0].asked
    pages = list(dict.fromkeys(asked.articles[n][0] for n in sorted(asked.articles)))
    apis: list[Api] = []
    for s in definitions(scored):
        name = api_of(s)
        features = {
            "passage": near.passages.get(s.source, 0.0),
            "named": named_for(name, asked.question),
            "described": share(asked.weights, set(asked.vocabulary.tokens(description(s)))),
            "sentence": s.score / best,
            "page": 1.0 / (pages.index(asked.articles[s.source][0]) + 1),
            "dense": near.definitions.get(name, 0.0),
        }
        score = sum(w[f] * features[f] for f in SUMMED)
        apis.append(Api(name, s, features, score, score - w["page"] * features["page"]))
    apis.sort(key=lambda a: (-a.score, a.scored.source, a.scored.unit.index))
    return apis
