"""The Compare view's routes (wikigr/serve/compare.py) over real HTTP: a comparison of profiles as
a job whose events fill a table, the files it writes being the ones `wikigr eval` writes (and
reads), a run of `wikigr eval` shown as the last results, cancel, and bad requests."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakeclaude import FakeClaude, Reply
from tests.test_serve import QUESTION, running
from wikigr.cli import run
from wikigr.pack.manifest import load_manifest
from wikigr.serve.app import create_app

QUESTIONS = [
    {"id": "q1", "question": QUESTION, "gold_sources": ["Sockets guide"], "ground_truth": "settimeout"},
    {"id": "q2", "question": "How deep are tomato seeds sown?", "gold_sources": ["Growing tomatoes"]},
]


def write_questions(pack: Path, questions: list[dict[str, Any]]) -> None:
    (pack / "eval").mkdir(exist_ok=True)
    (pack / "eval" / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))


@pytest.fixture
def pack(built_pack: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "fixture"
    shutil.copytree(built_pack, copy)
    write_questions(copy, QUESTIONS)
    return copy


@pytest.fixture
def api(pack: Path) -> Iterator[httpx.Client]:
    with running(create_app([pack])) as url, httpx.Client(base_url=url + "/api/v1", timeout=600) as client:
        yield client


def job_events(api: httpx.Client, job: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """A job's events (Server-Sent Events) as (name, data), from the first until the job ends."""
    with api.stream("GET", f"/jobs/{job}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[len("event: ") :]
            elif line.startswith("data: "):
                yield name, json.loads(line[len("data: ") :])


def test_a_comparison_of_two_profiles_fills_a_table_and_writes_what_wikigr_eval_writes(
    api: httpx.Client, pack: Path
) -> None:
    state = api.get("/packs/fixture/compare").json()
    assert state["profiles"][:2] == ["auto", "baseline"] and state["last"] == {} and state["running"] is None
    assert [q["id"] for q in state["questions"]] == ["q1", "q2"] and state["judges"] == ["none", "offline"]

    started = api.post("/packs/fixture/compare", json={"profiles": ["baseline", "balanced"], "ks": [1, 5]})
    assert started.status_code == 202, started.text
    job = started.json()
    assert job["kind"] == "compare" and job["key"] == "fixture" and job["state"] == "running"
    events = list(job_events(api, job["id"]))
    names = [name for name, _ in events]
    assert names == ["profile", "question", "question", "summary"] * 2 + ["done"]
    rows = [data for name, data in events if name == "question"]
    assert [(r["profile"], r["n"], r["total"], r["row"]["id"]) for r in rows] == [
        ("baseline", 1, 2, "q1"),
        ("baseline", 2, 2, "q2"),
        ("balanced", 1, 2, "q1"),
        ("balanced", 2, 2, "q2"),
    ]
    assert all(r["row"]["found"] is True and r["row"]["metrics"]["hit@5"] == 1.0 for r in rows)
    summaries = {data["profile"]: data for name, data in events if name == "summary"}
    for profile in ("baseline", "balanced"):
        summary = summaries[profile]["summary"]
        assert summary["questions"] == 2 and summary["hit@5"] == 1.0 and summary["recall@1"] is not None
        assert summary["latency_p50_ms"] > 0 and summary["judge_accuracy"] is None  # no judge: "—"
    done = events[-1][1]
    assert [r["profile"] for r in done["runs"]] == ["baseline", "balanced"]

    # The files `wikigr eval` writes, read by its own reader (the manifest) and the Evaluation tab.
    results = pack / "eval" / "results"
    for profile in ("baseline", "balanced"):
        written = json.loads((results / summaries[profile]["file"]).read_text())
        assert written["profile"] == profile and written["ks"] == [1, 5] and len(written["questions"]) == 2
    assert not list(results.glob(".*.partial.jsonl"))
    scores = {s.profile: s for s in load_manifest(pack / "manifest.json").eval_scores or []}
    assert sorted(scores) == ["balanced", "baseline"]
    assert scores["baseline"].results_file == f"eval/results/{summaries['baseline']['file']}"
    evals = api.get("/packs/fixture/eval").json()
    assert {p: r["file"] for p, r in evals["latest"].items()} == {
        p: summaries[p]["file"] for p in ("baseline", "balanced")
    }
    last = api.get("/packs/fixture/compare").json()["last"]
    assert sorted(last) == ["balanced", "baseline"]
    assert [(r["id"], r["found"]) for r in last["baseline"]["rows"]] == [("q1", True), ("q2", True)]
    assert api.get(f"/jobs/{job['id']}").json()["state"] == "done"


def test_a_run_of_wikigr_eval_shows_as_the_last_results(api: httpx.Client, pack: Path) -> None:
    assert run(["eval", str(pack), "--profile", "graph", "--k", "1,5", "--json"]) == 0
    last = api.get("/packs/fixture/compare").json()["last"]
    assert list(last) == ["graph"] and last["graph"]["summary"]["questions"] == 2
    assert [r["id"] for r in last["graph"]["rows"]] == ["q1", "q2"] and last["graph"]["ks"] == [1, 5]


def test_a_comparison_is_cancelled_and_the_next_resumes(api: httpx.Client, pack: Path) -> None:
    many = [{**QUESTIONS[n % 2], "id": f"q{n}"} for n in range(150)]
    write_questions(pack, many)
    job = api.post("/packs/fixture/compare", json={"profiles": ["baseline"]}).json()
    refused = api.post("/packs/fixture/compare", json={"profiles": ["baseline"]})
    assert refused.status_code == 409 and "running already" in refused.json()["error"]
    assert api.get("/packs/fixture/compare").json()["running"] == job["id"]
    seen = 0
    for name, _ in job_events(api, job["id"]):
        if name == "question":
            seen += 1
            if seen == 3:
                assert api.post(f"/jobs/{job['id']}/cancel").status_code == 202
        last = name
    assert last == "cancelled" and seen < len(many)
    assert api.get(f"/jobs/{job['id']}").json()["state"] == "cancelled"
    results = pack / "eval" / "results"
    assert not list(results.glob("*-baseline.json"))  # no results file for a run cut short
    assert (results / ".baseline.partial.jsonl").is_file()  # what was done, kept to resume

    again = api.post("/packs/fixture/compare", json={"profiles": ["baseline"]}).json()  # same settings
    events = list(job_events(api, again["id"]))
    assert events[-1][0] == "done" and events[-1][1]["runs"][0]["resumed"] >= 3
    assert len([name for name, _ in events if name == "question"]) == len(many)  # the resumed rows too


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"profiles": ["nope"]}, 400, "unknown profile 'nope'"),
        ({"profiles": []}, 400, "profiles must be a non-empty list"),
        ({"judge": "claude"}, 400, "the claude judge needs Claude"),
        ({"judge": "gpt"}, 400, "judge must be one of none, offline, claude"),
        ({"ks": [0]}, 400, "each k must be an integer from 1 to 100"),
        ({"limit": "x"}, 400, "limit must be an integer"),
        ({"generate": 5}, 400, "generating questions needs Claude"),
        ({"colour": 1}, 400, "unknown field 'colour'"),
    ],
)
def test_bad_comparisons_are_refused_in_one_line(
    api: httpx.Client, body: dict[str, Any], status: int, message: str
) -> None:
    response = api.post("/packs/fixture/compare", json=body)
    assert response.status_code == status and message in response.json()["error"], response.text
    assert "\n" not in response.json()["error"]


