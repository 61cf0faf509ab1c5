"""A question asked with ANTHROPIC_API_KEY set, in a new process as a Claude Code skill asks it
(`python -m wikigr query PACK Q --json`): wikigr talks to Claude with its own client on the standard
library and never imports the anthropic SDK, whose import cost seconds per question (issue 37)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.fakeclaude import FakeClaude, cite_all
from wikigr.cli import run

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How do I set a socket timeout?"

# `python -m wikigr ARGS`, then at exit whether the SDK (or its HTTP stack) was imported.
PROBE = (
    "import atexit, runpy, sys\n"
    "names = ('anthropic', 'httpx', 'httpx2', 'pydantic')\n"
    "atexit.register(lambda: print('IMPORTED', [m for m in names if m in sys.modules], file=sys.stderr))\n"
    "sys.argv = ['wikigr', *sys.argv[1:]]\n"
    "runpy.run_module('wikigr', run_name='__main__', alter_sys=True)\n"
)


def _without_timings(value: Any) -> Any:
    """``value`` without its timings (``ms`` and ``*_ms`` keys, at any depth)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "ms" and not k.endswith("_ms")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def test_a_fresh_query_with_a_key_answers_with_claude_without_the_sdk(
    built_pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.respond_with(cite_all)
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "query", str(built_pack), QUESTION, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,  # `-c` puts the working folder first on sys.path: this checkout's wikigr
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    imported = next(x for x in proc.stderr.splitlines() if x.startswith("IMPORTED "))
    assert imported == "IMPORTED []"

    fresh = json.loads(proc.stdout)
    [request] = claude_env.messages_requests  # one call: the answer
    assert request.auth == "x-api-key" and f"Question: {QUESTION}" in request.prompt
    assert fresh["answer"] == cite_all(request.json).body["content"][0]["text"]  # type: ignore[index]
    assert fresh["trace"]["answer_mode"] == "claude"
    assert fresh["trace"]["usage"]["calls"] == 1

    # The same answer as the library gives in this process (the agent, the same fake).
    assert run(["query", str(built_pack), QUESTION, "--json"]) == 0
    in_process = json.loads(capsys.readouterr().out)
    assert _without_timings(fresh) == _without_timings(in_process)
