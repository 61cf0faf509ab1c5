"""An API is advised against when its own description opens with "Deprecated since version", not
when a later note deprecates one of its parameters."""

from __future__ import annotations

import re
from pathlib import Path

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.api_lead import discouraged
from wikigr.retrieval.sentence_scores import AnswerOptions, score_sentences
from wikigr.retrieval.stage import Candidate, QueryState

PYDOCS = Path(__file__).resolve().parent.parent / "packs" / "pydocs"
SHUFFLE = (
    "random.shuffle(x)\n\nShuffle the sequence x in place.\n\n"
    "Deprecated since version 3.9, removed in version 3.11: The optional parameter random."
)
WALKDIR = "os.walkdir(top)\n\nDeprecated since version 3.2: Generate the entries of a directory tree."


def _passage(chunk_id: str, text: str, page: str) -> Candidate:
    return Candidate(chunk_id, text, page, page, f"https://docs.example/{page}", f"{page}:0", page, "", 1.0)


def test_a_deprecated_parameter_does_not_deprecate_its_api() -> None:
    with KnowledgeGraphAgent(PYDOCS, llm=None) as agent:
        question = "How do I shuffle a list in random order?"
        state = QueryState(question=question, ctx=agent.context, top_k=1)
        scored = score_sentences(state, [_passage("random:0:0", SHUFFLE, "random")], AnswerOptions())
        assert "random.shuffle" not in discouraged(scored)
        scored = score_sentences(state, [_passage("os:0:0", WALKDIR, "os")], AnswerOptions())
        assert "os.walkdir" in discouraged(scored)  # its own description is the note: it is
        answer = agent.query(question).answer or ""
    first = re.match(r".+?\s\[\d+\][.!?…]*", answer)
    assert first is not None, answer
    assert first.group(0).startswith("random.shuffle(x): Shuffle the sequence x"), answer
