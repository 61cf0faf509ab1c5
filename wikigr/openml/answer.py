"""How an OpenML pack answers: tools pick the numbers from the store, and every number of the
answer comes from a tool result and is cited.

Offline the rules of :mod:`wikigr.openml.rules` pick the tools and compose the answer. With
Claude (``ANTHROPIC_API_KEY``), Claude picks the tools by tool use within a budget of tool calls
(``max_tool_calls`` in ``kg_config.json``, default 6) and writes the answer citing ``[n]``, the
n-th tool result; an answer with a number no tool result holds, or that cites none, is replaced
by the one composed from the results, and an answer given without calling any tool (Claude's own
knowledge, not the pack's runs) by the rules' answer (the trace keeps Claude's text and says
why). The ``openml_tools`` stage runs :func:`answer`: the router's strategy for OpenML packs
(:mod:`wikigr.retrieval.stages.router`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from wikigr.openml.compose import Citation, compose, ungrounded_numbers
from wikigr.openml.model import measure_name
from wikigr.openml.names import Vocabulary, load_vocabulary
from wikigr.openml.rules import plan
from wikigr.openml.tool_specs import TOOL_SPECS, ToolResult
from wikigr.openml.tools import OpenMLTools
from wikigr.retrieval.stage import Candidate, Context, QueryState

if TYPE_CHECKING:
    from wikigr.llm import LLM, Usage
    from wikigr.pack.manifest import Manifest

MAX_RESULT_CHARS = 12_000  # of one tool result sent to Claude
OPENML_SITE = "https://www.openml.org"

SYSTEM = """You answer questions about machine-learning experiment results from OpenML, stored in \
the knowledge pack "{name}": {description}

Use the tools to get the numbers: aggregate_measures for comparisons and rankings (it returns \
count, mean, median, p25, p75, min, max per group), graph_query for other questions (read-only \
Cypher), semantic_search to find which datasets, algorithms or families a question means and to \
answer similarity or description questions ("algorithms similar to random forest"). Each \
tool result starts with its number, like [1]. Every number you state must come from a tool \
result, followed by the citation of that result, like [1]. Say what the data does not cover. Be \
brief: a few sentences.
"""


@dataclass
class OpenMLPack:
    """What answering needs of an OpenML pack: its tools and the names a question may mention."""

    tools: OpenMLTools
    vocab: Vocabulary
    site: str  # where runs and entities with OpenML ids are looked at

    def url(self, kind: str, record: dict[str, Any]) -> str:
        """Where a cited run or entity can be looked at (:func:`openml_url`)."""
        return openml_url(self.site, kind, record)


def openml_url(site: str, kind: str, record: dict[str, Any]) -> str:
    """Where a run or entity of a pack whose OpenML server is ``site`` can be looked at: its
    public OpenML page where the data has its id (a run ``/r/ID``; a run of an export, its task
    ``/t/ID`` or else its dataset ``/d/ID``; ``/f/``, ``/d/``, ``/t/`` for flows, datasets and
    tasks), else the export file's name and line — never a path of the machine that built the
    pack."""
    if kind == "Run":
        if record.get("openml_run_id") is not None:
            return f"{site}/r/{record['openml_run_id']}"
        for key, page in (("openml_task_id", "t"), ("openml_data_id", "d")):
            if record.get(key) is not None:
                return f"{site}/{page}/{record[key]}"
        file, _, line = str(record.get("source", "")).rpartition(":")
        name = Path(file).name
        return f"{name}#line={line}" if name and line.isdigit() else ""
    prefix = {"Dataset": ("data:", "d"), "Task": ("task:", "t"), "Algorithm": ("flow:", "f")}.get(kind)
    ident = str(record.get("id", ""))
    if prefix and ident.startswith(prefix[0]) and ident[len(prefix[0]) :].isdigit():
        return f"{site}/{prefix[1]}/{ident[len(prefix[0]) :]}"
    return ""


def pack_measure(manifest: Manifest) -> str:
    """The pack's primary measure (its build's ``--measure``; accuracy when it has none)."""
    record = manifest.openml
    if record is not None and record.measure:
        try:
            return measure_name(record.measure)
        except ValueError:
            pass
    return "accuracy"


def pack_site(manifest: Manifest) -> str:
    """The OpenML server a pack's runs and entities are looked at on."""
    record = manifest.openml
    return record.api_url.rstrip("/") if record is not None and record.api_url else OPENML_SITE


def openml_pack(ctx: Context) -> OpenMLPack:
    """The OpenML side of the pack the agent opened, loaded once per agent."""
    loaded = ctx.cache.get("openml")
    if loaded is None:
        store = ctx.store.one_store()  # an OpenML pack is one store (never in shards)
        manifest = ctx.pack.manifest
        vocab = load_vocabulary(store.rows, pack_measure(manifest))
        loaded = OpenMLPack(OpenMLTools(store, lambda: ctx.embedder), vocab, pack_site(manifest))
        ctx.cache["openml"] = loaded
    assert isinstance(loaded, OpenMLPack)
    return loaded


