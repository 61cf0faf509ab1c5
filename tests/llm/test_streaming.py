"""Streamed answers: ``AnthropicLLM.streaming`` against the fake Messages API's server-sent events."""

from __future__ import annotations

import threading
import time

import pytest

from tests.fakeclaude import FakeClaude, Reply, make_llm
from wikigr.llm import AnthropicLLM, LLMRequestError, LLMUnavailableError

ASK = [{"role": "user", "content": "Capital of France?"}]


class Pieces:
    """A sink that records what it is given, and when."""

    def __init__(self) -> None:
        self.pieces: list[str] = []
        self.times: list[float] = []
        self.restarts = 0

    def text(self, piece: str) -> None:
        self.pieces.append(piece)
        self.times.append(time.monotonic())

    def restart(self) -> None:
        self.restarts += 1
        self.pieces.append("<restart>")
        self.times.append(time.monotonic())


def test_a_streamed_answer_arrives_in_pieces_and_returns_the_whole_completion(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    answer = "Paris is the capital of France [1], and has been for a long time [2]."
    reply = Reply.text(answer, input_tokens=11, output_tokens=17)
    reply.piece = 5
    fake_claude.script(reply)
    sink = Pieces()
    with fake_llm.streaming(sink.text, sink.restart):
        completion = fake_llm.complete("Be brief.", ASK, max_tokens=50)
    assert fake_claude.last.json["stream"] is True
    assert len(sink.pieces) == len(answer) // 5 + 1
    assert "".join(sink.pieces) == answer == completion.text
    assert (completion.input_tokens, completion.output_tokens) == (11, 17)
    assert completion.stop_reason == "end_turn"
    assert completion.raw_content == [{"type": "text", "text": answer}]
    assert fake_llm.usage.calls == 1 and fake_llm.usage.output_tokens == 17
    assert sink.restarts == 0


def test_pieces_arrive_while_the_answer_is_still_being_written(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    reply = Reply.text("one two three four five six")
    reply.piece, reply.pause = 4, 0.15  # 7 pieces + 4 other events: about 1.6 s in all
    fake_claude.script(reply)
    sink = Pieces()
    start = time.monotonic()
    with fake_llm.streaming(sink.text):
        fake_llm.complete("", ASK)
    end = time.monotonic()
    assert len(sink.pieces) == 7
    # The first piece came long before the last: it was handed on as it arrived.
    assert sink.times[0] - start < end - start - 0.6
    assert sink.times[-1] - sink.times[0] > 0.6


def test_calls_outside_the_context_or_from_other_threads_do_not_stream(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script("first", "second", "third")
    sink = Pieces()
    fake_llm.complete("", ASK)
    with fake_llm.streaming(sink.text):
        other = threading.Thread(target=fake_llm.complete, args=("", ASK))
        other.start()
        other.join()
        fake_llm.complete("", ASK)
    assert [r.json.get("stream") for r in fake_claude.messages_requests] == [None, None, True]
    assert "".join(sink.pieces) == "third"


def test_a_failure_before_the_stream_starts_is_retried_like_any_call(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script(Reply.overloaded(), Reply.rate_limited(), Reply.text("Paris."))
    sink = Pieces()
    with fake_llm.streaming(sink.text, sink.restart):
        completion = fake_llm.complete("", ASK)
    assert completion.text == "Paris." == "".join(sink.pieces)
    assert sink.restarts == 0 and len(fake_claude.messages_requests) == 3


def test_a_stream_that_breaks_off_is_retried_and_the_receiver_told_to_start_over(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script(Reply.streamed_error("Paris is the cap"), Reply.text("Paris [1]."))
    sink = Pieces()
    with fake_llm.streaming(sink.text, sink.restart):
        completion = fake_llm.complete("", ASK)
    assert completion.text == "Paris [1]."
    assert sink.restarts == 1
    restart = sink.pieces.index("<restart>")
    assert "".join(sink.pieces[:restart]) == "Paris is the cap"
    assert "".join(sink.pieces[restart + 1 :]) == "Paris [1]."
    assert fake_llm.usage.calls == 1


def test_a_stream_whose_connection_closes_early_is_retried_from_the_start(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script(Reply.cut("Paris is the cap"), Reply.text("Paris [1]."))
    sink = Pieces()
    with fake_llm.streaming(sink.text, sink.restart):
        completion = fake_llm.complete("", ASK)
    assert completion.text == "Paris [1]." and sink.restarts == 1
    assert "".join(sink.pieces) == "Paris is the cap<restart>Paris [1]."
    assert len(fake_claude.messages_requests) == 2


def test_a_stream_that_keeps_breaking_fails_with_one_line(fake_claude: FakeClaude) -> None:
    fake_claude.script(*[Reply.streamed_error("Par") for _ in range(3)])
    with (
        make_llm(fake_claude, max_retries=2) as llm,
        llm.streaming(Pieces().text),
        pytest.raises(LLMUnavailableError) as failure,
    ):
        llm.complete("", ASK)
    message = str(failure.value)
    assert "after 3 attempts" in message and "the stream broke off: overloaded" in message
    assert "\n" not in message


def test_an_error_event_that_retrying_cannot_help_is_not_retried(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script(Reply.streamed_error("Pa", "invalid_request_error", "prompt is too long"))
    with fake_llm.streaming(Pieces().text), pytest.raises(LLMRequestError, match="prompt is too long"):
        fake_llm.complete("", ASK)
    assert len(fake_claude.messages_requests) == 1


def test_tool_calls_and_thinking_survive_streaming(fake_claude: FakeClaude, fake_llm: AnthropicLLM) -> None:
    fake_claude.script(
        Reply.tool_use("lookup", {"query": "runs", "limit": 3}, id="toolu_1", text="Let me look."),
        Reply.text("Forty-two.", thinking="Counting the runs."),
    )
    sink = Pieces()
    with fake_llm.streaming(sink.text):
        first = fake_llm.complete("", ASK, tools=[{"name": "lookup", "input_schema": {"type": "object"}}])
        second = fake_llm.complete("", [*ASK, first.as_message()])
    assert first.text == "Let me look." and first.stop_reason == "tool_use"
    assert [(c.id, c.name, c.input) for c in first.tool_calls] == [
        ("toolu_1", "lookup", {"query": "runs", "limit": 3})
    ]
    assert first.raw_content[1] == {
        "type": "tool_use",
        "id": "toolu_1",
        "name": "lookup",
        "input": {"query": "runs", "limit": 3},
    }
    assert second.text == "Forty-two."  # the thinking block is not part of the text
    assert second.raw_content[0]["type"] == "thinking"
    assert "".join(sink.pieces) == "Let me look.Forty-two."


def test_a_receiver_that_fails_stops_the_call_without_a_retry(
    fake_claude: FakeClaude, fake_llm: AnthropicLLM
) -> None:
    fake_claude.script(Reply.text("Paris."), Reply.text("again"))

    def broken(piece: str) -> None:
        raise ConnectionAbortedError("the reader went away")

    with fake_llm.streaming(broken), pytest.raises(ConnectionAbortedError, match="went away"):
        fake_llm.complete("", ASK)
    assert len(fake_claude.messages_requests) == 1
