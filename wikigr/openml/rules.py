"""The rules of the OpenML strategy (the router's strategy for OpenML packs): which tools answer a
question offline.

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

Names are matched however they are spelt, and past tenses read as the present
(:mod:`wikigr.openml.names`). A count or ranking that names something the pack does not hold
("Xyz AutoML", "kc2"), with no name the pack does hold, lists the pack's algorithms (or datasets)
under a note that nothing is called so, rather than answer for all runs; a filter no dataset or
task passes ("imbalanced" in a pack without dataset qualities) shows what the pack has instead.
:mod:`wikigr.openml.compose` writes the answer from the results, every number cited.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from wikigr.openml.compose import Citation, compose, describe_filters, ungrounded_numbers
from wikigr.openml.model import LOWER_IS_BETTER
from wikigr.openml.names import (
    KNOWN_ATTRIBUTES,
    Vocabulary,
    aliases,
    family_spans,
    key,
    mentions,
    present,
    satisfiable,
    unknown_names,
)
from wikigr.openml.tool_specs import DIMENSIONS, attribute
from wikigr.question import COUNT_WORDS, MEASURE_WORDS, Question

__all__ = ["Citation", "Plan", "Vocabulary", "compose", "count_query", "plan", "ungrounded_numbers"]

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
class Plan:
    intent: str  # "cypher", "count", "aggregate", "describe": the question's (whatever the calls)
    calls: list[tuple[str, dict[str, Any]]]
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # the answer's first lines, before the composed ones

    def to_json(self) -> dict[str, Any]:
        return {
            "intent": self.intent,
            "calls": [{"tool": t, "input": a} for t, a in self.calls],
            "reasons": self.reasons,
            "notes": self.notes,
        }


def plan(question: str, vocab: Vocabulary, top_k: int = 5) -> Plan:
    """The tool calls that answer ``question`` (see the module docstring)."""
    if Question.of(question).intent == "cypher":
        q = question.strip()
        return Plan("cypher", [("graph_query", {"query": q})], ["the question is Cypher"])
    asked = Question.of(present(question))  # "How did X do?" asks what "How does X do?" asks
    q, lower = asked.stripped, asked.lower

    reasons: list[str] = []
    filters: dict[str, Any] = {}
    known: list[tuple[int, int]] = []  # where the rules' own words are
    for pattern, attr, value in FILTER_WORDS:
        found = re.search(pattern, q, re.IGNORECASE)
        if found:
            known.append(found.span())
            if attr not in filters:
                filters[attr] = value
                reasons.append(f"'{found.group(0)}' -> {attr} = {value}")
    families_at = family_spans(q)
    algorithms_at = mentions(
        q, vocab.algorithms, skip=lambda s, e: any(fs <= s and e <= fe for _, fs, fe in families_at)
    )
    datasets_at = mentions(
        q, vocab.datasets, skip=lambda s, e: any(m.start < e and s < m.end for m in algorithms_at)
    )
    named = [(m.start, m.end) for m in algorithms_at + datasets_at]
    algorithms = sorted({m.name for m in algorithms_at}, key=lambda n: (-len(n), n))
    datasets = sorted({m.name for m in datasets_at}, key=lambda n: (-len(n), n))
    found_families = {f for f, s, e in families_at if not any(ns < e and s < ne for ns, ne in named)}
    families = [f for f in vocab.families if f in found_families]
    years = [y for y in vocab.years if re.search(rf"\b{y}\b", q)]
    if datasets:
        filters["Dataset.name"] = datasets if len(datasets) > 1 else datasets[0]
        reasons.append(f"names datasets {datasets}")
    if years:
        filters["Date.year"] = years if len(years) > 1 else years[0]
        reasons.append(f"names years {years}")
    if asked.intent in ("count", "aggregate"):
        known += [(s, e) for _, s, e in families_at] + _rule_words(q)
        unknown = unknown_names(q, known, named)
        lacking = [f for f in dict.fromkeys(f for f, _, _ in families_at) if f in found_families]
        lacking = [f for f in lacking if f not in vocab.families]
        notes: list[str] = []
        unanswered: list[str] = []  # what the question asks about and the pack does not hold
        if unknown:
            reasons.append(f"names {unknown}: nothing of the pack")
            notes.append(_nothing_called(unknown, vocab))
            for name in unknown:
                kind = "datasets" if _names_a_dataset(q, name) else "algorithms"
                if not (datasets if kind == "datasets" else algorithms):
                    unanswered.append(kind)
        if lacking:
            reasons.append(f"names families {lacking}: none in the pack")
            plural = "family" if len(lacking) == 1 else "families"
            notes.append(f"The pack holds no algorithm of the {' or '.join(lacking)} {plural}.")
            if not families and not algorithms:
                unanswered.append("families")
        if unanswered:  # an answer for all runs would answer another question: list what it holds
            return _listing(asked.intent, unanswered[0], reasons, notes)
        chosen = _missing_value(asked.intent, filters, vocab)
        if chosen is None and notes:
            reasons.append("answers for the names it does hold")
        if chosen is None:
            chosen = _planned(asked, q, lower, vocab, top_k, filters, reasons, algorithms, families, datasets)
        chosen.notes[:0] = notes
        return chosen

    return _planned(asked, q, lower, vocab, top_k, filters, reasons, algorithms, families, datasets)


def _rule_words(q: str) -> list[tuple[int, int]]:
    """Where the question has the words the rules read: measures, groups, statistics, counts."""
    patterns = [p for p, _ in MEASURE_WORDS] + [p for p, _ in GROUP_WORDS]
    patterns += [WORST.pattern, COUNT_WORDS.pattern, r"\bmedian\b|\bmean\b|average|maximum|\bmax\b"]
    return [m.span() for p in patterns for m in re.finditer(p, q, re.IGNORECASE)]


def _nothing_called(unknown: list[str], vocab: Vocabulary) -> str:
    """The note that the pack holds nothing called so, with its closest names."""
    names = {k: n for n in [*vocab.algorithms, *vocab.datasets, *vocab.families] for k in aliases(n)}
    close = [
        names[k] for u in unknown for k in difflib.get_close_matches(key(u), list(names), n=2, cutoff=0.6)
    ]
    called = " or ".join(f"'{u}'" for u in unknown)
    hint = f" (closest: {', '.join(dict.fromkeys(close))})" if close else ""
    return f"Nothing in the pack is called {called}{hint}."


def _names_a_dataset(q: str, name: str) -> bool:
    """Whether a name the pack lacks is given as a dataset's ("on kc2", "the Foo dataset"), not an
    algorithm's."""
    where = q.find(name)
    after = q[where + len(name) :]
    on = re.search(r"\bon (the )?$", q[:where], re.IGNORECASE) or re.match(
        r"\s*data ?sets?\b", after, re.IGNORECASE
    )
    return bool(on) and not re.search(
        r"algorithm|framework|learner|classifier|famil|automl", q, re.IGNORECASE
    )


