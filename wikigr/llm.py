"""The LLM layer: Claude behind one small interface, with retries, typed errors and cost estimates.

``AnthropicLLM`` wraps the ``anthropic`` SDK with the SDK's own retries switched off, so retry
behaviour is ours and testable: exponential backoff on 429, 408, 5xx (529 overloaded included),
connection failures and timeouts, honouring ``retry-after`` up to a cap. Every failure surfaces as
an :class:`LLMError` (a :class:`~wikigr.errors.WikigrError`, exit code 1) with a one-line message.

Configuration comes from the environment (:meth:`AnthropicLLM.from_env`): ``ANTHROPIC_API_KEY``
(none means offline: ``from_env`` returns None), ``ANTHROPIC_BASE_URL`` and ``WIKIGR_MODEL``.

Streaming: inside :meth:`AnthropicLLM.streaming`, the calls a thread makes stream the answer
(server-sent events from the API): a callback gets each piece of text as it arrives, and the call
still returns the whole :class:`Completion`, after the same retries and checks.

Sampling: ``temperature`` defaults to None, which sends no temperature at all. Current models
(Sonnet 5 and later, Opus 4.7 and later) answer a non-default temperature with HTTP 400, and the
SDK no longer has a ``temperature`` argument; a number, when given, is sent as an extra body field.

The module never prints; it only raises.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from wikigr import schema
from wikigr.errors import WikigrError, shown

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT",
    "LLM",
    "AnthropicLLM",
    "Completion",
    "LLMAuthError",
    "LLMError",
    "LLMRequestError",
    "LLMResponseError",
    "LLMUnavailableError",
    "Price",
    "ToolCall",
    "Usage",
    "estimate_cost",
    "llm_available",
    "price_for",
    "resolve_model",
    "tool_result",
]

#: The model used when neither the caller nor ``WIKIGR_MODEL`` names one (the current Sonnet).
DEFAULT_MODEL = "claude-sonnet-5-5"
#: Seconds one HTTP attempt may take (connect, send, wait, read) before it counts as timed out.
DEFAULT_TIMEOUT = 120.0
DEFAULT_MAX_RETRIES = 3
#: Seconds one answer may spend on Claude in all: every call, attempt, retry and wait inside it.
DEFAULT_BUDGET = 30.0
#: Seconds to open the connection: a host that does not answer fails fast, within the budget.
DEFAULT_CONNECT_TIMEOUT = 5.0

ENV_API_KEY = "ANTHROPIC_API_KEY"
ENV_BASE_URL = "ANTHROPIC_BASE_URL"
ENV_MODEL = "WIKIGR_MODEL"
ENV_TIMEOUT = "WIKIGR_TIMEOUT"

_MAX_DETAIL = 240  # characters of an API or transport message kept in an error message


# -- errors ------------------------------------------------------------------------------------


class LLMError(WikigrError):
    """Claude could not give an answer. ``status`` is the last HTTP status, when there was one."""

    exit_code = 1

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMAuthError(LLMError):
    """The API rejected the key (HTTP 401 or 403). Never retried."""


class LLMUnavailableError(LLMError):
    """The API stayed unreachable, overloaded, rate-limited or slow through every retry."""


class LLMRequestError(LLMError):
    """The API rejected the request itself (HTTP 400, 404, 413...): retrying cannot help."""


class LLMResponseError(LLMError):
    """The API answered 2xx with something that is not a Messages API response."""


class _StreamBroken(Exception):
    """A streamed response broke off after its HTTP 200: an ``error`` event, or the connection."""

    def __init__(self, failure: str, transient: bool) -> None:
        super().__init__(failure)
        self.transient = transient


class _SinkError(Exception):
    """The receiver of a streamed answer's pieces raised (its exception is the cause)."""


#: What gets the pieces of a streamed answer: ``on_text(piece)``, and ``on_restart()`` before a
#: retry starts the answer over (the pieces sent so far are void).
TextSink = tuple[Callable[[str], None], Callable[[], None] | None]


