"""router: look at the pack and the question, pick a retrieval strategy, escalate when weak.

Question kinds (:func:`wikigr.question.classify`): ``simple``, ``relation`` (how two named things
relate), ``multi_hop`` (a chain: "the composer of the opera that ..."), ``global`` (enumerate or
summarise: "list all ...", "what are the main ...") and ``aggregate`` ("how many ...", "the total
..."). Rules decide offline; with Claude available and ``use_llm`` set, Claude classifies (one
short call, within at most a third of the answer's time budget: ``--timeout`` /
``WIKIGR_TIMEOUT``) and the rules are the fallback.

Strategies are lists of retrieval stages run on a fresh state:

- ``vector``: vector;
- ``hybrid``: vector, keyword, title_match;
- ``graph``: vector, keyword, title_match, ppr;
- ``graph_paths``: vector, keyword, title_match, vector_cypher (the paths widen the pool), ppr;
- ``wide``: vector and keyword with 3x the candidates, title_match, vector_cypher, ppr;
- ``entity``: vector, keyword, title_match, ppr, bridge (the next hop through links), pair (the
  two passages that cover the question together first);
- ``links``: vector, keyword, title_match, bridge (title links only: no entity graph needed), pair.

A kind of pack without passages brings its own strategy (:class:`wikigr.pack.kind.KindStrategy`):
whatever the policy, it answers, run once on the query itself (there is nothing to score or
escalate to). An OpenML pack's is ``openml``: openml_tools, its tools answer from its runs
(docs/openml.md).

A question in another language than most of the pack's documents (``QueryState.across``: a Russian
question on English pages, a few Russian ones among them or not; the question's language is told
once per query, from its script and the pack's languages) shares no words with most passages: each
strategy runs without its lexical stages (:data:`LEXICAL`: keyword, title_match, pair), as
``NAME_meaning`` (``pages_meaning``: literals, vector, page_score; ``hybrid`` is then ``vector``),
and attempts are scored by similarity. Its vector is moved to the side of the documents' language
where the embedder is calibrated for both (``move_across``; ``QueryState.vector``), and
``page_score`` weighs each page as a whole. The trace's ``across`` says so. A question in the
language of most of the pack's documents (English on English) is routed as before.

Two policies choose the strategies to try. ``auto`` (the ``auto`` profile, the default) looks at
the pack first. A passage corpus (at most ``passage_chunks`` chunks per article on average, and
pages that do not link to each other: short passages titled by their subject) gets ``entity`` —
hybrid, ``ppr`` over the entity graph, then ``bridge`` to the next hop — or, without an entity
graph, ``links`` (hybrid and the title links of ``bridge``). Documentation (long pages in many
sections, or pages that link to each other) gets ``pages``, or ``wide`` for global questions.
Global questions get an enumeration-style answer on any pack. These choices were made on the
first half of each question set (MuSiQue and HotpotQA 1-50, bench/multihop.py; CoNaLa over the
Python docs 1-66, bench/docqa.py); the other half reports.

``ladder`` (the ``routed`` profile): each kind has an escalation ladder (``simple``: vector →
hybrid → graph → wide; ``multi_hop`` and ``relation``: graph → graph_paths → wide; ``global`` and
``aggregate``: wide), and no further rung starts once ``budget_ms`` have gone. When the router runs
after other retrieval stages (``--enable router``), their ranking is the first attempt. An attempt
is scored by the share of the question's content words its top passages cover (or, with
``score="similarity"``, by their mean cosine similarity to the question); below ``threshold`` the
router tries the next strategy, and keeps the best attempt seen. The trace records the kind,
why, and every attempt with the stages it ran (each one's ms, candidates and detail, as the
profile's own stages are traced). Global and aggregate questions get an enumeration-style answer
(one item per source) and at least ``enumerate_k`` passages.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from typing import Any

import numpy as np

from wikigr.pack.kind import DEFAULT_KIND, KindStrategy, pack_kind
from wikigr.question import KINDS, content_words
from wikigr.retrieval.pipeline import run_stage
from wikigr.retrieval.stage import Candidate, Context, QueryState, Skip, Stage, register, stage_class

CLASSIFY_SHARE = 1 / 3  # of the answer's Claude time budget, at most, for the classification
STRATEGIES: dict[str, list[str]] = {
    "vector": ["vector"],
    "hybrid": ["vector", "keyword", "title_match"],
    "graph": ["vector", "keyword", "title_match", "ppr"],
    # The paths widen the pool, then PPR ranks it: vector_cypher after ppr would demote PPR's
    # second hops under its own similarity scores.
    "graph_paths": ["vector", "keyword", "title_match", "vector_cypher", "ppr"],
    "wide": ["vector", "keyword", "title_match", "vector_cypher", "ppr"],
    "entity": ["vector", "keyword", "title_match", "ppr", "bridge", "pair"],
    "links": ["vector", "keyword", "title_match", "bridge", "pair"],
    "pages": ["literals", "vector", "keyword", "title_match", "page_score"],
}
LEXICAL = ("keyword", "title_match", "pair")  # the stages that match the question's words with the passages'
# A question in another language than most of the pack's documents is matched by meaning: each
# strategy without its lexical stages (``pages`` → ``pages_meaning``: literals, vector, page_score).
MEANING: dict[str, str] = {
    name: "vector" if [s for s in stages if s not in LEXICAL] == STRATEGIES["vector"] else f"{name}_meaning"
    for name, stages in STRATEGIES.items()
    if set(stages) & set(LEXICAL)
}
STRATEGIES.update(
    {meaning: [s for s in STRATEGIES[name] if s not in LEXICAL] for name, meaning in MEANING.items()}
)
WIDE = ("wide", "wide_meaning")  # the strategies that fetch wide_factor x the candidates
LADDERS: dict[str, list[str]] = {
    "simple": ["vector", "hybrid", "graph", "wide"],
    "relation": ["graph", "graph_paths", "wide"],
    "multi_hop": ["graph", "graph_paths", "wide"],
    "global": ["wide"],
    "aggregate": ["wide"],
}


CLASSIFY_SYSTEM = (
    "Classify the question for a retrieval system. Answer with one word: simple (one fact about one "
    "thing), relation (how two things relate or compare), multi_hop (needs a chain of facts), "
    "global (enumerate or summarise many things), or aggregate (count or total)."
)


@dataclass
class PackShape:
    """What the auto policy knows of a pack: measured once per agent."""

    passages: bool  # short passages titled by their subject, rather than long documentation pages
    has_graph: bool
    chunks_per_article: float
    kind: str = DEFAULT_KIND  # the manifest's source_kind: a kind with a strategy of its own answers by it

    def describe(self) -> str:
        strategy = pack_kind(self.kind).strategy
        if strategy is not None:
            return strategy.shape
        shape = "a passage corpus" if self.passages else "documentation pages"
        graph = "with an entity graph" if self.has_graph else "without an entity graph"
        return f"{shape} ({self.chunks_per_article:.1f} chunks per article), {graph}"


def pack_shape(state: QueryState, passage_chunks: float) -> PackShape:
    cache = state.ctx.cache
    kind = state.ctx.pack.manifest.source_kind
    if "pack_shape" not in cache and pack_kind(kind).strategy is not None:
        cache["pack_shape"] = PackShape(False, False, 0.0, kind=kind)
    if "pack_shape" not in cache:
        stats = state.ctx.pack.manifest.stats
        per_article = stats.chunks / max(1, stats.articles)
        linked = stats.links / max(1, stats.articles) >= 0.1  # web pages link to each other
        passages = per_article <= passage_chunks and not linked
        cache["pack_shape"] = PackShape(passages, state.ctx.has_entity_graph, per_article)
    shape = cache["pack_shape"]
    assert isinstance(shape, PackShape)
    return shape


def auto_plan(kind: str, shape: PackShape, across: bool = False) -> tuple[str, str]:
    """The auto policy: the strategy for a question of ``kind`` on a pack of ``shape``, and why
    (``across``: the question is in another language than the pack's documents)."""
    strategy = pack_kind(shape.kind).strategy
    if strategy is not None:
        return strategy.name, strategy.why
    if shape.passages and shape.has_graph:
        return "entity", "a passage corpus with an entity graph: PageRank over it, then the next hop"
    if shape.passages:
        return "links", (
            "a passage corpus without an entity graph: the next hop through title links only "
            "(add a graph: wikigr pack graph PACK)"
        )
    if kind == "global" and not across:
        return "wide", "a global question on documentation pages: more passages, through their entities"
    if kind == "global":  # its words match no entity; page_score reads them through the lexicon
        return "pages", "a global question across languages on documentation pages: pages ranked as for any"
    why = "documentation pages: vector and keyword search fused, pages ranked by their passages and links"
    return "pages", why


@dataclass
class RouterOptions:
    policy: str = "ladder"  # "auto": a strategy by the pack's shape and the question; "ladder": escalate
    budget_ms: float = 250.0  # no further attempt starts once this much time has gone
    passage_chunks: float = 1.5  # auto: at most this many chunks per article make a passage corpus
    score: str = "coverage"  # how an attempt is scored: "coverage" or "similarity"
    threshold: float = 1.0  # the score of an attempt below which the router escalates
    score_top: int = 5  # passages scored
    max_attempts: int = 2  # strategies tried at most (2 kept dev-half recall and cut the latency of a third)
    use_llm: bool = True  # classify with Claude when it is available
    enumerate_k: int = 10  # passages for global and aggregate questions
    wide_factor: int = 3  # the wide strategy's candidate multiplier
    move_across: bool = True  # a question in another language: its vector moved to the documents'

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.score_top < 1:
            raise ValueError("max_attempts and score_top must be at least 1")
        if self.score not in ("coverage", "similarity"):
            raise ValueError("score must be 'coverage' or 'similarity'")
        if self.policy not in ("auto", "ladder"):
            raise ValueError("policy must be 'auto' or 'ladder'")
        if self.budget_ms <= 0:
            raise ValueError("budget_ms must be positive")


class EveryKind(tuple[str, ...]):
    """The ``pack_kinds`` of a stage that applies to every kind of pack, registered now or later
    (the router: a kind without passages is answered by its own strategy)."""

    def __contains__(self, kind: object) -> bool:
        return isinstance(kind, str)


@register
class RouterStage(Stage):
    name = "router"
    summary = "classify the question, route it to a strategy, escalate while the context is weak"
    Options = RouterOptions
    pack_kinds = EveryKind()

    def __init__(self, options: Any | None = None) -> None:
        super().__init__(options)
        self._stages: dict[str, list[Stage]] = {}

    def _strategy(self, name: str, ctx: Context, stage_names: Sequence[str] = ()) -> list[Stage]:
        """The stages of a strategy (of ``STRATEGIES``, or ``stage_names``: a kind's own), with the
        options the profile, kg_config.json or the caller set for them (the wide strategy
        multiplies the candidates it fetches)."""
        if name not in self._stages:
            stages = []
            for stage_name in stage_names or STRATEGIES[name]:
                cls = stage_class(stage_name)
                options = copy.copy(ctx.options.get(stage_name) or cls.Options())
                if name in WIDE and hasattr(options, "candidates") and stage_name in ("vector", "keyword"):
                    options.candidates *= self.options.wide_factor
                stages.append(cls(options))
            self._stages[name] = stages
        return self._stages[name]

    def _classify(self, state: QueryState) -> tuple[str, str]:
        llm = state.ctx.llm
        if llm is not None and self.options.use_llm:
            from wikigr.llm import LLMError

            # The classification takes at most a share of the answer's time budget: Claude
            # hanging here leaves the rules to classify and the rest of the budget to the answer.
            within = getattr(llm, "within", None)
            budget = getattr(llm, "budget", None)
            share = within(budget * CLASSIFY_SHARE) if within is not None and budget else nullcontext()
            try:
                with share:
                    completion = llm.complete(
                        CLASSIFY_SYSTEM, [{"role": "user", "content": state.question}], max_tokens=10
                    )
            except LLMError as exc:
                kind, why = state.asked.classified
                return kind, f"{why} (Claude failed: {exc})"
            if state.usage is not None:
                state.usage.add(completion)
            answer = completion.text.strip().lower().replace("-", "_")
            for kind in KINDS:
                if answer.startswith(kind):
                    return kind, "Claude"
            kind, why = state.asked.classified
            return kind, f"{why} (Claude answered {answer[:20]!r})"
        return state.asked.classified

    def _score(self, state: QueryState, candidates: list[Candidate]) -> float:
        top = [c.chunk_id for c in candidates[: self.options.score_top]]
        if not top:
            return 0.0
        if self.options.score == "coverage" and not state.across:  # across languages: no shared words
            words = state.asked.content_words
            found: set[str] = set()
            for c in candidates[: self.options.score_top]:
                found |= content_words(c.text)
            return len(words & found) / max(1, len(words))
        vectors = state.ctx.store.chunk_vectors(top)
        question = state.vector()
        return float(np.mean([float(np.dot(v, question)) for v in vectors.values()]))

    def _attempt(self, state: QueryState, strategy: str) -> tuple[list[Candidate], dict[str, Any]]:
        trial = QueryState(
            question=state.question,
            ctx=state.ctx,
            top_k=state.top_k,
            question_id=state.question_id,
            queries=list(state.queries),
            usage=state.usage,
            _vectors=state._vectors,
            _nearest=state._nearest,
            _language=state.language,
            move_across=state.move_across,
        )
        start = time.perf_counter()
        stages = [run_stage(stage, trial) for stage in self._strategy(strategy, state.ctx)]
        skipped = [f"{s['stage']}: {s['skipped']}" for s in stages if "skipped" in s]
        state.confidence = max(state.confidence, trial.confidence)
        state.moved = state.moved or trial.moved
        state.facts.extend(f for f in trial.facts if f not in state.facts)
        score = self._score(state, trial.candidates)
        entry: dict[str, Any] = {
            "strategy": strategy,
            "score": round(score, 4),
            "ms": round((time.perf_counter() - start) * 1000, 2),
            "candidates": len(trial.candidates),
        }
        if skipped:
            entry["skipped"] = skipped
        entry["stages"] = stages  # each stage the strategy ran, traced as the profile's own are
        return trial.candidates, entry

    def _own(self, state: QueryState, strategy: KindStrategy) -> None:
        """A pack answered by its kind's strategy: its stages answer on the query state itself,
        traced as one attempt (each stage with its ms, candidates and detail, as a profile's)."""
        shape = pack_shape(state, self.options.passage_chunks)
        start = time.perf_counter()
        stages = [
            run_stage(stage, state) for stage in self._strategy(strategy.name, state.ctx, strategy.stages)
        ]
        attempt = {
            "strategy": strategy.name,
            "ms": round((time.perf_counter() - start) * 1000, 2),
            "candidates": len(state.candidates),
            "stages": stages,
        }
        detail = {k: v for name in strategy.stages for k, v in state.notes.get(name, {}).items()}
        state.note(
            self.name,
            pack=shape.describe(),
            strategy=strategy.name,
            strategy_why=strategy.why,
            **detail,
            attempts=[attempt],
        )

    def run(self, state: QueryState) -> None:
        o = self.options
        own = pack_kind(state.ctx.pack.manifest.source_kind).strategy
        if own is not None:  # whatever the policy: no passages
            self._own(state, own)
            return
        start = time.perf_counter()
        state.move_across = o.move_across
        kind, why = self._classify(state)
        detail: dict[str, Any] = {}
        if o.policy == "auto":
            shape = pack_shape(state, o.passage_chunks)
            strategy, strategy_why = auto_plan(kind, shape, state.across)
            ladder = [strategy]
            detail = {"pack": shape.describe(), "strategy": strategy, "strategy_why": strategy_why}
        else:
            ladder = list(LADDERS[kind])
        if state.across:  # lean on the vectors: no strategy matches the question's words
            ladder = list(dict.fromkeys(MEANING.get(strategy, strategy) for strategy in ladder))
            if o.policy == "auto":
                detail["strategy"] = ladder[0]
                detail["strategy_why"] += f", without the lexical stages ({', '.join(LEXICAL)})"
        attempts: list[dict[str, Any]] = []
        best: tuple[float, list[Candidate]] | None = None
        if state.candidates:  # the profile's own ranking is the first attempt
            score = self._score(state, state.candidates)
            attempts.append({"strategy": "profile", "score": round(score, 4)})
            best = (score, state.candidates)
            if score >= o.threshold and kind not in ("global", "aggregate"):
                ladder = []
        for strategy in ladder:
            if len(attempts) >= o.max_attempts:
                break
            if attempts and (time.perf_counter() - start) * 1000 > o.budget_ms:
                detail["budget"] = f"stopped escalating after {o.budget_ms:g} ms"
                break
            candidates, entry = self._attempt(state, strategy)
            attempts.append(entry)
            if best is None or entry["score"] > best[0]:
                best = (entry["score"], candidates)
            if entry["score"] >= o.threshold:
                break
        if best is None:
            raise Skip("no strategy ran")
        if state.across:
            detail["across"] = state.across_note()  # after the attempts: how the question was moved
        state.candidates = best[1]
        state.sort()
        enumerate_kinds = ("global",) if o.policy == "auto" else ("global", "aggregate")
        style = "enumeration" if kind in enumerate_kinds else "answer"
        if style == "enumeration":
            state.top_k = max(state.top_k, o.enumerate_k)
        chosen = next(a["strategy"] for a in attempts if a["score"] == round(best[0], 4))
        state.note(
            self.name, kind=kind, why=why, **detail, attempts=attempts, chosen=chosen, answer_style=style
        )
