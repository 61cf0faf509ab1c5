"""``wikigr mcp``: the packs as MCP tools over stdio, spoken with the standard library alone.

Tools (what they do: wikigr/mcp_server.py; how clients see them: catalogue.py):

- ``list_packs()`` — the packs in the packs home;
- ``pack_info(pack)`` — a pack's manifest, statistics and what it covers;
- ``query_pack(pack, question, profile=None, top_k=None)`` — an answer with cited sources, as
  ``wikigr query --json`` prints it (``top_k``: the pack's kg_config.json value, else 5);
  ``pack`` is a name, a list of names or ``all`` (several packs answer together:
  wikigr/packset.py);
- ``search(pack, query, top_k=None, profile=None)`` — retrieval only, no synthesis: the passages
  with their text and citations.

MCP's stdio transport is JSON-RPC 2.0, one message a line. ``initialize`` is answered before the
answering stack (wikigr.agent, numpy, onnxruntime, the stores) is imported: a thread started
after the reply imports it and loads the embedder, and the first tool call waits for it, so a
client connects at once and its first query does not pay the imports. What a client reads is
what the MCP SDK's server gave (tests/test_mcp_wire.py replays it): the same handshake and
versions, tools and schemas, results and errors.

Agents are opened once per pack (and profile) and kept for the life of the server process
(:class:`wikigr.agent_cache.AgentCache`); when a pack is updated or replaced on disk, the next call
reopens it. Calls are serialised: one worker thread runs them in turn, so one store connection is
never used by two threads at once, while the reader answers ``ping`` and the like meanwhile.
Errors come back as tool errors of one line, ``Error: ...`` as the CLI prints them; arguments that
do not fit a tool's schema as ``Error: invalid arguments for TOOL: ARG: WHY``. Every request line
gets exactly one answer (JSON-RPC 2.0): a line that is not UTF-8 or not JSON a parse error
(-32700, id null); JSON that is not a request (``[]``, ``null``, an object as ``id``) an invalid
request (-32600, id null unless the request's id can be read); a request holding a lone surrogate
such as ``"\\udcff"`` (not Unicode text) invalid params (-32602). Notifications get no reply; a
tool call the client cancels (``notifications/cancelled``) neither. Writes to stdout are whole
lines under a lock. While serving, fd 0 points at the null device (a child process reads EOF, not
the protocol).
"""

from __future__ import annotations

import sys
import threading

from wikigr.mcp.session import Session, ToolRunner, WarmUp
from wikigr.mcp.wire import Writer, claim_stdin


def _answering_stack() -> ToolRunner:
    """The tools, with what the first query needs loaded (the warm-up): the default model in a
    thread of its own (onnxruntime builds it without the GIL) while this one imports the
    answering modules and the retrieval stages."""
    from wikigr.mcp_server import Tools, load_model

    threading.Thread(target=load_model, name="mcp-model", daemon=True).start()
    tools = Tools()
    tools.warm()
    return tools


def serve() -> None:
    """Run the server on stdin/stdout until the client closes stdin."""
    lines, restore = claim_stdin()
    warm_up = WarmUp(_answering_stack)
    try:
        idle = Session(Writer(sys.stdout.buffer), warm_up).run(lines)
    finally:
        restore()
    if idle:  # else a call still runs on the stores: the process's exit closes them
        warm_up.close()
