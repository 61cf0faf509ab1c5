"""The answer the OpenML rules compose from tool results, every number cited, and the check that
every number of an answer (Claude's too) comes from a tool result.

:func:`compose` writes the answer from the results: each number comes from a tool result and is
followed by the citation ``[n]`` of its source. :func:`ungrounded_numbers` checks that of any
answer.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from wikigr.openml.tool_specs import ToolResult

# -- composing the answer -------------------------------------------------------------------------


def fmt(value: Any, measure: str = "") -> str:
    """A number as the answer prints it (3 decimals for measures, thousands for counts)."""
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if measure == "runtime_s" or abs(value) >= 100:
            return f"{value:,.1f}"
        return f"{value:.3f}"
    return str(value)


@dataclass
class Citation:
    """A source of the answer: what a ``[n]`` points to."""

    title: str
    section: str
    url: str
    score: float
    text: str
    origin: str


def describe_filters(filters: dict[str, Any]) -> str:
    """Filters as the answer names them ("Task.type = Supervised Classification")."""
    if not filters:
        return "all runs"
    parts = []
    for name, value in filters.items():
        if isinstance(value, dict):
            value = " and ".join(f"{k} {v}" for k, v in value.items())
        elif isinstance(value, list):
            value = " or ".join(str(v) for v in value)
        parts.append(f"{name} = {value}")
    return ", ".join(parts)


def compose(
    question: str, results: list[ToolResult], urls: Any = None
) -> tuple[str, list[Citation], list[str]]:
    """The answer, its citations and its facts from tool results; numbers only from the results.

    ``urls(kind, record) -> str`` maps a run or an entity to a URL (see the agent)."""
    link = urls or (lambda kind, record: "")
    lines: list[str] = []
    citations: list[Citation] = []
    facts: list[str] = []

    def cite(c: Citation) -> str:
        citations.append(c)
        return f"[{len(citations)}]"

    for result in results:
        if result.error is not None:
            lines.append(f"The {result.tool} call failed: {result.error}")
            continue
        out = result.output
        if result.tool == "aggregate_measures":
            groups = out["groups"]
            measure, statistic = out["measure"], out["statistic"]
            attr = out["group_by"][0] if len(out["group_by"]) == 1 else " × ".join(out["group_by"])
            where = describe_filters(out["filters"])
            if not groups:
                article = "an" if measure[0] in "aeiou" else "a"
                lines.append(
                    f"No run has {article} {measure} value for {where}, so there is nothing to rank."
                )
                continue
            low = (out["better"] == "lower" and statistic != "count") != (out.get("order") == "worst")
            better = "lowest" if low else "highest"
            first = groups[0]
            name = " / ".join(str(v) for v in first["group"].values())
            mark = cite(_group_citation(first, out, link))
            lines.append(
                f"For {where}, the {attr} with the {better} {statistic} {measure} is {name}: "
                f"{statistic} {fmt(first[statistic], measure)} over {_count(first['count'], 'run')} on "
                f"{_count(first['datasets'], 'dataset')} ("
                + ", ".join(
                    f"{s} {fmt(first[s], measure)}"
                    for s in ("median", "mean", "p25", "p75")
                    if s != statistic
                )
                + f") {mark}."
            )
            facts.append(
                f"{name}: {statistic} {measure} {fmt(first[statistic], measure)}, {first['count']} runs"
            )
            rest = []
            for g in groups[1:]:
                label = " / ".join(str(v) for v in g["group"].values())
                m = cite(_group_citation(g, out, link))
                rest.append(f"{label} {fmt(g[statistic], measure)} ({_count(g['count'], 'run')}) {m}")
                facts.append(
                    f"{label}: {statistic} {measure} {fmt(g[statistic], measure)}, {g['count']} runs"
                )
            if rest:
                lines.append("Next: " + "; ".join(rest) + ".")
            best_run = first.get("best_run")
            if best_run:
                lines.append(
                    f"The best single run of {name} is {best_run['id']} with {measure} "
                    f"{fmt(best_run[measure], measure)} {mark}."
                )
            if out["group_count"] > len(groups):
                lines.append(f"({fmt(out['group_count'])} groups in all; {fmt(out['runs'])} runs.)")
        elif result.tool == "graph_query":
            rows, columns = out["rows"], out["columns"]
            query = result.input.get("query", "")
            mark = cite(
                Citation(
                    title="graph_query",
                    section=query[:200],
                    url="",
                    score=1.0,
                    text=json.dumps(out, default=str)[:2000],
                    origin="graph_query",
                )
            )
            if not rows:
                lines.append(f"The query returned no rows {mark}.")
            elif columns == ["count"] and len(rows) == 1:
                lines.append(f"Count: {fmt(rows[0][0])} {mark}.")
                facts.append(f"count {rows[0][0]}")
            else:
                shown = [", ".join(_cell(v) for v in row) for row in rows[:10]]
                lines.append(
                    f"{len(rows)} row(s) {mark}: " + "; ".join(shown) + ("; ..." if len(rows) > 10 else "")
                )
        elif result.tool == "semantic_search":
            hits = out["hits"]
            if not hits:
                lines.append("Nothing in the pack is described like that.")
                continue
            shown = []
            for hit in hits:
                mark = cite(
                    Citation(
                        title=f"{hit['table']} {hit['name']}",
                        section=hit["table"],
                        url=link(hit["table"], hit),
                        score=float(hit["score"]),
                        text=hit["description"] or "",
                        origin="semantic_search",
                    )
                )
                name, description = str(hit["name"] or ""), str(hit["description"] or "")
                label = description if name in description else f"{name}: {description}"
                shown.append(f"{label.rstrip(': ') or hit['id']} {mark}")
            lines.append("Closest in the pack: " + "; ".join(shown) + ".")
    return "\n".join(lines), citations, facts


def _count(n: int, noun: str) -> str:
    return f"{fmt(n)} {noun}" + ("" if n == 1 else "s")


def _cell(value: Any) -> str:
    if isinstance(value, dict):
        keep = {k: v for k, v in value.items() if k not in ("label", "description", "key")}
        return "{" + ", ".join(f"{k}: {_cell(v)}" for k, v in keep.items() if v is not None) + "}"
    if isinstance(value, float | int) and not isinstance(value, bool):
        return fmt(value)
    return str(value)


def _group_citation(group: dict[str, Any], out: dict[str, Any], link: Any) -> Citation:
    label = " / ".join(str(v) for v in group["group"].values())
    best = group.get("best_run") or {}
    return Citation(
        title=f"{' × '.join(out['group_by'])} = {label}",
        section=(
            f"aggregate_measures: {out['statistic']} {out['measure']} over {group['count']} runs "
            f"({describe_filters(out['filters'])})"
        ),
        url=link("Run", best) if best else "",
        score=float(group[out["statistic"]]),
        text=json.dumps(group, default=str),
        origin="aggregate_measures",
    )


# -- grounding ------------------------------------------------------------------------------------

_NUMBER = re.compile(r"(?<![\w:/.\-])-?\d[\d,]*(?:\.\d+)?(?![\w:/\-]|\.\d)(%?)")


def _numbers_in(value: Any, out: list[float]) -> None:
    if isinstance(value, bool) or value is None:
        return
    if isinstance(value, int | float):
        out.append(float(value))
    elif isinstance(value, dict):
        for v in value.values():
            _numbers_in(v, out)
    elif isinstance(value, list | tuple):
        for v in value:
            _numbers_in(v, out)
    elif isinstance(value, str):
        out.extend(float(m.group(0).replace(",", "")) for m in re.finditer(r"-?\d+(?:\.\d+)?", value))


def ungrounded_numbers(answer: str, results: list[ToolResult]) -> list[str]:
    """The numbers of ``answer`` that no tool result holds (rounding allowed; ``[n]`` ignored)."""
    known: list[float] = []
    for result in results:
        _numbers_in(result.output, known)
        _numbers_in(result.input, known)
    text = re.sub(r"\[\d{1,3}\]", " ", answer)
    missing = []
    for match in _NUMBER.finditer(text):
        token = match.group(0)
        raw = token.rstrip("%").replace(",", "")
        try:
            number = float(raw)
        except ValueError:
            continue
        decimals = len(raw.split(".", 1)[1]) if "." in raw else 0
        tolerance = 0.5 * 10 ** (-decimals) + 1e-9
        scale = 100 if token.endswith("%") else 1
        if not any(abs(v * scale - number) <= tolerance for v in known):
            missing.append(token)
    return missing
