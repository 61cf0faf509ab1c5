"""Configuration from the environment, model precedence, prices, and the guard against the real API."""

from __future__ import annotations

import os

import pytest

from tests.fakeclaude import UNROUTABLE_BASE_URL, FakeClaude
from wikigr.llm import (
    DEFAULT_MODEL,
    AnthropicLLM,
    LLMAuthError,
    LLMUnavailableError,
    Price,
    Usage,
    estimate_cost,
    llm_available,
    price_for,
    resolve_model,
)

QUESTION = [{"role": "user", "content": "Hello?"}]


def test_the_guard_removed_the_key_and_pointed_the_base_url_nowhere() -> None:
    assert "ANTHROPIC_API_KEY" not in os.environ
    assert "ANTHROPIC_AUTH_TOKEN" not in os.environ
    assert os.environ["ANTHROPIC_BASE_URL"] == UNROUTABLE_BASE_URL


def test_offline_without_a_key() -> None:
    assert llm_available() is False
    assert AnthropicLLM.from_env() is None
    assert AnthropicLLM.from_env("claude-haiku-5-5") is None


def test_a_blank_key_is_no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "   ")
    assert llm_available() is False
    assert AnthropicLLM.from_env() is None


def test_an_empty_key_is_refused_by_the_constructor() -> None:
    with pytest.raises(LLMAuthError, match="set ANTHROPIC_API_KEY"):
        AnthropicLLM("")


def test_a_key_without_the_fake_cannot_reach_anything(monkeypatch: pytest.MonkeyPatch) -> None:
    """What happens to a test that sets a key but forgets the fake: it fails, fast, locally."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-real-looking")
    assert llm_available() is True
    llm = AnthropicLLM.from_env(max_retries=0)
    assert llm is not None
    with llm, pytest.raises(LLMUnavailableError) as caught:
        llm.complete("", QUESTION)
    assert llm.base_url == UNROUTABLE_BASE_URL
    assert str(caught.value).startswith(
        f"Claude API unavailable after 1 attempt: connection to {UNROUTABLE_BASE_URL} failed ("
    )


def test_from_env_talks_to_the_fake(claude_env: FakeClaude) -> None:
    claude_env.script("hello from the fake")
    llm = AnthropicLLM.from_env()
    assert llm is not None
    with llm:
        assert llm.base_url == claude_env.base_url
        assert llm.model == DEFAULT_MODEL
        assert llm.complete("", QUESTION).text == "hello from the fake"
    assert claude_env.last.model == DEFAULT_MODEL
    assert "sk-ant" not in repr(llm)


def test_model_precedence(monkeypatch: pytest.MonkeyPatch, claude_env: FakeClaude) -> None:
    assert resolve_model() == DEFAULT_MODEL
    assert resolve_model("claude-opus-5-5") == "claude-opus-5-5"
    monkeypatch.setenv("WIKIGR_MODEL", " claude-haiku-5-5 ")
    assert resolve_model() == "claude-haiku-5-5"
    assert resolve_model("claude-opus-5-5") == "claude-opus-5-5"
    assert resolve_model("  ") == "claude-haiku-5-5"

    from_env = AnthropicLLM.from_env()
    from_arg = AnthropicLLM.from_env("claude-opus-5-5")
    assert from_env is not None and from_arg is not None
    with from_env, from_arg:
        assert from_env.model == "claude-haiku-5-5"
        assert from_arg.model == "claude-opus-5-5"
        claude_env.script("a", "b")
        from_env.complete("", QUESTION)
        assert claude_env.last.model == "claude-haiku-5-5"
        from_arg.complete("", QUESTION)
        assert claude_env.last.model == "claude-opus-5-5"

    monkeypatch.setenv("WIKIGR_MODEL", "")
    assert resolve_model() == DEFAULT_MODEL


@pytest.mark.parametrize(
    ("model", "price"),
    [
        ("claude-sonnet-5-5", Price(2.0, 10.0)),
        ("claude-sonnet-5", Price(2.0, 10.0)),
        ("claude-sonnet-4-6", Price(3.0, 15.0)),
        ("claude-opus-5-5", Price(4.0, 20.0)),
        ("claude-opus-4-7", Price(5.0, 25.0)),
        ("claude-opus-4-1-20250805", Price(15.0, 75.0)),
        ("claude-fable-5-2", Price(8.0, 40.0)),
        ("claude-fable-5-1", Price(10.0, 50.0)),
        ("claude-haiku-4-5-20251001", Price(1.0, 5.0)),
        ("claude-3-5-haiku-20241022", Price(0.8, 4.0)),
        # not in the table: by family, else Sonnet's
        ("claude-opus-9", Price(15.0, 75.0)),
        ("claude-sonnet-9", Price(3.0, 15.0)),
        ("claude-haiku-9", Price(1.0, 5.0)),
        ("some-other-model", Price(3.0, 15.0)),
    ],
)
def test_prices(model: str, price: Price) -> None:
    assert price_for(model) == price


def test_cost_estimates() -> None:
    assert estimate_cost("claude-sonnet-5-5", 1_000_000, 0) == pytest.approx(2.0)
    assert estimate_cost("claude-sonnet-5-5", 0, 1_000_000) == pytest.approx(10.0)
    assert estimate_cost("claude-sonnet-5-5", 1000, 100, cache_write_tokens=1000, cache_read_tokens=1000) == (
        pytest.approx((1000 * 2 + 1000 * 2 * 1.25 + 1000 * 2 * 0.1 + 100 * 10) / 1e6)
    )
    # Haiku 5.5 is priced by prompt size
    assert estimate_cost("claude-haiku-5-5", 100_000, 1000) == pytest.approx(
        (100_000 * 0.1 + 1000 * 0.5) / 1e6
    )
    assert estimate_cost("claude-haiku-5-5", 100_001, 1000) == pytest.approx(
        (100_001 * 0.5 + 1000 * 2.5) / 1e6
    )


def test_usage_add() -> None:
    from wikigr.llm import Completion

    usage = Usage()
    usage.add(Completion(text="a", input_tokens=10, output_tokens=2, model="m", cost_usd=0.5))
    usage.add(Completion(text="b", input_tokens=5, output_tokens=3, model="m", cost_usd=0.25))
    assert (usage.calls, usage.input_tokens, usage.output_tokens) == (2, 15, 5)
    assert usage.cost_usd == pytest.approx(0.75)
