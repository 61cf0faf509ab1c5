"""Languages: what a document or a question is written in, and how each language's words are analysed.

Codes are ISO 639-1 (``en``, ``ru``, ``de``…); :data:`UNKNOWN` (``und``) when a text has too few
letters to tell, or the identifier is not confident. Documents are identified at build time with
``py3langid`` (97 languages, its model inside the wheel; ~0.5 s to load, ~1 ms a document), on a
sample of the text's letters. A question is too short for that and must be answered at once, so
:func:`question_language` reads the question's script first and asks the identifier only to choose
between the pack's own languages that share that script.

Keyword search stems a language's words with its Snowball stemmer (``pystemmer``) where one exists
(:func:`stemmer_name`); English keeps wikigr's unstemmed tokens (its packs stay as they were).
"""

from __future__ import annotations

import threading
import unicodedata
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

UNKNOWN = "und"
ENGLISH = "en"

NAMES: dict[str, str] = {
    "ar": "Arabic", "bg": "Bulgarian", "ca": "Catalan", "cs": "Czech", "da": "Danish", "de": "German",
    "el": "Greek", "en": "English", "es": "Spanish", "eu": "Basque", "fi": "Finnish", "fr": "French",
    "ga": "Irish", "he": "Hebrew", "hi": "Hindi", "hu": "Hungarian", "hy": "Armenian", "id": "Indonesian",
    "it": "Italian", "ja": "Japanese", "kk": "Kazakh", "ko": "Korean", "lt": "Lithuanian", "ne": "Nepali",
    "nl": "Dutch", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian",
    "sr": "Serbian", "sv": "Swedish", "ta": "Tamil", "tr": "Turkish", "uk": "Ukrainian", "zh": "Chinese",
}  # fmt: skip
"""English names of the languages a message may mention; other codes are shown as they are."""

_SNOWBALL: dict[str, str] = {
    "ar": "arabic", "ca": "catalan", "da": "danish", "de": "german", "el": "greek", "es": "spanish",
    "eu": "basque", "fi": "finnish", "fr": "french", "ga": "irish", "hi": "hindi", "hu": "hungarian",
    "hy": "armenian", "id": "indonesian", "it": "italian", "lt": "lithuanian", "ne": "nepali",
    "nl": "dutch", "no": "norwegian", "pt": "portuguese", "ro": "romanian", "ru": "russian",
    "sr": "serbian", "sv": "swedish", "ta": "tamil", "tr": "turkish",
}  # fmt: skip
"""Snowball stemmers by language. English is left out on purpose: its tokens are not stemmed."""

MIN_LETTERS = 40
"""A text with fewer letters than this is :data:`UNKNOWN`."""
MIN_CONFIDENCE = 0.9
"""The identifier's normalised probability below which a document is :data:`UNKNOWN`."""
SAMPLE_CHARS = 20_000
"""How much of a document the identifier reads (its start, where the prose usually is)."""


def name(code: str) -> str:
    """``"ru"`` → ``"Russian"``; an unknown code as it is."""
    return NAMES.get(code, code)


def stemmer_name(code: str) -> str | None:
    """The Snowball stemmer's name for a language, or None (English and languages without one)."""
    return _SNOWBALL.get(code)


def script(text: str) -> str:
    """The script most of a text's letters are in: ``latin``, ``cyrillic``, ``greek``, …, or ``""``.

    Read from the first word of each letter's Unicode name (``CYRILLIC SMALL LETTER A``)."""
    counts: Counter[str] = Counter()
    for char in text:
        if char.isalpha():
            if char < "\u0250":
                counts["latin"] += 1
            else:
                counts[unicodedata.name(char, "").split(" ", 1)[0].lower()] += 1
    return counts.most_common(1)[0][0] if counts else ""


_SCRIPTS: dict[str, str] = {
    "ru": "cyrillic", "uk": "cyrillic", "bg": "cyrillic", "sr": "cyrillic", "kk": "cyrillic",
    "mk": "cyrillic", "be": "cyrillic", "mn": "cyrillic", "el": "greek", "ar": "arabic",
    "he": "hebrew", "hi": "devanagari", "ne": "devanagari", "hy": "armenian", "ta": "tamil",
    "ka": "georgian", "th": "thai", "ja": "cjk", "zh": "cjk", "ko": "hangul",
}  # fmt: skip


def language_script(code: str) -> str:
    """The script a language is usually written in (``latin`` unless known otherwise)."""
    return _SCRIPTS.get(code, "latin")


_identifier: Any = None
_identifier_lock = threading.Lock()


def identifier() -> Any:
    """py3langid's identifier, loaded once per process (~1.3 s: a build loads it in a thread as it
    starts); a second caller waits for a load in progress."""
    global _identifier
    with _identifier_lock:
        if _identifier is None:
            from py3langid.langid import MODEL_FILE, LanguageIdentifier

            _identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return _identifier


def _letters(text: str) -> int:
    return sum(1 for char in text if char.isalpha())


def detect(text: str) -> str:
    """The language a document is written in, or :data:`UNKNOWN` (too short, or not confident)."""
    sample = text[:SAMPLE_CHARS]
    if _letters(sample) < MIN_LETTERS:
        return UNKNOWN
    code, probability = identifier().classify(sample)
    return str(code) if float(probability) >= MIN_CONFIDENCE else UNKNOWN


def question_language(question: str, pack_languages: Iterable[str] = ()) -> str:
    """The language of a question, told from its script and the languages the pack holds.

    A question in a script that only one of the pack's languages (or English, for Latin) is written
    in is that language without asking the identifier; otherwise the identifier chooses among the
    pack's languages of that script (or all languages, when the pack has none of that script)."""
    found = script(question)
    if not found:
        return UNKNOWN
    known = {code for code in pack_languages if code != UNKNOWN}
    candidates = sorted(code for code in known if language_script(code) == found)
    if found == "latin" and not candidates:
        candidates = [ENGLISH]
    if len(candidates) == 1:
        return candidates[0]
    if found == "cyrillic" and not candidates:
        return "ru"
    found_by = identifier()
    if candidates:
        ranked = [(str(code), float(p)) for code, p in found_by.rank(question) if code in candidates]
        return ranked[0][0] if ranked else candidates[0]
    return str(found_by.classify(question)[0])


def summarize(counts: Mapping[str, int]) -> str:
    """``{"ru": 5, "en": 3}`` → ``"Russian (5), English (3)"``, largest first."""
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    return ", ".join(f"{name(code)} ({count})" for code, count in ordered)
