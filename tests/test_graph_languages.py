"""The entity graph in other languages than English: Russian documents get natasha's entities
(normalised, so that inflected mentions meet), a Russian question links to them, and documents in
a language with no offline entity model are skipped with a one-line note — on real packs built
from small documents written here, with the built-in embedder."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.build.prepare import passage_url
from wikigr.graph.build import ChunkRecord, GraphOptions, build_graph, skipped_note
from wikigr.graph.extract import cyrillic_names, extractor_for
from wikigr.graph.index import EntityGraph
from wikigr.graph.russian import NatashaExtractor
from wikigr.pack.store import open_store
from wikigr.retrieval.stages.bridge import TitleIndex

RUSSIAN = [
    {
        "id": "thompson",
        "title": "Кен Томпсон",
        "text": "Кен Томпсон — американский программист, один из создателей операционной системы Unix. "
        "В 1966 году он начал работать в компании Bell Labs. Позже Томпсон учился в Калифорнийском "
        "университете в Беркли и получил там степень магистра.",
    },
    {
        "id": "unix",
        "title": "Unix",
        "text": "Unix — семейство переносимых многозадачных операционных систем. Первую версию системы "
        "написали Кеном Томпсоном и Деннисом Ритчи в лаборатории Bell Labs в 1969 году. Система быстро "
        "распространилась в университетах.",
    },
    {
        "id": "go",
        "title": "Go (язык программирования)",
        "text": "Go — компилируемый язык программирования, разработанный внутри компании Google. Над "
        "языком работали Роберт Гризмер, Роб Пайк и Кен Томпсон. Первая версия языка вышла в 2009 году.",
    },
    {
        "id": "bread",
        "title": "Хлеб",
        "text": "Тесто для хлеба месят десять минут, затем оставляют подниматься на час. Хлеб выпекают "
        "до появления румяной корочки. Свежий хлеб вкуснее всего в первый день.",
    },
]
GERMAN = {
    "id": "berlin",
    "title": "Berlin",
    "text": "Berlin ist die Hauptstadt der Bundesrepublik Deutschland und mit rund 3,7 Millionen "
    "Einwohnern die bevölkerungsreichste Stadt des Landes. Die Stadt liegt an der Spree.",
}


@pytest.fixture(scope="module")
def russian_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Four Russian documents and a German one; every chunk gets the full extraction (beta 1)."""
    folder = tmp_path_factory.mktemp("rucorpus")
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps([*RUSSIAN, GERMAN], ensure_ascii=False))
    options = BuildOptions()
    options.graph_options.beta = 1.0
    out = tmp_path_factory.mktemp("rupacks") / "ru"
    report = build_pack("ru", [], out=out, corpus=corpus, options=options)
    assert report.graph is not None
    assert report.graph.extractor == "natasha"
    assert report.graph.skeleton_chunks == len(RUSSIAN)  # the German chunk is not read
    assert report.graph.note == "entity graph skipped for 1 document in German (no offline entity model)"
    return out


def _mentions(pack: Path) -> dict[str, set[str]]:
    """Entity key -> the documents (passage ids) whose chunks mention it."""
    with open_store(pack / "pack.db") as store:
        article = {r[0]: r[1] for r in store.rows("MATCH (c:Chunk) RETURN c.id, c.article_id")}
        found: dict[str, set[str]] = {}
        for chunk, key in store.entity_mentions():
            found.setdefault(key, set()).add(article[chunk])
    return found


def test_extractor_for_names_each_languages_offline_model() -> None:
    assert extractor_for("en") == "spacy"
    assert extractor_for("und") == "spacy"  # too short to tell: read as English, as before
    assert extractor_for("ru") == "natasha"
    assert extractor_for("de") is None


def test_natasha_gives_normalised_names_and_facts() -> None:
    text = (
        "Деннис Ритчи работал в Лаборатории Белла. Вместе с Кеном Томпсоном он создал язык C. "
        "Кен Томпсон учился в Калифорнийском университете."
    )
    [found] = NatashaExtractor().extract([text])
    names = {m.name: m.type for m in found.mentions}
    assert names["Кен Томпсон"] == "person"  # «Кеном Томпсоном» and «Кен Томпсон»: one name
    assert names["Лаборатория Белла"] == "organization"  # «в Лаборатории Белла», in the nominative
    assert names["Калифорнийский университет"] == "organization"
    assert not any("Кеном" in name for name in names)
    facts = {(f.subject, f.predicate, f.object) for f in found.facts}
    assert ("Деннис Ритчи", "работать в", "Лаборатория Белла") in facts


def test_the_russian_graph_has_normalised_entities(russian_pack: Path) -> None:
    with open_store(russian_pack / "pack.db") as store:
        entities = {r[0]: (r[1], r[2]) for r in store.rows("MATCH (e:Entity) RETURN e.id, e.name, e.type")}
        relations = {r[2] for r in store.entity_relations()}
    assert entities["деннис ритчи"] == ("Деннис Ритчи", "person")  # written «Деннисом Ритчи»
    assert entities["калифорниискии университет"] == ("Калифорнийский университет", "organization")
    assert entities["роб паик"] == ("Роб Пайк", "person")
    assert "CO_OCCURS" in relations
    assert not [key for key in entities if key.startswith("кеном") or key.startswith("деннисом")]


def test_inflected_mentions_of_a_name_are_one_entity(russian_pack: Path) -> None:
    mentions = _mentions(russian_pack)
    # «Кен Томпсон» (the title, and the Go page) and «Кеном Томпсоном» (the Unix page): one node.
    assert mentions["кен томпсон"] == {passage_url("thompson"), passage_url("unix"), passage_url("go")}


