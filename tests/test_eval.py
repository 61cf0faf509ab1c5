"""Evaluation: metrics, question files, importers, the runner, judges, generation."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.fakeclaude import FakeClaude, Reply, prompt_text
from wikigr.build import build_pack
from wikigr.cli import run
from wikigr.errors import UsageError
from wikigr.eval import metrics
from wikigr.eval.judges import OfflineJudge
from wikigr.eval.questions import Question, import_questions, load_questions, write_questions
from wikigr.eval.runner import EvalOptions, evaluate
from wikigr.pack.manifest import load_manifest
from wikigr.progress import ProgressEvent

PASSAGES = [
    {
        "title": "Lilu (mythology)",
        "text": "Lilu is a masculine Akkadian word for a spirit or demon of the storm.",
    },
    {"title": "Gallu", "text": "In Mesopotamian religion, gallu were great demons of the underworld."},
    {
        "title": "Bread",
        "text": "Bread is a staple food prepared from a dough of flour and water, baked in an oven.",
    },
    {
        "title": "Tomato",
        "text": "The tomato is the edible berry of the plant Solanum lycopersicum, grown in gardens.",
    },
    {"title": "Paris", "text": "Paris is the capital and largest city of France, on the river Seine."},
]
QUESTIONS = [
    {
        "id": "q1",
        "question": "What kind of being is Lilu?",
        "ground_truth": "a demon",
        "answer_aliases": ["spirit"],
        "type": "bridge",
        "gold_sources": ["Lilu (mythology)"],
    },
    {
        "id": "q2",
        "question": "Which demons lived in the underworld, and what is a storm demon called?",
        "ground_truth": "gallu",
        "type": "comparison",
        "gold_sources": ["Gallu", "Lilu (mythology)"],
    },
    {
        "id": "q3",
        "question": "What is bread made of?",
        "ground_truth": "flour and water",
        "type": "bridge",
        "gold_sources": ["Bread"],
    },
    {
        "id": "q4",
        "question": "What is the capital of Germany?",
        "ground_truth": "Berlin",
        "type": "bridge",
        "gold_sources": ["Berlin"],
    },
    {"id": "q5", "question": "Which river flows through Paris?", "ground_truth": "Seine", "type": "bridge"},
]


@pytest.fixture(scope="module")
def corpus_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("evalpack")
    corpus = root / "passages.json"
    corpus.write_text(json.dumps(PASSAGES))
    build_pack("myth", [], out=root / "myth", corpus=corpus)
    return root / "myth"


@pytest.fixture
def pack(corpus_pack: Path, tmp_path: Path) -> Path:
    import shutil

    copy = tmp_path / "myth"
    shutil.copytree(corpus_pack, copy)
    (copy / "eval" / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    return copy


# -- metrics ------------------------------------------------------------------------------------


def test_squad_normalisation_em_and_f1() -> None:
    assert metrics.normalize_answer("The  Eiffel Tower!") == "eiffel tower"
    assert metrics.exact_match("the eiffel tower", ["Eiffel Tower"]) == 1.0
    assert metrics.exact_match("tower", ["Eiffel Tower"]) == 0.0
    assert metrics.f1_score("eiffel tower in paris", ["The Eiffel Tower"]) == pytest.approx(2 * 0.5 * 1 / 1.5)
    assert metrics.f1_score("yes", ["no"]) == 0.0 and metrics.f1_score("Yes.", ["yes"]) == 1.0
    assert metrics.f1_score("something", ["nothing", "something else"]) == pytest.approx(2 / 3)


def test_ranking_metrics() -> None:
    ranks = metrics.first_ranks(["a", "x", "a", "b", "c"], ["b", "c", "z"])
    assert ranks == {"b": 3, "c": 4}
    assert metrics.recall_at(ranks, 3, 3) == pytest.approx(1 / 3)
    assert metrics.recall_at(ranks, 3, 4) == pytest.approx(2 / 3)
    assert metrics.hit_at(ranks, 2) == 0.0 and metrics.hit_at(ranks, 3) == 1.0
    assert metrics.reciprocal_rank(ranks) == pytest.approx(1 / 3)
    assert metrics.reciprocal_rank({}) == 0.0


# -- question files ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        (['{"id": "a", "question": "q"}', "{oops"], "line 2: not JSON"),
        (['{"id": "a"}'], "line 1: question: missing"),
        (['{"id": "a", "question": "q", "gold": []}'], "line 1: gold: unknown field"),
        (['{"id": "a", "question": "q"}', '{"id": "a", "question": "r"}'], "line 2: id 'a' repeats line 1"),
        (['{"id": "a", "question": "  "}'], "question must not be empty"),
    ],
)
def test_bad_question_rows_name_their_line(tmp_path: Path, lines: list[str], message: str) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(UsageError, match=message):
        load_questions(path)


def test_a_questions_file_that_is_not_utf8_is_one_line(tmp_path: Path) -> None:
    path = tmp_path / "questions.jsonl"
    path.write_bytes(b'{"id": "a", "question": "caf\xe9?"}\n')  # was a UnicodeDecodeError
    with pytest.raises(
        UsageError, match=r"questions\.jsonl: not UTF-8 \(invalid continuation byte at byte 28\)"
    ):
        load_questions(path)


def test_questions_read_back_what_they_wrote_whatever_line_breaks_their_strings_hold(tmp_path: Path) -> None:
    """JSON Lines are split at "\\n" only: str.splitlines also splits at U+2028, U+2029 and U+0085,
    which the writer leaves unescaped."""
    path = tmp_path / "questions.jsonl"
    asked = [Question("a", "Who wrote it?", "one\u2028two\u0085three"), Question("b", "When?", "1990")]
    write_questions(path, asked)
    assert load_questions(path) == asked


def test_importers(tmp_path: Path) -> None:
    musique = tmp_path / "m.json"
    musique.write_text(
        json.dumps(
            [
                {
                    "id": "2hop__1_2",
                    "question": "Who?",
                    "answer": "G. Stanley Hall",
                    "answer_aliases": ["Stanley Hall"],
                    "question_decomposition": [{}, {}],
                    "paragraphs": [
                        {"title": "A", "paragraph_text": "..", "is_supporting": True},
                        {"title": "B", "paragraph_text": "..", "is_supporting": False},
                    ],
                }
            ]
        )
    )
    (q,) = import_questions(musique, "musique")
    assert (q.id, q.type, q.gold_sources, q.answer_aliases) == ("2hop__1_2", "2hop", ["A"], ["Stanley Hall"])
    hotpot = tmp_path / "h.json"
    hotpot.write_text(
        json.dumps(
            [
                {
                    "_id": "x1",
                    "question": "Q?",
                    "answer": "yes",
                    "type": "comparison",
                    "level": "hard",
                    "supporting_facts": [["T1", 0], ["T2", 3], ["T1", 2]],
                }
            ]
        )
    )
    (h,) = import_questions(hotpot, "hotpotqa")
    assert (h.type, h.difficulty, h.gold_sources) == ("comparison", "hard", ["T1", "T2"])
    conala = tmp_path / "c.json"
    conala.write_text(
        json.dumps(
            [
                {"question_id": "7-1", "nl": "add up a list", "cmd": "sum(xs)", "gold_python311_html": []},
                {
                    "question_id": "7-1",
                    "nl": "sum a list",
                    "cmd": "sum(xs)",
                    "gold_python311_html": ["library/functions.html#sum"],
                },
            ]
        )
    )
    first, second = import_questions(conala, "conala")  # CoNaLa repeats ids for reworded intents
    assert (first.id, second.id) == ("7-1", "7-1#2")
    assert second.gold_sources == ["https://docs.python.org/3.11/library/functions.html"]
    with pytest.raises(UsageError, match="does not look like musique"):
        import_questions(hotpot, "musique")


# -- the runner ------------------------------------------------------------------------------------


def test_evaluation_scores_reports_and_records(pack: Path) -> None:
    store_before = (pack / "pack.db").read_bytes()
    (report,) = evaluate(pack, EvalOptions(profiles=["baseline"], ks=(1, 2, 5)))
    rows = {r["id"]: r for r in json.loads(report.results_file.read_text())["questions"]}
    s = report.summary
    assert s["questions"] == 5 and s["retrieval_scored"] == 3
    assert s["gold_not_in_pack"] == 1 and rows["q4"]["gold_status"] == "not_in_pack"
    assert rows["q4"]["gold_missing"] == ["Berlin"] and "recall@5" not in rows["q4"]["metrics"]
    assert s["no_gold"] == 1 and rows["q5"]["gold_status"] == "none" and "f1" in rows["q5"]["metrics"]
    assert rows["q1"]["ranks"] == {"Lilu (mythology)": 1}
    # Independent check of recall@k from the retrieved list.
    for row in (rows["q1"], rows["q2"], rows["q3"]):
        titles = list(dict.fromkeys(r["title"] for r in row["retrieved"]))
        for k in (1, 2, 5):
            expected = len(set(titles[:k]) & set(row["gold_sources"])) / len(row["gold_sources"])
            assert row["metrics"][f"recall@{k}"] == pytest.approx(expected)
    assert s["recall@5"] == pytest.approx(
        sum(rows[q]["metrics"]["recall@5"] for q in ("q1", "q2", "q3")) / 3, abs=1e-4
    )
    assert set(s["by_type"]) == {"bridge", "comparison"}
    manifest = load_manifest(pack / "manifest.json")
    assert manifest.eval_scores is not None
    (scores,) = manifest.eval_scores
    assert scores.profile == "baseline" and scores.questions == 5
    assert scores.metrics["recall@5"] == s["recall@5"]
    assert (pack / scores.results_file).is_file()
    assert (pack / "pack.db").read_bytes() == store_before  # the store is never written


def test_interrupted_evaluation_resumes(pack: Path) -> None:
    def stop_after_two(event: ProgressEvent) -> None:
        if event.done == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate(pack, EvalOptions(profiles=["balanced"]), on_progress=stop_after_two)
    assert (pack / "eval" / "results" / ".balanced.partial.jsonl").is_file()
    (report,) = evaluate(pack, EvalOptions(profiles=["balanced"]))
    assert report.resumed == 2 and report.summary["questions"] == 5
    assert not (pack / "eval" / "results" / ".balanced.partial.jsonl").exists()
    # Other settings do not reuse the progress of a different run.
    with pytest.raises(KeyboardInterrupt):
        evaluate(pack, EvalOptions(profiles=["balanced"]), on_progress=stop_after_two)
    (report,) = evaluate(pack, EvalOptions(profiles=["balanced"], ks=(1, 3)))
    assert report.resumed == 0


def test_a_line_the_interruption_cut_is_left_out_when_resuming(pack: Path) -> None:
    partial = pack / "eval" / "results" / ".balanced.partial.jsonl"

    def stop_after(n: int) -> Callable[[ProgressEvent], None]:
        def stop(event: ProgressEvent) -> None:
            if event.done == n:
                raise KeyboardInterrupt

        return stop

    with pytest.raises(KeyboardInterrupt):
        evaluate(pack, EvalOptions(profiles=["balanced"]), on_progress=stop_after(2))
    with partial.open("a", encoding="utf-8") as f:
        f.write('{"id": "q3", "ans')  # cut by the interruption: no newline
    with pytest.raises(KeyboardInterrupt):
        evaluate(pack, EvalOptions(profiles=["balanced"]), on_progress=stop_after(3))
    lines = partial.read_text(encoding="utf-8").split("\n")
    assert lines[-1] == "" and all(isinstance(json.loads(line), dict) for line in lines[:-1])
    assert len(lines) == 1 + 3 + 1  # the settings, three rows, the end
    (report,) = evaluate(pack, EvalOptions(profiles=["balanced"]))
    assert report.resumed == 3 and report.summary["questions"] == 5


def test_offline_judge(pack: Path) -> None:
    (plain,) = evaluate(pack, EvalOptions(profiles=["baseline"], fresh=True))
    (report,) = evaluate(pack, EvalOptions(profiles=["baseline"], judge="offline", fresh=True))
    rows = {r["id"]: r for r in json.loads(report.results_file.read_text())["questions"]}
    plain_rows = {r["id"]: r for r in json.loads(plain.results_file.read_text())["questions"]}
    # The answers' F1 is one metric: the judge's signals do not replace it (its best sentence's
    # F1 is its own `sentence_f1`), so --judge offline and --judge none give the same F1.
    assert {i: r["metrics"]["f1"] for i, r in rows.items()} == {
        i: r["metrics"]["f1"] for i, r in plain_rows.items()
    }
    assert report.summary["f1"] == plain.summary["f1"]
    assert all("sentence_f1" in r["metrics"] for r in rows.values() if "judge_correct" in r["metrics"])
    assert rows["q5"]["metrics"]["judge_correct"] is True  # the extractive answer contains "Seine"
    assert rows["q4"]["metrics"]["judge_correct"] is False  # nothing about Berlin in the pack
    from wikigr.embed import get_embedder

    judge = OfflineJudge(get_embedder())
    assert judge.judge("q", "The answer is G. Stanley Hall.", ["Stanley Hall"], [], []).correct
    assert not judge.judge("q", "It was Sigmund Freud.", ["G. Stanley Hall"], [], []).correct


def test_the_offline_judge_cannot_be_fooled_by_length() -> None:
    from wikigr.embed import get_embedder

    judge = OfflineJudge(get_embedder())
    truths = ["G. Stanley Hall", "Stanley Hall"]
    right = (
        "The Journal of Psychotherapy Integration is published by the American Psychological "
        "Association [1]. The APA's first president was G. Stanley Hall [2]."
    )
    verdict = judge.judge("q", right, truths, [], [])
    assert verdict.correct and verdict.scores["contains"] == 1.0 and verdict.scores["length_factor"] == 1.0
    assert judge.judge("q", "G. Stanley Hall [1]", truths, [], []).correct
    assert judge.judge("q", "stanley hall", truths, [], []).correct  # normalised like exact match
    # Passages pasted together that hold the gold somewhere: not an answer, however it is cut.
    filler = [
        "The Journal of Mathematical Physics is a peer-reviewed journal published monthly by the "
        "American Institute of Physics, devoted to papers in mathematical physics.",
        "The journal was first published bimonthly beginning in January 1960; it became a monthly "
        "publication in 1963, and its current editor is from the University of Copenhagen.",
        "Psychotherapy integration is an approach to psychotherapy that combines ideas and "
        "strategies from more than one theoretical approach, often called eclectic therapy.",
    ]
    for at in range(len(filler) + 1):
        dump = [f"[{n}] {p}" for n, p in enumerate(filler, 1)]
        dump.insert(
            at,
            "[9] The American Psychological Association was founded in July 1892 at Clark "
            "University; its first president was G. Stanley Hall, a psychologist.",
        )
        long_wrong = judge.judge("q", "\n\n".join(dump), truths, [], [])
        assert long_wrong.correct is False, at
        assert long_wrong.scores["contains"] == 1.0 and long_wrong.scores["words"] > judge.max_words
    assert not judge.judge("q", right.replace("G. Stanley Hall", "William James"), truths, [], []).correct
    # A short offline answer's list of other candidates is named, not stated: not graded.
    listed = "Its first president was William James [1]. Also possible: G. Stanley Hall [2], Clark [2]."
    assert not judge.judge("q", listed, truths, [], []).correct
    assert judge.judge("q", listed.replace("William James", "G. Stanley Hall"), truths, [], []).correct
    assert not judge.judge("q", "", truths, [], []).correct
    assert judge.judge("q", "anything", [" "], [], []).correct is None  # no ground truth: no verdict


def test_claude_judge_through_the_fake_api(pack: Path, claude_env: FakeClaude) -> None:
    def responder(body: dict[str, Any]) -> Reply:
        text = prompt_text(body)
        if "You grade an answer" in text:
            assert "Passages:" in text and "Reference answer:" in text
            return Reply.text('{"grounding": 5, "reasoning": 4, "completeness": 4, "rationale": "fine"}')
        return Reply.text("From the passages [1].")

    claude_env.respond_with(responder)
    (report,) = evaluate(pack, EvalOptions(profiles=["baseline"], judge="claude", limit=2))
    assert report.summary["grounding"] == 5.0 and report.summary["judge_accuracy"] == 1.0
    assert report.summary["input_tokens"] > 0


def test_cli_eval_all_profiles_json(pack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code = run(["eval", str(pack), "--all-profiles", "--k", "1,5", "--json"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    reports = json.loads(captured.out)
    assert [r["profile"] for r in reports] == ["auto", "baseline", "balanced", "max", "graph", "routed"]
    assert all(r["summary"]["recall@5"] is not None for r in reports)
    scores = load_manifest(pack / "manifest.json").eval_scores or []
    assert [s.profile for s in scores] == sorted(r["profile"] for r in reports)  # each one's latest
    code = run(["eval", str(pack), "--limit", "2"])
    assert code == 0 and "R@5" in capsys.readouterr().out


def test_cli_eval_errors(pack: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    assert run(["eval", str(pack), "--judge", "gpt"]) == 2
    assert "Error: --judge must be" in capsys.readouterr().err
    assert run(["eval", str(pack), "--judge", "claude"]) == 2
    assert "needs Claude" in capsys.readouterr().err
    assert run(["eval", str(pack), "--questions", str(tmp_path / "none.jsonl")]) == 2
    assert "no questions file" in capsys.readouterr().err


def test_cli_eval_import(pack: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    hotpot = tmp_path / "h.json"
    hotpot.write_text(
        json.dumps(
            [
                {
                    "_id": "h1",
                    "question": "Is bread baked?",
                    "answer": "yes",
                    "supporting_facts": [["Bread", 0]],
                }
            ]
        )
    )
    assert run(["eval", "import", str(pack), str(hotpot), "--format", "hotpotqa", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == {"added": 1, "skipped_existing": 0, "total": 6}
    assert run(["eval", "import", str(pack), str(hotpot), "--format", "hotpotqa"]) == 0
    assert "Added 0" in capsys.readouterr().out


def test_generate_with_claude(pack: Path, claude_env: FakeClaude, capsys: pytest.CaptureFixture[str]) -> None:
    replies = iter(
        [
            '{"question": "What is Lilu in Akkadian myth?", "answer": "a storm demon"}',
            "not json at all",
            '{"question": "What is Lilu in Akkadian myth?", "answer": "a storm demon"}',  # duplicate
            '{"question": "Where were the gallu demons?", "answer": "the underworld"}',
        ]
    )
    claude_env.respond_with(lambda body: Reply.text(next(replies, '{"question": "", "answer": ""}')))
    code = run(["eval", "generate", str(pack), "--n", "2", "--json"])
    out = capsys.readouterr().out
    assert code == 0
    report = json.loads(out)
    assert report["added"] == 2 and report["duplicates"] == 1 and report["failed"] == 1
    rows = load_questions(pack / "eval" / "questions.jsonl")
    generated = [q for q in rows if q.source == "claude"]
    assert [q.id for q in generated] == ["gen-6", "gen-7"]
    assert all(q.gold_sources and q.gold_sources[0].startswith("passage:") for q in generated)


def test_generate_without_a_key(pack: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["eval", "generate", str(pack)]) == 2
    assert capsys.readouterr().err.strip() == "Error: eval generate needs Claude: set ANTHROPIC_API_KEY"