def answer(state: QueryState, max_tool_calls: int) -> None:
    """Answer ``state.question`` from the pack's runs: the answer, its citations as the sources
    (``state.top_k`` widened to all of them), the facts, and the tool calls in the trace."""
    om = openml_pack(state.ctx)
    llm = state.ctx.llm
    trace = state.trace
    trace["max_tool_calls"] = max_tool_calls
    results: list[ToolResult]
    if llm is None:
        results, text, citations, facts = _rules(state, om, max_tool_calls)
        mode, why = "rules", "offline: the rules picked the tools and composed the answer"
    else:
        from wikigr.llm import LLMError, Usage

        if state.usage is None:
            state.usage = Usage()
        try:
            results, text, citations, facts, mode = _claude(state, om, llm, max_tool_calls, state.usage)
            why = "Claude picked the tools and wrote the answer"
            if not results:  # an answer from Claude's own knowledge, not from the pack's runs
                trace["claude_answer"] = text
                trace["claude"] = "Claude answered without calling a tool: replaced by the rules' answer"
                results, text, citations, facts = _rules(state, om, max_tool_calls)
                mode, why = "rules (Claude called no tool)", trace["claude"]
        except LLMError as exc:
            if not state.fallback:
                raise
            results, text, citations, facts = _rules(state, om, max_tool_calls)
            mode, why = "rules (Claude failed)", f"Claude failed: {exc}"
            state.note("openml_tools", fallback="the rules answered")
    trace["tool_calls"] = [r.to_json() for r in results]
    trace["grounding"] = {"ungrounded_numbers": ungrounded_numbers(text, results)}
    empty = not citations or all(r.error is not None for r in results)
    state.answer, state.answer_mode, state.facts = text, mode, facts
    state.confidence, state.low_confidence = (0.0, True) if empty else (1.0, False)
    state.candidates = [
        Candidate(f"{c.origin}:{n}", c.text, "", c.title, c.url, "", c.section, "", c.score, origin=c.origin)
        for n, c in enumerate(citations, 1)
    ]
    state.top_k = max(state.top_k, len(citations))  # every [n] of the answer is a source
    state.note("openml_tools", why=why, tools=[r.tool for r in results])


def _rules(
    state: QueryState, om: OpenMLPack, max_tool_calls: int
) -> tuple[list[ToolResult], str, list[Citation], list[str]]:
    chosen = plan(state.question, om.vocab, top_k=state.top_k)
    state.trace["router"] = "rules"
    state.trace["plan"] = chosen.to_json()
    results = [om.tools.call(name, arguments) for name, arguments in chosen.calls[:max_tool_calls]]
    text, citations, facts = compose(state.question, results, om.url)
    return results, "\n".join([*chosen.notes, text]), citations, facts


def _claude(
    state: QueryState, om: OpenMLPack, llm: LLM, max_tool_calls: int, usage: Usage
) -> tuple[list[ToolResult], str, list[Citation], list[str], str]:
    from wikigr.llm import tool_result

    question, trace, pack = state.question, state.trace, state.ctx.pack
    trace["router"] = "claude"
    trace["model"] = llm.model
    system = SYSTEM.format(name=pack.name, description=pack.manifest.description)
    messages: list[dict[str, Any]] = [{"role": "user", "content": question}]
    results: list[ToolResult] = []
    text = ""
    finished = False
    for _ in range(max_tool_calls + 2):
        completion = llm.complete(system, messages, max_tokens=1024, tools=TOOL_SPECS)
        usage.add(completion)
        if not completion.tool_calls:
            text = completion.text.strip()
            finished = True
            break
        messages.append(completion.as_message())
        blocks = []
        for call in completion.tool_calls:
            if len(results) >= max_tool_calls:
                blocks.append(
                    tool_result(
                        call.id,
                        f"refused: the budget of {max_tool_calls} tool calls is spent; answer now "
                        "from the results you have",
                        is_error=True,
                    )
                )
                continue
            result = om.tools.call(call.name, call.input)
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
    if not results:  # nothing from the pack to ground or cite: answer() replaces it
        return results, text, [], [], "claude"
    citations = [_call_citation(i + 1, r, om.url) for i, r in enumerate(results)]
    # A citation that matches no tool result is removed: a source is never invented.
    valid = {str(i + 1) for i, r in enumerate(results) if r.error is None}
    removed = sorted({int(n) for n in re.findall(r"\[(\d{1,3})\]", text) if n not in valid})
    text = re.sub(r"\[(\d{1,3})\]", lambda m: m.group(0) if m.group(1) in valid else "", text)
    trace["removed_citations"] = removed
    _, _, facts = compose(question, results, om.url)
    if not finished or not text:
        trace["claude"] = "no final answer within the tool-call budget: the answer is composed"
        text, citations, facts = compose(question, results, om.url)
        return results, text, citations, facts, "claude tools, composed answer"
    if results and not re.search(r"\[\d{1,3}\]", text):
        trace["claude_answer"] = text
        trace["claude"] = "the answer cited no tool result: replaced by the answer composed from them"
        text, citations, facts = compose(question, results, om.url)
        return results, text, citations, facts, "claude tools, composed answer"
    missing = ungrounded_numbers(text, results)
    if missing:
        trace["claude_answer"] = text
        trace["claude"] = f"the answer had numbers no tool result holds ({', '.join(missing[:5])}): replaced"
        text, citations, facts = compose(question, results, om.url)
        return results, text, citations, facts, "claude tools, composed answer"
    return results, text, citations, facts, "claude"


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
