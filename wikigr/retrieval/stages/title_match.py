"""title_match: boost passages whose article title is named in the question.

Entity-centric corpora (encyclopaedia pages, passages titled by their subject) answer a question
that names a page's subject from that page; the boost lifts such pages without dropping anything.
Titles are matched as whole words after lower-casing and removing punctuation and parentheses
(``"Lilu (mythology)"`` matches a question naming "Lilu").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikigr.retrieval.stage import QueryState, Skip, Stage, register

_PARENS = re.compile(r"\([^)]*\)")
_WORDS = re.compile(r"\w+")


def _words(text: str) -> str:
    return " ".join(_WORDS.findall(text.lower()))


@dataclass
class TitleMatchOptions:
    boost: float = 0.2  # added to the (0-1 scaled) score of a passage whose title the question names
    min_chars: int = 3  # ignore titles shorter than this
    max_title_words: int = 8  # long titles (documentation pages) are not entity names


@register
class TitleMatchStage(Stage):
    name = "title_match"
    summary = "boost passages whose article title the question names"
    Options = TitleMatchOptions

    def _named(self, title: str, question: str) -> bool:
        name = _words(_PARENS.sub(" ", title))
        if len(name) < self.options.min_chars or len(name.split()) > self.options.max_title_words:
            return False
        return f" {name} " in question

    def run(self, state: QueryState) -> None:
        if not state.candidates:
            raise Skip("no candidates")
        question = f" {_words(state.question)} "
        boosted = 0
        for candidate in state.candidates:
            if self._named(candidate.article_title, question):
                candidate.score += self.options.boost
                candidate.scores["title_match"] = 1.0
                boosted += 1
        state.sort()
        state.note(self.name, boosted=boosted)
