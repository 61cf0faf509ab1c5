"""The weights of a how-to answer's candidate APIs, fitted on the dev questions (issue 40).

A how-to answer leads with the best-scoring API its passages define (wikigr.retrieval.api_rank:
a weighted sum of six signals). This script asks every dev question of packs/pydocs and of the
whole Python docs (bench/work/pydocs-whole, built by ``bench/docqa.py --whole``), keeps the
candidates the answer ranked (their signals), and marks those a right answer names: for the
developer questions (bench/data/developer_questions.json, ..._dev2.json, ..._dev3.json) an expected
name (``expect`` entries that look like an API: ``rmtree``, ``glob.glob``); for CoNaLa's dev half
(bench/answers.py: its first 66 questions, on each pack) the gold function. Then it fits a
conditional logit (the softmax over a question's candidates that may lead, L2 penalty ``lam``
towards 0) and reports, per set, how often the first candidate is right, with the shipped weights
and leave-one-set-out (each set ranked by weights fitted on the others), for each ``lam``; the
weights fitted on all sets with the ``lam`` that does best left out are the ones to ship. The
held-out questions are not read.

    uv run python bench/api_weights.py [--out bench/results/api_weights.json]
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
from _common import header, load, write_results
from answers import load_docs, names_function
from scipy.optimize import minimize

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval import short_answer
from wikigr.retrieval.profiles import DEFAULT_PROFILE
from wikigr.retrieval.sentence_scores import API_FEATURES, DEFAULT_API_WEIGHTS

ROOT = Path(__file__).resolve().parent.parent
PACKS = {"pydocs": ROOT / "packs" / "pydocs", "whole": ROOT / "bench" / "work" / "pydocs-whole"}
DEV_SETS = ("developer_questions", "developer_questions_dev2", "developer_questions_dev3")
LAMS = (0.01, 0.1, 0.3, 1.0, 3.0)
ISSUE_ROWS = [  # issue 40's table, on packs/pydocs (tests/test_how_to_answers.py asks them too)
    ("How do I count how many times each item occurs in a list?", ["Counter"]),
    ("How do I create a temporary directory that is deleted automatically?", ["TemporaryDirectory"]),
    ("How do I read a CSV file so that each row is a dictionary?", ["DictReader"]),
    ("How do I compute the SHA-256 of a file?", ["file_digest", "sha256"]),
    ("How do I get the current time in UTC?", ["datetime.now"]),
]
_API = re.compile(r"^[\w.]+\(?$")


def questions() -> list[dict[str, Any]]:
    """The dev questions, each with its set, pack and what a right candidate is named."""
    found = []
    for name in DEV_SETS:
        for q in json.loads((ROOT / "bench" / "data" / f"{name}.json").read_text())["questions"]:
            expected = [e.rstrip("(") for e in q["expect"] if _API.match(e)]
            if expected:  # "for line in", "insertion order": no API to lead with
                found.append(
                    {
                        "set": name,
                        "pack": q.get("pack", "pydocs"),
                        "question": q["question"],
                        "expect": expected,
                    }
                )
    for question, expected in ISSUE_ROWS:
        found.append({"set": "issue_rows", "pack": "pydocs", "question": question, "expect": expected})
    docs = load_docs()
    for q in docs[: len(docs) // 2]:
        for pack in PACKS:
            found.append(
                {"set": "conala_dev", "pack": pack, "question": q["question"], "functions": q["functions"]}
            )
    return found


def right(q: dict[str, Any], name: str) -> bool:
    """Whether a candidate of this name is what the question wants."""
    if "expect" in q:
        return any(e in name for e in q["expect"])
    return names_function(f"{name}(", q["functions"])


def candidates(asked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each question's candidates as the shipped answer ranks them: their signals (a matrix),
    whether each is right, and whether each may lead (shares a word with the question)."""
    seen: list[list[Any]] = []
    rank = short_answer.rank_apis

    def keep(*args: Any, **kwargs: Any) -> Any:
        ranked = rank(*args, **kwargs)
        seen.append(ranked)
        return ranked

    short_answer.rank_apis = keep  # type: ignore[assignment]
    groups = []
    try:
        for pack_name, pack in PACKS.items():
            if not (pack / "manifest.json").is_file():
                raise SystemExit(f"no pack at {pack}: build it with bench/docqa.py --whole --build-only")
            with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None) as agent:
                for q in asked:
                    if q["pack"] != pack_name:
                        continue
                    seen.clear()
                    agent.query(q["question"])
                    apis = seen[-1] if seen else []
                    groups.append(
                        {
                            **{k: q[k] for k in ("set", "pack", "question")},
                            "X": np.array([[a.features[f] for f in API_FEATURES] for a in apis]).reshape(
                                -1, 6
                            ),
                            "right": np.array([right(q, a.name) for a in apis], bool),
                            "leads": np.array([a.on_task for a in apis], bool),
                        }
                    )
    finally:
        short_answer.rank_apis = rank  # type: ignore[assignment]
    return groups


