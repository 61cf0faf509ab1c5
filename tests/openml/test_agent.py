"""Answering questions about an OpenML pack: the router of the auto profile picks the OpenML tools
(the openml_tools stage): their rules offline, Claude tool use through the real SDK against the
fake Messages API, and `wikigr query` reaching them like any pack."""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.fakeclaude import FakeClaude, Reply, make_llm
from tests.openml.conftest import STUDY1
from tests.openml.test_tools import amlb, arff
from wikigr.agent import KnowledgeGraphAgent
from wikigr.errors import InvalidPackError, UsageError
from wikigr.openml.rules import Vocabulary, plan, ungrounded_numbers
from wikigr.openml.tool_specs import ToolResult
from wikigr.pack.pack import open_pack

QUESTION = "Which algorithm family has the highest median accuracy on classification tasks?"


@pytest.fixture
def pack(openml_pack: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "sample"
    shutil.copytree(openml_pack, copy)
    return copy


def cited(answer: str) -> list[int]:
    return sorted({int(n) for n in re.findall(r"\[(\d+)\]", answer)})


# -- the rules ------------------------------------------------------------------------------------

VOCAB = Vocabulary(
    datasets=["credit-g", "kc1", "Albert", "data 2"],
    algorithms=["TPOT", "autosklearn", "H2OAutoML", "weka.J48"],
    families=["automl", "boosting", "random_forest", "decision_tree"],
    years=[2019],
)


@pytest.mark.parametrize(
    ("question", "tool", "expected"),
    [
        (
            QUESTION,
            "aggregate_measures",
            {
                "group_by": ["Algorithm.family"],
                "measure": "accuracy",
                "statistic": "median",
                "filters": {"Task.type": "Supervised Classification"},
            },
        ),
        (
            "Which algorithm family works best on imbalanced datasets?",
            "aggregate_measures",
            {"group_by": ["Algorithm.family"], "filters": {"Dataset.imbalance_bucket": "imbalanced"}},
        ),
        (
            "Compare TPOT and autosklearn on credit-g by AUC",
            "aggregate_measures",
            {
                "group_by": ["Algorithm.name"],
                "measure": "auc",
                "filters": {"Dataset.name": "credit-g", "Algorithm.name": ["autosklearn", "TPOT"]},
            },
        ),
        (
            "What is the average log-loss of boosting on large binary datasets?",
            "aggregate_measures",
            {
                "measure": "log_loss",
                "statistic": "mean",
                "filters": {
                    "Dataset.size_bucket": ["large", "very_large"],
                    "Dataset.classes": 2,
                    "Algorithm.family": "boosting",
                },
            },
        ),
        (
            "Which dataset is the hardest?",
            "aggregate_measures",
            {"group_by": ["Dataset.name"], "order": "worst"},
        ),
        ("Which framework is the fastest in 2019?", "aggregate_measures", {"measure": "runtime_s"}),
        ("How does J48 perform?", "aggregate_measures", {"filters": {"Algorithm.name": ["weka.J48"]}}),
        (
            "How many runs are there on kc1?",
            "graph_query",
            {
                "query": "MATCH (r:Run), (r)-[:ON_DATASET]->(d:Dataset) WHERE d.name = 'kc1' "
                "RETURN count(DISTINCT r) AS count"
            },
        ),
        (
            "how many datasets are imbalanced?",
            "graph_query",
            {"query": "MATCH (d:Dataset) WHERE d.imbalance_bucket = 'imbalanced' RETURN count(d) AS count"},
        ),
        ("MATCH (a:Algorithm) RETURN a.name", "graph_query", {"query": "MATCH (a:Algorithm) RETURN a.name"}),
        ("Tell me about the Albert dataset", "semantic_search", {"text": "Tell me about the Albert dataset"}),
        # issue 13: naming algorithms or learners is not asking for a ranking
        (
            "algorithms similar to random forest",
            "semantic_search",
            {"tables": ["Algorithm", "AlgorithmFamily"]},
        ),
        ("instance-based lazy learners", "semantic_search", {"tables": ["Algorithm", "AlgorithmFamily"]}),
        ("datasets like credit-g", "semantic_search", {"tables": ["Dataset"]}),
        ("Which algorithm is most similar to TPOT?", "semantic_search", {"k": 5}),
        ("Which algorithms are tree ensembles?", "semantic_search", {"k": 5}),
        ("Does TPOT beat autosklearn on kc1?", "aggregate_measures", {"group_by": ["Algorithm.name"]}),
        ("What accuracy does TPOT get?", "aggregate_measures", {"measure": "accuracy"}),
        ("What is the estimation procedure of the kc1 task?", "semantic_search", {"tables": ["Task"]}),
    ],
)
def test_rules_pick_tools_and_arguments(question: str, tool: str, expected: dict[str, Any]) -> None:
    chosen = plan(question, VOCAB)
    name, arguments = chosen.calls[0]
    assert name == tool
    for key, value in expected.items():
        assert arguments[key] == value, (key, arguments)


def test_grounding_allows_rounding_and_ignores_names_and_citations() -> None:
    result = ToolResult("aggregate_measures", {}, {"groups": [{"median": 0.872038, "count": 4674}]})
    assert ungrounded_numbers("median 0.872 over 4,674 runs of H2O on data:61 in study_1 [3]", [result]) == []
    assert ungrounded_numbers("median 0.87 (87.2%) over 4674 runs", [result]) == []
    assert ungrounded_numbers("median 0.9 over 5000 runs", [result]) == ["5000"]
    assert ungrounded_numbers("median 0.873", [result]) == ["0.873"]


# -- offline answers ------------------------------------------------------------------------------


def test_offline_answer_is_computed_grounded_and_cited(pack: Path) -> None:
    with KnowledgeGraphAgent(pack) as agent:
        result = agent.query(QUESTION)
    trace = result.trace
    assert result.profile == "auto" and trace["router"] == "rules" and trace["answer_mode"] == "rules"
    call = trace["tool_calls"][0]
    assert call["tool"] == "aggregate_measures"
    assert call["input"]["filters"] == {"Task.type": "Supervised Classification"}
    top = call["output"]["groups"][0]
    # the top family's median, straight from the two files (see test_tools for the family table)
    automl = {"autosklearn", "H2OAutoML", "TPOT", "AutoWEKA", "oboe"}
    if top["group"]["Algorithm.family"] == "automl":
        values = [float(r["acc"]) for r in amlb() if r["acc"] and r["framework"] in automl]
        assert top["median"] == pytest.approx(statistics.median(values))
    assert f"is {top['group']['Algorithm.family']}: median {top['median']:.3f}" in result.answer
    assert trace["grounding"]["ungrounded_numbers"] == []
    assert cited(result.answer) and max(cited(result.answer)) <= len(result.sources)
    assert result.sources[0].title == f"Algorithm.family = {top['group']['Algorithm.family']}"
    # the best run of an export row has no OpenML run id: its task's (or dataset's) public page
    assert re.fullmatch(r"https://www\.openml\.org/[td]/\d+", result.sources[0].url)
    assert result.facts and not result.low_confidence
    # one router over the one seam: the passage stages of the auto profile do not apply
    [router] = trace["stages"]
    assert router["stage"] == "router" and router["detail"]["strategy"] == "openml"
    assert router["detail"]["pack"].startswith("an OpenML pack")
    assert router["detail"]["tools"] == ["aggregate_measures"]


def test_offline_counts_and_semantic_answers(pack: Path) -> None:
    with KnowledgeGraphAgent(pack) as agent:
        count = agent.query("How many runs are there on credit-g?")
        described = agent.query("Tell me about the credit-g dataset")
    expected = sum(1 for r in amlb() if r["dataset_name"] == "credit-g")
    assert count.answer.startswith(f"Count: {expected} [1]")
    assert described.trace["tool_calls"][0]["tool"] == "semantic_search"
    assert described.sources[0].title == "Dataset credit-g"
    assert described.trace["grounding"]["ungrounded_numbers"] == []


CITED = [
    QUESTION,
    "Compare TPOT and autosklearn on credit-g by AUC",
    "Which dataset is the hardest?",
    "How many runs are there on credit-g?",
    "Tell me about the credit-g dataset",
    "algorithms similar to random forest",
    "MATCH (a:Algorithm) RETURN a.name, a.id LIMIT 3",
]


def assert_no_local_path(text: str, *roots: Path) -> None:
    assert "file:" not in text
    for root in roots:
        assert str(root) not in text


def test_citations_never_name_the_builders_machine(
    capsys: pytest.CaptureFixture[str], pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    """A pack travels: its citations are public OpenML pages (a task's page for a run of an
    export that has task ids) or the export file's name and line, never a file:// URL or a path."""
    from tests.openml.conftest import AMLB

    # an export without any OpenML id: the file's name and line are all there is to cite
    bare = tmp_path / "exports" / "bare_runs.csv"
    bare.parent.mkdir()
    rows = [r for r in amlb() if r["acc"]][:40]
    bare.write_text(
        "dataset_name,framework,acc\n"
        + "".join(f"{r['dataset_name']},{r['framework']},{r['acc']}\n" for r in rows)
    )
    code, _, err = cli(capsys, "pack", "create", "bare", "--openml-export", str(bare))
    assert code == 0, err
    for target, roots in ((pack, (AMLB.parent,)), (wikigr_home / "packs" / "bare", (bare.parent,))):
        roots = (*roots, target)
        for name in ("manifest.json", "urls.txt", "skill.md"):
            assert_no_local_path((target / name).read_text(), *roots)
        for question in CITED:
            code, out, err = cli(capsys, "query", str(target), question, "--json")
            assert code == 0, err
            data = json.loads(out)
            assert_no_local_path(out, *roots)
            for source in data["sources"]:
                url = source["url"]
                assert not url.startswith("/"), url
                assert url == "" or re.fullmatch(
                    r"https://www\.openml\.org/[rtfd]/\d+|\w+\.csv#line=\d+", url
                ), url
    code, out, _ = cli(capsys, "query", "bare", "Which framework has the highest median accuracy?", "--json")
    assert code == 0
    assert json.loads(out)["sources"][0]["url"].startswith("bare_runs.csv#line=")


def test_cli_query_on_an_openml_pack(capsys: pytest.CaptureFixture[str], pack: Path) -> None:
    code, out, err = cli(capsys, "query", str(pack), QUESTION, "--json")
    assert code == 0, err
    data = json.loads(out)
    assert {"answer", "sources", "profile", "trace"} <= set(data) and data["profile"] == "auto"
    assert data["trace"]["tool_calls"][0]["tool"] == "aggregate_measures"
    code, out, _ = cli(capsys, "query", str(pack), QUESTION, "--trace")
    assert code == 0 and "Sources" in out
    code, out, _ = cli(capsys, "query", str(pack), QUESTION, "--profile", "routed", "--json")
    assert code == 0 and json.loads(out)["answer"] == data["answer"]  # its router answers too
    code, _, err = cli(capsys, "query", str(pack), QUESTION, "--profile", "baseline")
    assert code == 2
    assert_one_error(err, "no stage of profile baseline applies to openml packs")
    code, _, err = cli(capsys, "query", str(pack), QUESTION, "--enable", "vector")
    assert code == 2
    assert_one_error(err, "stage vector does not apply to openml packs")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"max_tool_calls": 0}, "kg_config.json: max_tool_calls must be a positive integer"),
        ({"max_tool_calls": True}, "kg_config.json: max_tool_calls must be a positive integer"),
        ({"max_tools": 3}, "kg_config.json: max_tools: unknown field"),
        ({"stages": {"openml_tools": {"budget": 3}}}, "stages.openml_tools.budget: unknown field"),
    ],
)
def test_bad_kg_config_is_refused(pack: Path, config: dict[str, Any], message: str) -> None:
    (pack / "kg_config.json").write_text(json.dumps(config))
    with pytest.raises(InvalidPackError, match=message):
        KnowledgeGraphAgent(pack, llm=None)


