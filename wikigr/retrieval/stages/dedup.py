"""dedup: keep the best passage per section (or per article)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from wikigr.retrieval.stage import QueryState, Stage, register


@dataclass
class DedupOptions:
    by: Literal["section", "article"] = "section"


@register
class DedupStage(Stage):
    name = "dedup"
    summary = "one best passage per section (or article)"
    Options = DedupOptions

    def run(self, state: QueryState) -> None:
        seen: set[str] = set()
        kept = []
        for candidate in state.candidates:
            key = candidate.section_id if self.options.by == "section" else candidate.article_id
            if key not in seen:
                seen.add(key)
                kept.append(candidate)
        state.candidates = kept
