"""Fixtures for the LLM tests: the fake Claude server and a guard against the real API.

The guard belongs in the root ``tests/conftest.py`` too, so that no test anywhere can reach the
real Claude API. To move it there, add to that file::

    from tests.fakeclaude import block_real_claude, claude_env, fake_claude, fake_llm  # noqa: F401

    @pytest.fixture(autouse=True)
    def no_real_claude(monkeypatch: pytest.MonkeyPatch) -> None:
        block_real_claude(monkeypatch)

and delete the two definitions below (the imported fixtures then serve every test directory).
"""

from __future__ import annotations

import pytest

from tests.fakeclaude import block_real_claude, claude_env, fake_claude, fake_llm

__all__ = ["claude_env", "fake_claude", "fake_llm", "no_real_claude"]


@pytest.fixture(autouse=True)
def no_real_claude(monkeypatch: pytest.MonkeyPatch) -> None:
    """No key in the environment and ANTHROPIC_BASE_URL at a dead loopback port, unless the test
    points at the fake (``claude_env`` sets both to the fake, after this ran)."""
    block_real_claude(monkeypatch)