def test_eval_and_the_mcp_server_work_on_an_openml_pack(pack: Path) -> None:
    from wikigr.eval.runner import EvalOptions, evaluate
    from wikigr.mcp_server import AgentCache
    from wikigr.skill import digest

    (pack / "eval").mkdir(exist_ok=True)
    (pack / "eval" / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "question": QUESTION, "ground_truth": "automl"}) + "\n"
    )
    (report,) = evaluate(pack, EvalOptions())
    row = json.loads(report.results_file.read_text())["questions"][0]
    assert report.profile == "auto" and row["retrieved"][0]["origin"] == "aggregate_measures"
    assert row["metrics"]["f1"] > 0  # the answer names the top family
    cache = AgentCache()
    try:
        assert digest(cache.get(str(pack), None, "query").context.store).titles == []  # pack_info
        found = cache.get(str(pack), None, "search").query(QUESTION, top_k=2)
        assert found.sources[0].title.startswith("Algorithm.family = ") and len(found.sources) == 3
    finally:
        cache.close()


def test_the_graph_explorer_refuses_an_openml_pack(pack: Path) -> None:
    from wikigr.serve.graph import neighbourhood

    with open_pack(pack).open_store() as store, pytest.raises(UsageError) as refused:
        neighbourhood(store, ["run:1"], [])
    assert str(refused.value) == "an OpenML pack has no passage graph to explore"


