"""The three tools that answer from an OpenML pack's store.

- ``graph_query``: read-only Cypher (the store's guard refuses anything that writes, loads,
  installs or attaches, and the store is opened read-only so the database refuses it too);
- ``semantic_search``: the dimension rows (algorithms, families, datasets, tasks) whose embedded
  descriptions are closest to a text;
- ``aggregate_measures``: a measure of the runs grouped by dimension attributes, with filters:
  count, mean, median, p25, p75, min, max per group, and the run that did best.

Percentiles are the linear interpolation between order statistics (``percentileCont``; the same as
``statistics.quantiles(method="inclusive")`` and numpy's default). Every tool returns JSON-ready
data; :meth:`OpenMLTools.call` wraps a call in a :class:`ToolResult` for the trace. The tools' schemas,
their dimension attributes and the JSON-ready values are :mod:`wikigr.openml.tool_specs`.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pyarrow.compute as pc

from wikigr.embed import Embedder, embed_queries
from wikigr.errors import StoreError, UsageError
from wikigr.openml.model import LOWER_IS_BETTER, measure_name
from wikigr.openml.tool_specs import (
    DIMENSIONS,
    FILTER_OPS,
    MAX_GROUPS,
    SEARCH_TABLES,
    STATISTICS,
    ToolResult,
    attribute,
    to_json,
)
from wikigr.pack.store import Store

__all__ = ["OpenMLTools"]


# -- the tools -----------------------------------------------------------------------------------


class OpenMLTools:
    """The tools over one opened OpenML store. ``embedder`` is loaded on first semantic search."""

    def __init__(self, store: Store, embedder: Callable[[], Embedder]) -> None:
        if store.kind != "openml":
            raise UsageError("these tools need an OpenML pack")
        self.store = store
        self._embedder_factory = embedder
        self._embedder: Embedder | None = None
        self._dims: dict[str, dict[int, dict[str, Any]]] = {}
        self._members: dict[str, dict[Any, dict[str, Any]]] = {}

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        """Run the tool ``name``; a refused or failed call is a result with ``error``."""
        start = time.perf_counter()
        result = ToolResult(tool=name, input=dict(arguments))
        try:
            if name == "graph_query":
                result.output = self.graph_query(**arguments)
            elif name == "semantic_search":
                result.output = self.semantic_search(**arguments)
            elif name == "aggregate_measures":
                result.output = self.aggregate_measures(**arguments)
            else:
                raise UsageError(f"unknown tool {name!r}")
        except TypeError as exc:  # an unexpected or missing argument
            result.error = f"bad arguments: {exc}"
        except (UsageError, StoreError, ValueError) as exc:
            result.error = str(exc)
        result.ms = (time.perf_counter() - start) * 1000
        return result

    # -- graph_query -------------------------------------------------------------------------

    def graph_query(self, query: str, max_rows: int = 200) -> dict[str, Any]:
        if not isinstance(query, str):
            raise UsageError("query must be a string")
        columns, rows, truncated = self.store.read_query(query, max_rows=max(1, min(int(max_rows), 5000)))
        return {
            "columns": columns,
            "rows": [[to_json(v) for v in row] for row in rows],
            "row_count": len(rows),
            "truncated": truncated,
        }

    # -- semantic_search -----------------------------------------------------------------------

    def semantic_search(self, text: str, tables: list[str] | None = None, k: int = 5) -> dict[str, Any]:
        if not isinstance(text, str) or not text.strip():
            raise UsageError("semantic_search needs a text")
        chosen = list(tables or SEARCH_TABLES)
        unknown = [t for t in chosen if t not in SEARCH_TABLES]
        if unknown:
            raise UsageError(
                f"semantic_search: unknown table {unknown[0]!r} (tables: {', '.join(SEARCH_TABLES)})"
            )
        k = max(1, min(int(k), 50))
        if self._embedder is None:
            self._embedder = self._embedder_factory()
        vector = [float(x) for x in embed_queries(self._embedder, [text.strip()])[0]]
        hits: list[dict[str, Any]] = []
        for table in chosen:
            rows = self.store.rows(
                f"MATCH (n:{table}) RETURN n.id, n.name, n.description, "
                "array_cosine_similarity(n.embedding, $q) AS score ORDER BY score DESC LIMIT $k"
                if table != "Task"
                else "MATCH (n:Task) RETURN n.id, n.type, n.description, "
                "array_cosine_similarity(n.embedding, $q) AS score ORDER BY score DESC LIMIT $k",
                {"q": vector, "k": k},
            )
            hits.extend(
                {
                    "table": table,
                    "id": r[0],
                    "name": r[1],
                    "description": r[2],
                    "score": round(float(r[3]), 4),
                }
                for r in rows
            )
        hits.sort(key=lambda h: (-h["score"], h["table"], h["id"]))
        return {"text": text, "hits": hits[:k]}

    # -- aggregate_measures ----------------------------------------------------------------------

    def _dimension(self, table: str) -> dict[int, dict[str, Any]]:
        """A dimension's rows by surrogate key (Date: by its YYYYMMDD id), loaded once."""
        if table not in self._dims:
            _, _, attrs = DIMENSIONS[table]
            key = "n.id" if table == "Date" else "n.key"
            rows = self.store.rows(f"MATCH (n:{table}) RETURN {key}, " + ", ".join(f"n.{a}" for a in attrs))
            self._dims[table] = {int(r[0]): dict(zip(attrs, r[1:], strict=True)) for r in rows}
        return self._dims[table]

    def _codes(self, table: str, attr: str, fk: np.ndarray) -> tuple[np.ndarray, list[Any]]:
        """``(codes, labels)``: each run's ``table.attr`` as an index into ``labels`` (-1: unknown).

        The work is on the distinct foreign keys, not on every run (a star join in memory)."""
        if table == "AlgorithmFamily":
            table, attr = "Algorithm", {"name": "family", "id": "family", "paradigm": "paradigm"}[attr]
        rows = self._dimension(table)
        keys, inverse = np.unique(fk, return_inverse=True)
        labels: list[Any] = []
        index: dict[tuple[str, Any], int] = {}
        per_key = np.full(len(keys), -1, dtype=np.int64)
        for i, key in enumerate(keys):
            value = rows.get(int(key), {}).get(attr)
            if value is None:
                continue
            marker = (type(value).__name__, value)
            if marker not in index:
                index[marker] = len(labels)
                labels.append(value)
            per_key[i] = index[marker]
        return per_key[inverse], labels

    @staticmethod
    def _group_statistics(
        codes: np.ndarray,
        values: np.ndarray,
        run_keys: np.ndarray,
        datasets: np.ndarray,
        ascending: bool,
        min_count: int,
    ) -> list[dict[str, Any]]:
        """Per group code: count, datasets, mean, median, p25, p75 (linear interpolation between
        order statistics), min, max and the best run (ties: the first run loaded). Vectorised."""
        if not len(codes):
            return []
        order = np.lexsort((values, codes))  # by group, then value
        codes, values, run_keys, datasets = codes[order], values[order], run_keys[order], datasets[order]
        starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
        ends = np.r_[starts[1:], len(codes)]
        counts = ends - starts

        def quantile(q: float) -> np.ndarray:
            position = starts + q * (counts - 1)
            low = np.floor(position).astype(np.int64)
            high = np.ceil(position).astype(np.int64)
            result: np.ndarray = values[low] + (values[high] - values[low]) * (position - low)
            return result

        p25, median, p75 = quantile(0.25), quantile(0.5), quantile(0.75)
        # The best run: the group's best value; among runs with that value, the first loaded.
        best_value = values[starts] if ascending else values[ends - 1]
        candidates = np.where(values == np.repeat(best_value, counts), run_keys, np.iinfo(np.int64).max)
        best_key = np.minimum.reduceat(candidates, starts)
        width = int(datasets.max()) + 2
        pairs = np.unique(codes * width + (datasets + 1)) // width  # one entry per (group, dataset)
        distinct = dict(zip(*np.unique(pairs, return_counts=True), strict=True))
        groups = []
        for i, start in enumerate(starts):
            if counts[i] < min_count:
                continue
            chunk = values[start : ends[i]]
            groups.append(
                {
                    "_code": int(codes[start]),
                    "count": int(counts[i]),
                    "datasets": int(distinct[codes[start]]),
                    "mean": math.fsum(chunk) / len(chunk),
                    "median": float(median[i]),
                    "p25": float(p25[i]),
                    "p75": float(p75[i]),
                    "min": float(values[start]),
                    "max": float(values[ends[i] - 1]),
                    "_best": int(best_key[i]),
                }
            )
        return groups

    def aggregate_measures(
        self,
        group_by: list[str] | str,
        measure: str = "accuracy",
        filters: dict[str, Any] | None = None,
        statistic: str = "median",
        min_count: int = 1,
        limit: int = 20,
        order: str = "best",
    ) -> dict[str, Any]:
        measure = measure_name(measure)
        if order not in ("best", "worst"):
            raise UsageError("order must be 'best' or 'worst'")
        groups = [group_by] if isinstance(group_by, str) else list(group_by)
        if not groups:
            raise UsageError("aggregate_measures needs at least one group_by attribute")
        if statistic not in STATISTICS:
            raise UsageError(f"unknown statistic {statistic!r} (one of {', '.join(STATISTICS)})")
        if filters is not None and not isinstance(filters, dict):
            raise UsageError("filters must be an object of attribute -> value")
        keys = [attribute(g) for g in groups]
        parsed = [(attribute(name), value) for name, value in (filters or {}).items()]

        # The fact table with its foreign keys; filters on the runs' own columns run in Cypher,
        # filters on dimensions here, on the small dimension tables (a star join in memory).
        params: dict[str, Any] = {}
        conditions = [f"r.{measure} IS NOT NULL"]
        for n, ((table, _, expr), value) in enumerate(parsed):
            if table == "Run":
                conditions.extend(_conditions(expr, value, f"f{n}", params))
        run_attrs = sorted({a for t, a, _ in keys if t == "Run"})
        # Only the foreign keys this call needs (fewer columns to move out of the store).
        used = {t for t, _, _ in keys} | {t for (t, _, _), _ in parsed} | {"Dataset"}
        dims = [
            t
            for t in ("Algorithm", "Dataset", "Task", "Date")
            if t in used or (t == "Algorithm" and "AlgorithmFamily" in used)
        ]
        foreign = {
            "Algorithm": "algorithm_key",
            "Dataset": "dataset_key",
            "Task": "task_key",
            "Date": "date_key",
        }
        facts = self.store.arrow(
            "MATCH (r:Run) WHERE "
            + " AND ".join(conditions)
            + f" RETURN r.key, r.{measure}"
            + "".join(f", r.{foreign[t]}" for t in dims)
            + "".join(f", r.{a}" for a in run_attrs),
            params,
        )
        columns = {name: facts.column(i) for i, name in enumerate(["key", "value", *dims, *run_attrs])}

        def ints(name: str) -> np.ndarray:
            return np.asarray(pc.fill_null(columns[name], -1).to_numpy(zero_copy_only=False), dtype=np.int64)

        run_keys = ints("key")
        values = np.asarray(columns["value"].to_numpy(zero_copy_only=False), dtype=np.float64)
        fks: dict[str, np.ndarray] = {t: ints(t) for t in dims}
        if "Algorithm" in fks:
            fks["AlgorithmFamily"] = fks["Algorithm"]
        mask = np.ones(len(values), dtype=bool)

        def codes_of(table: str, attr: str) -> tuple[np.ndarray, list[Any]]:
            if table == "Run":
                names, inverse = np.unique(
                    np.array([str(v) for v in columns[attr].to_pylist()], dtype=object), return_inverse=True
                )
                originals = {str(v): v for v in columns[attr].to_pylist()}
                labels = [originals[n] for n in names]
                codes = np.where([originals[n] is None for n in names], -1, np.arange(len(names)))[inverse]
                return codes, labels
            return self._codes(table, attr, fks[table])

        for (table, attr, _), value in parsed:
            if table != "Run":
                codes, labels = self._codes(table, attr, fks[table])
                keep = np.array([_matches(label, value) for label in labels] + [_matches(None, value)])
                mask &= keep[codes]  # code -1 (unknown) picks the last entry: None

        codes = np.zeros(len(values), dtype=np.int64)
        uniques: list[list[Any]] = []
        for table, attr, _ in keys:
            column, labels = codes_of(table, attr)
            mask &= column >= 0  # a run without that dimension (e.g. no date) is in no group
            uniques.append(labels)
            codes = codes * max(1, len(labels)) + np.maximum(column, 0)
        selected = np.flatnonzero(mask)
        codes = codes[selected]
        ascending = measure in LOWER_IS_BETTER
        out_groups = self._group_statistics(
            codes,
            values[selected],
            run_keys[selected],
            fks["Dataset"][selected],
            ascending,
            max(1, int(min_count)),
        )
        for g in out_groups:
            code = g.pop("_code")
            parts = []
            for names in reversed(uniques):
                parts.append(names[code % len(names)])
                code //= len(names)
            parts.reverse()
            g["group"] = {f"{t}.{a}": to_json(v) for (t, a, _), v in zip(keys, parts, strict=True)}
        sort_key = statistic

        # "best" first: the highest statistic (the lowest for log-loss and runtime); "worst" reverses.
        low_first = (ascending and sort_key != "count") != (order == "worst")

        def order_key(g: dict[str, Any]) -> tuple[float, int, str]:
            value = float(g[sort_key])
            return (value if low_first else -value, -g["count"], str(g["group"]))

        out_groups.sort(key=order_key)
        kept = out_groups[: max(1, min(int(limit), MAX_GROUPS))]
        best = (
            {
                int(r[0]): r[1:]
                for r in self.store.rows(
                    "MATCH (r:Run) WHERE r.key IN $keys OPTIONAL MATCH (r)-[:FOR_TASK]->(t:Task) "
                    "OPTIONAL MATCH (r)-[:ON_DATASET]->(d:Dataset) "
                    "RETURN r.key, r.id, r.source, r.run_id, t.task_id, d.data_id",
                    {"keys": [g["_best"] for g in kept]},
                )
            }
            if kept
            else {}
        )
        for g in out_groups:
            key = g.pop("_best")
            if key in best:
                run_id, source, openml_id, task_id, data_id = best[key]
                g["best_run"] = {
                    "id": run_id,
                    "source": source,
                    "openml_run_id": openml_id,
                    "openml_task_id": task_id,
                    "openml_data_id": data_id,
                    measure: g["min" if ascending else "max"],
                }
        return {
            "measure": measure,
            "better": "lower" if ascending else "higher",
            "group_by": [f"{t}.{a}" for t, a, _ in keys],
            "filters": filters or {},
            "statistic": statistic,
            "order": order,
            "groups": kept,
            "group_count": len(out_groups),
            "runs": int(sum(g["count"] for g in out_groups)),
            "cypher": _equivalent_cypher(measure, keys, parsed),
        }

    # -- what the picture of the star reads (wikigr.openml.star) ---------------------------------

    def members(self, table: str) -> dict[Any, dict[str, Any]]:
        """A dimension's rows (Algorithm, Dataset, Task or Date) by their id, loaded once."""
        if table not in self._members:
            self._members[table] = {row["id"]: row for row in self._dimension(table).values()}
        return self._members[table]

    def dataset_tasks(self) -> list[tuple[str, str]]:
        """Each (dataset id, task id) of the pack's ``PART_OF_TASK`` edges."""
        rows = self.store.rows("MATCH (d:Dataset)-[:PART_OF_TASK]->(t:Task) RETURN d.id, t.id")
        return [(str(d), str(t)) for d, t in rows]


