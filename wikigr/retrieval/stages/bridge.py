"""bridge: the next hop of a multi-hop question, from the passages ranked first.

A multi-hop question names its first passage; the second is what the first one points at. From
each of the top ``seeds`` passages (weighted by its score relative to the best), two kinds of
link lead on:

- **title links**: a seed's text names another page's title ("... was born in Young, New South
  Wales" leads to the page *Young, New South Wales*). Titles are matched as whole words; a
  one-word title only where the seed writes it capitalised. Needs no entity graph.
- **entity links**: a seed and another passage both mention an entity that the question does not
  name and that at most ``max_df`` passages mention (the bridge entity is new to the question, and
  specific). Needs the pack's entity graph; skipped with a reason when there is none.

A passage reached this way gains ``title`` (or ``entity``) × the seed's weight × its cosine
similarity to the question (squared for entity links, which are looser), so among the many
passages a seed leads to, those about what the question asks rise. Passages not yet ranked are
added. The trace lists how many passages each kind reached and the titles that led on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from wikigr.graph.extract import CYRILLIC, russian_stems
from wikigr.retrieval.stage import Candidate, Context, QueryState, Skip, Stage, register
from wikigr.retrieval.stages.ppr import pack_entity_graph

if TYPE_CHECKING:
    from wikigr.graph.index import EntityGraph

_PARENS = re.compile(r"\([^)]*\)")
_WORD = re.compile(r"\w+")
MAX_TITLE_WORDS = 8


def _title_keys(title: str) -> set[str]:
    """The names a title goes by: without its parenthesised qualifier, and without what follows a
    comma ("Young, New South Wales" is also "Young")."""
    bare = _PARENS.sub(" ", title)
    keys = {" ".join(_WORD.findall(bare.lower()))}
    if "," in bare:
        keys.add(" ".join(_WORD.findall(bare.split(",", 1)[0].lower())))
    return {k for k in keys if len(k) >= 3 and len(k.split()) <= MAX_TITLE_WORDS}


class TitleIndex:
    """Title name -> the chunks of the articles with that title; loaded once per agent. A title in
    Russian is also found by its words' stems, in whatever case a text writes it."""

    def __init__(self, chunk_titles: list[tuple[str, str, str]]) -> None:
        self.chunks: dict[str, list[str]] = {}  # title key -> chunk ids
        self.stems: dict[str, str] = {}  # the stems of a Russian title key -> the key
        self.article: dict[str, str] = {}  # chunk id -> article id
        for chunk_id, article_id, title in chunk_titles:
            self.article[chunk_id] = article_id
            for key in _title_keys(title):
                self.chunks.setdefault(key, []).append(chunk_id)
                if CYRILLIC.search(key):
                    self.stems.setdefault(" ".join(russian_stems(key.split())), key)

    def named_in(self, text: str) -> dict[str, str]:
        """The chunks of every article whose title ``text`` names: chunk id -> the title key."""
        words = _WORD.findall(text)
        lower = [w.lower() for w in words]
        stems = russian_stems(lower) if self.stems and CYRILLIC.search(text) else None
        found: dict[str, str] = {}
        for n in range(MAX_TITLE_WORDS, 0, -1):  # the longest title first
            for start in range(len(lower) - n + 1):
                key = " ".join(lower[start : start + n])
                if key not in self.chunks and stems is not None:  # "о Калифорнийском университете"
                    key = self.stems.get(" ".join(stems[start : start + n]), key)
                hits = self.chunks.get(key)
                if hits is None or (n == 1 and not words[start][:1].isupper()):
                    continue
                for chunk_id in hits:
                    found.setdefault(chunk_id, key)
        return found


def title_index(ctx: Context) -> TitleIndex:
    index = ctx.cache.get("title_index")
    if index is None:
        index = TitleIndex(ctx.store.chunk_articles())
        ctx.cache["title_index"] = index
    assert isinstance(index, TitleIndex)
    return index


@dataclass
class BridgeOptions:
    seeds: int = 3  # the top passages to follow links from
    title: float = 0.5  # gain of a passage whose title a seed names (× seed weight × similarity)
    entity: float = 0.6  # gain of a passage sharing a specific entity with a seed (× similarity²)
    max_df: int = 100  # entities mentioned by more passages than this are not followed
    reach: int = 200  # passages reached through entities that are scored, at most
    added: int = 30  # passages not ranked yet that join the ranking, at most (the best gains)

    def __post_init__(self) -> None:
        if self.seeds < 1 or self.reach < 1 or self.added < 0 or self.max_df < 2:
            raise ValueError("seeds and reach must be at least 1, added at least 0, max_df at least 2")
        if self.title < 0 or self.entity < 0:
            raise ValueError("title and entity must not be negative")


