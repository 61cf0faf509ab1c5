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

then the best ``embedded`` by that sum (0 by default: see below) gain ``dense`` × how well
"name: description" matches the question (the pack's embedder, in one batch, their first
``EMBED_WORDS`` words) and are ranked again among themselves. The weights were chosen on the dev
developer questions (bench/data/developer_questions.json) and the six rows of issue 40; there,
embedding the best three's descriptions put the expected API in the first sentence for two more
of the 46 questions but cost 35 ms more p50 a question on 2 cores (bench/developer_questions.py's
arm ``api_embedded``), so none is embedded by default.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from wikigr.retrieval.api_lead import VERSION_NOTE, advised_against, api_of, discouraged, named_for
from wikigr.retrieval.sentence_scores import DEFAULT_API_WEIGHTS, Scored, share

SUMMED = ("passage", "named", "described", "sentence", "page")  # dense: the best ``embedded``'s
EMBED_WORDS = 16  # of "name: description" embedded: a description's first sentence, about
_SPECIAL = re.compile(r"(?:^|\.)__\w+__$")
Similarity = Callable[[Sequence[str]], np.ndarray]  # texts -> their cosines to the question


@dataclass
class Closeness:
    """How close the passages (and, when asked, texts) are to the question."""

    passages: Mapping[int, float] = field(default_factory=dict)  # source number -> cosine
    texts: Similarity | None = None  # the pack's embedder against the question


@dataclass
class Api:
    """An API a how-to answer may lead with: its definition's sentence, signals and score."""

    name: str  # as its definition shows it ("csv.DictReader")
    scored: Scored  # the sentence that defines it
    features: dict[str, float]
    score: float = 0.0

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
    scored: list[Scored],
    near: Closeness | None = None,
    weights: Mapping[str, float] | None = None,
    embedded: int = 0,
) -> list[Api]:
    """The APIs the ``scored`` sentences (best first) define, best first (see the module's
    docstring); ``near``: how close the passages and texts are to the question (None: not
    known, 0); the best ``embedded`` are ranked again with their descriptions embedded."""
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
        }
        apis.append(Api(name, s, features, sum(w[f] * features[f] for f in SUMMED)))
    apis.sort(key=lambda a: (-a.score, a.scored.source, a.scored.unit.index))
    if embedded > 0 and near.texts is not None and w["dense"] and len(apis) > 1:
        head = apis[:embedded]
        texts = [" ".join(f"{a.name}: {a.description}".split()[:EMBED_WORDS]) for a in head]
        for a, cosine in zip(head, near.texts(texts), strict=True):
            a.features["dense"] = float(cosine)
            a.score += w["dense"] * a.features["dense"]
        apis = sorted(head, key=lambda a: -a.score) + apis[embedded:]
    return apis
