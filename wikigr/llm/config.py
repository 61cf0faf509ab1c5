"""Claude's configuration: the defaults, and what the environment says (``ANTHROPIC_API_KEY``,
``ANTHROPIC_BASE_URL``, ``WIKIGR_MODEL``, ``WIKIGR_TIMEOUT``)."""

from __future__ import annotations

import os

from wikigr.errors import seconds_setting

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_CONNECT_TIMEOUT",
    "DEFAULT_MAX_RETRIES",
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT",
    "ENV_API_KEY",
    "ENV_BASE_URL",
    "ENV_MODEL",
    "ENV_TIMEOUT",
    "budget_from_env",
    "env",
    "llm_available",
    "resolve_model",
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


def env(name: str) -> str | None:
    value = os.environ.get(name, "").strip()
    return value or None


def llm_available() -> bool:
    """Whether a Claude API key is configured (``ANTHROPIC_API_KEY``); False means offline."""
    return env(ENV_API_KEY) is not None


def resolve_model(model: str | None = None) -> str:
    """The model to use: the argument, else ``WIKIGR_MODEL``, else :data:`DEFAULT_MODEL`."""
    if model is not None and model.strip():
        return model.strip()
    return env(ENV_MODEL) or DEFAULT_MODEL


def budget_from_env() -> float:
    """The time budget of an answer from ``WIKIGR_TIMEOUT`` (seconds), else :data:`DEFAULT_BUDGET`."""
    raw = env(ENV_TIMEOUT)
    if raw is None:
        return DEFAULT_BUDGET
    return seconds_setting(ENV_TIMEOUT, raw)
