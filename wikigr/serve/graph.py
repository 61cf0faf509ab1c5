"""The graph the page draws of a pack, as nodes and edges: around passages, or the kind's own.

A pack of passages is drawn around passages or entities (:func:`neighbourhood`, below). A pack
without passages draws what its kind draws (:meth:`wikigr.pack.kind.PackKind.picture`: an OpenML
pack, its Kimball star): the store itself, what an answer drew on, or a member's neighbours.
:func:`picture` picks; :func:`graph_ask` reads the route's parameters.

Around each passage (chunk): its page (article), the entities it mentions (the rarest in the pack
first), the relations of those entities (named relations before co-occurrences), and the pages
that link to or from its page. Around an entity: the passages that mention it, their pages, and
its relations. A pack without an entity graph still shows its passages, pages and links.

Node ids are ``chunk:ID``, ``article:ID`` and ``entity:ID``; ``focus`` marks what was asked for.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wikigr.errors import PackNotFoundError, UsageError
from wikigr.pack.kind import pack_kind
from wikigr.pack.picture import Picture
from wikigr.pack.reader import PackStore
from wikigr.serve.http import int_param

if TYPE_CHECKING:
    from wikigr.pack.manifest import Manifest

MAX_NODES = 200
MAX_IDS = 50  # chunks and entities of one request
#: The route's parameters: chunk and entity repeatable, the others once.
PARAMS = ("chunk", "entity", "trace", "member", "measure", "limit")
PER_CHUNK = 8  # entities shown per passage
TEXT_CHARS = 280  # of a passage, in its node


@dataclass
class GraphAsk:
    """What a request asks to draw (``GET /api/v1/packs/{pack}/graph``)."""

    chunks: list[str]
    entities: list[str]
    trace: str | None = None  # the answer of this trace id: what it drew on
    member: str | None = None  # a node of a pack without passages, to explore around
    measure: str | None = None  # what the member's numbers are of
    limit: int = 60


def graph_ask(items: Iterable[tuple[str, str]]) -> GraphAsk:
    """The request's query parameters (name, value pairs), checked."""
    values: dict[str, list[str]] = {}
    for name, value in items:
        if name not in PARAMS:
            raise UsageError(f"unknown parameter '{name[:40]}' ({', '.join(PARAMS)})")
        values.setdefault(name, []).append(value)
    for name, given in values.items():
        if name not in ("chunk", "entity") and len(given) > 1:
            raise UsageError(f"{name} is given once")
    chunks, entities = values.get("chunk", []), values.get("entity", [])
    if len(chunks) + len(entities) > MAX_IDS:
        raise UsageError(f"at most {MAX_IDS} chunks and entities at once")
    limit = int_param(values.get("limit", ["60"])[0], "limit", 1, MAX_NODES)
    one = {name: values[name][0] for name in ("trace", "member", "measure") if name in values}
    return GraphAsk(chunks, entities, limit=limit, **one)


