"""gate: when even the best passage is far from the question, or the question names what the pack
never mentions, say so instead of pretending."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from wikigr import lang
from wikigr.embed import ordinary_words
from wikigr.pack.keyword import KeywordIndex, fold
from wikigr.question import QUESTION_WORDS
from wikigr.retrieval.stage import QueryState, Skip, Stage, register

# the asker's own names: `soup`, "test2.py", 'x', “x” (not the apostrophes of "What's Rust's")
_QUOTED = re.compile(r"`[^`]*`|\"[^\"]*\"|“[^”]*”|‘[^’]*’|(?<!\w)'[^'\s][^']*'(?!\w)")
_WORD = re.compile(r"(?<!\w)[^\W\d_][\w+#]*")  # not "th" of "26th"
# what comes before a word capitalised as a sentence's first, not as a name
_SENTENCE_START = re.compile(r"(?:^|[.!?:;]\s+)$")
_UNSPACED = 0x2E80  # from here on (CJK, ...), scripts write words without spaces: a run is no word
MAX_ABSENT = 5


@dataclass
class GateOptions:
    threshold: float = 0.3  # on the best cosine similarity between the question and a chunk


def absent_words(
    question: str,
    index: KeywordIndex,
    language: str = lang.ENGLISH,
    pack_languages: Sequence[str] = (lang.ENGLISH,),
) -> list[str]:
    """The words of ``question`` that no chunk of the pack holds, in any form, and that say what
    the question is about: a name ("Rust", capitalised but not as a sentence's first word) or a
    word that is no common English one ("nginx", "quicksort", "jsno"), as written, at most
    :data:`MAX_ABSENT`, looked up in the pack's keyword ``index``; a small pack may well lack
    "method". Quoted words are the asker's own names and are not looked for, nor are the runs of a
    script written without spaces (a run of Chinese is no word).

    The question is read in its ``language`` and the pack holds documents in ``pack_languages``.
    Words of another language than the documents' are not "missing": a question in a language the
    pack lacks has its words in that language's script left out (a Russian question on English
    pages: its Russian words; a Latin name or identifier in it is still looked for), and so are
    words in a script none of the pack's languages is written in. A word of a language other than
    English is reported only as a name (there is no list of its common words)."""
    common = QUESTION_WORDS | _ASKING
    text = _QUOTED.sub(" ", question)
    known = {code for code in pack_languages if code != lang.UNKNOWN} or {lang.ENGLISH}
    foreign = language != lang.UNKNOWN and language not in known
    own_script = lang.language_script(language)
    scripts = {lang.language_script(code) for code in known} | {"latin"}  # names, code: Latin anywhere
    absent: list[str] = []
    seen: set[str] = set()
    for match in _WORD.finditer(text):
        word = match.group()
        if word.casefold() in seen or any(ord(c) >= _UNSPACED for c in word):
            continue
        seen.add(word.casefold())
        written = lang.script(word)
        if written not in scripts or (foreign and written == own_script):
            continue  # a word of another language than the pack's
        tokens = [t for t in index.tokens(word, language) if t not in common]
        forms = {form for t in tokens for form in _forms(t)}
        if not tokens or any(index.document_frequency(form) for form in forms):
            continue  # the cheap look-ups first: most words are there
        if {fold(form) for form in forms} & index.unaccented():  # "Aschenbrodel": "Aschenbrödel"
            continue
        named = word[:1].isupper() and not _SENTENCE_START.search(text[: match.start()])
        english = language in (lang.ENGLISH, lang.UNKNOWN) or written != own_script
        if named or (english and word.casefold() not in ordinary_words()):
            absent.append(word)
            if len(absent) == MAX_ABSENT:
                break
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
            scale = state.cosine_scale()
            state.confidence = max((float(v @ question) * scale for v in vectors.values()), default=0.0)
        state.low_confidence = state.confidence < self.options.threshold
        try:
            index = state.ctx.keyword_index()
            state.absent = absent_words(state.question, index, state.language, state.pack_languages)
        except Skip:  # no keyword index: nothing to look the words up in
            state.absent = []
        state.note(
            self.name,
            confidence=round(state.confidence, 4),
            threshold=self.options.threshold,
            absent=state.absent,
        )
        if state.across:
            state.note(self.name, across=state.across_note())
