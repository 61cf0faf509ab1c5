"""Questions in other languages on real packs (built-in model, offline): the question's language
reaches keyword search, the router and the offline answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wikigr import lang
from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.build.prepare import embedding_text
from wikigr.pack.keyword import KEYWORD_DIR, build_keyword_index
from wikigr.pack.pack import open_pack
from wikigr.pack.union import open_pack_store
from wikigr.question import classify
from wikigr.retrieval.sentence_scores import Vocabulary
from wikigr.retrieval.sentences import split_sentences, split_units
from wikigr.retrieval.short_answer import cite
from wikigr.retrieval.stages.router import STRATEGIES, PackShape, auto_plan

ENGLISH = {
    "sockets.md": "# Sockets\n\nA socket connects two programs over a network. Create one with "
    "socket.socket() and connect it to a host and a port.\n",
    "timeouts.md": "# Timeouts\n\nsettimeout(seconds) sets a timeout on blocking socket operations; "
    "when it expires the call raises TimeoutError.\n",
    "baking.md": "# Baking bread\n\nKnead the dough for ten minutes, let it rise for an hour, and bake it "
    "at 220 degrees until the crust is brown.\n",
}
RUSSIAN = {
    "taimaut.md": "# Таймауты\n\nМетод socket.settimeout задаёт таймаут блокирующих операций сокета в "
    "секундах. По истечении таймаута вызов завершается исключением TimeoutError, т. е. программа не "
    "зависает. См. также раздел о сокетах.\n",
    "pushkin.md": "# Пушкин\n\nВ 1837 г. в Петербурге умер А. С. Пушкин. Его дуэль описана во многих "
    "книгах, напр. в биографиях. Поэт написал «Евгения Онегина» и «Капитанскую дочку».\n",
    "hleb.md": "# Хлеб\n\nТесто месят десять минут, дают ему подняться и пекут при 220 градусах, "
    "пока корка не станет коричневой.\n",
}
LANGUAGES = {"Таймауты": "ru", "Пушкин": "ru", "Хлеб": "ru"}


def _build(root: Path, name: str, pages: dict[str, str]) -> Path:
    docs = root / f"{name}-docs"
    docs.mkdir()
    for file, text in pages.items():
        (docs / file).write_text(text, encoding="utf-8")
    build_pack(name, [docs.as_uri()], out=root / name)
    return root / name


def _record_languages(pack: Path) -> None:
    """What the build records for these documents (their languages: manifest and keyword index),
    made here so that these tests do not depend on the build's detection."""
    ids = json.loads((pack / KEYWORD_DIR / "chunk_ids.json").read_text(encoding="utf-8"))
    store = open_pack_store(open_pack(pack))
    try:
        hits = {hit.chunk_id: hit for hit in store.chunk_details(dict.fromkeys(ids, 1.0))}
    finally:
        store.close()
    chunks = [hits[i] for i in ids]
    languages = [LANGUAGES.get(hit.article_title, "en") for hit in chunks]
    texts = [embedding_text(hit.article_title, hit.section_title, hit.text) for hit in chunks]
    build_keyword_index(pack / KEYWORD_DIR, ids, texts, languages=languages)
    path = pack / "manifest.json"
    manifest = json.loads(path.read_text(encoding="utf-8"))
    manifest["languages"] = {"ru": len(RUSSIAN), "en": len(ENGLISH)} if "en" in languages else {"ru": 3}
    path.write_text(json.dumps(manifest), encoding="utf-8")


