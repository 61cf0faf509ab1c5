"""``wikigr serve``: the REST API through a real HTTP client against the real uvicorn server on a
free loopback port (in a thread, or the CLI in a subprocess)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
import uvicorn

from tests.fakeclaude import FakeClaude, Reply
from wikigr.packset import open_agent
from wikigr.serve import check_token, listen, url_of
from wikigr.serve.app import create_app
from wikigr.serve.ask import MAX_QUESTION_CHARS
from wikigr.serve.http import MAX_BODY_BYTES

TOKEN = "s3cret-token-for-the-tests"
QUESTION = "How do I set a timeout on a socket?"


@contextmanager
def running(app: Any, host: str = "127.0.0.1") -> Iterator[str]:
    """The real uvicorn server running ``app`` on a free loopback port, in a thread."""
    sock = listen(host, 0)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 600  # importing uvicorn and starlette on a busy machine
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.02)
    try:
        yield url_of(sock)
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@pytest.fixture(scope="module")
def fixture_url(built_pack: Path) -> Iterator[str]:
    """A server of the fixture pack alone (named on the command line), for the module."""
    with running(create_app([built_pack])) as url:
        yield url


@pytest.fixture
def api(fixture_url: str) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=fixture_url + "/api/v1", timeout=600) as client:
        yield client


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    data = response.json()
    assert set(data) == {"error"} and "\n" not in data["error"] and "Traceback" not in data["error"]
    return str(data["error"])


def _without_timings(data: Any) -> Any:
    """``data`` without its timings (keys ``ms`` and ``*_ms``, at any depth)."""
    if isinstance(data, dict):
        return {k: _without_timings(v) for k, v in data.items() if k != "ms" and not k.endswith("_ms")}
    if isinstance(data, list):
        return [_without_timings(v) for v in data]
    return data


# -- reading ---------------------------------------------------------------------------------


def test_health_openapi_and_profiles(api: httpx.Client, fixture_url: str) -> None:
    health = api.get("/health").json()
    assert health["status"] == "ok" and health["packs"] == 1 and health["claude"] is False
    spec = api.get("/openapi.json").json()
    assert spec["openapi"].startswith("3.1") and spec["info"]["title"] == "wikigr"
    app = create_app([])
    served = {
        (route.path, method.lower())
        for route in app.routes
        if getattr(route, "path", "").startswith("/api/v1")
        for method in getattr(route, "methods", None) or ()
        if method != "HEAD"
    }
    described = {(path, method) for path, item in spec["paths"].items() for method in item}
    assert served == described  # every route is described, and nothing else
    profiles = api.get("/profiles").json()
    assert profiles["default"] == "auto" and "synthesize" in profiles["profiles"]["baseline"]
    assert profiles["stages"]["vector"]
    page = httpx.get(fixture_url + "/")
    assert page.status_code == 200 and '<script src="/static/app.js"' in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    script = httpx.get(fixture_url + "/static/app.js")
    assert script.status_code == 200 and "/query/stream" in script.text


def test_packs_and_pack_info(api: httpx.Client, built_pack: Path) -> None:
    listed = api.get("/packs").json()
    assert [row["name"] for row in listed["packs"]] == ["fixture"] and "home" not in listed
    info = api.get("/packs/fixture").json()
    assert info["name"] == "fixture" and "path" not in info  # names, not this machine's folders
    assert info["store_stats"]["chunks"] == 11 and info["entity_graph"] is True
    assert info["profile"] == "auto" and info["stages"][-1] == "synthesize"
    assert "Sockets guide" in info["titles"] and info["claude"] is False
    assert info["sources"]["total"] == info["sources"]["ok"] == 4
    assert "unknown pack 'pydocs'" in _error(api.get("/packs/pydocs"), 404)
    assert "not a path" in _error(api.get("/packs/.hidden"), 400)
    assert api.get("/packs/..%2F..%2Fetc").status_code in (400, 404)


# -- asking ----------------------------------------------------------------------------------


def test_a_query_answers_as_the_cli_does_and_keeps_its_trace(api: httpx.Client, built_pack: Path) -> None:
    response = api.post("/query", json={"pack": "fixture", "question": QUESTION, "top_k": 3})
    assert response.status_code == 200, response.text
    data = response.json()
    with open_agent(str(built_pack), top_k=3) as agent:
        expected = agent.query(QUESTION).to_json()
    trace_id = data.pop("trace_id")
    extra = [{k: s.pop(k) for k in ("chunk_id", "origin")} for s in data["sources"]]
    assert _without_timings(data) == _without_timings(expected)  # `wikigr query --json`'s JSON
    assert all(e["chunk_id"] for e in extra) and all(s["text"] for s in data["sources"])
    assert data["sources"][0]["title"] == "Sockets guide"
    trace = api.get(f"/traces/{trace_id}").json()
    assert trace["request"]["question"] == QUESTION and trace["response"]["trace_id"] == trace_id
    assert [s["stage"] for s in trace["response"]["trace"]["stages"]] == [
        s["stage"] for s in data["trace"]["stages"]
    ]
    recent = api.get("/traces").json()["traces"]
    assert recent[0]["trace_id"] == trace_id and recent[0]["pack"] == "fixture"
    assert "no trace 'nope'" in _error(api.get("/traces/nope"), 404)


def test_stage_switches_and_profiles_reach_the_agent(api: httpx.Client) -> None:
    body = {"pack": "fixture", "question": QUESTION, "profile": "balanced", "disable": ["keyword"]}
    data = api.post("/query", json=body).json()
    stages = [s["stage"] for s in data["trace"]["stages"]]
    assert data["profile"] == "balanced" and "keyword" not in stages and "title_match" in stages
    body = {"pack": "fixture", "question": QUESTION, "profile": "baseline", "enable": ["keyword"]}
    stages = [s["stage"] for s in api.post("/query", json=body).json()["trace"]["stages"]]
    assert stages == ["vector", "keyword", "dedup", "synthesize"]


@pytest.mark.parametrize(
    ("body", "status", "message"),
    [
        ({"pack": "fixture", "question": "   "}, 400, "the question is empty"),
        ({"pack": "fixture", "question": "x" * (MAX_QUESTION_CHARS + 1)}, 400, "longer than"),
        ({"pack": "fixture", "question": 42}, 400, "question must be a string"),
        ({"pack": "fixture", "question": "q", "profile": "fastest"}, 400, "unknown profile 'fastest'"),
        ({"pack": "fixture", "question": "q", "profile": 3}, 400, "profile must be a string"),
        ({"pack": "fixture", "question": "q", "top_k": 0}, 400, "top_k must be an integer from 1 to 100"),
        ({"pack": "fixture", "question": "q", "top_k": 101}, 400, "top_k must be"),
        ({"pack": "fixture", "question": "q", "top_k": True}, 400, "top_k must be"),
        ({"pack": "fixture", "question": "q", "top_k": "²"}, 400, "top_k must be"),
        ({"pack": "fixture", "question": "q", "top_k": "--5"}, 400, "top_k must be"),
        ({"pack": "fixture", "question": "q", "top_k": "9" * 5000}, 400, "top_k must be"),
        ({"pack": "fixture", "question": "q", "enable": ["warp"]}, 400, "unknown stage 'warp'"),
        ({"pack": "fixture", "question": "q", "fallback": "yes"}, 400, "fallback must be"),
        ({"pack": "fixture", "question": "q", "colour": "red"}, 400, "unknown field 'colour'"),
        ({"question": "q"}, 400, "pack is required"),
        ({"pack": 7, "question": "q"}, 400, "pack must be a name"),
        ({"pack": "pydocs", "question": "q"}, 404, "unknown pack 'pydocs' (this server serves fixture)"),
        ({"pack": "fixture,pydocs", "question": "q"}, 404, "unknown pack 'pydocs'"),
        ({"pack": "../fixture", "question": "q"}, 400, "a pack is named by its name, not a path"),
        ({"pack": "/etc", "question": "q"}, 400, "not a path: '/etc'"),
        ({"pack": ["fixture", "~"], "question": "q"}, 400, "not a path: '~'"),
        ({"pack": "fixture,,x", "question": "q"}, 400, "an empty pack name"),
        ({"pack": "all,fixture", "question": "q"}, 400, "give it alone"),
    ],
)
def test_bad_questions_are_refused_with_one_line(
    api: httpx.Client, body: dict[str, Any], status: int, message: str
) -> None:
    assert message in _error(api.post("/query", json=body), status)


def test_a_path_to_a_real_pack_is_refused(api: httpx.Client, built_pack: Path, tmp_path: Path) -> None:
    other = tmp_path / "other"
    shutil.copytree(built_pack, other)
    for ref in (str(other), str(built_pack), f"{other}/../other"):
        assert "not a path" in _error(api.post("/query", json={"pack": ref, "question": "q"}), 400)


def test_bodies_that_are_not_small_json_objects_are_refused(api: httpx.Client) -> None:
    huge = json.dumps({"pack": "fixture", "question": "q" * 2000, "pad": "x" * (4 * MAX_BODY_BYTES)})
    headers = {"content-type": "application/json"}
    assert f"larger than {MAX_BODY_BYTES} bytes" in _error(
        api.post("/query", content=huge, headers=headers), 413
    )
    sent = api.post(
        "/query", content=iter([b'{"pack": "fixture", "q": "'] + [b"x" * 65536] * 4), headers=headers
    )
    assert "larger than" in _error(sent, 413)  # chunked, without a length: counted as it comes
    assert "Content-Type: application/json" in _error(api.post("/query", data={"pack": "fixture"}), 415)
    assert "not valid JSON" in _error(api.post("/query", content=b"{pack", headers=headers), 400)
    deep = b'{"pack": "fixture", "question": "q", "enable": ' + b"[" * 20000 + b"]" * 20000 + b"}"
    assert "nested too deeply" in _error(api.post("/query", content=deep, headers=headers), 400)
    assert "must be a JSON object" in _error(api.post("/query", content=b"[1, 2]", headers=headers), 400)
    assert "no route" in _error(api.get("/nothing/here"), 404)
    assert api.get("/query").status_code == 405


def test_a_lone_surrogate_is_refused_with_one_line(api: httpx.Client) -> None:
    """JSON can spell a lone surrogate, which is not text: a 400 wherever it is, never a 500."""
    headers = {"content-type": "application/json"}
    for path, body in [
        ("/query", rb'{"pack": "fixture", "question": "\udcff socket"}'),
        ("/query/stream", rb'{"pack": "fixture", "question": "\udcff socket"}'),
        ("/search", rb'{"pack": "fixture", "query": "\udcff"}'),
        ("/query", rb'{"pack": "\udcff", "question": "q"}'),
        ("/query", rb'{"pack": "fixture", "question": "q", "\udcff": 1}'),
    ]:
        assert "lone surrogate" in _error(api.post(path, content=body, headers=headers), 400)


def test_search_returns_passages_without_an_answer(api: httpx.Client) -> None:
    got = api.get("/search", params={"pack": "fixture", "q": "tomato seedlings", "top_k": 2}).json()
    assert got["query"] == "tomato seedlings" and len(got["results"]) == 2
    assert got["results"][0]["title"] == "Growing tomatoes" and got["results"][0]["text"]
    assert "synthesize" not in [s["stage"] for s in got["trace"]["stages"]]
    posted = api.post("/search", json={"pack": "fixture", "query": "tomato seedlings", "top_k": 2}).json()
    assert [r["chunk_id"] for r in posted["results"]] == [r["chunk_id"] for r in got["results"]]
    assert "the query is empty" in _error(api.get("/search", params={"pack": "fixture", "q": " "}), 400)
    assert "pack is required" in _error(api.get("/search", params={"q": "x"}), 400)
    assert "unknown parameter 'k'" in _error(
        api.get("/search", params={"pack": "fixture", "q": "x", "k": 2}), 400
    )
    assert "top_k must be" in _error(
        api.get("/search", params={"pack": "fixture", "q": "x", "top_k": "²"}), 400
    )


# -- the graph, the evaluations --------------------------------------------------------------


def test_the_graph_around_sources_and_around_an_entity(api: httpx.Client) -> None:
    answer = api.post("/query", json={"pack": "fixture", "question": QUESTION, "top_k": 2}).json()
    chunks = [s["chunk_id"] for s in answer["sources"]]
    graph = api.get("/packs/fixture/graph", params={"chunk": chunks, "limit": 40}).json()
    nodes = {n["id"]: n for n in graph["nodes"]}
    assert {f"chunk:{c}" for c in chunks} <= {i for i, n in nodes.items() if n.get("focus")}
    kinds = {n["kind"] for n in graph["nodes"]}
    assert kinds == {"chunk", "article", "entity"} and len(nodes) <= 40 and graph["entity_graph"]
    edges = {(e["source"], e["target"], e["kind"]) for e in graph["edges"]}
    assert all(s in nodes and t in nodes for s, t, _ in edges)
    assert {k for _, _, k in edges} >= {"in", "mentions", "relation"}
    assert any(n["label"] == "socket.setdefaulttimeout" for n in graph["nodes"])
    entity = next(n["id"] for n in graph["nodes"] if n["label"] == "socket.setdefaulttimeout")
    around = api.get("/packs/fixture/graph", params={"entity": entity.removeprefix("entity:")}).json()
    focus = [n for n in around["nodes"] if n.get("focus")]
    assert [n["id"] for n in focus] == [entity]
    assert any(e["target"] == entity and e["kind"] == "mentions" for e in around["edges"])
    small = api.get("/packs/fixture/graph", params={"chunk": chunks, "limit": 3}).json()
    assert len(small["nodes"]) == 3 and small["truncated"] is True
    assert "no chunk 'nope'" in _error(api.get("/packs/fixture/graph", params={"chunk": "nope"}), 404)
    assert "name a chunk or an entity" in _error(api.get("/packs/fixture/graph"), 400)
    for limit in ("0", "²", "9" * 5000):
        assert "limit must be" in _error(
            api.get("/packs/fixture/graph", params={"chunk": chunks, "limit": limit}), 400
        )
    assert "unknown parameter" in _error(api.get("/packs/fixture/graph", params={"node": "x"}), 400)


def test_eval_results_per_profile(built_pack: Path, tmp_path: Path) -> None:
    from wikigr.eval.runner import EvalOptions, evaluate

    pack = tmp_path / "evaluated"
    shutil.copytree(built_pack, pack)
    (pack / "eval").mkdir(exist_ok=True)
    questions = [
        {"id": "q1", "question": QUESTION, "gold_sources": ["Sockets guide"], "ground_truth": "settimeout"},
        {
            "id": "q2",
            "question": "How deep should tomato seeds be planted?",
            "gold_sources": ["Growing tomatoes"],
        },
    ]
    (pack / "eval" / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions))
    reports = evaluate(pack, EvalOptions(profiles=["baseline", "balanced"], ks=(1, 5)))
    results = pack / "eval" / "results"
    (results / "20000101T000000Z-broken.json").write_text("{not json")
    (results / "elsewhere.json").symlink_to(reports[0].results_file)
    (results / ".balanced.partial.jsonl").write_text("{}\n")
    with running(create_app([pack])) as url:
        data = httpx.get(f"{url}/api/v1/packs/fixture/eval", timeout=600).json()
    assert data["questions"] == 2
    assert sorted(data["latest"]) == ["balanced", "baseline"]
    assert [r["file"] for r in data["runs"]] == sorted(r.results_file.name for r in reports)
    baseline = data["latest"]["baseline"]["summary"]
    assert baseline["questions"] == 2 and baseline["hit@5"] == 1.0 and "questions" not in data["runs"][0]
    assert data["skipped"] == ["20000101T000000Z-broken.json"]  # the symlink is not even looked at
    assert [s["profile"] for s in data["eval_scores"]] == ["balanced", "baseline"]  # the latest of each


# -- concurrency -----------------------------------------------------------------------------


def test_twenty_concurrent_queries_are_all_answered(api: httpx.Client, fixture_url: str) -> None:
    questions = [f"{q} ({n})" for n in range(5) for q in (QUESTION, "tomato seeds", "json dumps", "dates")]

    def ask(question: str) -> dict[str, Any]:
        with httpx.Client(base_url=fixture_url, timeout=600) as client:
            response = client.post("/api/v1/query", json={"pack": "fixture", "question": question})
        assert response.status_code == 200, response.text
        return dict(response.json())

    with ThreadPoolExecutor(max_workers=20) as pool:
        answers = list(pool.map(ask, questions))
    assert len(answers) == 20 and all(a["answer"] and a["sources"] for a in answers)
    assert len({a["trace_id"] for a in answers}) == 20
    assert [a["sources"][0]["title"] for a in answers[::4]] == ["Sockets guide"] * 5


def test_a_busy_pack_does_not_block_another(built_pack: Path, tmp_path: Path) -> None:
    """While one agent is held (a slow answer), a question to another pack is answered."""
    other = tmp_path / "second"
    shutil.copytree(built_pack, other)
    manifest = json.loads((other / "manifest.json").read_text())
    manifest["name"] = "second"
    (other / "manifest.json").write_text(json.dumps(manifest))
    app = create_app([built_pack, other])
    cache = app.state.server.cache
    with running(app) as url:
        assert httpx.post(f"{url}/api/v1/query", json={"pack": "fixture", "question": "q"}, timeout=600)
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with cache.use([str(built_pack.resolve())], None, "query"):
                held.set()
                release.wait(600)

        holder = threading.Thread(target=hold)
        holder.start()
        try:
            assert held.wait(600)
            answered = httpx.post(
                f"{url}/api/v1/query", json={"pack": "second", "question": QUESTION}, timeout=600
            )
            assert answered.status_code == 200 and answered.json()["sources"][0]["pack"] == "second"
            with pytest.raises(httpx.ReadTimeout):  # the held one waits its turn
                httpx.post(f"{url}/api/v1/query", json={"pack": "fixture", "question": "q"}, timeout=1.5)
        finally:
            release.set()
            holder.join()
        both = httpx.post(
            f"{url}/api/v1/query", json={"pack": "all", "question": QUESTION}, timeout=600
        ).json()
        assert {s["pack"] for s in both["sources"]} <= {"fixture", "second"}
        assert [p["pack"] for p in both["trace"]["packs"]][:2] in (
            ["fixture", "second"],
            ["second", "fixture"],
        )


# -- the packs home --------------------------------------------------------------------------


def test_the_packs_home_is_served_by_name(built_pack: Path, wikigr_home: Path) -> None:
    packs = wikigr_home / "packs"
    shutil.copytree(built_pack, packs / "fixture")
    with running(create_app()) as url, httpx.Client(base_url=url + "/api/v1", timeout=600) as client:
        assert "home" not in client.get("/packs").json()
        assert client.post("/query", json={"pack": "fixture", "question": QUESTION}).status_code == 200
        shutil.copytree(built_pack, packs / "later")  # installed while the server runs
        rows = client.get("/packs").json()["packs"]
        assert [(r["name"], r.get("manifest_name")) for r in rows] == [
            ("fixture", None),
            ("later", "fixture"),
        ]
        assert client.get("/packs/later").json()["name"] == "later"
        both = client.post("/query", json={"pack": "all", "question": QUESTION}).json()
        assert len(both["trace"]["packs"]) == 2  # every folder of the home
        outside = packs.parent / "outside"
        shutil.copytree(built_pack, outside)
        for ref in ("../outside", str(outside), "fixture/../../outside"):
            assert "not a path" in _error(client.post("/query", json={"pack": ref, "question": "q"}), 400)
        refused = client.post("/query", json={"pack": "outside", "question": "q"})
        assert "unknown pack 'outside'" in _error(refused, 404)


def test_no_response_tells_the_folders_of_the_serving_machine(built_pack: Path, wikigr_home: Path) -> None:
    """Clients get pack names, never the packs home's or a pack's absolute path: in lists, pack
    info, answers, traces and errors (a broken pack's, an unknown pack's)."""
    packs = wikigr_home / "packs"
    shutil.copytree(built_pack, packs / "fixture")
    (packs / "broken").mkdir()
    (packs / "broken" / "manifest.json").write_text("{not json")
    bodies = []
    with running(create_app()) as url, httpx.Client(base_url=url + "/api/v1", timeout=600) as client:
        for response in (
            client.get("/packs"),
            client.get("/packs/fixture"),
            client.get("/packs/fixture/eval"),
            client.get("/packs/broken"),
            client.get("/packs/nope"),
            client.post("/query", json={"pack": "fixture", "question": QUESTION}),
            client.post("/query", json={"pack": "nope", "question": QUESTION}),
            client.post("/query", json={"pack": "broken", "question": QUESTION}),
            client.post("/query/stream", json={"pack": "broken", "question": QUESTION}),
            client.post("/search", json={"pack": "all", "query": "socket timeout"}),
            client.get("/traces"),
        ):
            bodies.append(response.text)
    rows = json.loads(bodies[0])["packs"]
    assert {r["name"] for r in rows} == {"fixture", "broken"} and all("path" not in r for r in rows)
    assert json.loads(bodies[1])["name"] == "fixture"
    for body in bodies:
        for folder in {
            str(wikigr_home),
            str(wikigr_home.resolve()),
            str(built_pack),
            str(built_pack.resolve()),
        }:
            assert folder not in body, body[:300]
    with running(create_app([built_pack])) as url:  # packs named on the command line: the same
        listed = httpx.get(url + "/api/v1/packs").text
        info = httpx.get(url + "/api/v1/packs/fixture").text
        assert str(built_pack.resolve()) not in listed + info and str(built_pack) not in listed + info


@pytest.mark.parametrize("pack", ["fixture\n", "fixture\r", "fixture\t", ["fixture\n"], "\nfixture"])
def test_a_pack_name_with_a_control_character_is_refused(api: httpx.Client, pack: Any) -> None:
    """``"fixture\\n"`` is not the name ``fixture``, as on the command line: a 400 of one line."""
    message = _error(api.post("/query", json={"pack": pack, "question": QUESTION}), 400)
    assert "a pack is named by its name, not a path" in message
    assert "not a path" in _error(api.get("/packs/fixture%0A"), 400)


# -- Claude, streamed ------------------------------------------------------------------------


def _events(response: httpx.Response) -> list[tuple[str, dict[str, Any]]]:
    events = []
    for block in response.text.split("\n\n"):
        if block.strip():
            lines = dict(line.split(": ", 1) for line in block.splitlines())
            events.append((lines["event"], json.loads(lines["data"])))
    return events


def test_a_claude_answer_streams_as_server_sent_events(built_pack: Path, claude_env: FakeClaude) -> None:
    said = "Call settimeout() on the socket [1]; a timeout raises TimeoutError [2][9]."

    def respond(body: dict[str, Any]) -> Reply:
        reply = Reply.text(said)
        reply.piece, reply.pause = 6, 0.02
        return reply

    claude_env.respond_with(respond)
    with running(create_app([built_pack])) as url:
        body = {"pack": "fixture", "question": QUESTION, "top_k": 2}
        with httpx.Client(timeout=600) as client:
            arrivals: list[tuple[float, str]] = []
            with client.stream("POST", f"{url}/api/v1/query/stream", json=body) as response:
                assert response.status_code == 200
                assert response.headers["content-type"].startswith("text/event-stream")
                for line in response.iter_lines():
                    if line.startswith("event: "):
                        arrivals.append((time.monotonic(), line.removeprefix("event: ")))
            streamed = client.post(f"{url}/api/v1/query/stream", json=body)
            plain = client.post(f"{url}/api/v1/query", json=body).json()
    names = [name for _, name in arrivals]
    assert names[0] == "sources" and names[-1] == "result" and names.count("delta") >= 5
    assert arrivals[-1][0] - arrivals[1][0] > 0.05  # the deltas came over time, not at once
    events = _events(streamed)
    result = events[-1][1]
    deltas = "".join(data["text"] for name, data in events if name == "delta")
    assert deltas == said  # what Claude wrote, as it wrote it; the result checks its citations
    assert result["answer"] == said.replace("[9]", "") and len(result["sources"]) < 9
    synthesize = result["trace"]["stages"][-1]
    assert synthesize["detail"]["removed_citations"] == [9]
    assert result["trace"]["answer_mode"] == "claude" and result["trace"]["usage"]["calls"] == 1
    assert [s["chunk_id"] for s in events[0][1]["sources"]] == [s["chunk_id"] for s in result["sources"]]
    assert plain["answer"] == result["answer"]  # the same answer, not streamed
    requests = claude_env.messages_requests
    assert [r.json.get("stream") for r in requests] == [True, True, None]


def test_a_claude_failure_in_the_stream_is_an_error_event(built_pack: Path, claude_env: FakeClaude) -> None:
    claude_env.respond_with(lambda body: Reply.bad_request("prompt is too long"))
    with running(create_app([built_pack])) as url:
        body = {"pack": "fixture", "question": QUESTION}
        failed = httpx.post(f"{url}/api/v1/query/stream", json=body, timeout=600)
        events = _events(failed)
        assert [name for name, _ in events] == ["sources", "error"]
        assert events[-1][1]["status"] == 502 and "prompt is too long" in events[-1][1]["error"]
        assert "prompt is too long" in _error(httpx.post(f"{url}/api/v1/query", json=body, timeout=600), 502)
        rescued = httpx.post(f"{url}/api/v1/query", json={**body, "fallback": True}, timeout=600).json()
        assert rescued["trace"]["answer_mode"] == "extractive" and "settimeout" in rescued["answer"]
        refused = httpx.post(f"{url}/api/v1/query/stream", json={**body, "pack": "nope"}, timeout=600)
        assert "unknown pack 'nope'" in _error(refused, 404)  # before anything streamed: plain JSON


# -- tokens, hosts ---------------------------------------------------------------------------


def test_a_token_is_required_when_one_is_set(built_pack: Path) -> None:
    with running(create_app([built_pack], token=TOKEN, loopback=False)) as url:
        for headers in ({}, {"Authorization": "Bearer wrong-token-of-some-length"}, {"Authorization": TOKEN}):
            refused = httpx.get(f"{url}/api/v1/packs", headers=headers)
            assert "needs its token" in _error(refused, 401)
            assert refused.headers["www-authenticate"] == "Bearer"
        assert _error(httpx.post(f"{url}/api/v1/query", json={"pack": "fixture", "question": "q"}), 401)
        good = {"Authorization": f"Bearer {TOKEN}"}
        assert httpx.get(f"{url}/api/v1/packs", headers=good).json()["packs"][0]["name"] == "fixture"
        login = httpx.get(f"{url}/")
        assert login.status_code == 401 and 'id="login-form"' in login.text
        assert httpx.get(f"{url}/static/login.js").status_code == 200
        assert httpx.get(f"{url}/static/app.js").status_code == 401
        assert "wrong token" in _error(httpx.post(f"{url}/login", json={"token": "nope"}), 401)
        with httpx.Client(base_url=url) as browser:
            signed = browser.post("/login", json={"token": TOKEN})
            assert signed.status_code == 204 and "httponly" in signed.headers["set-cookie"].lower()
            assert "samesite=strict" in signed.headers["set-cookie"].lower()
            assert browser.get("/").status_code == 200
            assert browser.get("/api/v1/health").status_code == 200


def test_serving_beyond_loopback_needs_a_long_token() -> None:
    from wikigr.errors import UsageError

    for host in ("0.0.0.0", "192.168.1.20", "example.org", "::"):
        with pytest.raises(UsageError, match="give a token"):
            check_token(None, host)
    for host in ("127.0.0.1", "localhost", "::1", "127.0.0.2"):
        check_token(None, host)
    with pytest.raises(UsageError, match="at least 16 characters"):
        check_token("short", "0.0.0.0")
    with pytest.raises(UsageError, match="spaces"):
        check_token("a token with spaces in it", "0.0.0.0")
    check_token(TOKEN, "0.0.0.0")


def test_on_loopback_another_host_name_is_refused(fixture_url: str) -> None:
    port = fixture_url.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", "127.0.0.1.nip.io", "localhost."):
        refused = httpx.get(fixture_url + "/api/v1/health", headers={"Host": host})
        assert "is not a loopback name" in _error(refused, 421)
    for host in (  # not host[:port]: a 400 (RFC 9112, 3.2), whatever name it holds
        f"127.0.0.1:{port}@evil.example",
        f"evil.example@127.0.0.1:{port}",
        f"localhost:{port}:1",
        "localhost:",
        "localhost:٨٧٠٠",  # digits, but not ASCII ones
        f"localhost: {port}",
        f"[::1]evil:{port}",
        "[::1",
        "::1",
        "",
    ):
        refused = httpx.get(fixture_url + "/api/v1/health", headers={"Host": host.encode()})
        assert "is not host[:port]" in _error(refused, 400), host
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"[::1]:{port}", "[::1]"):
        assert httpx.get(fixture_url + "/api/v1/health", headers={"Host": host}).status_code == 200


def test_on_loopback_the_address_listened_on_is_a_name_of_the_server(built_pack: Path) -> None:
    try:  # all of 127/8 is loopback on Linux; macOS configures 127.0.0.1 alone
        socket.create_server(("127.0.0.2", 0)).close()
    except OSError:
        pytest.skip("127.0.0.2 is not a loopback address here")
    with running(create_app([built_pack]), host="127.0.0.2") as url:
        assert url.startswith("http://127.0.0.2:")
        assert httpx.get(url + "/api/v1/health").status_code == 200  # Host: 127.0.0.2:PORT
        refused = httpx.get(url + "/api/v1/health", headers={"Host": "evil.example"})
        assert "is not a loopback name" in _error(refused, 421)


# -- the command -----------------------------------------------------------------------------


def _cli(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.Popen(
        [sys.executable, "-m", "wikigr", *args],
        stderr=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        **kwargs,
    )


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM])
def test_the_command_serves_until_ctrl_c_or_sigterm(built_pack: Path, stop: signal.Signals) -> None:
    proc = _cli("serve", str(built_pack), "--port", "0")
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert line.startswith(f"Serving {built_pack} at http://127.0.0.1:"), line
        url = line.split(" at ", 1)[1].split("/ ", 1)[0]
        assert httpx.get(url + "/api/v1/health", timeout=600).json()["packs"] == 1
        answer = httpx.post(
            url + "/api/v1/query", json={"pack": "fixture", "question": QUESTION}, timeout=600
        )
        assert answer.status_code == 200
        proc.send_signal(stop)
        _, err = proc.communicate(timeout=600)
    finally:
        proc.kill()
    assert proc.returncode == 0 and err.strip() == "Stopped.", err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--host", "0.0.0.0"], 2, "give a token (--token or --token-file)"),
        (["--host", "0.0.0.0", "--token", "short"], 2, "at least 16 characters"),
        (["--token", TOKEN, "--token-file", "t.txt"], 2, "not both"),
        (["--token-file", "missing.txt"], 2, "no token file missing.txt"),
        (["nowhere/pack"], 2, "no pack at nowhere/pack"),
    ],
)
def test_the_command_refuses_bad_settings_in_one_line(
    args: list[str], code: int, message: str, tmp_path: Path
) -> None:
    proc = _cli("serve", *args, "--port", "0", cwd=tmp_path)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == code, err
    assert err.startswith("Error: ") and message in err and len(err.strip().splitlines()) == 1


def test_a_port_in_use_is_a_runtime_error(built_pack: Path, tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        (tmp_path / "token").write_text(TOKEN + "\n")
        proc = _cli("serve", str(built_pack), "--port", str(port), "--token-file", str(tmp_path / "token"))
        _, err = proc.communicate(timeout=600)
    assert proc.returncode == 1 and f"Error: cannot listen on 127.0.0.1:{port}" in err, err


def test_the_query_command_does_not_import_the_web_stack(built_pack: Path) -> None:
    probe = (
        "import sys, json\n"
        "from wikigr.cli import run\n"
        "rc = run(sys.argv[1:])\n"
        "names = ('starlette', 'uvicorn', 'wikigr.serve', 'wikigr.agent_cache', 'anyio')\n"
        "print('LOADED', json.dumps([m for m in names if m in sys.modules]), file=sys.stderr)\n"
        "sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", probe, "query", str(built_pack), QUESTION, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED "))
    assert json.loads(line.removeprefix("LOADED ")) == []


# -- the agent cache -------------------------------------------------------------------------


def test_the_cache_reopens_a_changed_pack_and_closes_the_least_recently_used(
    built_pack: Path, tmp_path: Path
) -> None:
    from wikigr.agent_cache import AgentCache

    first, second = tmp_path / "first", tmp_path / "second"
    shutil.copytree(built_pack, first)
    shutil.copytree(built_pack, second)
    cache = AgentCache(max_agents=1)
    try:
        with cache.use([str(first)], None, "query") as agent:
            opened = agent
        with cache.use([str(first)], None, "query") as agent:
            assert agent is opened  # kept open
        manifest = first / "manifest.json"
        manifest.write_text(manifest.read_text())  # a pack update rewrites the manifest
        with cache.use([str(first)], None, "query") as agent:
            assert agent is not opened and agent.query(QUESTION).sources
        assert opened.context.store._db is None  # the old one was closed
        reopened = agent
        with cache.use([str(second)], None, "search") as agent:
            assert "synthesize" not in agent.stage_names and agent.llm is None
        assert len(cache) == 1 and reopened.context.store._db is None  # one agent at most
    finally:
        cache.close()
