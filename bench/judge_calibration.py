"""Calibrate the offline judge (wikigr/eval/judges.py) so that length cannot fool it.

1. Labelled pairs, built for each question of MuSiQue-100 and HotpotQA-100 from its gold answer and
   paragraphs (../shared/data/multihop). Correct — an answer that states the gold in at most two
   sentences: the gold itself, its aliases, "The answer is X.", the supporting sentence that holds
   it (cited "[1]"), and that sentence after another supporting sentence. Wrong: another
   question's answer, a sentence of a distractor paragraph, whole paragraphs pasted together
   (2, 3 and 5 of them) that hold the gold somewhere (the "long wrong answer that contains the gold
   string"), and pasted paragraphs without it. Questions 1-50 of each set are the dev half, where
   the thresholds (``MAX_WORDS``, ``F1_THRESHOLD``, ``SIMILARITY_THRESHOLD``) are chosen for the best
   balanced accuracy; 51-100 are reported with them.
2. The Claude judge (wikigr.eval.judges.ClaudeJudge, on wikigr's own Claude client) through the fake
   Messages server of tests/fakeclaude.py, which grades each pair by its label (completeness 5 for
   a correct one, 2 for a wrong one): a check of the judge's wiring, and the offline judge's
   agreement with what it says on the test half. No real Claude is called.
3. Real answers: the short offline answers of `wikigr query` (default profile, no LLM) to the 200
   questions, and the passage dumps the extractive answer printed before it (the top 5 passages):
   the offline judge's verdicts against exact match and token F1 >= 0.5 on the same answers, and the
   share of dumps that the judge before this one (the gold anywhere in the text, or F1 >= 0.5, or
   similarity >= 0.6 over the whole text) passed.

Writes bench/results/judge_calibration.json with the load average.

    uv run python bench/judge_calibration.py [--work bench/work] [--skip-real]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import random
import re
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wikigr.embed import get_embedder  # noqa: E402
from wikigr.eval.judges import (  # noqa: E402
    F1_THRESHOLD,
    MAX_WORDS,
    SIMILARITY_THRESHOLD,
    ClaudeJudge,
    OfflineJudge,
)
from wikigr.eval.metrics import exact_match, f1_score, normalize_answer  # noqa: E402
from wikigr.retrieval.sentences import split_sentences  # noqa: E402

SHARED = ROOT.parent / "shared" / "data" / "multihop"
GRID = {
    "max_words": [30, 40, 50, 60, 70, 80, 100, 120, 150],
    "f1_threshold": [0.4, 0.5, 0.6, 0.7, 0.8],
    "similarity_threshold": [0.6, 0.65, 0.7, 0.75, 0.8, 0.85, 0.9, 1.01],
}


@dataclass
class Pair:
    dataset: str
    index: int  # the question's place in its set (0-99)
    question: str
    truths: list[str]
    answer: str
    correct: bool
    kind: str


def _has(text: str, truths: list[str]) -> bool:
    normal = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(t)} " in normal for t in truths if normalize_answer(t))


def load() -> list[dict[str, Any]]:
    """Every question: its set, place, question, truths, supporting and distractor paragraphs
    (as lists of sentences)."""
    out = []
    musique = json.loads((SHARED / "musique_train100" / "musique_train.json").read_text())
    for i, q in enumerate(musique):
        paragraphs = [(p["is_supporting"], split_sentences(p["paragraph_text"])) for p in q["paragraphs"]]
        out.append(
            {
                "dataset": "musique",
                "index": i,
                "question": q["question"],
                "truths": [q["answer"], *q.get("answer_aliases", [])],
                "supporting": [s for sup, s in paragraphs if sup],
                "distractors": [s for sup, s in paragraphs if not sup],
            }
        )
    hotpot = json.loads((SHARED / "hotpotqa_train100" / "hotpotqa_train.json").read_text())
    for i, q in enumerate(hotpot):
        gold_titles = {t for t, _ in q["supporting_facts"]}
        paragraphs = [
            (t in gold_titles, [s.strip() for s in sents if s.strip()]) for t, sents in q["context"]
        ]
        out.append(
            {
                "dataset": "hotpotqa",
                "index": i,
                "question": q["question"],
                "truths": [q["answer"]],
                "supporting": [s for sup, s in paragraphs if sup],
                "distractors": [s for sup, s in paragraphs if not sup],
            }
        )
    return out


def make_pairs(questions: list[dict[str, Any]]) -> list[Pair]:
    rng = random.Random(0)
    answers = [q["truths"][0] for q in questions]
    pairs: list[Pair] = []
    for q in questions:
        gold, truths = q["truths"][0], q["truths"]

        def add(answer: str, correct: bool, kind: str, q: dict[str, Any] = q) -> None:
            pairs.append(Pair(q["dataset"], q["index"], q["question"], q["truths"], answer, correct, kind))

        add(gold, True, "gold")
        for alias in truths[1:]:
            if alias != gold:
                add(alias, True, "alias")
        add(f"The answer is {gold}.", True, "sentence")
        holding = [s for p in q["supporting"] for s in p if _has(s, truths) and len(s.split()) <= 50]
        others = [s for p in q["supporting"] for s in p if not _has(s, truths) and len(s.split()) <= 40]
        if holding:
            add(f"{holding[0]} [1]", True, "supporting sentence")
            if others:
                add(f"{others[0]} [1] {holding[0]} [2]", True, "two sentences")
        for other in rng.sample([a for a in answers if normalize_answer(a) != normalize_answer(gold)], 3):
            add(other, False, "other answer")
        distractor = [s for p in q["distractors"] for s in p if not _has(s, truths) and len(s.split()) >= 5]
        if distractor:
            add(f"{rng.choice(distractor)} [1]", False, "distractor sentence")
        paragraphs = [" ".join(p) for p in q["supporting"] + q["distractors"]]
        with_gold = [p for p in paragraphs if _has(p, truths)]
        without = [p for p in paragraphs if not _has(p, truths)]
        for k in (2, 3, 5):
            if with_gold and len(without) >= k - 1:
                chosen = rng.sample(without, k - 1)
                chosen.insert(rng.randrange(k), with_gold[0])
                add(
                    "\n\n".join(f"[{n}] {p}" for n, p in enumerate(chosen, 1)),
                    False,
                    f"{k} passages with the gold",
                )
        if len(without) >= 3:
            add(
                "\n\n".join(f"[{n}] {p}" for n, p in enumerate(rng.sample(without, 3), 1)),
                False,
                "3 passages without",
            )
    return pairs


def balanced(predicted: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    tpr = float((predicted & labels).sum() / max(1, labels.sum()))
    tnr = float((~predicted & ~labels).sum() / max(1, (~labels).sum()))
    return {
        "true_positive_rate": round(tpr, 4),
        "true_negative_rate": round(tnr, 4),
        "balanced_accuracy": round((tpr + tnr) / 2, 4),
        "agreement": round(float((predicted == labels).mean()), 4),
    }


def verdicts(scores: list[dict[str, float]], judge: OfflineJudge) -> np.ndarray:
    return np.array([judge.verdict(s) for s in scores])


def choose(scores: list[dict[str, float]], labels: np.ndarray, embedder: Any) -> dict[str, Any]:
    """The thresholds with the best balanced accuracy (ties: the stricter length cap, then the
    higher thresholds)."""
    best: tuple[float, dict[str, Any]] | None = None
    for max_words, f1_t, sim_t in itertools.product(*GRID.values()):
        judge = OfflineJudge(embedder, max_words, f1_t, sim_t)
        accuracy = balanced(verdicts(scores, judge), labels)["balanced_accuracy"]
        if best is None or accuracy > best[0] + 1e-12:
            best = (accuracy, {"max_words": max_words, "f1_threshold": f1_t, "similarity_threshold": sim_t})
    assert best is not None
    return {**best[1], "dev_balanced_accuracy": best[0]}


def by_kind(pairs: list[Pair], predicted: np.ndarray) -> dict[str, Any]:
    kinds: dict[str, list[bool]] = {}
    for pair, verdict in zip(pairs, predicted, strict=True):
        kinds.setdefault(pair.kind, []).append(bool(verdict) == pair.correct)
    return {k: {"pairs": len(v), "judged_as_labelled": round(sum(v) / len(v), 4)} for k, v in kinds.items()}


def claude_agreement(pairs: list[Pair], offline: np.ndarray) -> dict[str, Any]:
    """The Claude judge through the fake server (it grades by the labels), against the offline
    judge's verdicts."""
    from tests.fakeclaude import FakeClaude, Reply, make_llm, prompt_text

    labels = {(p.question, p.answer): p.correct for p in pairs}
    in_prompt = re.compile(r"Question: (.*?)\n\nReference answer: .*?\n\nAnswer:\n(.*)\n\nPassages:", re.S)

    def responder(body: dict[str, Any]) -> Reply:
        match = in_prompt.search(prompt_text(body))
        correct = labels.get((match.group(1), match.group(2))) if match else None
        if correct is None:
            return Reply.text('{"grounding": 1, "reasoning": 1, "completeness": 1, "rationale": "unknown"}')
        score = 5 if correct else 2
        return Reply.text(
            f'{{"grounding": 5, "reasoning": {score}, "completeness": {score}, "rationale": "label"}}'
        )

    start = time.perf_counter()
    with FakeClaude(responder=responder) as fake, make_llm(fake) as llm:
        judge = ClaudeJudge(llm)
        claude = np.array([bool(judge.judge(p.question, p.answer, p.truths, [], []).correct) for p in pairs])
    labelled = np.array([p.correct for p in pairs])
    return {
        "pairs": len(pairs),
        "claude_judge_matches_labels": round(float((claude == labelled).mean()), 4),
        "offline_vs_claude": balanced(offline, claude),
        "seconds": round(time.perf_counter() - start, 1),
        "note": "the fake server grades by the pair's label: this checks ClaudeJudge's prompt and "
        "parsing end to end, and the offline judge against those verdicts; no real Claude was asked",
    }


