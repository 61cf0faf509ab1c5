"""The entity extraction of Russian documents, offline, with natasha (its models are in the wheel).

:class:`NatashaExtractor` gives what :class:`wikigr.graph.extract.SpacyExtractor` gives for
English: named entities (natasha's ``PER``/``LOC``/``ORG`` spans as ``person``/``place``/
``organization``) and subject–verb–object facts from the dependency parse. A name is natasha's
normal form of its span, in the nominative ("Кеном Томпсоном" is "Кен Томпсон", "Лаборатории
Белла" is "Лаборатория Белла"), so that the inflected mentions of one name meet in one entity.

natasha is the *full* extraction of the skeleton's Russian chunks, as spaCy is of the English
ones; :func:`inflected_mentions` is the cheap pass of every Russian chunk: the names found, in
whatever case a chunk writes them (by their words' stems).

Only the sentences that hold a name are morphologically tagged and parsed (that is most of the
cost: the recogniser alone reads ~40,000 characters a second). natasha's models load in ~1.3 s,
once per process (:func:`load_natasha`), and only when a Russian document is present.

pymorphy2 (natasha's dictionary) finds its dictionary through ``pkg_resources`` and copies its
analyser units with ``inspect.getargspec``, both gone from this project's Python; the vocabulary
here is natasha's, given the dictionary's path and copying its units itself.
"""

from __future__ import annotations

import copy
import functools
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from wikigr.graph.extract import (
    CONCEPT,
    CYRILLIC,
    Extraction,
    FactTriple,
    Mention,
    good_key,
    normalize,
    russian_stems,
)

TYPES = {"PER": "person", "LOC": "place", "ORG": "organization"}
_SUBJECTS = frozenset({"nsubj", "nsubj:pass"})
_OBJECTS = frozenset({"obj", "iobj", "obl"})
_MODIFIERS = frozenset({"amod", "compound", "flat:name", "nmod"})


@dataclass(frozen=True)
class Natasha:
    """natasha's loaded parts."""

    segmenter: Any
    vocab: Any
    ner: Any
    morph: Any
    syntax: Any


_natasha_lock = threading.Lock()


def load_natasha() -> Natasha:
    """natasha's segmenter, dictionary, recogniser, tagger and parser; loaded once per process (a
    second caller waits for a load in progress, as :func:`wikigr.graph.extract.load_spacy`)."""
    with _natasha_lock:
        return _load_natasha()


@functools.cache
def _load_natasha() -> Natasha:
    import natasha
    import pymorphy2  # type: ignore[import-untyped]
    import pymorphy2_dicts_ru  # type: ignore[import-untyped]
    from natasha.morph.vocab import MorphForm

    def init(self: Any) -> None:
        pymorphy2.MorphAnalyzer.__init__(self, path=pymorphy2_dicts_ru.get_path(), result_type=MorphForm)

    def bound_unit(self: Any, unit: Any) -> Any:
        unit = copy.copy(unit)
        unit.init(self)
        return unit

    vocab_type = type("MorphVocab", (natasha.MorphVocab,), {"__init__": init, "_bound_unit": bound_unit})
    embedding = natasha.NewsEmbedding()
    return Natasha(
        segmenter=natasha.Segmenter(),
        vocab=vocab_type(),
        ner=natasha.NewsNERTagger(embedding),
        morph=natasha.NewsMorphTagger(embedding),
        syntax=natasha.NewsSyntaxParser(embedding),
    )


