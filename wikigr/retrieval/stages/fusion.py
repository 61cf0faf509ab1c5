"""Rank fusion shared by the stages that merge rankings."""

from __future__ import annotations

from collections.abc import Sequence


def rrf(rankings: Sequence[tuple[Sequence[str], float]], k: int = 60) -> dict[str, float]:
    """Weighted reciprocal-rank fusion: sum over rankings of weight / (k + rank), rank from 1."""
    fused: dict[str, float] = {}
    for ids, weight in rankings:
        for rank, item in enumerate(ids, 1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def minmax(scores: dict[str, float]) -> dict[str, float]:
    """Scores scaled to [0, 1] (all 1.0 when they are equal)."""
    if not scores:
        return {}
    low, high = min(scores.values()), max(scores.values())
    if high - low < 1e-12:
        return dict.fromkeys(scores, 1.0)
    return {key: (value - low) / (high - low) for key, value in scores.items()}
