"""Build the entity graph of a pack: the rows of ``Entity``, ``Fact``, ``HAS_ENTITY``, ``HAS_FACT``
and ``ENTITY_RELATION`` (bulk-loaded by the pack build with COPY).

Every chunk gets the cheap keyword extraction (title, names, quoted titles, code identifiers); the
skeleton — the top ``beta`` of the chunks by PageRank over their kNN graph — also gets the full
extraction: Claude when an LLM is given, else its language's offline extractor
(:func:`wikigr.graph.extract.extractor_for`: spaCy for English — named entities, noun phrases, SVO
facts — and natasha for Russian, whose names are then found in every Russian chunk). A document
in a language with neither gets no entities, and the report's ``note`` says how many documents
were skipped. Mentions are merged by normalised name. Relations:

- ``CO_OCCURS``: two named entities in the same chunk (weight: the number of such chunks);
- ``SYNONYM``: two entity names whose embeddings are at least ``synonym_threshold`` similar
  (weight: the similarity);
- a fact's predicate ("published by"): its subject and object entities (weight: the count).

A pack in shards builds the graph once, over all its chunks (``parts``: the shard of each chunk),
and each shard stores its part (:meth:`GraphTables.part`).
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from wikigr import lang
from wikigr.errors import BuildError, one_line
from wikigr.graph.extract import (
    CONCEPT,
    LINK,
    NATASHA,
    SPACY,
    TITLE,
    Extraction,
    FactTriple,
    Mention,
    SpacyExtractor,
    SpacyUnavailable,
    extractor_for,
    good_key,
    keyword_entities,
    load_spacy,
    normalize,
)
from wikigr.graph.russian import NatashaExtractor, inflected_mentions, load_natasha
from wikigr.graph.skeleton import skeleton

CO_OCCURS = "CO_OCCURS"
SYNONYM = "SYNONYM"


class Extractor(Protocol):
    name: str

    def extract(self, texts: Sequence[str]) -> list[Extraction]: ...


@dataclass
class GraphOptions:
    beta: float = 0.25  # share of chunks (by PageRank over the kNN graph) that get the full extraction
    knn: int = 10  # neighbours per chunk in the skeleton's kNN graph
    synonym_threshold: float = 0.9  # cosine similarity of two entity names for a SYNONYM edge
    max_entity_vectors: int = 20000  # linkable names embedded (most frequent first; see build_graph)
    max_synonym_entities: int = 1000  # of those, the names compared for synonyms
    max_cooccur: int = 12  # named entities per chunk that get CO_OCCURS edges (all pairs)
    full_extraction: bool = True  # False: keyword extraction only


@dataclass
class GraphReport:
    entities: int = 0
    facts: int = 0
    relations: int = 0
    mentions: int = 0  # HAS_ENTITY edges
    entity_vectors: int = 0  # entity names embedded (for linking questions to entities by meaning)
    skeleton_chunks: int = 0
    extractor: str = "keywords"
    llm_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: dict[str, float] = field(default_factory=dict)
    note: str = ""  # one line: documents skipped for want of an entity model, or spaCy missing

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


@dataclass
class GraphTables:
    """Columns for COPY, per table; ``parts``: per table (but ``entity``), the part of each row
    (the shard whose store holds it; see :meth:`part`)."""

    entity: dict[str, list[Any]]
    fact: dict[str, list[Any]]
    has_entity: dict[str, list[Any]]
    has_fact: dict[str, list[Any]]
    relation: dict[str, list[Any]]
    parts: dict[str, list[int]] = field(default_factory=dict)

    def part(self, index: int) -> GraphTables:
        """The rows of one part (a shard of a pack): its chunks' mentions and facts, the relations
        counted in its chunks (weighted by its chunks' counts, so that the weights summed over the
        parts are the whole graph's), the ``SYNONYM`` edges given to it (each edge is in one part:
        see :func:`build_graph`), and the entities these rows name."""

        def rows(table: str, columns: dict[str, list[Any]]) -> dict[str, list[Any]]:
            keep = [i for i, p in enumerate(self.parts[table]) if p == index]
            return {k: [v[i] for i in keep] for k, v in columns.items()}

        has_entity, relation = rows("has_entity", self.has_entity), rows("relation", self.relation)
        named = {*has_entity["to"], *relation["from"], *relation["to"]}
        keep = [i for i, key in enumerate(self.entity["id"]) if key in named]
        return GraphTables(
            entity={k: [v[i] for i in keep] for k, v in self.entity.items()},
            fact=rows("fact", self.fact),
            has_entity=has_entity,
            has_fact=rows("has_fact", self.has_fact),
            relation=relation,
        )


@dataclass
class ChunkRecord:
    id: str
    title: str  # the article's title
    text: str
    language: str = ""  # its article's language (a wikigr.lang code); "": detected (chunk_languages)


def _fact_id(chunk_id: str, fact: FactTriple, n: int) -> str:
    digest = hashlib.sha1(f"{chunk_id}\x00{n}\x00{fact.text}".encode()).hexdigest()[:20]
    return f"f:{digest}"


_LOWER_WORD = re.compile(r"(?<![\w.])[a-z][a-z]+(?![\w.])")


def _common_words(chunks: Sequence[ChunkRecord], per_chunk: list[list[Mention]]) -> set[str]:
    """One-word names that the corpus uses more often as ordinary lower-case words: a capital
    that only starts a sentence ("Published in 1991, ...") does not make a name. An article's
    title is always a name."""
    as_name: dict[str, int] = {}
    titles = {m.key for mentions in per_chunk for m in mentions if m.type == TITLE}
    for mentions in per_chunk:
        for m in mentions:
            if m.key not in titles and " " not in m.key and m.key.isalpha():
                as_name[m.key] = as_name.get(m.key, 0) + 1
    if not as_name:
        return set()
    as_word: dict[str, int] = {}
    for chunk in chunks:
        for word in set(_LOWER_WORD.findall(chunk.text)):
            if word in as_name:
                as_word[word] = as_word.get(word, 0) + 1
    return {k for k, n in as_name.items() if as_word.get(k, 0) >= n}


def _synonyms(keys: list[str], vectors: np.ndarray, threshold: float) -> list[tuple[str, str, float]]:
    if len(keys) < 2:
        return []
    pairs: list[tuple[str, str, float]] = []
    block = 2048
    for start in range(0, len(keys), block):
        sims = vectors[start : start + block] @ vectors.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            i = start + r
            if i < c:
                pairs.append((keys[i], keys[c], float(sims[r, c])))
    return pairs


def anchor_links(
    chunks: Sequence[tuple[str, str, str]], anchors: Sequence[tuple[str, str, str]]
) -> list[tuple[int, int, str]]:
    """Where each link of the pack starts and lands, for :func:`build_graph`.

    ``chunks``: (article id, section anchor, text) per chunk, in the order of the graph's chunks;
    ``anchors``: (source article id, target article id, "FRAGMENT\\tLINK TEXT"), as stored on
    ``LINKS_TO.anchors``. A link starts at the first chunk of the source article whose text holds
    the link's text, and lands on the first chunk of the target's section with that fragment (or
    of the target article). Returns (chunk linking, chunk linked to, link text).
    """
    landing: dict[tuple[str, str], int] = {}
    by_article: dict[str, list[int]] = {}
    for i, (article, anchor, _) in enumerate(chunks):
        landing.setdefault((article, anchor), i)
        landing.setdefault((article, ""), i)
        by_article.setdefault(article, []).append(i)
    found: list[tuple[int, int, str]] = []
    for source, target, anchor in anchors:
        fragment, _, text = anchor.partition("\t")
        start = next((i for i in by_article.get(source, []) if text and text in chunks[i][2]), None)
        lands = landing.get((target, fragment), landing.get((target, "")))
        if start is not None and lands is not None and start != lands:
            found.append((start, lands, text))
    return found


def chunk_languages(chunks: Sequence[ChunkRecord]) -> list[str]:
    """Each chunk's language: its record's, else its article's (:func:`wikigr.lang.detect` on the
    start of the text of the chunks that share its title)."""
    samples: dict[str, list[str]] = {}
    for chunk in chunks:
        if not chunk.language:
            sample = samples.setdefault(chunk.title, [])
            if sum(map(len, sample)) < lang.SAMPLE_CHARS:
                sample.append(chunk.text)
    detected = {title: lang.detect("\n".join(texts)) for title, texts in samples.items()}
    return [chunk.language or detected[chunk.title] for chunk in chunks]


def skipped_note(
    chunks: Sequence[ChunkRecord], languages: Sequence[str], models: Sequence[str | None]
) -> str:
    """The line that says which documents (articles, by title) got no entities, for want of an
    offline entity model for their language; "" when there are none."""
    skipped: dict[str, set[str]] = {}
    for chunk, code, model in zip(chunks, languages, models, strict=True):
        if model is None:
            skipped.setdefault(code, set()).add(chunk.title)
    if not skipped:
        return ""
    counts = sorted(((len(titles), code) for code, titles in skipped.items()), key=lambda c: (-c[0], c[1]))
    parts = [f"{n} {'document' if n == 1 else 'documents'} in {lang.name(code)}" for n, code in counts]
    listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
    return f"entity graph skipped for {listed} (no offline entity model)"


def load_models(languages: Iterable[str]) -> list[str]:
    """Load the offline entity extractors that documents in these languages (:mod:`wikigr.lang`
    codes) are read with, once per process, as :func:`build_graph` would: a build does it in a
    thread while it embeds. Returns the names of those loaded; spaCy not installed is left to the
    graph's note, a model that fails to load is a :class:`BuildError`."""
    needed = {extractor_for(code) for code in languages}
    loaded: list[str] = []
    for model, load in ((SPACY, load_spacy), (NATASHA, load_natasha)):
        if model not in needed:
            continue
        try:
            load()
        except SpacyUnavailable:
            continue
        except Exception as exc:  # whatever a third-party model raises
            raise BuildError(
                f"cannot load the entity extractor {model}: {type(exc).__name__}: {one_line(exc)}"
            ) from exc
        loaded.append(model)
    return loaded


