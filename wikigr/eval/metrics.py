"""Retrieval and answer metrics.

- recall@k as HippoRAG defines it: |gold in the top k| / |gold|, per question, averaged;
- hit@k: 1 when any gold source is in the top k; MRR: 1 / rank of the first gold source;
- exact match and token F1 with the SQuAD / HotpotQA answer normalisation (lowercase, strip
  punctuation and the articles a/an/the, collapse whitespace), best over the ground truth and its
  aliases.
"""

from __future__ import annotations

import re
import string
from collections import Counter
from collections.abc import Sequence

_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCT = str.maketrans("", "", string.punctuation)


def normalize_answer(text: str) -> str:
    text = text.lower().translate(_PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def exact_match(prediction: str, truths: Sequence[str]) -> float:
    guess = normalize_answer(prediction)
    return float(any(guess == normalize_answer(t) for t in truths if t))


def _f1(prediction: str, truth: str) -> float:
    guess, gold = normalize_answer(prediction), normalize_answer(truth)
    # HotpotQA: yes/no/noanswer must match exactly.
    if guess in ("yes", "no", "noanswer") or gold in ("yes", "no", "noanswer"):
        return float(guess == gold)
    pred_tokens, gold_tokens = guess.split(), gold.split()
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision, recall = same / len(pred_tokens), same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, truths: Sequence[str]) -> float:
    return max((_f1(prediction, t) for t in truths if t), default=0.0)


def first_ranks(ranked: Sequence[str], gold: Sequence[str]) -> dict[str, int]:
    """1-based rank of each gold item in ``ranked`` (after removing repeats); absent ones are left out."""
    seen: list[str] = []
    for item in ranked:
        if item not in seen:
            seen.append(item)
    return {g: seen.index(g) + 1 for g in gold if g in seen}


def recall_at(ranks: dict[str, int], gold_count: int, k: int) -> float:
    return sum(1 for r in ranks.values() if r <= k) / gold_count if gold_count else 0.0


def hit_at(ranks: dict[str, int], k: int) -> float:
    return float(any(r <= k for r in ranks.values()))


def reciprocal_rank(ranks: dict[str, int]) -> float:
    return 1.0 / min(ranks.values()) if ranks else 0.0
