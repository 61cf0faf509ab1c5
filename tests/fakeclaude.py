"""A fake Claude Messages API on 127.0.0.1: tests run wikigr's own client (``wikigr.llm.wire``)
against it, and ``tests/llm/test_fakeclaude.py`` keeps it faithful, checking that the real
``anthropic`` SDK reads its replies (plain and streamed) to the same results as our client.

Usage::

    from tests.fakeclaude import FakeClaude, Reply, make_llm

    with FakeClaude() as fake:
        fake.script(Reply.overloaded(), Reply.text("Paris [1]."))
        with make_llm(fake) as llm:  # an AnthropicLLM at fake.base_url, tiny backoff
            completion = llm.complete("Be brief.", [{"role": "user", "content": "Capital?"}])
        assert completion.text == "Paris [1]."
        assert len(fake.requests) == 2 and fake.last.model == llm.model

or with the fixtures below (``fake_claude``, ``fake_llm``, ``claude_env``), which a conftest makes
available by importing them (``from tests.fakeclaude import claude_env, fake_claude, fake_llm``).

What it answers, in order: the scripted replies queued with :meth:`FakeClaude.script` (one per
request), then the ``responder`` callable (``request JSON -> Reply | str``; a str is a text
reply), else HTTP 400 "nothing scripted". Before that, like the real API, it checks the key
(``x-api-key: KEY`` or ``Authorization: Bearer KEY``; anything else gets a 401
``authentication_error``), the path (``POST /v1/messages``, else 404), the ``anthropic-version``
header and the body's required fields (400 ``invalid_request_error``). Every request is recorded,
rejected ones too. A message reply with no ``model`` echoes the request's, and with no token
counts estimates them (about 4 characters a token).

A request with ``"stream": true`` gets a successful message reply as server-sent events, as the
real API streams it (``message_start``, a ``ping``, ``content_block_start``/``_delta``/``_stop``
per block, ``message_delta``, ``message_stop``): text in pieces of ``Reply.piece`` characters,
``Reply.pause`` seconds apart, a text block's citations as ``citations_delta`` events before its
text. :meth:`Reply.streamed_error` sends some text, then an ``error`` event; :meth:`Reply.cut`
sends some text, then closes the connection.

The server speaks HTTP/1.0: one request per connection, so a truncated body ends when it closes.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import threading
import traceback
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.httpserver import LoopbackServer, QuietServer

if TYPE_CHECKING:
    from wikigr.llm import AnthropicLLM

__all__ = [
    "FAKE_API_KEY",
    "UNROUTABLE_BASE_URL",
    "ClaudeRequest",
    "FakeClaude",
    "Reply",
    "Responder",
    "block_real_claude",
    "cite_all",
    "claude_env",
    "fake_claude",
    "fake_llm",
    "make_llm",
    "prompt_text",
]

FAKE_API_KEY = "sk-ant-test-fakeclaude"
#: Where ANTHROPIC_BASE_URL points when no test asked for the fake: nothing listens on port 9.
UNROUTABLE_BASE_URL = "http://127.0.0.1:9"

#: Environment variables through which the SDK could find real credentials or send extra headers.
_CREDENTIAL_VARS = (
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_ORGANIZATION_ID",
    "ANTHROPIC_CUSTOM_HEADERS",
    "WIKIGR_MODEL",
)


# -- requests ----------------------------------------------------------------------------------


def _block_text(content: Any) -> str:
    """The text of a message's ``content`` (a string or a list of blocks)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    if isinstance(content, list):
        for block in content:
            if isinstance(block, dict):
                if isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "tool_result":
                    parts.append(_block_text(block.get("content")))
    return "\n".join(parts)


def prompt_text(body: dict[str, Any]) -> str:
    """All the text a request sends: the system prompt, then every message's text."""
    parts = [_block_text(body.get("system"))]
    for message in body.get("messages") or []:
        if isinstance(message, dict):
            parts.append(_block_text(message.get("content")))
    return "\n".join(p for p in parts if p)


