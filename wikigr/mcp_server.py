"""``wikigr mcp``: the packs as MCP tools over stdio, with the official MCP Python SDK.

Tools:

- ``list_packs()`` — the packs in the packs home;
- ``pack_info(pack)`` — a pack's manifest, statistics and what it covers;
- ``query_pack(pack, question, profile=None, top_k=5)`` — an answer with cited sources, as
  ``wikigr query --json`` prints it; ``pack`` is a name, a list of names or ``all``
  (several packs answer together: wikigr/packset.py);
- ``search(pack, query, top_k=5, profile=None)`` — retrieval only, no synthesis: the passages
  with their text and citations.

Agents are opened once per pack (and profile) and kept for the life of the server process
(:class:`wikigr.agent_cache.AgentCache`); when a pack is updated or replaced on disk, the next call
reopens it. Calls are serialised: one store connection is never used by two threads at once.
Errors come back as tool errors of one line.
"""

from __future__ import annotations

from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from wikigr import __version__
from wikigr.agent_cache import AgentCache
from wikigr.errors import WikigrError
from wikigr.pack.pack import pack_rows, packs_home

INSTRUCTIONS = (
    "Local knowledge packs built by wikigr. Call list_packs to see them, pack_info for what one "
    "covers, query_pack for an answer citing its sources ([n] is sources[n-1]; say so when "
    "low_confidence is true), search for the raw passages with their text. Their pack argument is "
    'a pack name, a list of names, or "all" for every pack; each source names its pack.'
)


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
                agent = cache.one(pack, None, "query")
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
    def query_pack(
        pack: str | list[str], question: str, profile: str | None = None, top_k: int = 5
    ) -> dict[str, Any]:
        """Answer a question from a pack, citing its sources: [n] in the answer is sources[n-1]
        (title, section, url, pack). ``pack``: a name, a list of names (or "a,b"), or "all" for
        every pack; several packs are searched together and their passages merged.
        ``profile``: auto (default: picks the retrieval for the pack and the question), baseline
        (fastest), balanced, max, graph (PageRank over the pack's entity graph) or routed
        (escalates per question).
        When low_confidence is true the pack has little grounded context for the question."""
        _check_top_k(top_k)
        try:
            with cache.lock:
                result = cache.get(pack, profile, "query").query(question, top_k=top_k)
        except WikigrError as exc:
            raise _fail(exc) from exc
        data = result.to_json()
        data["trace"] = {
            k: data["trace"].get(k)
            for k in ("profile", "vector_path", "answer_mode", "total_ms", "packs")
            if k in data["trace"]
        }
        return data

    @server.tool()
    def search(
        pack: str | list[str], query: str, top_k: int = 5, profile: str | None = None
    ) -> dict[str, Any]:
        """Retrieval only (no synthesis): the passages of a pack most relevant to ``query``, best
        first, each with its text and citation (title, section, url, score, pack). ``pack``: a
        name, a list of names, or "all"."""
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
            "results": [{**s.to_json(), "text": s.text} for s in result.sources],
        }

    return server, cache


def serve() -> None:
    """Run the server on stdin/stdout until the client closes it."""
    server, cache = create_server()
    try:
        server.run("stdio")
    finally:
        cache.close()
