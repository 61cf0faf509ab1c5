"""What ``wikigr mcp`` answers on the wire, line by line: the sessions tests/test_mcp_wire.py sends
and the replies recorded from the server as it was on the MCP SDK (tests/fixtures/mcp_wire.json).

Each session is the lines a client writes, in order. After each line the runner writes a
sentinel ``ping`` and reads until its answer: what came before it is the line's reply (none for
a notification); a ``tools/call`` is waited for by its id, since its answer may come after the
ping's. The packs home is empty, so every answer is the same on every machine; its path is
written ``<home>`` in the record.

Record again (only when what clients see is meant to change):

    PYTHONPATH=OLD_COPY python tests/mcp_wire.py tests/fixtures/mcp_wire.json
"""

from __future__ import annotations

import json
import os
import select
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

FIXTURE = Path(__file__).parent / "fixtures" / "mcp_wire.json"
ENVELOPE_KEYS = (
    "io.modelcontextprotocol/protocolVersion",
    "io.modelcontextprotocol/clientCapabilities",
    "io.modelcontextprotocol/clientInfo",
)
MODERN = "2026-07-28"


def request(request_id: Any, method: str, params: Any = None, **extra: Any) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    message.update(extra)
    return json.dumps(message)


def notification(method: str, params: Any = None) -> str:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message)


def initialize(request_id: Any, version: Any) -> str:
    return request(
        request_id,
        "initialize",
        {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}},
    )


def envelope(params: dict[str, Any] | None = None, version: Any = MODERN) -> dict[str, Any]:
    """``params`` with the 2026-07-28 per-request ``_meta`` envelope."""
    meta = {
        ENVELOPE_KEYS[0]: version,
        ENVELOPE_KEYS[1]: {},
        ENVELOPE_KEYS[2]: {"name": "raw", "version": "1"},
    }
    return {**(params or {}), "_meta": meta}


def call(request_id: Any, tool: Any, arguments: Any = None, modern: bool = False, **more: Any) -> str:
    params: dict[str, Any] = {"name": tool, **more}
    if arguments is not None:
        params["arguments"] = arguments
    return request(request_id, "tools/call", envelope(params) if modern else params)


def nested(line: str, depth: int) -> str:
    """``line`` with its argument ``"x": 0`` nested ``depth`` lists deep."""
    return line.replace('"x": 0', '"x": ' + "[" * depth + "]" * depth)


def _tool_calls(first: int, modern: bool = False) -> list[str]:
    """tools/call lines: unknown tools, argument errors of each kind, our own errors."""
    n = iter(range(first, first + 100))
    calls: list[tuple[Any, Any]] = [
        ("nope", {}),
        ("list_packs", {}),
        ("list_packs", None),
        ("search", {"pack": "nope", "query": "x", "top_k": "many"}),
        ("search", {"pack": "nope"}),
        ("search", {}),
        ("query_pack", {"pack": 5, "question": "q"}),
        ("query_pack", {"pack": ["a", 5], "question": "q"}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": 2.5}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": 2.0}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": True}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": "3"}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": " 3 "}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": "3.0"}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": 0}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": 101}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": -1}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": 10**30}),
        ("query_pack", {"pack": "nope", "question": "q", "top_k": None, "profile": None}),
        ("query_pack", {"pack": "nope", "question": "q", "profile": 5}),
        ("query_pack", {"pack": "nope", "question": "q", "profile": "zzz"}),
        ("query_pack", {"pack": '["nope", "other"]', "question": "q"}),
        ("query_pack", {"pack": "nope,other", "question": "q"}),
        ("query_pack", {"pack": ["nope", "other"], "question": "q"}),
        ("query_pack", {"pack": "all", "question": "q"}),
        ("query_pack", {"pack": [], "question": "q"}),
        ("query_pack", {"pack": {"a": 1}, "question": "q"}),
        ("query_pack", {"pack": '{"a": 1}', "question": "q"}),
        ("query_pack", {"pack": "5", "question": "q"}),
        ("query_pack", {"pack": "nope", "question": ""}),
        ("query_pack", {"pack": "nope", "question": 5}),
        ("query_pack", {"pack": "nope", "question": None}),
        ("query_pack", {"pack": "nope", "question": ["a"]}),
        ("query_pack", {"pack": "nope", "question": "q", "extra": 1}),
        ("query_pack", {"pack": "nope"}),
        ("query_pack", {"question": 5, "top_k": "x", "profile": 1}),
        ("search", {"pack": "nope", "query": "  "}),
        ("search", {"pack": "nope", "query": "  ", "top_k": 0}),
        ("search", {"pack": "nope", "query": "x", "top_k": 3}),
        ("pack_info", {"pack": "nope"}),
        ("pack_info", {}),
        ("pack_info", {"pack": "a" * 300}),
        ("pack_info", {"pack": ["nope"]}),
        ("pack_info", {"pack": "../x"}),
        ("list_packs", {"extra": 1}),
    ]
    lines = [call(next(n), tool, arguments, modern) for tool, arguments in calls]
    base = envelope() if modern else {}
    lines += [
        request(next(n), "tools/call", {**base, "arguments": {}}),  # no name
        request(next(n), "tools/call", {**base, "name": 5}),
        request(next(n), "tools/call", {**base, "name": "search", "arguments": []}),
        request(next(n), "tools/call", {**base, "name": "search", "arguments": "x"}),
        request(next(n), "tools/call", envelope() if modern else None),
    ]
    return lines


