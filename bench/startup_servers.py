"""Fresh-process start-up of the two servers: `wikigr mcp` (what Claude Code starts every time it
starts) and `wikigr serve`. Prints a table and writes bench/results/startup_servers.json.

Method:

1. MCP: a new `.venv/bin/wikigr mcp` process (the console script, not `uv run`, whose own start-up
   would be timed too), spoken to by a client written here with the standard library. The
   `initialize` request is written right after Popen; `initialize_s` is the seconds from Popen to
   its reply. Then `notifications/initialized` and a `tools/call` of `query_pack` on packs/pydocs
   (questions from bench/build_query.py, in turn); `first_query_s` is the seconds from Popen to
   that reply (the first query of a new process: the answering stack is loaded by then).
2. Serve: a new `.venv/bin/wikigr serve packs/pydocs --port PORT` process (a free port), whose
   health route (GET /api/v1/health) is polled every 10 ms; `health_s` is the seconds from Popen
   to the first 200.
3. Each twice: bytecode cached (compileall of site-packages and wikigr first, as `pip install`
   does, and PYTHONDONTWRITEBYTECODE unset) and uncached (PYTHONDONTWRITEBYTECODE=1 and
   PYTHONPYCACHEPREFIX a new empty folder: every module is compiled in every process, as on
   machines whose installer compiles nothing).
4. `--code DIR` times another copy of the wikigr package too (DIR/wikigr, e.g. `git archive
   COMMIT wikigr | tar -x -C DIR`), put first on PYTHONPATH as this checkout is for its own arm:
   the runs of the two arms alternate (A B, B A, ...) so both see the same load, and both arms are
   reported, each with the medians of its first and second half of runs.
5. No ANTHROPIC_API_KEY (extractive answers, no network). WIKIGR_HOME is a new temporary folder
   whose caches (the optimised model) a first, untimed, run of each arm fills.
6. p50 (median) and p95 over --runs runs (default 9); the load average at the start and the end,
   and the machine's core count: the machine is shared, timings are noisy.

    uv run python bench/startup_servers.py [--runs 9] [--code DIR] [--out PATH]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import select
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _common import header, load
from build_query import (
    BYTECODE_MODES,
    EXAMPLE,
    QUESTIONS,
    ROOT,
    bytecode_env,
    compile_bytecode,
    fresh_env,
    summary,
)

WIKIGR = Path(sys.executable).parent / "wikigr"
TIMEOUT_S = 300.0
TARGETS = {"initialize_s": 1.0, "first_query_s": 1.5, "health_s": 1.5}


def _line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _reply(proc: subprocess.Popen[bytes], request_id: int, deadline: float) -> dict[str, Any]:
    """The server's answer to ``request_id`` (lines answering nothing else are skipped)."""
    assert proc.stdout is not None
    while True:
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        line = proc.stdout.readline() if ready else b""
        if not line:
            raise SystemExit(f"wikigr mcp gave no answer to request {request_id}")
        message: dict[str, Any] = json.loads(line)
        if message.get("id") == request_id:
            return message


