"""The three tools. Aggregates are checked against values computed here, straight from the export
files with the csv and statistics modules — never through wikigr's own code."""

from __future__ import annotations

import csv
import json
import statistics
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.openml.conftest import AMLB, QUALITIES, STUDY1
from wikigr.embed import get_embedder
from wikigr.errors import StoreError, UsageError
from wikigr.openml.tools import OpenMLTools
from wikigr.pack.cypher import check_read_only
from wikigr.pack.pack import open_pack


@pytest.fixture
def tools(openml_pack: Path) -> Iterator[OpenMLTools]:
    store = open_pack(openml_pack).open_store()
    try:
        yield OpenMLTools(store, get_embedder)
    finally:
        store.close()


# -- independent computations over the source rows ------------------------------------------------


def amlb() -> list[dict[str, str]]:
    with AMLB.open(newline="") as handle:
        return list(csv.DictReader(handle))


def arff(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().upper() == "@DATA")
    return [line.split(",") for line in lines[start + 1 :] if line.strip() and not line.startswith("%")]


def summary(values: list[float], datasets: set[str]) -> dict[str, Any]:
    p25, _, p75 = (
        statistics.quantiles(values, n=4, method="inclusive") if len(values) > 1 else [values[0]] * 3
    )
    return {
        "count": len(values),
        "datasets": len(datasets),
        "mean": statistics.fmean(values),
        "median": statistics.median(values),
        "p25": p25,
        "p75": p75,
        "min": min(values),
        "max": max(values),
    }


def expected_groups(rows: list[tuple[str, float, str]]) -> dict[str, dict[str, Any]]:
    """(group, value, dataset) rows -> the statistics of each group."""
    values: dict[str, list[float]] = defaultdict(list)
    datasets: dict[str, set[str]] = defaultdict(set)
    for group, value, dataset in rows:
        values[group].append(value)
        datasets[group].add(dataset)
    return {g: summary(values[g], datasets[g]) for g in values}


def check(output: dict[str, Any], expected: dict[str, dict[str, Any]], attribute: str) -> None:
    got = {str(g["group"][attribute]): g for g in output["groups"]}
    assert set(got) == set(expected)
    for name, stats in expected.items():
        for key, value in stats.items():
            assert got[name][key] == pytest.approx(value, rel=1e-12, abs=1e-12), (name, key)
    assert output["group_count"] == len(expected)
    assert output["runs"] == sum(s["count"] for s in expected.values())


# -- aggregate_measures ---------------------------------------------------------------------------


def test_accuracy_by_framework_equals_the_csv(tools: OpenMLTools) -> None:
    rows = [(r["framework"], float(r["acc"]), r["dataset_name"]) for r in amlb() if r["acc"]]
    names = sorted({r["dataset_name"] for r in amlb()})  # the pack also holds the ARFF's runs
    result = tools.call(
        "aggregate_measures",
        {"group_by": ["Algorithm.name"], "measure": "accuracy", "filters": {"Dataset.name": names}},
    )
    assert result.error is None
    check(result.output, expected_groups(rows), "Algorithm.name")
    medians = [g["median"] for g in result.output["groups"]]
    assert medians == sorted(medians, reverse=True)  # best first


def test_filter_by_dataset_and_lower_is_better(tools: OpenMLTools) -> None:
    rows = [
        (r["framework"], float(r["logloss"]), r["dataset_name"])
        for r in amlb()
        if r["logloss"] and r["dataset_name"] == "credit-g"
    ]
    output = tools.aggregate_measures(
        ["Algorithm.name"], measure="log_loss", filters={"Dataset.name": "credit-g"}
    )
    check(output, expected_groups(rows), "Algorithm.name")
    assert output["better"] == "lower"
    medians = [g["median"] for g in output["groups"]]
    assert medians == sorted(medians)  # lowest log-loss first
    for group in output["groups"]:  # the best run is one whose value is the group's minimum
        run = next(r for r in amlb() if f"amlb2019_sample:{r['run_key']}" == group["best_run"]["id"])
        assert float(run["logloss"]) == group["min"] == group["best_run"]["log_loss"]
        assert group["best_run"]["source"].startswith("amlb2019_sample.csv:")