def _requests(first: int, modern: bool = False) -> list[str]:
    """Every other method a client may send."""
    n = iter(range(first, first + 100))

    def p(params: dict[str, Any] | None = None) -> dict[str, Any] | None:
        return envelope(params) if modern else params

    return [
        request(next(n), "ping", p()),
        request(next(n), "ping", p({})),
        request(next(n), "tools/list", p()),
        request(next(n), "tools/list", p({"cursor": "x"})),
        request(next(n), "prompts/list", p()),
        request(next(n), "prompts/get", p({"name": "x"})),
        request(next(n), "resources/list", p()),
        request(next(n), "resources/templates/list", p()),
        request(next(n), "resources/read", p({"uri": "file:///x"})),
        request(next(n), "resources/subscribe", p({"uri": "file:///x"})),
        request(next(n), "resources/unsubscribe", p({"uri": "file:///x"})),
        request(next(n), "logging/setLevel", p({"level": "info"})),
        request(
            next(n),
            "completion/complete",
            p({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}}),
        ),
        request(next(n), "subscriptions/listen", p({})),
        request(next(n), "server/discover", p()),
        request(next(n), "foo/bar", p()),
        request(next(n), "tools/list", [] if not modern else p()),
        request(next(n), "ping", p(), extra="x"),
        request("abc", "ping", p()),
        request(-1, "ping", p()),
        request(2**70, "ping", p()),
        request(1.0, "ping", p()),
        request(1.5, "ping", p()),
        request(True, "ping", p()),
        request(None, "ping", p()),
        request(next(n), "ping", p(), jsonrpc="1.0"),
        request(next(n), 5, p()),
        notification("notifications/cancelled", {"requestId": 999}),
        notification("notifications/progress", {"progressToken": 1, "progress": 1}),
        notification("notifications/foo"),
        notification("notifications/roots/list_changed"),
        '{"jsonrpc": "2.0", "id": 77, "result": {}}',
        '{"jsonrpc": "2.0", "id": 78, "error": {"code": 1, "message": "x"}}',
        "[]",
        "null",
        "{}",
        "1",
        '"text"',
        "this is not JSON",
        '{"jsonrpc": "2.0", "id": 1, "method": "ping"',
        "\ufeff" + request(next(n), "ping", p()),
        request(next(n), "ping", p()).replace('"ping"', '"ping\\udcff"'),
        "\udcff" + request(next(n), "ping", p()),  # a byte that is not UTF-8
        "[" * 300 + "]" * 300,
        nested(call(next(n), "search", {"pack": "nope", "query": "q", "x": 0}, modern), 150),
        nested(call(next(n), "search", {"pack": "nope", "query": "q", "x": 0}, modern), 250),
        nested(call(next(n), "search", {"pack": "nope", "query": "q", "x": 0}, modern), 1000),
        call(next(n), "search", {"pack": "nope", "query": "q \\udcff"}, modern).replace(
            "\\\\udcff", "\\udcff"
        ),
        call(next(n), "search", {"pack": "nope", "query": "q", "top_k": 1e400}, modern).replace(
            "Infinity", "1e400"
        ),
        call(next(n), "search", {"pack": "nope", "query": "q", "top_k": float("nan")}, modern),
        "",
        "   ",
    ]


