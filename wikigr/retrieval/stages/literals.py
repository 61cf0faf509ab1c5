"""literals: search without the literal values a code question quotes.

Questions about code often carry the user's own values: variable names in backticks, strings and
lists in quotes ("sort dictionary `mydict` by value", "read file 'myfile.txt'"). Those words are in
no documentation page; they pull the question's embedding and its keywords away from the API it
asks about. This stage searches with the question less those spans: backticked spans — but a
backticked API reference (a dotted name or a call, `os.path.join`, `globals()`) is kept, without
its backticks — and strings in single or double quotes.

Quoted text is only dropped from a question that is about code: one with a backticked span, or with
a quoted span that holds a character prose does not (``. _ / \\ % [ ] ( ) { } < > = * + $ # @ | ^ ~``),
a number or a camelCase name (``'1633837924'``, ``'myVar'``).
A quoted title in an ordinary question ("Who sang "Diamond Cut"?") is its subject and stays.
Quotes inside words (apostrophes: "don't") are not quotes. When fewer than ``min_words`` words
would be left, the question is kept as it is. Every query is cleaned (the question, or the
phrasings of ``multi_query``); the stages after it search with the cleaned queries.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikigr.retrieval.stage import QueryState, Skip, Stage, register

_BACKTICKS = re.compile(r"`([^`\n]*)`")
_QUOTED = re.compile(r"(?<!\w)(?:'[^'\n]*'|\"[^\"\n]*\"|“[^”\n]*”|‘[^’\n]*’)(?!\w)")
_API = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)*(?:\([^()]*\))?")
_WORD = re.compile(r"\w+")
_CODE_CHARS = frozenset("._/\\%[](){}<>=*+$#@|^~")
_CODE_WORD = re.compile(r"[0-9]+|[a-z]+[A-Z]\w*")  # a number, a camelCase name


def _code_like(quoted: str) -> bool:
    return bool(_CODE_CHARS & set(quoted)) or _CODE_WORD.fullmatch(quoted) is not None


def is_code_question(text: str) -> bool:
    """Whether ``text`` quotes code: a backticked span, or a quoted span with a code character, a
    number or a camelCase name."""
    if _BACKTICKS.search(text):
        return True
    return any(_code_like(m.group()[1:-1]) for m in _QUOTED.finditer(text))


def strip_literals(text: str, keep_api: bool = True) -> str:
    """``text`` without its backticked spans (API references kept, unquoted) and, when it is a
    code question (:func:`is_code_question`), without its quoted spans."""
    if not is_code_question(text):
        return " ".join(text.split())

    def backticked(match: re.Match[str]) -> str:
        inner = match.group(1).strip()
        if keep_api and _API.fullmatch(inner) and ("." in inner or "(" in inner):
            return f" {inner} "
        return " "

    text = _BACKTICKS.sub(backticked, text)
    text = _QUOTED.sub(" ", text)
    return " ".join(text.split())


@dataclass
class LiteralsOptions:
    keep_api: bool = True  # keep backticked dotted names and calls (`os.path.join`, `globals()`)
    min_words: int = 2  # keep the question as it is when fewer words would be left

    def __post_init__(self) -> None:
        if self.min_words < 1:
            raise ValueError("min_words must be at least 1")


@register
class LiteralsStage(Stage):
    name = "literals"
    summary = "search without the quoted and backticked values of a code question"
    Options = LiteralsOptions

    def run(self, state: QueryState) -> None:
        queries = state.queries or [state.question]
        cleaned: list[str] = []
        for query in queries:
            text = strip_literals(query, self.options.keep_api)
            cleaned.append(text if len(_WORD.findall(text)) >= self.options.min_words else query)
        if cleaned == queries:
            raise Skip("the question quotes no literal value")
        state.queries = list(dict.fromkeys(cleaned))
        state.note(self.name, queries=state.queries)
