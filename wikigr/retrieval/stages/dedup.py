"""dedup: keep the best passage per section (or per article).

By section, the passages that ``page_score`` placed (a documentation page's: its ``page`` score)
are kept as it ordered them: it gives the best page its two best passages and each next page its
best one before any page's next, and a reference page's one section ("Module Contents") holds
many definitions, ``csv.reader`` and ``csv.Sniffer`` alike. By article, one passage per article
still."""

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
        paged = 0
        for candidate in state.candidates:
            if candidate.placed_by_page and self.options.by == "section":
                kept.append(candidate)
                paged += 1
                continue
            key = candidate.section_id if self.options.by == "section" else candidate.article_id
            if key not in seen:
                seen.add(key)
                kept.append(candidate)
        state.candidates = kept
        if paged:
            state.note(self.name, kept_as_page_score_placed=paged)