def _extract(
    chunks: Sequence[ChunkRecord],
    chosen: Sequence[int],
    models: Sequence[str | None],
    given: Extractor | None,
    report: GraphReport,
) -> dict[int, Extraction]:
    """The full extraction of the ``chosen`` chunks, each by its language's extractor (``models``):
    ``given`` (when it reads every language, or for English: Claude or spaCy on Ray), spaCy or
    natasha; natasha is loaded only when a chunk needs it. Notes on ``report`` the extractors used
    and the chunks they read."""
    groups: dict[str, list[int]] = {}
    for i in chosen:
        model = models[i]
        if model is not None:
            groups.setdefault(model, []).append(i)
    found: dict[int, Extraction] = {}
    used: list[str] = []
    for model, indices in groups.items():
        extractor = given if given is not None and model in (given.name, SPACY) else None
        if extractor is None and model == SPACY:
            try:
                extractor = SpacyExtractor()
            except SpacyUnavailable as exc:
                report.note = "; ".join(filter(None, [str(exc), report.note]))
        elif extractor is None and model == NATASHA:
            extractor = NatashaExtractor()
        if extractor is None:
            continue
        used.append(extractor.name)
        found.update(zip(indices, extractor.extract([chunks[i].text for i in indices]), strict=True))
    report.extractor = "+".join(used) or report.extractor
    report.skeleton_chunks = len(found)
    return found


