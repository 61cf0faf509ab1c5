"""The OpenML star on the page's graph route (``GET /api/v1/packs/{pack}/graph``): the schema of
an OpenML pack, the star behind an aggregate answer (fact nodes with their run counts, the
algorithms, families, datasets, tasks and dates behind them), a member's runs; and a passage pack's
graph as it was. Real uvicorn on a loopback port, httpx, a copy of ``packs/amlb2019``; the counts
are checked against Cypher on the pack's store."""

from __future__ import annotations

import shutil
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.test_serve import QUESTION, running
from wikigr.pack.pack import open_pack
from wikigr.serve.app import create_app

AMLB = Path(__file__).resolve().parent.parent / "packs" / "amlb2019"
AGGREGATE = "Which algorithm family has the best mean AUC?"
STAR_KINDS = {"fact", "algorithm", "family", "dataset", "task", "date"}


@pytest.fixture(scope="module")
def amlb(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pack = tmp_path_factory.mktemp("star") / "amlb2019"
    shutil.copytree(AMLB, pack)
    return pack


@pytest.fixture(scope="module")
def url(amlb: Path, built_pack: Path) -> Iterator[str]:
    with running(create_app([amlb, built_pack])) as served:
        yield served


@pytest.fixture
def api(url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=url + "/api/v1", timeout=600) as client:
        yield client


def _rows(pack: Path, query: str, **params: Any) -> list[list[Any]]:
    with open_pack(pack).open_store() as store:
        return store.rows(query, params)


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    data = response.json()
    assert set(data) == {"error"} and "\n" not in data["error"]
    return str(data["error"])


def _checked(graph: dict[str, Any]) -> tuple[dict[str, dict[str, Any]], list[dict[str, Any]]]:
    """The graph's nodes by id and its edges, each edge between two of its nodes."""
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert len(nodes) == len(graph["nodes"]) and {n["kind"] for n in graph["nodes"]} <= STAR_KINDS
    assert all(e["source"] in nodes and e["target"] in nodes for e in graph["edges"])
    return nodes, graph["edges"]


def test_the_schema_before_a_question(api: httpx.Client, amlb: Path) -> None:
    graph = api.get("/packs/amlb2019/graph").json()
    nodes, edges = _checked(graph)
    assert graph["pack"] == "amlb2019" and graph["star"]["view"] == "schema" and not graph["truncated"]
    with open_pack(amlb).open_store() as store:
        stats = store.stats()
    rows = {n["label"]: n["rows"] for n in nodes.values()}
    assert rows == {
        "Run": stats["runs"],
        "Algorithm": stats["algorithms"],
        "AlgorithmFamily": stats["families"],
        "Dataset": stats["datasets"],
        "Task": stats["tasks"],
        "Date": stats["dates"],
    }
    assert rows["Run"] == 6442 and {n["kind"] for n in nodes.values()} == STAR_KINDS
    assert {(e["source"], e["target"]) for e in edges} == {
        ("table:Run", "table:Algorithm"),
        ("table:Run", "table:Dataset"),
        ("table:Run", "table:Task"),
        ("table:Run", "table:Date"),
        ("table:Algorithm", "table:AlgorithmFamily"),
        ("table:Dataset", "table:Task"),
    }


def test_the_star_behind_an_aggregate_answer(api: httpx.Client, amlb: Path) -> None:
    answer = api.post("/query", json={"pack": "amlb2019", "question": AGGREGATE}).json()
    (call,) = [c for c in answer["trace"]["tool_calls"] if c["tool"] == "aggregate_measures"]
    groups = call["output"]["groups"]
    assert [g["group"]["Algorithm.family"] for g in groups] == ["random_forest", "automl", "baseline"]

    graph = api.get("/packs/amlb2019/graph", params={"trace": answer["trace_id"]}).json()
    nodes, edges = _checked(graph)
    assert graph["star"] == {"view": "answer", "measure": "auc", "facts": 3}
    assert {n["kind"] for n in nodes.values()} == STAR_KINDS
    # one fact node per group the answer ranked: its run count and statistic, the source citing it
    facts = [n for n in graph["nodes"] if n["kind"] == "fact"]
    assert [(f["label"], f["runs"], f["value"]) for f in facts] == [
        (g["group"]["Algorithm.family"], g["count"], g["mean"]) for g in groups
    ]
    assert all(f["focus"] and f["statistic"] == "mean" and f["measure"] == "auc" for f in facts)
    for fact in facts:
        assert answer["sources"][fact["source"] - 1]["title"] == f"Algorithm.family = {fact['label']}"
        assert fact["best"]["run"] == groups[facts.index(fact)]["best_run"]["id"]

    # the algorithms behind each fact, their runs as Cypher counts them, in their family
    counted = _rows(
        amlb,
        "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm) WHERE r.auc IS NOT NULL "
        "RETURN a.family, a.id, count(*)",
    )
    by_fact = {f["label"]: f["id"] for f in facts}
    for family, algorithm, runs in counted:
        edge = [
            e for e in edges if e["source"] == by_fact[family] and e["target"] == f"algorithm:{algorithm}"
        ]
        if edge:
            assert edge[0]["kind"] == "used_algorithm" and edge[0]["runs"] == runs
    forest = [e for e in edges if e["source"] == by_fact["random_forest"] and e["kind"] == "used_algorithm"]
    assert {e["target"] for e in forest} == {
        "algorithm:RandomForest 0.19.2",
        "algorithm:TunedRandomForest 0.19.2",
    }
    assert sum(e["runs"] for e in forest) == facts[0]["runs"] == 460
    for edge in forest:
        assert (edge["target"], "family:random_forest", "belongs_to_family") in {
            (e["source"], e["target"], e["kind"]) for e in edges
        }
    assert {n["label"] for n in nodes.values() if n["kind"] == "family"} == {
        "random_forest",
        "automl",
        "baseline",
    }

    # the datasets: the fact's most-run ones, with their runs and best AUC as Cypher has them
    datasets = {
        (family, dataset): (runs, best)
        for family, dataset, runs, best in _rows(
            amlb,
            "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm), (r)-[:ON_DATASET]->(d:Dataset) "
            "WHERE r.auc IS NOT NULL RETURN a.family, d.id, count(*), max(r.auc)",
        )
    }
    for fact in facts:
        shown = [e for e in edges if e["source"] == fact["id"] and e["kind"] == "on_dataset"]
        assert 0 < len(shown) <= 8
        for edge in shown:
            dataset = edge["target"].removeprefix("dataset:")
            assert (edge["runs"], edge["best"]) == datasets[(fact["label"], dataset)]
        most = sorted(
            (runs for (family, _), (runs, _) in datasets.items() if family == fact["label"]), reverse=True
        )
        assert sorted((e["runs"] for e in shown), reverse=True) == most[: len(shown)]
    kinds = Counter(e["kind"] for e in edges)
    assert kinds["for_task"] and kinds["run_on_date"] and kinds["part_of_task"]
    assert all(n["runs"] > 0 for n in nodes.values() if n["kind"] != "family")

    # a smaller picture keeps the facts first
    small = api.get("/packs/amlb2019/graph", params={"trace": answer["trace_id"], "limit": 5}).json()
    assert len(small["nodes"]) == 5 and small["truncated"] and small["nodes"][0]["kind"] == "fact"


def test_explore_a_member(api: httpx.Client, amlb: Path) -> None:
    member = "algorithm:TPOT 0.9.6"
    graph = api.get("/packs/amlb2019/graph", params={"member": member, "measure": "auc"}).json()
    nodes, edges = _checked(graph)
    assert graph["star"] == {"view": "member", "measure": "auc", "member": member}
    assert [n["id"] for n in nodes.values() if n.get("focus")] == [member]
    ((runs, datasets),) = _rows(
        amlb,
        "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm {id: $a}), (r)-[:ON_DATASET]->(d:Dataset) "
        "WHERE r.auc IS NOT NULL RETURN count(*), count(DISTINCT d.id)",
        a="TPOT 0.9.6",
    )
    fact = nodes["fact:member"]
    assert (fact["runs"], fact["datasets"]) == (runs, datasets) and runs > 0
    shown = {e["target"] for e in edges if e["source"] == "fact:member" and e["kind"] == "on_dataset"}
    assert len(shown) == min(datasets, 24)
    assert (member, "family:automl", "belongs_to_family") in {
        (e["source"], e["target"], e["kind"]) for e in edges
    }
    # a family: its algorithms
    family = api.get("/packs/amlb2019/graph", params={"member": "family:random_forest"}).json()
    algorithms = {n["label"] for n in family["nodes"] if n["kind"] == "algorithm"}
    assert algorithms == {"RandomForest 0.19.2", "TunedRandomForest 0.19.2"}
    assert family["star"]["measure"] == "accuracy"  # the pack's measure when none is given

    refused = {
        "bogus:1": (400, "member must be KIND:ID"),
        "algorithm:nope": (404, "no algorithm 'nope' in this pack"),
        "date:1999": (404, "no date '1999'"),
    }
    for name, (status, message) in refused.items():
        assert message in _error(api.get("/packs/amlb2019/graph", params={"member": name}), status)
    for limit in (1, 2):  # the member first, then its runs
        small = api.get("/packs/amlb2019/graph", params={"member": member, "limit": limit}).json()
        assert [n["id"] for n in small["nodes"]] == [member, "fact:member"][:limit] and small["truncated"]
    wrong = api.get("/packs/amlb2019/graph", params={"member": member, "measure": "speed"})
    assert "speed" in _error(wrong, 400)


def test_refusals(api: httpx.Client) -> None:
    graph = "/packs/amlb2019/graph"
    assert "measure goes with member" in _error(api.get(graph, params={"measure": "auc"}), 400)
    assert "no trace 'nope'" in _error(api.get(graph, params={"trace": "nope"}), 404)
    assert "has no passage graph" in _error(api.get(graph, params={"chunk": "x"}), 400)
    assert "member is given once" in _error(api.get(graph, params={"member": ["a:1", "b:2"]}), 400)
    other = api.post("/query", json={"pack": "fixture", "question": QUESTION}).json()
    assert "is an answer of fixture, not of amlb2019" in _error(
        api.get(graph, params={"trace": other["trace_id"]}), 400
    )


def test_a_passage_pack_draws_its_passages_as_before(api: httpx.Client) -> None:
    answer = api.post("/query", json={"pack": "fixture", "question": QUESTION, "top_k": 2}).json()
    chunks = [s["chunk_id"] for s in answer["sources"]]
    around = api.get("/packs/fixture/graph", params={"chunk": chunks, "limit": 40}).json()
    assert {n["kind"] for n in around["nodes"]} == {"chunk", "article", "entity"} and "star" not in around
    # the graph of its answer (trace=ID) is the graph around its sources
    traced = api.get("/packs/fixture/graph", params={"trace": answer["trace_id"], "limit": 40}).json()
    assert traced == around
    # and of a search (its results)
    search = api.get("/search", params={"pack": "fixture", "q": QUESTION, "top_k": 2}).json()
    found = [r["chunk_id"] for r in search["results"]]
    searched = api.get("/packs/fixture/graph", params={"trace": search["trace_id"], "limit": 40}).json()
    assert searched == api.get("/packs/fixture/graph", params={"chunk": found, "limit": 40}).json()
    assert "name a chunk or an entity" in _error(api.get("/packs/fixture/graph"), 400)
    for params in ({"member": "algorithm:x"}, {"chunk": chunks, "measure": "auc"}):
        assert "for packs without passages" in _error(api.get("/packs/fixture/graph", params=params), 400)


def test_the_pack_tab_of_an_openml_pack(api: httpx.Client, amlb: Path) -> None:
    """The Pack tab's route on an OpenML pack: its info, no entity graph (its store has no Entity
    table to ask)."""
    info = api.get("/packs/amlb2019")
    assert info.status_code == 200, info.text
    assert info.json()["entity_graph"] is False and info.json()["name"] == "amlb2019"
