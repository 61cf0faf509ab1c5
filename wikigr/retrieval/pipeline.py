"""Run stages in order and trace each one: milliseconds, candidates in/out, top scores, skips."""

from __future__ import annotations

import time
from typing import Any

from wikigr.retrieval.stage import QueryState, Skip, Stage


def run_stages(stages: list[Stage], state: QueryState) -> list[dict[str, Any]]:
    return [run_stage(stage, state) for stage in stages]


def run_stage(stage: Stage, state: QueryState) -> dict[str, Any]:
    """Run one stage on ``state``; its trace entry (a :class:`Skip` is recorded, not raised)."""
    before = len(state.candidates)
    start = time.perf_counter()
    entry: dict[str, Any] = {"stage": stage.name}
    try:
        stage.run(state)
    except Skip as skip:
        entry["skipped"] = str(skip)
    entry["ms"] = round((time.perf_counter() - start) * 1000, 2)
    entry["in"] = before
    entry["out"] = len(state.candidates)
    entry["top_scores"] = [round(c.score, 4) for c in state.candidates[:3]]
    if stage.name in state.notes:
        entry["detail"] = state.notes[stage.name]
    return entry
