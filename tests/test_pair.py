"""The pair stage: the two passages that cover a two-hop question together go first — on a real
pack built from a small passage corpus, with the real embedder and keyword index."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.errors import UsageError
from wikigr.retrieval.profiles import make_options

# A comparison: the answer needs both magazines' passages. On similarity alone the passages about
# Arthur's Magazine and its imitators come first; First for Women is further down.
CORPUS = [
    {
        "title": "Arthur's Magazine",
        "text": "Arthur's Magazine (1844-1846) was an American literary periodical published in "
        "Philadelphia in the 19th century, edited by Timothy Shay Arthur.",
    },
    {
        "title": "First for Women",
        "text": "First for Women is a lifestyle title for readers in the USA, published by Bauer Media "
        "Group since 1989.",
    },
    {
        "title": "Arthur's Home Magazine",
        "text": "Arthur's Home Magazine was an American periodical of the 19th century that started "
        "in Philadelphia, a later name of the magazine of Arthur.",
    },
    {
        "title": "Peterson's Magazine",
        "text": "Peterson's Magazine was an American magazine of the 19th century from Philadelphia, "
        "started by Charles Peterson.",
    },
    {
        "title": "Graham's Magazine",
        "text": "Graham's Magazine was a 19th-century American literary periodical from Philadelphia, a "
        "rival of the magazine of Arthur.",
    },
    {
        "title": "Timothy Shay Arthur",
        "text": "Timothy Shay Arthur was a 19th-century American writer who edited Arthur's Magazine, a "
        "periodical founded in Philadelphia.",
    },
    {
        "title": "Bauer Media Group",
        "text": "Bauer Media Group is a German media company that publishes titles in Europe, the USA "
        "and Australia.",
    },
]
QUESTION = "Which magazine was started first, Arthur's Magazine or First for Women?"


def corpus_pack(
    factory: pytest.TempPathFactory, name: str, passages: list[dict[str, str]], graph: bool
) -> Path:
    """A real pack built from ``passages`` (with the entity graph or without)."""
    folder = factory.mktemp(f"corpus-{name}")
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps(passages))
    build_pack(name, [], out=folder / name, corpus=corpus, options=BuildOptions(graph=graph))
    return folder / name


@pytest.fixture(scope="module")
def pair_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return corpus_pack(tmp_path_factory, "pair", CORPUS, graph=False)


def test_the_pair_that_covers_the_question_goes_first(pair_pack: Path) -> None:
    with KnowledgeGraphAgent(pair_pack, profile="baseline", llm=None, top_k=7) as agent:
        before = [s.title for s in agent.query(QUESTION).sources]
    assert "First for Women" not in before[:2]  # the two best on their own are about one magazine
    with KnowledgeGraphAgent(pair_pack, profile="baseline", enable=["pair"], llm=None, top_k=7) as agent:
        result = agent.query(QUESTION)
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "pair"]
    assert entry["detail"]["moved"] is True
    assert entry["detail"]["gain"] >= 0.05
    # one passage about each magazine: the best ranked one that says when it started, and the other
    assert entry["detail"]["pair"] == [before[0], "First for Women"]
    assert [s.title for s in result.sources[:2]] == entry["detail"]["pair"]
    # the rest keeps its order
    rest = [t for t in before if t not in entry["detail"]["pair"]]
    assert [s.title for s in result.sources[2:]] == rest


def test_a_pair_that_adds_too_little_moves_nothing(pair_pack: Path) -> None:
    with KnowledgeGraphAgent(pair_pack, profile="baseline", llm=None, top_k=7) as agent:
        before = [s.title for s in agent.query(QUESTION).sources]
    options = {"pair": {"min_gain": 1.0}}
    with KnowledgeGraphAgent(
        pair_pack, profile="baseline", enable=["pair"], options=options, llm=None, top_k=7
    ) as agent:
        result = agent.query(QUESTION)
    assert [s.title for s in result.sources] == before
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "pair"]
    assert entry["detail"]["moved"] is False


def test_auto_runs_pair_on_a_passage_corpus(pair_pack: Path) -> None:
    with KnowledgeGraphAgent(pair_pack, llm=None, top_k=5) as agent:
        result = agent.query(QUESTION)
    assert "First for Women" in {s.title for s in result.sources[:2]}
    [router] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert router["detail"]["strategy"] == "links"


def test_pair_options_are_checked() -> None:
    with pytest.raises(UsageError):
        make_options("pair", {"candidates": 1})
    with pytest.raises(UsageError):
        make_options("pair", {"coverage": -1})


# A chain: the school's passage names the state (not named by the question), and the state's
# passage answers. Another state's passage says more about selling alcohol, so the words of the
# question alone pair the school with the wrong state; the entity the two share does not.
CHAIN = [
    {
        "title": "Greenfield-Central High School",
        "text": "Greenfield-Central High School is a secondary school located in the city of "
        "Greenfield, Indiana. It had 1,363 students in 2009.",
    },
    {
        "title": "Alcohol laws of Indiana",
        "text": "In Indiana, alcohol may be sold to adults from 7 a.m. to 3 a.m., closing time.",
    },
    {
        "title": "Alcohol laws of Utah",
        "text": "In Utah, supermarkets stop selling strong beer.",
    },
    {
        "title": "Hancock County",
        "text": "Hancock County lies east of Indianapolis; its farms grow corn and soybeans.",
    },
    {
        "title": "Liquor store",
        "text": "A liquor store is a retail shop that sells alcoholic beverages, typically in bottles.",
    },
]
CHAIN_QUESTION = "What time does the state where Greenfield-Central High is stop selling booze?"


@pytest.fixture(scope="module")
def chain_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return corpus_pack(tmp_path_factory, "chain", CHAIN, graph=True)


def _pair_entry(pack: Path, entity: float) -> dict[str, object]:
    options = {"pair": {"entity": entity, "candidates": 5}}
    with KnowledgeGraphAgent(
        pack, profile="baseline", enable=["pair"], options=options, llm=None, top_k=5
    ) as agent:
        result = agent.query(CHAIN_QUESTION)
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "pair"]
    detail = entry["detail"]
    assert isinstance(detail, dict)
    return detail


def test_a_shared_entity_the_question_does_not_name_pairs_the_two_hops(chain_pack: Path) -> None:
    without = _pair_entry(chain_pack, 0.0)
    assert "Alcohol laws of Indiana" not in without.get("pair", [])
    found = _pair_entry(chain_pack, 1.0)  # the default
    assert found["moved"] is True and found["bridged"] is True
    assert set(found["pair"]) == {"Greenfield-Central High School", "Alcohol laws of Indiana"}
