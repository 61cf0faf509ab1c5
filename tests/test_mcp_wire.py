"""``wikigr mcp`` speaks MCP's stdio transport itself: what a client reads is what the MCP SDK's
server said (the recorded wire), and it answers ``initialize`` before importing the SDK or the
answering stack."""

from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from tests.mcp_wire import FIXTURE, SESSIONS, Lines, call, initialize, notification, request, run_session
from wikigr.mcp.catalogue import TOOLS, ArgumentsError, check_arguments
from wikigr.mcp.protocol import pretty_json
from wikigr.mcp.wire import encode

SERVER = [sys.executable, "-m", "wikigr", "mcp"]


@pytest.mark.parametrize("session", sorted(SESSIONS))
def test_every_line_is_answered_as_the_sdk_server_answered_it(session: str, tmp_path: Path) -> None:
    """The sessions of tests/mcp_wire.py (the handshake at each protocol version, the 2026-07-28
    envelope, every method, tool errors, argument errors, malformed lines) get the replies the
    server on the MCP SDK gave, recorded in tests/fixtures/mcp_wire.json."""
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))[session]
    home = tmp_path / "home"
    (home / "packs").mkdir(parents=True)
    env = {**os.environ, "WIKIGR_HOME": str(home), "ANTHROPIC_API_KEY": ""}
    replayed = run_session(session, SERVER, env, home)
    for (line, expected), (_, got) in zip(recorded, replayed, strict=True):
        assert got == expected, line[:300]


# Run as `python WRAPPER OUT -m wikigr mcp`: the modules loaded when the first byte is written to
# stdout (the initialize reply) go to OUT, then the server runs as the console script runs it.
WRAPPER = textwrap.dedent("""
    import io, json, runpy, sys

    out = sys.argv[1]

    class Recording:
        def __init__(self, raw):
            self.raw = raw
            self.done = False

        def write(self, data):
            if not self.done:
                self.done = True
                with open(out, "w") as f:
                    json.dump(sorted(sys.modules), f)
            return self.raw.write(data)

        def fileno(self):  # not a descriptor: the MCP SDK then writes here too, not to a copy of fd 1
            raise io.UnsupportedOperation("fileno")

        def __getattr__(self, name):
            return getattr(self.raw, name)

    class Stdout:
        def __init__(self, real):
            self.real = real
            self.buffer = Recording(real.buffer)

        def __getattr__(self, name):
            return getattr(self.real, name)

    sys.stdout = Stdout(sys.stdout)
    sys.argv = ["wikigr", "mcp"]
    runpy.run_module("wikigr", run_name="__main__", alter_sys=True)
""")
NOT_BEFORE_THE_REPLY = ("mcp", "mcp_types", "pydantic", "anyio", "numpy", "onnxruntime", "ladybug")


def test_initialize_is_answered_before_the_sdk_or_the_answering_stack_is_imported(tmp_path: Path) -> None:
    wrapper, modules = tmp_path / "wrapper.py", tmp_path / "modules.json"
    wrapper.write_text(WRAPPER)
    lines = [
        initialize(1, "2025-06-18"),
        notification("notifications/initialized"),
        request(2, "tools/list"),
    ]
    done = subprocess.run(
        [sys.executable, str(wrapper), str(modules)],
        input="".join(line + "\n" for line in lines).encode(),
        capture_output=True,
        timeout=600,
        check=True,
    )
    replies = [json.loads(line) for line in done.stdout.splitlines()]
    assert replies[0]["result"]["serverInfo"]["name"] == "wikigr"
    assert [t["name"] for t in replies[1]["result"]["tools"]] == [
        "list_packs",
        "pack_info",
        "query_pack",
        "search",
    ]
    loaded = json.loads(modules.read_text())
    top = {name.partition(".")[0] for name in loaded}
    assert not top & set(NOT_BEFORE_THE_REPLY), sorted(top & set(NOT_BEFORE_THE_REPLY))
    assert "wikigr.agent" not in loaded and "wikigr.mcp_server" not in loaded


