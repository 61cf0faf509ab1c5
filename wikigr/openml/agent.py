"""The agent of OpenML packs: a router picks tools, the tools answer from the store, and every
number of the answer comes from a tool result and is cited.

Offline the rules of :mod:`wikigr.openml.router` pick the tools and compose the answer. With
Claude (``ANTHROPIC_API_KEY``), Claude picks the tools by tool use within a budget of tool calls
(``max_tool_calls`` in ``kg_config.json``, default 6) and writes the answer citing ``[n]``, the
n-th tool result; an answer with a number no tool result holds is replaced by the composed one
(the trace says so). ``wikigr query`` reaches this through :class:`wikigr.agent.KnowledgeGraphAgent`.
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikigr.agent import AgentResult, Source
from wikigr.embed import get_embedder
from wikigr.errors import InvalidPackError, UsageError
from wikigr.openml.model import measure_name
from wikigr.openml.router import Citation, Vocabulary, compose, plan, ungrounded_numbers
from wikigr.openml.tools import TOOL_SPECS, OpenMLTools, ToolResult
from wikigr.pack.pack import Pack

if TYPE_CHECKING:
    from wikigr.llm import LLM, Usage

DEFAULT_MAX_TOOL_CALLS = 6
MAX_RESULT_CHARS = 12_000  # of one tool result sent to Claude
CONFIG_KEYS = {"max_tool_calls", "model", "top_k", "profile", "stages"}
OPENML_SITE = "https://www.openml.org"

SYSTEM = """You answer questions about machine-learning experiment results from OpenML, stored in \
the knowledge pack "{name}": {description}