class NatashaExtractor:
    """Named entities (normalised) and subject–verb–object facts of Russian texts, with natasha."""

    name = "natasha"

    def __init__(self, parts: Natasha | None = None) -> None:
        self.parts = parts if parts is not None else load_natasha()

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        import natasha

        p = self.parts
        docs = []
        for text in texts:
            doc = natasha.Doc(text)
            doc.segment(p.segmenter)
            doc.tag_ner(p.ner)
            docs.append(doc)
        named = [sent for doc in docs for sent in doc.sents if sent.spans]
        words = [[token.text for token in sent.tokens] for sent in named]
        parsed = zip(named, p.morph.map(words), p.syntax.map(words), strict=True)
        for n, (sent, tags, tree) in enumerate(parsed):
            for token, tag, node in zip(sent.tokens, tags.tokens, tree.tokens, strict=True):
                token.pos, token.feats = tag.pos, tag.feats
                token.id, token.head_id, token.rel = f"{n}_{node.id}", f"{n}_{node.head_id}", node.rel
        return [self._one(doc) for doc in docs]

    def _one(self, doc: Any) -> Extraction:
        out = Extraction()
        seen: set[str] = set()
        for span in doc.spans:
            if span.type not in TYPES or any(t.pos is None for t in span.tokens):
                continue  # a span across sentences: not tagged
            span.normalize(self.parts.vocab)
            mention = Mention(" ".join(span.normal.split()), TYPES[span.type])
            if good_key(mention.key, 2) and mention.key not in seen:
                seen.add(mention.key)
                out.mentions.append(mention)
        out.facts = [fact for sent in doc.sents if sent.spans for fact in self._svo(sent)]
        return out

    def _svo(self, sent: Any) -> Iterable[FactTriple]:
        """Facts where a name is the subject of a verb: the verb's first object (or prepositional
        object: "работал в Bell Labs" is "работать в"), as a name or a lemmatised noun phrase."""
        by_id = {t.id: t for t in sent.tokens}
        children: dict[str, list[Any]] = {}
        for token in sent.tokens:
            children.setdefault(token.head_id, []).append(token)
        names = {t.id: span for span in sent.spans for t in span.tokens if span.normal}
        for token in sent.tokens:
            verb = by_id.get(token.head_id)
            if token.rel not in _SUBJECTS or token.id not in names or verb is None or verb.pos != "VERB":
                continue
            objects = [
                c
                for c in children.get(verb.id, [])
                if c.rel in _OBJECTS and (c.id in names or c.pos in {"NOUN", "PROPN"})
            ]
            if not objects:
                continue
            obj = objects[0]
            preposition = [c.text.lower() for c in children.get(obj.id, []) if c.rel == "case"]
            predicate = " ".join([self._lemma(verb), *preposition[:1]])
            subject = " ".join(names[token.id].normal.split())
            yield FactTriple(subject, predicate, self._phrase(obj, names, children), sent.text.strip())

    def _phrase(self, token: Any, names: dict[str, Any], children: dict[str, list[Any]]) -> str:
        """The name a token belongs to, else its noun phrase: the lemmas of the words that modify
        it ahead of it ("операционная система") and its own."""
        if token.id in names:
            return " ".join(names[token.id].normal.split())
        before = [c for c in children.get(token.id, []) if c.rel in _MODIFIERS and c.start < token.start]
        return " ".join(self._lemma(t) for t in [*before, token])

    def _lemma(self, token: Any) -> str:
        token.lemmatize(self.parts.vocab)
        return str(token.lemma)


_WORD = re.compile(r"[\w.+#()'’-]+")
_SENTENCE_END = frozenset(".!?:")


def inflected_mentions(texts: Sequence[str], names: Iterable[Mention]) -> list[list[Mention]]:
    """For each text, the Russian ``names`` (not noun phrases) it mentions in any grammatical case:
    runs of words whose Snowball stems are a name's ("Кеном Томпсоном", "Лаборатории Белла"),
    starting with a capital, not inside a longer one; a one-word name not at the start of a
    sentence (where any word has a capital)."""
    index: dict[str, Mention] = {}
    for mention in names:
        if mention.type != CONCEPT and CYRILLIC.search(mention.key):
            index.setdefault(" ".join(russian_stems(mention.key.split())), mention)
    longest = max((key.count(" ") + 1 for key in index), default=0)
    found: list[list[Mention]] = []
    for text in texts:
        tokens: list[str] = []
        capital: list[bool] = []  # written with a capital: the start of a name
        named: list[bool] = []  # ...and not the first word of a sentence: a name on its own
        for match in _WORD.finditer(text):
            word = match.group(0)
            opens = text[: match.start()].rstrip()[-1:] in _SENTENCE_END or not text[: match.start()].strip()
            for n, part in enumerate(normalize(word).split()):
                tokens.append(part)
                capital.append(n == 0 and word[:1].isupper())
                named.append(n == 0 and word[:1].isupper() and not opens)
        stems = russian_stems(tokens) if longest else []
        here: dict[str, Mention] = {}
        taken: list[tuple[int, int]] = []
        for n in range(min(longest, len(stems)), 0, -1):
            for start in range(len(stems) - n + 1):
                if not (capital[start] if n > 1 else named[start]):
                    continue
                hit = index.get(" ".join(stems[start : start + n]))
                if hit is not None and not any(a <= start and start + n <= b for a, b in taken):
                    here.setdefault(hit.key, hit)
                    taken.append((start, start + n))
        found.append(list(here.values()))
    return found
