"""The agent with Claude: wikigr's own Claude client against the fake Messages API on 127.0.0.1."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from tests.fakeclaude import FakeClaude, Reply, cite_all, make_llm, prompt_text
from wikigr.agent import KnowledgeGraphAgent
from wikigr.cli import run
from wikigr.llm import LLMUnavailableError


@pytest.fixture
def pack(built_pack: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "fixture"
    shutil.copytree(built_pack, copy)
    rows = [{"id": "ex1", "question": "How do I parse JSON?", "ground_truth": "json.loads(s)"}]
    (copy / "eval" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return copy


def test_claude_answers_with_citations_that_map_to_sources(pack: Path, claude_env: FakeClaude) -> None:
    claude_env.respond_with(cite_all)
    with KnowledgeGraphAgent(pack, top_k=3) as agent:
        result = agent.query("How do I set a socket timeout?")
    assert result.trace["answer_mode"] == "claude"
    cited = sorted({int(n) for n in re.findall(r"\[(\d+)\]", result.answer)})
    assert cited and max(cited) <= len(result.sources)
    request = claude_env.last
    assert request.auth == "x-api-key"
    assert "[1] Sockets guide › Timeouts" in request.prompt
    assert "Question: How do I set a socket timeout?" in request.prompt
    assert "Example question: How do I parse JSON?" in request.prompt  # few-shot from eval/questions.jsonl
    usage = result.trace["usage"]
    assert usage["calls"] == 1 and usage["input_tokens"] > 0 and usage["output_tokens"] > 0
    assert usage["cost_usd"] > 0


def test_invented_citations_are_removed(pack: Path, claude_env: FakeClaude) -> None:
    claude_env.script(Reply.text("Use settimeout [1], see also [9]."))
    with KnowledgeGraphAgent(pack, top_k=2) as agent:
        result = agent.query("How do I set a socket timeout?")
    assert result.answer == "Use settimeout [1], see also ."
    synth = next(s for s in result.trace["stages"] if s["stage"] == "synthesize")
    assert synth["detail"]["removed_citations"] == [9]


def test_low_confidence_does_not_call_claude(pack: Path, claude_env: FakeClaude) -> None:
    claude_env.respond_with(cite_all)
    with KnowledgeGraphAgent(pack) as agent:
        result = agent.query("Who won the football world cup in 1998?")
    assert result.low_confidence and claude_env.messages_requests == []
    assert result.answer.startswith("I found little grounded context")


def test_multi_query_rephrasings_are_searched(pack: Path, claude_env: FakeClaude) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        if "Rewrite the user's question" in prompt_text(body):
            return Reply.text("socket settimeout blocking operations\nTimeoutError when a timeout expires")
        return cite_all(body)

    claude_env.respond_with(responder)
    with KnowledgeGraphAgent(pack, profile="max") as agent:
        result = agent.query("How do I make network calls give up?")
    stages = {s["stage"]: s for s in result.trace["stages"]}
    assert stages["multi_query"]["detail"]["queries"][1] == "socket settimeout blocking operations"
    assert stages["vector"]["detail"]["queries"] == 3
    assert result.trace["usage"]["calls"] == 2
    assert result.sources[0].section == "Timeouts"


def test_timeout_is_an_unavailable_error(pack: Path, fake_claude: FakeClaude) -> None:
    fake_claude.script(*[Reply.slow(1.0)] * 2)
    with (
        make_llm(fake_claude, timeout=0.2, max_retries=1) as llm,
        KnowledgeGraphAgent(pack, llm=llm) as agent,
        pytest.raises(LLMUnavailableError, match="timed out"),
    ):
        agent.query("How do I set a socket timeout?")


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_429_then_success(pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]) -> None:
    claude_env.script(Reply.rate_limited("0"), Reply.text("Call settimeout [1]."))
    code, out, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?", "--json")
    assert code == 0, err
    assert json.loads(out)["answer"] == "Call settimeout [1]."
    assert len(claude_env.messages_requests) == 2


def test_cli_401_is_one_line(pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]) -> None:
    claude_env.script(Reply.unauthorized())
    code, _, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?")
    assert code == 1
    assert err.strip().splitlines() == [
        "Error: Claude API rejected the key (HTTP 401): check ANTHROPIC_API_KEY"
    ]
    assert len(claude_env.messages_requests) == 1


def overloaded() -> Reply:
    return Reply.error(529, "overloaded_error", "Overloaded", retry_after="0")


def test_cli_exhausted_retries(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.script(*[overloaded()] * 4)
    code, _, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?")
    assert code == 1
    assert (
        err.startswith("Error: Claude API unavailable after 4 attempts")
        and len(err.strip().splitlines()) == 1
    )


def test_cli_fallback_prints_the_extractive_answer(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.script(*[overloaded()] * 4)
    code, out, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?", "--fallback", "--json")
    assert code == 0
    result = json.loads(out)
    # The short extractive answer: a sentence of the timeouts passage, citing it.
    assert result["answer"].startswith("Call settimeout(seconds) on a socket") and "[1]" in result["answer"]
    assert result["sources"][0]["section"] == "Timeouts"
    assert result["answer_mode"] == result["trace"]["answer_mode"] == "extractive"
    assert err.startswith("Warning: Claude failed")


def test_cli_500_and_malformed(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.script(Reply.error(500, "api_error", "boom", retry_after="0"), Reply.malformed())
    code, _, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?")
    assert code == 1
    assert "malformed" in err and len(err.strip().splitlines()) == 1


@pytest.mark.parametrize(
    ("body", "why"),
    [(b"[" * 100_000, "nested too deeply"), (b'{"id": ' + b"9" * 5000 + b"}", "a number too long")],
)
def test_a_reply_no_json_parser_reads_is_one_line(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str], body: bytes, why: str
) -> None:
    """json refuses these with a RecursionError and a plain ValueError: each is malformed JSON."""
    claude_env.script(Reply.malformed(body))
    code, _, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?")
    assert code == 1 and len(err.strip().splitlines()) == 1
    assert "malformed JSON" in err and why in err


def test_cli_trace_table_shows_usage(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    claude_env.respond_with(cite_all)
    code, _, err = cli(
        capsys, "query", str(pack), "How do I set a socket timeout?", "--trace", "--model", "claude-haiku-5-5"
    )
    assert code == 0
    assert "synthesize" in err and "Claude: 1 call(s)" in err
    assert claude_env.last.model == "claude-haiku-5-5"


# -- one time budget per answer ----------------------------------------------------------------


def test_a_hanging_claude_falls_back_within_the_budget(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]
) -> None:
    # The server accepts the request and never answers in time, every attempt.
    claude_env.script(*[Reply.slow(60)] * 4)
    start = time.monotonic()
    code, out, err = cli(
        capsys,
        "query",
        str(pack),
        "How do I set a socket timeout?",
        "--fallback",
        "--json",
        "--timeout",
        "1.5",
    )
    assert time.monotonic() - start < 30  # not 4 attempts x the read timeout (a busy machine adds seconds)
    assert code == 0
    assert json.loads(out)["trace"]["answer_mode"] == "extractive"
    assert err.startswith("Warning: Claude failed: no answer from Claude within the time budget of 1.5s")


@pytest.mark.parametrize("part", ["body", "headers"])
def test_a_trickling_reply_ends_at_the_budget(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str], part: str
) -> None:
    # Each read gets a byte in time, so no read times out: only the answer's budget can end it.
    reply = Reply.trickle(0.2) if part == "body" else Reply.trickled_headers(0.2)
    claude_env.script(*[reply] * 4)
    args = ["query", str(pack), "How do I set a socket timeout?", "--fallback", "--timeout", "2"]
    start = time.monotonic()
    code, out, err = cli(capsys, *args)
    assert time.monotonic() - start < 20, "the reply held the answer past its budget"  # it trickles 30 s
    assert code == 0 and "settimeout" in out
    assert err.startswith("Warning: Claude failed: no answer from Claude within the time budget of 2s")


@pytest.mark.parametrize("part", ["body", "headers"])
def test_a_trickling_stream_ends_at_the_budget(fake_claude: FakeClaude, part: str) -> None:
    # What `wikigr serve`'s /query/stream asks for: the answer streamed, an event at a time.
    reply = Reply.trickle(0.2) if part == "body" else Reply.trickled_headers(0.2)
    fake_claude.script(*[reply] * 4)
    pieces: list[str] = []
    with make_llm(fake_claude) as llm:
        llm.budget = 2.0
        start = time.monotonic()
        with (
            pytest.raises(LLMUnavailableError, match="within the time budget of 2s"),
            llm.streaming(pieces.append),
        ):
            llm.complete("", [{"role": "user", "content": "hi"}])
        assert time.monotonic() - start < 20, "the stream held the answer past its budget"
    assert fake_claude.messages_requests[0].json.get("stream") is True


def test_without_fallback_the_budget_ends_in_one_line(
    pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("WIKIGR_TIMEOUT", "1")
    claude_env.script(*[Reply.slow(60)] * 4)
    start = time.monotonic()
    code, _, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?")
    assert time.monotonic() - start < 30  # not 4 x 60 s
    assert code == 1
    assert err.startswith("Error: no answer from Claude within the time budget of 1s after 1 attempt")
    assert "WIKIGR_TIMEOUT" in err and len(err.strip().splitlines()) == 1


def test_retries_stop_when_their_wait_would_pass_the_budget(pack: Path, fake_claude: FakeClaude) -> None:
    fake_claude.script(*[Reply.server_error(500)] * 4)
    slept: list[float] = []
    with make_llm(fake_claude, max_retries=3, backoff_base=10.0, backoff_max=30.0, sleep=slept.append) as llm:
        llm.budget = 5.0
        with pytest.raises(LLMUnavailableError, match="within the time budget of 5s after 1 attempt"):
            llm.complete("", [{"role": "user", "content": "hi"}])
    assert slept == []  # the first wait (about 10 s) would already pass the budget


@pytest.mark.parametrize("value", ["0", "-3", "soon", "inf"])
def test_a_bad_timeout_is_a_usage_error(
    pack: Path,
    claude_env: FakeClaude,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    value: str,
) -> None:
    monkeypatch.setenv("WIKIGR_TIMEOUT", value)
    code, _, err = cli(capsys, "query", str(pack), "How do I set a socket timeout?")
    assert code == 2 and err.startswith("Error: WIKIGR_TIMEOUT must be a positive number of seconds")