Use the tools to get the numbers: aggregate_measures for comparisons and rankings (it returns \
count, mean, median, p25, p75, min, max per group), graph_query for other questions (read-only \
Cypher), semantic_search to find which datasets, algorithms or families a question means. Each \
tool result starts with its number, like [1]. Every number you state must come from a tool \
result, followed by the citation of that result, like [1]. Say what the data does not cover. Be \
brief: a few sentences.
"""


class OpenMLAgent:
    """An OpenML pack opened for questions."""

    def __init__(
        self,
        pack: Pack,
        llm: LLM | None = None,
        top_k: int = 5,
        fallback: bool = False,
        max_tool_calls: int | None = None,
    ) -> None:
        if pack.manifest.source_kind != "openml":
            raise UsageError(f"pack {pack.name} is not an OpenML pack")
        config = pack.config()
        unknown = sorted(set(config) - CONFIG_KEYS)
        if unknown:
            raise InvalidPackError(f"{pack.path / 'kg_config.json'}: {unknown[0]}: unknown field")
        budget = max_tool_calls if max_tool_calls is not None else config.get("max_tool_calls", 6)
        if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
            raise InvalidPackError(
                f"{pack.path / 'kg_config.json'}: max_tool_calls must be a positive integer"
            )
        self.pack = pack
        self.llm = llm
        self.top_k = top_k
        self.fallback = fallback
        self.max_tool_calls = budget
        self.store = pack.open_store()
        self.tools = OpenMLTools(self.store, lambda: get_embedder(pack.manifest.embedder.name))
        self.vocab = self._vocabulary()
        record = pack.manifest.openml
        self.site = OPENML_SITE
        if record is not None and record.api_url:
            self.site = record.api_url.rstrip("/")
        self._files = {Path(s.url).name: s.url for s in pack.manifest.sources if s.url.startswith("file:")}

    def close(self) -> None:
        self.store.close()

    # -- helpers -------------------------------------------------------------------------------

    def _vocabulary(self) -> Vocabulary:
        rows = self.store.rows
        measure = "accuracy"
        record = self.pack.manifest.openml
        if record is not None and record.measure:
            try:
                measure = measure_name(record.measure)
            except ValueError:
                measure = "accuracy"
        return Vocabulary(
            datasets=[r[0] for r in rows("MATCH (d:Dataset) RETURN d.name")],
            algorithms=[r[0] for r in rows("MATCH (a:Algorithm) RETURN a.name")],
            families=[r[0] for r in rows("MATCH (f:AlgorithmFamily) RETURN f.name")],
            years=[int(r[0]) for r in rows("MATCH (d:Date) RETURN DISTINCT d.year")],
            measure=measure,
        )

    def url(self, kind: str, record: dict[str, Any]) -> str:
        """Where a cited run or entity can be looked at."""
        if kind == "Run":
            if record.get("openml_run_id") is not None:
                return f"{self.site}/r/{record['openml_run_id']}"
            file, _, line = str(record.get("source", "")).rpartition(":")
            base = self._files.get(file)
            return f"{base}#line={line}" if base and line.isdigit() else ""
        prefix = {"Dataset": ("data:", "d"), "Task": ("task:", "t"), "Algorithm": ("flow:", "f")}.get(kind)
        ident = str(record.get("id", ""))
        if prefix and ident.startswith(prefix[0]) and ident[len(prefix[0]) :].isdigit():
            return f"{self.site}/{prefix[1]}/{ident[len(prefix[0]) :]}"
        return ""

    # -- answering -----------------------------------------------------------------------------

    def query(self, question: str, top_k: int | None = None) -> AgentResult:
        question = question.strip()
        if not question:
            raise UsageError("the question is empty")
        k = top_k or self.top_k
        start = time.perf_counter()
        trace: dict[str, Any] = {"profile": "openml", "max_tool_calls": self.max_tool_calls}
        usage: Usage | None = None
        results: list[ToolResult]
        why = ""
        if self.llm is None:
            results, answer, citations, facts = self._rules(question, k, trace)
            mode = "rules"
            why = "offline: the rules picked the tools and composed the answer"
        else:
            from wikigr.llm import LLMError, Usage

            usage = Usage()
            try:
                results, answer, citations, facts, mode = self._claude(question, k, trace, usage)
                why = "Claude picked the tools and wrote the answer"
            except LLMError as exc:
                if not self.fallback:
                    raise
                why = f"Claude failed ({exc}); the rules answered"
                results, answer, citations, facts = self._rules(question, k, trace)
                mode = "rules (Claude failed)"
        total_ms = (time.perf_counter() - start) * 1000
        missing = ungrounded_numbers(answer, results)
        trace.update(
            {
                "answer_mode": mode,
                "tool_calls": [r.to_json() for r in results],
                "grounding": {"ungrounded_numbers": missing},
                "stages": [_stage(r) for r in results]
                + [
                    {
                        "stage": "synthesize",
                        "ms": 0.0,
                        "in": len(results),
                        "out": len(citations),
                        "top_scores": [],
                        "detail": {"why": why},
                    }
                ],
                "total_ms": round(total_ms, 2),
            }
        )
        if usage is not None:
            trace["usage"] = usage.to_json()
        empty = not citations or all(r.error is not None for r in results)
        return AgentResult(
            question=question,
            answer=answer,
            sources=[Source(c.title, c.section, c.url, c.score, c.text, c.origin) for c in citations],
            profile="openml",
            confidence=0.0 if empty else 1.0,
            low_confidence=empty,
            facts=facts,
            trace=trace,
        )

    def _rules(
        self, question: str, k: int, trace: dict[str, Any]
    ) -> tuple[list[ToolResult], str, list[Citation], list[str]]:
        chosen = plan(question, self.vocab, top_k=k)
        trace["router"] = "rules"
        trace["plan"] = chosen.to_json()
        results = [
            self.tools.call(name, arguments) for name, arguments in chosen.calls[: self.max_tool_calls]
        ]
        answer, citations, facts = compose(question, results, self.url)
        return results, answer, citations, facts

    def _claude(
        self, question: str, k: int, trace: dict[str, Any], usage: Usage
    ) -> tuple[list[ToolResult], str, list[Citation], list[str], str]:
        from wikigr.llm import tool_result

        assert self.llm is not None
        trace["router"] = "claude"
        trace["model"] = self.llm.model
        system = SYSTEM.format(name=self.pack.name, description=self.pack.manifest.description)
        messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
        results: list[ToolResult] = []
        text = ""
        finished = False
        for _ in range(self.max_tool_calls + 2):
            completion = self.llm.complete(system, messages, max_tokens=1024, tools=TOOL_SPECS)
            usage.add(completion)
            if not completion.tool_calls:
                text = completion.text.strip()
                finished = True
                break
            messages.append(completion.as_message())
            blocks = []
            for call in completion.tool_calls:
                if len(results) >= self.max_tool_calls:
                    blocks.append(
                        tool_result(
                            call.id,
                            f"refused: the budget of {self.max_tool_calls} tool calls is spent; answer now "
                            "from the results you have",
                            is_error=True,
                        )
                    )
                    continue
                result = self.tools.call(call.name, call.input)
                results.append(result)
                n = len(results)
                if result.error is not None:
                    blocks.append(tool_result(call.id, f"[{n}] error: {result.error}", is_error=True))
                else:
                    body = json.dumps(result.output, default=str)
                    if len(body) > MAX_RESULT_CHARS:
                        body = body[:MAX_RESULT_CHARS] + " ...(truncated)"
                    blocks.append(tool_result(call.id, f"[{n}] {body}"))
            messages.append({"role": "user", "content": blocks})
        citations = [_call_citation(i + 1, r, self.url) for i, r in enumerate(results)]
        # A citation that matches no tool result is removed: a source is never invented.
        valid = {str(i + 1) for i, r in enumerate(results) if r.error is None}
        removed = sorted({int(n) for n in re.findall(r"\[(\d{1,3})\]", text) if n not in valid})
        text = re.sub(r"\[(\d{1,3})\]", lambda m: m.group(0) if m.group(1) in valid else "", text)
        trace["removed_citations"] = removed
        _, _, facts = compose(question, results, self.url)
        if not finished or not text:
            trace["claude"] = "no final answer within the tool-call budget: the answer is composed"
            answer, citations, facts = compose(question, results, self.url)
            return results, answer, citations, facts, "claude tools, composed answer"
        missing = ungrounded_numbers(text, results)
        if missing:
            trace["claude_answer"] = text
            trace["claude"] = (
                f"the answer had numbers no tool result holds ({', '.join(missing[:5])}): replaced"
            )
            answer, citations, facts = compose(question, results, self.url)
            return results, answer, citations, facts, "claude tools, composed answer"
        return results, text, citations, facts, "claude"


def _stage(result: ToolResult) -> dict[str, Any]:
    out = result.output
    count = len(out.get("groups") or out.get("rows") or out.get("hits") or [])
    scores = [float(h["score"]) for h in out.get("hits", [])[:5]]
    detail: dict[str, Any] = {"input": result.input}
    if result.error is not None:
        detail["error"] = result.error
    return {
        "stage": result.tool,
        "ms": round(result.ms, 2),
        "in": 0,
        "out": count,
        "top_scores": scores,
        "detail": detail,
    }


def _call_citation(n: int, result: ToolResult, url: Any) -> Citation:
    """A tool call as the source ``[n]`` of Claude's answer."""
    out = result.output
    link = ""
    if result.tool == "aggregate_measures" and out.get("groups"):
        link = url("Run", out["groups"][0].get("best_run") or {})
    elif result.tool == "semantic_search" and out.get("hits"):
        hit = out["hits"][0]
        link = url(hit["table"], hit)
    summary = json.dumps(result.input, default=str)
    return Citation(
        title=f"{result.tool} [{n}]",
        section=summary[:300],
        url=link,
        score=1.0 if result.error is None else 0.0,
        text=(result.error or json.dumps(out, default=str))[:4000],
        origin=result.tool,
    )