def picture(
    store: PackStore,
    manifest: Manifest,
    name: str,
    ask: GraphAsk,
    answer: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """What ``ask`` asks to draw of the pack ``name`` (its ``store`` and ``manifest``); ``answer``:
    the response of ``ask.trace`` (an answer's or a search's JSON, with its sources and trace)."""
    kind = pack_kind(store.kind)
    if kind.passages or ask.chunks or ask.entities:
        if ask.member is not None or ask.measure is not None:
            raise UsageError(f"member and measure are for packs without passages, not {kind.plural}")
        chunks = list(ask.chunks)
        answered = answer or {}
        for source in answered.get("sources") or answered.get("results") or []:  # an answer, a search
            if source.get("pack") == name and source.get("chunk_id") and source["chunk_id"] not in chunks:
                chunks.append(source["chunk_id"])
        return neighbourhood(store, chunks, ask.entities, ask.limit)
    return kind.picture(store.one_store(), manifest, answer, ask.member, ask.measure, ask.limit)


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= TEXT_CHARS else text[: TEXT_CHARS - 1] + "…"


def neighbourhood(
    store: PackStore, chunks: list[str], entities: list[str], limit: int = 60
) -> dict[str, Any]:
    """The graph around ``chunks`` and ``entities`` (ids in ``store``), at most ``limit`` nodes."""
    kind_of_pack = pack_kind(store.kind)
    if not kind_of_pack.passages:
        raise UsageError(f"{kind_of_pack.label} has no passage graph to explore")
    if not chunks and not entities:
        raise UsageError("name a chunk or an entity (?chunk=ID or ?entity=ID)")
    if not 1 <= limit <= MAX_NODES:
        raise UsageError(f"limit must be between 1 and {MAX_NODES}, not {limit}")
    graph = Picture(limit=limit)
    hits = store.chunk_details(dict.fromkeys(chunks, 0.0))
    missing = sorted(set(chunks) - {h.chunk_id for h in hits})
    if missing:
        raise PackNotFoundError(f"no chunk '{missing[0]}' in this pack")
    details = store.entity_details(entities)
    missing = sorted(set(entities) - set(details))
    if missing:
        raise PackNotFoundError(f"no entity '{missing[0]}' in this pack")

    for entity in entities:  # what was asked for comes first
        name, kind = details[entity]
        graph.node(f"entity:{entity}", "entity", label=name, type=kind, focus=True)
    for entity in entities:
        found = store.entity_chunks(entity, 6)
        hits += [h for h in store.chunk_details(dict.fromkeys(found, 0.0)) if h.chunk_id not in chunks]
    asked = set(chunks)
    for hit in hits:
        chunk_id = f"chunk:{hit.chunk_id}"
        label = hit.section_title or hit.article_title
        url = f"{hit.url}#{hit.anchor}" if hit.anchor and "#" not in hit.url else hit.url
        text = _excerpt(hit.text)
        graph.node(chunk_id, "chunk", label=label, text=text, url=url, focus=hit.chunk_id in asked)
        if graph.node(f"article:{hit.article_id}", "article", label=hit.article_title, url=hit.url):
            graph.edge(chunk_id, f"article:{hit.article_id}", "in")

    shown_chunks = [n.split(":", 1)[1] for n in graph.nodes if n.startswith("chunk:")]
    mentions = store.chunk_entities(shown_chunks, PER_CHUNK)
    names = store.entity_details(sorted({e for _, e in mentions}))
    for chunk, entity in mentions:
        name, kind = names.get(entity, (entity, ""))
        if graph.node(f"entity:{entity}", "entity", label=name, type=kind):
            graph.edge(f"chunk:{chunk}", f"entity:{entity}", "mentions")

    shown_entities = [n.split(":", 1)[1] for n in graph.nodes if n.startswith("entity:")]
    relations = store.entity_edges(shown_entities, 3 * limit) if shown_entities else []
    names = store.entity_details(
        sorted({x for a, b, _, _ in relations for x in (a, b)} - set(shown_entities))
    )
    for a, b, kind, weight in relations:
        for end in (a, b):
            if end in names:
                name, etype = names[end]
                graph.node(f"entity:{end}", "entity", label=name, type=etype)
        graph.edge(f"entity:{a}", f"entity:{b}", "relation", label=kind, weight=round(weight, 3))

    articles = [n.split(":", 1)[1] for n in graph.nodes if n.startswith("article:")]
    links = store.article_edges(articles, limit) if articles else []
    titles = store.article_titles(sorted({x for a, b, _ in links for x in (a, b)} - set(articles)))
    for a, b, count in links:
        for end in (a, b):
            if end in titles:
                title, url = titles[end]
                graph.node(f"article:{end}", "article", label=title, url=url)
        graph.edge(f"article:{a}", f"article:{b}", "links", weight=count)
    return graph.to_json(entity_graph=store.has_entities)