# -- results -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One ``tool_use`` block of a response."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass
class Completion:
    """What one call to Claude returned.

    ``text`` joins the response's text blocks (thinking blocks are not part of it).
    ``raw_content`` holds every content block as a dict, thinking and tool_use included, so a
    caller can continue a tool-use conversation with :meth:`as_message`.
    """

    text: str
    input_tokens: int
    output_tokens: int
    model: str
    stop_reason: str | None = None
    tool_calls: list[ToolCall] = field(default_factory=list)
    cost_usd: float = 0.0
    raw_content: list[dict[str, Any]] = field(default_factory=list)

    def as_message(self) -> dict[str, Any]:
        """This response as the assistant turn of the next request's ``messages``."""
        return {"role": "assistant", "content": list(self.raw_content)}


def tool_result(tool_use_id: str, content: str, *, is_error: bool = False) -> dict[str, Any]:
    """A ``tool_result`` block answering a :class:`ToolCall` (send it in a user turn)."""
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content}
    if is_error:
        block["is_error"] = True
    return block


@dataclass
class Usage:
    """Running totals over several completions."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    def add(self, completion: Completion) -> None:
        self.calls += 1
        self.input_tokens += completion.input_tokens
        self.output_tokens += completion.output_tokens
        self.cost_usd += completion.cost_usd

    def to_json(self) -> dict[str, Any]:
        return {
            "calls": self.calls,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cost_usd": round(self.cost_usd, 6),
        }


class LLM(Protocol):
    """What the pipeline needs of a language model. ``AnthropicLLM`` is the real one."""

    model: str

    def complete(
        self,
        system: str,
        messages: list[dict[str, Any]],
        max_tokens: int = 1024,
        temperature: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion: ...


# -- prices ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Price:
    """US dollars per million tokens. A model priced by prompt size has a long-prompt tier:
    prompts over ``long_threshold`` input tokens pay ``long_input`` / ``long_output``."""

    input: float
    output: float
    long_threshold: int | None = None
    long_input: float = 0.0
    long_output: float = 0.0


# Published list prices by model-id prefix; the longest matching prefix wins.
_PRICES: dict[str, Price] = {
    "claude-fable-5-2": Price(8.0, 40.0),
    "claude-fable": Price(10.0, 50.0),
    "claude-opus-5-5": Price(4.0, 20.0),
    "claude-opus-5": Price(5.0, 25.0),
    "claude-opus-4-8": Price(5.0, 25.0),
    "claude-opus-4-7": Price(5.0, 25.0),
    "claude-opus-4-6": Price(5.0, 25.0),
    "claude-opus-4-5": Price(5.0, 25.0),
    "claude-opus-4": Price(15.0, 75.0),
    "claude-sonnet-5": Price(2.0, 10.0),
    "claude-sonnet-4": Price(3.0, 15.0),
    "claude-haiku-5-5": Price(0.10, 0.50, long_threshold=100_000, long_input=0.50, long_output=2.50),
    "claude-haiku-4-5": Price(1.0, 5.0),
    "claude-3-5-haiku": Price(0.80, 4.0),
    "claude-3-haiku": Price(0.25, 1.25),
}
# A model id not in the table is priced by the family its name contains.
_FAMILY_PRICES: dict[str, Price] = {
    "fable": Price(10.0, 50.0),
    "opus": Price(15.0, 75.0),
    "sonnet": Price(3.0, 15.0),
    "haiku": Price(1.0, 5.0),
}
_FALLBACK_PRICE = _FAMILY_PRICES["sonnet"]
_CACHE_WRITE_FACTOR = 1.25  # a 5-minute cache write costs 1.25x the input price
_CACHE_READ_FACTOR = 0.10


def price_for(model: str) -> Price:
    """The list price of ``model``: by longest known prefix, else by family, else Sonnet's."""
    name = model.strip().lower()
    best = max((p for p in _PRICES if name.startswith(p)), key=len, default=None)
    if best is not None:
        return _PRICES[best]
    for family, price in _FAMILY_PRICES.items():
        if family in name:
            return price
    return _FALLBACK_PRICE


def estimate_cost(
    model: str,
    input_tokens: int,
    output_tokens: int,
    *,
    cache_write_tokens: int = 0,
    cache_read_tokens: int = 0,
) -> float:
    """An estimate in US dollars from list prices (no batch or negotiated discounts)."""
    price = price_for(model)
    per_in, per_out = price.input, price.output
    prompt = input_tokens + cache_write_tokens + cache_read_tokens
    if price.long_threshold is not None and prompt > price.long_threshold:
        per_in, per_out = price.long_input, price.long_output
    dollars = (
        input_tokens * per_in
        + cache_write_tokens * per_in * _CACHE_WRITE_FACTOR
        + cache_read_tokens * per_in * _CACHE_READ_FACTOR
        + output_tokens * per_out
    )
    return dollars / 1_000_000


