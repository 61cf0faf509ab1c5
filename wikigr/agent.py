"""KnowledgeGraphAgent: answers questions against a pack through a profile of retrieval stages.

from wikigr import KnowledgeGraphAgent
agent = KnowledgeGraphAgent("pydocs")  # profile "auto": picks the retrieval per pack and question
# (on an OpenML pack, the router of "auto" answers with the pack's tools: docs/openml.md)
result = agent.query("How do I set a socket timeout?")
result.answer, result.answer_mode, result.sources, result.facts, result.confidence, result.trace
# without Claude, result.answer is the short extractive answer; result.sources[n - 1].text, the
# whole passage it cites as [n]
"""

from __future__ import annotations

import contextlib
import os
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from wikigr.embed import check_record, pack_embedder
from wikigr.errors import UsageError
from wikigr.pack.pack import Pack, open_pack
from wikigr.pack.union import open_pack_store
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.profiles import DEFAULT_PROFILE, load_pack_config, resolve_stages
from wikigr.retrieval.stage import Context, QueryState, Skip

RELATED_ORIGIN = "multidoc"  # the origin of the passages of linked pages added after the top_k

if TYPE_CHECKING:  # the SDK is imported only when an API key is set
    import numpy as np

    from wikigr.llm import LLM


@dataclass(frozen=True)
class Source:
    title: str
    section: str
    url: str
    score: float
    text: str = ""
    origin: str = "vector"
    pack: str = ""  # the name of the pack it comes from
    chunk_id: str = ""  # the passage's id in its pack's store

    @property
    def related(self) -> bool:
        """A passage of a page linked to the top sources, added after the top_k (``multidoc``)."""
        return self.origin == RELATED_ORIGIN

    def to_json(self) -> dict[str, Any]:
        return {
            "title": self.title,
            "section": self.section,
            "url": self.url,
            "score": round(self.score, 4),
            "pack": self.pack,
            "related": self.related,
            "text": self.text,
        }


@dataclass
class AgentResult:
    """``answer`` is what a reader gets: Claude's answer, or without Claude the short extractive
    answer (``answer_mode`` "extractive": a few sentences of the passages, citing them as [n],
    where n is the source's place in ``sources`` from 1); ``sources[n].text`` holds the whole
    passages."""

    question: str
    answer: str
    sources: list[Source]
    profile: str
    answer_mode: str = ""
    confidence: float = 0.0
    low_confidence: bool = False
    facts: list[str] = field(default_factory=list)
    trace: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "answer": self.answer,
            "answer_mode": self.answer_mode,
            "sources": [s.to_json() for s in self.sources],
            "profile": self.profile,
            "confidence": round(self.confidence, 4),
            "low_confidence": self.low_confidence,
            "facts": self.facts,
            "trace": self.trace,
        }