def _legacy(version: Any) -> list[str]:
    return [
        initialize(1, version),
        notification("notifications/initialized"),
        request(2, "tools/list"),
        call(3, "list_packs", {}),
        call(4, "search", {"pack": "nope", "query": "x", "top_k": "many"}),
        call(5, "nope", {}),
        request(6, "ping"),
        request(7, "prompts/list"),
        request(8, "resources/list"),
    ]


SESSIONS: dict[str, list[str]] = {
    "legacy": [
        request(0, "ping"),
        request(1, "tools/list"),
        call(2, "list_packs", {}),
        notification("notifications/initialized"),
        initialize(3, "2025-06-18"),
        request(4, "tools/list"),
        notification("notifications/initialized"),
        *_requests(10),
        *_tool_calls(200),
        request(300, "tools/list", envelope()),  # the 2026 envelope on a legacy connection
        initialize(301, "2025-06-18"),  # a second initialize
        initialize(302, "2024-11-05"),
    ],
    "legacy-2024-11-05": _legacy("2024-11-05"),
    "legacy-2025-03-26": _legacy("2025-03-26"),
    "legacy-2025-11-25": _legacy("2025-11-25"),
    "legacy-unknown-version": _legacy("1999-01-01"),
    "legacy-modern-version": _legacy(MODERN),
    "legacy-version-not-text": _legacy(5),
    "initialize-malformed": [
        request(1, "initialize"),
        request(2, "initialize", {}),
        request(3, "initialize", {"protocolVersion": "2025-06-18"}),
        request(4, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {}}),
        request(5, "initialize", {"protocolVersion": "2025-06-18", "capabilities": [], "clientInfo": {}}),
        initialize(6, "2025-06-18"),
        request(7, "tools/list"),
    ],
    "initialize-with-envelope": [
        request(1, "initialize", {**json.loads(initialize(1, MODERN))["params"], **envelope()}),
        request(2, "tools/list"),
        request(3, "tools/list", envelope()),
    ],
    "modern": [
        request(1, "server/discover", envelope()),
        notification("notifications/initialized"),
        request(2, "tools/list", envelope()),
        *_requests(10, modern=True),
        *_tool_calls(200, modern=True),
        request(300, "ping"),  # no envelope
        request(301, "tools/list"),
        request(302, "tools/list", {"_meta": {ENVELOPE_KEYS[0]: MODERN}}),
        request(303, "tools/list", {"_meta": {ENVELOPE_KEYS[1]: {}}}),
        request(304, "tools/list", {"_meta": 5}),
        request(305, "tools/list", envelope(version="2025-06-18")),
        request(306, "tools/list", envelope(version=5)),
        request(307, "tools/list", {"_meta": {ENVELOPE_KEYS[0]: MODERN, ENVELOPE_KEYS[1]: {}}}),
        initialize(308, "2025-06-18"),
        initialize(309, MODERN),
    ],
    "modern-listen": [
        request(1, "server/discover", envelope()),
        request(2, "subscriptions/listen", envelope({"notifications": {"toolsListChanged": True}})),
        notification("notifications/cancelled", {"requestId": 2}),
        request(3, "subscriptions/listen", envelope({"notifications": {}})),
        request(4, "subscriptions/listen", envelope({"notifications": 5})),
        request(
            5,
            "subscriptions/listen",
            envelope(
                {
                    "notifications": {
                        "toolsListChanged": True,
                        "promptsListChanged": False,
                        "resourcesListChanged": None,
                        "resourceSubscriptions": ["file:///x"],
                        "taskIds": ["t"],
                    }
                }
            ),
        ),
        request(6, "subscriptions/listen", envelope({"notifications": {"resourceSubscriptions": []}})),
    ],
    "modern-first-tools-list": [
        request(1, "tools/list", envelope()),
        call(2, "list_packs", {}, modern=True),
    ],
    "modern-unsupported-version": [
        request(1, "server/discover", envelope(version="2099-01-01")),
        request(2, "tools/list", envelope()),
        initialize(3, "2025-06-18"),
    ],
}


