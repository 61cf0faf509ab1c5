"""wikigr.lang: what a document and a question are written in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikigr import lang
from wikigr.errors import InvalidPackError
from wikigr.pack.manifest import load_manifest

ROOT = Path(__file__).resolve().parent.parent

RUSSIAN = (
    "Команда grep ищет в файлах строки, совпадающие с шаблоном, и печатает их. "
    "По умолчанию она читает стандартный ввод, если файлы не указаны."
)
ENGLISH = (
    "The grep command searches files for lines that match a pattern and prints them. "
    "By default it reads standard input when no file is given."
)


def test_documents_are_identified() -> None:
    assert lang.detect(RUSSIAN) == "ru"
    assert lang.detect(ENGLISH) == "en"
    assert lang.detect("grep -r x") == lang.UNKNOWN  # too few letters to tell


def test_a_question_is_read_from_its_script_and_the_packs_languages() -> None:
    assert lang.question_language("Как установить таймаут сокета?", ["en"]) == "ru"
    assert lang.question_language("How do I set a socket timeout?", ["en", "ru"]) == "en"
    assert lang.question_language("ls -la", ["ru"]) == "en"  # Latin letters; no Latin language in the pack
    assert lang.question_language("1 + 2", ["en"]) == lang.UNKNOWN


def test_stemmers_and_names() -> None:
    assert lang.stemmer_name("ru") == "russian"
    assert lang.stemmer_name("en") is None  # English tokens stay unstemmed
    assert lang.summarize({"en": 3, "ru": 5}) == "Russian (5), English (3)"
    assert lang.script("Привет, world") == "cyrillic"


def test_the_manifest_records_languages(tmp_path: Path) -> None:
    data = json.loads((ROOT / "packs" / "pydocs" / "manifest.json").read_text(encoding="utf-8"))
    data["languages"] = {"en": 2, "ru": 3}
    (tmp_path / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    manifest = load_manifest(tmp_path / "manifest.json")
    assert manifest.language_codes() == ["ru", "en"]
    assert manifest.to_dict()["languages"] == {"en": 2, "ru": 3}
    data["languages"] = {"../x": 1}
    (tmp_path / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InvalidPackError, match="not a language code"):
        load_manifest(tmp_path / "manifest.json")
    del data["languages"]  # a pack built before languages were recorded is English
    (tmp_path / "manifest.json").write_text(json.dumps(data), encoding="utf-8")
    assert load_manifest(tmp_path / "manifest.json").language_codes() == ["en"]
