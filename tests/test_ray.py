"""Distributed builds on a real local Ray (``ray.init(num_cpus=2)`` once per session): a pack built
with ``--ray`` equals the one built in one process (documents, chunks, vectors, entity graph, the
answers), from a passage corpus and from pages served on 127.0.0.1; an interrupted distributed
build resumes; a bad source on a worker is reported, not fatal. Without Ray, ``--ray`` is a
one-line error (that test runs whether Ray is installed or not)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.httpserver import LocalServer
from tests.test_graph import CORPUS
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, BuildReport, build_pack
from wikigr.pack.store import Store
from wikigr.progress import ProgressEvent

ROOT = Path(__file__).resolve().parent.parent
MORE = [
    {
        "id": f"garden-{i}",
        "title": f"Garden note {i}",
        "text": f"Tomatoes in bed {i} need water every morning and a stake by June. "
        "Compost from the kitchen feeds the soil; the Royal Horticultural Society recommends "
        f"mulch against weeds. Note {i} records the harvest of Brandywine tomatoes. " * 3,
    }
    for i in range(6)
]
QUESTIONS = [
    "Who was the first president of the American Psychological Association?",
    "How long should bread dough rise?",
    "Which court hears appeals from the circuit courts?",
]


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[Any]:
    """A local Ray on 2 CPUs for the whole session (starting one takes seconds), started as a
    build starts it (wikigr.build.ray.connect: tried again when a busy machine misses one of Ray's
    start-up windows)."""
    from wikigr.build.ray import RayOptions, connect, require_ray
    from wikigr.errors import UsageError

    try:
        require_ray()  # as a build does: Ray's options set before Ray is imported (see below)
    except UsageError:
        pytest.skip("Ray is not installed: uv sync --extra ray")
    import ray

    connect(RayOptions(num_cpus=2))
    # Under `uv run` (the README's test command) Ray's own hook would ship the working folder, .venv
    # and all (6.6 GB), to every Ray session and start each worker with `uv run`: a local Ray runs
    # this Python as it is.
    assert ray.get_runtime_context().runtime_env == {}
    yield ray
    ray.shutdown()


def _ray_options(**kwargs: Any) -> BuildOptions:
    from wikigr.build.ray import RayOptions

    return BuildOptions(ray=RayOptions(**kwargs))


def _chunks(report: BuildReport) -> tuple[list[str], list[str], np.ndarray]:
    with Store.open(report.path / "pack.db") as store:
        ids, _, matrix = store.chunk_matrix()
        texts = dict(store.rows("MATCH (c:Chunk) RETURN c.id, c.text"))
    order = np.argsort(ids)
    return [ids[i] for i in order], [texts[ids[i]] for i in order], matrix[order]


def _answers(path: Path) -> list[list[str]]:
    with KnowledgeGraphAgent(path, llm=None, top_k=3) as agent:
        return [[s.title for s in agent.query(q).sources] for q in QUESTIONS]


def _assert_same_pack(local: BuildReport, distributed: BuildReport) -> None:
    a, b = local.manifest, distributed.manifest
    assert a.stats == b.stats  # articles, sections, chunks, links, entities, facts, relations
    assert [(s.url, s.status, s.sha256, s.chunks) for s in a.sources] == [
        (s.url, s.status, s.sha256, s.chunks) for s in b.sources
    ]
    ids_a, texts_a, vectors_a = _chunks(local)
    ids_b, texts_b, vectors_b = _chunks(distributed)
    assert ids_a == ids_b and texts_a == texts_b
    np.testing.assert_allclose(vectors_a, vectors_b, atol=1e-4)
    assert local.graph is not None and distributed.graph is not None
    assert (local.graph.entities, local.graph.relations, local.graph.facts, local.graph.mentions) == (
        distributed.graph.entities,
        distributed.graph.relations,
        distributed.graph.facts,
        distributed.graph.mentions,
    )
    assert distributed.graph.extractor == local.graph.extractor == "spacy"


def test_a_ray_build_of_a_corpus_equals_the_local_build(ray_cluster: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.jsonl"  # JSON lines, as a large corpus comes
    corpus.write_text("".join(json.dumps(row) + "\n" for row in CORPUS + MORE))
    local = build_pack("local", [], out=tmp_path / "local", corpus=corpus)
    # Small tasks: the corpus is spread over several of them, on both workers.
    distributed = build_pack(
        "ray", [], out=tmp_path / "ray", corpus=corpus, options=_ray_options(batch_chunks=3)
    )
    _assert_same_pack(local, distributed)
    assert "prepare" in distributed.seconds and distributed.chunks_embedded == local.chunks_embedded
    assert _answers(local.path) == _answers(distributed.path)


def _site(server: LocalServer) -> list[str]:
    pages = {
        "/index.html": ("Tomato growing", "Start with <a href='soil.html#compost'>Compost and soil</a>."),
        "/soil.html": ("Soil", "<h2 id='compost'>Compost</h2> Compost feeds the Royal Horticultural soil."),
        "/water.html": ("Watering", "Water them each morning; see <a href='index.html'>Tomato growing</a>."),
        "/pests.html": ("Pests", "Aphids and the Tomato Hornworm eat leaves; Neem Oil helps."),
    }
    for path, (title, body) in pages.items():
        text = (
            f"<html><head><title>{title}</title></head><body><h1>{title}</h1><p>{body} "
            + ("Gardeners in Kent and Sussex grow Brandywine and Moneymaker tomatoes. " * 8)
            + "</p></body></html>"
        )
        server.add(path, text.encode())
    server.add("/gone.html", "gone", status=404)
    server.add("/blob.bin", bytes(range(256)) * 64, content_type="application/octet-stream")
    return [server.url(p) for p in [*pages, "/gone.html", "/blob.bin"]]


def test_a_ray_build_from_loopback_pages_equals_the_local_build(
    ray_cluster: Any, server: LocalServer, tmp_path: Path
) -> None:
    urls = _site(server)
    local = build_pack("local", urls, out=tmp_path / "local")
    distributed = build_pack("ray", urls, out=tmp_path / "ray", options=_ray_options(batch_urls=2))
    _assert_same_pack(local, distributed)
    assert distributed.manifest.stats.links >= 2  # links between pages fetched by different tasks
    # The bad sources failed on a worker: reported like the local build's, and the build went on.
    assert distributed.failed == local.failed
    assert {u for u, _ in distributed.failed} == {server.url("/gone.html"), server.url("/blob.bin")}
    assert "404" in dict(distributed.failed)[server.url("/gone.html")]


class _Interrupt:
    """A progress callback that interrupts the build (as Ctrl-C would) once some documents are done."""

    def __init__(self, after: int) -> None:
        self.after = after

    def __call__(self, event: ProgressEvent) -> None:
        if event.stage == "fetch" and event.done >= self.after:
            raise KeyboardInterrupt


def test_an_interrupted_ray_build_resumes(ray_cluster: Any, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(CORPUS + MORE))
    out = tmp_path / "pack"
    options = _ray_options(batch_chunks=2, in_flight=1)
    with pytest.raises(KeyboardInterrupt):
        build_pack("resumable", [], out=out, corpus=corpus, options=options, on_progress=_Interrupt(3))
    assert not out.exists()  # nothing swapped in
    cached = list((tmp_path / ".pack.partial" / "cache").glob("*.npy"))
    assert 3 <= len(cached) < len(CORPUS + MORE)
    report = build_pack("resumable", [], out=out, corpus=corpus, options=options)
    assert report.resumed == len(cached)
    total = report.manifest.stats.chunks
    assert report.chunks_embedded < total  # what was embedded before is not embedded again
    local = build_pack("local", [], out=tmp_path / "local", corpus=corpus)
    _assert_same_pack(local, report)


def test_ray_in_shards_equals_the_local_build_in_shards(ray_cluster: Any, tmp_path: Path) -> None:
    """With --shards, each shard's store is written by a Ray task (in parallel) and unpacked into
    the pack: the same shards as a local build's."""
    from wikigr.validate import validate_pack

    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(CORPUS + MORE))
    local = build_pack("sharded", [], out=tmp_path / "local", corpus=corpus, shards=3)
    report = build_pack("sharded", [], out=tmp_path / "ray", corpus=corpus, options=_ray_options(), shards=3)
    assert [(s.path, s.name, s.articles, s.chunks) for s in report.manifest.shards] == [
        (s.path, s.name, s.articles, s.chunks) for s in local.manifest.shards
    ]
    assert report.manifest.stats == local.manifest.stats
    assert validate_pack(report.path).ok
    # The pack's one entity graph (built on the driver, spaCy on the workers), its parts in the shards.
    assert report.graph is not None and local.graph is not None
    assert report.graph.entities == local.graph.entities <= report.manifest.stats.entities


