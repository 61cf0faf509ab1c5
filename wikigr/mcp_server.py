"""``wikigr mcp``: the packs as MCP tools over stdio, with the official MCP Python SDK.

Tools:

- ``list_packs()`` — the packs in the packs home;
- ``pack_info(pack)`` — a pack's manifest, statistics and what it covers;
- ``query_pack(pack, question, profile=None, top_k=None)`` — an answer with cited sources, as
  ``wikigr query --json`` prints it (``top_k``: the pack's kg_config.json value, else 5);
  ``pack`` is a name, a list of names or ``all`` (several packs answer together:
  wikigr/packset.py);
- ``search(pack, query, top_k=None, profile=None)`` — retrieval only, no synthesis: the passages
  with their text and citations.

Agents are opened once per pack (and profile) and kept for the life of the server process
(:class:`wikigr.agent_cache.AgentCache`); when a pack is updated or replaced on disk, the next call
reopens it. Calls are serialised: one store connection is never used by two threads at once.
Errors come back as tool errors of one line, ``Error: ...`` as the CLI prints them. Every request
line gets exactly one answer (JSON-RPC 2.0): a line that is not UTF-8 or not JSON a parse error
(-32700, id null); JSON that is not a request (``[]``, ``null``, an object as ``id``) an invalid
request (-32600, id null unless the request's id can be read); a request holding a lone surrogate
such as ``"\\udcff"`` (not Unicode text) invalid params (-32602). Notifications get no reply.
"""

from __future__ import annotations

import fcntl
import os
import sys
from collections.abc import Callable
from typing import Any, BinaryIO, cast

import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.stdio import stdio_server
from mcp.shared._stream_protocols import WriteStream
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from wikigr import __version__, schema
from wikigr.agent_cache import AgentCache
from wikigr.errors import WikigrError
from wikigr.info import agent_pack_info
from wikigr.pack.pack import pack_rows, packs_home

INSTRUCTIONS = (
    "Local knowledge packs built by wikigr. Call list_packs to see them, pack_info for what one "
    "covers, query_pack for an answer citing its sources ([n] is sources[n-1]; say so when "
    "low_confidence is true), search for the raw passages with their text. Their pack argument is "
    'a pack name, a list of names, or "all" for every pack; each source names its pack.'
)

MAX_TOP_K = 100
MAX_FAILED_SOURCES = 50  # listed by pack_info


def _check_top_k(top_k: int | None) -> None:
    if top_k is not None and not 1 <= top_k <= MAX_TOP_K:
        raise ToolError(f"Error: top_k must be between 1 and {MAX_TOP_K}, not {top_k}")


def _fail(exc: WikigrError) -> ToolError:
    return ToolError(f"Error: {exc.message}")


def _one_line_error(tool: str, exc: ToolError) -> str:
    """The text of a failed call: ours (``Error: ...``) as raised, the SDK's own (arguments that
    do not fit the schema, an unknown tool) as one ``Error: ...`` line, without the SDK's
    ``Error executing tool NAME:`` prefix or pydantic's multi-line report."""
    cause = exc.__cause__
    if isinstance(cause, ToolError):  # one of ours, wrapped by the SDK
        return str(cause)
    if isinstance(cause, ValidationError):
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in cause.errors()
        )
        return f"Error: invalid arguments for {tool}: {problems}"
    text = " ".join(str(exc).split())
    return text if text.startswith("Error: ") else f"Error: {text}"


def _reply_to(raw: bytes) -> mcp_types.JSONRPCError | None:
    """The JSON-RPC error reply to a line that is not a message the SDK reads (JSON-RPC 2.0):
    bytes that are not UTF-8 or not JSON are a "Parse error" (-32700, id null); JSON that is not
    a request object (``[]``, ``null``, an object as ``id``) an "Invalid Request" (-32600), with
    the request's id when it can be made out, else null. None for a notification or a response,
    to which no reply is due."""
    try:
        message = schema.parse_json(schema.decode_utf8(raw))
    except schema.JSONError as exc:  # not UTF-8, not JSON, a number too long, nested too deeply
        text = str(exc) if str(exc).startswith("not UTF-8") else "not JSON"
        return _error(None, mcp_types.PARSE_ERROR, f"Error: the message is {text}")
    if isinstance(message, dict):
        if "method" in message and "id" not in message:
            return None  # a notification
        if "method" not in message and "id" in message and ("result" in message or "error" in message):
            return None  # a response
    request_id = message.get("id") if isinstance(message, dict) else None
    readable = isinstance(request_id, int | str) and not isinstance(request_id, bool)
    if not readable or not schema.is_unicode(request_id):
        request_id = None  # JSON-RPC: null when the id cannot be made out
    if not schema.is_unicode(message):
        return _error(
            request_id,
            mcp_types.INVALID_PARAMS,
            "Error: the request holds a lone surrogate (such as \\udcff), which is not Unicode text",
        )
    return _error(request_id, mcp_types.INVALID_REQUEST, "Error: not a valid JSON-RPC request")


def _error(request_id: int | str | None, code: int, message: str) -> mcp_types.JSONRPCError:
    return mcp_types.JSONRPCError(
        jsonrpc="2.0", id=request_id, error=mcp_types.ErrorData(code=code, message=message)
    )