def build_graph(
    chunks: Sequence[ChunkRecord],
    vectors: np.ndarray,
    embed: Callable[[list[str]], np.ndarray] | None,
    options: GraphOptions | None = None,
    extractor: Extractor | None = None,
    links: Sequence[tuple[int, int, str]] = (),
    mentions: Sequence[Sequence[Sequence[str]] | None] | None = None,
    parts: Sequence[int] | None = None,
) -> tuple[GraphTables, GraphReport]:
    """The graph tables of ``chunks`` (with their embeddings ``vectors``).

    ``extractor`` runs on the skeleton; None uses spaCy when it is installed (else keywords only).
    ``links``: (chunk linking, chunk linked to, link text) — the link's text becomes an entity
    mentioned by both chunks, when it reads as a name (a capital letter or a code identifier).
    ``embed`` embeds the names of the *linkable* entities — named (not noun phrases) and either
    an article's title, or mentioned by two chunks or more (the ones a walk can go through or end
    at), or among the ``max_synonym_entities`` most frequent — for the ppr stage's embedding match
    and for synonym edges (None: neither). ``mentions``: per chunk, its keyword mentions as (name,
    type, key), when they were found before (on the workers of a distributed build; None for a
    chunk, or for all, finds them here): the merge below is the same either way. ``parts``: the
    part (shard) of each chunk, for :meth:`GraphTables.part` (None: one part, 0); the graph is the
    same whatever the parts. A ``SYNONYM`` edge goes to the first part that holds both its
    entities, else to the first part holding its first one (the other entity is stored there too,
    as a node no chunk of that part mentions).
    """
    options = options or GraphOptions()
    part_of = list(parts) if parts is not None else [0] * len(chunks)
    report = GraphReport()
    t0 = time.perf_counter()
    languages = chunk_languages(chunks)
    if getattr(extractor, "multilingual", False):  # Claude reads every language
        models: list[str | None] = [extractor.name] * len(chunks)  # type: ignore[union-attr]
    else:
        models = [extractor_for(code) for code in languages]
    report.note = skipped_note(chunks, languages, models)
    report.seconds["languages"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    found = mentions if mentions is not None else [None] * len(chunks)
    per_chunk: list[list[Mention]] = [
        keyword_entities(c.title, c.text) if m is None else [Mention(*row) for row in m]
        for c, m in zip(chunks, found, strict=True)
    ]
    per_chunk = [mentions if model else [] for mentions, model in zip(per_chunk, models, strict=True)]
    common = _common_words(chunks, per_chunk)
    per_chunk = [[m for m in mentions if m.key not in common] for mentions in per_chunk]
    title_keys = {m.key for mentions in per_chunk for m in mentions if m.type == TITLE}
    for source, target, text in links:
        if not any(c.isupper() for c in text) and not any(c in text for c in "._()"):
            continue  # "see here", "documentation": not a name
        mention = Mention(text, LINK)
        if not good_key(mention.key):
            continue
        for i in (source, target):
            if 0 <= i < len(per_chunk) and models[i] and all(m.key != mention.key for m in per_chunk[i]):
                per_chunk[i].append(mention)
    report.seconds["keywords"] = time.perf_counter() - t0

    facts_of: dict[int, list[FactTriple]] = {}
    if options.full_extraction and chunks:
        t0 = time.perf_counter()
        chosen = [i for i in skeleton(vectors, options.beta, options.knn).tolist() if models[i] is not None]
        report.seconds["skeleton"] = time.perf_counter() - t0
        t0 = time.perf_counter()
        extracted = _extract(chunks, chosen, models, extractor, report)
        for i, extraction in extracted.items():
            known = {m.key for m in per_chunk[i]}
            per_chunk[i].extend(m for m in extraction.mentions if m.key not in known)
            facts_of[i] = extraction.facts
        russian = [i for i, model in enumerate(models) if model == NATASHA]
        if russian and extracted:  # the Russian names found, wherever a chunk mentions them
            names = [m for i in russian if i in extracted for m in extracted[i].mentions]
            texts = [chunks[i].text for i in russian]
            for i, found_here in zip(russian, inflected_mentions(texts, names), strict=True):
                known = {m.key for m in per_chunk[i]}
                per_chunk[i].extend(m for m in found_here if m.key not in known)
        report.seconds["extract"] = time.perf_counter() - t0
        usage = getattr(extractor, "usage", None)
        if usage is not None:
            report.llm_calls = usage.calls
            report.input_tokens = usage.input_tokens
            report.output_tokens = usage.output_tokens

    t0 = time.perf_counter()
    entities: dict[str, tuple[str, str]] = {}  # key -> (name, type)
    frequency: dict[str, int] = {}
    has_entity: dict[str, list[Any]] = {"from": [], "to": []}
    relations: dict[tuple[str, str, str, int], float] = {}  # (from, to, type, part) -> weight
    fact_cols: dict[str, list[Any]] = {k: [] for k in ("id", "subject", "predicate", "object", "text")}
    has_fact: dict[str, list[Any]] = {"from": [], "to": []}
    row_parts: dict[str, list[int]] = {"has_entity": [], "has_fact": []}
    held: dict[str, set[int]] = {}  # entity -> the parts whose chunks mention it

    def entity(mention: Mention) -> str:
        if mention.key not in entities or (entities[mention.key][1] == CONCEPT and mention.type != CONCEPT):
            entities[mention.key] = (mention.name, mention.type)
        return mention.key

    for i, chunk in enumerate(chunks):
        part = part_of[i]
        keys = list(dict.fromkeys(entity(m) for m in per_chunk[i]))
        for n, fact in enumerate(facts_of.get(i, [])):
            subject, obj = normalize(fact.subject), normalize(fact.object)
            if not subject or not obj or subject == obj:
                continue
            for key, name in ((subject, fact.subject), (obj, fact.object)):
                if key not in keys:
                    keys.append(entity(Mention(name, CONCEPT, key)))
            relation = (subject, obj, fact.predicate, part)
            relations[relation] = relations.get(relation, 0.0) + 1.0
            fact_id = _fact_id(chunk.id, fact, n)
            for col, value in (
                ("id", fact_id),
                ("subject", fact.subject),
                ("predicate", fact.predicate),
                ("object", fact.object),
                ("text", fact.text),
            ):
                fact_cols[col].append(value)
            has_fact["from"].append(chunk.id)
            has_fact["to"].append(fact_id)
            row_parts["has_fact"].append(part)
        for key in keys:
            has_entity["from"].append(chunk.id)
            has_entity["to"].append(key)
            row_parts["has_entity"].append(part)
            held.setdefault(key, set()).add(part)
            frequency[key] = frequency.get(key, 0) + 1
        named = [k for k in keys if entities[k][1] != CONCEPT][: options.max_cooccur]
        for a_i, a in enumerate(named):
            for b in named[a_i + 1 :]:
                pair = (a, b, CO_OCCURS, part) if a < b else (b, a, CO_OCCURS, part)
                relations[pair] = relations.get(pair, 0.0) + 1.0
    report.seconds["merge"] = time.perf_counter() - t0

    vector_of: dict[str, np.ndarray] = {}
    if embed is not None:
        t0 = time.perf_counter()
        named = sorted(
            (k for k, (_, kind) in entities.items() if kind != CONCEPT), key=lambda k: (-frequency[k], k)
        )
        synonym_keys = named[: options.max_synonym_entities]
        frequent = set(synonym_keys)
        linkable = [k for k in named if k in frequent or frequency[k] >= 2 or k in title_keys]
        linkable = linkable[: options.max_entity_vectors]
        if linkable:
            name_vectors = np.asarray(embed([entities[k][0] for k in linkable]), dtype=np.float32)
            vector_of = dict(zip(linkable, name_vectors, strict=True))
            report.seconds["entity_vectors"] = time.perf_counter() - t0
            t0 = time.perf_counter()
            keys = [k for k in synonym_keys if k in vector_of]
            matrix = np.asarray([vector_of[k] for k in keys], dtype=np.float32)
            for a, b, sim in _synonyms(keys, matrix, options.synonym_threshold):
                relations[(a, b, SYNONYM, min(held[a] & held[b] or held[a]))] = sim
            report.seconds["synonyms"] = time.perf_counter() - t0
        report.entity_vectors = len(vector_of)

    tables = GraphTables(
        entity={
            "id": list(entities),
            "name": [v[0] for v in entities.values()],
            "type": [v[1] for v in entities.values()],
            "description": [""] * len(entities),
            "embedding": [vector_of.get(k) for k in entities],
        },
        fact=fact_cols,
        has_entity=has_entity,
        has_fact=has_fact,
        relation={
            "from": [r[0] for r in relations],
            "to": [r[1] for r in relations],
            "type": [r[2] for r in relations],
            "weight": list(relations.values()),
        },
        parts={**row_parts, "fact": row_parts["has_fact"], "relation": [r[3] for r in relations]},
    )
    report.entities = len(entities)
    report.facts = len(fact_cols["id"])
    report.relations = len({r[:3] for r in relations})
    report.mentions = len(has_entity["from"])
    return tables, report
