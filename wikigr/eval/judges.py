"""Answer judges.

- ``offline``: no network. It grades the answer a reader gets, at the granularity of a short
  answer, so that length cannot raise it: the answer (without its ``[n]`` citations) is correct
  when it holds the normalised ground truth (or an alias) and is at most ``MAX_WORDS`` words long,
  or when its best sentence reaches a token F1 of ``F1_THRESHOLD`` (or an embedding similarity to
  the ground truth of ``SIMILARITY_THRESHOLD``, with the pack's embedder) — both scaled by
  ``MAX_WORDS / words`` for a longer answer. The ground truth somewhere in a dump of passages is
  not an answer; nor are the other candidates a short offline answer names after "Also
  possible:" (the judge grades what the answer states). The thresholds come from
  ``bench/judge_calibration.py`` (see docs/evaluation.md): chosen on the first half of its
  labelled pairs, reported on the second.
- ``claude``: Claude scores grounding, reasoning and completeness from 1 to 5, seeing the question,
  the ground truth, the answer, the retrieved passages and any tool results.
"""

from __future__ import annotations

import re
from contextlib import nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from wikigr import schema
from wikigr.errors import WikigrError
from wikigr.eval.metrics import f1_score, normalize_answer
from wikigr.retrieval.sentences import split_units, strip_citations
from wikigr.retrieval.short_answer import asserted

if TYPE_CHECKING:
    from wikigr.embed import Embedder
    from wikigr.llm import LLM, Usage

MAX_WORDS = 70
F1_THRESHOLD = 0.4
SIMILARITY_THRESHOLD = 0.75
MAX_SPANS = 20  # sentences of a long answer compared (its first ones: the rest cannot pass anyway)


@dataclass
class Verdict:
    correct: bool | None
    scores: dict[str, float]
    rationale: str = ""


def answer_spans(answer: str) -> tuple[str, list[str]]:
    """The answer without citations and without the list of other candidates that ends a short
    offline answer ("Also possible: ...": named, not stated), and its sentences (or list items) to
    grade one by one."""
    text = strip_citations(asserted(answer)).strip()
    spans = [u.text for u in split_units(text)] or [text]
    return text, spans


class OfflineJudge:
    name = "offline"

    def __init__(
        self,
        embedder: Embedder,
        max_words: int = MAX_WORDS,
        f1_threshold: float = F1_THRESHOLD,
        similarity_threshold: float = SIMILARITY_THRESHOLD,
    ) -> None:
        self.embedder = embedder
        self.max_words = max_words
        self.f1_threshold = f1_threshold
        self.similarity_threshold = similarity_threshold

    def scores(self, answer: str, truths: list[str]) -> dict[str, float]:
        """The signals of a verdict: ``contains`` (the ground truth is in the answer), ``words``,
        and the best sentence's F1 (``sentence_f1``: the answer's own ``f1`` is the runner's metric,
        the same whatever the judge) and ``similarity`` to the ground truth."""
        text, spans = answer_spans(answer)
        spans = spans[:MAX_SPANS]
        words = len(text.split())
        normal = f" {normalize_answer(text)} "
        contains = any(f" {normalize_answer(t)} " in normal for t in truths if normalize_answer(t))
        f1 = max(f1_score(span, truths) for span in spans)
        vectors = self.embedder.embed([*spans, *truths])
        similarity = float((vectors[: len(spans)] @ vectors[len(spans) :].T).max())
        return {
            "contains": float(contains),
            "words": float(words),
            "sentence_f1": round(f1, 4),
            "similarity": round(similarity, 4),
        }

    def length_factor(self, words: float) -> float:
        """1 for an answer of at most ``max_words`` words, else ``max_words / words``."""
        return min(1.0, self.max_words / max(1.0, words))

    def verdict(self, scores: dict[str, float]) -> bool:
        factor = self.length_factor(scores["words"])
        return bool(
            (scores["contains"] and scores["words"] <= self.max_words)
            or scores["sentence_f1"] * factor >= self.f1_threshold
            or scores["similarity"] * factor >= self.similarity_threshold
        )

    def judge(
        self, question: str, answer: str, truths: list[str], context: list[str], tools: list[str]
    ) -> Verdict:
        truths = [t for t in truths if t.strip()]
        if not truths:
            return Verdict(None, {})
        if not answer.strip():
            return Verdict(False, {"contains": 0.0, "words": 0.0})
        scores = self.scores(answer, truths)
        correct = self.verdict(scores)
        scores["length_factor"] = round(self.length_factor(scores["words"]), 4)
        return Verdict(correct, scores)


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
            data: Any = schema.parse_json(match.group(0)) if match else None
            scores = {k: float(data[k]) for k in ("grounding", "reasoning", "completeness")}
        except (ValueError, TypeError, KeyError) as exc:
            raise WikigrError(
                f"the Claude judge replied without the expected JSON: {completion.text[:120]!r}"
            ) from exc
        if not all(1 <= v <= 5 for v in scores.values()):
            raise WikigrError(f"the Claude judge gave scores outside 1-5: {scores}")
        return Verdict(scores["completeness"] >= 4, scores, str(data.get("rationale", "")))