def test_a_shard_written_on_another_machine_comes_back_as_a_tar(ray_cluster: Any, tmp_path: Path) -> None:
    """A shard task on a machine other than the driver's returns its folder as a tar stream."""
    import io
    import tarfile

    from wikigr.build.ray import from_arrow, prepare_batch
    from wikigr.build.shards import write_shard_task
    from wikigr.build.write import classify_sources, corpus_graph
    from wikigr.embed import get_embedder
    from wikigr.validate import validate_pack

    options = BuildOptions()
    table = prepare_batch("passages", [[r["id"], r["title"], r["text"]] for r in CORPUS], options)
    docs = from_arrow(table)
    _, records, _ = classify_sources([d.source for d in docs], {d.source: d for d in docs})
    target = str(tmp_path / "x")
    embedder = get_embedder(options.embedder)
    graph, report = corpus_graph(docs, embedder.dimension, options, embedder)
    data = write_shard_task("far", 1, 2, table, records, options, {}, graph, target, "elsewhere")
    assert data and report.entities > 0
    assert not (tmp_path / "x").exists()
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(tmp_path / "shard", filter="data")
    assert validate_pack(tmp_path / "shard").ok
    shard = json.loads((tmp_path / "shard" / "manifest.json").read_text())
    assert shard["name"] == "far-s01" and shard["stats"]["entities"] == report.entities


