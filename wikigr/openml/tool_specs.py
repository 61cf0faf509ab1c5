"""What the OpenML tools show Claude and the trace: the dimension attributes they group and filter
by, the tools' JSON schemas and descriptions (:data:`TOOL_SPECS`), a call's :class:`ToolResult`,
and values from the store made JSON-ready (:func:`to_json`). No numpy or pyarrow here: the tools
themselves are :mod:`wikigr.openml.tools`."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

from wikigr.errors import UsageError
from wikigr.openml.model import MEASURES

__all__ = [
    "DIMENSIONS",
    "FILTER_OPS",
    "MAX_GROUPS",
    "SEARCH_TABLES",
    "SHORTHANDS",
    "STATISTICS",
    "TOOL_SPECS",
    "ToolResult",
    "attribute",
    "to_json",
]

# -- the dimension attributes tools may group and filter by -----------------------------------

#: table -> (variable, the pattern that joins it to the run r, its attributes)
DIMENSIONS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    "Run": ("r", "", ("id", "run_id", "setup_id", "fold", "repeat", "status", *MEASURES)),
    "Algorithm": (
        "a",
        "(r)-[:USED_ALGORITHM]->(a:Algorithm)",
        ("id", "flow_id", "name", "version", "family", "paradigm", "library"),
    ),
    "AlgorithmFamily": ("f", "(a)-[:BELONGS_TO_FAMILY]->(f:AlgorithmFamily)", ("id", "name", "paradigm")),
    "Dataset": (
        "d",
        "(r)-[:ON_DATASET]->(d:Dataset)",
        (
            "id",
            "data_id",
            "name",
            "rows",
            "features",
            "classes",
            "missing_pct",
            "imbalance_ratio",
            "size_bucket",
            "dimension_bucket",
            "imbalance_bucket",
        ),
    ),
    "Task": ("t", "(r)-[:FOR_TASK]->(t:Task)", ("id", "task_id", "type", "target", "measure", "estimation")),
    "Date": (
        "dt",
        "(r)-[:RUN_ON_DATE]->(dt:Date)",
        ("id", "date", "year", "quarter", "month", "month_name", "day", "weekday"),
    ),
}
#: Short names accepted for common attributes.
SHORTHANDS = {
    "family": "Algorithm.family",
    "algorithm": "Algorithm.name",
    "flow": "Algorithm.name",
    "library": "Algorithm.library",
    "paradigm": "Algorithm.paradigm",
    "dataset": "Dataset.name",
    "task": "Task.id",
    "task_type": "Task.type",
    "year": "Date.year",
    "quarter": "Date.quarter",
    "month": "Date.month",
    "weekday": "Date.weekday",
}
FILTER_OPS = {"eq": "=", "ne": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<=", "in": "IN"}
STATISTICS = ("median", "mean", "p25", "p75", "min", "max", "count")
SEARCH_TABLES = ("Algorithm", "AlgorithmFamily", "Dataset", "Task")
MAX_GROUPS = 100


def attribute(name: str) -> tuple[str, str, str]:
    """``"Dataset.imbalance_bucket"`` (or a shorthand) -> ``(table, attr, cypher expression)``."""
    text = SHORTHANDS.get(name.strip(), name.strip())
    table, _, attr = text.partition(".")
    canonical = {t.lower(): t for t in DIMENSIONS}
    table = canonical.get(table.lower().replace("_", ""), table)
    if table not in DIMENSIONS or not attr:
        known = ", ".join(DIMENSIONS)
        raise UsageError(f"unknown attribute {name!r}: use Table.attribute with a table of {known}")
    var, _, attrs = DIMENSIONS[table]
    if attr not in attrs:
        raise UsageError(f"unknown attribute {name!r}: {table} has {', '.join(attrs)}")
    return table, attr, f"{var}.{attr}"


# -- JSON-ready values ---------------------------------------------------------------------------


def to_json(value: Any) -> Any:
    """A value from the store as JSON: nodes and rels lose their internal ids and embeddings."""
    if isinstance(value, dict):
        clean = {}
        for key, item in value.items():
            if key in ("_ID", "_SRC", "_DST", "embedding"):
                continue
            clean["label" if key == "_LABEL" else key] = to_json(item)
        return clean
    if isinstance(value, list | tuple):
        return [to_json(v) for v in value]
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dt.date | dt.datetime):
        return value.isoformat()
    if value is None or isinstance(value, bool | int | str):
        return value
    return str(value)


# -- results -------------------------------------------------------------------------------------


@dataclass
class ToolResult:
    """One tool call as the trace shows it."""

    tool: str
    input: dict[str, Any]
    output: dict[str, Any] = field(default_factory=dict)
    error: str | None = None
    ms: float = 0.0

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"tool": self.tool, "input": self.input, "ms": round(self.ms, 2)}
        if self.error is not None:
            data["error"] = self.error
        else:
            data["output"] = self.output
        return data


TOOL_SPECS: list[dict[str, Any]] = [
    {
        "name": "aggregate_measures",
        "description": (
            "Aggregate a measure of the OpenML runs (accuracy, auc, f1, log_loss, runtime_s) grouped by "
            "dimension attributes, after filters. Returns per group: count, datasets, mean, median, p25, "
            "p75, min, max and the best run's id. Attributes are Table.attribute: Algorithm.{name, family, "
            "paradigm, library, version}, Dataset.{name, size_bucket, dimension_bucket, imbalance_bucket, "
            "rows, features, classes}, Task.{type, task_id}, Date.{year, quarter, month, weekday}, "
            "Run.{status, fold}. Buckets: size small/medium/large/very_large, dimension low/medium/high, "
            "imbalance balanced/moderate/imbalanced/unknown."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "measure": {"type": "string", "enum": list(MEASURES)},
                "group_by": {"type": "array", "items": {"type": "string"}},
                "filters": {
                    "type": "object",
                    "description": (
                        'Attribute -> value, list of values, or {"gte": x, "lt": y...} '
                        "(ops eq, ne, gt, gte, lt, lte, in)"
                    ),
                },
                "statistic": {"type": "string", "enum": list(STATISTICS), "description": "sort groups by"},
                "order": {
                    "type": "string",
                    "enum": ["best", "worst"],
                    "description": "best groups first (default) or worst first",
                },
                "min_count": {"type": "integer", "minimum": 1},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_GROUPS},
            },
            "required": ["group_by"],
        },
    },
    {
        "name": "graph_query",
        "description": (
            "Run a read-only Cypher query on the pack's graph. Nodes: Run(id, run_id, setup_id, fold, "
            "repeat, accuracy, auc, f1, log_loss, runtime_s, status), Algorithm(id, flow_id, name, version, "
            "family, paradigm, library, description), AlgorithmFamily(id, name, paradigm, description), "
            "Dataset(id, data_id, name, rows, features, classes, imbalance_ratio, size_bucket, "
            "dimension_bucket, imbalance_bucket, description), Task(id, task_id, type, target, measure), "
            "Date(id YYYYMMDD, year, quarter, month, weekday). Rels: (Run)-[:USED_ALGORITHM]->(Algorithm), "
            "(Run)-[:ON_DATASET]->(Dataset), (Run)-[:FOR_TASK]->(Task), (Run)-[:RUN_ON_DATE]->(Date), "
            "(Dataset)-[:PART_OF_TASK]->(Task), (Algorithm)-[:BELONGS_TO_FAMILY]->(AlgorithmFamily). "
            "Anything that writes is refused."
        ),
        "input_schema": {
            "type": "object",
            "properties": {"query": {"type": "string"}, "max_rows": {"type": "integer", "minimum": 1}},
            "required": ["query"],
        },
    },
    {
        "name": "semantic_search",
        "description": (
            "Find algorithms, algorithm families, datasets and tasks whose descriptions are closest in "
            "meaning to a text. Use it to resolve names mentioned in a question."
        ),
        "input_schema": {
            "type": "object",
            "properties": {
                "text": {"type": "string"},
                "tables": {"type": "array", "items": {"type": "string", "enum": list(SEARCH_TABLES)}},
                "k": {"type": "integer", "minimum": 1, "maximum": 50},
            },
            "required": ["text"],
        },
    },
]