@dataclass(frozen=True)
class ClaudeRequest:
    """One request the fake received."""

    method: str
    path: str
    headers: dict[str, str]  # names lower-cased
    raw: bytes
    body: Any  # the parsed JSON body; None when it was not JSON
    auth: str | None  # "x-api-key", "bearer", or None when the key was missing or wrong

    @property
    def json(self) -> dict[str, Any]:
        return self.body if isinstance(self.body, dict) else {}

    @property
    def model(self) -> str | None:
        return self.json.get("model")

    @property
    def system(self) -> str:
        return _block_text(self.json.get("system"))

    @property
    def messages(self) -> list[dict[str, Any]]:
        return list(self.json.get("messages") or [])

    @property
    def tools(self) -> list[dict[str, Any]]:
        return list(self.json.get("tools") or [])

    @property
    def prompt(self) -> str:
        """The system prompt and all message text, joined."""
        return prompt_text(self.json)

    @property
    def last_user_text(self) -> str:
        for message in reversed(self.messages):
            if message.get("role") == "user":
                return _block_text(message.get("content"))
        return ""


# -- replies -----------------------------------------------------------------------------------

_ids = itertools.count(1)


def _message_body(
    content: list[dict[str, Any]],
    *,
    stop_reason: str | None,
    input_tokens: int | None,
    output_tokens: int | None,
    model: str | None,
) -> dict[str, Any]:
    return {
        "id": f"msg_fake{next(_ids):06d}",
        "type": "message",
        "role": "assistant",
        "model": model,  # None: echo the request's
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens},
    }


