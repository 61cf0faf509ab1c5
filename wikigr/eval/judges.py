"""Answer judges.

- ``offline``: no network. An answer is judged correct when it contains the normalised ground truth
  (or an alias), or its token F1 reaches ``F1_THRESHOLD``, or the cosine similarity of its
  embedding to the ground truth's (the pack's embedder) reaches ``SIMILARITY_THRESHOLD``. The two
  thresholds come from ``bench/judge_calibration.py`` (see docs/evaluation.md): they separate
  the data sets' answer aliases (same answer) from other questions' answers (different answer).
- ``claude``: Claude scores grounding, reasoning and completeness from 1 to 5, seeing the question,
  the ground truth, the answer, the retrieved passages and any tool results.
"""

from __future__ import annotations

import json
import re
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wikigr.errors import WikigrError
from wikigr.eval.metrics import f1_score, normalize_answer

if TYPE_CHECKING:
    from wikigr.embed import Embedder
    from wikigr.llm import LLM, Usage

F1_THRESHOLD = 0.5
SIMILARITY_THRESHOLD = 0.6


@dataclass
class Verdict:
    correct: bool | None
    scores: dict[str, float]
    rationale: str = ""


class OfflineJudge:
    name = "offline"

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder

    def judge(
        self, question: str, answer: str, truths: list[str], context: list[str], tools: list[str]
    ) -> Verdict:
        truths = [t for t in truths if t.strip()]
        if not truths:
            return Verdict(None, {})
        normal = f" {normalize_answer(answer)} "
        contains = any(f" {normalize_answer(t)} " in normal for t in truths if normalize_answer(t))
        f1 = f1_score(answer, truths)
        vectors = self.embedder.embed([answer, *truths])
        similarity = float(max(vectors[1:] @ vectors[0]))
        correct = contains or f1 >= F1_THRESHOLD or similarity >= SIMILARITY_THRESHOLD
        return Verdict(
            correct, {"contains": float(contains), "f1": round(f1, 4), "similarity": round(similarity, 4)}
        )


JUDGE_SYSTEM = (
    "You grade an answer to a question. You see the question, the reference answer, the answer, "
    "and the passages and tool results the answer was based on. Score from 1 (bad) to 5 (excellent):\n"
    "- grounding: every claim is supported by the passages or tool results;\n"
    "- reasoning: the answer connects the facts correctly (all hops of a multi-hop question);\n"
    "- completeness: the answer fully answers the question, agreeing with the reference answer.\n"
    'Reply with JSON only: {"grounding": n, "reasoning": n, "completeness": n, "rationale": "one sentence"}'
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)


class ClaudeJudge:
    name = "claude"

    def __init__(self, llm: LLM, usage: Usage | None = None) -> None:
        self.llm = llm
        self.usage = usage

    def judge(
        self, question: str, answer: str, truths: list[str], context: list[str], tools: list[str]
    ) -> Verdict:
        passages = "\n\n".join(f"[{n}] {text[:1500]}" for n, text in enumerate(context, 1)) or "(none)"
        tool_text = "\n".join(tools) or "(none)"
        prompt = (
            f"Question: {question}\n\nReference answer: {' | '.join(truths) or '(none)'}\n\n"
            f"Answer:\n{answer}\n\nPassages:\n{passages}\n\nTool results:\n{tool_text}"
        )
        # One time budget per judged answer (--timeout / WIKIGR_TIMEOUT), like an answer's own.
        within = getattr(self.llm, "within", None)
        with within() if within is not None else nullcontext():
            messages = [{"role": "user", "content": prompt}]
            completion = self.llm.complete(JUDGE_SYSTEM, messages, max_tokens=300)
        if self.usage is not None:
            self.usage.add(completion)
        match = _JSON.search(completion.text)
        try:
            data: Any = json.loads(match.group(0)) if match else None
            scores = {k: float(data[k]) for k in ("grounding", "reasoning", "completeness")}
        except (ValueError, TypeError, KeyError) as exc:
            raise WikigrError(
                f"the Claude judge replied without the expected JSON: {completion.text[:120]!r}"
            ) from exc
        if not all(1 <= v <= 5 for v in scores.values()):
            raise WikigrError(f"the Claude judge gave scores outside 1-5: {scores}")
        return Verdict(scores["completeness"] >= 4, scores, str(data.get("rationale", "")))
