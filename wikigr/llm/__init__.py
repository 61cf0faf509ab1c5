"""The LLM layer: Claude behind one small interface, with retries, typed errors and cost estimates.

``AnthropicLLM`` talks to the Messages API with wikigr's own small client on the standard library
(no ``anthropic`` SDK: importing it took seconds, on every question of a skill), with retry
behaviour of its own and testable: exponential backoff on 429, 408, 5xx (529 overloaded included),
connection failures and timeouts, honouring ``retry-after`` up to a cap. Every failure surfaces as
an :class:`LLMError` (a :class:`~wikigr.errors.WikigrError`, exit code 1) with a one-line message.

Configuration comes from the environment (:meth:`AnthropicLLM.from_env`): ``ANTHROPIC_API_KEY``
(none means offline: ``from_env`` returns None), ``ANTHROPIC_BASE_URL`` and ``WIKIGR_MODEL``.

Streaming: inside :meth:`AnthropicLLM.streaming`, the calls a thread makes stream the answer
(server-sent events from the API): a callback gets each piece of text as it arrives, and the call
still returns the whole :class:`Completion`, after the same retries and checks.

Sampling: ``temperature`` defaults to None, which sends no temperature at all. Current models
(Sonnet 5 and later, Opus 4.7 and later) answer a non-default temperature with HTTP 400; a number,
when given, is sent as the body's ``temperature``.

The package never prints; it only raises. Its parts: :mod:`.types` (the protocol and results),
:mod:`.errors`, :mod:`.prices`, :mod:`.config` (defaults and environment), :mod:`.replies` (reading
the API's failures and replies), :mod:`.wire` (the HTTP client, bounded by the answer's time
budget) and :mod:`.claude`.
"""

from __future__ import annotations

from wikigr.llm.claude import AnthropicLLM
from wikigr.llm.config import DEFAULT_MODEL, DEFAULT_TIMEOUT, llm_available, resolve_model
from wikigr.llm.errors import LLMAuthError, LLMError, LLMRequestError, LLMResponseError, LLMUnavailableError
from wikigr.llm.prices import Price, estimate_cost, price_for
from wikigr.llm.types import LLM, Completion, ToolCall, Usage, tool_result

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
