"""The fake Messages API itself: spoken to with plain httpx, and kept faithful to the real API by
the real ``anthropic`` SDK, which must read its replies, plain and streamed, to the results
wikigr's own client reads (the SDK is a test dependency only: wikigr does not import it)."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from tests.fakeclaude import FAKE_API_KEY, FakeClaude, Reply, cite_all, make_llm
from wikigr.llm import DEFAULT_MODEL, Completion
from wikigr.llm.replies import parse_completion

BODY: dict[str, Any] = {
    "model": "claude-sonnet-5-5",
    "max_tokens": 64,
    "system": "Be brief.",
    "messages": [{"role": "user", "content": [{"type": "text", "text": "Hi [1] and [2]"}]}],
}
VERSION = {"anthropic-version": "2023-06-01"}


def _post(
    fake: FakeClaude, headers: dict[str, str], body: Any = BODY, path: str = "/v1/messages"
) -> httpx.Response:
    return httpx.post(fake.base_url + path, json=body, headers={**VERSION, **headers}, timeout=5)


@pytest.mark.parametrize(
    ("headers", "via"),
    [({"x-api-key": FAKE_API_KEY}, "x-api-key"), ({"Authorization": f"Bearer {FAKE_API_KEY}"}, "bearer")],
)
def test_both_auth_headers_are_accepted(fake_claude: FakeClaude, headers: dict[str, str], via: str) -> None:
    fake_claude.script(Reply.text("Hello.", input_tokens=7, output_tokens=2))
    response = _post(fake_claude, headers)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    assert response.headers["request-id"].startswith("req_")
    data = response.json()
    assert data["id"].startswith("msg_")
    assert data["type"] == "message" and data["role"] == "assistant"
    assert data["model"] == "claude-sonnet-5-5"  # echoed from the request
    assert data["content"] == [{"type": "text", "text": "Hello."}]
    assert data["stop_reason"] == "end_turn"
    assert data["usage"] == {"input_tokens": 7, "output_tokens": 2}
    request = fake_claude.last
    assert request.auth == via
    assert request.body == BODY
    assert request.system == "Be brief."
    assert request.last_user_text == "Hi [1] and [2]"


@pytest.mark.parametrize(
    "headers",
    [
        {},
        {"x-api-key": "sk-ant-wrong"},
        {"Authorization": "Bearer sk-ant-wrong"},
        {"Authorization": FAKE_API_KEY},
    ],
)
def test_other_credentials_get_a_401(fake_claude: FakeClaude, headers: dict[str, str]) -> None:
    fake_claude.script("never sent")
    response = _post(fake_claude, headers)
    assert response.status_code == 401
    assert response.json() == {
        "type": "error",
        "error": {"type": "authentication_error", "message": "invalid x-api-key"},
    }
    assert fake_claude.pending == 1
    assert fake_claude.last.auth is None
    assert fake_claude.messages_requests == []


def test_requests_are_checked_like_the_real_api(fake_claude: FakeClaude) -> None:
    key = {"x-api-key": FAKE_API_KEY}
    missing_version = httpx.post(fake_claude.base_url + "/v1/messages", json=BODY, headers=key, timeout=5)
    assert missing_version.status_code == 400
    assert _post(fake_claude, key, path="/v1/models").status_code == 404
    no_tokens = {k: v for k, v in BODY.items() if k != "max_tokens"}
    assert _post(fake_claude, key, body=no_tokens).json()["error"]["message"].startswith("max_tokens")
    assert _post(fake_claude, key, body={**BODY, "messages": []}).status_code == 400
    nothing = _post(fake_claude, key)
    assert nothing.status_code == 400
    assert "nothing scripted" in nothing.json()["error"]["message"]
    assert len(fake_claude.requests) == 5


def test_error_replies_carry_status_headers_and_body(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.rate_limited(retry_after=3), Reply.overloaded())
    limited = _post(fake_claude, {"x-api-key": FAKE_API_KEY})
    assert limited.status_code == 429
    assert limited.headers["retry-after"] == "3"
    assert limited.json()["error"]["type"] == "rate_limit_error"
    overloaded = _post(fake_claude, {"x-api-key": FAKE_API_KEY})
    assert overloaded.status_code == 529
    assert overloaded.json() == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_truncated_and_malformed_bodies(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.truncated(), Reply.malformed())
    with pytest.raises(httpx.RemoteProtocolError):
        _post(fake_claude, {"x-api-key": FAKE_API_KEY})
    malformed = _post(fake_claude, {"x-api-key": FAKE_API_KEY})
    assert malformed.status_code == 200
    with pytest.raises(ValueError):
        malformed.json()


def test_slow_reply_outlasts_a_client_timeout(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.slow(2.0))
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            fake_claude.base_url + "/v1/messages",
            json=BODY,
            headers={**VERSION, "x-api-key": FAKE_API_KEY},
            timeout=0.2,
        )


def test_responder_after_the_queue(fake_claude: FakeClaude) -> None:
    fake_claude.script("scripted first")
    fake_claude.respond_with(cite_all)
    first = _post(fake_claude, {"x-api-key": FAKE_API_KEY}).json()
    second = _post(fake_claude, {"x-api-key": FAKE_API_KEY}).json()
    assert first["content"][0]["text"] == "scripted first"
    assert second["content"][0]["text"].endswith("[1][2].")
    assert second["usage"]["input_tokens"] > 0


def test_a_raising_responder_is_reported() -> None:
    def broken(body: dict[str, Any]) -> str:
        raise RuntimeError("oops")

    with FakeClaude(responder=broken) as fake:
        response = _post(fake, {"x-api-key": FAKE_API_KEY})
    assert response.status_code == 400
    assert "responder raised" in response.json()["error"]["message"]
    assert len(fake.errors) == 1 and "RuntimeError: oops" in fake.errors[0]


def test_tool_use_reply_shape(fake_claude: FakeClaude) -> None:
    fake_claude.script(Reply.tool_use("search", {"query": "q"}))
    data = _post(fake_claude, {"x-api-key": FAKE_API_KEY}).json()
    assert data["stop_reason"] == "tool_use"
    (block,) = data["content"]
    assert block["type"] == "tool_use" and block["name"] == "search" and block["input"] == {"query": "q"}
    assert block["id"].startswith("toolu_")


# -- fidelity: the real SDK reads the fake's replies as our client does ------------------------

CITATION = {
    "type": "char_location",
    "cited_text": "Paris is the capital of France.",
    "document_index": 0,
    "document_title": "France",
    "start_char_index": 0,
    "end_char_index": 31,
}
FIDELITY_REPLIES = {
    "text": Reply.text("Paris is the capital [1].", input_tokens=12, output_tokens=7),
    "thinking": Reply.text("Forty-two [2].", thinking="Counting the runs."),
    "tool_use": Reply.tool_use("search", {"query": "capital", "limit": 3, "tags": ["a", "b"]}, text="Look."),
    "citations": Reply.message([{"type": "text", "text": "Paris.", "citations": [CITATION]}]),
}
ASK: dict[str, Any] = {
    "model": DEFAULT_MODEL,
    "max_tokens": 64,
    "system": "Be brief.",
    "messages": [{"role": "user", "content": "Capital of France?"}],
    "tools": [{"name": "search", "input_schema": {"type": "object"}}],
}


def _sdk_completion(message: Any) -> Completion:
    """The SDK's message as wikigr reads a reply (what wikigr did when it ran on the SDK)."""
    data = message.to_dict(mode="json", exclude_none=True)
    for block in data["content"]:
        block.pop("parsed_output", None)
    return parse_completion(200, json.dumps(data).encode(), DEFAULT_MODEL)