# -- configuration -----------------------------------------------------------------------------


def _env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def llm_available() -> bool:
    """Whether a Claude API key is configured (``ANTHROPIC_API_KEY``); False means offline."""
    return _env(ENV_API_KEY) is not None


def resolve_model(model: str | None = None) -> str:
    """The model to use: the argument, else ``WIKIGR_MODEL``, else :data:`DEFAULT_MODEL`."""
    if model is not None and model.strip():
        return model.strip()
    return _env(ENV_MODEL) or DEFAULT_MODEL


# -- the client --------------------------------------------------------------------------------


def _shorten(text: str, limit: int = _MAX_DETAIL) -> str:
    return shown(" ".join(text.split()), limit)


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _error_fields(body: object) -> tuple[str | None, str | None]:
    """``(error.type, error.message)`` of an API error body, when it has them."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return None, None
    kind, message = error.get("type"), error.get("message")
    return (kind if isinstance(kind, str) else None, message if isinstance(message, str) else None)


_STATUS_LABELS = {
    "overloaded_error": "overloaded",
    "rate_limit_error": "rate limited",
    "api_error": "server error",
    "timeout_error": "timed out",
}


def _describe_failure(status: int, reason: str, body: object) -> str:
    """``HTTP 529 overloaded``, ``HTTP 500 server error (Internal server error)``..."""
    kind, message = _error_fields(body)
    if kind is None and isinstance(body, str) and body.strip() and not body.lstrip().startswith("<"):
        message = body
    label = _STATUS_LABELS.get(kind or "", kind or reason.lower() or "error")
    text = f"HTTP {status} {label}"
    if message and message.strip().rstrip(".").lower() != label:
        text += f" ({_shorten(message)})"
    return text


def _transient(status: int) -> bool:
    """Request timeout, rate limit, server errors (529 overloaded among them)."""
    return status in (408, 429) or status >= 500


def _parse_retry_after(headers: Mapping[str, str]) -> float | None:
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


def budget_from_env() -> float:
    """The time budget of an answer from ``WIKIGR_TIMEOUT`` (seconds), else :data:`DEFAULT_BUDGET`."""
    from wikigr.errors import UsageError

    raw = _env(ENV_TIMEOUT)
    if raw is None:
        return DEFAULT_BUDGET
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 < value < float("inf"):
        raise UsageError(f"{ENV_TIMEOUT} must be a positive number of seconds, not {raw!r}")
    return value


def _http_client(local: threading.local) -> Any:
    """The SDK's HTTP client (httpx2, an httpx) whose every connect, read and write ends by the
    deadline of the answer being given in this thread (``local.attempt_deadline``, None: no
    deadline). httpx's timeouts bound each read, not a whole reply: a server that sends a byte a
    second, of its headers or of its body, would otherwise hold an answer for ever. The deadline
    is read in the calling thread, which does its own network I/O (the client is synchronous)."""
    import anthropic
    import httpcore2

    def left(timeout: float | None, late: type[Exception]) -> float | None:
        end: float | None = getattr(local, "attempt_deadline", None)
        if end is None:
            return timeout
        remaining = end - time.monotonic()
        if remaining <= 0:
            raise late("the reply ran past the answer's time budget")
        return remaining if timeout is None else min(timeout, remaining)

    class Stream(httpcore2.NetworkStream):
        def __init__(self, inner: httpcore2.NetworkStream) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, left(timeout, httpcore2.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, left(timeout, httpcore2.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(
            self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None
        ) -> Stream:
            inner = self._inner.start_tls(
                ssl_context, server_hostname, left(timeout, httpcore2.ConnectTimeout)
            )
            return Stream(inner)

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(httpcore2.NetworkBackend):
        def __init__(self, inner: httpcore2.NetworkBackend) -> None:
            self._inner = inner

        def connect_tcp(
            self,
            host: str,
            port: int,
            timeout: float | None = None,
            local_address: str | None = None,
            socket_options: Any = None,
        ) -> Stream:
            timeout = left(timeout, httpcore2.ConnectTimeout)
            return Stream(self._inner.connect_tcp(host, port, timeout, local_address, socket_options))

        def connect_unix_socket(
            self, path: str, timeout: float | None = None, socket_options: Any = None
        ) -> Stream:
            timeout = left(timeout, httpcore2.ConnectTimeout)
            return Stream(self._inner.connect_unix_socket(path, timeout, socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    client = anthropic.DefaultHttpxClient()
    # httpx2 takes no network backend: each transport's connection pool (proxies' too) gets ours
    wrapped = 0
    for transport in (client._transport, *client._mounts.values()):
        pool = getattr(transport, "_pool", None)
        if pool is not None and hasattr(pool, "_network_backend"):
            pool._network_backend = Backend(pool._network_backend)
            wrapped += 1
    if not hasattr(client._transport, "_pool") or not wrapped:  # httpx2 changed: no budget without it
        raise RuntimeError("wikigr cannot bound Claude's replies with this httpx2: its transport changed")
    return client


class AnthropicLLM:
    """Claude over the Messages API, with our own retries (the SDK's are off).

    ``max_retries`` is the number of retries after the first attempt. The n-th retry waits
    ``backoff_base * 2**(n-1)`` seconds (capped at ``backoff_max``, with up to 25% jitter), or what
    the server's ``retry-after`` says, capped at ``retry_after_max``. ``sleep`` is how it waits.
    ``usage`` accumulates the tokens and estimated cost of every successful call.
    """

    def __init__(
        self,
        api_key: str,
        *,
        model: str = DEFAULT_MODEL,
        base_url: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        retry_after_max: float = 60.0,
        sleep: Callable[[float], None] = time.sleep,
        budget: float = DEFAULT_BUDGET,
        connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    ) -> None:
        import anthropic  # deferred: the SDK is heavy and the offline path never needs it

        if not api_key or not api_key.strip():
            raise LLMAuthError("no Claude API key: set ANTHROPIC_API_KEY")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if timeout <= 0 or budget <= 0 or connect_timeout <= 0:
            raise ValueError("timeout, budget and connect_timeout must be > 0")
        self.model = model
        self.timeout = float(timeout)
        self.budget = float(budget)
        self.connect_timeout = float(connect_timeout)
        self._local = threading.local()  # the deadline of the answer being given, per thread
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.retry_after_max = retry_after_max
        self.usage = Usage()
        self._sleep = sleep
        self._lock = threading.Lock()
        self._client = anthropic.Anthropic(
            api_key=api_key.strip(),
            base_url=base_url,
            timeout=self.timeout,
            max_retries=0,
            http_client=_http_client(self._local),  # the budget holds for whole replies too
        )
        self.base_url = str(self._client.base_url).rstrip("/")

    @classmethod
    def from_env(
        cls,
        model: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        backoff_base: float = 1.0,
        backoff_max: float = 30.0,
        retry_after_max: float = 60.0,
        budget: float | None = None,
    ) -> AnthropicLLM | None:
        """Claude as the environment configures it, or None when ``ANTHROPIC_API_KEY`` is unset
        (offline). The model is ``model``, else ``WIKIGR_MODEL``, else :data:`DEFAULT_MODEL`; the
        time budget of an answer ``budget``, else ``WIKIGR_TIMEOUT``, else :data:`DEFAULT_BUDGET`."""
        key = _env(ENV_API_KEY)
        if key is None:
            return None
        if budget is None:
            budget = budget_from_env()
        return cls(
            key,
            model=resolve_model(model),
            base_url=_env(ENV_BASE_URL),
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            retry_after_max=retry_after_max,
            budget=budget,
        )

    def __repr__(self) -> str:
        return f"AnthropicLLM(model={self.model!r}, base_url={self.base_url!r})"

    # -- life cycle ----------------------------------------------------------------------------

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AnthropicLLM:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    # -- calls ---------------------------------------------------------------------------------

    @contextmanager
    def within(self, budget: float | None = None) -> Iterator[None]:
        """One time budget (``budget`` seconds, default :attr:`budget`) for every call made inside:
        the calls of one answer (a classification, rephrasings, the answer itself) share it. A
        nested use keeps the outer deadline, or with its own ``budget`` ends sooner (a part of the
        answer, like the router's classification, takes only a share of it)."""
        outer = getattr(self._local, "deadline", None)
        own = time.monotonic() + (budget or self.budget)
        if outer is None:
            self._local.deadline = own
        elif budget is not None:
            self._local.deadline = min(outer, own)
        try:
            yield
        finally:
            self._local.deadline = outer

    @contextmanager
    def streaming(
        self, on_text: Callable[[str], None], on_restart: Callable[[], None] | None = None
    ) -> Iterator[None]:
        """Stream the calls this thread makes inside: ``on_text`` gets each piece of an answer's
        text as it arrives (``complete`` still returns the whole :class:`Completion`). When a
        stream breaks after some text and the call is retried, ``on_restart`` is called before
        the new attempt's first piece: what was sent is void. Calls made by other threads
        (another request, a pool's workers) do not stream."""
        outer = getattr(self._local, "sink", None)
        self._local.sink = (on_text, on_restart)
        try:
            yield
        finally:
            self._local.sink = outer

    def complete(
        self,
        system: str,
        messages: list[dict[str, Any]],
        max_tokens: int = 1024,
        temperature: float | None = None,
        tools: list[dict[str, Any]] | None = None,
    ) -> Completion:
        """One Messages API call, retried on transient failures. Raises an :class:`LLMError`.
        Inside :meth:`streaming`, the response streams."""
        kwargs: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if system:
            kwargs["system"] = system
        if tools:
            kwargs["tools"] = tools
        if temperature is not None:
            kwargs["extra_body"] = {"temperature": temperature}

        deadline = getattr(self._local, "deadline", None) or time.monotonic() + self.budget
        self._local.attempt_deadline = deadline  # the HTTP client ends a reply trickling past it
        try:
            return self._complete(kwargs, deadline)
        finally:
            self._local.attempt_deadline = None

    def _complete(self, kwargs: dict[str, Any], deadline: float) -> Completion:
        import anthropic

        sink: TextSink | None = getattr(self._local, "sink", None)
        sent = [False]  # whether an attempt has sent text to the sink
        attempts = 0
        last_failure = "no attempt made"
        last_status: int | None = None
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0.05:
                raise self._over_budget(attempts, last_failure, last_status)
            attempts += 1
            retry_after: float | None = None
            read = min(self.timeout, remaining)
            kwargs["timeout"] = anthropic.Timeout(read, connect=min(self.connect_timeout, remaining))
            try:
                if sink is None:
                    raw = self._client.messages.with_raw_response.create(**kwargs)
                    status, content = raw.http_response.status_code, raw.http_response.content
                else:
                    status, content = 200, self._stream(kwargs, sink, sent)
            except _StreamBroken as err:
                last_status = None
                last_failure = str(err)
                if not err.transient:
                    raise LLMRequestError(f"Claude API rejected the request: {last_failure}") from err
            except anthropic.APIStatusError as err:
                status = err.status_code
                last_status = status
                if status in (401, 403):
                    raise LLMAuthError(
                        f"Claude API rejected the key (HTTP {status}): check ANTHROPIC_API_KEY",
                        status=status,
                    ) from err
                last_failure = _describe_failure(status, err.response.reason_phrase, err.body)
                if not self._retryable(status, err.response.headers):
                    if not _transient(status):
                        raise self._request_error(status, err.body) from err
                    raise LLMUnavailableError(
                        f"Claude API unavailable after {_plural(attempts, 'attempt')}: {last_failure}",
                        status=status,
                    ) from err
                retry_after = _parse_retry_after(err.response.headers)
            except anthropic.APITimeoutError:
                last_status = None
                last_failure = f"timed out after {read:.3g}s"
            except anthropic.APIConnectionError as err:
                last_status = None
                cause = err.__cause__
                detail = f"{type(cause).__name__}: {cause}" if cause is not None else str(err)
                last_failure = f"connection to {self.base_url} failed ({_shorten(detail)})"
            except anthropic.AnthropicError as err:  # credentials, client-side validation...
                raise LLMRequestError(f"Claude request failed: {_shorten(str(err))}") from err
            else:
                completion = self._parse(status, content)
                with self._lock:
                    self.usage.add(completion)
                return completion

            if attempts > self.max_retries:
                raise LLMUnavailableError(
                    f"Claude API unavailable after {_plural(attempts, 'attempt')}: {last_failure}",
                    status=last_status,
                )
            delay = self._delay(attempts, retry_after)
            if time.monotonic() + delay >= deadline:  # the wait alone would spend what is left
                raise self._over_budget(attempts, last_failure, last_status)
            self._sleep(delay)

    # -- internals -----------------------------------------------------------------------------

    def _stream(self, kwargs: dict[str, Any], sink: TextSink, sent: list[bool]) -> bytes:
        """One streamed attempt: its text pieces go to the sink; returns the final message as the
        JSON body a non-streamed call would have had. A failure before the HTTP 200 raises the
        SDK's error (handled as for a plain call); a break after it, :class:`_StreamBroken`."""
        import anthropic

        on_text, on_restart = sink
        if sent[0] and on_restart is not None:
            on_restart()
        sent[0] = False
        try:
            with self._client.messages.stream(**kwargs) as stream:
                for piece in stream.text_stream:
                    sent[0] = True
                    try:
                        on_text(piece)
                    except Exception as exc:
                        raise _SinkError from exc
                message = stream.get_final_message()
        except _SinkError as err:  # the receiver's failure is not Claude's: it is not retried
            raise err.__cause__ or err from None
        except anthropic.APIStatusError as err:
            if err.status_code != 200:
                raise
            kind, text = _error_fields(err.body)
            label = _STATUS_LABELS.get(kind or "", kind or "error")
            detail = f" ({_shorten(text)})" if text else ""
            raise _StreamBroken(f"the stream broke off: {label}{detail}", kind in _STATUS_LABELS) from err
        except anthropic.AnthropicError:
            raise
        except Exception as err:  # the SDK's transport failed mid-stream (its httpx's errors)
            detail = f"{type(err).__name__}: {_shorten(str(err))}"
            raise _StreamBroken(f"the stream broke off ({detail})", transient=True) from err
        data = message.to_dict(mode="json", exclude_none=True)
        blocks = data.get("content")
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict):
                block.pop("parsed_output", None)
        return json.dumps(data).encode("utf-8")

    def _over_budget(self, attempts: int, last_failure: str, status: int | None) -> LLMUnavailableError:
        tried = f" after {_plural(attempts, 'attempt')} ({last_failure})" if attempts else ""
        return LLMUnavailableError(
            f"no answer from Claude within the time budget of {self.budget:g}s{tried}; "
            f"{ENV_TIMEOUT} (or a command's --timeout) sets it",
            status=status,
        )

    @staticmethod
    def _retryable(status: int, headers: Mapping[str, str]) -> bool:
        """Transient statuses are retried, unless the API's ``x-should-retry`` header says."""
        hint = (headers.get("x-should-retry") or "").strip().lower()
        if hint == "true":
            return True
        if hint == "false":
            return False
        return _transient(status)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        import random

        backoff = min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))
        return backoff * (1.0 - 0.25 * random.random())

    def _request_error(self, status: int, body: object) -> LLMRequestError:
        kind, message = _error_fields(body)
        if message is None and isinstance(body, str) and body.strip():
            message = body
        what = f"HTTP {status} {kind}" if kind else f"HTTP {status}"
        text = f"Claude API rejected the request ({what}): {_shorten(message or 'no error message')}"
        if status == 404:
            text += f" (model {self.model})"
        return LLMRequestError(text, status=status)

    def _parse(self, status: int, content: bytes) -> Completion:
        """A Messages API response body as a :class:`Completion`; LLMResponseError otherwise."""

        def bad(why: str) -> LLMResponseError:
            return LLMResponseError(
                f"Claude API returned an unexpected response (HTTP {status}): {why}", status=status
            )

        try:
            data = schema.parse_json(content)
        except schema.JSONError as exc:
            raise LLMResponseError(
                f"Claude API returned malformed JSON (HTTP {status}): {_shorten(str(exc))}", status=status
            ) from exc
        if not isinstance(data, dict):
            raise bad(f"a JSON {type(data).__name__}, not an object")
        if data.get("type") == "error":
            kind, message = _error_fields(data)
            raise bad(f"an error object ({kind}: {_shorten(message or '')})")
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
        model = model if isinstance(model, str) and model else self.model
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