# -- Claude tool use ----------------------------------------------------------------------------------


def tool_results(body: dict[str, Any]) -> list[str]:
    texts = []
    for message in body.get("messages", []):
        if isinstance(message.get("content"), list):
            texts += [b["content"] for b in message["content"] if b.get("type") == "tool_result"]
    return texts


def analyst(body: dict[str, Any]) -> Reply:
    """A fake Claude: first asks for the family aggregate, then answers quoting its result."""
    results = tool_results(body)
    if not results:
        return Reply.tool_use(
            "aggregate_measures",
            {"group_by": ["Algorithm.family"], "filters": {"Task.type": "Supervised Classification"}},
            text="Let me aggregate the runs.",
        )
    data = json.loads(results[-1].split(" ", 1)[1])
    top = data["groups"][0]
    family = top["group"]["Algorithm.family"]
    return Reply.text(
        f"{family} leads with a median accuracy of {top['median']:.3f} over {top['count']} runs [1]."
    )


def test_claude_picks_the_tools_and_cites_their_results(pack: Path, fake_claude: FakeClaude) -> None:
    fake_claude.respond_with(analyst)
    with make_llm(fake_claude) as llm, KnowledgeGraphAgent(pack, llm=llm) as agent:
        result = agent.query(QUESTION)
    trace = result.trace
    assert trace["router"] == "claude" and trace["answer_mode"] == "claude"
    assert trace["usage"]["calls"] == 2 and trace["usage"]["input_tokens"] > 0
    assert len(trace["tool_calls"]) == 1 and trace["tool_calls"][0]["tool"] == "aggregate_measures"
    top = trace["tool_calls"][0]["output"]["groups"][0]
    assert result.answer.endswith(f"over {top['count']} runs [1].")
    assert result.sources[0].title == "aggregate_measures [1]"
    first, second = fake_claude.messages_requests
    assert {t["name"] for t in first.tools} == {"aggregate_measures", "graph_query", "semantic_search"}
    assert "Every number you state must come from a tool result" in first.system
    assert tool_results(second.json)[0].startswith("[1] {")