def test_imbalanced_datasets_from_the_qualities_file(tools: OpenMLTools) -> None:
    # Imbalance = majority / minority class size (columns 5 and 6); >= 5 or an empty class: imbalanced.
    imbalanced = set()
    for q in arff(QUALITIES):
        majority, minority = float(q[5]), float(q[6])
        if minority == 0 or majority / minority >= 5:
            imbalanced.add(q[0])
    assert imbalanced == {"2", "11"}
    rows = [
        (r[2].split("_", 1)[1], float(r[3]), r[0])
        for r in arff(STUDY1)
        if r[4] == "ok" and r[0] in imbalanced
    ]
    output = tools.aggregate_measures(
        ["Algorithm.name"], filters={"Dataset.imbalance_bucket": "imbalanced"}, limit=100
    )
    check(output, expected_groups(rows), "Algorithm.name")


def test_family_medians_on_classification_tasks(tools: OpenMLTools) -> None:
    # The families of the sample's flows, written out by hand (docs/openml.md's rule table).
    family = {
        "autosklearn": "automl",
        "H2OAutoML": "automl",
        "TPOT": "automl",
        "AutoWEKA": "automl",
        "oboe": "automl",
        "RandomForest": "random_forest",
        "TunedRandomForest": "random_forest",
        "constantpredictor_enc": "baseline",
        "weka.MultiBoostAB_DecisionStump": "boosting",
        "weka.RealAdaBoost_DecisionStump": "boosting",
        "weka.RacedIncrementalLogitBoost_DecisionStump": "boosting",
        "weka.RandomSubSpace_REPTree": "bagging",
        "weka.RotationForest_PrincipalComponents_J48": "random_forest",
        "weka.FURIA": "rule_based",
        "weka.ExtraTree": "decision_tree",
        "weka.CHIRP": "other",
    }
    rows = [(family[r["framework"]], float(r["acc"]), r["dataset_name"]) for r in amlb() if r["acc"]]
    rows += [
        (family[r[2].split("_", 1)[1]], float(r[3]), "data:" + r[0]) for r in arff(STUDY1) if r[4] == "ok"
    ]
    output = tools.aggregate_measures(
        ["Algorithm.family"], filters={"Task.type": "Supervised Classification"}, statistic="median"
    )
    expected = expected_groups(rows)
    check(output, expected, "Algorithm.family")
    best = max(expected, key=lambda g: expected[g]["median"])
    assert output["groups"][0]["group"]["Algorithm.family"] == best


def test_group_by_date_and_filter_on_run_columns(tools: OpenMLTools) -> None:
    rows = [
        (r["utc"][:7], float(r["acc"]), r["dataset_name"]) for r in amlb() if r["acc"] and int(r["fold"]) >= 5
    ]
    output = tools.aggregate_measures(
        ["Date.year", "Date.month"], filters={"Run.fold": {"gte": 5}}, limit=100
    )
    got = {f"{g['group']['Date.year']}-{g['group']['Date.month']:02d}": g for g in output["groups"]}
    expected = expected_groups(rows)
    assert set(got) == set(expected)
    for month, stats in expected.items():
        assert got[month]["count"] == stats["count"]
        assert got[month]["median"] == pytest.approx(stats["median"])


def test_bad_arguments_are_tool_errors_not_crashes(tools: OpenMLTools) -> None:
    assert "unknown attribute" in (
        tools.call("aggregate_measures", {"group_by": ["Dataset.colour"]}).error or ""
    )
    assert "unknown measure" in (
        tools.call("aggregate_measures", {"group_by": ["family"], "measure": "happiness"}).error or ""
    )
    bad_op = tools.call(
        "aggregate_measures", {"group_by": ["family"], "filters": {"Dataset.rows": {"approx": 3}}}
    )
    assert "unknown filter operator" in (bad_op.error or "")
    assert "bad arguments" in (tools.call("aggregate_measures", {"groupby": ["family"]}).error or "")
    assert "unknown tool" in (tools.call("drop_everything", {}).error or "")
    empty = tools.aggregate_measures(["family"], filters={"Dataset.name": "no such dataset"})
    assert empty["groups"] == [] and empty["runs"] == 0


# -- graph_query ----------------------------------------------------------------------------------