def mcp_once(env: dict[str, str], question: str) -> dict[str, float]:
    """Seconds from Popen to the initialize reply and to the first query_pack's reply."""
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "bench", "version": "1"},
        },
    }
    query = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "query_pack", "arguments": {"pack": str(EXAMPLE), "question": question}},
    }
    deadline = time.monotonic() + TIMEOUT_S
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(WIKIGR), "mcp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    assert proc.stdin is not None
    try:
        proc.stdin.write(_line(initialize))
        proc.stdin.flush()
        reply = _reply(proc, 1, deadline)
        initialized = time.perf_counter() - start
        if "result" not in reply:
            raise SystemExit(f"initialize failed: {reply}")
        proc.stdin.write(_line({"jsonrpc": "2.0", "method": "notifications/initialized"}))
        proc.stdin.write(_line(query))
        proc.stdin.flush()
        reply = _reply(proc, 2, deadline)
        answered = time.perf_counter() - start
        if reply.get("result", {}).get("isError", True):
            raise SystemExit(f"query_pack failed: {reply}")
    finally:
        proc.stdin.close()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        assert proc.stdout is not None
        proc.stdout.close()
    return {"initialize_s": initialized, "first_query_s": answered}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def serve_once(env: dict[str, str], question: str) -> dict[str, float]:
    """Seconds from Popen to the first 200 of the health route, polled every 10 ms."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/api/v1/health"
    deadline = time.monotonic() + TIMEOUT_S
    start = time.perf_counter()
    proc = subprocess.Popen(
        [str(WIKIGR), "serve", str(EXAMPLE), "--port", str(port)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    try:
        while True:
            try:
                with urllib.request.urlopen(url, timeout=5) as response:
                    if response.status == 200:
                        healthy = time.perf_counter() - start
                        break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            if proc.poll() is not None:
                raise SystemExit(f"wikigr serve ended with {proc.returncode} before answering")
            if time.monotonic() > deadline:
                raise SystemExit("wikigr serve did not answer its health route")
            time.sleep(0.01)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return {"health_s": healthy}


def report(samples: list[dict[str, float]], key: str) -> dict[str, Any]:
    """The summary of one measure, with the medians of its first and second half of runs."""
    times = [s[key] for s in samples]
    found: dict[str, Any] = {**summary(times), "target_p50_s": TARGETS[key]}
    half = len(times) // 2
    if half:
        found["first_half_p50_s"] = round(statistics.median(times[:half]), 3)
        found["second_half_p50_s"] = round(statistics.median(times[half:]), 3)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description="fresh-process start-up of wikigr mcp and wikigr serve")
    parser.add_argument("--runs", type=int, default=9, help="timed fresh processes per measure and arm")
    parser.add_argument("--code", type=Path, help="a folder holding an older wikigr/ package to time too")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup_servers.json")
    args = parser.parse_args()
    if args.code and not (args.code / "wikigr" / "__init__.py").is_file():
        print(f"Error: {args.code} holds no wikigr/ package", file=sys.stderr)
        return 1
    results: dict[str, Any] = {
        **header("cores", with_time=True),
        "method": (
            "fresh processes of the console script .venv/bin/wikigr (not `uv run`). MCP: the "
            "initialize request written right after Popen, seconds to its reply, then "
            "notifications/initialized and tools/call query_pack on packs/pydocs, seconds from Popen "
            "to that reply. Serve: `wikigr serve packs/pydocs`, GET /api/v1/health polled every 10 ms, "
            "seconds from Popen to the first 200. Cached: compileall first, PYTHONDONTWRITEBYTECODE "
            "unset; uncached: PYTHONDONTWRITEBYTECODE=1 and an empty PYTHONPYCACHEPREFIX; installed: "
            "PYTHONDONTWRITEBYTECODE=1, the environment compiled (the README's uv sync "
            "--compile-bytecode) but wikigr's own modules not (a copy without __pycache__). No "
            "ANTHROPIC_API_KEY; a new WIKIGR_HOME filled by an untimed first run of each arm"
        ),
    }
    arms = {"this": ROOT}
    if args.code:
        arms["code"] = args.code.resolve()
        results["code"] = f"wikigr from {args.code} (PYTHONPATH), runs alternating with this checkout's"
    compile_bytecode()
    for folder in arms.values():
        compileall.compile_dir(str(folder / "wikigr"), quiet=2)
    measures: dict[str, Callable[[dict[str, str], str], dict[str, float]]] = {
        "mcp": mcp_once,
        "serve": serve_once,
    }
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for cache in BYTECODE_MODES:
            envs = {}
            for arm, folder in arms.items():
                env = {**fresh_env(), "WIKIGR_HOME": str(work / "home")}
                env = bytecode_env(cache, env, folder, work / f"{cache}-{arm}")
                envs[arm] = env
                mcp_once(env, QUESTIONS[0])  # fills the caches: untimed
            samples: dict[str, dict[str, list[dict[str, float]]]] = {
                arm: {name: [] for name in measures} for arm in arms
            }
            for i in range(args.runs):
                question = QUESTIONS[i % len(QUESTIONS)]
                order = list(arms) if i % 2 == 0 else list(reversed(arms))
                for name, measure in measures.items():
                    for arm in order:
                        samples[arm][name].append(measure(envs[arm], question))
                print(f"{cache}: run {i + 1} of {args.runs} done", file=sys.stderr)
            results[cache] = {
                arm: {
                    "mcp": {
                        key: report(samples[arm]["mcp"], key) for key in ("initialize_s", "first_query_s")
                    },
                    "serve": {"health_s": report(samples[arm]["serve"], "health_s")},
                }
                for arm in arms
            }
    results["load_average_at_end"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"load average {results['load_average_at_start']} -> {results['load_average_at_end']}, "
        f"{os.cpu_count()} cores"
    )
    for cache in BYTECODE_MODES:
        for arm in arms:
            found = results[cache][arm]
            rows = {**found["mcp"], **found["serve"]}
            line = ", ".join(f"{key} p50 {r['p50_s']} p95 {r['p95_s']}" for key, r in rows.items())
            print(f"{cache:<9} {arm:<5} {line}")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
