"""``wikigr mcp``: the packs as MCP tools over stdio, with the official MCP Python SDK.

Tools:

- ``list_packs()`` — the packs in the packs home;
- ``pack_info(pack)`` — a pack's manifest, statistics and what it covers;
- ``query_pack(pack, question, profile=None, top_k=5)`` — an answer with cited sources, as
  ``wikigr query --json`` prints it;
- ``search(pack, query, top_k=5, profile=None)`` — retrieval only, no synthesis: the passages
  with their text and citations.

Agents are opened once per pack (and profile) and kept for the life of the server process; when
a pack is updated or replaced on disk, the next call reopens it. Calls are serialised: one store
connection is never used by two threads at once. Errors come back as tool errors of one line.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.errors import WikigrError
from wikigr.pack.pack import open_pack, pack_rows, packs_home

INSTRUCTIONS = (
    "Local knowledge packs built by wikigr. Call list_packs to see them, pack_info for what one "
    "covers, query_pack for an answer citing its sources ([n] is sources[n-1]; say so when "
    "low_confidence is true), search for the raw passages with their text."
)


class AgentCache:
    """Open agents by (pack folder, profile, mode); reopened when the pack changes on disk."""

    def __init__(self) -> None:
        self._agents: dict[tuple[str, str | None, str], tuple[tuple[int, int, int], KnowledgeGraphAgent]] = {}
        self.lock = threading.Lock()

    @staticmethod
    def _stamp(path: Path) -> tuple[int, int, int]:
        folder = os.stat(path)
        manifest = os.stat(path / "manifest.json")
        return (folder.st_ino, manifest.st_ino, manifest.st_mtime_ns)

    def get(self, ref: str, profile: str | None, mode: str) -> KnowledgeGraphAgent:
        pack = open_pack(ref)
        key = (str(pack.path), profile, mode)
        stamp = self._stamp(pack.path)
        cached = self._agents.get(key)
        if cached is not None and cached[0] == stamp:
            return cached[1]
        if cached is not None:
            cached[1].close()
            del self._agents[key]
        if mode == "search":
            # Retrieval only: no synthesis, no examples for it, never Claude.
            agent = KnowledgeGraphAgent(pack, profile=profile, llm=None)
            drop = {"synthesize", "few_shot", "multi_query"}
            agent.stages = [s for s in agent.stages if s.name not in drop]
        else:
            agent = KnowledgeGraphAgent(pack, profile=profile)
        self._agents[key] = (stamp, agent)
        return agent

    def close(self) -> None:
        for _, agent in self._agents.values():
            agent.close()
        self._agents.clear()


MAX_TOP_K = 100


def _check_top_k(top_k: int) -> None:
    if not 1 <= top_k <= MAX_TOP_K:
        raise ToolError(f"Error: top_k must be between 1 and {MAX_TOP_K}, not {top_k}")


def _fail(exc: WikigrError) -> ToolError:
    return ToolError(f"Error: {exc.message}")


def create_server() -> tuple[MCPServer, AgentCache]:
    server = MCPServer("wikigr", version=__version__, instructions=INSTRUCTIONS)
    cache = AgentCache()

    @server.tool()
    def list_packs() -> dict[str, Any]:
        """List the knowledge packs installed in the packs home ($WIKIGR_HOME/packs)."""
        rows = pack_rows()
        return {"home": str(packs_home()), "packs": rows}

    @server.tool()
    def pack_info(pack: str) -> dict[str, Any]:
        """What a pack is and covers: manifest (without the per-source list), statistics, the
        article titles it holds (most linked first). ``pack`` is a pack name or a folder path."""
        from wikigr.skill import digest

        try:
            with cache.lock:
                agent = cache.get(pack, None, "query")
                info = digest(agent.context.store)
                manifest = agent.pack.manifest
                data = {k: v for k, v in manifest.to_dict().items() if k not in ("sources", "files")}
                data["path"] = str(agent.pack.path)
                data["sources"] = {
                    "total": len(manifest.sources),
                    "ok": sum(1 for s in manifest.sources if s.status == "ok"),
                }
                data["titles"] = info.titles
                data["categories"] = info.categories
                data["vector_search"] = agent.context.store.vector_path
                return data
        except WikigrError as exc:
            raise _fail(exc) from exc

    @server.tool()
    def query_pack(pack: str, question: str, profile: str | None = None, top_k: int = 5) -> dict[str, Any]:
        """Answer a question from a pack, citing its sources: [n] in the answer is sources[n-1]
        (title, section, url, and the whole passage as text). Without Claude the answer is the
        passages' sentences that answer the question (answer_mode "extractive"). ``profile``: auto
        (default: picks the retrieval for the pack and the question), baseline (fastest),
        balanced, max, graph (PageRank over the pack's entity graph) or routed (escalates per
        question).
        When low_confidence is true the pack has little grounded context for the question."""
        _check_top_k(top_k)
        try:
            with cache.lock:
                result = cache.get(pack, profile, "query").query(question, top_k=top_k)
        except WikigrError as exc:
            raise _fail(exc) from exc
        data = result.to_json()
        data["trace"] = {
            k: data["trace"].get(k) for k in ("profile", "vector_path", "answer_mode", "total_ms")
        }
        return data

    @server.tool()
    def search(pack: str, query: str, top_k: int = 5, profile: str | None = None) -> dict[str, Any]:
        """Retrieval only (no synthesis): the passages of a pack most relevant to ``query``, best
        first, each with its text and citation (title, section, url, score)."""
        _check_top_k(top_k)
        try:
            with cache.lock:
                result = cache.get(pack, profile, "search").query(query, top_k=top_k)
        except WikigrError as exc:
            raise _fail(exc) from exc
        return {
            "query": result.question,
            "profile": result.profile,
            "confidence": round(result.confidence, 4),
            "low_confidence": result.low_confidence,
            "results": [s.to_json() for s in result.sources],
        }

    return server, cache


def serve() -> None:
    """Run the server on stdin/stdout until the client closes it."""
    server, cache = create_server()
    try:
        server.run("stdio")
    finally:
        cache.close()
