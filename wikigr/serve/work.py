"""The blocking work of ``wikigr serve`` (run in worker threads): answers, searches, a pack's info
and graph, over the open agents. This module is the answering stack (wikigr.agent, numpy, the
stores): the server imports it in a thread once its socket listens (:class:`Loader`), so the
health route answers meanwhile and the routes that need a pack wait for it."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from wikigr.agent_cache import AgentCache
from wikigr.errors import PackNotFoundError, UsageError
from wikigr.info import agent_pack_info
from wikigr.packset import PackSet
from wikigr.retrieval.pipeline import run_stages
from wikigr.serve.answers import answer_json, one_agent, set_fallback, streaming
from wikigr.serve.ask import Ask
from wikigr.serve.graph import GraphAsk, picture
from wikigr.serve.packs import ServedPacks
from wikigr.serve.traces import Traces

MAX_FAILED_SOURCES = 50  # listed by a pack's info


class Work:
    """The open agents (an :class:`~wikigr.agent_cache.AgentCache`), and what a route asks of them."""

    def __init__(self, packs: ServedPacks, traces: Traces) -> None:
        self.packs = packs
        self.traces = traces
        self.cache = AgentCache()

    def query(self, ask: Ask) -> dict[str, Any]:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "query", ask.enable, ask.disable) as agent:
            set_fallback(agent, ask.fallback)
            result = agent.query(ask.text, top_k=ask.top_k)
        response = answer_json(result)
        response["trace_id"] = self.traces.add(
            "query", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        return response

    def query_streamed(self, ask: Ask, emit: Callable[[str, dict[str, Any]], None]) -> None:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "query", ask.enable, ask.disable) as agent:
            set_fallback(agent, ask.fallback)
            if isinstance(agent, PackSet):
                with streaming(agent, emit):
                    result = agent.query(ask.text, top_k=ask.top_k)
            else:  # the sources as soon as they are known, then the answer as it is written
                state = agent.new_state(ask.text, ask.top_k)
                before = [s for s in agent.stages if s.name != "synthesize"]
                last = [s for s in agent.stages if s.name == "synthesize"]
                began = time.perf_counter()
                with agent.budget():
                    entries = run_stages(before, state)
                    found = agent.result(state, entries, (time.perf_counter() - began) * 1000)
                    emit("sources", {"sources": answer_json(found)["sources"]})
                    with streaming(agent, emit):
                        entries += run_stages(last, state)
                result = agent.result(state, entries, (time.perf_counter() - began) * 1000)
        response = answer_json(result)
        response["trace_id"] = self.traces.add(
            "query", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        emit("result", response)

    def search(self, ask: Ask) -> dict[str, Any]:
        start = time.perf_counter()
        with self.cache.use(ask.refs, ask.profile, "search", ask.enable, ask.disable) as agent:
            result = agent.query(ask.text, top_k=ask.top_k)
        response = {
            "query": result.question,
            "profile": result.profile,
            "confidence": round(result.confidence, 4),
            "low_confidence": result.low_confidence,
            "results": answer_json(result)["sources"],
            "trace": result.trace,
        }
        response["trace_id"] = self.traces.add(
            "search", ask.record(), response, (time.perf_counter() - start) * 1000
        )
        return response

    def info(self, name: str) -> dict[str, Any]:
        path = self.packs.path(name)
        with self.cache.use([str(path)], None, "query") as agent:
            data = agent_pack_info(one_agent(agent), MAX_FAILED_SOURCES)
        data["name"] = name  # as requests name it (the folder's name in the packs home)
        del data["path"]  # a client gets names, not this machine's folders
        return data

    def graph(self, name: str, ask: GraphAsk) -> dict[str, Any]:
        """What ``ask`` asks to draw of the pack ``name``: around passages, or its kind's picture
        (an OpenML pack's star); ``ask.trace``: of that answer, which must be one of this pack's."""
        path = self.packs.path(name)
        answer = None
        if ask.trace is not None:
            record = self.traces.get(ask.trace)
            if record is None:
                raise PackNotFoundError(
                    f"no trace '{ask.trace[:40]}' (only the last {self.traces.keep} are kept, in memory)"
                )
            asked = str(record["request"]["pack"])
            if asked != "all" and name not in asked.split(","):
                raise UsageError(f"trace {ask.trace} is an answer of {asked[:80]}, not of {name}")
            answer = record["response"]
        with self.cache.use([str(path)], None, "query") as agent:
            one = one_agent(agent)
            data = picture(one.context.store, one.context.pack.manifest, name, ask, answer)
        return {"pack": name, **data}

    def close(self) -> None:
        self.cache.close()
