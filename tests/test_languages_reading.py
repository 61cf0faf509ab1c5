"""A question asked in another language read in the documents' words, as a vector (wikigr/retrieval/
across.py ``read``, page_score's ``reading_across``): the lexicon's vectors of the words the
question is read as, summed by their weights, are added to the question's vector. Real e5, offline;
the pages are made here (tests/test_languages_across.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from tests.test_embed_multilingual import multilingual, use_cache  # noqa: F401  (fixtures)
from tests.test_languages_across import TWINS, _page_score, man_pages  # noqa: F401  (a fixture)
from wikigr.agent import KnowledgeGraphAgent
from wikigr.embed import embed_queries
from wikigr.pack.lexicon import Lexicon
from wikigr.retrieval.across import read, with_reading
from wikigr.retrieval.stages.page_score import PageScoreOptions

OFF = {"page_score": {"reading_across": 0.0}}


def test_the_reading_is_the_weighted_sum_of_the_words_vectors_and_nearer_the_english_twin(
    man_pages: Path,  # noqa: F811
) -> None:
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        for russian, english in TWINS:
            state = agent.new_state(russian)
            assert state.across
            lexicon = state.ctx.lexicon()
            assert lexicon is not None
            found = read(state, state.ctx.keyword_index(), lexicon)
            assert found.vector is not None
            assert np.isclose(np.linalg.norm(found.vector), 1.0, atol=1e-5)
            # the vector lies in the span of the words found (the lexicon's vectors, or a word the
            # glossary says embedded), not the question's own
            in_lexicon = [lexicon.words.index(w) for w in found.words if w in lexicon.words]
            basis = np.vstack([lexicon.vectors[in_lexicon], embed_queries(state.ctx.embedder, found.words)]).T
            fit = basis @ np.linalg.lstsq(basis, found.vector, rcond=None)[0]
            assert np.allclose(fit, found.vector, atol=1e-4)
            twin = embed_queries(state.ctx.embedder, [english])[0]
            question = state.vector()
            both = with_reading(question, found, PageScoreOptions().reading_across)
            assert np.isclose(np.linalg.norm(both), 1.0, atol=1e-5)
            assert float(both @ twin) > float(question @ twin) / float(np.linalg.norm(question)), russian
            assert with_reading(question, found, 0.0) is question


def test_page_score_adds_the_reading_to_the_question_s_vector_across_languages_only(
    man_pages: Path,  # noqa: F811
) -> None:
    russian, english = TWINS[2]
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        result = agent.query(russian)
        same = agent.query(english)
    with KnowledgeGraphAgent(man_pages, llm=None, options=OFF) as agent:
        before = agent.query(russian)
    trace = _page_score(result)
    assert trace["read_vector"] == 0.6 and "process" in trace["read_as"]  # type: ignore[operator]
    assert "read_vector" not in _page_score(same)  # the documents' language: its own words
    assert "read_vector" not in _page_score(before) and "read_as" in _page_score(before)
    assert result.sources[0].url.rsplit("/", 1)[-1].startswith("kill")


def test_without_a_lexicon_a_question_across_languages_is_not_read(man_pages: Path) -> None:  # noqa: F811
    for file in (man_pages / "lexicon").iterdir():
        file.unlink()
    (man_pages / "lexicon").rmdir()
    assert Lexicon.load(man_pages, 384) is None
    with KnowledgeGraphAgent(man_pages, llm=None) as agent:
        trace = _page_score(agent.query(TWINS[0][0]))
    assert "read_vector" not in trace and "read_as" not in trace


@pytest.mark.parametrize("value", [-0.1, float("nan"), float("inf")])
def test_reading_across_is_checked(value: float) -> None:
    with pytest.raises(ValueError, match="reading_across"):
        PageScoreOptions(reading_across=value)
