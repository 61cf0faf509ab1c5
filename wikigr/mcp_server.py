"""What the tools of ``wikigr mcp`` do (the protocol is wikigr/mcp/): the answering stack, imported
by the server's warm-up thread once ``initialize`` is answered.

The tools, ``list_packs``, ``pack_info``, ``query_pack`` and ``search``, are listed in
wikigr/mcp/__init__.py and described to clients in wikigr/mcp/catalogue.py.

Agents are opened once per pack (and profile) and kept for the life of the server process
(:class:`wikigr.agent_cache.AgentCache`); when a pack is updated or replaced on disk, the next call
reopens it. Calls are serialised: one store connection is never used by two threads at once.
A tool's failure is a :class:`~wikigr.errors.WikigrError`, which the client reads as one line,
``Error: ...``, as the CLI prints it.
"""

from __future__ import annotations

import contextlib
from typing import Any

from wikigr.agent_cache import AgentCache
from wikigr.embed import get_embedder
from wikigr.errors import UsageError
from wikigr.info import agent_pack_info
from wikigr.pack.pack import pack_rows, packs_home
from wikigr.retrieval.stage import BUILTIN_STAGES, stage_class

__all__ = ["AgentCache", "Tools", "load_model"]

MAX_TOP_K = 100
MAX_FAILED_SOURCES = 50  # listed by pack_info


def load_model() -> None:
    """Load the default embedder (a query on a pack of another model loads its own); a failure
    is the query's to report."""
    with contextlib.suppress(Exception):
        get_embedder()


def _check_top_k(top_k: int | None) -> None:
    if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
        raise UsageError(f"top_k must be between 1 and {MAX_TOP_K}, not {top_k}")


class Tools:
    """The four tools over one cache of open agents; a call at a time (:attr:`AgentCache.lock`)."""

    def __init__(self) -> None:
        self.cache = AgentCache()

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Run the tool ``name`` on arguments checked against its signature
        (:func:`wikigr.mcp.catalogue.check_arguments`)."""
        with self.cache.lock:
            tool = getattr(self, f"_{name}")
            result: dict[str, Any] = tool(**arguments)
            return result

    @staticmethod
    def warm() -> None:
        """Import what a query runs: the built-in retrieval stages (imported on first use)."""
        for name in BUILTIN_STAGES:
            stage_class(name)

    def close(self) -> None:
        self.cache.close()

    def _list_packs(self) -> dict[str, Any]:
        return {"home": str(packs_home()), "packs": pack_rows()}

    def _pack_info(self, pack: str) -> dict[str, Any]:
        return agent_pack_info(self.cache.one(pack, None, "query"), MAX_FAILED_SOURCES)

    def _query_pack(
        self, pack: str | list[str], question: str, profile: str | None, top_k: int | None
    ) -> dict[str, Any]:
        _check_top_k(top_k)
        result = self.cache.get(pack, profile, "query").query(question, top_k=top_k)
        data = result.to_json()
        data["trace"] = {
            k: data["trace"].get(k)
            for k in ("profile", "vector_path", "answer_mode", "total_ms", "packs")
            if k in data["trace"]
        }
        return data

    def _search(
        self, pack: str | list[str], query: str, top_k: int | None, profile: str | None
    ) -> dict[str, Any]:
        _check_top_k(top_k)
        if not query.strip():  # its argument is the query (the agent would say "the question")
            raise UsageError("the query is empty")
        result = self.cache.get(pack, profile, "search").query(query, top_k=top_k)
        return {
            "query": result.question,
            "profile": result.profile,
            "confidence": round(result.confidence, 4),
            "low_confidence": result.low_confidence,
            "results": [s.to_json() for s in result.sources],
        }
