"""The answers of ``wikigr serve``: their JSON, Claude's text streamed as it is written, and the
agent (or the packs' set) a request's answer comes from (the traces kept of them: traces.py)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any

from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.errors import UsageError
from wikigr.packset import PackSet


def answer_json(result: AgentResult) -> dict[str, Any]:
    """``wikigr query --json``'s JSON (sources with their text); each source also carries its chunk
    id and origin."""
    data = result.to_json()
    data["sources"] = [
        {**source.to_json(), "chunk_id": source.chunk_id, "origin": source.origin}
        for source in result.sources
    ]
    return data


@contextlib.contextmanager
def streaming(agent: KnowledgeGraphAgent | PackSet, emit: Callable[[str, dict[str, Any]], None]) -> Any:
    """Stream what Claude writes for this thread's calls, for every Claude client of ``agent``."""
    agents = agent.agents if isinstance(agent, PackSet) else [agent]
    with contextlib.ExitStack() as stack:
        seen: set[int] = set()
        for one in agents:
            streaming = getattr(one.llm, "streaming", None)
            if streaming is not None and id(one.llm) not in seen:
                seen.add(id(one.llm))
                stack.enter_context(
                    streaming(lambda text: emit("delta", {"text": text}), lambda: emit("restart", {}))
                )
        yield


def one_agent(agent: KnowledgeGraphAgent | PackSet) -> KnowledgeGraphAgent:
    """The agent of the one pack a call named."""
    if isinstance(agent, PackSet):
        raise UsageError("name one pack here")
    return agent


def set_fallback(agent: KnowledgeGraphAgent | PackSet, fallback: bool) -> None:
    """Whether a Claude failure answers extractively, for this call (the agents' locks are held)."""
    for one in agent.agents if isinstance(agent, PackSet) else [agent]:
        one.fallback = fallback
