"""A multilingual pack's lexicon (wikigr/pack/lexicon.py): its documents' words embedded at build
time, so that a question in another language is also searched by keyword, in the documents' words
(wikigr/retrieval/across.py, page_score's ``keyword_across``). Real e5, offline; pages made here."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import cli
from tests.test_embed_e5 import e5_cache, onnx_e5  # noqa: F401  (fixtures)
from tests.test_embed_multilingual import multilingual, use_cache  # noqa: F401  (fixtures)
from tests.test_languages_across import _page_score, man_pages  # noqa: F401  (a fixture)
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.embed import embed_queries, get_embedder
from wikigr.errors import InvalidPackError
from wikigr.models import e5, use
from wikigr.pack.keyword import KeywordIndex
from wikigr.pack.lexicon import LEXICON_DIR, WORDS_FILE, Lexicon, lexicon_words
from wikigr.pack.vectors import VECTORS_FILE
from wikigr.validate import Check, validate_pack


def _check(pack: Path) -> Check:
    return next(c for c in validate_pack(pack).checks if c.name == "lexicon")


def test_the_build_keeps_the_documents_words_and_a_russian_word_finds_its_english_one(
    man_pages: Path,  # noqa: F811
) -> None:
    lexicon = Lexicon.load(man_pages, use.DIMENSION)
    assert lexicon is not None
    assert {"hostname", "process", "signal"} <= set(lexicon.words)
    assert lexicon.words == sorted(lexicon.words) and len(set(lexicon.words)) == len(lexicon.words)
    assert np.allclose(np.linalg.norm(lexicon.vectors, axis=1), 1.0, atol=1e-4)
    nearest = lexicon.nearest(embed_queries(get_embedder("multilingual"), ["сигнал", "процесс"]), 3)
    assert nearest[0][0][0] == "signal" and nearest[1][0][0] == "process"
    assert all(a[1] >= b[1] for found in nearest for a, b in itertools.pairwise(found))
    assert _check(man_pages).ok


def test_pack_info_says_how_many_words_the_lexicon_holds(
    capsys: pytest.CaptureFixture[str],
    man_pages: Path,  # noqa: F811
) -> None:
    words = len(json.loads((man_pages / LEXICON_DIR / WORDS_FILE).read_text(encoding="utf-8")))
    code, out, err = cli(capsys, "pack", "info", str(man_pages), "--json")
    assert code == 0, err
    assert json.loads(out)["lexicon"] == words
    code, out, err = cli(capsys, "pack", "info", str(man_pages))
    assert code == 0, err
    assert f"lexicon: {words} words, for questions in other languages" in out
    (man_pages / LEXICON_DIR / WORDS_FILE).write_text("[1]", encoding="utf-8")
    code, out, err = cli(capsys, "pack", "info", str(man_pages), "--json")
    assert code == 0, err
    assert "is not a list" in json.loads(out)["lexicon"]


def test_a_russian_question_is_also_searched_in_the_documents_words(man_pages: Path) -> None:  # noqa: F811
    question = "Завершить процесс по его идентификатору"
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        result = agent.query(question)
        english = agent.query("Kill a process by its identifier")
    assert result.sources[0].url.rsplit("/", 1)[-1].startswith("kill")
    read_as = _page_score(result)["read_as"]
    assert isinstance(read_as, list) and "process" in read_as
    assert "read_as" not in _page_score(english)  # the documents' language: its own words
    unread = {"page_score": {"keyword_across": 0.0, "reading_across": 0.0}}
    with KnowledgeGraphAgent(man_pages, llm=None, options=unread) as agent:
        assert "read_as" not in _page_score(agent.query(question))


def test_words_are_one_spelling_per_keyword_token_in_three_chunks_at_least(tmp_path: Path) -> None:
    from wikigr.pack.keyword import build_keyword_index

    texts = [
        "Files and the file.",
        "A file, files.",
        "Archive twice.",
        "Archive, directory.",
        "Directory.",
        "Directory!",
    ]
    build_keyword_index(tmp_path / "bm25", [f"c{i}" for i in range(len(texts))], texts)
    index = KeywordIndex.load(tmp_path / "bm25")
    words = lexicon_words(texts, index)
    assert "directory" in words and "archive" not in words  # two chunks only
    assert len({tuple(index.tokens(w)) for w in words}) == len(words)
    assert len(lexicon_words(texts, index, max_words=1)) == 1


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda f: (f / WORDS_FILE).write_text('{"not": "a list"}'), "not a list"),
        (lambda f: (f / WORDS_FILE).write_text("[1, 2]"), "not a list"),
        (lambda f: np.save(f / VECTORS_FILE, np.zeros((2, 3), np.float32)), "not float32"),
        (lambda f: np.save(f / VECTORS_FILE, np.array([object()]), allow_pickle=True), VECTORS_FILE),
        (lambda f: (f / VECTORS_FILE).unlink(), "missing"),
    ],
)
def test_a_damaged_lexicon_is_named_in_one_line_by_validate_and_by_the_query(
    man_pages: Path,  # noqa: F811
    damage: object,
    says: str,
) -> None:
    folder = man_pages / LEXICON_DIR
    damage(folder)  # type: ignore[operator]
    with pytest.raises(InvalidPackError, match=says) as raised:
        Lexicon.load(man_pages, use.DIMENSION)
    assert "\n" not in str(raised.value)
    check = _check(man_pages)
    assert not check.ok and says in check.detail
    with KnowledgeGraphAgent(man_pages, llm=None) as agent, pytest.raises(InvalidPackError, match="lexicon"):
        agent.query("Распаковать архив в текущий каталог")


def test_a_pack_of_the_built_in_model_has_no_lexicon(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("a.md", "b.md"):
        (docs / name).write_text(f"# {name}\n\nThe file archive tool extracts files.\n", encoding="utf-8")
    build_pack("plain", [docs.as_uri()], out=tmp_path / "pack")
    assert not (tmp_path / "pack" / LEXICON_DIR).exists()
    assert Lexicon.load(tmp_path / "pack", 384) is None
    assert json.loads((tmp_path / "pack" / "manifest.json").read_text())["embedder"]["name"] != use.NAME


@pytest.mark.parametrize(
    "options", [{"keyword_across": -0.1}, {"keyword_across": float("nan")}, {"keyword_rrf": 0}]
)
def test_page_scores_lexicon_options_are_checked(options: dict[str, float]) -> None:
    from wikigr.retrieval.stages.page_score import PageScoreOptions

    with pytest.raises(ValueError, match="keyword_"):
        PageScoreOptions(**options)  # type: ignore[arg-type]


def test_many_short_texts_embedded_together_are_near_each_alone(onnx_e5: e5.E5Onnx) -> None:  # noqa: F811
    words = ["file", "archive", "hostname", "файл", "архив", "process identifier", "kill", "x" * 3000]
    together = onnx_e5.embed_words(words)
    alone = onnx_e5.embed_queries(words)
    assert together.shape == alone.shape and together.dtype == np.float32
    assert ((together * alone).sum(axis=1) > 0.99).all()
    assert np.allclose(together[-1], alone[-1], atol=1e-6)  # longer than a window: embedded alone


def test_the_words_looked_up_are_those_in_the_questions_own_script() -> None:
    from wikigr.retrieval.across import question_words

    assert question_words("Получить имя хоста компьютера через ssh", "ru") == [
        "получить",
        "имя",
        "хоста",
        "компьютера",
        "получить имя",
        "имя хоста",
        "хоста компьютера",
    ]  # "через" is a stopword, "ssh" a name kept as it is
    from wikigr.pack.analyze import default_stopwords

    assert question_words("How do I set the hostname of the computer?", "en", default_stopwords()) == [
        "how",
        "set",
        "hostname",
        "computer",
    ]  # an English question on Russian pages: its Latin words, no stopwords
