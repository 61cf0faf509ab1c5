"""Claude over the Messages API: :class:`AnthropicLLM`, on wikigr's own small client
(:mod:`wikigr.llm.wire`, the standard library's ``http.client``), so retry behaviour is ours and
testable: exponential backoff on 429, 408, 5xx (529 overloaded included), connection failures and
timeouts, honouring ``retry-after`` up to a cap. Every failure surfaces as an
:class:`~wikigr.llm.errors.LLMError` with a one-line message.

No SDK: ``anthropic`` took seconds of CPU to import (its pydantic models), and every question of a
Claude Code skill starts a new process.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Any

from wikigr.errors import UsageError
from wikigr.llm.config import (
    DEFAULT_BUDGET,
    DEFAULT_CONNECT_TIMEOUT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_MODEL,
    DEFAULT_TIMEOUT,
    ENV_API_KEY,
    ENV_BASE_URL,
    ENV_TIMEOUT,
    budget_from_env,
    env,
    resolve_model,
)
from wikigr.llm.errors import LLMAuthError, LLMRequestError, LLMUnavailableError
from wikigr.llm.replies import (
    STATUS_LABELS,
    describe_failure,
    error_fields,
    is_transient,
    parse_completion,
    parse_retry_after,
    plural,
    shorten,
)
from wikigr.llm.types import Completion, Usage

if TYPE_CHECKING:
    from wikigr.llm.wire import StreamBroken

__all__ = ["AnthropicLLM", "TextSink"]


class _SinkError(Exception):
    """The receiver of a streamed answer's pieces raised (its exception is the cause)."""


#: What gets the pieces of a streamed answer: ``on_text(piece)``, and ``on_restart()`` before a
#: retry starts the answer over (the pieces sent so far are void).
TextSink = tuple[Callable[[str], None], Callable[[], None] | None]


class AnthropicLLM:
    """Claude over the Messages API, with our own retries.

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
        # deferred: http.client is not needed by a query without Claude (wikigr.llm's errors are)
        from wikigr.llm.wire import DEFAULT_BASE_URL, Wire

        self.base_url = (base_url or env(ENV_BASE_URL) or DEFAULT_BASE_URL).rstrip("/")
        try:
            self._wire = Wire(self.base_url, api_key.strip())
        except ValueError as exc:
            raise UsageError(str(exc)) from exc

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
        key = env(ENV_API_KEY)
        if key is None:
            return None
        if budget is None:
            budget = budget_from_env()
        return cls(
            key,
            model=resolve_model(model),
            base_url=env(ENV_BASE_URL),
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
        """Nothing to release: each request has a connection of its own, closed after it."""

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
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "messages": messages}
        if system:
            body["system"] = system
        if tools:
            body["tools"] = tools
        if temperature is not None:
            body["temperature"] = temperature
        deadline = getattr(self._local, "deadline", None) or time.monotonic() + self.budget
        return self._complete(body, deadline)

    def _complete(self, body: dict[str, Any], deadline: float) -> Completion:
        from wikigr.llm.wire import StreamBroken, TimeoutException, TransportError

        sink: TextSink | None = getattr(self._local, "sink", None)
        if sink is not None:
            body = {**body, "stream": True}
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
            try:
                reply = self._wire.send(
                    body,
                    connect_timeout=min(self.connect_timeout, remaining),
                    read_timeout=read,
                    deadline=deadline,
                    on_text=None if sink is None else _attempt_sink(sink, sent),
                )
            except _SinkError as err:  # the receiver's failure is not Claude's: it is not retried
                raise err.__cause__ or err from None
            except StreamBroken as err:
                last_status = None
                last_failure, transient = _broken(err)
                if not transient:
                    raise LLMRequestError(f"Claude API rejected the request: {last_failure}") from err
            except TimeoutException:
                last_status = None
                last_failure = f"timed out after {read:.3g}s"
            except TransportError as err:
                last_status = None
                detail = f"{type(err).__name__}: {err}"
                last_failure = f"connection to {self.base_url} failed ({shorten(detail)})"
            else:
                status = last_status = reply.status
                if 200 <= status < 300:
                    completion = parse_completion(status, reply.body, self.model)
                    with self._lock:
                        self.usage.add(completion)
                    return completion
                if status in (401, 403):
                    raise LLMAuthError(
                        f"Claude API rejected the key (HTTP {status}): check ANTHROPIC_API_KEY",
                        status=status,
                    )
                error = reply.error_body()
                last_failure = describe_failure(status, reply.reason, error)
                if not self._retryable(status, reply.headers):
                    if not is_transient(status):
                        raise self._request_error(status, error)
                    raise LLMUnavailableError(
                        f"Claude API unavailable after {plural(attempts, 'attempt')}: {last_failure}",
                        status=status,
                    )
                retry_after = parse_retry_after(reply.headers)

            if attempts > self.max_retries:
                raise LLMUnavailableError(
                    f"Claude API unavailable after {plural(attempts, 'attempt')}: {last_failure}",
                    status=last_status,
                )
            delay = self._delay(attempts, retry_after)
            if time.monotonic() + delay >= deadline:  # the wait alone would spend what is left
                raise self._over_budget(attempts, last_failure, last_status)
            self._sleep(delay)

    # -- internals -----------------------------------------------------------------------------

    def _over_budget(self, attempts: int, last_failure: str, status: int | None) -> LLMUnavailableError:
        tried = f" after {plural(attempts, 'attempt')} ({last_failure})" if attempts else ""
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
        return is_transient(status)

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if retry_after is not None:
            return min(retry_after, self.retry_after_max)
        import random

        backoff = min(self.backoff_max, self.backoff_base * 2.0 ** (attempt - 1))
        return backoff * (1.0 - 0.25 * random.random())

    def _request_error(self, status: int, body: object) -> LLMRequestError:
        kind, message = error_fields(body)
        if message is None and isinstance(body, str) and body.strip():
            message = body
        what = f"HTTP {status} {kind}" if kind else f"HTTP {status}"
        text = f"Claude API rejected the request ({what}): {shorten(message or 'no error message')}"
        if status == 404:
            text += f" (model {self.model})"
        return LLMRequestError(text, status=status)


def _attempt_sink(sink: TextSink, sent: list[bool]) -> Callable[[str], None]:
    """What gets one attempt's pieces: the receiver, told first to start over when an earlier
    attempt sent it some. Its own failure comes back as :class:`_SinkError`."""
    on_text, on_restart = sink
    if sent[0] and on_restart is not None:
        on_restart()
    sent[0] = False

    def hand_on(piece: str) -> None:
        sent[0] = True
        try:
            on_text(piece)
        except Exception as exc:
            raise _SinkError from exc

    return hand_on


def _broken(err: StreamBroken) -> tuple[str, bool]:
    """What broke a stream off, in one line, and whether a retry may help."""
    if err.failure is not None:
        detail = f"{type(err.failure).__name__}: {shorten(str(err.failure))}"
        return f"the stream broke off ({detail})", True
    kind, text = error_fields(err.body)
    label = STATUS_LABELS.get(kind or "", kind or "error")
    detail = f" ({shorten(text)})" if text else ""
    return f"the stream broke off: {label}{detail}", kind in STATUS_LABELS