@dataclass
class Reply:
    """What the fake sends for one request. Build one with the class methods.

    ``body`` is a dict (sent as JSON, a message's ``None`` model and token counts filled in from
    the request) or raw bytes. ``delay`` waits that many seconds before answering (a slow
    server); ``content_length`` overrides the header (more than the body: a truncated reply).
    """

    status: int = 200
    body: dict[str, Any] | bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_length: int | None = None
    content_type: str = "application/json"
    piece: int = 8  # characters per text delta, when streamed
    pause: float = 0.0  # seconds between streamed events (between the bytes of a plain body)
    header_pause: float = 0.0  # seconds between the bytes of the status line and headers
    stream_error: dict[str, Any] | None = None  # an error event sent after the text, when streamed
    stream_cut: bool = False  # the connection closes after the first block's text, when streamed

    # -- successes -----------------------------------------------------------------------------

    @classmethod
    def message(
        cls,
        content: list[dict[str, Any]],
        *,
        stop_reason: str | None = "end_turn",
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
    ) -> Reply:
        """A message with these content blocks."""
        body = _message_body(
            content,
            stop_reason=stop_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model=model,
        )
        return cls(body=body)

    @classmethod
    def text(
        cls,
        text: str,
        *,
        stop_reason: str | None = "end_turn",
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
        thinking: str | None = None,
    ) -> Reply:
        """A text answer (after a thinking block, when ``thinking`` is given)."""
        content: list[dict[str, Any]] = []
        if thinking is not None:
            content.append({"type": "thinking", "thinking": thinking, "signature": "fake-signature"})
        content.append({"type": "text", "text": text})
        return cls.message(
            content,
            stop_reason=stop_reason,
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model=model,
        )

    @classmethod
    def tool_use(
        cls,
        name: str,
        input: dict[str, Any],
        *,
        id: str | None = None,
        text: str | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        model: str | None = None,
    ) -> Reply:
        """A request to call tool ``name`` (after some text, when ``text`` is given)."""
        content: list[dict[str, Any]] = []
        if text is not None:
            content.append({"type": "text", "text": text})
        call_id = id or f"toolu_fake{next(_ids):06d}"
        content.append({"type": "tool_use", "id": call_id, "name": name, "input": input})
        return cls.message(
            content,
            stop_reason="tool_use",
            input_tokens=input_tokens,
            output_tokens=output_tokens,
            model=model,
        )

    # -- failures ------------------------------------------------------------------------------

    @classmethod
    def error(
        cls,
        status: int,
        error_type: str,
        message: str,
        *,
        retry_after: str | float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Reply:
        """An API error: ``{"type": "error", "error": {"type": ..., "message": ...}}``."""
        extra = dict(headers or {})
        if retry_after is not None:
            extra["retry-after"] = str(retry_after)
        body = {"type": "error", "error": {"type": error_type, "message": message}}
        return cls(status=status, body=body, headers=extra)

    @classmethod
    def overloaded(cls) -> Reply:
        return cls.error(529, "overloaded_error", "Overloaded")

    @classmethod
    def rate_limited(cls, retry_after: str | float | None = "0") -> Reply:
        return cls.error(
            429,
            "rate_limit_error",
            "Number of request tokens has exceeded your per-minute rate limit",
            retry_after=retry_after,
        )

    @classmethod
    def server_error(cls, status: int = 500) -> Reply:
        return cls.error(status, "api_error", "Internal server error")

    @classmethod
    def unauthorized(cls) -> Reply:
        return cls.error(401, "authentication_error", "invalid x-api-key")

    @classmethod
    def bad_request(cls, message: str = "messages: field required") -> Reply:
        return cls.error(400, "invalid_request_error", message)

    @classmethod
    def malformed(cls, body: bytes = b'{"id": "msg_fake", "type": "message", "content": [') -> Reply:
        """HTTP 200 whose JSON body does not parse."""
        return cls(body=body)

    @classmethod
    def truncated(cls) -> Reply:
        """HTTP 200 whose body stops short of its Content-Length (the connection then closes)."""
        partial = b'{"id": "msg_fake", "type": "message", "role": "assistant", "content": [{"ty'
        return cls(body=partial, content_length=len(partial) + 200)

    @classmethod
    def streamed_error(
        cls, text: str, error_type: str = "overloaded_error", message: str = "Overloaded"
    ) -> Reply:
        """To a streaming request: ``text`` as deltas, then an ``error`` event (the stream breaks
        after the HTTP 200). To any other request: that text as a whole message."""
        reply = cls.text(text)
        reply.stream_error = {"type": "error", "error": {"type": error_type, "message": message}}
        return reply

    @classmethod
    def cut(cls, text: str) -> Reply:
        """To a streaming request: ``text`` as deltas, then the connection closes (no
        ``message_stop``). To any other request: that text as a whole message."""
        reply = cls.text(text)
        reply.stream_cut = True
        return reply

    @classmethod
    def trickle(cls, pause: float) -> Reply:
        """A text answer that arrives at once but trickles: a byte (streamed: an event of one
        character) every ``pause`` seconds, never late enough for a read to time out."""
        reply = cls.text("Call settimeout(value) on the socket [1]. " * 20)
        reply.pause, reply.piece = pause, 1
        return reply

    @classmethod
    def trickled_headers(cls, pause: float) -> Reply:
        """A text answer whose status line and headers trickle: a byte every ``pause`` seconds."""
        reply = cls.text("Call settimeout(value) on the socket [1].")
        reply.header_pause = pause
        return reply

    @classmethod
    def slow(cls, delay: float, then: Reply | None = None) -> Reply:
        """``then`` (a short text answer by default), after ``delay`` seconds."""
        reply = then if then is not None else cls.text("late")
        return cls(
            status=reply.status,
            body=reply.body,
            headers=dict(reply.headers),
            delay=delay,
            content_length=reply.content_length,
            content_type=reply.content_type,
            piece=reply.piece,
            pause=reply.pause,
            header_pause=reply.header_pause,
            stream_error=reply.stream_error,
            stream_cut=reply.stream_cut,
        )


Responder = Callable[[dict[str, Any]], Reply | str]

_CITATION = re.compile(r"\[(\d{1,3})\]")


def cite_all(body: dict[str, Any]) -> Reply:
    """A responder that answers citing every ``[n]`` marker found in the prompt, in order."""
    numbers = sorted({int(n) for n in _CITATION.findall(prompt_text(body))})
    if not numbers:
        return Reply.text("I could not find this in the sources.")
    cites = "".join(f"[{n}]" for n in numbers)
    return Reply.text(f"According to the sources, here is the answer {cites}.")


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)