def test_an_answer_with_an_invented_number_is_replaced(pack: Path, fake_claude: FakeClaude) -> None:
    fake_claude.script(
        Reply.tool_use("aggregate_measures", {"group_by": ["family"]}),
        Reply.text("automl wins with a median accuracy of 0.999 [1] and [7]."),
    )
    with make_llm(fake_claude) as llm, KnowledgeGraphAgent(pack, llm=llm) as agent:
        result = agent.query(QUESTION)
    trace = result.trace
    assert trace["answer_mode"] == "claude tools, composed answer"
    assert "0.999" in trace["claude"] and "0.999" not in result.answer
    assert trace["removed_citations"] == [7]
    assert trace["grounding"]["ungrounded_numbers"] == []
    assert result.answer.startswith("For all runs, the Algorithm.family with the highest median accuracy")


def test_an_answer_without_a_tool_call_is_replaced_by_the_rules_answer(
    capsys: pytest.CaptureFixture[str], pack: Path, claude_env: FakeClaude
) -> None:
    """Claude answering from its own knowledge is not an answer from the pack: the rules' answer
    (tools run, every number cited) is printed instead, and the trace keeps Claude's text."""
    claude_env.script(Reply.text("Random forests usually win, around 0.85 accuracy [1]."))
    code, out, err = cli(capsys, "query", str(pack), QUESTION, "--json")
    assert code == 0, err
    data = json.loads(out)
    trace = data["trace"]
    assert len(claude_env.messages_requests) == 1
    assert trace["answer_mode"] == "rules (Claude called no tool)" != "claude"
    assert trace["claude_answer"].startswith("Random forests usually win")
    assert "Claude answered without calling a tool" in trace["claude"]
    assert "Random forests usually" not in data["answer"] and "0.85" not in data["answer"]
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        offline = agent.query(QUESTION)
    assert data["answer"] == offline.answer
    assert cited(data["answer"]) and len(data["sources"]) >= max(cited(data["answer"]))
    assert trace["grounding"]["ungrounded_numbers"] == [] and not data["low_confidence"]
    assert [c["tool"] for c in trace["tool_calls"]] == ["aggregate_measures"]


def test_an_answer_that_cites_no_tool_result_is_composed(pack: Path, fake_claude: FakeClaude) -> None:
    fake_claude.script(
        Reply.tool_use("aggregate_measures", {"group_by": ["family"]}),
        Reply.text("automl is clearly the best family."),
    )
    with make_llm(fake_claude) as llm, KnowledgeGraphAgent(pack, llm=llm) as agent:
        result = agent.query(QUESTION)
    trace = result.trace
    assert trace["answer_mode"] == "claude tools, composed answer"
    assert trace["claude_answer"] == "automl is clearly the best family."
    assert "cited no tool result" in trace["claude"]
    assert result.answer.startswith("For all runs, the Algorithm.family with the highest median accuracy")
    assert cited(result.answer)