def test_a_pack_without_questions_says_how_to_get_some(api: httpx.Client, pack: Path) -> None:
    (pack / "eval" / "questions.jsonl").unlink()
    response = api.post("/packs/fixture/compare", json={})
    assert response.status_code == 400 and "has no eval questions" in response.json()["error"]
    assert api.post("/packs/nope/compare", json={}).status_code == 404


def test_with_claude_questions_are_generated_then_judged(pack: Path, claude_env: FakeClaude) -> None:
    """With Claude configured: the questions Claude writes (as `wikigr eval generate`), then each
    answer judged by Claude, the judge's accuracy in the profile's summary."""
    generated = iter(['{"question": "What does settimeout set?", "answer": "a timeout"}'])

    def respond(body: dict[str, Any]) -> Reply:
        system = json.dumps(body.get("system"))
        if "You write evaluation questions" in system:
            return Reply.text(next(generated, "not json"))
        if "You grade an answer" in system:
            return Reply.text('{"grounding": 5, "reasoning": 4, "completeness": 5, "rationale": "fine"}')
        return Reply.text("Call settimeout() on the socket [1].")

    claude_env.respond_with(respond)
    with running(create_app([pack])) as url, httpx.Client(base_url=url + "/api/v1", timeout=600) as api:
        state = api.get("/packs/fixture/compare").json()
        assert state["judge"] == "claude" and "claude" in state["judges"] and state["generate"] is True
        body = {"profiles": ["baseline"], "generate": 1, "judge": "claude"}
        job = api.post("/packs/fixture/compare", json=body).json()
        events = list(job_events(api, job["id"]))
    names = [name for name, _ in events]
    assert names[:3] == ["generating", "generated", "profile"] and names[-1] == "done", events[-1]
    assert events[1][1]["added"] == 1
    rows = [data["row"] for name, data in events if name == "question"]
    assert [r["id"] for r in rows] == ["q1", "q2", "gen-3"]
    summary = events[-1][1]["runs"][0]["summary"]
    assert summary["questions"] == 3 and summary["judge_accuracy"] == 1.0