# -- the arguments of a call, checked as the SDK checked them (its pydantic model of the signature) --


def list_packs() -> dict[str, Any]: ...
def pack_info(pack: str) -> dict[str, Any]: ...
def query_pack(
    pack: str | list[str], question: str, profile: str | None = None, top_k: int | None = None
) -> dict[str, Any]: ...
def search(
    pack: str | list[str], query: str, top_k: int | None = None, profile: str | None = None
) -> dict[str, Any]: ...


VALUES: list[Any] = [
    None, "", "  ", "x", " 3 ", "\t3\n", "\u20073", "\x1c3", "3\u200b", "3", "-3", "+3", "03", "-0",
    "3.0", "3.00", "-3.0", "3.", ".5", "3.5", "3.10", "3.0_0", "3_000.0", "1_000", "1__0", "_1", "1_",
    "0x10", "٣", "３", "many", "1e3", "inf", "nan", "- 3", "+-3",
    '["a", "b"]', '["a", 5]', '{"a": 1}', "null", "true", "[]", "5", "1.5",
    "1" * 4300, "1" * 4301, "0" * 4301, "-" + "1" * 4300,
    3, 0, -1, 2.0, 2.5, -0.0, 9.2e18, 9.3e18, -(2.0**63), True, False, 10**30,
    float("inf"), float("-inf"), float("nan"),
    [], ["a"], ["a", 5], [["a"]], {"a": 1}, {},
]  # fmt: skip


@functools.cache
def _metadata(fn: Any) -> Any:
    from mcp.server.mcpserver.utilities.func_metadata import func_metadata

    return func_metadata(fn)


def _sdk_check(fn: Any, arguments: dict[str, Any]) -> dict[str, Any] | str:
    """What the SDK made of ``arguments``: the function's arguments, or the one line
    wikigr's server on the SDK answered (``Error: invalid arguments for TOOL: ...``)."""
    from pydantic import ValidationError

    try:
        return _metadata(fn).validate_arguments(arguments)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(part) for part in error['loc']) or 'arguments'}: {error['msg']}"
            for error in exc.errors()
        )
        return f"Error: invalid arguments for {fn.__name__}: {problems}"


def test_arguments_are_read_as_the_sdk_read_them() -> None:
    functions = {f.__name__: f for f in (list_packs, pack_info, query_pack, search)}
    assert set(functions) == set(TOOLS)
    valid = {"pack": "p", "question": "q", "query": "q"}
    for name, tool in TOOLS.items():
        cases: list[dict[str, Any]] = [{}, {"extra": 1}]
        for argument, _ in tool.arguments:
            base = {a: valid[a] for a in tool.required}
            cases.append({k: v for k, v in base.items() if k != argument})
            cases += [{**base, argument: value} for value in VALUES]
        for arguments in cases:
            expected = _sdk_check(functions[name], arguments)
            try:
                got: dict[str, Any] | str = check_arguments(tool, arguments)
            except ArgumentsError as exc:
                got = str(exc)
            assert _same(got, expected), (name, arguments, got, expected)


def _same(a: Any, b: Any) -> bool:
    """Equal, with a float NaN equal to itself and an int never equal to a bool."""
    if isinstance(a, float) and isinstance(b, float) and a != a and b != b:
        return True
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def test_tools_list_is_the_sdk_listing() -> None:
    """The listing the SDK made of the tool functions' signatures and docstrings."""
    recorded = json.loads(FIXTURE.read_text(encoding="utf-8"))["legacy"]
    listed = next(r for line, replies in recorded for r in replies if r.get("id") == 4)
    assert listed["result"]["tools"] == [tool.listing() for tool in TOOLS.values()]