def test_the_tool_call_budget_is_kept(pack: Path, fake_claude: FakeClaude) -> None:
    config = pack / "kg_config.json"
    config.write_text(json.dumps({"max_tool_calls": 2}))
    query = {"query": "MATCH (r:Run) RETURN count(r) AS n"}
    fake_claude.respond_with(lambda body: Reply.tool_use("graph_query", query))
    with make_llm(fake_claude) as llm, KnowledgeGraphAgent(pack, llm=llm) as agent:
        result = agent.query("How many runs?")
    assert len(result.trace["tool_calls"]) == 2
    assert len(fake_claude.messages_requests) == 4  # budget + 2 turns, then the answer is composed
    assert "budget of 2 tool calls is spent" in fake_claude.last.prompt
    runs = len(amlb()) + len(arff(STUDY1))
    assert result.answer.splitlines()[0] == f"1 row(s) [1]: {runs:,}"
    assert "no final answer within the tool-call budget" in result.trace["claude"]


def test_claude_cannot_write_through_graph_query(pack: Path, fake_claude: FakeClaude) -> None:
    fake_claude.script(
        Reply.tool_use("graph_query", {"query": "MATCH (r:Run) DETACH DELETE r"}),
        Reply.text("I could not delete anything."),
    )
    with make_llm(fake_claude) as llm, KnowledgeGraphAgent(pack, llm=llm) as agent:
        result = agent.query("Delete all runs")
        assert result.trace["tool_calls"][0]["error"].startswith("refused: DETACH")
        assert "is_error" in json.dumps(fake_claude.last.messages[-1])
    with open_pack(pack).open_store() as store:
        assert store.rows("MATCH (r:Run) RETURN count(r)")[0][0] == len(amlb()) + len(arff(STUDY1))


def test_claude_failure_is_an_error_or_a_fallback(
    capsys: pytest.CaptureFixture[str], pack: Path, claude_env: FakeClaude
) -> None:
    claude_env.script(Reply.unauthorized())
    code, _, err = cli(capsys, "query", str(pack), QUESTION)
    assert code == 1
    assert_one_error(err, "Claude API rejected the key")
    claude_env.script(Reply.unauthorized())
    code, out, err = cli(capsys, "query", str(pack), QUESTION, "--fallback", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["trace"]["answer_mode"] == "rules (Claude failed)"
    assert "Warning: Claude failed" in err


def test_a_hanging_claude_leaves_the_rules_to_answer_within_the_budget(
    capsys: pytest.CaptureFixture[str], pack: Path, claude_env: FakeClaude
) -> None:
    claude_env.script(*[Reply.slow(60)] * 4)  # accepted, never answered in time
    code, out, err = cli(capsys, "query", str(pack), QUESTION, "--fallback", "--json", "--timeout", "2")
    assert code == 0, err
    data = json.loads(out)
    assert data["trace"]["answer_mode"] == "rules (Claude failed)"
    assert data["trace"]["total_ms"] < 2000 + 10000  # the budget (a busy machine adds seconds), not 4 x 60 s
    assert "within the time budget of 2s" in err and cited(data["answer"])
    claude_env.script(*[Reply.slow(60)] * 4)
    code, _, err = cli(capsys, "query", str(pack), QUESTION, "--timeout", "2")
    assert code == 1
    assert_one_error(err, "no answer from Claude within the time budget of 2s")


def test_the_example_pack_answers_from_its_data() -> None:
    example = Path(__file__).resolve().parents[2] / "packs" / "amlb2019"
    from wikigr.validate import validate_pack

    assert validate_pack(example).ok
    with KnowledgeGraphAgent(example) as agent:
        result = agent.query(QUESTION)
    top = result.trace["tool_calls"][0]["output"]["groups"][0]
    assert top["group"] == {"Algorithm.family": "automl"} and top["count"] == 4674
    assert result.trace["grounding"]["ungrounded_numbers"] == []
    # the shipped pack cites the public task pages of its runs, not the CSV on the builder's disk
    assert all(re.fullmatch(r"https://www\.openml\.org/t/\d+", s.url) for s in result.sources)
    for name in ("manifest.json", "urls.txt", "skill.md"):
        assert_no_local_path((example / name).read_text(), Path("/work"), Path.home())
