"""The languages of a build's documents, and the embedder they call for.

Each document's language is detected once, where it is prepared (:func:`document_language`: on
its title and text, with :func:`wikigr.lang.detect`), and the pack's manifest counts the documents
per language (:func:`language_counts`). A pack whose documents are not all English is built with
the multilingual embedder unless the user chose one (:func:`choose_embedder`): the built-in model
is English, and a question in another language would not find its passages.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from wikigr import lang
from wikigr.embed import DEFAULT_EMBEDDER, E5_EMBEDDER
from wikigr.models.use import LANGUAGES

MULTILINGUAL = "multilingual"
"""The embedder of packs in other languages than English (wikigr/models/use.py); for a language
USE does not read, e5 (~100 languages, wikigr/models/e5.py)."""


def document_language(title: str, sections: Sequence[Mapping[str, Any]]) -> str:
    """The language of a document (its title and sections' text), or ``lang.UNKNOWN``."""
    parts = [title]
    size = len(title)
    for section in sections:
        if size >= lang.SAMPLE_CHARS:
            break
        parts.extend((section.get("title", ""), section.get("text", "")))
        size += len(parts[-2]) + len(parts[-1]) + 2
    return lang.detect("\n".join(parts))


def language_counts(codes: Iterable[str]) -> dict[str, int]:
    """Documents per language, most first: what ``Manifest.languages`` records."""
    return dict(sorted(Counter(codes).items(), key=lambda item: (-item[1], item[0])))


def not_english(languages: Mapping[str, int]) -> int:
    """How many documents are in a language other than English (undetermined ones are not)."""
    return sum(n for code, n in languages.items() if code not in (lang.ENGLISH, lang.UNKNOWN))


def _shown(languages: Mapping[str, int]) -> str:
    """``{"ru": 5, "en": 2}`` → ``"Russian 5, English 2"``, most first."""
    ordered = sorted(languages.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{'undetermined' if c == lang.UNKNOWN else lang.name(c)} {n}" for c, n in ordered)


def choose_embedder(languages: Mapping[str, int], chosen: str | None) -> tuple[str, str | None]:
    """The embedder to build a pack of these documents with (``languages``: documents per
    language) and the one-line note the build gives about it, if any.

    ``chosen``: the embedder the user chose (``--embedder``, ``$WIKIGR_EMBEDDER``, the Python API),
    kept whatever the languages; None: the built-in English model when every document is English
    (or undetermined), else the multilingual one (e5 when a language is not among USE's). A chosen
    built-in English model for documents in other languages is noted: questions in those languages
    will not be understood well."""
    total = sum(languages.values())
    others = not_english(languages)
    found = f"{others} of {total} documents are not in English ({_shown(languages)})"
    if chosen is None:
        if not others:
            return DEFAULT_EMBEDDER, None
        beyond = [lang.name(code) for code in languages if code != lang.UNKNOWN and code not in LANGUAGES]
        name, why = (E5_EMBEDDER, f", which reads {' and '.join(beyond)}") if beyond else (MULTILINGUAL, "")
        note = (
            f"note: {found}: building with the multilingual embedder (--embedder {name}{why}); "
            "pass --embedder to choose another"
        )
        return name, note
    if others and chosen == DEFAULT_EMBEDDER:
        note = (
            f"note: {found}, but the embedder {chosen} is English: questions in other languages "
            f"will not be understood well (--embedder {MULTILINGUAL} understands them)"
        )
        return chosen, note
    return chosen, None


def fallback_note(languages: Mapping[str, int], reason: str) -> str:
    """The note of a build whose documents call for the multilingual embedder when it cannot be
    loaded here (``reason``): the pack is built with the built-in English model instead."""
    found = f"{not_english(languages)} of {sum(languages.values())} documents are not in English"
    return (
        f"note: {found} ({_shown(languages)}), but the multilingual embedder cannot be loaded here "
        f"({reason.rstrip('.')}): building with {DEFAULT_EMBEDDER}, which will not understand questions in "
        "other languages well"
    )
