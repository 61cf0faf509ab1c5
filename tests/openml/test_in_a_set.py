"""An OpenML pack among document packs (`wikigr query a,b` and `all`): a question meant for the
OpenML pack (a measure, runs, its algorithms or datasets) is answered by it; any other question by
the document packs, and the text output names the packs left out, and why (issue 35, item 14)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import DOCS
from wikigr.cli import run
from wikigr.packset import PackSet, open_agent

FOR_OPENML = [
    "Which algorithm family has the highest median accuracy on classification tasks?",
    "What is the mean accuracy of H2O AutoML?",
    "How did TPOT do on credit-g?",
    "Compare TPOT and autosklearn on kc1 by AUC",
    "How many runs are there?",
    "Which AutoML framework is the fastest?",
    "MATCH (a:Algorithm) RETURN a.name LIMIT 3",
]
FOR_DOCUMENTS = [
    "How often should I water tomatoes?",
    "What is the best way to water tomatoes?",
    "How much sunlight do tomatoes need?",
    "Which algorithm is best for sorting a list?",  # an algorithm, but none of the pack's, nor a measure
]


@pytest.fixture(scope="module")
def garden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from wikigr.build import build_pack

    root = tmp_path_factory.mktemp("garden")
    source = root / "src"
    source.mkdir()
    shutil.copy(DOCS / "gardening.txt", source / "gardening.txt")
    build_pack("garden", [source.as_uri()], out=root / "garden")
    return root / "garden"


def test_a_question_meant_for_the_openml_pack_is_answered_by_it(garden: Path, openml_pack: Path) -> None:
    with open_agent([str(garden), str(openml_pack)], llm=None) as agent:
        assert isinstance(agent, PackSet)
        for question in FOR_OPENML:
            result = agent.query(question)
            assert result.sources and {s.pack for s in result.sources} == {"sample"}, question
            assert result.trace["tool_calls"], question  # the OpenML tools answered
            packs = {e["pack"]: e for e in result.trace["packs"]}
            assert packs["sample"]["searched"] is True and packs["sample"]["why"].startswith("the question ")
            why = packs["sample"]["why"].removeprefix("the question ")
            assert packs["garden"] == {
                "pack": "garden",
                "searched": False,
                "left_out": True,
                "why": f"sample answers the question alone: it {why}",
            }
        for question in FOR_DOCUMENTS:
            result = agent.query(question)
            assert {s.pack for s in result.sources} == {"garden"}, question
            left = {e["pack"]: e for e in result.trace["packs"]}["sample"]
            assert left["searched"] is False and left["left_out"] is True
            assert left["why"].startswith("an OpenML pack answers with tools over its runs, not passages")


def test_the_text_output_names_the_packs_left_out(
    garden: Path, openml_pack: Path, wikigr_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for pack in (garden, openml_pack):
        shutil.copytree(pack, wikigr_home / "packs" / pack.name)
    assert run(["query", "all", FOR_DOCUMENTS[0]]) == 0
    out = capsys.readouterr().out
    assert "[1] garden: " in out
    assert "Not searched: sample (an OpenML pack answers with tools over its runs, not passages" in out
    assert run(["query", "all", FOR_OPENML[1]]) == 0
    out = capsys.readouterr().out
    assert "H2OAutoML: mean" in out and "[1] sample: Algorithm.name = H2OAutoML" in out
    assert "Not searched: garden (sample answers the question alone: it names the algorithm H2OAutoML" in out
    assert run(["query", "all", FOR_OPENML[1], "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["sources"][0]["pack"] == "sample" and data["trace"]["tool_calls"]


def test_a_profile_that_does_not_apply_to_the_openml_pack_leaves_it_out(
    garden: Path, openml_pack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for options in (["--profile", "baseline"], ["--enable", "vector"]):
        assert run(["query", f"{garden},{openml_pack}", FOR_OPENML[0], *options]) == 0, options
        out = capsys.readouterr().out
        assert "[1] garden: " in out
        assert "Not searched: sample (not opened: " in out and " to openml packs" in out
