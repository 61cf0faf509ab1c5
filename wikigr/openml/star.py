"""The Kimball star of an OpenML pack, drawn: nodes and edges for the Graph tab of ``wikigr
serve``, in the shape of the passage graph (:mod:`wikigr.serve.graph`), asked through the pack
kind (:meth:`wikigr.pack.kind.PackKind.picture`).

Three pictures:

- **the schema** (before a question): the fact table ``Run``, the dimensions ``Algorithm``,
  ``Dataset``, ``Task`` and ``Date`` and the outrigger ``AlgorithmFamily``, each with its row
  count, joined by the rel tables;
- **an answer**: one fact node per group its ``aggregate_measures`` calls ranked — its run count,
  the statistic, the best run: counts, never a node per run — joined to the dimension members its
  runs used (the algorithms, datasets, tasks and dates with the most runs, up to :data:`CAPS`
  each), the algorithms to their families and the datasets to their tasks; and the members a
  ``semantic_search`` of the answer found;
- **a member** (explore): the runs of one algorithm, family, dataset, task or date as one fact
  node, joined to the members of the other dimensions they used (up to :data:`EXPLORE` times the
  caps).

The numbers come from the answer's own tool, ``aggregate_measures``, with the group's values added
to the call's filters: a fact's members are exactly its runs'. Node ids: ``fact:CALL:GROUP``
(``fact:member`` when exploring), ``algorithm:ID``, ``family:NAME``, ``dataset:ID``, ``task:ID``,
``date:YYYYMMDD`` and ``table:NAME`` (the schema).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from wikigr.errors import PackNotFoundError, UsageError
from wikigr.openml.answer import openml_url
from wikigr.openml.model import LOWER_IS_BETTER, measure_name
from wikigr.openml.tool_specs import attribute
from wikigr.openml.tools import OpenMLTools
from wikigr.pack.picture import Picture

#: A node's kind for each table of the star.
KINDS = {
    "Run": "fact",
    "Algorithm": "algorithm",
    "AlgorithmFamily": "family",
    "Dataset": "dataset",
    "Task": "task",
    "Date": "date",
}
TABLES = {kind: table for table, kind in KINDS.items()}
#: The rel from a run to a member of each dimension (an edge's kind).
RELS = {"Algorithm": "used_algorithm", "Dataset": "on_dataset", "Task": "for_task", "Date": "run_on_date"}
#: The members drawn per fact, per dimension (those with the most runs).
CAPS = {"Algorithm": 6, "Dataset": 8, "Task": 4, "Date": 3}
EXPLORE = 3  # a member's neighbours: this many times the caps
MAX_FACTS = 12  # fact nodes of one answer
#: The schema's edges: the rel tables, each (from, to, kind).
SCHEMA_EDGES = (
    ("Run", "Algorithm", "used_algorithm"),
    ("Run", "Dataset", "on_dataset"),
    ("Run", "Task", "for_task"),
    ("Run", "Date", "run_on_date"),
    ("Algorithm", "AlgorithmFamily", "belongs_to_family"),
    ("Dataset", "Task", "part_of_task"),
)
#: ``Store.stats()``'s count of each table.
COUNTS = {
    "Run": "runs",
    "Algorithm": "algorithms",
    "AlgorithmFamily": "families",
    "Dataset": "datasets",
    "Task": "tasks",
    "Date": "dates",
}


class Star:
    """The pictures of one OpenML store (its ``tools``); ``site``: where its ids are looked at."""

    def __init__(self, tools: OpenMLTools, site: str, measure: str, limit: int) -> None:
        self.tools = tools
        self.site = site
        self.measure = measure  # the pack's: a member's runs are counted with it
        self.picture = Picture(limit)

    def _node(self, node_id: str, kind: str, **data: Any) -> bool:
        """:meth:`Picture.node` without the fields that say nothing (None, "")."""
        return self.picture.node(
            node_id, kind, **{k: v for k, v in data.items() if v is not None and v != ""}
        )

    def _drawn(self, **star: Any) -> dict[str, Any]:
        """The picture, with what it shows (``star``: its view, measure...)."""
        known = {key: value for key, value in star.items() if value is not None}
        return self.picture.to_json(entity_graph=False, star=known)

    # -- the schema ----------------------------------------------------------------------------

    def schema(self, why: str | None = None) -> dict[str, Any]:
        """The six tables with their row counts, joined by the rel tables."""
        counts = self.tools.store.stats()
        for table, kind in KINDS.items():
            self._node(f"table:{table}", kind, label=table, rows=counts[COUNTS[table]], table=True)
        for a, b, kind in SCHEMA_EDGES:
            self.picture.edge(f"table:{a}", f"table:{b}", kind)
        return self._drawn(view="schema", why=why)

    # -- an answer -----------------------------------------------------------------------------

    def answer(self, answer: Mapping[str, Any]) -> dict[str, Any]:
        """The star behind ``answer`` (an answer's JSON with its trace); the schema when its tools
        named no runs or members."""
        calls = (answer.get("trace") or {}).get("tool_calls") or []
        sources = [str(s.get("title", "")) for s in answer.get("sources") or answer.get("results") or []]
        facts: list[tuple[str, dict[str, Any], dict[str, Any], int | None]] = []
        hits: list[dict[str, Any]] = []
        for c, call in enumerate(calls):
            out = call.get("output")
            if not isinstance(out, dict):
                continue
            if call.get("tool") == "aggregate_measures":
                for g, group in enumerate(out.get("groups") or []):
                    facts.append((f"fact:{c}:{g}", out, group, _cited(sources, out, group, c)))
            elif call.get("tool") == "semantic_search":
                hits.extend(out.get("hits") or [])
        if not facts and not hits:
            return self.schema(why="no aggregate or search in the answer")
        measures = []
        for node_id, out, group, cited in facts[:MAX_FACTS]:
            measures.append(out["measure"])
            self._fact(node_id, out, group, cited)
        for node_id, out, group, _ in facts[:MAX_FACTS]:
            filters = {**_canonical(out.get("filters") or {}), **group["group"]}
            self._members(node_id, out["measure"], filters, CAPS, skip=None)
        for hit in hits:
            table = str(hit.get("table"))
            if table in RELS or table == "AlgorithmFamily":
                self._member(table, hit.get("id"), focus=True, score=hit.get("score"))
        self._outriggers()
        measure = measures[0] if measures else self.measure
        return self._drawn(view="answer", measure=measure, facts=len(facts[:MAX_FACTS]))

    def _fact(
        self,
        node_id: str,
        out: dict[str, Any],
        group: dict[str, Any],
        cited: int | None,
        label: str | None = None,
    ) -> None:
        """A fact node: a group of runs (``group``, of the ``aggregate_measures`` result ``out``),
        labelled by its values unless ``label`` is given (then it is not the focus)."""
        measure, statistic = out["measure"], out["statistic"]
        best = group.get("best_run") or {}
        self._node(
            node_id,
            "fact",
            label=label or " · ".join(str(v) for v in group["group"].values()),
            focus=label is None,
            group=group["group"],
            filters=out.get("filters") or {},
            measure=measure,
            statistic=statistic,
            value=group.get(statistic),
            runs=group["count"],
            datasets=group.get("datasets"),
            mean=group.get("mean"),
            median=group.get("median"),
            best=(
                {"run": best["id"], "value": best.get(measure), "url": openml_url(self.site, "Run", best)}
                if best
                else None
            ),
            source=cited,
        )

    # -- a member and its neighbours -----------------------------------------------------------

    def explore(self, member: str, measure: str | None) -> dict[str, Any]:
        """The runs of ``member`` (``KIND:ID``: algorithm, family, dataset, task or date) as one
        fact, with the members of the other dimensions they used."""
        kind, _, ident = member.partition(":")
        table = TABLES.get(kind)
        if table is None or table == "Run" or not ident:
            kinds = ", ".join(k for k in TABLES if k != "fact")
            raise UsageError(f"member must be KIND:ID, KIND one of {kinds}, not {member[:80]!r}")
        if measure is not None:
            try:
                self.measure = measure_name(measure)
            except ValueError as exc:
                raise UsageError(str(exc)) from None
        key: Any = ident
        if table == "AlgorithmFamily":
            known = {row["family"] for row in self.tools.members("Algorithm").values()}
            where = "AlgorithmFamily.name"
        else:
            if table == "Date":
                key = int(ident) if ident.isdigit() else ident
            known = set(self.tools.members(table))
            where = f"{table}.id"
        if key not in known:
            raise PackNotFoundError(f"no {kind} '{ident[:80]}' in this pack")
        filters = {where: key}
        out = self.tools.aggregate_measures(
            group_by=[where], measure=self.measure, filters=filters, statistic="count"
        )
        focus = self._member(table, key, focus=True)
        fact = "fact:member"
        group = out["groups"][0] if out["groups"] else {"group": {where: key}, "count": 0}
        label = self.picture.nodes[focus]["label"] if focus else str(key)
        self._fact(fact, out, group, None, label=label)
        if table in RELS:
            self.picture.edge(fact, focus, RELS[table], runs=group["count"])
        caps = {t: n * EXPLORE for t, n in CAPS.items()}
        self._members(fact, self.measure, filters, caps, skip=table)
        self._outriggers()
        return self._drawn(view="member", measure=self.measure, member=member)

    def _members(
        self, fact: str, measure: str, filters: dict[str, Any], caps: Mapping[str, int], skip: str | None
    ) -> None:
        """The members of each dimension the fact's runs used, most runs first, joined to it."""
        better_low = measure in LOWER_IS_BETTER
        for table, cap in caps.items():
            if table == skip:
                continue
            out = self.tools.aggregate_measures(
                group_by=[f"{table}.id"], measure=measure, filters=filters, statistic="count", limit=cap
            )
            for group in out["groups"]:
                best = group["min"] if better_low else group["max"]
                ident = group["group"][f"{table}.id"]
                node = self._member(table, ident, runs=group["count"], best=best, measure=measure)
                if node:
                    self.picture.edge(fact, node, RELS[table], runs=group["count"], best=best)

    def _member(
        self,
        table: str,
        ident: Any,
        focus: bool = False,
        runs: int | None = None,
        best: float | None = None,
        measure: str | None = None,
        score: float | None = None,
    ) -> str:
        """Add the node of a member, or add to it: its ``runs`` in this picture, its ``best``
        ``measure``, its ``score`` (a search's). Its id, or "" when the picture is full."""
        if table == "AlgorithmFamily":
            node_id = f"family:{ident}"
            algorithms = self.tools.members("Algorithm").values()
            paradigms = {a["paradigm"] for a in algorithms if a["family"] == ident}
            data: dict[str, Any] = {
                "label": str(ident),
                "type": next(iter(paradigms)) if len(paradigms) == 1 else None,
                "filter": f"Algorithm.family = {ident}",
            }
        else:
            row = self.tools.members(table).get(ident, {"id": ident})
            node_id = f"{KINDS[table]}:{ident}"
            data = {**_describe(table, row), "filter": f"{table}.id = {ident}"}
            data["url"] = openml_url(self.site, table, row) or None
            if table == "Algorithm":
                data["family"] = row.get("family")
        existing = self.picture.nodes.get(node_id)
        if existing is None:
            if not self._node(node_id, KINDS[table], focus=focus or None, **data):
                return ""
            existing = self.picture.nodes[node_id]
        if runs is not None:
            existing["runs"] = existing.get("runs", 0) + runs
        if best is not None and measure is not None:
            before = existing.get("best") if existing.get("measure") == measure else None
            low = measure in LOWER_IS_BETTER
            existing["best"] = best if before is None else (min if low else max)(before, best)
            existing["measure"] = measure
        if score is not None:
            existing["score"] = score
        return node_id

    def _outriggers(self) -> None:
        """Each algorithm drawn to its family, each dataset drawn to its tasks drawn."""
        for node in list(self.picture.nodes.values()):
            if node["kind"] == "algorithm" and node.get("family") and not node.get("table"):
                family = self._member("AlgorithmFamily", node["family"])
                if family:
                    self.picture.edge(node["id"], family, "belongs_to_family")
        for dataset, task in self.tools.dataset_tasks():
            self.picture.edge(f"dataset:{dataset}", f"task:{task}", "part_of_task")


def _describe(table: str, row: Mapping[str, Any]) -> dict[str, Any]:
    """A member's label and what its node shows of it."""
    ident = row.get("id")
    if table == "Algorithm":
        name, version = row.get("name") or str(ident), row.get("version")
        label = f"{name} {version}" if version and not str(name).endswith(str(version)) else name
        return {"label": label, "type": row.get("library")}
    if table == "Dataset":
        return {
            "label": row.get("name") or str(ident),
            "rows": row.get("rows"),
            "features": row.get("features"),
            "classes": row.get("classes"),
        }
    if table == "Task":
        task_id = row.get("task_id")
        return {"label": str(task_id) if task_id is not None else str(ident), "type": row.get("type")}
    return {"label": str(row.get("date") or ident)}  # Date


def _canonical(filters: Mapping[str, Any]) -> dict[str, Any]:
    """Filters keyed by ``Table.attribute`` (a shorthand such as ``family`` spelled out)."""
    out = {}
    for name, value in filters.items():
        table, attr, _ = attribute(name)
        out[f"{table}.{attr}"] = value
    return out


def _cited(sources: list[str], out: Mapping[str, Any], group: Mapping[str, Any], call: int) -> int | None:
    """The number of the answer's source that cites the group: the rules cite it by its group,
    Claude by its tool call."""
    label = " / ".join(str(v) for v in group["group"].values())
    for title in (f"{' × '.join(out['group_by'])} = {label}", f"aggregate_measures [{call + 1}]"):
        if title in sources:
            return sources.index(title) + 1
    return None


def picture(
    tools: OpenMLTools,
    site: str,
    pack_measure: str,
    answer: Mapping[str, Any] | None,
    member: str | None,
    measure: str | None,
    limit: int,
) -> dict[str, Any]:
    """The picture asked for: a ``member``'s neighbours (their runs with ``measure``, default the
    pack's ``pack_measure``), the star behind an ``answer``, or the schema (neither)."""
    star = Star(tools, site, pack_measure, limit)
    if member is not None:
        return star.explore(member, measure)
    if measure is not None:
        raise UsageError("measure goes with member (the measure a member's runs are counted with)")
    if answer is not None:
        return star.answer(answer)
    return star.schema()
