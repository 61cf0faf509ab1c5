"""``wikigr mcp`` spoken to by the MCP SDK's own client over stdio (a real subprocess)."""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import DOCS
from wikigr.build import update_pack


def _payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result
    if result.structured_content is not None:
        data: dict[str, Any] = result.structured_content
        return data.get("result", data) if set(data) == {"result"} else data
    return dict(json.loads(result.content[0].text))


def test_mcp_tools_over_stdio(built_pack: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    shutil.copytree(built_pack, home / "packs" / "fixture")
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "wikigr", "mcp"],
        env={"WIKIGR_HOME": str(home), "ANTHROPIC_API_KEY": ""},  # no Claude: extractive answers
        cwd=str(tmp_path),
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            tools = {t.name for t in (await client.list_tools()).tools}
            assert tools == {"list_packs", "pack_info", "query_pack", "search"}

            packs = _payload(await client.call_tool("list_packs", {}))
            assert [p["name"] for p in packs["packs"]] == ["fixture"]

            info = _payload(await client.call_tool("pack_info", {"pack": "fixture"}))
            assert info["stats"]["articles"] == 4 and "Sockets guide" in info["titles"]

            answer = _payload(
                await client.call_tool(
                    "query_pack",
                    {"pack": "fixture", "question": "How do I set a socket timeout?", "top_k": 2},
                )
            )
            assert answer["sources"][0]["section"] == "Timeouts" and len(answer["sources"]) == 2
            assert "[1]" in answer["answer"] and answer["profile"] == "auto"
            # What `wikigr query --json` prints: the short answer, and the whole passages.
            assert answer["answer_mode"] == answer["trace"]["answer_mode"] == "extractive"
            assert "settimeout" in answer["sources"][0]["text"]
            assert len(answer["answer"].split()) < len(" ".join(s["text"] for s in answer["sources"]).split())
            baseline = _payload(
                await client.call_tool(
                    "query_pack", {"pack": "fixture", "question": "socket timeout", "profile": "baseline"}
                )
            )
            assert baseline["profile"] == "baseline"

            found = _payload(await client.call_tool("search", {"pack": "fixture", "query": "settimeout"}))
            assert found["results"][0]["section"] == "Timeouts"
            assert "settimeout" in found["results"][0]["text"]

            # The pack is updated on disk while the server has it open: the next call reopens it.
            urls = tmp_path / "urls.txt"
            urls.write_text((DOCS / "json.html").as_uri() + "\n")
            update_pack(home / "packs" / "fixture", urls_file=urls)
            info = _payload(await client.call_tool("pack_info", {"pack": "fixture"}))
            assert info["stats"]["articles"] == 1 and info["titles"] == ["Working with JSON"]
            found = _payload(await client.call_tool("search", {"pack": "fixture", "query": "settimeout"}))
            assert all(r["title"] == "Working with JSON" for r in found["results"])

            missing = await client.call_tool("query_pack", {"pack": "nope", "question": "hi"})
            assert missing.is_error and "unknown pack 'nope'" in missing.content[0].text
            for tool, pack in (("pack_info", "a" * 300), ("search", ",".join(["nope"] * 100))):
                long = await client.call_tool(
                    tool, {"pack": pack, "query": "x"} if tool == "search" else {"pack": pack}
                )
                text = long.content[0].text  # not the SDK's "Error executing tool": the file system's limit
                assert long.is_error and text.startswith("Error: ") and "pack" in text and len(text) < 400, (
                    text
                )
            bad = await client.call_tool(
                "query_pack", {"pack": "fixture", "question": "hi", "profile": "zzz"}
            )
            assert bad.is_error and "unknown profile" in bad.content[0].text
            big = await client.call_tool("search", {"pack": "fixture", "query": "x", "top_k": 0})
            assert big.is_error and "top_k must be between 1 and 100" in big.content[0].text

    anyio.run(session)


def _raw_reply(proc: subprocess.Popen[bytes], timeout: float = 600) -> dict[str, Any] | None:
    """The server's next line, parsed; None when none comes (EOF, or nothing for ``timeout``)."""
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    line = proc.stdout.readline() if ready else b""
    return dict(json.loads(line)) if line else None


def test_mcp_answers_every_request_line_once(wikigr_home: Path) -> None:
    """Raw lines to the real server: each line that is not a request it can read (not JSON-RPC,
    not UTF-8, an id it refuses) gets one JSON-RPC error with id null; a deeply nested tools/call
    an answer; a notification none; and the server keeps serving."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "wikigr", "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    assert proc.stdin is not None

    def send(line: bytes) -> None:
        assert proc.stdin is not None
        proc.stdin.write(line + b"\n")
        proc.stdin.flush()

    def call(request_id: int, arguments: bytes) -> bytes:
        return (
            b'{"jsonrpc": "2.0", "id": %d, "method": "tools/call", '
            b'"params": {"name": "search", "arguments": %s}}' % (request_id, arguments)
        )

    try:
        init = {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "raw", "version": "1"},
        }
        send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init}).encode())
        assert (_raw_reply(proc) or {}).get("id") == 1
        send(b'{"jsonrpc": "2.0", "method": "notifications/initialized"}')

        invalid = {"code": -32600, "message": "Error: not a valid JSON-RPC request"}
        for line in (
            b"[]",
            b"[1,2,3]",
            b"null",
            b"{}",
            b'{"jsonrpc": "2.0", "id": {}, "method": "ping"}',  # the SDK would read it as a notification
            b'{"jsonrpc": "2.0", "id": null, "method": "tools/list"}',
        ):
            assert _raw_reply_to(send, proc, line) == {"jsonrpc": "2.0", "id": None, "error": invalid}, line
        not_utf8 = _raw_reply_to(send, proc, call(2, b'{"pack": "nope", "query": "socket \xff timeout"}'))
        assert not_utf8 is not None and not_utf8["id"] is None and not_utf8["error"]["code"] == -32700
        assert not_utf8["error"]["message"].startswith("Error: the message is not UTF-8")

        for depth in (50, 150, 190, 198, 250, 1000, 100_000):
            for nest in (b"[", b'{"a":'):
                closing = b"]" if nest == b"[" else b"}"
                deep = nest * depth + (b"" if nest == b"[" else b"1") + closing * depth
                reply = _raw_reply_to(
                    send, proc, call(depth, b'{"pack": "nope", "query": "q", "x": %s}' % deep)
                )
                assert reply is not None, (depth, nest)
                assert reply["id"] in (depth, None) and ("error" in reply or reply["result"]["isError"]), (
                    reply
                )

        send(b'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": [1]}')  # no reply is due
        send(b'{"jsonrpc": "2.0", "id": 3, "method": "tools/list"}')
        reply = _raw_reply(proc)
        assert reply is not None and reply["id"] == 3 and len(reply["result"]["tools"]) == 4
    finally:
        proc.stdin.close()
        proc.wait(timeout=600)
        assert proc.stdout is not None
        assert proc.stdout.read() == b""  # nothing more than one answer a line
        proc.stdout.close()


def _raw_reply_to(send: Any, proc: subprocess.Popen[bytes], line: bytes) -> dict[str, Any] | None:
    send(line)
    return _raw_reply(proc)


@pytest.mark.parametrize("argv", [["mcp", "--help"]])
def test_mcp_help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    from wikigr.cli import run

    assert run(argv) == 0
    assert "MCP server" in capsys.readouterr().out
