"""One question analysis (wikigr/question.py): made once per question, read by the router, the
extractive answer and the OpenML planner."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from wikigr.openml.rules import Vocabulary, plan
from wikigr.question import DATE, NAME, NUMBER, PERSON, Question
from wikigr.retrieval.sentence_scores import open_question

ROUTING = Path(__file__).resolve().parents[1] / "bench" / "data" / "openml_routing.jsonl"
VOCAB = Vocabulary(
    datasets=["credit-g"], algorithms=["TPOT", "autosklearn"], families=["boosting"], years=[2019]
)


def test_a_question_is_analysed_once_and_each_part_kept() -> None:
    asked = Question.of("Which band was formed first, The Exies or Circus Diablo?")
    assert Question.of("Which band was formed first, The Exies or Circus Diablo?") is asked
    assert asked.compared == ("The Exies", "Circus Diablo")
    assert asked.head_words is asked.head_words  # computed on first use, then kept
    assert Question.of("Who founded the society?") is not asked


@pytest.mark.parametrize(
    ("question", "kind", "answer_kind"),
    [
        ("How many members does the society have?", "aggregate", NUMBER),
        ("List all the logging levels", "global", None),
        ("What is the difference between a list and a tuple?", "relation", None),
        ("Who was the first president of the association that publishes the journal?", "multi_hop", PERSON),
        ("When was the society founded?", "simple", DATE),
        ("Which function returns True if path is an absolute pathname?", "simple", NAME),
        ("How do I set a socket timeout?", "simple", None),
    ],
)
def test_the_kind_of_question_and_what_it_asks_for(question: str, kind: str, answer_kind: str | None) -> None:
    asked = Question(question)
    assert asked.kind == kind and asked.classified[0] == kind
    assert asked.answer_kind == answer_kind


def test_what_a_question_asks_for_decides_an_open_answer() -> None:
    assert Question("Which exception does json.loads raise?").asks_code
    assert open_question("Which exception does json.loads raise?")  # a code name: sentences answer
    assert open_question("How do I read a file line by line?")
    assert not open_question("Who founded the society?")  # a factoid: candidates answer


def test_slot_head_and_content_words() -> None:
    asked = Question("A racing game developed by what company?")
    assert asked.slot == ("by", "devel")
    assert asked.head == "company"
    assert asked.content_words == {"racing", "game", "developed", "company"}


def test_the_openml_intent_of_every_labelled_routing_question() -> None:
    rows = [json.loads(line) for line in ROUTING.read_text().splitlines() if line.strip()]
    assert len(rows) > 50 and {r["intent"] for r in rows} == {"cypher", "count", "aggregate", "describe"}
    for row in rows:
        assert Question(row["question"]).intent == row["intent"], row["question"]
        assert plan(row["question"], VOCAB).intent == row["intent"], row["question"]


def test_the_openml_reading_of_a_question() -> None:
    asked = Question("  Which framework has the best AUC on credit-g?  ")
    assert (asked.intent, asked.measure, asked.similarity) == ("aggregate", "auc", None)
    similar = Question("Which algorithms are similar to random forest?")
    assert (similar.intent, similar.similarity) == ("describe", "similar")
    counted = Question("How many datasets are there?").counted
    assert counted is not None and counted.group(1) == "datasets"