@pytest.fixture(scope="module")
def english(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _build(tmp_path_factory.mktemp("langs"), "net", ENGLISH)


@pytest.fixture(scope="module")
def russian(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pack = _build(tmp_path_factory.mktemp("langs"), "seti", RUSSIAN)
    _record_languages(pack)
    return pack


def _stage(result: AgentResult, name: str) -> dict[str, Any]:
    found = [s for s in result.trace["stages"] if s["stage"] == name]
    assert found, f"no {name} stage in {[s['stage'] for s in result.trace['stages']]}"
    detail: dict[str, Any] = found[0].get("detail", {})
    return detail


def test_a_russian_question_on_an_english_pack_has_no_missing_words(english: Path) -> None:
    with KnowledgeGraphAgent(english, llm=None) as agent:
        result = agent.query("Как установить таймаут сокета?")
        gate = _stage(result, "gate")
        assert gate["absent"] == []
        assert gate["across"] == "the question is in Russian and the pack in English: matched by meaning"
        assert "never mentions" not in result.answer
        # a Latin name in a Russian question is still looked for: it is no Russian word
        named = agent.query("Как настроить nginx для сокетов?")
        assert _stage(named, "gate")["absent"] == ["nginx"]
        assert "This pack never mentions “nginx”." in named.answer


def test_a_question_the_packs_model_cannot_read_says_so_and_what_to_do(english: Path, russian: Path) -> None:
    hint = "This pack's model (all-MiniLM-L6-v2-int8) reads English only, and the question is in Russian"
    with KnowledgeGraphAgent(english, llm=None) as agent:
        answer = agent.query("Как установить таймаут сокета?").answer
        assert answer.startswith(
            f"{hint}: ask in English, or build the pack with --embedder multilingual."
        ), answer
        assert "reads English only" not in agent.query("How do I set a socket timeout?").answer
    with KnowledgeGraphAgent(russian, llm=None) as agent:  # in the documents' language, or in English
        for question in ("Как установить таймаут сокета?", "How do I set a socket timeout?"):
            assert "reads English only" not in agent.query(question).answer


def _ran(router: dict[str, Any]) -> set[str]:
    return {s["stage"] for attempt in router["attempts"] for s in attempt["stages"]}


def test_english_on_english_is_unchanged(english: Path) -> None:
    with KnowledgeGraphAgent(english, llm=None) as agent:
        result = agent.query("How do I use Nginx for Rust sockets?")
    assert _stage(result, "gate")["absent"] == ["Nginx", "Rust"]
    assert "across" not in _stage(result, "gate")
    router = _stage(result, "router")
    assert router["strategy"] in STRATEGIES and not router["strategy"].endswith("_meaning")
    assert "across" not in router and "keyword" in _ran(router)


def test_the_router_leans_on_the_vectors_across_languages(english: Path) -> None:
    with KnowledgeGraphAgent(english, llm=None) as agent:
        same = _stage(agent.query("How do I set a socket timeout?"), "router")
        auto = _stage(agent.query("Как установить таймаут сокета?"), "router")
    assert auto["strategy"] == auto["chosen"] == f"{same['strategy']}_meaning"
    assert "without the lexical stages" in auto["strategy_why"]
    assert _ran(auto) == set(STRATEGIES[same["strategy"]]) - {"keyword", "title_match", "pair"}
    assert "keyword" in _ran(same)
    with KnowledgeGraphAgent(english, profile="routed", llm=None) as agent:
        ladder = _stage(agent.query("Как установить таймаут сокета?"), "router")
    tried = [a["strategy"] for a in ladder["attempts"]]
    assert tried == ["vector", "graph_meaning"][: len(tried)]  # hybrid without keyword is vector: once
    assert not {"keyword", "title_match", "pair"} & _ran(ladder)
    for attempt in ladder["attempts"]:
        assert attempt["score"] < 1.0  # scored by similarity: no shared words to count


def test_a_global_question_across_languages_ranks_pages() -> None:
    # A "list ..." question in English widens through the pages' entities; asked in Russian its
    # words match no entity, and the pages are ranked as for any question (page_score reads them).
    russian, english = classify("Вывести список параметров сокета"), classify("List the socket options")
    assert russian[0] == english[0] == "global"
    pages = PackShape(passages=False, has_graph=True, chunks_per_article=20.0)
    assert auto_plan("global", pages)[0] == "wide"
    assert auto_plan("global", pages, across=True)[0] == "pages"
    assert auto_plan("simple", pages, across=True)[0] == "pages"
    corpus = PackShape(passages=True, has_graph=True, chunks_per_article=1.0)
    assert auto_plan("global", corpus, across=True)[0] == "entity"


def test_the_question_language_reaches_keyword_search(russian: Path) -> None:
    question = "Какие таймауты у сокетов?"  # "таймауты", "сокетов": in no chunk as written
    with KnowledgeGraphAgent(russian, profile="balanced", disable=["vector"], llm=None) as agent:
        state = agent.new_state(question)
        assert state.language == "ru" and not state.across
        result = agent.query(question)
        index = agent.context.keyword_index()
    keyword = _stage(result, "keyword")
    assert keyword["language"] == "ru" and keyword["keyword_hits"] >= 1
    assert result.sources[0].title == "Таймауты"
    assert index.search(question, 5) == []  # read as English, the words meet nothing
    with KnowledgeGraphAgent(russian, llm=None) as agent:  # English on Russian: across
        english_state = agent.new_state("What is a socket timeout?")
        assert english_state.language == "en" and english_state.across


def test_a_russian_offline_answer_quotes_whole_russian_sentences(russian: Path) -> None:
    with KnowledgeGraphAgent(russian, llm=None) as agent:
        result = agent.query("Как задать таймаут сокета?")
    assert result.sources[0].title == "Таймауты"
    first = result.answer.split(" [1]")[0]
    assert first.startswith("Метод socket.settimeout задаёт таймаут блокирующих операций сокета")
    assert "never mentions" not in result.answer
    assert "Also" not in result.answer


def test_sentence_scores_match_inflected_russian_words(russian: Path) -> None:
    vocabulary = Vocabulary(None, [], "ru")
    assert vocabulary.tokens("таймаута сокетов") == ["таймаут", "сокет"]
    assert Vocabulary(None, [], None).tokens("таймаута сокетов") == ["таймаута", "сокетов"]
    with KnowledgeGraphAgent(russian, llm=None) as agent:
        index = agent.context.keyword_index()
    assert Vocabulary(index, [], "ru").tokens("Таймаута") == ["таймаут"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "В 1837 г. умер А. С. Пушкин. Это было давно.",
            ["В 1837 г. умер А. С. Пушкин.", "Это было давно."],
        ),
        (
            "Яблоки, груши и т. д. Потом пришёл он.",
            ["Яблоки, груши и т. д.", "Потом пришёл он."],
        ),
        ("Это, т.е. пример, важен. Второе предложение.", ["Это, т.е. пример, важен.", "Второе предложение."]),
        ("См. рис. 3. Далее текст.", ["См. рис. 3.", "Далее текст."]),
        ("Число 3.14 важно. «Цитата.» Следующее.", ["Число 3.14 важно.", "«Цитата.»", "Следующее."]),
        (
            "Вызовите socket.settimeout(5.0). Затем\nвызовите connect().",
            ["Вызовите socket.settimeout(5.0).", "Затем вызовите connect()."],
        ),
        ("Он сказал: «Привет!» Она ушла.", ["Он сказал: «Привет!»", "Она ушла."]),
    ],
)
def test_russian_sentences_split_on_hard_cases(text: str, expected: list[str]) -> None:
    assert split_sentences(text) == expected


