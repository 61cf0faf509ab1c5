"""The names an OpenML question gives, however it spells them; past tenses; a name or a value the
pack does not hold is said so, not answered for every run (issue 35, item 15)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.openml.conftest import AMLB
from wikigr.agent import KnowledgeGraphAgent
from wikigr.openml.rules import Vocabulary, plan

ROOT = Path(__file__).resolve().parents[2]
VOCAB = Vocabulary(
    datasets=["credit-g", "kc1", "Albert", "Fashion-MNIST"],
    algorithms=["TPOT", "autosklearn", "H2OAutoML", "RandomForest", "weka.J48", "AutoWEKA"],
    families=["automl", "random_forest", "decision_tree", "baseline"],
    years=[2019],
)


def arguments(question: str) -> dict[str, object]:
    chosen = plan(question, VOCAB)
    assert chosen.calls, chosen
    return chosen.calls[0][1]


@pytest.mark.parametrize(
    "spelling",
    ["H2O AutoML", "h2o automl", "H2O-AutoML", "h2o-automl", "H2OAutoML", "H2O.AutoML", "h2o_automl"],
)
def test_a_framework_is_matched_however_it_is_spelt(spelling: str) -> None:
    found = arguments(f"What is the mean accuracy of {spelling}?")
    assert found["filters"] == {"Algorithm.name": ["H2OAutoML"]}  # not the whole automl family
    assert found["statistic"] == "mean" and found["group_by"] == ["Algorithm.name"]


def test_other_spellings_of_the_packs_names() -> None:
    assert arguments("How did auto-sklearn do on Fashion MNIST?")["filters"] == {
        "Dataset.name": "Fashion-MNIST",
        "Algorithm.name": ["autosklearn"],
    }
    assert arguments("Compare Auto-WEKA and j48 on CREDIT-G")["filters"] == {
        "Dataset.name": "credit-g",
        "Algorithm.name": ["AutoWEKA", "weka.J48"],
    }
    # the words of a family name the family; the algorithm is written as one word
    assert arguments("How does random forest do?")["filters"] == {"Algorithm.family": "random_forest"}
    assert arguments("How does RandomForest do?")["filters"] == {"Algorithm.name": ["RandomForest"]}


@pytest.mark.parametrize(
    ("past", "present"),
    [
        ("How did TPOT do on credit-g?", "How does TPOT do on credit-g?"),
        ("How did H2O AutoML fare on kc1?", "How does H2O AutoML fare on kc1?"),
        ("Which AutoML system won on Albert?", "Which AutoML system wins on Albert?"),
    ],
)
def test_a_past_tense_asks_what_the_present_asks(past: str, present: str) -> None:
    then, now = plan(past, VOCAB), plan(present, VOCAB)
    assert now.intent == "aggregate"
    assert then.intent == now.intent and then.calls == now.calls


def test_a_name_the_pack_does_not_hold_is_said_so() -> None:
    unknown = plan("What is the mean accuracy of Xyz AutoML?", VOCAB)
    assert unknown.intent == "aggregate"  # the question's; its calls list what the pack holds
    assert unknown.notes[0].startswith("Nothing in the pack is called 'Xyz AutoML'")
    [(tool, call)] = unknown.calls
    assert tool == "graph_query" and "MATCH (a:Algorithm)" in call["query"]  # what it holds instead
    dataset = plan("What is the median accuracy on kc2?", VOCAB)
    assert "(closest: kc1)" in dataset.notes[0]
    assert "MATCH (d:Dataset)" in dataset.calls[0][1]["query"]
    # a name it holds is answered, and the one it does not is named
    some = plan("Compare TPOT and FooML on credit-g", VOCAB)
    assert some.intent == "aggregate" and some.notes == ["Nothing in the pack is called 'FooML'."]
    assert some.calls[0][1]["filters"] == {"Dataset.name": "credit-g", "Algorithm.name": ["TPOT"]}
    # a family the pack holds no algorithm of is said so, not answered for every family
    svm = plan("What is the mean accuracy of SVMs?", VOCAB)
    assert svm.notes == ["The pack holds no algorithm of the svm family.", "Its algorithm families:"]
    assert "MATCH (f:AlgorithmFamily)" in svm.calls[0][1]["query"]
    assert plan("How do neural networks do on credit-g?", VOCAB).calls == svm.calls
    both = plan("Which is better, boosting or random forest?", VOCAB)
    assert both.notes == ["The pack holds no algorithm of the boosting family."]
    assert both.calls[0][1]["filters"] == {"Algorithm.family": "random_forest"}
    # the rules' own words are no names
    for question in [
        "Which AutoML framework has the lowest median log-loss on Supervised Classification tasks?",
        "Which algorithm family has the highest median AUC on binary datasets in 2019?",
        "Which dataset is the hardest for OpenML's AutoML systems?",
    ]:
        assert plan(question, VOCAB).intent == "aggregate", question


@pytest.fixture(scope="module")
def amlb_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A pack of the AutoML benchmark's runs alone, as packs/amlb2019 is: no dataset qualities."""
    from wikigr.openml.build import OpenMLBuildOptions, build_openml_pack

    out = tmp_path_factory.mktemp("amlb") / "amlb"
    build_openml_pack("amlb", exports=[AMLB], out=out, options=OpenMLBuildOptions(embedding_cache=False))
    return out


