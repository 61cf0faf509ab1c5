"""AnthropicLLM against the fake Messages API, through wikigr's own client (wikigr.llm.wire)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.fakeclaude import FakeClaude, Reply, cite_all, make_llm
from tests.httpserver import closed_port_url
from wikigr import __version__
from wikigr.errors import WikigrError
from wikigr.llm import (
    DEFAULT_MODEL,
    LLM,
    AnthropicLLM,
    Completion,
    LLMAuthError,
    LLMError,
    LLMRequestError,
    LLMResponseError,
    LLMUnavailableError,
    ToolCall,
    tool_result,
)

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


def _one_line(error: BaseException) -> str:
    message = str(error)
    assert "\n" not in message
    return message


# -- success -----------------------------------------------------------------------------------


def test_text_completion_usage_cost_and_request(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.text("Paris [1].", input_tokens=1200, output_tokens=30))

    completion = fake_llm.complete("Answer from the sources.", QUESTION, max_tokens=300)

    assert completion.text == "Paris [1]."
    assert completion.input_tokens == 1200
    assert completion.output_tokens == 30
    assert completion.model == DEFAULT_MODEL
    assert completion.stop_reason == "end_turn"
    assert completion.tool_calls == []
    assert completion.raw_content == [{"type": "text", "text": "Paris [1]."}]
    assert completion.cost_usd == pytest.approx((1200 * 2.0 + 30 * 10.0) / 1_000_000)

    request = fake_claude.last
    assert request.method == "POST" and request.path == "/v1/messages"
    assert request.model == DEFAULT_MODEL
    assert request.system == "Answer from the sources."
    assert request.messages == QUESTION
    assert request.json["max_tokens"] == 300
    assert "temperature" not in request.json  # current models reject a non-default temperature
    assert "tools" not in request.json
    assert request.auth == "x-api-key"
    assert request.headers["anthropic-version"] == "2023-06-01"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["user-agent"] == f"wikigr/{__version__}"
    assert len(fake_claude.requests) == 1

    assert fake_llm.usage.calls == 1
    assert fake_llm.usage.input_tokens == 1200
    assert fake_llm.usage.cost_usd == pytest.approx(completion.cost_usd)


def test_usage_accumulates_and_tokens_are_estimated_when_unscripted(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script("first", "second")
    a = fake_llm.complete("", QUESTION)
    b = fake_llm.complete("", QUESTION)
    assert (a.text, b.text) == ("first", "second")
    assert a.input_tokens > 0 and a.output_tokens > 0
    assert fake_llm.usage.calls == 2
    assert fake_llm.usage.input_tokens == a.input_tokens + b.input_tokens
    assert fake_llm.usage.output_tokens == a.output_tokens + b.output_tokens
    assert fake_llm.usage.to_json()["calls"] == 2
    assert "system" not in fake_claude.last.json  # an empty system prompt is not sent


def test_temperature_is_sent_only_when_given(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script("ok")
    fake_llm.complete("sys", QUESTION, temperature=0.2)
    assert fake_claude.last.json["temperature"] == 0.2


def test_model_reported_by_the_api_prices_the_call(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.text("ok", model="claude-opus-4-1", input_tokens=1000, output_tokens=1000))
    with make_llm(fake_claude, model="claude-haiku-4-5") as llm:
        completion = llm.complete("", QUESTION)
    assert fake_claude.last.model == "claude-haiku-4-5"
    assert completion.model == "claude-opus-4-1"
    assert completion.cost_usd == pytest.approx((1000 * 15.0 + 1000 * 75.0) / 1_000_000)


def test_thinking_blocks_are_kept_but_not_in_text(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.text("The answer [2].", thinking="Source 2 says so."))
    completion = fake_llm.complete("", QUESTION)
    assert completion.text == "The answer [2]."
    assert [block["type"] for block in completion.raw_content] == ["thinking", "text"]


def test_responder_computes_the_answer_from_the_prompt(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.respond_with(cite_all)
    prompt = "Sources:\n[1] Paris is in France.\n[3] It is the capital.\n\nQuestion: capital?"
    completion = fake_llm.complete("Cite sources as [n].", [{"role": "user", "content": prompt}])
    assert completion.text.endswith("[1][3].")


def test_the_llm_protocol_is_satisfied(fake_llm: AnthropicLLM) -> None:
    llm: LLM = fake_llm  # a type check: mypy verifies AnthropicLLM against the protocol
    assert llm.model == DEFAULT_MODEL


# -- tool use ----------------------------------------------------------------------------------

SEARCH_TOOL: dict[str, Any] = {
    "name": "search",
    "description": "Search the pack.",
    "input_schema": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
}


def test_tool_use_is_parsed_and_the_conversation_continues(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script(
        Reply.tool_use("search", {"query": "capital of France"}, id="toolu_01", text="Let me look."),
        Reply.text("Paris [1]."),
    )
    first = fake_llm.complete("Use the tools.", QUESTION, tools=[SEARCH_TOOL])

    assert first.stop_reason == "tool_use"
    assert first.text == "Let me look."
    assert first.tool_calls == [ToolCall(id="toolu_01", name="search", input={"query": "capital of France"})]
    assert [block["type"] for block in first.raw_content] == ["text", "tool_use"]
    assert fake_claude.last.tools == [SEARCH_TOOL]

    messages = [
        *QUESTION,
        first.as_message(),
        {"role": "user", "content": [tool_result("toolu_01", "[1] Paris is the capital of France.")]},
    ]
    second = fake_llm.complete("Use the tools.", messages, tools=[SEARCH_TOOL])

    assert second.text == "Paris [1]."
    sent = fake_claude.last.messages
    assert sent[1] == {"role": "assistant", "content": first.raw_content}
    assert sent[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_01",
        "content": "[1] Paris is the capital of France.",
    }
    assert fake_llm.usage.calls == 2


# -- retries -----------------------------------------------------------------------------------


def test_rate_limit_then_success_honours_retry_after(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.rate_limited(retry_after="2"), Reply.text("ok"))
    sleeps: list[float] = []
    with make_llm(fake_claude, sleep=sleeps.append, retry_after_max=60.0) as llm:
        completion = llm.complete("", QUESTION)
    assert completion.text == "ok"
    assert len(fake_claude.requests) == 2
    assert sleeps == [2.0]


def test_retry_after_is_capped(fake_claude: FakeClaude) -> None:
    fake_claude.script(
        Reply.rate_limited(retry_after="3600"),
        Reply.error(429, "rate_limit_error", "slow down", headers={"retry-after-ms": "1500"}),
        "ok",
    )
    sleeps: list[float] = []
    with make_llm(fake_claude, sleep=sleeps.append, retry_after_max=5.0) as llm:
        assert llm.complete("", QUESTION).text == "ok"
    assert sleeps == [5.0, 1.5]


def test_retry_after_is_really_waited(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.rate_limited(retry_after="0.2"), "ok")
    with make_llm(fake_claude, retry_after_max=1.0) as llm:
        started = time.monotonic()
        assert llm.complete("", QUESTION).text == "ok"
    assert time.monotonic() - started >= 0.2


def test_backoff_is_exponential(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.server_error(), Reply.server_error(503), Reply.overloaded(), "ok")
    sleeps: list[float] = []
    with make_llm(fake_claude, sleep=sleeps.append, backoff_base=1.0, backoff_max=3.0) as llm:
        assert llm.complete("", QUESTION).text == "ok"
    assert len(fake_claude.requests) == 4
    assert len(sleeps) == 3
    for waited, nominal in zip(sleeps, [1.0, 2.0, 3.0], strict=True):  # 4.0 capped at 3.0
        assert 0.75 * nominal <= waited <= nominal


def test_server_errors_exhaust_the_retries(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(*[Reply.server_error() for _ in range(5)])
    with pytest.raises(LLMUnavailableError) as caught:
        fake_llm.complete("", QUESTION)
    assert _one_line(caught.value) == (
        "Claude API unavailable after 4 attempts: HTTP 500 server error (Internal server error)"
    )
    assert caught.value.status == 500
    assert caught.value.exit_code == 1
    assert isinstance(caught.value, LLMError) and isinstance(caught.value, WikigrError)
    assert len(fake_claude.requests) == 4  # 1 attempt + max_retries=3
    assert fake_claude.pending == 1


def test_overloaded_is_retried(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.overloaded(), Reply.overloaded(), Reply.text("finally"))
    assert fake_llm.complete("", QUESTION).text == "finally"
    assert len(fake_claude.requests) == 3


def test_overloaded_throughout(fake_claude: FakeClaude) -> None:
    fake_claude.script(*[Reply.overloaded() for _ in range(4)])
    with make_llm(fake_claude) as llm, pytest.raises(LLMUnavailableError) as caught:
        llm.complete("", QUESTION)
    assert str(caught.value) == "Claude API unavailable after 4 attempts: HTTP 529 overloaded"
    assert len(fake_claude.requests) == 4


def test_max_retries_zero_makes_one_attempt(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.overloaded(), "never sent")
    with make_llm(fake_claude, max_retries=0) as llm, pytest.raises(LLMUnavailableError) as caught:
        llm.complete("", QUESTION)
    assert str(caught.value) == "Claude API unavailable after 1 attempt: HTTP 529 overloaded"
    assert len(fake_claude.requests) == 1


def test_should_retry_header_is_obeyed(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(
        Reply.error(409, "conflict_error", "busy", headers={"x-should-retry": "true"}),
        "ok",
        Reply.error(500, "api_error", "do not retry", headers={"x-should-retry": "false"}),
    )
    assert fake_llm.complete("", QUESTION).text == "ok"
    with pytest.raises(LLMUnavailableError, match=r"after 1 attempt: HTTP 500"):
        fake_llm.complete("", QUESTION)
    assert len(fake_claude.requests) == 3


def test_timeout_is_retried_then_reported(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.slow(60), Reply.slow(60))
    with make_llm(fake_claude, timeout=0.25, max_retries=1) as llm:
        started = time.monotonic()
        with pytest.raises(LLMUnavailableError) as caught:
            llm.complete("", QUESTION)
        elapsed = time.monotonic() - started
    assert _one_line(caught.value) == "Claude API unavailable after 2 attempts: timed out after 0.25s"
    assert caught.value.status is None
    assert len(fake_claude.requests) == 2
    assert elapsed < 15  # two read timeouts, not the replies' minute (a busy machine adds seconds)


def test_timeout_then_success(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.slow(60), Reply.text("on time"))
    with make_llm(fake_claude, timeout=5) as llm:  # time for the second reply on a busy machine
        assert llm.complete("", QUESTION).text == "on time"
    assert len(fake_claude.requests) == 2


def test_truncated_body_is_a_transport_failure(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.truncated(), Reply.text("whole"), Reply.truncated(), Reply.truncated())
    with make_llm(fake_claude, max_retries=1) as llm:
        assert llm.complete("", QUESTION).text == "whole"
        with pytest.raises(LLMUnavailableError) as caught:
            llm.complete("", QUESTION)
    message = _one_line(caught.value)
    assert message.startswith(
        f"Claude API unavailable after 2 attempts: connection to {fake_claude.base_url}"
    )
    assert len(fake_claude.requests) == 4


def test_connection_refused() -> None:
    url = closed_port_url("")
    with (
        AnthropicLLM("sk-ant-test", base_url=url, max_retries=2, backoff_base=0.001) as llm,
        pytest.raises(LLMUnavailableError) as caught,
    ):
        llm.complete("", QUESTION)
    message = _one_line(caught.value)
    assert message.startswith(f"Claude API unavailable after 3 attempts: connection to {url} failed (")
    assert "ConnectError" in message


# -- errors that are not retried ---------------------------------------------------------------


def test_unauthorized_is_not_retried(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.unauthorized(), "never sent")
    with pytest.raises(LLMAuthError) as caught:
        fake_llm.complete("", QUESTION)
    assert str(caught.value) == "Claude API rejected the key (HTTP 401): check ANTHROPIC_API_KEY"
    assert caught.value.status == 401
    assert len(fake_claude.requests) == 1


def test_a_wrong_key_is_rejected_by_the_fake(fake_claude: FakeClaude) -> None:
    fake_claude.script("never sent")
    with make_llm(fake_claude, api_key="sk-ant-wrong") as llm, pytest.raises(LLMAuthError, match="HTTP 401"):
        llm.complete("", QUESTION)
    assert len(fake_claude.requests) == 1
    assert fake_claude.last.auth is None
    assert fake_claude.pending == 1


def test_forbidden_is_an_auth_error(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.error(403, "permission_error", "no access"))
    with pytest.raises(LLMAuthError, match=r"\(HTTP 403\)"):
        fake_llm.complete("", QUESTION)
    assert len(fake_claude.requests) == 1


def test_bad_request_carries_the_api_message(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.bad_request("`temperature` is deprecated\nfor this model."))
    with pytest.raises(LLMRequestError) as caught:
        fake_llm.complete("", QUESTION, temperature=0.0)
    assert _one_line(caught.value) == (
        "Claude API rejected the request (HTTP 400 invalid_request_error): "
        "`temperature` is deprecated for this model."
    )
    assert caught.value.status == 400
    assert len(fake_claude.requests) == 1


def test_unknown_model_names_the_model(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.error(404, "not_found_error", "model: claude-nope"))
    with make_llm(fake_claude, model="claude-nope") as llm, pytest.raises(LLMRequestError) as caught:
        llm.complete("", QUESTION)
    assert str(caught.value) == (
        "Claude API rejected the request (HTTP 404 not_found_error): model: claude-nope (model claude-nope)"
    )


def test_invalid_request_caught_by_the_fake(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    with pytest.raises(LLMRequestError, match="at least one message"):
        fake_llm.complete("", [])


# -- malformed responses -----------------------------------------------------------------------


def test_malformed_json_is_a_response_error(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(Reply.malformed(), "never sent")
    with pytest.raises(LLMResponseError) as caught:
        fake_llm.complete("", QUESTION)
    assert _one_line(caught.value).startswith("Claude API returned malformed JSON (HTTP 200): ")
    assert len(fake_claude.requests) == 1
    assert fake_llm.usage.calls == 0


@pytest.mark.parametrize(
    ("body", "why"),
    [
        ([1, 2], "a JSON list, not an object"),
        ({"type": "message", "usage": {"input_tokens": 1, "output_tokens": 1}}, "no content list"),
        ({"type": "message", "content": []}, "no usage"),
        ({"type": "message", "content": [], "usage": {"input_tokens": "many", "output_tokens": 1}}, "usage"),
        (
            {"type": "message", "content": ["hi"], "usage": {"input_tokens": 1, "output_tokens": 1}},
            "content[0]",
        ),
        (
            {
                "type": "message",
                "content": [{"type": "tool_use", "id": "t", "name": "x"}],
                "usage": {"input_tokens": 1, "output_tokens": 1},
            },
            "malformed tool_use",
        ),
        ({"type": "error", "error": {"type": "api_error", "message": "boom"}}, "an error object"),
    ],
)
def test_unexpected_shapes_are_response_errors(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM, body: Any, why: str
) -> None:
    import json

    fake_claude.script(Reply(body=json.dumps(body).encode()))
    with pytest.raises(LLMResponseError) as caught:
        fake_llm.complete("", QUESTION)
    message = _one_line(caught.value)
    assert message.startswith("Claude API returned an unexpected response (HTTP 200): ")
    assert why in message


def test_unknown_block_types_are_kept(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(
        Reply.message([{"type": "server_tool_use", "id": "s1"}, {"type": "text", "text": "done"}])
    )
    completion = fake_llm.complete("", QUESTION)
    assert completion.text == "done"
    assert completion.raw_content[0] == {"type": "server_tool_use", "id": "s1"}


def test_completion_defaults_make_simple_doubles_easy() -> None:
    completion = Completion(text="x", input_tokens=1, output_tokens=1, model="m")
    assert completion.tool_calls == [] and completion.raw_content == [] and completion.cost_usd == 0.0
    assert completion.as_message() == {"role": "assistant", "content": []}