LISTINGS = {
    "datasets": "MATCH (d:Dataset) RETURN d.name AS dataset ORDER BY dataset",
    "algorithms": "MATCH (a:Algorithm) RETURN DISTINCT a.name AS algorithm ORDER BY algorithm",
    "families": "MATCH (f:AlgorithmFamily) RETURN f.name AS family ORDER BY family",
}


def _listing(intent: str, what: str, reasons: list[str], notes: list[str]) -> Plan:
    """The plan for a question whose names the pack does not hold: list what it holds instead."""
    reasons.append(f"lists the pack's {what}")
    calls: list[tuple[str, dict[str, Any]]] = [("graph_query", {"query": LISTINGS[what], "max_rows": 200})]
    return Plan(intent, calls, reasons, [*notes, f"Its {'algorithm ' * (what == 'families')}{what}:"])


def _missing_value(intent: str, filters: dict[str, Any], vocab: Vocabulary) -> Plan | None:
    """The plan for a filter no dataset or task of the pack passes ("imbalanced" in a pack that
    knows no class balance): say so and show what the pack has, rather than rank nothing."""
    for name, value in filters.items():
        held = None if vocab.values is None else vocab.values.get(name)
        if held is None or satisfiable(value, held):
            continue
        table, attr, expr = attribute(name)
        var, plural = DIMENSIONS[table][0], f"{table.lower()}s"
        wanted = describe_filters({name: value})
        if held:
            note = f"No {table.lower()} of the pack has {wanted}."
        else:
            note = (
                f"None of the pack's {plural} has a known {KNOWN_ATTRIBUTES[name]} (it was built without "
                f"dataset qualities), so it cannot answer for {wanted}."
            )
        query = (
            f"MATCH ({var}:{table}) RETURN {expr} AS {attr}, count({var}) AS {plural} ORDER BY {plural} DESC"
        )
        reasons = [f"{wanted}: no {table.lower()} of the pack", f"lists its {plural} by {attr}"]
        return Plan(intent, [("graph_query", {"query": query})], reasons, [note, f"Its {plural} by {attr}:"])
    return None


def _planned(
    asked: Question,
    q: str,
    lower: str,
    vocab: Vocabulary,
    top_k: int,
    filters: dict[str, Any],
    reasons: list[str],
    algorithms: list[str],
    families: list[str],
    datasets: list[str],
) -> Plan:
    """The count, description or aggregate that answers the question, its names found."""
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
