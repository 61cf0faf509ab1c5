"""Calibrate the offline judge's thresholds (wikigr/eval/judges.py).

Same-answer pairs: each MuSiQue-100 answer with each of its aliases, and each HotpotQA/MuSiQue
answer with itself reworded as a sentence ("The answer is X."). Different-answer pairs: each answer
with the answers of 3 other questions (fixed seed). For token F1 and for the embedding similarity
(the default embedder) the script finds the threshold with the best balanced accuracy, and reports
the judge's accuracy with the thresholds in use. Writes bench/results/judge_calibration.json.

    uv run python bench/judge_calibration.py
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import numpy as np

from wikigr.embed import get_embedder
from wikigr.eval.judges import F1_THRESHOLD, SIMILARITY_THRESHOLD, OfflineJudge
from wikigr.eval.metrics import f1_score

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "multihop"


def pairs() -> list[tuple[str, str, bool]]:
    musique = json.loads((SHARED / "musique_train100" / "musique_train.json").read_text())
    hotpot = json.loads((SHARED / "hotpotqa_train100" / "hotpotqa_train.json").read_text())
    answers = [q["answer"] for q in musique] + [q["answer"] for q in hotpot]
    out: list[tuple[str, str, bool]] = []
    for q in musique:
        out += [(alias, q["answer"], True) for alias in q.get("answer_aliases", []) if alias != q["answer"]]
    out += [(f"The answer is {a}.", a, True) for a in answers]
    rng = random.Random(0)
    for a in answers:
        for b in rng.sample(answers, 3):
            if b.lower() != a.lower():
                out.append((b, a, False))
    return out


def best_threshold(scores: np.ndarray, labels: np.ndarray) -> tuple[float, float]:
    best = (0.0, 0.0)
    for t in np.unique(np.round(scores, 2)):
        predicted = scores >= t
        tpr = (predicted & labels).sum() / labels.sum()
        tnr = (~predicted & ~labels).sum() / (~labels).sum()
        accuracy = (tpr + tnr) / 2
        if accuracy > best[1]:
            best = (float(t), float(accuracy))
    return best


def main() -> int:
    if not SHARED.is_dir():
        print(f"Error: {SHARED} not found", file=sys.stderr)
        return 1
    data = pairs()
    labels = np.array([same for _, _, same in data])
    f1 = np.array([f1_score(answer, [truth]) for answer, truth, _ in data])
    embedder = get_embedder()
    a = embedder.embed([answer for answer, _, _ in data])
    b = embedder.embed([truth for _, truth, _ in data])
    similarity = (a * b).sum(axis=1)
    judge = OfflineJudge(embedder)
    verdicts = np.array([bool(judge.judge("", answer, [truth], [], []).correct) for answer, truth, _ in data])
    tpr = (verdicts & labels).sum() / labels.sum()
    tnr = (~verdicts & ~labels).sum() / (~labels).sum()
    f1_t, f1_acc = best_threshold(f1, labels)
    sim_t, sim_acc = best_threshold(similarity, labels)
    results = {
        "pairs": {"same_answer": int(labels.sum()), "different_answer": int((~labels).sum())},
        "best_f1_threshold": {"threshold": f1_t, "balanced_accuracy": round(f1_acc, 4)},
        "best_similarity_threshold": {"threshold": sim_t, "balanced_accuracy": round(sim_acc, 4)},
        "judge_in_use": {
            "f1_threshold": F1_THRESHOLD,
            "similarity_threshold": SIMILARITY_THRESHOLD,
            "true_positive_rate": round(float(tpr), 4),
            "true_negative_rate": round(float(tnr), 4),
            "balanced_accuracy": round(float((tpr + tnr) / 2), 4),
        },
    }
    out = ROOT / "bench" / "results" / "judge_calibration.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps(results, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
