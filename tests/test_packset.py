"""Several packs at once (wikigr/packset.py): `wikigr query a,b`, `all`, the MCP tools, the API."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DOCS
from wikigr.agent import KnowledgeGraphAgent
from wikigr.cli import run
from wikigr.errors import PackNotFoundError, UsageError
from wikigr.packset import PackSet, open_agent, pack_refs

ROOT = Path(__file__).resolve().parent.parent
GARDEN_QUESTIONS = ["How often should I water tomatoes?", "How much sunlight do tomatoes need?"]
NETWORK_QUESTIONS = ["How do I set a timeout on a socket?", "How do I decode a JSON document?"]


@pytest.fixture(scope="module")
def two_packs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two packs on different topics: gardening and dates; sockets and JSON."""
    from wikigr.build import build_pack

    root = tmp_path_factory.mktemp("two-packs")
    garden_src, network_src = root / "garden-src", root / "network-src"
    garden_src.mkdir()
    network_src.mkdir()
    for name in ("gardening.txt", "dates.md"):
        shutil.copy(DOCS / name, garden_src / name)
    for name in ("sockets.html", "json.html"):
        shutil.copy(DOCS / name, network_src / name)
    garden, network = root / "garden", root / "network"
    build_pack("garden", [garden_src.as_uri()], out=garden)
    build_pack("network", [network_src.as_uri()], out=network)
    return garden, network


def install(home: Path, *packs: Path) -> None:
    for pack in packs:
        shutil.copytree(pack, home / "packs" / pack.name)


def test_each_question_is_answered_from_its_own_pack_first(two_packs: tuple[Path, Path]) -> None:
    garden, network = two_packs
    with open_agent(f"{garden},{network}", llm=None) as agent:
        assert isinstance(agent, PackSet)
        for question, expected in [(q, "garden") for q in GARDEN_QUESTIONS] + [
            (q, "network") for q in NETWORK_QUESTIONS
        ]:
            result = agent.query(question, top_k=3)
            assert result.sources, question
            assert result.sources[0].pack == expected, (question, [s.pack for s in result.sources])
            packs = {entry["pack"]: entry for entry in result.trace["packs"]}
            assert set(packs) == {"garden", "network"}
            assert packs[expected]["searched"]
            assert packs[expected]["relevance"] == max(p["relevance"] for p in packs.values())
            # the merged scores are on one scale: best first
            scores = [s.score for s in result.sources]
            assert scores == sorted(scores, reverse=True)


def test_a_pack_far_below_the_best_is_not_searched(two_packs: tuple[Path, Path]) -> None:
    garden, network = two_packs
    with PackSet.open([garden, network], llm=None, step=0.001) as agent:
        result = agent.query(GARDEN_QUESTIONS[0], top_k=3)
    entry = {e["pack"]: e for e in result.trace["packs"]}["network"]
    assert entry == {
        "pack": "network",
        "relevance": entry["relevance"],
        "searched": False,
        "why": "too far below the most relevant pack to reach the top k",
    }
    assert {s.pack for s in result.sources} == {"garden"}
    # the trace names each pack's stages
    assert any(e["stage"].startswith("garden/") for e in result.trace["stages"])
    assert not any(e["stage"].startswith("network/") for e in result.trace["stages"])


def test_close_packs_interleave(two_packs: tuple[Path, Path]) -> None:
    """With a large step every pack reaches the top k: the passages interleave by rank."""
    garden, network = two_packs
    with PackSet.open([garden, network], llm=None, step=10.0) as agent:
        result = agent.query("Which module handles timeouts, dates or sockets?", top_k=4)
    assert {s.pack for s in result.sources} == {"garden", "network"}
    first_two = [s.pack for s in result.sources[:2]]
    assert sorted(first_two) == ["garden", "network"]


def test_all_with_one_pack_equals_that_pack_alone(two_packs: tuple[Path, Path], wikigr_home: Path) -> None:
    garden, _ = two_packs
    install(wikigr_home, garden)
    assert pack_refs("all") == [str(wikigr_home / "packs" / "garden")]
    with open_agent("all", llm=None) as agent, KnowledgeGraphAgent(garden, llm=None) as alone:
        assert isinstance(agent, KnowledgeGraphAgent)
        for question in GARDEN_QUESTIONS + NETWORK_QUESTIONS:
            one, other = agent.query(question), alone.query(question)
            assert one.answer == other.answer
            assert [s.to_json() for s in one.sources] == [s.to_json() for s in other.sources]