def test_english_sentences_split_as_before() -> None:
    text = "Dr. Smith met G. Stanley Hall in 1900. Call socket.settimeout() e.g. with 3.5 seconds. Done!"
    assert split_sentences(text) == [
        "Dr. Smith met G. Stanley Hall in 1900.",
        "Call socket.settimeout() e.g. with 3.5 seconds.",
        "Done!",
    ]


def test_a_russian_passage_that_opens_with_a_quote_is_no_fragment() -> None:
    units = split_units("«Евгений Онегин» написан Пушкиным. Роман в стихах.")
    assert [u.text for u in units] == ["«Евгений Онегин» написан Пушкиным.", "Роман в стихах."]
    assert not units[0].fragment


def test_citations_go_inside_russian_quotes_and_footnotes_go() -> None:
    assert cite("Он сказал: «Привет!»", 2) == "Он сказал: «Привет [2]!»"
    assert cite("Поэт [4] написал роман.", 1) == "Поэт написал роман [1]."


def test_question_language_is_told_once_per_query(english: Path) -> None:
    with KnowledgeGraphAgent(english, llm=None) as agent:
        state = agent.new_state("Как установить таймаут сокета?")
        assert state.language == "ru" and state.across
        assert state.pack_languages == [lang.ENGLISH]
        state.question = "How?"  # the language was told once: a stage's rewording does not change it
        assert state.language == "ru"