@pytest.mark.parametrize("streamed", [False, True], ids=["plain", "streamed"])
@pytest.mark.parametrize("name", list(FIDELITY_REPLIES))
def test_the_sdk_reads_the_fakes_replies_as_our_client_does(
    fake_claude: FakeClaude, name: str, streamed: bool
) -> None:
    import anthropic

    reply = FIDELITY_REPLIES[name]
    reply.piece = 4
    fake_claude.script(reply, reply)
    client = anthropic.Anthropic(api_key=FAKE_API_KEY, base_url=fake_claude.base_url, max_retries=0)
    sdk_pieces: list[str] = []
    with client:
        if streamed:
            with client.messages.stream(**ASK) as stream:
                sdk_pieces.extend(stream.text_stream)
                sdk = _sdk_completion(stream.get_final_message())
        else:
            sdk = _sdk_completion(client.messages.create(**ASK))

    ours_pieces: list[str] = []
    with make_llm(fake_claude) as llm:
        if streamed:
            with llm.streaming(ours_pieces.append):
                ours = llm.complete(ASK["system"], ASK["messages"], 64, tools=ASK["tools"])
        else:
            ours = llm.complete(ASK["system"], ASK["messages"], 64, tools=ASK["tools"])

    assert ours == sdk
    assert ours_pieces == sdk_pieces
    if streamed:
        assert "".join(ours_pieces) == ours.text and len(ours_pieces) > 1
    sdk_request, our_request = fake_claude.messages_requests
    assert our_request.body == sdk_request.body  # the same request body, stream flag included
    assert fake_claude.pending == 0
