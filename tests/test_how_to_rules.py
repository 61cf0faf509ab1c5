"""The general rules the how-to answer gained on the third dev set (bench/data/developer_questions_dev3.json):
each asked of the shipped example pack `packs/pydocs` (a question each rule fixes), with the rule
itself on made passages."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.api_lead import discouraged
from wikigr.retrieval.api_rank import described, folded
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.sentence_scores import AnswerOptions, score_sentences
from wikigr.retrieval.short_answer import page_passages, with_page_passages
from wikigr.retrieval.stage import Candidate, QueryState

PYDOCS = Path(__file__).resolve().parent.parent / "packs" / "pydocs"


@pytest.fixture(scope="module")
def agent() -> Iterator[KnowledgeGraphAgent]:
    with KnowledgeGraphAgent(PYDOCS, llm=None) as opened:
        yield opened


def first_sentence(answer: str) -> str:
    found = re.match(r".+?\s\[\d+\][.!?…]*", answer)
    assert found is not None, answer
    return found.group(0)


def _passage(chunk_id: str, text: str, page: str = "random") -> Candidate:
    return Candidate(chunk_id, text, page, page, f"https://docs.example/{page}", f"{page}:0", page, "", 1.0)


SHUFFLE = (
    "random.shuffle(x)\n\nShuffle the sequence x in place.\n\n"
    "Deprecated since version 3.9, removed in version 3.11: The optional parameter random."
)


def test_a_deprecated_parameter_does_not_deprecate_its_api(agent: KnowledgeGraphAgent) -> None:
    # the note after random.shuffle's description is of its parameter: the API is no less advised
    question = "How do I shuffle a list in random order?"
    state = QueryState(question=question, ctx=agent.context, top_k=1)
    scored = score_sentences(state, [_passage("random:0:0", SHUFFLE)], AnswerOptions())
    assert "random.shuffle" not in discouraged(scored)
    walkdir = "os.walkdir(top)\n\nDeprecated since version 3.2: Generate the entries of a directory tree."
    scored = score_sentences(state, [_passage("os:0:0", walkdir, "os")], AnswerOptions())
    assert "os.walkdir" in discouraged(scored)  # its own description is the note: it is
    answer = agent.query(question).answer
    assert first_sentence(answer).startswith("random.shuffle(x): Shuffle the sequence x in place"), answer


def test_a_description_meets_the_question_in_any_english_form(agent: KnowledgeGraphAgent) -> None:
    assert folded("counting") == folded("counts") == folded("count") == "count"
    assert folded("dictionaries") == folded("dictionary") and folded("deleted") == folded("delete")
    assert folded("list") == "list" and folded("set") == "set"  # short words as they are
    weights = {"largest": 2.0, "value": 1.0, "list": 1.0}
    assert described(weights, ["return", "the", "largest", "item", "in", "an", "iterable"]) == 0.5
    assert described(weights, ["values", "of", "lists"]) == 0.5  # "value" and "list", in other forms
    answer = agent.query("How do I find the largest value in a list?").answer
    assert first_sentence(answer).startswith("max("), answer


def test_the_passages_after_the_top_ones_are_read_for_a_how_to_answer(agent: KnowledgeGraphAgent) -> None:
    # platform.node's passage, the definition nearest the question, is the 6th: listed, never read
    state = QueryState(question="How do I get the host name of this machine?", ctx=agent.context, top_k=5)
    *retrieval, synthesize = agent.stages
    run_stages(retrieval, state)
    passages = synthesize.passages(state)  # type: ignore[attr-defined]
    node = "8b983d4d884b4c01:1:1"
    assert node in [c.chunk_id for c in passages[5:]]
    more = page_passages(state, passages, AnswerOptions())
    assert node in [c.chunk_id for c in more]


def test_a_read_passage_that_is_a_source_already_is_cited_at_its_number() -> None:
    passages = [_passage(f"p:0:{n}", f"text {n}") for n in range(7)]
    more = [passages[5], _passage("q:0:0", "new")]  # the 6th source, and one that is none yet
    answer, added = with_page_passages("A [1]. B [3]. C [4]. D [2].", 2, passages, more)
    assert answer == "A [1]. B [6]. C [8]. D [2]." and added == [more[1]]
