"""A decorator shown without arguments ("@functools.total_ordering") is a definition's line like any
signature: the how-to answer leads with it (sentences.py's ``_SIGNATURE``)."""

from __future__ import annotations

import re
from pathlib import Path

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.sentences import split_units

PYDOCS = Path(__file__).resolve().parent.parent / "packs" / "pydocs"


def first_sentence(answer: str) -> str:
    found = re.match(r".+?\s\[\d+\][.!?…]*", answer)
    assert found is not None, answer
    return found.group(0)


def test_a_decorator_shown_without_arguments_is_a_definition() -> None:
    units = split_units(
        "@functools.total_ordering\n\nGiven a class defining one or more rich comparison methods."
    )
    assert units[0].label == "@functools.total_ordering"
    with KnowledgeGraphAgent(PYDOCS, llm=None) as agent:
        ordering = agent.query(
            "How do I add the missing comparison methods to a class that defines __eq__ and __lt__?"
        )
        failing = agent.query("How do I mark a test that is expected to fail?")
    assert first_sentence(ordering.answer).startswith("@functools.total_ordering: Given a class defining")
    assert first_sentence(failing.answer).startswith(
        "@unittest.expectedFailure: Mark the test as an expected"
    )