class KnowledgeGraphAgent:
    """A pack opened for questions. ``llm="auto"`` uses Claude when ANTHROPIC_API_KEY is set."""

    def __init__(
        self,
        pack: str | Path | Pack,
        profile: str | None = None,
        enable: list[str] | None = None,
        disable: list[str] | None = None,
        options: dict[str, dict[str, Any]] | None = None,
        llm: LLM | Literal["auto"] | None = "auto",
        model: str | None = None,
        top_k: int | None = None,
        fallback: bool = False,
        timeout: float | None = None,
    ) -> None:
        """``timeout``: the seconds Claude may take over one answer, every call, retry and wait
        included (default ``WIKIGR_TIMEOUT``, else 30); past it the answer fails, or with
        ``fallback`` is extractive."""
        if timeout is not None and not 0 < timeout < float("inf"):
            raise UsageError("the timeout must be a positive number of seconds")
        self.pack = pack if isinstance(pack, Pack) else open_pack(pack)
        config = load_pack_config(self.pack.config(), str(self.pack.path / "kg_config.json"))
        self.profile = profile or config.profile or DEFAULT_PROFILE
        overrides = {name: dict(values) for name, values in config.stages.items()}
        for name, values in (options or {}).items():
            overrides.setdefault(name, {}).update(values)
        self.stages, stage_options = resolve_stages(
            self.profile, enable, disable, overrides, self.pack.manifest.source_kind
        )
        self.top_k = top_k or config.top_k or 5
        if self.top_k < 1:
            raise UsageError("top_k must be at least 1")
        self._owns_llm = llm == "auto"
        if llm == "auto":
            from wikigr.llm import AnthropicLLM

            llm = AnthropicLLM.from_env(
                model or os.environ.get("WIKIGR_MODEL") or config.model, budget=timeout
            )
        self.llm = llm
        self.fallback = fallback
        check_record(self.pack.manifest.embedder, f"pack {self.pack.name}")  # before anything loads
        # Loading the model and opening the store are independent: do both at once. Only a pack of
        # passages embeds every question; another (OpenML) loads the model on first use.
        with ThreadPoolExecutor(max_workers=2) as pool:
            record, pack_name = self.pack.manifest.embedder, f"pack {self.pack.name}"
            embedder_future = (
                pool.submit(pack_embedder, record, pack_name) if self.pack.manifest.stats.chunks else None
            )
            store = pool.submit(open_pack_store, self.pack).result()  # a pack in shards: all
            self.context = Context(pack=self.pack, store=store, llm=self.llm, options=stage_options)
            try:
                if embedder_future is not None:
                    if not embedder_future.done():  # the first question's reads, while it loads
                        self.context.warm(record.dimension)
                    self.context.loaded_embedder = embedder_future.result()
            except BaseException:
                store.close()
                raise
        if "keyword" in self.stage_names or "router" in self.stage_names:
            # Load the BM25 index now, with the store: an agent then answers from one state of the
            # pack even when `pack update` swaps the folder while it is open.
            with contextlib.suppress(Skip):
                self.context.keyword_index()

    def close(self) -> None:
        self.context.store.close()
        close_llm = getattr(self.llm, "close", None)
        if self._owns_llm and close_llm is not None:
            close_llm()

    def __enter__(self) -> KnowledgeGraphAgent:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def stage_names(self) -> list[str]:
        return [s.name for s in self.stages]

    def query(self, question: str, top_k: int | None = None, question_id: str | None = None) -> AgentResult:
        state = self.new_state(question, top_k, question_id)
        start = time.perf_counter()
        with self.budget():
            stages = run_stages(self.stages, state)
        return self.result(state, stages, (time.perf_counter() - start) * 1000)

    def new_state(
        self,
        question: str,
        top_k: int | None = None,
        question_id: str | None = None,
        vector: np.ndarray | None = None,
    ) -> QueryState:
        """The state a query starts from (``vector``: the question's embedding, when known)."""
        question = question.strip()
        if not question:
            raise UsageError("the question is empty")
        k = top_k or self.top_k
        if k < 1:
            raise UsageError("top_k must be at least 1")
        usage = None
        if self.llm is not None:
            from wikigr.llm import Usage

            usage = Usage()
        state = QueryState(
            question=question,
            ctx=self.context,
            top_k=k,
            question_id=question_id,
            usage=usage,
            fallback=self.fallback,
        )
        if vector is not None:
            state.set_vector(question, vector)
        return state

    def budget(self) -> contextlib.AbstractContextManager[object]:
        """One time budget for all of Claude's calls over an answer."""
        within = getattr(self.llm, "within", None)
        return within() if within is not None else contextlib.nullcontext()

    def result(self, state: QueryState, stages: list[dict[str, Any]], total_ms: float) -> AgentResult:
        """The answer, sources and trace of a query that has run its stages."""
        k = state.top_k  # a stage may widen it (the router, for an enumeration)
        passages = state.candidates[:k] + [c for c in state.candidates[k:] if c.origin == RELATED_ORIGIN]
        own = self.name  # the source's pack, unless several packs answer together
        sources = [
            Source(
                c.article_title,
                c.section_title,
                c.citation_url,
                c.score,
                c.text,
                c.origin,
                c.pack or own,
                c.chunk_id,
            )
            for c in passages
        ]
        synth_ms = sum(s["ms"] for s in stages if s["stage"] == "synthesize")
        trace: dict[str, Any] = {
            "profile": self.profile,
            "embedder": self.pack.manifest.embedder.name,
            "vector_path": self.context.store.vector_path,
            "answer_mode": state.answer_mode or "none",
            **state.trace,  # what a stage adds (the OpenML tools: tool_calls, grounding...)
            "stages": stages,
            "retrieval_ms": round(total_ms - synth_ms, 2),
            "total_ms": round(total_ms, 2),
        }
        if state.usage is not None:
            usage = state.usage
            trace["usage"] = {
                "calls": usage.calls,
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "cost_usd": round(usage.cost_usd, 6),
            }
        return AgentResult(
            question=state.question,
            answer=state.answer if state.answer is not None else "",
            sources=sources,
            profile=self.profile,
            answer_mode=trace["answer_mode"],
            confidence=state.confidence,
            low_confidence=state.low_confidence,
            facts=state.facts,
            trace=trace,
        )

    @property
    def name(self) -> str:
        return self.pack.name


def query_pack(
    ref: str | Path, question: str, top_k: int = 5, profile: str | None = None, **kwargs: Any
) -> AgentResult:
    """Open the pack, answer one question, close it."""
    if not question.strip():
        raise UsageError("the question is empty")
    with KnowledgeGraphAgent(ref, profile=profile, top_k=top_k, **kwargs) as agent:
        return agent.query(question)