def _matches(v: Any, condition: Any) -> bool:
    """Whether a value satisfies a filter: a value (strings case-insensitively), a list, an
    ``{op: operand}`` object, or None (unknown)."""

    def norm(x: Any) -> Any:
        return x.casefold() if isinstance(x, str) else x

    if isinstance(condition, dict):
        for op, operand in condition.items():
            key = _OPS.get(str(op).lower().lstrip("$"))
            if key is None:
                raise UsageError(f"unknown filter operator {op!r} (use {', '.join(FILTER_OPS)})")
            if key == "in":
                if not isinstance(operand, list):
                    raise UsageError("the 'in' filter operator needs a list")
                if norm(v) not in {norm(o) for o in operand}:
                    return False
                continue
            if v is None:
                return False
            a, b = norm(v), norm(operand)
            try:
                if key in ("eq", "ne"):
                    ok = (a == b) == (key == "eq")
                else:
                    ok = {"gt": a > b, "gte": a >= b, "lt": a < b, "lte": a <= b}[key]
            except TypeError:
                raise UsageError(f"cannot compare {v!r} with {operand!r}") from None
            if not ok:
                return False
        return True
    if isinstance(condition, list):
        return norm(v) in {norm(c) for c in condition}
    if condition is None:
        return v is None
    return bool(norm(v) == norm(condition))