def test_the_cli_takes_a_list_and_all(
    two_packs: tuple[Path, Path], wikigr_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(wikigr_home, *two_packs)
    assert run(["query", "garden,network", NETWORK_QUESTIONS[0], "--json", "--top-k", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sources"][0]["pack"] == "network"
    assert {p["pack"] for p in data["trace"]["packs"]} == {"garden", "network"}
    assert run(["query", "all", GARDEN_QUESTIONS[0]]) == 0
    text = capsys.readouterr().out
    assert "[1] garden: " in text  # every source names its pack
    assert run(["query", "garden,nope", GARDEN_QUESTIONS[0]]) == 2
    assert "unknown pack 'nope'" in capsys.readouterr().err


def test_references(two_packs: tuple[Path, Path], wikigr_home: Path) -> None:
    garden, network = two_packs
    assert pack_refs(f"{garden}, {network},{garden}") == [str(garden), str(network)]
    assert pack_refs([str(garden)]) == [str(garden)]
    with pytest.raises(PackNotFoundError, match="no pack is installed"):
        pack_refs("all")
    with pytest.raises(UsageError, match="give it alone"):
        pack_refs("all,garden")
    with pytest.raises(UsageError, match="empty pack name"):
        pack_refs("garden,,network")


def test_an_openml_pack_is_left_out_of_a_set(two_packs: tuple[Path, Path], tmp_path: Path) -> None:
    garden, _ = two_packs
    openml = tmp_path / "amlb2019"
    shutil.copytree(ROOT / "packs" / "amlb2019", openml)
    with open_agent([str(garden), str(openml)], llm=None) as agent:
        result = agent.query(GARDEN_QUESTIONS[0])
    left = {e["pack"]: e for e in result.trace["packs"]}["amlb2019"]
    assert left["searched"] is False and "OpenML" in left["why"]
    assert {s.pack for s in result.sources} == {"garden"}
    other = tmp_path / "other"
    shutil.copytree(openml, other)
    with pytest.raises(UsageError, match="OpenML packs answer one at a time"):
        PackSet.open([openml, other], llm=None)


def test_mcp_tools_take_a_list_or_all(two_packs: tuple[Path, Path], tmp_path: Path) -> None:
    import sys

    import anyio
    from mcp import Client
    from mcp.client.stdio import StdioServerParameters

    from tests.test_mcp import _payload

    home = tmp_path / "home"
    install(home, *two_packs)
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "wikigr", "mcp"],
        env={"WIKIGR_HOME": str(home), "ANTHROPIC_API_KEY": ""},
        cwd=str(tmp_path),
    )

    async def session() -> None:
        async with Client(params, read_timeout_seconds=600) as client:
            call = {"pack": ["garden", "network"], "question": NETWORK_QUESTIONS[1], "top_k": 3}
            data = _payload(await client.call_tool("query_pack", call))
            assert data["sources"][0]["pack"] == "network"
            assert {p["pack"] for p in data["trace"]["packs"]} == {"garden", "network"}
            call = {"pack": "all", "query": GARDEN_QUESTIONS[1], "top_k": 3}
            found = _payload(await client.call_tool("search", call))
            assert found["results"][0]["pack"] == "garden"
            assert found["results"][0]["text"]
            alone = _payload(await client.call_tool("search", {**call, "pack": "garden"}))
            assert [r["url"] for r in alone["results"]][:1] == [r["url"] for r in found["results"]][:1]

    anyio.run(session)


def test_all_is_reserved_as_a_pack_name(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from wikigr.pack.manifest import check_name

    with pytest.raises(ValueError, match="reserved"):
        check_name("all")
    assert run(["pack", "create", "all", "--url", str(DOCS / "dates.md"), "--out", str(tmp_path / "x")]) == 2
    assert "reserved" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()


def test_each_pack_is_searched_once_and_answered_once(two_packs: tuple[Path, Path]) -> None:
    """The search that measures a pack's relevance is the one its vector stage uses (one scan of
    each store per question), the question is embedded once per embedder, and the answer is
    synthesised once, over the merged passages; the passages a pack gives are those it gives alone."""
    garden, network = two_packs
    with PackSet.open([garden, network], llm=None, step=10.0) as agents:
        searches: list[tuple[str, int]] = []
        embeddings: list[str] = []
        for agent in agents.agents:
            store, embedder = agent.context.store, agent.context.embedder

            def nearest(
                vector: list[float], k: int, real: Any = store.nearest_chunks, name: str = agent.name
            ) -> Any:
                searches.append((name, k))
                return real(vector, k)

            store.nearest_chunks = nearest  # type: ignore[method-assign]
            for method in ("embed", "embed_queries"):
                real = getattr(embedder, method, None)
                if real is not None and not hasattr(real, "spied"):

                    def spy(texts: list[str], real: object = real) -> object:
                        embeddings.extend(texts)
                        return real(texts)  # type: ignore[operator]

                    spy.spied = True  # type: ignore[attr-defined]
                    setattr(embedder, method, spy)
        question = "Which module handles timeouts, dates or sockets?"
        result = agents.query(question, top_k=4)
        searched = [e["pack"] for e in result.trace["packs"] if e["searched"]]
        assert sorted(searched) == ["garden", "network"]
        assert sorted(name for name, _ in searches) == ["garden", "network"]  # one scan each
        assert embeddings.count(question) == 1  # both packs use the same embedder
        assert [e["stage"] for e in result.trace["stages"]].count("synthesize") == 1
        assert not any(e["stage"].endswith("/synthesize") for e in result.trace["stages"])
        assert result.answer
    for pack in (garden, network):
        with KnowledgeGraphAgent(pack, llm=None) as alone:
            own = [s.chunk_id for s in alone.query(question, top_k=4).sources]
        merged = [s.chunk_id for s in result.sources if s.pack == pack.name]
        assert merged and merged == own[: len(merged)]


def test_the_answer_names_what_no_pack_searched_mentions(two_packs: tuple[Path, Path]) -> None:
    garden, network = two_packs
    with open_agent(f"{garden},{network}", llm=None) as agent:
        result = agent.query("How do I set a timeout on a socket in Kubernetes?", top_k=3)
        searched = [entry for entry in result.trace["packs"] if entry["searched"]]
        lead = "No pack searched mentions" if len(searched) > 1 else "This pack never mentions"
        assert result.answer.startswith(f"{lead} “Kubernetes”.")
        assert "never mentions" not in agent.query("How do I set a timeout on a socket?").answer
