"""pair: put first the two passages that answer the question together.

A two-hop question ("Which magazine was started first, Arthur's Magazine or First for Women?", "The
director of *Kill Bill* was born in which city?") needs two passages, and the two best on their
own are often two about the same half of the question. Among the top ``candidates`` passages
(one per article), every pair is scored:

    - rank × (ln(1 + i) + ln(1 + j))        the current order still counts (i, j from 0)
    + coverage × share of the question's words (IDF-weighted) that the two passages hold together
    + link × (one passage names the other's title)
    + entity × (the two share an entity the question does not name: the bridge of the two hops)

A shared entity counts when at most ``max_df`` passages mention it (a specific name) and more than
one does; it needs the pack's entity graph (without one the term is 0).

The best pair moves to the top, in its order, when its coverage beats the current top two's by at
least ``min_gain``; otherwise nothing changes. The weights were chosen on questions 1-50 of
MuSiQue and HotpotQA (bench/multihop_grid.py; bench/multihop.py reports 51-100). Words come from
the pack's keyword index (its tokenizer and document frequencies); without one the stage is skipped.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from itertools import combinations

from wikigr.retrieval.stage import Candidate, QueryState, Stage, register
from wikigr.retrieval.stages.ppr import pack_entity_graph

# Words of the question that say nothing about its subject (the keyword index's stopwords are
# Lucene's, which keep them).
QUESTION_WORDS = frozenset(
    [
        "who",
        "whom",
        "whose",
        "what",
        "which",
        "when",
        "where",
        "why",
        "how",
        "did",
        "does",
        "do",
        "has",
        "have",
        "had",
        "was",
        "were",
        "is",
        "are",
        "been",
        "one",
        "two",
        "also",
        "both",
        "either",
        "same",
        "more",
        "most",
        "less",
        "first",
        "last",
        "name",
        "named",
    ]
)


@dataclass
class PairOptions:
    candidates: int = 16  # distinct articles considered
    rank: float = 0.3
    coverage: float = 2.0
    link: float = 1.0
    entity: float = 1.0  # the two share a specific entity the question does not name (a bridge)
    max_df: int = 100  # entities mentioned by more passages than this are not bridges
    min_gain: float = 0.05  # coverage the best pair must add over the current top two

    def __post_init__(self) -> None:
        if self.candidates < 2:
            raise ValueError("candidates must be at least 2")
        if self.max_df < 2:
            raise ValueError("max_df must be at least 2 (a bridge is mentioned by two passages)")
        if min(self.rank, self.coverage, self.link, self.entity) < 0:
            raise ValueError("the weights must not be negative")


@register
class PairStage(Stage):
    name = "pair"
    summary = "put first the two passages that cover the question together (two-hop questions)"
    Options = PairOptions

    def run(self, state: QueryState) -> None:
        index = state.ctx.keyword_index()  # Skip when the pack has none
        firsts: list[Candidate] = []
        seen: set[str] = set()
        for candidate in state.candidates:
            if candidate.article_id not in seen:
                seen.add(candidate.article_id)
                firsts.append(candidate)
            if len(firsts) == self.options.candidates:
                break
        asked = index.tokens(state.question, state.language)
        question = {w for w in asked if len(w) > 1 and w not in QUESTION_WORDS}
        if len(firsts) < 3 or not question:
            state.note(self.name, moved=False, why="fewer than 3 passages or no question words")
            return
        idf = index.idf(sorted(question))
        total = sum(idf.values())
        words = [set(index.tokens(f"{c.article_title} {c.text}", state.language)) & question for c in firsts]
        texts = [c.text.casefold() for c in firsts]
        titles = [c.article_title.casefold() for c in firsts]

        def coverage(i: int, j: int) -> float:
            return sum(idf[w] for w in words[i] | words[j]) / total

        def names(i: int, j: int) -> bool:  # passage i names the title of passage j
            return len(titles[j]) >= 3 and titles[j] in texts[i]

        def linked(i: int, j: int) -> bool:
            return names(i, j) or names(j, i)

        o = self.options
        bridges = self._bridges(state, firsts) if o.entity > 0 else [frozenset()] * len(firsts)

        def bridged(i: int, j: int) -> bool:
            return bool(bridges[i] & bridges[j])

        def score(p: tuple[int, int]) -> float:
            order = math.log1p(p[0]) + math.log1p(p[1])
            return float(
                -o.rank * order + o.coverage * coverage(*p) + o.link * linked(*p) + o.entity * bridged(*p)
            )

        best = max(combinations(range(len(firsts)), 2), key=score)
        gain = coverage(*best) - coverage(0, 1)
        if best == (0, 1) or gain < o.min_gain:
            state.note(self.name, moved=False, gain=round(gain, 3))
            return
        top = state.candidates[0].score
        chosen = [firsts[best[0]], firsts[best[1]]]
        for rank, candidate in enumerate(chosen):
            candidate.score = top + (2 - rank) * 1e-3
            candidate.scores["pair"] = round(coverage(*best), 4)
        state.sort()
        state.note(
            self.name,
            moved=True,
            gain=round(gain, 3),
            pair=[c.article_title for c in chosen],
            linked=linked(*best),
            bridged=bridged(*best),
        )

    def _bridges(self, state: QueryState, firsts: list[Candidate]) -> list[frozenset[int]]:
        """Each passage's specific entities that the question does not name (none without a graph)."""
        graph = pack_entity_graph(state.ctx)
        if graph is None:
            return [frozenset()] * len(firsts)
        named = graph.link(state.question, concepts=False)
        rows = [graph.chunk_index.get(c.chunk_id) for c in firsts]
        return [
            frozenset() if row is None else frozenset(graph.bridge_entities(row, named, self.options.max_df))
            for row in rows
        ]