_OPS = {
    **{k: k for k in FILTER_OPS},
    ">=": "gte",
    "<=": "lte",
    ">": "gt",
    "<": "lt",
    "=": "eq",
    "!=": "ne",
    "<>": "ne",
}


def _equivalent_cypher(measure: str, keys: list[tuple[str, str, str]], parsed: list[Any]) -> str:
    """The Cypher that computes the same groups (for readers; graph_query can run it)."""
    tables = {t for t, _, _ in keys} | {t for (t, _, _), _ in parsed} | {"Dataset"}
    params: dict[str, Any] = {}
    conditions = [f"r.{measure} IS NOT NULL"]
    for n, ((_, _, expr), value) in enumerate(parsed):
        conditions.extend(_conditions(expr, value, f"f{n}", params))
    text = _match(tables) + " WHERE " + " AND ".join(conditions)
    for name, value in params.items():
        text = text.replace(f"${name}", json.dumps(value).replace('"', "'"))
    m = f"r.{measure}"
    groups = ", ".join(expr for _, _, expr in keys)
    return (
        f"{text} RETURN {groups}, count(*), count(DISTINCT d.id), avg({m}), percentileCont({m}, 0.5), "
        f"percentileCont({m}, 0.25), percentileCont({m}, 0.75), min({m}), max({m})"
    )