def firsts(w: np.ndarray, groups: list[dict[str, Any]]) -> tuple[int, int]:
    """How many of ``groups`` rank a right candidate first, and among the first three, by ``w``
    (only candidates that may lead)."""
    first = three = 0
    for g in groups:
        if len(g["right"]):
            order = np.argsort(-np.where(g["leads"], g["X"] @ w, -np.inf), kind="stable")
            first += bool(g["right"][order[0]])
            three += bool(g["right"][order[:3]].any())
    return first, three


def fit(groups: list[dict[str, Any]], lam: float) -> np.ndarray:
    """The weights of a conditional logit over each question's candidates that may lead (those of
    questions with a right one among them), L2-penalised by ``lam``."""
    usable = [(g["X"][g["leads"]], g["right"][g["leads"]]) for g in groups if (g["right"] & g["leads"]).any()]

    def loss(w: np.ndarray) -> tuple[float, np.ndarray]:
        total, grad = lam * float(w @ w), 2 * lam * w
        for X, y in usable:
            s = X @ w
            p = np.exp(s - s.max())
            p /= p.sum()
            py = p[y].sum()
            total -= float(np.log(py))
            grad = grad - (p[y] @ X[y]) / py + p @ X
        return total, grad

    start = np.array([DEFAULT_API_WEIGHTS[f] for f in API_FEATURES])
    return np.asarray(minimize(loss, start, jac=True, method="L-BFGS-B").x)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "api_weights.json")
    args = parser.parse_args()
    result: dict[str, Any] = {**header(with_time=True)}
    groups = candidates(questions())
    sets = sorted({g["set"] for g in groups})
    by_set = {s: [g for g in groups if g["set"] == s] for s in sets}
    shipped = np.array([DEFAULT_API_WEIGHTS[f] for f in API_FEATURES])
    result["questions"] = {
        s: {
            "questions": len(gs),
            "a_right_candidate": sum(bool(g["right"].any()) for g in gs),
            "a_right_candidate_that_may_lead": sum(bool((g["right"] & g["leads"]).any()) for g in gs),
        }
        for s, gs in by_set.items()
    }
    result["shipped"] = {
        "weights": dict(zip(API_FEATURES, shipped.tolist(), strict=True)),
        "first_and_top3": {s: firsts(shipped, gs) for s, gs in by_set.items()},
    }
    print("shipped", result["shipped"])
    left_out: dict[str, Any] = {}
    for lam in LAMS:
        per_set = {s: firsts(fit([g for g in groups if g["set"] != s], lam), by_set[s]) for s in sets}
        left_out[str(lam)] = {"first_and_top3": per_set, "first": sum(v[0] for v in per_set.values())}
        print("lam", lam, left_out[str(lam)])
    result["left_one_set_out"] = left_out
    best = max(LAMS, key=lambda lam: (left_out[str(lam)]["first"], lam))
    weights = fit(groups, best)
    result["chosen"] = {
        "lam": best,
        "weights": {f: round(float(x), 3) for f, x in zip(API_FEATURES, weights, strict=True)},
        "first_and_top3_in_sample": {s: firsts(weights, gs) for s, gs in by_set.items()},
        "shipped_first": sum(firsts(shipped, gs)[0] for gs in by_set.values()),
    }
    print("chosen", result["chosen"])
    result["load_average_at_end"] = load()
    write_results(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
