"""page_score's ``centrality``: the links among the pages in play weigh in the page's score, and
graph_rerank leaves the pages page_score ranked (issue 40: it reordered them by the same links,
its term outweighing any page's lead once page_score had placed the passages in rounds)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.httpserver import LocalServer
from tests.test_docs_stages import DOCS
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.errors import UsageError
from wikigr.retrieval.profiles import make_options

# page_score's order
PAGES: dict[str, Any] = {"profile": "baseline", "enable": ["keyword", "page_score"], "llm": None}


@pytest.fixture(scope="module")
def docs_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The pages of test_docs_stages: the tutorials and socket.html link to functions.html and
    stdtypes.html; nothing links to or from heapq.html."""
    out = tmp_path_factory.mktemp("centrality") / "docs"
    with LocalServer() as server:
        for path, body in DOCS.items():
            server.add("/" + path, body)
        report = build_pack("docs", [server.url("/" + p) for p in DOCS], out=out)
    assert not report.failed
    return out


def _stage(result: Any, name: str) -> dict[str, Any]:
    return dict(next(s for s in result.trace["stages"] if s["stage"] == name))


def _top_pages(agent: KnowledgeGraphAgent, question: str) -> tuple[list[str], Any]:
    detail = _stage(agent.query(question), "page_score")["detail"]
    return [url.rsplit("/", 1)[-1] for url in detail["top_pages"]], detail["centrality"]


def test_a_page_the_pages_in_play_link_to_gains_on_an_unlinked_one(docs_pack: Path) -> None:
    question = "count the items of a list"
    alone = {"page_score": {"authority": 0.0, "centrality": 0.0}}  # the chunks and link texts only
    with KnowledgeGraphAgent(docs_pack, options=alone, **PAGES) as agent:
        before, off = _top_pages(agent, question)
    linked = {"page_score": {"authority": 0.0}}  # centrality: the default
    with KnowledgeGraphAgent(docs_pack, options=linked, **PAGES) as agent:
        after, count = _top_pages(agent, question)
    assert before.index("heapq.html") < before.index("stdtypes.html"), before
    assert after.index("stdtypes.html") < after.index("heapq.html"), after  # linked from two tutorials
    assert after[0] == before[0] == "functions.html"  # the lead is kept
    assert off == "off" and count == 5  # every page in play but heapq.html is linked


def test_graph_rerank_leaves_the_pages_page_score_ranked(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:  # auto: the router's pages strategy
        result = agent.query("the n largest items of a list")
    assert "page_score ranked these pages" in _stage(result, "graph_rerank")["skipped"]
    ranked = [
        url.rsplit("/", 1)[-1]
        for url in _stage(result, "router")["detail"]["attempts"][0]["stages"][-1]["detail"]["top_pages"]
    ]
    pages = list(dict.fromkeys(s.url.split("#", 1)[0].rsplit("/", 1)[-1] for s in result.sources))
    assert pages[: len(ranked)] == ranked[: len(pages)], (pages, ranked)
    with KnowledgeGraphAgent(docs_pack, profile="balanced", llm=None) as agent:  # no page_score: it runs
        assert "skipped" not in _stage(agent.query("the n largest items of a list"), "graph_rerank")


def test_the_weight_is_checked() -> None:
    assert make_options("page_score", {"centrality": 0.0}).centrality == 0.0
    with pytest.raises(UsageError, match="centrality must be"):
        make_options("page_score", {"centrality": -0.1})