@register
class BridgeStage(Stage):
    name = "bridge"
    summary = "follow the top passages' title and entity links to the next hop"
    Options = BridgeOptions

    def run(self, state: QueryState) -> None:
        o = self.options
        if not state.candidates:
            raise Skip("no passages to follow links from")
        top_score = state.candidates[0].score
        if top_score <= 0:
            raise Skip("the ranking so far has no positive score")
        seeds = state.candidates[: o.seeds]
        weights = {c.chunk_id: max(0.0, c.score / top_score) for c in seeds}
        index = title_index(state.ctx)
        by_title: dict[str, float] = {}
        led_on: list[str] = []
        if o.title > 0:
            for seed in seeds:
                for chunk_id, key in index.named_in(seed.text).items():
                    if index.article.get(chunk_id) == seed.article_id:
                        continue
                    if weights[seed.chunk_id] > by_title.get(chunk_id, 0.0):
                        by_title[chunk_id] = weights[seed.chunk_id]
                    if key not in led_on:
                        led_on.append(key)
        by_entity: dict[str, float] = {}
        entity_note = ""
        if o.entity > 0:
            graph = pack_entity_graph(state.ctx)  # the ppr stage's: loaded once, shared
            if graph is None:
                entity_note = "the pack has no entity graph"
            else:
                by_entity = self._entity_reach(state, graph, weights, index)
        reached = set(by_title) | set(by_entity)
        if not reached:
            raise Skip(
                "the top passages link to no other passage" + (f" ({entity_note})" if entity_note else "")
            )
        sims = state.ctx.store.chunk_similarities(sorted(reached), state.vector().tolist())
        gains: dict[str, float] = {}
        for chunk_id, sim in sims.items():
            rel = max(0.0, sim)
            gain = (
                o.title * by_title.get(chunk_id, 0.0) * rel + o.entity * by_entity.get(chunk_id, 0.0) * rel**2
            )
            if gain > 0:
                gains[chunk_id] = gain
        by_id = {c.chunk_id: c for c in state.candidates}
        new = sorted((cid for cid in gains if cid not in by_id), key=lambda cid: (-gains[cid], cid))
        missing = dict.fromkeys(new[: o.added], 0.0)  # the best of the passages not ranked yet
        for hit in state.ctx.store.chunk_details(missing):
            by_id[hit.chunk_id] = Candidate.from_hit(hit, "bridge")
        for chunk_id, gain in gains.items():
            candidate = by_id.get(chunk_id)
            if candidate is not None:
                candidate.score += gain
                candidate.scores["bridge"] = gain
        state.candidates = list(by_id.values())
        state.sort()
        detail: dict[str, object] = {
            "title_links": len(by_title),
            "entity_links": len(by_entity),
            "added": len(missing),
            "titles": led_on[:10],
        }
        if entity_note:
            detail["entity_links"] = f"skipped: {entity_note}"
        state.note(self.name, **detail)

    def _entity_reach(
        self, state: QueryState, graph: EntityGraph, weights: dict[str, float], index: TitleIndex
    ) -> dict[str, float]:
        """Chunk id -> the best seed weight × how specifically it is linked (capped at 1)."""
        o = self.options
        question_entities = set(graph.link(state.question, concepts=False))
        df = graph.entity_df
        best = np.zeros(graph.n_chunks)
        for chunk_id, weight in weights.items():
            row = graph.chunk_index.get(chunk_id)
            if row is None or weight <= 0:
                continue
            reach = np.zeros(graph.n_chunks)
            for e in graph.bridge_entities(row, question_entities, o.max_df):
                reach[graph.entity_chunks(e)] += 1.0 / np.log1p(df[e])  # a specific name counts more
            np.minimum(reach, 1.0, out=reach)
            own = index.article.get(chunk_id)
            for i in np.flatnonzero(reach):  # a seed's own article is not a next hop
                if index.article.get(graph.chunk_ids[i]) == own:
                    reach[i] = 0.0
            np.maximum(best, weight * reach, out=best)
        order = np.argsort(-best, kind="stable")[: o.reach]
        return {graph.chunk_ids[i]: float(best[i]) for i in order if best[i] > 0}