class _CheckedLines:
    """The lines of stdin, as the SDK's stdio transport reads them, minus those it cannot read.

    The SDK decodes stdin with ``errors="replace"`` (so bytes that are not UTF-8 would be answered
    as a query) and drops a line it cannot validate without a reply. Here each line is read as
    bytes; one the SDK's own validator refuses is answered on the write stream
    (:func:`_reply_to`) and skipped, so every request line gets exactly one answer. Like the SDK,
    fd 0 points at the null device while serving (a child reads EOF, not the protocol)."""

    def __init__(self) -> None:
        import anyio

        self._write: WriteStream[SessionMessage] | None = None
        self._ready = anyio.Event()
        self._file, self._restore = _claim_stdin()

    def attach(self, write: WriteStream[SessionMessage]) -> None:
        """The stream the replies to unreadable lines go to (the transport's own)."""
        self._write = write
        self._ready.set()

    async def __anext__(self) -> str:
        import anyio

        await self._ready.wait()
        assert self._write is not None
        while True:
            raw = await anyio.to_thread.run_sync(self._file.readline)
            if not raw:
                raise StopAsyncIteration
            if not raw.strip():
                continue  # a blank line is no message
            try:
                line = raw.decode("utf-8")
                message = mcp_types.jsonrpc_message_adapter.validate_json(line, by_name=False)
            except (UnicodeDecodeError, ValueError):  # pydantic's ValidationError is a ValueError
                message = None
            if message is not None and not _request_read_as_notification(message, line):
                return line
            reply = _reply_to(raw)
            if reply is not None:
                await self._write.send(SessionMessage(reply))

    def __aiter__(self) -> _CheckedLines:
        return self

    def close(self) -> None:
        self._restore()


def _request_read_as_notification(message: mcp_types.JSONRPCMessage, line: str) -> bool:
    """Whether the SDK read a request whose id it refuses (an object, a list, a fraction, null)
    as a notification, which would get no reply: a message with an ``id`` is a request."""
    if not isinstance(message, mcp_types.JSONRPCNotification):
        return False
    data = schema.parse_json(line)  # it validated, so it is JSON
    return isinstance(data, dict) and "id" in data


def _claim_stdin() -> tuple[BinaryIO, Callable[[], None]]:
    """stdin's bytes from a private copy of fd 0, fd 0 itself pointed at the null device, and
    the function that points it back; stdin's own buffer when fd 0 cannot be copied."""
    try:
        private = fcntl.fcntl(0, fcntl.F_DUPFD_CLOEXEC, 3)
    except OSError:
        return sys.stdin.buffer, lambda: None
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    # closefd=False: a worker thread may still block on a read when serving ends (as in the SDK).

    def restore() -> None:
        os.dup2(private, 0)

    return os.fdopen(private, "rb", closefd=False), restore


class _Server(MCPServer):
    """The SDK's server with wikigr's error replies (one ``Error: ...`` line; an answer to every
    request, readable or not)."""

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        try:
            return await super().call_tool(name, arguments, context)
        except UnexpectedToolError:
            raise  # a crash: the SDK logs it and tells the client only the tool's name
        except ToolError as exc:
            raise ToolError(_one_line_error(name, exc)) from exc.__cause__

    async def run_stdio_async(self) -> None:
        lines = _CheckedLines()
        try:
            async with stdio_server(stdin=cast(Any, lines)) as (read_stream, write_stream):
                lines.attach(write_stream)
                await self._lowlevel_server.run(
                    read_stream, write_stream, self._lowlevel_server.create_initialization_options()
                )
        finally:
            lines.close()


def create_server() -> tuple[MCPServer, AgentCache]:
    server = _Server("wikigr", version=__version__, instructions=INSTRUCTIONS)
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
        try:
            with cache.lock:
                return agent_pack_info(cache.one(pack, None, "query"), MAX_FAILED_SOURCES)
        except WikigrError as exc:
            raise _fail(exc) from exc

    @server.tool()
    def query_pack(
        pack: str | list[str], question: str, profile: str | None = None, top_k: int | None = None
    ) -> dict[str, Any]:
        """Answer a question from a pack, citing its sources: [n] in the answer is sources[n-1]
        (title, section, url, pack, related, and the whole passage as text). ``top_k`` passages
        are retrieved; related is true for a passage of a linked page added after them. ``pack``:
        a name, a list of names (or "a,b"), or "all" for every pack; several packs are searched
        together and their passages merged. Without Claude the answer is the passages' sentences
        that answer the question (answer_mode "extractive"; "rules" on an OpenML pack).
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
        pack: str | list[str], query: str, top_k: int | None = None, profile: str | None = None
    ) -> dict[str, Any]:
        """Retrieval only (no synthesis): the passages of a pack most relevant to ``query``, best
        first, each with its text and citation (title, section, url, score, pack). ``pack``: a
        name, a list of names, or "all"."""
        _check_top_k(top_k)
        if not query.strip():  # its argument is the query (the agent would say "the question")
            raise ToolError("Error: the query is empty")
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