# -- the server --------------------------------------------------------------------------------


class _Handler(BaseHTTPRequestHandler):
    server: QuietServer
    protocol_version = "HTTP/1.0"

    def log_message(self, format: str, *args: object) -> None:
        """No logging to stderr."""

    def do_POST(self) -> None:
        self._handle()

    def do_GET(self) -> None:
        self._handle()

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length > 0 else b""

    def _handle(self) -> None:
        owner = self.server.owner
        try:
            raw = self._read_body()
        except (OSError, ValueError):
            return
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = None
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = ClaudeRequest(
            method=self.command,
            path=self.path.split("?", 1)[0],
            headers=headers,
            raw=raw,
            body=body,
            auth=owner._auth_via(headers),
        )
        owner._record(request)
        try:
            reply = owner._reply_for(request)
        except Exception:  # noqa: BLE001 - a broken responder becomes a visible, unretried 400
            owner.errors.append(traceback.format_exc())
            reply = Reply.bad_request("fakeclaude: the responder raised (see FakeClaude.errors)")
        self._send(reply, request)

    def _send(self, reply: Reply, request: ClaudeRequest) -> None:
        owner = self.server.owner
        streamed = request.json.get("stream") is True and reply.status == 200
        if streamed and isinstance(reply.body, dict) and reply.body.get("type") == "message":
            self._send_stream(reply, owner._complete_body(reply.body, request))
            return
        if isinstance(reply.body, dict):
            data = json.dumps(owner._complete_body(reply.body, request)).encode("utf-8")
        else:
            data = reply.body
        try:
            if reply.delay > 0 and owner._stopping.wait(reply.delay):
                return  # the server is shutting down
            self.send_response(reply.status)
            self.send_header("Content-Type", reply.content_type)
            length = reply.content_length if reply.content_length is not None else len(data)
            self.send_header("Content-Length", str(length))
            self.send_header("request-id", f"req_fake{next(_ids):06d}")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if not self._end_headers(reply):
                return
            if reply.pause > 0:  # a trickling server: a byte at a time, ``pause`` seconds apart
                for byte in range(len(data)):
                    if owner._stopping.wait(reply.pause):
                        return
                    self.wfile.write(data[byte : byte + 1])
                    self.wfile.flush()
            else:
                self.wfile.write(data)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            return  # the client gave up (timed out), as the test intended

    def _end_headers(self, reply: Reply) -> bool:
        """Ends the headers, a byte every ``reply.header_pause`` seconds if it says so; False if
        the server is shutting down meanwhile."""
        if reply.header_pause <= 0:
            self.end_headers()
            return True
        self._headers_buffer.append(b"\r\n")  # what end_headers() would send, held back
        head, self._headers_buffer = b"".join(self._headers_buffer), []
        for byte in range(len(head)):
            if self.server.owner._stopping.wait(reply.header_pause):
                return False
            self.wfile.write(head[byte : byte + 1])
            self.wfile.flush()
        return True

    def _send_stream(self, reply: Reply, message: dict[str, Any]) -> None:
        """The message as the Messages API streams it (server-sent events); the body ends when
        the connection closes (HTTP/1.0)."""
        owner = self.server.owner
        try:
            if reply.delay > 0 and owner._stopping.wait(reply.delay):
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("request-id", f"req_fake{next(_ids):06d}")
            for name, value in reply.headers.items():
                self.send_header(name, value)
            if not self._end_headers(reply):
                return
            for event in _stream_events(message, reply):
                if reply.pause > 0 and owner._stopping.wait(reply.pause):
                    return
                line = f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"
                self.wfile.write(line.encode("utf-8"))
                self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, TimeoutError):
            return