def docs_examples() -> list[tuple[str, bool]]:
    """The questions docs/openml.md asks of packs/amlb2019, each with whether the docs show it
    answered "Nothing in the pack is called ..." (an example of a name the pack lacks)."""
    text = (ROOT / "docs" / "openml.md").read_text()
    found = re.findall(r'wikigr query packs/amlb2019 "([^"]+)"[^\n]*\n([^\n]*)', text)
    return [(question, shown.startswith("Nothing in the pack")) for question, shown in found]


def test_the_docs_examples_answer_on_a_pack_like_the_shipped_one(amlb_pack: Path) -> None:
    examples = docs_examples()
    assert len(examples) >= 5 and sum(nothing for _, nothing in examples) == 1
    with KnowledgeGraphAgent(amlb_pack, llm=None) as agent:
        for question, nothing in examples:
            result = agent.query(question)
            assert "[1]" in result.answer and result.trace["grounding"]["ungrounded_numbers"] == []
            if nothing:
                assert result.answer.startswith("Nothing in the pack is called"), result.answer
                continue
            assert not result.low_confidence, (question, result.answer)
            for said in ("nothing to rank", "Nothing in the pack", "None of the pack's"):
                assert said not in result.answer, (question, result.answer)


def test_a_filter_the_pack_cannot_pass_is_said_so(amlb_pack: Path, openml_pack: Path) -> None:
    question = "Which algorithm family works best on imbalanced datasets?"
    with KnowledgeGraphAgent(amlb_pack, llm=None) as agent:
        result = agent.query(question)
        regression = agent.query("Which framework is best on regression tasks?")
        named = agent.query("What is the mean accuracy of H2O AutoML?")
        unknown = agent.query("What is the mean accuracy of Xyz AutoML?")
    assert result.answer.startswith("None of the pack's datasets has a known class balance")
    assert "1 row(s) [1]: unknown, 3" in result.answer  # the sample's three datasets, cited
    assert "No task of the pack has Task.type = Supervised Regression." in regression.answer
    assert "Supervised Classification, 3" in regression.answer
    assert "H2OAutoML: mean" in named.answer and "automl" not in named.answer
    assert unknown.answer.startswith("Nothing in the pack is called 'Xyz AutoML'")
    assert "H2OAutoML" in unknown.answer and unknown.sources
    # a pack with dataset qualities ranks on them
    with KnowledgeGraphAgent(openml_pack, llm=None) as agent:
        ranked = agent.query(question)
    assert ranked.answer.startswith("For Dataset.imbalance_bucket = imbalanced, the Algorithm.family")
