"""openml_tools: answer from an OpenML pack's runs with its tools, every number cited.

The router's ``openml`` strategy (the strategy of every OpenML pack). Offline, rules pick the
tools and compose the answer; with Claude, Claude picks them by tool use within ``max_tool_calls``
and writes the answer, which is replaced by the composed one when it states a number no tool
result holds or cites none, and by the rules' answer when Claude called no tool. See
:mod:`wikigr.openml.answer` and docs/openml.md.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikigr.retrieval.stage import QueryState, Stage, register


@dataclass
class OpenMLToolsOptions:
    max_tool_calls: int = 6  # tool calls per question (kg_config.json's max_tool_calls sets it)

    def __post_init__(self) -> None:
        if self.max_tool_calls < 1:
            raise ValueError("max_tool_calls must be a positive integer")


@register
class OpenMLToolsStage(Stage):
    name = "openml_tools"
    summary = "answer from an OpenML pack's runs with its tools (rules, or Claude tool use), cited"
    Options = OpenMLToolsOptions
    pack_kinds = ("openml",)

    def run(self, state: QueryState) -> None:
        from wikigr.openml.answer import answer  # pyarrow.compute: only when an OpenML pack answers

        answer(state, self.options.max_tool_calls)
