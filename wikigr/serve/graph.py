"""The neighbourhood of passages or entities in a pack's graph, as nodes and edges for a picture.

Around each passage (chunk): its page (article), the entities it mentions (the rarest in the pack
first), the relations of those entities (named relations before co-occurrences), and the pages
that link to or from its page. Around an entity: the passages that mention it, their pages, and
its relations. A pack without an entity graph still shows its passages, pages and links.

Node ids are ``chunk:ID``, ``article:ID`` and ``entity:ID``; ``focus`` marks what was asked for.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from wikigr.errors import PackNotFoundError, UsageError
from wikigr.pack.kind import pack_kind
from wikigr.pack.reader import PackStore

MAX_NODES = 200
PER_CHUNK = 8  # entities shown per passage
TEXT_CHARS = 280  # of a passage, in its node


@dataclass
class Graph:
    nodes: dict[str, dict[str, Any]] = field(default_factory=dict)
    edges: dict[tuple[str, str, str], dict[str, Any]] = field(default_factory=dict)
    limit: int = 60
    truncated: bool = False

    def node(self, node_id: str, kind: str, **data: Any) -> bool:
        """Add a node unless the picture is full; whether it is (now) in the picture."""
        if node_id in self.nodes:
            self.nodes[node_id].update({k: v for k, v in data.items() if v})
            return True
        if len(self.nodes) >= self.limit:
            self.truncated = True
            return False
        self.nodes[node_id] = {"id": node_id, "kind": kind, **data}
        return True

    def edge(self, source: str, target: str, kind: str, **data: Any) -> None:
        if source in self.nodes and target in self.nodes and (source, target, kind) not in self.edges:
            self.edges[(source, target, kind)] = {"source": source, "target": target, "kind": kind, **data}

    def to_json(self, **extra: Any) -> dict[str, Any]:
        return {
            "nodes": list(self.nodes.values()),
            "edges": list(self.edges.values()),
            "truncated": self.truncated,
            **extra,
        }


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
    graph = Graph(limit=limit)
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
