"""The OpenML REST client against a local server that speaks OpenML's API (tests/openml/openml_server.py):
paging, "No results" (HTTP 412), 5xx with retries, truncated bodies, the response cache and resume."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.httpserver import closed_port_url
from tests.openml.openml_server import FLOWS, MALFORMED_RUN, RUNS_PER_PAIR, TASKS, OpenMLServer, load
from wikigr.errors import BuildError, UsageError
from wikigr.openml.build import build_openml_pack
from wikigr.openml.client import OpenMLClient, OpenMLError, error_fields
from wikigr.openml.fetch import ApiSelection, parse_task_ids
from wikigr.pack.pack import open_pack

ALL_TASKS = list(TASKS)


@pytest.fixture
def openml_server() -> Iterator[OpenMLServer]:
    with OpenMLServer() as server:
        yield server
    assert not server.errors, server.errors


def selection(server: OpenMLServer, **overrides: Any) -> ApiSelection:
    options: dict[str, Any] = {
        "base_url": server.base_url,
        "tasks": ALL_TASKS,
        "backoff": 0.001,
        "retries": 3,
    }
    options.update(overrides)
    return ApiSelection(**options)


def runs_of(path: Path) -> list[list[Any]]:
    with open_pack(path).open_store() as store:
        return store.rows(
            "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm), (r)-[:ON_DATASET]->(d:Dataset), "
            "(r)-[:FOR_TASK]->(t:Task) RETURN r.run_id, r.accuracy, r.auc, r.runtime_s, a.flow_id, "
            "d.data_id, t.task_id ORDER BY r.run_id"
        )


def test_build_from_the_api(openml_server: OpenMLServer, tmp_path: Path) -> None:
    report = build_openml_pack("api", api=selection(openml_server), out=tmp_path / "api")
    expected = [r for r in openml_server.runs]
    rows = runs_of(report.path)
    assert [r[0] for r in rows] == [r["run_id"] for r in expected]
    by_id = {r["run_id"]: r for r in expected}
    for run_id, accuracy, auc, runtime, flow, data, task in rows:
        source = by_id[run_id]
        assert accuracy == source["predictive_accuracy"] and auc == source["area_under_roc_curve"]
        assert runtime == pytest.approx(source["usercpu_time_millis"] / 1000)
        assert (flow, data, task) == (source["flow_id"], source["data_id"], source["task_id"])
    # the run whose value is not a number is reported, not dropped silently
    record = report.manifest.openml
    assert record is not None and record.origin == "api" and record.malformed_rows == 1
    assert record.malformed_examples[0].endswith(f"run {MALFORMED_RUN}: value 'n/a' is not a number")
    assert any("/data/qualities/20: HTTP 412" in note for note in record.notes)

    with open_pack(report.path).open_store() as store:
        flows = store.rows(
            "MATCH (a:Algorithm) RETURN a.flow_id, a.name, a.version, a.family ORDER BY a.flow_id"
        )
        assert flows == [
            [3, "weka.ZeroR", "Weka_3.7.5", "baseline"],
            [100, "weka.J48", "Weka_3.7.12", "decision_tree"],
            [6742, "weka.BayesNet", "Weka_3.9.0", "bayesian"],
        ]
        data = store.rows(
            "MATCH (d:Dataset) RETURN d.data_id, d.name, d.rows, d.imbalance_bucket ORDER BY d.data_id"
        )
        assert data == [
            [1, "anneal", 898, "imbalanced"],
            [2, "anneal", 898, "imbalanced"],
            [20, "diabetes", None, "unknown"],
        ]
        tasks = store.rows(
            "MATCH (t:Task) RETURN t.task_id, t.type, t.target, t.estimation, t.measure ORDER BY t.task_id"
        )
        assert tasks[0] == [
            1,
            "Supervised Classification",
            "class",
            "10-fold crossvalidation",
            "predictive_accuracy",
        ]
        days = store.rows("MATCH (d:Date) RETURN d.id ORDER BY d.id")
        assert days == [[20141006], [20141007], [20141008]]
    assert report.requests > 0 and report.cached == 0


def test_paging_reads_every_page_and_stops_at_no_results(openml_server: OpenMLServer, tmp_path: Path) -> None:
    runs = len(TASKS) * len(FLOWS) * RUNS_PER_PAIR + 1  # + the malformed one
    build_openml_pack("paged", api=selection(openml_server, page_size=10), out=tmp_path / "paged")
    listing = "/evaluation/list/function/predictive_accuracy/task/1,1882,119"
    offsets = sorted(
        int(r.path.rsplit("/", 1)[1])
        for r in openml_server.requests
        if r.path.startswith(f"/api/v1/json{listing}")
    )
    assert offsets == list(range(0, runs, 10))  # 28 evaluations: pages at 0, 10, 20 (a short one)

    # a listing whose last page is full asks once more and gets OpenML's 412 "No results"
    with OpenMLClient(openml_server.base_url) as client:
        from wikigr.openml.client import paged

        items = paged(client, "/evaluation/list/function/predictive_accuracy/task/119", page_size=9)
        assert len(items) == 9
        assert openml_server.api_hits("/task/119/limit/9/offset/9") == 1
        with pytest.raises(OpenMLError, match=r"HTTP 412 \(code 362: No qualities found\)"):
            client.get("/data/qualities/20")


def test_caps_per_dataset_and_on_datasets(openml_server: OpenMLServer, tmp_path: Path) -> None:
    report = build_openml_pack(
        "capped", api=selection(openml_server, max_runs_per_dataset=4), out=tmp_path / "capped"
    )
    assert report.manifest.stats.runs == 3 * 4  # four per task (the malformed evaluation comes last)
    first = build_openml_pack(
        "first",
        api=selection(openml_server, tasks=[], max_datasets=2),
        out=tmp_path / "first",
    )
    assert openml_server.api_hits("/task/list/type/1/status/active") == 1
    assert {r[6] for r in runs_of(first.path)} == {1, 119}  # the first two tasks of the listing
    study = build_openml_pack(
        "study", api=selection(openml_server, tasks=[], study=146), out=tmp_path / "study"
    )
    assert {r[6] for r in runs_of(study.path)} == set(TASKS)
    assert load("study_get_suite_final.xml")["study"]["id"] == "146"


def test_5xx_and_truncated_bodies_are_retried(openml_server: OpenMLServer, tmp_path: Path) -> None:
    openml_server.fail["/flow/100"] = 2
    openml_server.truncate["/data/1"] = 1
    openml_server.fail["/evaluation/list/function/predictive_accuracy"] = 1
    report = build_openml_pack("retried", api=selection(openml_server), out=tmp_path / "retried")
    assert report.manifest.stats.runs == len(openml_server.runs)
    assert openml_server.hits("/api/v1/json/flow/100") == 3
    assert openml_server.hits("/api/v1/json/data/1") == 2


def test_an_error_body_no_json_parser_reads_has_no_fields() -> None:
    """json refuses these with a RecursionError and a plain ValueError, not a JSONDecodeError."""
    assert error_fields(b'{"error": {"code": "412", "message": "No results"}}') == ("412", "No results")
    assert error_fields(b"[" * 100_000) == (None, "")
    assert error_fields(b'{"error": {"code": ' + b"9" * 5000 + b"}}") == (None, "")


def test_a_failed_build_resumes_from_the_cache(openml_server: OpenMLServer, tmp_path: Path) -> None:
    openml_server.broken.add("/flow/6742")
    with pytest.raises(
        BuildError, match=r"failed after 4 attempts.*/flow/6742: HTTP 500.*run the same command"
    ):
        build_openml_pack("resume", api=selection(openml_server), out=tmp_path / "resume")
    assert not (tmp_path / "resume").exists()
    assert (tmp_path / ".resume.partial" / "openml-cache").is_dir()
    listed = openml_server.api_hits("/evaluation/list")
    openml_server.broken.clear()
    report = build_openml_pack("resume", api=selection(openml_server), out=tmp_path / "resume")
    assert openml_server.api_hits("/evaluation/list") == listed  # every listing came from the cache
    assert report.cached >= listed and report.manifest.stats.runs == len(openml_server.runs)
    assert not (tmp_path / ".resume.partial").exists()


@pytest.mark.parametrize("xml", [False, True], ids=["json-error", "xml-error"])
def test_an_unknown_study_is_one_clear_line(
    capsys: pytest.CaptureFixture[str], openml_server: OpenMLServer, wikigr_home: Path, xml: bool
) -> None:
    """OpenML answers an unknown study with HTTP 412, code 601 "Unknown study": that is the
    error, not a failure to retry or resume; nothing is left behind to resume from."""
    openml_server.xml_errors = xml
    url = openml_server.base_url
    code, out, err = cli(capsys, "pack", "create", "s999", "--openml", "--study", "999", "--openml-url", url)
    assert code == 1, err
    assert_one_error(err, f"OpenML has no study 999 (Unknown study, code 601) at {url}")
    assert "resume" not in err and out == ""
    assert openml_server.api_hits("/study/999") == 1  # a 412 is not retried
    # Neither the pack nor a .partial folder, nor the build's lock file.
    assert [p.name for p in wikigr_home.rglob("*s999*")] == []
    # A known study still builds through the same path.
    code, out, err = cli(capsys, "pack", "create", "s146", "--openml", "--study", "146", "--openml-url", url)
    assert code == 0, err


def test_selection_is_checked() -> None:
    with pytest.raises(UsageError, match="say what to fetch"):
        ApiSelection()
    with pytest.raises(UsageError, match="not both"):
        ApiSelection(study=1, tasks=[3])
    with pytest.raises(UsageError, match="http"):
        ApiSelection(base_url="ftp://mirror", tasks=[3])
    with pytest.raises(UsageError, match="unknown measure"):
        ApiSelection(tasks=[3], measure="happiness")
    assert ApiSelection(tasks=[3], measure="auc").measure == "area_under_roc_curve"
    assert parse_task_ids("3, 31,37") == [3, 31, 37]
    with pytest.raises(UsageError, match="task ids"):
        parse_task_ids("3,x")


def test_cli_openml(
    capsys: pytest.CaptureFixture[str], openml_server: OpenMLServer, wikigr_home: Path
) -> None:
    url = openml_server.base_url
    code, out, err = cli(
        capsys, "pack", "create", "oml", "--openml", "--tasks", "1,1882,119", "--openml-url", url, "--json"
    )
    assert code == 0, err
    built = json.loads(out)
    assert built["stats"]["runs"] == len(openml_server.runs) and built["malformed_rows"] == 1
    assert built["source_kind"] == "openml" and built["requests"] > 0
    code, out, _ = cli(capsys, "query", "oml", "Which algorithm has the highest median accuracy?", "--json")
    assert code == 0
    answer = json.loads(out)
    assert answer["sources"][0]["url"].startswith(openml_server.base_url + "/r/")

    for args, message in (
        (["--openml"], "say what to fetch"),
        (["--openml", "--tasks", "a,b"], "task ids"),
        (["--openml", "--tasks", "1", "--openml-url", "ftp://x"], "must be an http(s) URL"),
        (["--study", "14"], "go with --openml"),
        (["--openml", "--tasks", "1", "--openml-export", "x.csv"], "not both"),
    ):
        code, _, err = cli(capsys, "pack", "create", "bad", *args)
        assert code == 2, (args, err)
        assert_one_error(err, message)

    code, _, err = cli(
        capsys,
        "pack",
        "create",
        "down",
        "--openml",
        "--tasks",
        "1",
        "--openml-url",
        closed_port_url(""),
        "--retries",
        "0",
    )
    assert code == 1
    assert_one_error(err, "OpenML request failed after 1 attempts")
