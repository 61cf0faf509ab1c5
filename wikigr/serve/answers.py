"""The answers of ``wikigr serve``: their JSON, the traces kept of them, Claude's text streamed
as it is written, and the agent (or the packs' set) a request's answer comes from."""

from __future__ import annotations

import contextlib
import secrets
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.errors import UsageError
from wikigr.pack.manifest import now_iso
from wikigr.packset import PackSet

MAX_TRACES = 200


def answer_json(result: AgentResult) -> dict[str, Any]:
    """``wikigr query --json``'s JSON (sources with their text); each source also carries its chunk
    id and origin."""
    data = result.to_json()
    data["sources"] = [
        {**source.to_json(), "chunk_id": source.chunk_id, "origin": source.origin}
        for source in result.sources
    ]
    return data


class Traces:
    """The last :data:`MAX_TRACES` answers, by id, in memory."""

    def __init__(self, keep: int = MAX_TRACES) -> None:
        self.keep = keep
        self._items: OrderedDict[str, dict[str, Any]] = OrderedDict()
        self._lock = threading.Lock()

    def add(self, kind: str, request: dict[str, Any], response: dict[str, Any], elapsed_ms: float) -> str:
        trace_id = secrets.token_hex(8)
        record = {
            "trace_id": trace_id,
            "created": now_iso(),
            "kind": kind,
            "request": request,
            "elapsed_ms": round(elapsed_ms, 2),
            "response": response,
        }
        with self._lock:
            self._items[trace_id] = record
            while len(self._items) > self.keep:
                self._items.popitem(last=False)
        return trace_id

    def get(self, trace_id: str) -> dict[str, Any] | None:
        with self._lock:
            return self._items.get(trace_id)

    def recent(self) -> list[dict[str, Any]]:
        with self._lock:
            items = list(self._items.values())
        return [
            {
                "trace_id": r["trace_id"],
                "created": r["created"],
                "kind": r["kind"],
                "pack": r["request"]["pack"],
                "question": r["request"]["question"],
                "elapsed_ms": r["elapsed_ms"],
            }
            for r in reversed(items)
        ]

    def __len__(self) -> int:
        with self._lock:
            return len(self._items)


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