def old_judge(judge: OfflineJudge, answer: str, truths: list[str]) -> bool:
    """The offline judge before issue 13: the gold anywhere, or F1 >= 0.5, or similarity >= 0.6."""
    normal = f" {normalize_answer(answer)} "
    if any(f" {normalize_answer(t)} " in normal for t in truths if normalize_answer(t)):
        return True
    if f1_score(answer, truths) >= 0.5:
        return True
    vectors = judge.embedder.embed([answer, *truths])
    return bool(float(max(vectors[1:] @ vectors[0])) >= 0.6)


def real_answers(work: Path, questions: list[dict[str, Any]], judge: OfflineJudge) -> dict[str, Any]:
    from wikigr.agent import KnowledgeGraphAgent
    from wikigr.retrieval.profiles import DEFAULT_PROFILE

    out: dict[str, Any] = {}
    for dataset in ("musique", "hotpotqa"):
        rows = []
        with KnowledgeGraphAgent(
            work / f"{dataset}-100", profile=DEFAULT_PROFILE, llm=None, top_k=5
        ) as agent:
            for q in (q for q in questions if q["dataset"] == dataset):
                result = agent.query(q["question"])
                dump = "\n\n".join(f"[{n}] {s.text}" for n, s in enumerate(result.sources[:5], 1))
                truths = q["truths"]
                rows.append(
                    {
                        "em": bool(exact_match(result.answer, truths)),
                        "f1_pass": f1_score(result.answer, truths) >= 0.5,
                        "judge": bool(judge.judge(q["question"], result.answer, truths, [], []).correct),
                        "contains": _has(result.answer, truths),
                        "dump_old_judge": old_judge(judge, dump, truths),
                        "dump_judge": bool(judge.judge(q["question"], dump, truths, [], []).correct),
                        "dump_contains": _has(dump, truths),
                    }
                )
        judged = np.array([r["judge"] for r in rows])
        n = len(rows)
        out[dataset] = {
            "questions": n,
            "short_answer": {
                "judge_correct": round(float(judged.mean()), 4),
                "exact_match": round(sum(r["em"] for r in rows) / n, 4),
                "f1_at_least_0.5": round(sum(r["f1_pass"] for r in rows) / n, 4),
                "holds_the_gold": round(sum(r["contains"] for r in rows) / n, 4),
                "agreement_with_exact_match": round(
                    float((judged == np.array([r["em"] for r in rows])).mean()), 4
                ),
                "agreement_with_f1": round(
                    float((judged == np.array([r["f1_pass"] for r in rows])).mean()), 4
                ),
                "agreement_with_holds_the_gold": round(
                    float((judged == np.array([r["contains"] for r in rows])).mean()), 4
                ),
            },
            "top5_passage_dump": {
                "holds_the_gold": round(sum(r["dump_contains"] for r in rows) / n, 4),
                "old_judge_correct": round(sum(r["dump_old_judge"] for r in rows) / n, 4),
                "judge_correct": round(sum(r["dump_judge"] for r in rows) / n, 4),
            },
        }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description="calibrate the offline judge")
    parser.add_argument(
        "--work", type=Path, default=ROOT / "bench" / "work", help="where the bench packs are"
    )
    parser.add_argument("--skip-real", action="store_true", help="leave out the real answers (part 3)")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "judge_calibration.json")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"Error: {SHARED} not found", file=sys.stderr)
        return 1
    load_before = [round(x, 2) for x in os.getloadavg()]
    questions = load()
    pairs = make_pairs(questions)
    embedder = get_embedder()
    in_use = OfflineJudge(embedder)
    scores = [in_use.scores(p.answer, p.truths) for p in pairs]
    labels = np.array([p.correct for p in pairs])
    dev = np.array([p.index < 50 for p in pairs])
    chosen = choose([s for s, d in zip(scores, dev, strict=True) if d], labels[dev], embedder)
    predicted = verdicts(scores, in_use)
    test_pairs = [p for p, d in zip(pairs, dev, strict=True) if not d]
    results: dict[str, Any] = {
        "date": time.strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "load_before": load_before,
        "pairs": {
            "dev": {"correct": int(labels[dev].sum()), "wrong": int((~labels[dev]).sum())},
            "test": {"correct": int(labels[~dev].sum()), "wrong": int((~labels[~dev]).sum())},
        },
        "chosen_on_dev": chosen,
        "in_use": {
            "max_words": MAX_WORDS,
            "f1_threshold": F1_THRESHOLD,
            "similarity_threshold": SIMILARITY_THRESHOLD,
        },
        "dev": balanced(predicted[dev], labels[dev]),
        "test": balanced(predicted[~dev], labels[~dev]),
        "test_by_kind": by_kind(test_pairs, predicted[~dev]),
        "claude_judge_through_fake_server": claude_agreement(test_pairs, predicted[~dev]),
    }
    if not args.skip_real:
        results["real_answers"] = real_answers(args.work, questions, in_use)
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
