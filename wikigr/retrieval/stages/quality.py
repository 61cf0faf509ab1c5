"""quality: drop boilerplate and too-short passages."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wikigr.retrieval.stage import QueryState, Stage, register

BOILERPLATE = [
    "all rights reserved",
    "cookie",
    "skip to content",
    "previous topic",
    "next topic",
    "report a bug",
    "show source",
    "this page",
    "table of contents",
    "subscribe",
]


@dataclass
class QualityOptions:
    min_words: int = 5
    min_letter_ratio: float = 0.3  # letters among non-space characters
    boilerplate: list[str] = field(default_factory=lambda: list(BOILERPLATE))
    boilerplate_max_words: int = 40  # only short passages are judged by boilerplate phrases


_WORD = re.compile(r"\w+")


@register
class QualityStage(Stage):
    name = "quality"
    summary = "drop boilerplate and too-short passages"
    Options = QualityOptions

    def is_poor(self, text: str) -> str | None:
        words = _WORD.findall(text)
        if len(words) < self.options.min_words:
            return "short"
        visible = [ch for ch in text if not ch.isspace()]
        letters = sum(ch.isalpha() for ch in visible)
        if visible and letters / len(visible) < self.options.min_letter_ratio:
            return "symbols"
        if len(words) <= self.options.boilerplate_max_words:
            lowered = text.lower()
            if any(phrase in lowered for phrase in self.options.boilerplate):
                return "boilerplate"
        return None

    def run(self, state: QueryState) -> None:
        kept = []
        dropped: dict[str, int] = {}
        for candidate in state.candidates:
            reason = self.is_poor(candidate.text)
            if reason is None:
                kept.append(candidate)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        if kept:  # never drop everything: poor context beats none
            state.candidates = kept
        state.note(self.name, dropped=dropped)
