"""What the pipeline sees of a language model: the :class:`LLM` protocol, what one call returns
(:class:`Completion`, its :class:`ToolCall` blocks), the ``tool_result`` block that answers a tool
call, and the running :class:`Usage` totals."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["LLM", "Completion", "ToolCall", "Usage", "tool_result"]


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