def _match(tables: set[str]) -> str:
    """The MATCH clause joining the runs to the dimension tables used."""
    if "AlgorithmFamily" in tables:
        tables = tables | {"Algorithm"}
    patterns = ["(r:Run)"] + [
        DIMENSIONS[t][1] for t in ("Algorithm", "AlgorithmFamily", "Dataset", "Task", "Date") if t in tables
    ]
    return "MATCH " + ", ".join(patterns)


def _conditions(expr: str, value: Any, name: str, params: dict[str, Any]) -> list[str]:
    if isinstance(value, list):
        params[name] = value
        return [f"{expr} IN ${name}"]
    if isinstance(value, dict):
        out = []
        for n, (op, operand) in enumerate(value.items()):
            key = str(op).lower().lstrip("$")
            symbol = FILTER_OPS.get(key) or (key.upper() if key in FILTER_OPS.values() else None)
            if symbol is None and key in (">=", "<=", ">", "<", "=", "<>", "!="):
                symbol = "<>" if key == "!=" else key
            if symbol is None:
                raise UsageError(f"unknown filter operator {op!r} (use {', '.join(FILTER_OPS)})")
            if symbol == "IN" and not isinstance(operand, list):
                raise UsageError("the 'in' filter operator needs a list")
            params[f"{name}_{n}"] = operand
            out.append(f"{expr} {symbol} ${name}_{n}")
        return out
    if value is None:
        return [f"{expr} IS NULL"]
    params[name] = value
    return [f"{expr} = ${name}"]
