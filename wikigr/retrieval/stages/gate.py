"""gate: when even the best passage is far from the question, or the question names what the pack
never mentions, say so instead of pretending."""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikigr.retrieval.stage import QueryState, Skip, Stage, register

_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|'[^'\s][^']*'")  # the asker's own names: `soup`, 'test2.py'
_WORD = re.compile(r"(?<!\w)[^\W\d_][\w+#]*")  # not "th" of "26th"


@dataclass
class GateOptions:
    threshold: float = 0.3  # on the best cosine similarity between the question and a chunk


def absent_words(question: str, state: QueryState) -> list[str]:
    """The words of ``question`` that no chunk of the pack holds, in any form, and that say what
    the question is about: a name ("Rust", capitalised after the question's first word) or a
    word that is no common English one ("nginx", "quicksort", "jsno"), as written; a small
    pack may well lack "method". None when the pack has no keyword index. Quoted words are the
    asker's own names and are not looked for."""
    try:
        index = state.ctx.keyword_index()
    except Skip:
        return []
    from wikigr.embed import ordinary_words
    from wikigr.pack.keyword import fold
    from wikigr.retrieval.candidates import QUESTION_WORDS

    common = QUESTION_WORDS | _ASKING
    absent: list[str] = []
    for n, word in enumerate(_WORD.findall(_QUOTED.sub(" ", question))):
        named = n > 0 and word[:1].isupper()
        if not named and word.casefold() in ordinary_words():
            continue
        tokens = [t for t in index.tokens(word) if t not in common]
        forms = {form for t in tokens for form in _forms(t)}
        held = any(index.document_frequency(form) for form in forms) or bool(
            {fold(form) for form in forms} & index.unaccented()  # "Aschenbrodel": "Aschenbrödel"
        )
        if tokens and not held and word not in absent:
            absent.append(word)
    return absent


_ASKING = frozenset({"list", "name", "give", "show", "tell", "find", "explain", "describe"})  # asking

_ENDINGS = (("ies", "y"), ("es", ""), ("s", ""), ("ed", ""), ("ed", "e"), ("ing", ""), ("ing", "e"))


def _forms(token: str) -> set[str]:
    """``token`` and the forms it may take in the pack ("tags": "tag"; "declaring": "declare";
    "invade": "invaded", "invading"), the index holding words as written."""
    stems = {token} | {
        token[: -len(ending)] + base
        for ending, base in _ENDINGS
        if token.endswith(ending) and len(token) - len(ending) >= 3
    }
    forms = set(stems)
    for stem in stems:
        forms |= {stem + "s", stem + "es", stem + "ed", stem + "ing", stem + "d"}
        if stem.endswith("e"):
            forms.add(stem[:-1] + "ing")
    return forms


@register
class GateStage(Stage):
    name = "gate"
    summary = (
        "flag low confidence when the best similarity is below a threshold; note the words the pack lacks"
    )
    Options = GateOptions

    def run(self, state: QueryState) -> None:
        if not state.confidence and state.candidates:
            vectors = state.ctx.store.chunk_vectors([c.chunk_id for c in state.candidates[:10]])
            question = state.vector()
            state.confidence = max((float(v @ question) for v in vectors.values()), default=0.0)
        state.low_confidence = state.confidence < self.options.threshold
        state.absent = absent_words(state.question, state)
        state.note(
            self.name,
            confidence=round(state.confidence, 4),
            threshold=self.options.threshold,
            absent=state.absent,
        )
