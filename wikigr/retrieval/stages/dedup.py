"""dedup: keep the best passage per section (or per article).

Passages that ``page_score`` placed (a documentation page's: its ``page`` score) are kept as it
ordered them: it gives each page its best ``passages_per_page`` before the next page's, and a
reference page's one section ("Module Contents") holds many definitions, ``csv.reader`` and
``csv.Sniffer`` alike."""

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
            if "page" in candidate.scores:
                kept.append(candidate)
                continue
            key = candidate.section_id if self.options.by == "section" else candidate.article_id
            if key not in seen:
                seen.add(key)
                kept.append(candidate)
        state.candidates = kept
