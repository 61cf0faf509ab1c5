"""Keyword search per language: each chunk analysed in its document's language, the question in its own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikigr.errors import InvalidPackError
from wikigr.pack.analyze import RUSSIAN_STOPWORDS, Analysis
from wikigr.pack.keyword import KeywordIndex, KeywordUnion, build_keyword_index

IDS = ["ru-socket", "ru-file", "en-socket", "en-json"]
TEXTS = [
    "Метод socket.settimeout задаёт таймаут блокирующих операций сокета в секундах.",
    "Функция open открывает файл и возвращает файловый объект.",
    "socket.settimeout(value) sets a timeout on blocking socket operations.",
    "json.loads parses a JSON document and returns a Python object.",
]
LANGUAGES = ["ru", "ru", "en", "en"]


@pytest.fixture
def index(tmp_path: Path) -> KeywordIndex:
    build_keyword_index(tmp_path / "bm25", IDS, TEXTS, languages=LANGUAGES)
    return KeywordIndex.load(tmp_path / "bm25")


def test_an_inflected_russian_question_finds_the_russian_chunk(index: KeywordIndex) -> None:
    # "таймаута" / "сокетов" are in no chunk as written: the stems "таймаут" / "сокет" are
    hits = index.search("Как изменить значение таймаута для сокетов?", 4, language="ru")
    assert hits and hits[0][0] == "ru-socket"
    assert [c for c, _ in index.search("открыть файлы", 4, language="ru")] == ["ru-file"]


def test_the_question_is_analysed_in_its_own_language(index: KeywordIndex) -> None:
    # read as English (no stemmer), the inflected Russian words meet nothing
    assert index.search("таймаута сокетов", 4) == []
    assert index.tokens("таймаута сокетов", "ru") == ["таймаут", "сокет"]
    assert index.tokens("таймаута сокетов") == ["таймаута", "сокетов"]


def test_latin_identifiers_in_russian_text_stay_as_they_are(index: KeywordIndex) -> None:
    assert {"settimeout", "socket.settimeout", "socket"} <= set(index.tokens(TEXTS[0], "ru"))
    found = [c for c, _ in index.search("settimeout", 4, language="ru")]
    assert set(found) == {"ru-socket", "en-socket"}
    assert index.tokens("operations sets", "ru") == ["operations", "sets"]  # English is never stemmed


def test_russian_function_words_are_stopwords(index: KeywordIndex) -> None:
    assert index.tokens("Как и где это сделать?", "ru") == ["сдела"]
    assert {"как", "что", "для", "это", "ещё", "еще"} <= RUSSIAN_STOPWORDS
    assert 100 <= len(RUSSIAN_STOPWORDS) <= 250


def test_the_meta_records_the_analysis(tmp_path: Path, index: KeywordIndex) -> None:
    meta = json.loads((tmp_path / "bm25" / "wikigr_keyword.json").read_text(encoding="utf-8"))
    tokenizer = meta["tokenizer"]
    assert tokenizer["version"] == 2 and tokenizer["stemmer"] is None
    assert list(tokenizer["languages"]) == ["ru"]
    assert tokenizer["languages"]["ru"]["stemmer"] == "russian"
    assert tokenizer["languages"]["ru"]["script"] == "cyrillic"
    assert "как" in tokenizer["languages"]["ru"]["stopwords"]
    assert index.analysis.describe() == {"en": "unstemmed", "ru": "snowball russian"}


@pytest.mark.parametrize(
    "languages", [None, ["en"] * 4, ["en", "und", "und", "en"], ["en", "ja", "uk", "en"]]
)
def test_an_english_index_is_byte_identical(tmp_path: Path, languages: list[str] | None) -> None:
    """English (and languages without a stemmer) are analysed as wikigr always did: the same files."""
    build_keyword_index(tmp_path / "plain", IDS, TEXTS)
    build_keyword_index(tmp_path / "given", IDS, TEXTS, languages=languages)
    for path in (tmp_path / "plain").iterdir():
        assert (tmp_path / "given" / path.name).read_bytes() == path.read_bytes(), path.name
    meta = json.loads((tmp_path / "given" / "wikigr_keyword.json").read_text(encoding="utf-8"))
    assert meta["tokenizer"]["version"] == 1 and "languages" not in meta["tokenizer"]


def test_languages_must_match_the_texts(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="one per text"):
        build_keyword_index(tmp_path / "bm25", IDS, TEXTS, languages=["ru"])


def _edit_meta(folder: Path, change: dict[str, object]) -> None:
    path = folder / "wikigr_keyword.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["tokenizer"]["languages"]["ru"].update(change)
    path.write_text(json.dumps(meta), encoding="utf-8")


def _refused(folder: Path, match: str) -> str:
    with pytest.raises(InvalidPackError, match=match) as info:
        KeywordIndex.load(folder)
    assert "\n" not in str(info.value)
    return str(info.value)


def test_an_unknown_stemmer_is_refused_with_one_line(tmp_path: Path, index: KeywordIndex) -> None:
    _edit_meta(tmp_path / "bm25", {"stemmer": "klingon"})
    message = _refused(tmp_path / "bm25", "unknown stemmer 'klingon' for language 'ru'")
    assert message.startswith("corrupt keyword index")


@pytest.mark.parametrize(
    ("change", "match"),
    [
        ({"stemmer": "german"}, "unknown stemmer 'german'"),  # a known stemmer, not Russian's
        ({"stopwords": "как"}, "stopwords must be a list"),
        ({"stopwords": ["x"] * 10_001}, "stopwords must be a list"),
        ({"script": "latin"}, "unsupported tokenizer settings"),
    ],
)
def test_a_tampered_analysis_is_refused(
    tmp_path: Path, index: KeywordIndex, change: dict[str, object], match: str
) -> None:
    _edit_meta(tmp_path / "bm25", change)
    _refused(tmp_path / "bm25", match)


def test_a_newer_analysis_is_refused(tmp_path: Path, index: KeywordIndex) -> None:
    path = tmp_path / "bm25" / "wikigr_keyword.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["tokenizer"]["version"] = 3
    path.write_text(json.dumps(meta), encoding="utf-8")
    _refused(tmp_path / "bm25", "tokenizer version 3 is newer than this wikigr supports .*upgrade wikigr")


@pytest.mark.parametrize("languages", [{}, {"../x": {}}, {f"l{n:02d}": {} for n in range(101)}])
def test_malformed_languages_are_refused(tmp_path: Path, index: KeywordIndex, languages: object) -> None:
    path = tmp_path / "bm25" / "wikigr_keyword.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["tokenizer"]["languages"] = languages
    path.write_text(json.dumps(meta), encoding="utf-8")
    _refused(tmp_path / "bm25", "corrupt keyword index")


def test_shards_in_different_languages_search_as_one(tmp_path: Path) -> None:
    """A shard of Russian chunks and one of English chunks: the union reads a Russian question in
    Russian in both."""
    build_keyword_index(tmp_path / "a", IDS[:2], TEXTS[:2], languages=LANGUAGES[:2])
    build_keyword_index(tmp_path / "b", IDS[2:], TEXTS[2:], languages=LANGUAGES[2:])
    union = KeywordUnion.load_all([tmp_path / "b", tmp_path / "a"])
    assert union.analysis.describe() == {"en": "unstemmed", "ru": "snowball russian"}
    hits = [c for c, _ in union.search("таймаута settimeout", 4, language="ru")]
    assert hits[0] == "ru-socket" and set(hits) == {"ru-socket", "en-socket"}


def test_the_analysis_of_other_snowball_languages() -> None:
    analysis = Analysis.for_chunks(["de", "en", "fr"])
    assert analysis.describe() == {"en": "unstemmed", "de": "snowball german", "fr": "snowball french"}
    german = analysis.for_language("de")
    assert german.tokens("Die Verbindungen werden geschlossen") == german.tokens("Verbindung geschlossene")
    assert analysis.for_language("it") is analysis.default  # not in the index: read as English