REFUSED = [
    "CREATE (:Run {id: 'x'})",
    "MATCH (r:Run) SET r.accuracy = 1.0",
    "MATCH (r:Run) DELETE r",
    "MATCH (r:Run) DETACH DELETE r",
    "MERGE (a:Algorithm {id: 'x'})",
    "MATCH (r:Run) REMOVE r.accuracy",
    "DROP TABLE Run",
    "ALTER TABLE Run ADD x INT64",
    "COPY Run FROM 'runs.csv'",
    "LOAD FROM '/etc/passwd' RETURN *",
    "INSTALL vector",
    "LOAD EXTENSION vector",
    "ATTACH 'other.db' AS other",
    "EXPORT DATABASE '/tmp/x'",
    "IMPORT DATABASE '/tmp/x'",
    "CALL threads=4",
    "CALL clear_warnings() RETURN *",
    "CALL project_graph('g', ['Run'], []) RETURN *",
    "CHECKPOINT",
    "BEGIN TRANSACTION",
    "RETURN nextval('seq')",
    "MATCH (r:Run) RETURN r.id; MATCH (r:Run) DELETE r",
    "match (r:Run) /* sneaky */ create (:Run {id: 'y'})",
    "MATCH (r:Run) WHERE r.id = 'unterminated RETURN r",
]


@pytest.mark.parametrize("query", REFUSED)
def test_writes_are_refused(tools: OpenMLTools, query: str) -> None:
    result = tools.call("graph_query", {"query": query})
    assert result.error is not None and result.error.startswith("refused"), result.error
    with pytest.raises(UsageError, match="refused"):
        check_read_only(query)


def test_reads_are_allowed_and_strings_comments_are_not_keywords(tools: OpenMLTools) -> None:
    for query in (
        "MATCH (d:Dataset) WHERE d.name = 'CREATE; DELETE' RETURN count(d)",
        "MATCH (d:Dataset) // delete nothing\nRETURN count(d);",
        "CALL show_tables() RETURN *",
        "MATCH (a:Algorithm) WHERE a.name CONTAINS 'Set' RETURN a.setup_id_missing_is_fine",
    ):
        check_read_only(query)
    out = tools.graph_query(
        "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm) WHERE a.name = 'TPOT' RETURN count(r) AS n"
    )
    assert out["columns"] == ["n"] and out["rows"] == [[sum(1 for r in amlb() if r["framework"] == "TPOT")]]
    node = tools.graph_query("MATCH (d:Dataset) WHERE d.name = 'credit-g' RETURN d")["rows"][0][0]
    assert node["label"] == "Dataset" and "embedding" not in node and "_ID" not in node
    many = tools.graph_query("MATCH (r:Run) RETURN r.id", max_rows=3)
    assert many["row_count"] == 3 and many["truncated"]


def test_the_read_only_store_refuses_writes_the_guard_would_miss(openml_pack: Path) -> None:
    with open_pack(openml_pack).open_store() as store:
        assert store.read_only
        with pytest.raises(StoreError, match="read-only"):
            store.rows("CREATE (:AlgorithmFamily {id: 'sneaky', name: 'sneaky'})")


# -- semantic_search ------------------------------------------------------------------------------


def test_semantic_search_finds_dimensions_by_meaning(tools: OpenMLTools) -> None:
    hits = tools.semantic_search("credit-g dataset")["hits"]
    assert hits[0]["table"] == "Dataset" and hits[0]["name"] == "credit-g"
    families = tools.semantic_search("boosted ensembles of decision stumps", tables=["AlgorithmFamily"], k=3)
    assert families["hits"][0]["id"] == "boosting"
    assert "unknown table" in (tools.call("semantic_search", {"text": "x", "tables": ["Run"]}).error or "")


# -- wikigr cypher ----------------------------------------------------------------------------------


def test_cli_cypher(capsys: pytest.CaptureFixture[str], openml_pack: Path) -> None:
    query = "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm) RETURN a.family AS family, count(*) AS n "
    query += "ORDER BY n DESC"
    code, out, err = cli(capsys, "cypher", str(openml_pack), query, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["columns"] == ["family", "n"]
    assert sum(n for _, n in data["rows"]) == len(amlb()) + len(arff(STUDY1))
    code, out, _ = cli(capsys, "cypher", str(openml_pack), query)
    assert code == 0 and "random_forest" in out

    code, _, err = cli(capsys, "cypher", str(openml_pack), "MATCH (r:Run) DETACH DELETE r")
    assert code == 2
    assert_one_error(err, "refused: DETACH is not allowed")
    code, _, err = cli(capsys, "cypher", str(openml_pack), "MATCH (r:Run RETURN r")
    assert code == 2
    assert_one_error(err, "bad Cypher: Parser exception")
    code, _, err = cli(capsys, "cypher", "no-such-pack", "MATCH (r:Run) RETURN r")
    assert code == 2
    assert_one_error(err, "unknown pack")
