"""quality: drop boilerplate and too-short passages.

Boilerplate is site chrome: navigation, cookie banners, footers. One such phrase in a passage is
not enough ("This page is a list of the Buccaneers' draft picks" is content, and so is a passage
about cookies): a short passage is dropped when it holds two hits of the phrases, or one and
almost nothing else.

A page does not lose its place to length alone: when a page's best-placed passage is too short
to quote, the page's best passage that is not takes its place (and its score). A man page's
"Name" ("curl - transfer a URL") is often the passage that finds its page.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from wikigr.retrieval.stage import Candidate, QueryState, Stage, register

BOILERPLATE = [
    "all rights reserved",
    "cookies",
    "cookie policy",
    "skip to content",
    "previous topic",
    "next topic",
    "report a bug",
    "show source",
    "this page",
    "table of contents",
    "subscribe",
    "privacy policy",
    "terms of use",
]


@dataclass
class QualityOptions:
    min_words: int = 5
    min_letter_ratio: float = 0.3  # letters among non-space characters
    boilerplate: list[str] = field(default_factory=lambda: list(BOILERPLATE))
    boilerplate_max_words: int = 40  # only short passages are judged by boilerplate phrases
    boilerplate_hits: int = 2  # phrase hits that make a short passage boilerplate
    boilerplate_alone_words: int = 12  # at most this many words: one hit is enough


_WORD = re.compile(r"\w+")
_ASCII_LETTERS = bytes(c for c in range(128) if chr(c).isalpha())
_ASCII_SPACES = bytes(c for c in range(128) if chr(c).isspace())


def visible_and_letters(text: str) -> tuple[int, int]:
    """How many characters of ``text`` are not whitespace, and how many are letters (str.isspace
    and str.isalpha); ASCII text is counted in C (bytes.translate), 50 times faster."""
    if text.isascii():
        data = text.encode("ascii")
        spaces = len(data) - len(data.translate(None, _ASCII_SPACES))
        return len(data) - spaces, len(data) - len(data.translate(None, _ASCII_LETTERS))
    return len(text) - sum(map(str.isspace, text)), sum(map(str.isalpha, text))


@register
class QualityStage(Stage):
    name = "quality"
    summary = "drop boilerplate and too-short passages"
    Options = QualityOptions

    def is_poor(self, text: str) -> str | None:
        words = _WORD.findall(text)
        if len(words) < self.options.min_words:
            return "short"
        visible, letters = visible_and_letters(text)
        if visible and letters / visible < self.options.min_letter_ratio:
            return "symbols"
        o = self.options
        if len(words) <= o.boilerplate_max_words:
            lowered = text.lower()
            hits = sum(lowered.count(phrase) for phrase in o.boilerplate)
            if hits >= o.boilerplate_hits or (hits and len(words) <= o.boilerplate_alone_words):
                return "boilerplate"
        return None

    def run(self, state: QueryState) -> None:
        candidates = state.candidates
        reasons = [self.is_poor(candidate.text) for candidate in candidates]
        quotable = {_page(c) for c, reason in zip(candidates, reasons, strict=True) if reason is None}
        placed: list[tuple[int, int, Candidate]] = []
        vacated: dict[tuple[str, str], int] = {}  # page -> the place of its best passage, too short
        seen: set[tuple[str, str]] = set()
        dropped: dict[str, int] = {}
        for n, (candidate, reason) in enumerate(zip(candidates, reasons, strict=True)):
            page = _page(candidate)
            if reason == "short" and page not in seen and page in quotable:
                vacated.setdefault(page, n)  # its place goes to the page's best passage not too short
            if reason is None:
                place = vacated.pop(page, n)
                if place < n:
                    candidate.score = max(candidate.score, candidates[place].score)
                placed.append((place, n, candidate))
                seen.add(page)
            else:
                dropped[reason] = dropped.get(reason, 0) + 1
        kept = [candidate for _, _, candidate in sorted(placed, key=lambda item: item[:2])]
        if kept:  # never drop everything: poor context beats none
            state.candidates = kept
        state.note(self.name, dropped=dropped)


def _page(candidate: Candidate) -> tuple[str, str]:
    return candidate.pack, candidate.article_id