def test_documents_without_an_entity_model_are_skipped_and_still_answered(russian_pack: Path) -> None:
    mentions = _mentions(russian_pack)
    assert not [key for key, docs in mentions.items() if passage_url("berlin") in docs]
    with KnowledgeGraphAgent(russian_pack, llm=None, top_k=2) as agent:
        result = agent.query("Welche Stadt ist die Hauptstadt der Bundesrepublik Deutschland?")
    assert result.sources[0].title == "Berlin"


def test_the_graph_profile_answers_a_russian_question(russian_pack: Path) -> None:
    question = "Какую систему создали при участии Денниса Ритчи?"  # a form no document writes
    with KnowledgeGraphAgent(russian_pack, profile="graph", llm=None, top_k=3) as agent:
        result = agent.query(question)
    [ppr] = [s for s in result.trace["stages"] if s["stage"] == "ppr"]
    assert "skipped" not in ppr
    assert ppr["detail"]["linked"] == ["деннис ритчи"]
    assert result.sources[0].title == "Unix"


def test_pack_graph_rebuilds_the_russian_graph(
    russian_pack: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from wikigr.cli import run

    copy = tmp_path / "ru"
    shutil.copytree(russian_pack, copy)
    assert run(["pack", "graph", str(copy), "--beta", "1", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["extractor"] == "natasha"
    assert report["note"] == "entity graph skipped for 1 document in German (no offline entity model)"
    assert _mentions(copy) == _mentions(russian_pack)  # the same graph as the build's
    assert run(["pack", "graph", str(copy), "--beta", "1"]) == 0  # the text view says it in one line
    printed = capsys.readouterr()
    assert "Entity graph of" in printed.out
    assert printed.err.strip().splitlines()[-1] == (
        "note: entity graph skipped for 1 document in German (no offline entity model)"
    )


def test_the_skip_note_counts_documents_per_language() -> None:
    chunks = [
        ChunkRecord("1", "Berlin", "", "de"),
        ChunkRecord("2", "Berlin", "", "de"),
        ChunkRecord("3", "Paris", "", "fr"),
        ChunkRecord("4", "München", "", "de"),
        ChunkRecord("5", "Unix", "", "en"),
    ]
    languages = [c.language for c in chunks]
    note = skipped_note(chunks, languages, [extractor_for(code) for code in languages])
    assert (
        note
        == "entity graph skipped for 2 documents in German and 1 document in French (no offline entity model)"
    )
    assert skipped_note(chunks[4:], ["en"], ["spacy"]) == ""


def test_a_given_language_is_not_detected_again() -> None:
    # A record's language (as the pack build may pass it) decides: this English text is "German".
    chunks = [
        ChunkRecord("1", "Paris", "Paris is the capital and largest city of France, on the Seine.", "de")
    ]
    tables, report = build_graph(chunks, np.ones((1, 4), np.float32), None)
    assert tables.entity["id"] == [] and report.extractor == "keywords"
    assert "1 document in German" in report.note


def test_a_russian_question_links_inflected_names() -> None:
    graph = EntityGraph(
        ["c1", "c2"],
        ["лаборатория белла", "кен томпсон", "unix"],
        ["organization", "person", "name"],
        [("c1", "лаборатория белла"), ("c1", "кен томпсон"), ("c2", "unix")],
        [],
    )
    linked = graph.link("Кто работал в Лаборатории Белла вместе с Кеном Томпсоном над Unix?")
    assert {graph.entity_keys[e] for e in linked} == {"лаборатория белла", "кен томпсон", "unix"}
    assert graph.link("Работал ли он в лаборатории?") == {}  # one word, not written as a name
    assert cyrillic_names("Где работал Кеном Томпсоном?") == ["Кеном Томпсоном"]
    assert cyrillic_names("Кто такой Томпсон?") == []  # a sentence's first word is no name


def test_names_found_in_the_skeleton_reach_every_russian_chunk() -> None:
    # Only the first (most central) chunk gets natasha; the others mention its names inflected.
    chunks = [
        ChunkRecord("a", "Unix", "Первую версию Unix написали Кен Томпсон и Деннис Ритчи в Bell Labs.", "ru"),
        ChunkRecord("b", "B", "Язык B создали Кеном Томпсоном задолго до языка C, ещё в Bell Labs.", "ru"),
        ChunkRecord("c", "C", "Позже язык C развивал Деннис Ритчи. Книгу о нём читают и сейчас.", "ru"),
        ChunkRecord("d", "Хлеб", "Тесто для хлеба месят десять минут и оставляют на час в тепле.", "ru"),
    ]
    vectors = np.asarray([[1, 1, 1], [1, 0, 0], [0, 1, 0], [0, 0, 1]], np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    tables, report = build_graph(chunks, vectors, None, GraphOptions(beta=0.25))
    assert report.skeleton_chunks == 1 and report.extractor == "natasha"
    mentioned: dict[str, set[str]] = {}
    for chunk, key in zip(tables.has_entity["from"], tables.has_entity["to"], strict=True):
        mentioned.setdefault(key, set()).add(chunk)
    assert mentioned["кен томпсон"] == {"a", "b"}
    assert mentioned["деннис ритчи"] == {"a", "c"}


def test_bridge_finds_a_russian_title_in_any_case() -> None:
    index = TitleIndex(
        [("c1", "a1", "Калифорнийский университет"), ("c2", "a2", "Кен Томпсон"), ("c3", "a3", "Unix")]
    )
    text = "Томпсон учился в Калифорнийском университете, а потом писал Unix с Кеном Томпсоном."
    found = index.named_in(text)
    assert found == {"c1": "калифорнийский университет", "c3": "unix", "c2": "кен томпсон"}
    assert index.named_in("Он учился в университете.") == {}
