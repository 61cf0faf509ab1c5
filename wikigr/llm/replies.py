"""The Messages API's failures and replies as wikigr reads them: one-line descriptions of HTTP
failures, which statuses are transient, the server's ``retry-after``, and a response body parsed
into a :class:`~wikigr.llm.types.Completion` (or refused with :class:`LLMResponseError`)."""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from wikigr import schema
from wikigr.errors import shown
from wikigr.llm.errors import LLMResponseError
from wikigr.llm.prices import estimate_cost
from wikigr.llm.types import Completion, ToolCall

__all__ = [
    "MAX_DETAIL",
    "STATUS_LABELS",
    "describe_failure",
    "error_fields",
    "is_transient",
    "parse_completion",
    "parse_retry_after",
    "plural",
    "shorten",
]

MAX_DETAIL = 240  # characters of an API or transport message kept in an error message


def shorten(text: str, limit: int = MAX_DETAIL) -> str:
    return shown(" ".join(text.split()), limit)


def plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def error_fields(body: object) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` of an API error body, when it has them."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else None, message if isinstance(message, str) else None)


STATUS_LABELS = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate limited",
    "api_error": "server error",
    "timeout_error": "timed out",
}


def describe_failure(status: int, reason: str, body: object) -> str:
    """``HTTP 529 overloaded``, ``HTTP 500 server error (Internal server error)``..."""
    kind, message = error_fields(body)
    if kind is None and isinstance(body, str) and body.strip() and not body.lstrip().startswith("<"):
        message = body
    label = STATUS_LABELS.get(kind or "", kind or reason.lower() or "error")
    text = f"HTTP {status} {label}"
    if message and message.strip().rstrip(".").lower() != label:
        text += f" ({shorten(message)})"
    return text


def is_transient(status: int) -> bool:
    """Request timeout, rate limit, server errors (529 overloaded among them)."""
    return status in (408, 429) or status >= 500


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds the server asked us to wait (``retry-after-ms``, or ``retry-after`` in seconds or
    as an HTTP date), or None."""
    millis = headers.get("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    import email.utils  # only for a Retry-After date: not imported with wikigr.llm (query start-up)

    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


def parse_completion(status: int, content: bytes, default_model: str) -> Completion:
    """A Messages API response body as a :class:`Completion`; LLMResponseError otherwise.
    ``default_model`` names the model when the body does not."""

    def bad(why: str) -> LLMResponseError:
        return LLMResponseError(
            f"Claude API returned an unexpected response (HTTP {status}): {why}", status=status
        )

    try:
        data = schema.parse_json(content)
    except schema.JSONError as exc:
        raise LLMResponseError(
            f"Claude API returned malformed JSON (HTTP {status}): {shorten(str(exc))}", status=status
        ) from exc
    if not isinstance(data, dict):
        raise bad(f"a JSON {type(data).__name__}, not an object")
    if data.get("type") == "error":
        kind, message = error_fields(data)
        raise bad(f"an error object ({kind}: {shorten(message or '')})")
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise bad("no content list")
    usage = data.get("usage")
    if not isinstance(usage, dict):
        raise bad("no usage")

    def count(name: str, required: bool) -> int:
        value = usage.get(name)
        if value is None and not required:
            return 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise bad(f"usage.{name} is not a token count")
        return value

    input_tokens = count("input_tokens", True)
    output_tokens = count("output_tokens", True)
    cache_write = count("cache_creation_input_tokens", False)
    cache_read = count("cache_read_input_tokens", False)

    texts: list[str] = []
    calls: list[ToolCall] = []
    raw_content: list[dict[str, Any]] = []
    for index, block in enumerate(blocks):
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            raise bad(f"content[{index}] is not a content block")
        raw_content.append(block)
        kind = block["type"]
        if kind == "text":
            text = block.get("text")
            if not isinstance(text, str):
                raise bad(f"content[{index}] is a text block without text")
            texts.append(text)
        elif kind == "tool_use":
            call_id, name, args = block.get("id"), block.get("name"), block.get("input")
            if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(args, dict):
                raise bad(f"content[{index}] is a malformed tool_use block")
            calls.append(ToolCall(id=call_id, name=name, input=args))

    model = data.get("model")
    model = model if isinstance(model, str) and model else default_model
    stop_reason = data.get("stop_reason")
    return Completion(
        text="".join(texts),
        input_tokens=input_tokens,
        output_tokens=output_tokens,
        model=model,
        stop_reason=stop_reason if isinstance(stop_reason, str) else None,
        tool_calls=calls,
        cost_usd=estimate_cost(
            model,
            input_tokens,
            output_tokens,
            cache_write_tokens=cache_write,
            cache_read_tokens=cache_read,
        ),
        raw_content=raw_content,
    )