def sentinel(session: str, index: int) -> str:
    params = envelope() if session.startswith("modern") else None
    return request(f"sentinel-{index}", "ping", params)


def _send(proc: subprocess.Popen[bytes], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line.encode("utf-8", "surrogateescape") + b"\n")
    proc.stdin.flush()


class Lines:
    """The lines of a child's stdout, each within a deadline (``select`` on the pipe itself: a
    buffered reader may hold a second line that ``select`` does not see)."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        self.fd = proc.stdout.fileno()
        self.buffer = b""

    def next(self, deadline: float) -> dict[str, Any] | None:
        """The next reply, parsed; None at EOF; TimeoutError when none comes by ``deadline``."""
        while b"\n" not in self.buffer:
            ready, _, _ = select.select([self.fd], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:
                raise TimeoutError("no reply")
            chunk = os.read(self.fd, 1 << 16)
            if not chunk:
                return None
            self.buffer += chunk
        line, _, self.buffer = self.buffer.partition(b"\n")
        return dict(json.loads(line))


def _awaited_id(line: str) -> Any:
    """The id of a tools/call line the server will answer by its id (its answer may come late)."""
    try:
        message = json.loads(line.encode("utf-8", "surrogateescape"))
    except (ValueError, RecursionError):
        return None
    if isinstance(message, dict) and message.get("method") == "tools/call":
        request_id = message.get("id")
        if isinstance(request_id, int | str) and not isinstance(request_id, bool):
            return request_id
    return None


def run_session(name: str, command: list[str], env: dict[str, str], home: Path) -> list[list[Any]]:
    """``[line, replies]`` for each line of the session ``name``."""
    proc = subprocess.Popen(  # not in a checkout: `python -m` puts the working folder first on sys.path
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=home
    )
    lines = Lines(proc)
    pending: dict[Any, int] = {}  # tools/call ids not answered yet -> their line's index
    record: list[list[Any]] = []
    try:
        for index, line in enumerate(SESSIONS[name]):
            replies: list[Any] = []
            record.append([line, replies])
            awaited = _awaited_id(line)
            if awaited is not None:
                pending[awaited] = index
            _send(proc, line)
            _send(proc, sentinel(name, index))
            deadline = time.monotonic() + (600 if index == 0 else 120)
            seen_sentinel = False
            while True:
                try:
                    reply = lines.next(deadline)
                except TimeoutError:
                    raise TimeoutError(f"no reply to line {index} of {name}: {line[:200]}") from None
                if reply is None:
                    raise EOFError(f"the server ended at line {index} of {name}")
                reply_id = reply.get("id")
                if reply_id == f"sentinel-{index}":
                    seen_sentinel = True
                elif reply_id is not None and reply_id in pending:
                    record[pending.pop(reply_id)][1].append(_canonical(reply, home))
                else:
                    replies.append(_canonical(reply, home))
                if any(r.get("id") is None for r in replies):
                    pending.pop(awaited, None)  # answered as a line whose id is not read
                if seen_sentinel and awaited not in pending:
                    break
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=120)
        assert proc.stdout is not None
        rest = lines.buffer + proc.stdout.read()
        proc.stdout.close()
    if rest:
        record.append(["<EOF>", [_canonical(json.loads(x), home) for x in rest.splitlines()]])
    return record


def _canonical(reply: Any, home: Path) -> Any:
    return json.loads(json.dumps(reply).replace(json.dumps(str(home))[1:-1], "<home>"))


def record_all(command: list[str]) -> dict[str, list[list[Any]]]:
    out: dict[str, list[list[Any]]] = {}
    for name in SESSIONS:
        with tempfile.TemporaryDirectory() as folder:
            home = Path(folder) / "home"
            (home / "packs").mkdir(parents=True)
            env = {**os.environ, "WIKIGR_HOME": str(home), "ANTHROPIC_API_KEY": ""}
            out[name] = run_session(name, command, env, home)
    return out


if __name__ == "__main__":
    recorded = record_all([sys.executable, "-m", "wikigr", "mcp"])
    Path(sys.argv[1]).write_text(json.dumps(recorded, indent=1, ensure_ascii=True) + "\n", encoding="utf-8")