def test_an_update_on_ray_embeds_only_what_changed(
    ray_cluster: Any, capsys: pytest.CaptureFixture[str], server: LocalServer, tmp_path: Path
) -> None:
    from tests.cli.test_cli import cli
    from tests.test_update import OOLONG, PAGES

    for path, body in PAGES.items():
        server.add(path, body)
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(server.url(p) + "\n" for p in PAGES))
    code, _, err = cli(capsys, "pack", "create", "tea", "--urls", str(urls), "--ray")
    assert code == 0, err
    server.add("/site/teapots.html", PAGES["/site/teapots.html"].replace("clay", "Yixing clay"))
    server.add("/site/oolong.html", OOLONG)
    urls.write_text(urls.read_text() + server.url("/site/oolong.html") + "\n")
    code, out, err = cli(capsys, "pack", "update", "tea", "--urls", str(urls), "--ray", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["added"] == [server.url("/site/oolong.html")]
    assert report["changed"] == [server.url("/site/teapots.html")]
    assert len(report["unchanged"]) == 2
    assert 0 < report["chunks_embedded"] < report["stats"]["chunks"]  # the rest came from the store
    assert report["stats"]["articles"] == 4 and report["stats"]["links"] == 3


def test_without_ray_the_flag_is_a_one_line_error(tmp_path: Path) -> None:
    blocker = tmp_path / "blocker" / "ray"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(CORPUS))
    env = {**os.environ, "PYTHONPATH": str(blocker.parent)}
    proc = subprocess.run(
        [sys.executable, "-m", "wikigr", "pack", "create", "x", "--corpus", str(corpus), "--ray"],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 2, proc.stderr
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert "uv sync --extra ray" in lines[0] and "pip install 'wikigr[ray]'" in lines[0]
    assert not (tmp_path / "home" / "packs" / "x").exists()


def test_a_local_ray_that_misses_a_start_up_window_is_started_again_then_one_line() -> None:
    """Ray gives its helper processes fixed windows to start in, which a busy machine misses (here
    the GCS's port file, given 0 s): the start is tried again, each failed start's processes
    stopped first, and the last failure is a one-line error."""
    pytest.importorskip("ray", reason="Ray is not installed: uv sync --extra ray")
    script = (
        "from wikigr.build.ray import START_ATTEMPTS, RayOptions, connect\n"
        "from wikigr.errors import BuildError\n"
        "try:\n"
        "    connect(RayOptions(num_cpus=1))\n"
        "except BuildError as exc:\n"
        "    print(exc.message)\n"
        "import psutil\n"  # Ray's own copy, once Ray is imported
        "print(START_ATTEMPTS, len(psutil.Process().children(recursive=True)))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    env["RAY_gcs_server_port_wait_time_s"] = "0"
    command = [sys.executable, "-c", script]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600)
    message, counts = done.stdout.splitlines()
    attempts, left = counts.split()
    assert message.startswith("cannot start or reach Ray (a local Ray): Timed out waiting for file"), done
    assert message.endswith(f"(after {attempts} tries: is the machine very busy?)") and int(attempts) > 1
    assert left == "0"  # no GCS, raylet or helper left running by the failed starts


def test_a_local_ray_under_uv_run_ships_nothing_though_ray_was_imported_first(tmp_path: Path) -> None:
    """Under `uv run` (the README's commands), Ray's own hook would ship the working folder, .venv
    and all, to a new Ray and start its workers with `uv run`. wikigr turns the hook off for a local
    Ray; Ray reads that setting once, on import, so a program that imported Ray first still gets it
    off (wikigr.build.ray._no_uv_run_hook)."""
    pytest.importorskip("ray", reason="Ray is not installed: uv sync --extra ray")
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv is not installed (the README's commands install it)")
    script = (
        "import json, ray\n"  # imported before wikigr
        "from wikigr.build.ray import RayOptions, connect\n"
        "connect(RayOptions(num_cpus=1))\n"
        "print(json.dumps(ray.get_runtime_context().runtime_env))\n"
        "ray.shutdown()\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("RAY_ADDRESS", "RAY_ENABLE_UV_RUN_RUNTIME_ENV")}
    command = [uv, "run", "--no-sync", "--project", str(ROOT), "python", "-c", script]
    # run from an empty folder: were the hook on, it would ship that folder, not the project's
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=900, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout.splitlines()[-1]) == {}
