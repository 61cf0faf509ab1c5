"""How the two servers start: ``wikigr serve`` answers its health route before the answering stack
is imported, and the command line of a server (``wikigr serve ...``, ``wikigr mcp``) is read
without typer as typer reads it."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

# Run as `python WRAPPER OUT wikigr ARGS...`: the modules loaded when the server first writes to a
# socket (the answer to the first request) go to OUT; then the server runs as the console script
# runs it.
WRAPPER = textwrap.dedent("""
    import json, runpy, socket, sys

    out, argv = sys.argv[1], sys.argv[2:]
    send = socket.socket.send

    def recording(self, *args):
        if out:
            with open(out, "w") as f:
                json.dump(sorted(sys.modules), f)
            globals()["out"] = ""
        return send(self, *args)

    socket.socket.send = recording
    sys.argv = argv
    runpy.run_module("wikigr", run_name="__main__", alter_sys=True)
""")
NOT_BEFORE_HEALTH = (
    "wikigr.agent",
    "wikigr.agent_cache",
    "wikigr.serve.work",
    "wikigr.packset",
    "onnxruntime",
)


def _url(proc: subprocess.Popen[str]) -> str:
    """The server's address, from the line it prints once it listens."""
    assert proc.stderr is not None
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stderr], [], [], 1)
        line = proc.stderr.readline() if ready else ""
        if line.startswith("Serving "):
            return line.split(" at ", 1)[1].split("/ ", 1)[0]
        assert proc.poll() is None, proc.stderr.read()
    raise AssertionError("the server did not say where it listens")


def test_health_answers_before_the_answering_stack_is_imported(built_pack: Path, tmp_path: Path) -> None:
    wrapper, modules = tmp_path / "wrapper.py", tmp_path / "modules.json"
    wrapper.write_text(WRAPPER)
    argv = ["wikigr", "serve", str(built_pack), "--port", "0"]
    proc = subprocess.Popen(
        [sys.executable, str(wrapper), str(modules), *argv], stderr=subprocess.PIPE, text=True, cwd=tmp_path
    )
    try:
        url = _url(proc)
        with urllib.request.urlopen(f"{url}/api/v1/health", timeout=600) as response:
            health = json.loads(response.read())
        assert health["status"] == "ok" and health["packs"] == 1
        loaded = set(json.loads(modules.read_text()))
        early = sorted(
            m for m in loaded if m in NOT_BEFORE_HEALTH or m.partition(".")[0] in NOT_BEFORE_HEALTH
        )
        assert not early, early
        assert "typer" not in loaded and "pydantic" not in loaded  # the command line, read without typer
        question = json.dumps({"pack": "fixture", "question": "How do I set a socket timeout?"}).encode()
        request = urllib.request.Request(
            f"{url}/api/v1/query", data=question, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=600) as response:  # waits for the stack
            answer = json.loads(response.read())
        assert answer["sources"][0]["section"] == "Timeouts"
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=600) == 0
        assert proc.stderr is not None
        proc.stderr.close()


# -- the command line of a server, without typer -----------------------------------------------------

PARSED = [
    ["serve"],
    ["serve", "pydocs"],
    ["serve", "a", "b", "--port", "0"],
    ["serve", "--port=8800", "pydocs", "--host", "127.0.0.2"],
    ["serve", "pydocs", "--host=localhost", "--port", "65535", "--token", "x" * 20],
    ["serve", "--token-file", "token.txt", "pydocs"],
    ["serve", "--port", "08700"],
    ["serve", "--read-only", "pydocs"],
]
LEFT_TO_TYPER = [
    ["serve", "--help"],
    ["serve", "pydocs", "--port", "65536"],
    ["serve", "pydocs", "--port", "-1"],
    ["serve", "pydocs", "--port", "80a"],
    ["serve", "pydocs", "--port", ""],
    ["serve", "pydocs", "--port"],
    ["serve", "pydocs", "--port", "1", "--port", "2"],
    ["serve", "pydocs", "--token", "-x"],
    ["serve", "pydocs", "--no-such-option"],
    ["serve", "--", "-pack"],
    ["serve", "-h"],
    ["serve", "--read-only=yes"],
    ["serve", "--read-only", "--read-only"],
    ["mcp", "--help"],
    ["mcp", "extra"],
    ["query", "pydocs", "q"],
    [],
]


@pytest.mark.parametrize("argv", PARSED, ids=" ".join)
def test_a_plain_serve_is_read_without_typer_as_typer_reads_it(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import inspect

    import wikigr.cli.servers as servers
    from wikigr.cli import _run_app

    calls: list[dict[str, Any]] = []
    signature = inspect.signature(servers.serve_packs)

    def record(*args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        calls.append(dict(bound.arguments))

    monkeypatch.setattr(servers, "serve_packs", record)
    assert _run_app(argv) == 0
    server = servers.fast_server(argv)
    assert server is not None
    server()
    typer_call, fast_call = calls
    assert fast_call == typer_call


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=" ".join)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    from wikigr.cli.servers import fast_server

    assert fast_server(argv) is None


def test_the_fast_parser_knows_the_options_of_the_typer_command() -> None:
    import typer.main

    from wikigr.cli import app
    from wikigr.cli.servers import FLAGS, OPTIONS

    command = typer.main.get_command(app).commands["serve"]  # type: ignore[attr-defined]
    options = {name for p in command.params if p.param_type_name == "option" for name in p.opts}
    assert options == set(OPTIONS) | set(FLAGS)
    assert [p.name for p in command.params if p.param_type_name == "argument"] == ["packs"]


def test_wikigr_mcp_is_the_server_without_typer() -> None:
    from wikigr.cli.servers import fast_server, serve_mcp

    assert fast_server(["mcp"]) is serve_mcp


def test_a_bad_pack_is_still_said_before_serving(tmp_path: Path) -> None:
    """The fast path reports errors as the typer command did: one line, exit 2."""
    done = subprocess.run(
        [sys.executable, "-m", "wikigr", "serve", str(tmp_path / "nothing"), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert done.returncode == 2
    assert done.stderr.startswith("Error: no pack at ") and len(done.stderr.strip().splitlines()) == 1
