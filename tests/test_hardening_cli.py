"""Regressions of issue 14's CLI and protocol items: Ctrl-C (exit 130, one line, the previous pack
intact), exit codes that typer returns, argv that is not UTF-8, data printed verbatim, the MCP
server's replies, the pack's top_k, a query that asks for no answer, eval_scores per profile.

Interrupts and argv bytes are tried on real subprocesses (``python -m wikigr``) with a real SIGINT,
against slow servers on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from tests.conftest import DOCS
from tests.fakeclaude import FakeClaude, Reply
from tests.httpserver import LocalServer
from wikigr.build import build_pack
from wikigr.cli import _run_app, run
from wikigr.eval.runner import EvalOptions, evaluate
from wikigr.pack.manifest import load_manifest

WIKIGR = [sys.executable, "-m", "wikigr"]


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its sha256."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.fixture
def installed(built_pack: Path, wikigr_home: Path) -> Path:
    """The fixture pack, installed in the packs home as ``fixture``."""
    target = wikigr_home / "packs" / "fixture"
    shutil.copytree(built_pack, target)
    return target


# -- 12. Ctrl-C: exit 130, one line on stderr, within moments, the previous pack intact ------------


def _interrupt_when(
    proc: subprocess.Popen[str], ready: Callable[[], bool], wait: float = 600.0
) -> tuple[float, str, str]:
    """Send SIGINT once ``ready()`` holds; (seconds from the signal to the exit, stdout, stderr)."""
    deadline = time.monotonic() + wait
    while not ready():
        if proc.poll() is not None:
            out, err = proc.communicate()
            pytest.fail(f"ended (exit {proc.returncode}) before the interrupt:\n{out}\n{err}")
        if time.monotonic() > deadline:
            proc.kill()
            proc.communicate()
            pytest.fail("never got to the point of the interrupt")
        time.sleep(0.05)
    time.sleep(0.3)  # the request is in flight: its reader is blocked on the silent server
    sent = time.monotonic()
    proc.send_signal(signal.SIGINT)
    try:
        out, err = proc.communicate(timeout=120)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("still running 120 s after Ctrl-C")
    return time.monotonic() - sent, out, err


def _errors(err: str) -> list[str]:
    """stderr's lines but progress lines (``wikigr: fetch 0/1 (5s)``, printed every few seconds
    when stderr is not a terminal: a busy machine gets to one before the interrupt)."""
    return [line for line in err.splitlines() if not line.startswith("wikigr: ")]


def _popen(*args: str) -> subprocess.Popen[str]:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        # Tests run as a background job (``cmd &`` in a script, as a CI runner may) ignore SIGINT,
        # and a child inherits that: Python then installs no KeyboardInterrupt for it, and the
        # Ctrl-C these tests send would never arrive. A handled signal is reset in the child.
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return subprocess.Popen(
        [*WIKIGR, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=dict(os.environ)
    )


@pytest.mark.parametrize("command", ["create", "update", "install"])
def test_ctrl_c_while_a_server_is_silent(
    command: str, installed: Path, server: LocalServer, tmp_path: Path
) -> None:
    """A server that takes minutes to answer; Ctrl-C stops the command within moments."""
    url = server.slow("/slow.html" if command != "install" else "/pack.tar.gz", delay=300)
    path = url.removeprefix(server.base_url)
    before = _snapshot(installed)
    if command == "create":
        args = ["pack", "create", "fixture", "--url", url, "--no-graph", "--timeout", "300", "--retries", "0"]
    elif command == "update":
        urls = tmp_path / "urls.txt"
        urls.write_text(url + "\n")
        args = ["pack", "update", "fixture", "--urls", str(urls), "--timeout", "300", "--retries", "0"]
    else:
        args = ["pack", "install", url, "--force", "--timeout", "300"]
    proc = _popen(*args)
    seconds, out, err = _interrupt_when(proc, lambda: server.hits(path) >= 1)
    assert (proc.returncode, _errors(err), out) == (130, ["Error: interrupted"], ""), err
    assert seconds < 60, f"took {seconds:.1f}s to stop"  # not the 300 s the server takes
    assert _snapshot(installed) == before  # the previous pack, byte for byte
    leftovers = [p.name for p in installed.parent.iterdir() if p.name.startswith(".install-")]
    assert leftovers == []


def test_fetch_all_does_not_wait_for_a_blocked_fetch_when_interrupted(server: LocalServer) -> None:
    """The mechanism under `pack create`: fetch_all gives up its pool without joining a worker
    blocked in a read."""
    from wikigr.documents import FetchResult
    from wikigr.sources.fetch import FetchOptions, fetch_all

    slow = server.slow("/slow.html", delay=300)
    fast = server.add("/fast.html", b"<h1>Fast</h1><p>here</p>")
    raised: list[float] = []

    def interrupt(result: FetchResult) -> None:  # once the slow request is in flight
        deadline = time.monotonic() + 600
        while server.hits("/slow.html") < 1 and time.monotonic() < deadline:
            time.sleep(0.02)
        raised.append(time.monotonic())
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        fetch_all([slow, fast], FetchOptions(workers=2, timeout=60, retries=0), on_progress=interrupt)
    assert time.monotonic() - raised[0] < 60  # not the 300 s the slow server takes
    assert server.hits("/slow.html") == 1


def test_ctrl_c_during_a_query_the_fast_path(installed: Path, claude_env: FakeClaude) -> None:
    """`wikigr query PACK QUESTION` (parsed without typer) waiting on Claude: the same exit."""
    claude_env.script(Reply.slow(300))
    proc = _popen("query", "fixture", "How do I set a socket timeout?", "--timeout", "600")
    seconds, out, err = _interrupt_when(proc, lambda: len(claude_env.messages_requests) >= 1)
    assert (proc.returncode, _errors(err), out) == (130, ["Error: interrupted"], ""), err
    assert seconds < 60, f"took {seconds:.1f}s to stop"  # not the 300 s Claude takes


def test_validate_json_exits_1_on_an_invalid_pack(
    built_pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "broken"
    shutil.copytree(built_pack, pack)
    manifest = json.loads((pack / "manifest.json").read_text())
    manifest["stats"]["chunks"] += 7  # disagrees with the store
    (pack / "manifest.json").write_text(json.dumps(manifest))
    assert run(["pack", "validate", str(pack), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert report["ok"] is False
    assert run(["pack", "validate", str(built_pack), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["ok"] is True


# -- 13. argv that is not UTF-8 is a usage error, never an internal error --------------------------


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        ([b"query", b"fixture", b"socket \xff timeout"], "socket \\xff timeout"),
        ([b"pack", b"create", b"p", b"--url", b"x", b"--description", b"caf\xe9"], "caf\\xe9"),
        ([b"pack", b"info", b"\xfe\xff"], "\\xfe\\xff"),
    ],
    ids=["query", "create", "pack-info"],
)
def test_argv_that_is_not_utf8(argv: list[bytes], shown: str, installed: Path) -> None:
    proc = subprocess.run([*WIKIGR, *argv], capture_output=True, timeout=600)
    err = proc.stderr.decode("utf-8")
    assert proc.returncode == 2, err
    assert err.splitlines() == [f"Error: argument '{shown}' is not valid UTF-8 text"]
    assert proc.stdout == b""


# -- 14. data prints verbatim: no emoji codes, no markup -------------------------------------------

HOSTILE = "root:x:0:0 [bold]x[/bold] :smile: [red]"


def test_data_prints_verbatim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "passwd.md").write_text(f"# {HOSTILE}\n\nThe line {HOSTILE} is from /etc/passwd.\n")
    out_dir = tmp_path / "a:x:b [bold]y[/bold]"
    argv = ["pack", "create", "verbatim", "--url", str(docs), "--out", str(out_dir), "--no-graph"]
    assert run([*argv, "--description", HOSTILE]) == 0
    assert f"at {out_dir}:" in capsys.readouterr().out

    assert run(["query", str(out_dir), "What is in /etc/passwd?", "--profile", "baseline"]) == 0
    out = capsys.readouterr().out
    assert f"The line {HOSTILE} is from" in out  # the extractive answer
    assert f"[1] {HOSTILE}" in out  # the source's title
    assert "❌" not in out and "😄" not in out

    shutil.copytree(out_dir, tmp_path / "home" / "packs" / "verbatim")
    monkeypatch.setenv("WIKIGR_HOME", str(tmp_path / "home"))
    assert run(["pack", "list"]) == 0
    table = capsys.readouterr().out
    assert "root:x:0:0" in table and "[bold]x[/bold]" in table and "❌" not in table
    assert run(["pack", "info", "verbatim"]) == 0
    table = capsys.readouterr().out
    assert "root:x:0:0" in table and "[bold]x[/bold]" in table and "❌" not in table


# -- 15. MCP: an answer to every request, errors in one line; the pack's top_k -----------------------


class _RawSession:
    """``wikigr mcp`` spoken to line by line, for what the SDK client cannot send."""

    def __init__(self, env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            [*WIKIGR, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env
        )

    def send(self, line: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode("ascii") + b"\n")
        self.proc.stdin.flush()

    def receive(self, timeout: float = 600) -> dict[str, Any] | None:
        assert self.proc.stdout is not None
        ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not ready:
            return None
        line = self.proc.stdout.readline()
        return json.loads(line) if line else None

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()


@pytest.fixture
def raw_mcp(installed: Path) -> Iterator[_RawSession]:
    session = _RawSession(dict(os.environ))
    session.send(
        json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "initialize",
                "params": {
                    "protocolVersion": "2025-06-18",
                    "capabilities": {},
                    "clientInfo": {"name": "raw", "version": "1"},
                },
            }
        )
    )
    assert (session.receive() or {}).get("id") == 1
    session.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    yield session
    session.close()


def _call(request_id: int, arguments: str) -> str:
    """A tools/call line; ``arguments`` is JSON text, so it can hold escapes such as \\udcff."""
    return (
        f'{{"jsonrpc": "2.0", "id": {request_id}, "method": "tools/call", '
        f'"params": {{"name": "query_pack", "arguments": {arguments}}}}}'
    )


def test_mcp_answers_a_request_holding_a_lone_surrogate(raw_mcp: _RawSession) -> None:
    raw_mcp.send(_call(2, r'{"pack": "fixture", "question": "socket \udcff timeout"}'))
    reply = raw_mcp.receive()
    assert reply is not None, "no reply"
    assert reply["id"] == 2 and reply["error"]["code"] == -32602
    assert reply["error"]["message"].startswith("Error: the request holds a lone surrogate")
    raw_mcp.send("this is not JSON")  # JSON-RPC 2.0: a parse error, answered with id null
    assert raw_mcp.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Error: the message is not JSON"},
    }
    raw_mcp.send("[" * 100_000)  # nested past json's stack: a parse error too, not a crash
    assert raw_mcp.receive() == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Error: the message is not JSON"},
    }
    # A notification gets no reply, and the server goes on answering.
    raw_mcp.send(r'{"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"x": "\ud800"}}')
    raw_mcp.send(_call(3, '{"pack": "fixture", "question": "socket timeout"}'))
    reply = raw_mcp.receive()
    assert reply is not None and reply["id"] == 3 and not reply["result"]["isError"]


def test_mcp_errors_are_one_line_and_top_k_is_the_packs(installed: Path, tmp_path: Path) -> None:
    (installed / "kg_config.json").write_text(json.dumps({"profile": "baseline", "top_k": 2}))
    params = StdioServerParameters(command=sys.executable, args=["-m", "wikigr", "mcp"], env=dict(os.environ))

    async def session() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            missing = await client.call_tool("query_pack", {"pack": "nope", "question": "hi"})
            (text,) = [c.text for c in missing.content]  # type: ignore[union-attr]
            assert missing.is_error and text.startswith("Error: unknown pack 'nope'")
            assert "\n" not in text and text.count("Error") == 1
            wrong = await client.call_tool("search", {"pack": "fixture", "query": "x", "top_k": "many"})
            (text,) = [c.text for c in wrong.content]  # type: ignore[union-attr]
            assert wrong.is_error and text.startswith("Error: invalid arguments for search: top_k: ")
            assert "\n" not in text and "Error executing tool" not in text

            answer = await client.call_tool("query_pack", {"pack": "fixture", "question": "socket timeout"})
            assert not answer.is_error and answer.structured_content is not None
            assert len(answer.structured_content["sources"]) == 2  # the pack's top_k
            found = await client.call_tool("search", {"pack": "fixture", "query": "socket timeout"})
            assert found.structured_content is not None and len(found.structured_content["results"]) == 2
            wider = await client.call_tool("search", {"pack": "fixture", "query": "socket", "top_k": 3})
            assert wider.structured_content is not None and len(wider.structured_content["results"]) == 3

    anyio.run(session)


def test_cli_top_k_defaults_to_the_packs(installed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (installed / "kg_config.json").write_text(json.dumps({"profile": "baseline", "top_k": 2}))
    argv = ["query", "fixture", "socket timeout", "--json"]
    for runner in (run, _run_app):  # the fast parser and the typer command
        assert runner(argv) == 0
        assert len(json.loads(capsys.readouterr().out)["sources"]) == 2
        assert runner([*argv, "--top-k", "3"]) == 0
        assert len(json.loads(capsys.readouterr().out)["sources"]) == 3


# -- 17. a query that asks for no answer says so --------------------------------------------------


def test_disable_synthesize_says_there_is_no_answer(
    installed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["query", "fixture", "socket timeout", "--disable", "synthesize"]
    for runner in (run, _run_app):
        assert runner(argv) == 0
        out = capsys.readouterr().out
        first, rest = out.split("\n", 1)
        assert first == "No answer: synthesize was disabled; the sources are the passages retrieved."
        assert "Sources" in rest and "Timeouts" in rest
        assert runner([*argv, "--json"]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["answer"] == "" and data["trace"]["answer_mode"] == "none" and data["sources"]
    assert run(["query", "fixture", "socket timeout", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["trace"]["answer_mode"] == "extractive"


# -- 18. eval_scores: the latest run of each profile, with its date --------------------------------


def test_eval_scores_keep_the_latest_run_of_each_profile(tmp_path: Path) -> None:
    pack = tmp_path / "evalpack"
    build_pack("evalpack", [DOCS.as_uri()], out=pack)
    questions = [
        {"id": "q1", "question": "How do I set a socket timeout?", "gold_sources": ["Sockets guide"]},
        {"id": "q2", "question": "How do I parse JSON?", "gold_sources": ["Working with JSON"]},
    ]
    (pack / "eval" / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))

    (first,) = evaluate(pack, EvalOptions(profiles=["baseline"]))
    (other,) = evaluate(pack, EvalOptions(profiles=["balanced"]))
    time.sleep(1.1)  # dates are to the second
    (again,) = evaluate(pack, EvalOptions(profiles=["baseline"], ks=(1, 2)))
    scores = load_manifest(pack / "manifest.json").eval_scores or []
    assert [s.profile for s in scores] == ["balanced", "baseline"]
    balanced, baseline = scores
    assert pack / balanced.results_file == other.results_file  # kept
    assert pack / baseline.results_file == again.results_file != first.results_file  # replaced
    assert baseline.date > balanced.date and baseline.questions == 2
    assert "recall@2" in baseline.metrics and "recall@5" in balanced.metrics

    # A manifest written before: one object, read as the one-entry list.
    data = json.loads((pack / "manifest.json").read_text())
    data["eval_scores"] = data["eval_scores"][0]
    (pack / "manifest.json").write_text(json.dumps(data))
    old = load_manifest(pack / "manifest.json").eval_scores or []
    assert [s.profile for s in old] == ["balanced"]


# -- a new user's walkthrough: the shipped packs, and a first try at each command ------------------

SHIPPED = Path(__file__).resolve().parent.parent / "packs"  # never changed here: tests take copies


def _error(capsys: pytest.CaptureFixture[str]) -> str:
    """The one line a failed command wrote on stderr (and nothing on stdout)."""
    captured = capsys.readouterr()
    lines = captured.err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), captured.err
    assert captured.out == ""
    return lines[0]


def test_graph_refuses_an_openml_pack_before_opening_its_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "amlb2019"
    shutil.copytree(SHIPPED / "amlb2019", pack)
    before = _snapshot(pack)
    assert run(["pack", "graph", str(pack)]) == 2
    assert _error(capsys) == (
        "Error: graph is not supported for this pack kind (openml): "
        "an entity graph is built from a document pack's chunks"
    )
    assert _snapshot(pack) == before  # its store was not opened for writing
    assert run(["pack", "update", str(pack)]) == 2  # the same refusal as update's
    assert "is not supported for this pack kind (openml)" in _error(capsys)


def test_help_text_prints_as_written(capsys: pytest.CaptureFixture[str]) -> None:
    """Typer renders help as rich markup: `[options]` would be taken for a tag and dropped."""
    import typer.main
    from rich.text import Text

    from wikigr.cli.typer_app import app

    assert run(["eval", "--help"]) == 0
    assert "Run as `wikigr eval PACK [options]`." in " ".join(capsys.readouterr().out.split())

    def texts(command: Any, path: str) -> Iterator[tuple[str, str]]:
        for text in (command.help, command.short_help, command.epilog):
            if text:
                yield path, text
        for param in command.params:
            if getattr(param, "help", None):
                yield f"{path} {param.name}", param.help
        for name, sub in getattr(command, "commands", {}).items():
            yield from texts(sub, f"{path} {name}")

    for where, text in texts(typer.main.get_command(app), "wikigr"):
        assert Text.from_markup(text).plain == text.replace("\\[", "["), where


def test_cypher_refusal_names_no_internal_tool(installed: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["cypher", "fixture", "MATCH (a:Article) DELETE a"]) == 2
    assert _error(capsys) == "Error: refused: DELETE is not allowed (queries are read-only)"


def test_a_path_given_for_a_pack_name(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, wikigr_home: Path
) -> None:
    """`pack remove` and `pack create` take a name: a path is told so, its last part suggested
    when that is a valid name (not 'packs-pydocs', made of the whole path)."""
    remove = "pack remove takes the name of an installed pack, as `wikigr pack list` shows"
    for given in ("packs/pydocs", "packs/pydocs/"):
        assert run(["pack", "remove", given]) == 2
        assert _error(capsys) == f"Error: '{given}' is a path, not a pack name: {remove}; try 'pydocs'"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "my_pack.tar.gz").write_bytes(b"")  # a file here: a path, no valid last part
    assert run(["pack", "remove", "my_pack.tar.gz"]) == 2
    assert _error(capsys) == f"Error: 'my_pack.tar.gz' is a path, not a pack name: {remove}"
    assert run(["pack", "remove", "my_pack"]) == 2  # a bad name that is no path: as before
    line = _error(capsys)
    assert line.startswith("Error: invalid pack name 'my_pack'") and "try 'my-pack'" in line

    create = "pack create takes the new pack's name (and --out the folder to write it to)"
    for argv in (["--url", str(DOCS)], ["--openml-export", "runs.csv"]):
        assert run(["pack", "create", "packs/mydocs", *argv]) == 2
        assert _error(capsys) == f"Error: 'packs/mydocs' is a path, not a pack name: {create}; try 'mydocs'"
    assert not (tmp_path / "packs").exists() and not (wikigr_home / "packs").exists()


def test_mcp_search_says_the_query_is_empty(installed: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=["-m", "wikigr", "mcp"], env=dict(os.environ))

    async def session() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            empty = await client.call_tool("search", {"pack": "fixture", "query": "  "})
            assert empty.is_error
            assert [c.text for c in empty.content] == ["Error: the query is empty"]  # type: ignore[union-attr]
            empty = await client.call_tool("query_pack", {"pack": "fixture", "question": ""})
            assert empty.is_error
            assert [c.text for c in empty.content] == ["Error: the question is empty"]  # type: ignore[union-attr]

    anyio.run(session)


def test_not_a_pack_is_a_usage_error_a_damaged_pack_a_runtime_error(
    built_pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], wikigr_home: Path
) -> None:
    """Exit 2 for what is not a pack at all (nothing there, a file, a folder without
    manifest.json); exit 1 for a pack that is there but damaged."""
    (tmp_path / "notes.md").write_text("# notes\n")
    (tmp_path / "folder").mkdir()
    not_packs = {
        tmp_path / "nothing": "Error: no pack at ",
        tmp_path / "notes.md": "Error: not a pack: ",
        tmp_path / "folder": "Error: not a pack: ",
    }
    damaged = tmp_path / "damaged"
    shutil.copytree(built_pack, damaged)
    (damaged / "manifest.json").write_text("{ not json")
    commands = [
        ["pack", "validate", "{}"],
        ["pack", "info", "{}"],
        ["pack", "graph", "{}"],
        ["cypher", "{}", "MATCH (a:Article) RETURN a.title"],
        ["eval", "{}"],
        ["query", "{}", "kettle"],
    ]
    for command in commands:
        for path, start in not_packs.items():
            assert run([a.format(path) for a in command]) == 2, (command, path)
            assert _error(capsys).startswith(start + str(path)), command
        assert run([a.format(damaged) for a in command]) == 1, command
        err = capsys.readouterr().err  # (validate prints its checks on stdout first)
        assert err.count("\n") == 1 and err.startswith("Error: "), command
        assert "corrupt manifest" in err, command
    # A folder of the packs home that is not a pack is still listed, as broken.
    (wikigr_home / "packs" / "stray").mkdir(parents=True)
    assert run(["pack", "list", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["packs"]
    assert row["name"] == "stray" and not row["ok"] and "has no manifest.json" in row["error"]
    assert run(["query", "stray", "kettle"]) == 2
    assert _error(capsys).startswith("Error: not a pack: ")


def test_a_truncated_store_is_called_damaged_not_busy(
    built_pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LadybugDB says of a file shorter than its header records that it "may be checkpointing;
    please retry later". A truncated copy is damaged: retrying does not mend it."""
    pack = tmp_path / "truncated"
    shutil.copytree(built_pack, pack)
    store = pack / "pack.db"
    os.truncate(store, store.stat().st_size // 2)
    damaged = (
        "cannot open the pack's database (pack.db is damaged: the file is shorter than its header "
        f"records): {store}"
    )
    for command in (["pack", "validate", str(pack)], ["pack", "info", str(pack)], ["query", str(pack), "q"]):
        assert run(command) == 1, command
        captured = capsys.readouterr()
        line = captured.err.splitlines()[-1]
        assert line.startswith("Error: ") and line.endswith(damaged), command
        assert "retry" not in captured.err and "checkpointing" not in captured.err


def test_a_short_store_being_written_keeps_the_librarys_word(tmp_path: Path, built_pack: Path) -> None:
    """While another process writes the file (a checkpoint), "retry later" is right: a file that
    changes while it is watched is not called damaged."""
    import threading

    from wikigr.errors import StoreError
    from wikigr.pack.store import Store

    store = tmp_path / "pack.db"
    shutil.copyfile(built_pack / "pack.db", store)
    os.truncate(store, store.stat().st_size // 2)
    done = threading.Event()

    def write() -> None:  # a writer appending pages, as a checkpoint does
        while not done.wait(0.02):
            with store.open("ab") as f:
                f.write(b"\0" * 4096)

    writer = threading.Thread(target=write)
    writer.start()
    try:
        with pytest.raises(StoreError) as raised:
            Store.open(store)
    finally:
        done.set()
        writer.join()
    assert raised.value.message.startswith(f"cannot open store {store}: ")
    assert "please retry later" in raised.value.message


def test_eval_of_an_empty_questions_file_says_what_fills_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "pydocs"
    shutil.copytree(SHIPPED / "pydocs", pack)
    assert (pack / "eval" / "questions.jsonl").read_text() == ""  # as shipped
    assert run(["eval", str(pack)]) == 2
    assert _error(capsys) == (
        f"Error: no questions in {pack / 'eval' / 'questions.jsonl'}: add some with "
        "`wikigr eval import PACK SOURCE --format FORMAT` or `wikigr eval generate PACK` "
        "(needs ANTHROPIC_API_KEY)"
    )
    openml = tmp_path / "amlb2019"
    shutil.copytree(SHIPPED / "amlb2019", openml)
    (openml / "eval" / "questions.jsonl").write_text("")
    assert run(["eval", str(openml)]) == 2
    line = _error(capsys)
    assert line.endswith("`wikigr eval import PACK SOURCE --format FORMAT`")  # no sections to ask about
    empty = tmp_path / "mine.jsonl"
    empty.write_text("")
    assert run(["eval", str(pack), "--questions", str(empty)]) == 2  # a file of one's own: no hint
    assert _error(capsys) == f"Error: no questions in {empty}"


# A library that swallows a Ctrl-C: while its C code initialises, a KeyboardInterrupt comes out as
# another failure (onnxruntime's module init imports numpy, which prints the KeyboardInterrupt and
# fails with "ImportError: import numpy failed"). This finder makes `import ladybug` do the same,
# in the main thread, where the query command imports it: the Ctrl-C is real, its report is not.
_SWALLOWING_IMPORT = """
import importlib.abc, os, signal, sys, time

class Swallow(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name != "ladybug":
            return None
        sys.meta_path.remove(self)  # once: a later import of it works, as it would
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(30)
        except KeyboardInterrupt:
            raise ImportError("initialization failed") from None
        return None

sys.meta_path.insert(0, Swallow())
from wikigr.cli import run
sys.exit(run(sys.argv[1:]))
"""


def test_a_ctrl_c_a_library_reports_as_another_failure_is_an_interruption(installed: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _SWALLOWING_IMPORT, "query", str(installed), "What is a socket?"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.splitlines()[-1:] == ["Error: interrupted"], proc.stderr


# A Ctrl-C that lands once the command has returned: on the way out of the CLI (while its handler
# is put back, or before the process exits). A profile hook sends it at a function's return or
# call; it is raised at the next bytecode, as a real one landing there would be.
_CTRL_C_AT = """
import os, signal, sys

event, function, entry = sys.argv[1:4]

def hook(frame, what, arg):
    if what == event and frame.f_code.co_name == function:
        sys.setprofile(None)
        os.kill(os.getpid(), signal.SIGINT)

import wikigr.cli
sys.argv[1:] = sys.argv[4:]
sys.setprofile(hook)
if entry == "main":
    wikigr.cli.main()
sys.exit(wikigr.cli.run())
"""


@pytest.mark.parametrize(
    ("event", "function", "entry", "code"),
    [
        ("return", "_run", "run", 130),  # before the command's end is recorded: an interruption
        ("return", "_run", "main", 130),
        ("call", "_exit_now", "main", 0),  # after: the command is done, it exits with its code
    ],
)
def test_a_ctrl_c_after_the_command_returned_is_no_traceback(
    event: str, function: str, entry: str, code: int
) -> None:
    proc = subprocess.run(
        [sys.executable, "-c", _CTRL_C_AT, event, function, entry, "--version"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.splitlines() == (["Error: interrupted"] if code else [])
