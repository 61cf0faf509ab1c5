"""The bridge stage: from the top passages to the next hop, through title and entity links — on
real packs built from a small passage corpus, with the real embedder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.errors import UsageError
from wikigr.retrieval.profiles import make_options
from wikigr.retrieval.stages.bridge import TitleIndex

# "Where was Kerry Saxby born" is in her passage; what the question asks about (when the town was
# founded) is only in the town's passage, which never names her. Walkers' passages distract.
CORPUS = [
    {
        "title": "Kerry Saxby",
        "text": "Kerry Saxby is an Australian race walker. She was born in Young, New South Wales, and "
        "won the 10 km walk at the Commonwealth Games in 1990 for the Australian team.",
    },
    {
        "title": "Young, New South Wales",
        "text": "Young is a shire centre in the South West Slopes region, known for its cherries. Its "
        "first settlement dates from 1861, during a gold rush.",
    },
    {
        "title": "Jane Saville",
        "text": "Jane Saville is an Australian race walker who won a bronze medal in the 20 km walk at "
        "the 2004 Olympic Games in Athens.",
    },
    {
        "title": "Dane Bird-Smith",
        "text": "Dane Bird-Smith is an Australian race walker. He won bronze in the 20 km walk at the 2016 "
        "Olympic Games for Australia.",
    },
    {
        "title": "Goulburn",
        "text": "Goulburn is a town where the born and raised poet Kerry Mason lived. The town was founded "
        "in 1833 and was proclaimed a city in 1863.",
    },
    {
        "title": "Bathurst",
        "text": "When was the town of Bathurst founded? Bathurst was founded in 1815 as the first inland "
        "settlement; Saxby Street is named after a local family born there.",
    },
    {
        "title": "Cherry",
        "text": "A cherry is the fruit of many plants of the genus Prunus. Young trees bear fruit after "
        "four years; cherry season is short.",
    },
    {
        "title": "Gold rush",
        "text": "A gold rush is a discovery of gold that brings an onrush of miners seeking their fortune. "
        "Towns were founded near the fields.",
    },
]

QUESTION = "When was the town where Kerry Saxby was born founded?"


def _pack(tmp_path_factory: pytest.TempPathFactory, name: str, graph: bool) -> Path:
    folder = tmp_path_factory.mktemp(f"corpus-{name}")
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps(CORPUS))
    out = tmp_path_factory.mktemp("packs") / name
    build_pack(name, [], out=out, corpus=corpus, options=BuildOptions(graph=graph))
    return out


@pytest.fixture(scope="module")
def bridge_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _pack(tmp_path_factory, "bridge", graph=True)


@pytest.fixture(scope="module")
def bridge_pack_no_graph(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _pack(tmp_path_factory, "bridge-flat", graph=False)


def _rank(result: Any, title: str) -> int:
    return [s.title for s in result.sources].index(title)


def _entry(result: Any) -> dict[str, Any]:
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "bridge"]
    return dict(entry)


def test_title_links_lift_the_next_hop(bridge_pack_no_graph: Path) -> None:
    with KnowledgeGraphAgent(bridge_pack_no_graph, profile="baseline", llm=None, top_k=6) as agent:
        before = agent.query(QUESTION)
    with KnowledgeGraphAgent(
        bridge_pack_no_graph,
        profile="baseline",
        enable=["bridge"],
        options={"bridge": {"title": 1.0}},
        llm=None,
        top_k=6,
    ) as agent:
        after = agent.query(QUESTION)
    assert before.sources[0].title == after.sources[0].title == "Kerry Saxby"
    assert _rank(before, "Young, New South Wales") > 1  # the walkers come first on similarity alone
    assert _rank(after, "Young, New South Wales") == 1
    entry = _entry(after)
    assert "young new south wales" in entry["detail"]["titles"]
    # Without an entity graph, the entity links are skipped and the trace says why.
    assert entry["detail"]["entity_links"] == "skipped: the pack has no entity graph"


def test_entity_links_need_an_entity_the_question_does_not_name(bridge_pack: Path) -> None:
    with KnowledgeGraphAgent(
        bridge_pack,
        profile="baseline",
        enable=["bridge"],
        options={"bridge": {"title": 0.0, "entity": 5.0, "seeds": 1}},
        llm=None,
        top_k=6,
    ) as agent:
        result = agent.query(QUESTION)
    entry = _entry(result)
    assert not entry.get("skipped")
    assert entry["detail"]["title_links"] == 0
    assert entry["detail"]["entity_links"] >= 1
    # The seed (Kerry Saxby) shares "Young" / "New South Wales" with the town's passage, never
    # with a passage only through "Kerry Saxby", which the question names.
    assert _rank(result, "Young, New South Wales") == 1  # third on similarity alone


def test_a_one_word_title_links_only_where_written_as_a_name() -> None:
    index = TitleIndex(
        [("c1", "a1", "Cherry"), ("c2", "a2", "Young, New South Wales"), ("c3", "a3", "Bread")]
    )
    assert index.named_in("She grew up in Young, New South Wales.") == {"c2": "young new south wales"}
    assert index.named_in("The young trees bear fruit; a cherry is red.") == {}
    assert index.named_in("Cherry season is short.") == {"c1": "cherry"}


def test_bridge_options_are_checked() -> None:
    with pytest.raises(UsageError, match="seeds"):
        make_options("bridge", {"seeds": 0})


def _router(result: Any) -> dict[str, Any]:
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    return dict(entry["detail"])


def test_auto_takes_the_entity_graph_and_the_next_hop_on_a_passage_corpus(bridge_pack: Path) -> None:
    with KnowledgeGraphAgent(bridge_pack, llm=None, top_k=3) as agent:
        assert agent.profile == "auto"
        result = agent.query(QUESTION)
    router = _router(result)
    assert router["strategy"] == "entity"
    assert router["pack"].startswith("a passage corpus") and "with an entity graph" in router["pack"]
    assert router["attempts"][0]["strategy"] == "entity" and len(router["attempts"]) == 1
    assert [s.title for s in result.sources[:2]] == ["Kerry Saxby", "Young, New South Wales"]


def test_auto_without_an_entity_graph_says_what_it_skipped(bridge_pack_no_graph: Path) -> None:
    with KnowledgeGraphAgent(bridge_pack_no_graph, llm=None, top_k=3) as agent:
        result = agent.query(QUESTION)
    router = _router(result)
    assert router["strategy"] == "links"
    assert "without an entity graph" in router["pack"]
    assert "wikigr pack graph" in router["strategy_why"]


def test_stage_options_reach_the_stages_the_router_runs(bridge_pack_no_graph: Path) -> None:
    options = {
        "vector": {"candidates": 2},
        "keyword": {"candidates": 1},
        "bridge": {"title": 0.0, "entity": 0.0},
    }
    with KnowledgeGraphAgent(bridge_pack_no_graph, llm=None, top_k=3, options=options) as agent:
        result = agent.query(QUESTION)
    attempt = _router(result)["attempts"][0]
    assert attempt["candidates"] <= 3  # 2 by vector, at most 1 more by keyword, none by bridge
    with pytest.raises(UsageError, match="options of bridge"):
        KnowledgeGraphAgent(bridge_pack_no_graph, llm=None, options={"bridge": {"seed": 2}})