def test_the_text_of_a_result_is_the_sdks_json() -> None:
    """A tool's result as text is pydantic's JSON of it (indent 2), small floats included."""
    import random

    import pydantic_core

    rng = random.Random(37)
    floats = [rng.random() * 10 ** rng.randint(-12, 20) * rng.choice((1, -1)) for _ in range(500)]
    data = {
        "scores": floats,
        "tiny": [1e-5, 2.5e-5, 9.99e-6, 1e-7, -3e-5, 0.0, -0.0],
        "text": "5e-05 ✓\u2028\x1f",
    }
    data["nested"] = {"rows": [{"score": f, "ok": True, "none": None} for f in floats[:20]]}
    assert pretty_json(data) == pydantic_core.to_json(data, indent=2).decode()


def _server(home: Path, cwd: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "WIKIGR_HOME": str(home), "ANTHROPIC_API_KEY": ""}
    return subprocess.Popen(
        SERVER, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env, cwd=cwd
    )


def test_ping_is_answered_while_a_call_runs_and_calls_run_in_turn(built_pack: Path, tmp_path: Path) -> None:
    """The reader answers a ping while the first call waits for the answering stack; the calls
    are answered in the order they came; a call cancelled before it runs is never answered."""
    home = tmp_path / "home"
    shutil.copytree(built_pack, home / "packs" / "fixture")
    proc = _server(home, tmp_path)
    assert proc.stdin is not None
    lines = [
        initialize(1, "2025-06-18"),
        notification("notifications/initialized"),
        call(10, "query_pack", {"pack": "fixture", "question": "How do I set a socket timeout?"}),
        call(11, "search", {"pack": "fixture", "query": "json"}),
        notification("notifications/cancelled", {"requestId": 11, "reason": "the user gave up"}),
        request(12, "ping"),
        call(13, "pack_info", {"pack": "fixture"}),
    ]
    proc.stdin.write("".join(line + "\n" for line in lines).encode())
    proc.stdin.flush()
    reader, replies = Lines(proc), []
    deadline = time.monotonic() + 600
    while {10, 13} - {r.get("id") for r in replies}:
        reply = reader.next(deadline)
        assert reply is not None, replies
        replies.append(reply)
    proc.stdin.close()
    assert proc.wait(timeout=600) == 0
    assert proc.stdout is not None
    rest = reader.buffer + proc.stdout.read()
    proc.stdout.close()
    assert rest == b""  # nothing for the cancelled call
    assert [r["id"] for r in replies] == [1, 12, 10, 13]
    answer = replies[2]["result"]
    assert not answer["isError"] and answer["structuredContent"]["sources"][0]["section"] == "Timeouts"
    assert json.loads(answer["content"][0]["text"]) == answer["structuredContent"]
    assert replies[3]["result"]["structuredContent"]["stats"]["articles"] == 4


def test_calls_left_when_the_client_leaves_are_dropped(built_pack: Path, tmp_path: Path) -> None:
    """stdin closed with calls queued: they are not answered (as by the SDK's server), and the
    server ends at once, with 0."""
    home = tmp_path / "home"
    shutil.copytree(built_pack, home / "packs" / "fixture")
    proc = _server(home, tmp_path)
    lines = [
        initialize(1, "2025-06-18"),
        notification("notifications/initialized"),
        call(2, "query_pack", {"pack": "fixture", "question": "How do I set a socket timeout?"}),
        call(3, "search", {"pack": "fixture", "query": "socket"}),
    ]
    out, _ = proc.communicate("".join(line + "\n" for line in lines).encode(), timeout=600)
    assert proc.returncode == 0
    assert [json.loads(line)["id"] for line in out.splitlines()] == [1]


def test_a_line_is_json_as_the_sdk_wrote_it() -> None:
    """One line of strict JSON: a NaN or an infinity in a result is null, as pydantic wrote it."""
    import mcp_types

    result = {"x": float("nan"), "y": [1.5, float("-inf")], "z": {"w": float("inf"), "t": "é\n"}}
    line = encode({"jsonrpc": "2.0", "id": 1, "result": result})
    sdk = mcp_types.JSONRPCResponse(jsonrpc="2.0", id=1, result=result)
    assert "\n" not in line and json.loads(line) == json.loads(sdk.model_dump_json(by_alias=True))