def _stream_events(message: dict[str, Any], reply: Reply) -> Iterator[dict[str, Any]]:
    """The server-sent events of a streamed message (an ``error`` event ends it early when the
    reply says so)."""
    usage = dict(message["usage"])
    start = {**message, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield {"type": "message_start", "message": start}
    yield {"type": "ping"}
    piece = max(1, reply.piece)
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        if kind == "text":
            opening = {"type": "text", "text": ""}
            if "citations" in block:
                opening["citations"] = []
            yield {"type": "content_block_start", "index": index, "content_block": opening}
            for citation in block.get("citations") or []:
                delta = {"type": "citations_delta", "citation": citation}
                yield {"type": "content_block_delta", "index": index, "delta": delta}
            text = block["text"]
            for at in range(0, len(text), piece):
                delta = {"type": "text_delta", "text": text[at : at + piece]}
                yield {"type": "content_block_delta", "index": index, "delta": delta}
        elif kind == "tool_use":
            opening = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            yield {"type": "content_block_start", "index": index, "content_block": opening}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        elif kind == "thinking":
            opening = {"type": "thinking", "thinking": "", "signature": ""}
            yield {"type": "content_block_start", "index": index, "content_block": opening}
            delta = {"type": "thinking_delta", "thinking": block["thinking"]}
            yield {"type": "content_block_delta", "index": index, "delta": delta}
            delta = {"type": "signature_delta", "signature": block.get("signature", "")}
            yield {"type": "content_block_delta", "index": index, "delta": delta}
        else:
            yield {"type": "content_block_start", "index": index, "content_block": block}
        if reply.stream_error is not None:
            yield reply.stream_error
            return
        if reply.stream_cut:
            return
        yield {"type": "content_block_stop", "index": index}
    delta = {"stop_reason": message.get("stop_reason"), "stop_sequence": None}
    yield {"type": "message_delta", "delta": delta, "usage": {"output_tokens": usage["output_tokens"]}}
    yield {"type": "message_stop"}


class FakeClaude(LoopbackServer):
    """A threaded fake of ``POST /v1/messages`` on 127.0.0.1 at a free port.

    ``api_key`` is the one key it accepts. ``responder`` computes a reply from the request JSON
    once the scripted queue is empty. ``requests`` lists everything received; ``errors`` holds
    the tracebacks of responders that raised.
    """

    handler = _Handler

    def __init__(self, api_key: str = FAKE_API_KEY, responder: Responder | None = None) -> None:
        super().__init__()
        self.api_key = api_key
        self.responder = responder
        self.errors: list[str] = []
        self._queue: deque[Reply] = deque()
        self._requests: list[ClaudeRequest] = []
        self._lock = threading.Lock()

    # -- scripting -----------------------------------------------------------------------------

    def script(self, *replies: Reply | str) -> FakeClaude:
        """Queue replies, one per coming request (a str is a text reply)."""
        with self._lock:
            self._queue.extend(Reply.text(r) if isinstance(r, str) else r for r in replies)
        return self

    def respond_with(self, responder: Responder | None) -> FakeClaude:
        """Answer with ``responder(request_json)`` once the queue is empty."""
        self.responder = responder
        return self

    @property
    def pending(self) -> int:
        """Scripted replies not yet sent."""
        with self._lock:
            return len(self._queue)

    # -- inspection ----------------------------------------------------------------------------

    @property
    def requests(self) -> list[ClaudeRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def messages_requests(self) -> list[ClaudeRequest]:
        """The requests that reached ``POST /v1/messages`` with a valid key."""
        return [r for r in self.requests if r.path == "/v1/messages" and r.auth is not None]

    @property
    def last(self) -> ClaudeRequest:
        requests = self.requests
        if not requests:
            raise AssertionError("the fake Claude server received no request")
        return requests[-1]

    # -- internals -----------------------------------------------------------------------------

    def _record(self, request: ClaudeRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _auth_via(self, headers: dict[str, str]) -> str | None:
        if headers.get("x-api-key") == self.api_key:
            return "x-api-key"
        scheme, _, token = headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and token.strip() == self.api_key:
            return "bearer"
        return None

    def _reply_for(self, request: ClaudeRequest) -> Reply:
        if request.auth is None:
            return Reply.unauthorized()
        if request.path != "/v1/messages" or request.method != "POST":
            return Reply.error(404, "not_found_error", f"Not found: {request.method} {request.path}")
        problem = _validate(request)
        if problem is not None:
            return Reply.bad_request(problem)
        with self._lock:
            scripted = self._queue.popleft() if self._queue else None
        if scripted is not None:
            return scripted
        if self.responder is not None:
            answer = self.responder(request.json)
            return Reply.text(answer) if isinstance(answer, str) else answer
        return Reply.bad_request("fakeclaude: nothing scripted for this request")

    def _complete_body(self, body: dict[str, Any], request: ClaudeRequest) -> dict[str, Any]:
        """Fill a message reply's model and token counts from the request."""
        if body.get("type") != "message":
            return body
        done = dict(body)
        if done.get("model") is None:
            done["model"] = request.model
        usage = dict(done.get("usage") or {})
        if usage.get("input_tokens") is None:
            usage["input_tokens"] = _estimate_tokens(request.prompt)
        if usage.get("output_tokens") is None:
            usage["output_tokens"] = _estimate_tokens(json.dumps(done.get("content")))
        done["usage"] = usage
        return done


def _validate(request: ClaudeRequest) -> str | None:
    """What the real API would reject with 400, or None."""
    if "anthropic-version" not in request.headers:
        return "anthropic-version: header is required"
    body = request.body
    if not isinstance(body, dict):
        return "the request body is not a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return "model: Field required"
    max_tokens = body.get("max_tokens")
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        return "max_tokens: Field required (a positive integer)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return "messages: at least one message is required"
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ("user", "assistant"):
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        if "content" not in message:
            return f"messages.{index}.content: Field required"
    return None


# -- helpers for tests -------------------------------------------------------------------------


def make_llm(fake: FakeClaude, **overrides: Any) -> AnthropicLLM:
    """An :class:`~wikigr.llm.AnthropicLLM` pointed at ``fake``, with tiny backoff so retry tests
    take milliseconds (a test of a slow reply sets its own short ``timeout``; this one only
    catches a hang, on a machine however busy). Close it (or use it as a context manager)."""
    from wikigr.llm import DEFAULT_MODEL, AnthropicLLM

    options: dict[str, Any] = {
        "model": DEFAULT_MODEL,
        "base_url": fake.base_url,
        "timeout": 60.0,
        "max_retries": 3,
        "backoff_base": 0.001,
        "backoff_max": 0.005,
        "retry_after_max": 0.01,
    }
    options.update(overrides)
    api_key = options.pop("api_key", fake.api_key)
    return AnthropicLLM(api_key, **options)


def block_real_claude(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make the real Claude API unreachable for this test: no key or other credential in the
    environment, ANTHROPIC_BASE_URL at a loopback port nothing listens on, no SDK config dir.
    A test that wants Claude points at the fake (``claude_env``, ``make_llm``)."""
    for name in _CREDENTIAL_VARS:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", UNROUTABLE_BASE_URL)
    monkeypatch.setenv("ANTHROPIC_CONFIG_DIR", str(Path(os.devnull) / "anthropic"))


# -- pytest fixtures (import them into a conftest to use them) ----------------------------------


@pytest.fixture
def fake_claude() -> Iterator[FakeClaude]:
    """A running fake Claude server; fails the test if a responder raised."""
    with FakeClaude() as fake:
        yield fake
    if fake.errors:
        pytest.fail("fake Claude responder raised:\n" + "\n".join(fake.errors), pytrace=False)


@pytest.fixture
def fake_llm(fake_claude: FakeClaude) -> Iterator[AnthropicLLM]:
    """An AnthropicLLM talking to ``fake_claude`` (tiny backoff)."""
    with make_llm(fake_claude) as llm:
        yield llm


@pytest.fixture
def claude_env(fake_claude: FakeClaude, monkeypatch: pytest.MonkeyPatch) -> FakeClaude:
    """Point ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL at ``fake_claude``, so code that calls
    ``AnthropicLLM.from_env()`` talks to the fake. Returns the fake, for scripting."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", fake_claude.api_key)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake_claude.base_url)
    return fake_claude
