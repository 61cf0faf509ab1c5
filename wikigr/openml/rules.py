"""The rules of the OpenML strategy (the router's strategy for OpenML packs): which tools answer a
question offline, and the answer they compose from the tool results, every number cited.

The rules read the question's analysis (:class:`wikigr.question.Question`: its ``intent`` and
the measure it names) and the names of the pack it mentions, for

- Cypher (a question that starts with ``MATCH``, ``CALL``, ``RETURN``...) -> ``graph_query`` as is;
- a count ("how many runs / datasets / algorithms / tasks") -> ``graph_query`` with a count;
- a comparison or ranking ("which ... best", "highest median", "compare", "how does X do", or a
  measure named) ->
  ``aggregate_measures``: the measure (accuracy unless AUC, F1, log-loss or runtime is named),
  the statistic (median unless mean/average, or best/maximum, is asked), what is ranked (algorithm
  family, algorithm, dataset, library, task type, year...) and filters (classification /
  regression, imbalanced / balanced, small / large, high- / low-dimensional, binary /
  multiclass, and the datasets, algorithms, families and years the question names);
- a similarity ("similar to", "like", "resembles", "alternatives to"...), or a question that
  asks for no measure, ranking or comparison (naming algorithms or datasets is not enough:
  "which algorithms are tree ensembles?", "instance-based lazy learners") -> ``semantic_search``
  over the descriptions of the tables it names (datasets, algorithms and families, tasks), plus
  the facts of a dataset or algorithm it names.

:func:`compose` writes the answer from the results: each number comes from a tool result and is
followed by the citation ``[n]`` of its source. :func:`ungrounded_numbers` checks that of any
answer (Claude's too).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from wikigr.openml.model import LOWER_IS_BETTER
from wikigr.openml.tool_specs import DIMENSIONS, ToolResult, attribute
from wikigr.question import Question

GROUP_WORDS: tuple[tuple[str, str], ...] = (
    (
        r"famil(y|ies)|kind of (algorithm|model|learner)s?|type of (algorithm|model|learner)s?",
        "Algorithm.family",
    ),
    (r"paradigm", "Algorithm.paradigm"),
    (r"librar(y|ies)|toolkit", "Algorithm.library"),
    (
        r"algorithms?\b|frameworks?\b|flows?\b|learners?\b|models?\b|systems?\b|classifiers?\b|methods?\b"
        r"|automl tools?",
        "Algorithm.name",
    ),
    (r"task types?|kinds? of tasks?", "Task.type"),
    (
        r"which (data ?sets?)|what (data ?sets?)|(data ?sets?) (is|are|was|were) (the )?(hardest|easiest)",
        "Dataset.name",
    ),
    (r"\bper year\b|\bby year\b|which year|\byearly\b", "Date.year"),
    (r"\bper month\b|\bby month\b|which month|monthly", "Date.month"),
    (r"\bquarter", "Date.quarter"),
    (r"weekday|day of (the )?week", "Date.weekday"),
    (r"dataset sizes?|size of (the )?datasets?|by size", "Dataset.size_bucket"),
    (r"class balance|imbalance (level|bucket)s?|by imbalance", "Dataset.imbalance_bucket"),
)
FILTER_WORDS: tuple[tuple[str, str, Any], ...] = (
    (r"\bclassification\b|\bclassif", "Task.type", "Supervised Classification"),
    (r"\bregression\b", "Task.type", "Supervised Regression"),
    (r"\bclustering\b", "Task.type", "Clustering"),
    (r"moderately (im|un)balanced", "Dataset.imbalance_bucket", "moderate"),
    (r"(?<!moderately )\b(imbalanced|unbalanced|skewed)\b", "Dataset.imbalance_bucket", "imbalanced"),
    (r"(?<!im)(?<!un)\bbalanced\b", "Dataset.imbalance_bucket", "balanced"),
    (r"\b(very large|huge|massive)\b", "Dataset.size_bucket", "very_large"),
    (r"(?<!very )\b(large|big)\b(?! ?(numbers?|margin))", "Dataset.size_bucket", ["large", "very_large"]),
    (r"\b(small|tiny)\b", "Dataset.size_bucket", "small"),
    (r"\bmedium[- ]sized?\b", "Dataset.size_bucket", "medium"),
    (r"high[- ]dimension|many features|\bwide\b", "Dataset.dimension_bucket", "high"),
    (r"low[- ]dimension|few features", "Dataset.dimension_bucket", "low"),
    (r"\bbinary\b|two[- ]class", "Dataset.classes", 2),
    (r"multi[- ]?class", "Dataset.classes", {"gte": 3}),
)
FAMILY_WORDS: dict[str, str] = {
    "automl": r"\bauto-?ml\b",
    "baseline": r"\bbaselines?\b|constant predictors?",
    "boosting": r"\bboost(ing|ed)?\b|gradient boost",
    "random_forest": r"random forests?|\bforests?\b",
    "bagging": r"\bbagging\b|\bbagged\b",
    "stacking": r"\bstacking\b|\bstacked\b|\bvoting\b",
    "decision_tree": r"decision trees?|\btrees?\b",
    "rule_based": r"rule[- ]based|rule learners?|\brules\b",
    "bayesian": r"naive bayes|bayesian",
    "discriminant_analysis": r"discriminant",
    "svm": r"\bsvms?\b|support vector|kernel methods?",
    "linear": r"linear models?|logistic regression|\blinear\b",
    "neural_network": r"neural (net|network)s?|\bmlps?\b|deep learning",
    "nearest_neighbors": r"nearest neighbou?rs?|\bknn\b|k-nn",
}

COUNT_TABLES = {
    "run": "Run",
    "dataset": "Dataset",
    "data set": "Dataset",
    "algorithm": "Algorithm",
    "flow": "Algorithm",
    "framework": "Algorithm",
    "task": "Task",
    "famil": "AlgorithmFamily",
}


# What a description question asks for: the tables semantic search looks in.
SEARCH_WORDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (r"\bdata ?sets?\b|\bdata\b", ("Dataset",)),
    (r"\btasks?\b", ("Task",)),
    (r"\bfamil(y|ies)\b", ("AlgorithmFamily",)),
    (
        r"algorithms?\b|frameworks?\b|flows?\b|learners?\b|models?\b|systems?\b|classifiers?\b"
        r"|methods?\b|automl tools?",
        ("Algorithm", "AlgorithmFamily"),
    ),
)

WORST = re.compile(r"\bworst\b|hardest|most difficult|\bleast\b|\bweakest\b|lowest (median |mean )?accura")


@dataclass
class Vocabulary:
    """The names in a pack that a question may mention."""

    datasets: list[str] = field(default_factory=list)
    algorithms: list[str] = field(default_factory=list)
    families: list[str] = field(default_factory=list)
    years: list[int] = field(default_factory=list)
    measure: str = "accuracy"  # the pack's primary measure


@dataclass
class Plan:
    intent: str  # "cypher", "count", "aggregate", "describe"
    calls: list[tuple[str, dict[str, Any]]]
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "calls": [{"tool": t, "input": a} for t, a in self.calls],
            "reasons": self.reasons,
        }


def _mentions(question: str, names: list[str]) -> list[str]:
    """The names (case-insensitive, whole words) a question mentions, longest first."""
    text = question.lower()
    found: list[str] = []
    for name in sorted(set(names), key=len, reverse=True):
        key = name.lower()
        if len(key) < 3 or any(key in f.lower() for f in found):
            continue
        short = key.split(".")[-1] if key.startswith("weka.") else None
        for candidate in filter(None, (key, short)):
            if len(candidate) >= 3 and re.search(rf"(?<![\w-]){re.escape(candidate)}(?![\w-])", text):
                found.append(name)
                break
    return found


def plan(question: str, vocab: Vocabulary, top_k: int = 5) -> Plan:
    """The tool calls that answer ``question`` (see the module docstring)."""
    asked = Question.of(question)
    q, lower = asked.stripped, asked.lower
    if asked.intent == "cypher":
        return Plan("cypher", [("graph_query", {"query": q})], ["the question is Cypher"])

    reasons: list[str] = []
    filters: dict[str, Any] = {}
    for pattern, attr, value in FILTER_WORDS:
        if attr not in filters and re.search(pattern, lower):
            filters[attr] = value
            reasons.append(f"'{re.search(pattern, lower).group(0)}' -> {attr} = {value}")  # type: ignore[union-attr]
    datasets = _mentions(q, vocab.datasets)
    algorithms = _mentions(q, vocab.algorithms)
    families = [f for f in vocab.families if f in FAMILY_WORDS and re.search(FAMILY_WORDS[f], lower)]
    families = [f for f in families if not any(f.replace("_", " ") in a.lower() for a in algorithms)]
    years = [y for y in vocab.years if re.search(rf"\b{y}\b", q)]
    if datasets:
        filters["Dataset.name"] = datasets if len(datasets) > 1 else datasets[0]
        reasons.append(f"names datasets {datasets}")
    if years:
        filters["Date.year"] = years if len(years) > 1 else years[0]
        reasons.append(f"names years {years}")

    count = asked.counted
    if count:
        word = count.group(1).lower()
        table = next(t for k, t in COUNT_TABLES.items() if word.startswith(k))
        if algorithms:
            filters["Algorithm.name"] = algorithms
        if families:
            filters["Algorithm.family"] = families
        reasons.append(f"'{count.group(0)}' -> count {table}")
        return Plan("count", [("graph_query", {"query": count_query(table, filters)})], reasons)

    named = asked.measure
    if asked.intent == "describe":
        # Naming algorithms or datasets is not asking to rank them: without a measure, a ranking
        # or a comparison, or with a similarity asked, the question is about what things are.
        similar = asked.similarity
        why = f"'{similar}': similarity" if similar is not None else "no measure, ranking or count asked"
        return _describe(q, lower, datasets, algorithms, top_k, [*reasons, why])

    measure = named or vocab.measure
    reasons.append(f"measure {measure}")
    if re.search(r"\bmean\b|average", lower):
        statistic = "mean"
    elif re.search(r"\bmedian\b", lower):
        statistic = "median"
    elif re.search(r"best (single )?run|maximum|\bmax\b|top score|highest (single )?score", lower):
        statistic = "max" if measure not in LOWER_IS_BETTER else "min"
    else:
        statistic = "median"

    group = next((attr for pattern, attr in GROUP_WORDS if re.search(pattern, lower)), None)
    if group is None:
        group = "Algorithm.name" if algorithms else "Algorithm.family"
    if algorithms:
        filters["Algorithm.name"] = algorithms
    if families:
        filters["Algorithm.family"] = families if len(families) > 1 else families[0]
    order = "worst" if WORST.search(lower) else "best"
    reasons.append(f"rank by {group}, {statistic}, {order} first")
    arguments = {
        "group_by": [group],
        "measure": measure,
        "filters": filters,
        "statistic": statistic,
        "order": order,
        "limit": max(top_k, 3),
    }
    return Plan("aggregate", [("aggregate_measures", arguments)], reasons)


def _describe(
    q: str, lower: str, datasets: list[str], algorithms: list[str], top_k: int, reasons: list[str]
) -> Plan:
    """A semantic search of the descriptions (in the tables the question names), plus the facts
    of a dataset or algorithm it names."""
    search: dict[str, Any] = {"text": q, "k": top_k}
    tables = [t for pattern, found in SEARCH_WORDS if re.search(pattern, lower) for t in found]
    if tables:
        search["tables"] = list(dict.fromkeys(tables))
        reasons.append(f"searches {', '.join(search['tables'])}")
    calls: list[tuple[str, dict[str, Any]]] = [("semantic_search", search)]
    entity: str | None = (datasets or algorithms or [None])[0]  # type: ignore[list-item]
    if entity is not None:
        table = "Dataset" if datasets else "Algorithm"
        calls.append(
            (
                "graph_query",
                {"query": f"MATCH (n:{table}) WHERE n.name = {_literal(entity)} RETURN n", "max_rows": 5},
            )
        )
        reasons.append(f"names {table.lower()} {entity!r}: its facts")
    reasons.append("semantic search of the descriptions")
    return Plan("describe", calls, reasons)


def _literal(value: Any) -> str:
    if isinstance(value, str):
        return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"
    return json.dumps(value)


def count_query(table: str, filters: dict[str, Any]) -> str:
    """A read-only Cypher count of ``table`` rows, with the filters that apply to it."""
    conditions = []
    tables = set()
    for name, value in filters.items():
        t, _, expr = attribute(name)
        tables.add(t)
        if isinstance(value, list):
            conditions.append(f"{expr} IN [{', '.join(_literal(v) for v in value)}]")
        elif isinstance(value, dict):
            ops = {"gte": ">=", "gt": ">", "lte": "<=", "lt": "<", "eq": "=", "ne": "<>"}
            conditions.extend(f"{expr} {ops[k]} {_literal(v)}" for k, v in value.items())
        else:
            conditions.append(f"{expr} = {_literal(value)}")
    if table == "Run" or tables - {table}:
        patterns = ["(r:Run)"] + [
            DIMENSIONS[t][1]
            for t in ("Algorithm", "AlgorithmFamily", "Dataset", "Task", "Date")
            if t in tables
        ]
        if "AlgorithmFamily" in tables and "Algorithm" not in tables:
            patterns.insert(1, DIMENSIONS["Algorithm"][1])
        var = {"Run": "r", **{t: v for t, (v, _, _) in DIMENSIONS.items()}}[table]
        if table not in tables and table != "Run":
            patterns.append(
                DIMENSIONS[table][1] if table != "AlgorithmFamily" else DIMENSIONS["AlgorithmFamily"][1]
            )
        where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
        return f"MATCH {', '.join(patterns)}{where} RETURN count(DISTINCT {var}) AS count"
    var = DIMENSIONS[table][0]
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return f"MATCH ({var}:{table}){where} RETURN count({var}) AS count"


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


def _describe_filters(filters: dict[str, Any]) -> str:
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
            where = _describe_filters(out["filters"])
            if not groups:
                lines.append(f"No run has a {measure} value for {where}, so there is nothing to rank.")
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
            f"({_describe_filters(out['filters'])})"
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
