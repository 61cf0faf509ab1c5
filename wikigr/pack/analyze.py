"""How keyword search reads text: its tokens, and in each language its stopwords and stemmer.

Tokenisation (the same for chunks and queries, in every language): NFKC, then runs of word
characters joined by dots (``socket.settimeout``); each run gives its alphanumeric parts
(``socket``, ``settimeout``), their camelCase pieces (``setTimeout`` → ``set``, ``timeout``), and,
for a dotted or underscored identifier, the whole identifier and its underscored components
(``pd.read_csv`` → ``pd.read_csv``, ``read_csv``). Tokens are casefolded; stopwords are dropped
from the parts (never from whole identifiers).

English is analysed as wikigr always did: Lucene's English stopwords (as bm25s ships them), no
stemmer. A chunk in a language that has a Snowball stemmer (:func:`wikigr.lang.stemmer_name`:
Russian, German, French...) is analysed by that language's :class:`Analyzer`: its stopwords too
(:func:`language_stopwords`: a list of Russian function words written for wikigr; bm25s's lists for
the languages it ships one for; none for the others), and each part written in the language's
script (:func:`wikigr.lang.language_script`) stemmed (``таймаута`` → ``таймаут``); a part in
another script stays as it is, so the Latin identifiers of a Russian page (``settimeout``) are the
same tokens as in an English one. Other languages (and ``und``) are analysed as English.

A question is analysed in its own language (:meth:`Analysis.for_language`), with the analyzer the
index recorded for that language, or the English one when the index has none for it: its words
then meet the index's as the index wrote them.

An index records its analysis (:meth:`Analysis.settings`): an index without a language of its own
records exactly what wikigr 1 did (tokenizer version 1), so an English pack's files do not change;
one with languages records them (version 2: each language's stemmer, script and stopwords). A
recorded analysis is untrusted data: :meth:`Analysis.from_settings` accepts only the stemmers
wikigr knows for each language, and caps every list.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from wikigr import lang

TOKENIZER_NAME = "wikigr-keyword"
TOKENIZER_VERSION = 1  # the English analysis: what an index without languages records
LANGUAGES_VERSION = 2  # an index with languages analysed by their own stemmer and stopwords
MAX_TOKEN_CHARS = 100
MAX_STOPWORDS = 10_000
MAX_LANGUAGES = 100
_CODE = re.compile(r"[a-z]{2,3}")

_RUN_RE = re.compile(r"\w+(?:\.\w+)*")
_PART_RE = re.compile(r"[^\W_]+")
_CAMEL_RE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")

RUSSIAN_STOPWORDS = frozenset(
    """
    а без более бы был была были было быть в вам вами вас ваш ваша ваше ваши весь во вот все всё
    всего всей всем всеми всех вы где да даже для до его ее её ей ему если есть еще ещё же за зачем
    здесь и из или им ими их к как какая какие каким какими каких какой каком какую кем когда кого
    ком кому кто куда ли либо лишь меня мне мной мы на над нам нами нас наш наша наше наши не него
    нее неё ней нем нём нему нет ни них но ну о об однако он она они оно от откуда очень перед по
    под после потому почему при про с сам сама сами само свой своя своё свое свои со сколько так
    также такая такие такой там те тем теми тех то тогда того тоже той том тому тот ту тут ты у уже
    чего чем через что чтобы чей чья чьё чье чьи эта эти этим этими этих это этого этой этом этому
    этот эту я
    """.split()  # noqa: SIM905
)
"""Russian function words (pronouns, prepositions, conjunctions, particles, forms of быть, the
question words), with and without ё: dropped as Lucene's list drops English ones."""

_BM25S_STOPWORDS = {
    "da": "STOPWORDS_DANISH", "de": "STOPWORDS_GERMAN", "es": "STOPWORDS_SPANISH",
    "fr": "STOPWORDS_FRENCH", "it": "STOPWORDS_ITALIAN", "nl": "STOPWORDS_DUTCH",
    "no": "STOPWORDS_NORWEGIAN", "pt": "STOPWORDS_PORTUGUESE", "sv": "STOPWORDS_SWEDISH",
    "tr": "STOPWORDS_TURKISH",
}  # fmt: skip


def default_stopwords() -> tuple[str, ...]:
    """The English stopwords bm25s ships (Lucene's list), recorded in each index at build time."""
    from bm25s.stopwords import STOPWORDS_EN  # type: ignore[import-untyped]

    return tuple(sorted({str(w).casefold() for w in STOPWORDS_EN}))


def language_stopwords(code: str) -> tuple[str, ...]:
    """A language's own stopwords (dropped on top of the English ones): Russian's written for
    wikigr, bm25s's list for the languages it ships one for (the source of the English list),
    none for the others."""
    if code == "ru":
        return tuple(sorted(RUSSIAN_STOPWORDS))
    listed = _BM25S_STOPWORDS.get(code)
    if listed is None:
        return ()
    import bm25s.stopwords  # type: ignore[import-untyped]

    return tuple(sorted({str(w).casefold() for w in getattr(bm25s.stopwords, listed, ())}))


_stemmers = threading.local()  # a Snowball stemmer is not thread-safe: one per thread


def _stemmer(name: str) -> Any:
    found: dict[str, Any] = getattr(_stemmers, "by_name", None) or {}
    if not found:
        _stemmers.by_name = found
    if name not in found:
        import Stemmer  # pystemmer: only for packs in other languages

        found[name] = Stemmer.Stemmer(name)
    return found[name]


def stem(name: str, word: str) -> str:
    """``word`` as the Snowball stemmer ``name`` stems it."""
    return str(_stemmer(name).stemWord(word))


def stemmer_available(name: str) -> bool:
    """Whether the installed pystemmer has the Snowball stemmer ``name``."""
    import Stemmer

    return name in Stemmer.algorithms()


@dataclass(frozen=True)
class Analyzer:
    """How the words of one language are read: ``stopwords`` dropped, and with a ``stemmer``
    (Snowball's name), the parts written in ``script`` stemmed."""

    stopwords: frozenset[str]
    stemmer: str | None = None
    script: str = "latin"

    def _stem(self, token: str) -> str:
        if self.stemmer is None:
            return token
        ascii_only = token.isascii()
        if self.script == "latin" and not ascii_only and lang.script(token) != "latin":
            return token
        if self.script != "latin" and (ascii_only or lang.script(token) != self.script):
            return token  # a Latin identifier in a Russian page stays as it is
        return str(_stemmer(self.stemmer).stemWord(token))

    def run_tokens(self, run: str) -> list[str]:
        """The tokens of one run of word characters (see the module docstring)."""
        stop = self.stopwords
        tokens: list[str] = []
        simple = "." not in run and "_" not in run  # the common case: one alphanumeric part
        parts = [run] if simple else _PART_RE.findall(run)
        for part in parts:
            folded = part.casefold()
            if folded not in stop:
                tokens.append(self._stem(folded))
            tail = part[1:]
            if tail != tail.lower():  # an upper-case letter after the first: maybe camelCase
                pieces = _CAMEL_RE.split(part)
                if len(pieces) > 1:
                    tokens.extend(
                        self._stem(f) for f in (piece.casefold() for piece in pieces) if f not in stop
                    )
        if not simple and parts and (len(parts) > 1 or run != parts[0]):
            tokens.append(run.casefold())
            if "." in run:
                tokens.extend(c.casefold() for c in run.split(".") if "_" in c and _PART_RE.search(c))
        return [t for t in tokens if len(t) <= MAX_TOKEN_CHARS]

    def tokens(self, text: str) -> list[str]:
        """The tokens of ``text``."""
        return [t for run in runs(text) for t in self.run_tokens(run)]


def runs(text: str) -> Iterator[str]:
    """The runs of word characters (joined by dots) of ``text``, after NFKC."""
    yield from _RUN_RE.findall(unicodedata.normalize("NFKC", text))


def fold(token: str) -> str:
    """``token`` without its accents: "aschenbrödel" is "aschenbrodel"."""
    return "".join(c for c in unicodedata.normalize("NFKD", token) if not unicodedata.combining(c))


def tokenize(text: str, stopwords: Sequence[str] | frozenset[str] | None = None) -> list[str]:
    """The tokens of ``text`` as English is analysed (``stopwords``: Lucene's by default)."""
    return Analyzer(frozenset(default_stopwords() if stopwords is None else stopwords)).tokens(text)


def _english_settings(stopwords: Sequence[str], version: int = TOKENIZER_VERSION) -> dict[str, Any]:
    return {
        "name": TOKENIZER_NAME,
        "version": version,
        "normalization": "NFKC",
        "lowercase": "casefold",
        "identifiers": True,
        "camel_case": True,
        "stemmer": None,
        "max_token_chars": MAX_TOKEN_CHARS,
        "stopwords": list(stopwords),
    }


class AnalysisError(ValueError):
    """A recorded analysis this wikigr cannot read (the message is one line)."""


class Analysis:
    """An index's analysis: the English analyzer, and one per language analysed otherwise."""

    def __init__(self, stopwords: Sequence[str], languages: Mapping[str, tuple[str, Sequence[str]]]) -> None:
        """``stopwords``: the English ones; ``languages``: code -> (Snowball stemmer, own stopwords)."""
        self.stopwords = tuple(stopwords)
        self.default = Analyzer(frozenset(self.stopwords))
        self.own = {code: (stemmer, tuple(words)) for code, (stemmer, words) in sorted(languages.items())}
        self.languages = {
            code: Analyzer(self.default.stopwords | frozenset(words), stemmer, lang.language_script(code))
            for code, (stemmer, words) in self.own.items()
        }

    @classmethod
    def for_chunks(cls, languages: Sequence[str] | None) -> Analysis:
        """The analysis of chunks in ``languages`` (None: all English)."""
        own: dict[str, tuple[str, Sequence[str]]] = {}
        for code in sorted(set(languages or ())):
            stemmer = lang.stemmer_name(code)
            if stemmer is not None:
                own[code] = (stemmer, language_stopwords(code))
        return cls(default_stopwords(), own)

    def for_language(self, code: str | None) -> Analyzer:
        """The analyzer of a text in language ``code``: its own, or the English one."""
        return self.languages.get(code, self.default) if code else self.default

    def tokens(self, text: str, language: str | None = None) -> list[str]:
        return self.for_language(language).tokens(text)

    def settings(self) -> dict[str, Any]:
        """What the index's meta records as its ``tokenizer``."""
        if not self.own:
            return _english_settings(self.stopwords)
        settings = _english_settings(self.stopwords, LANGUAGES_VERSION)
        settings["languages"] = {
            code: {"stemmer": stemmer, "script": lang.language_script(code), "stopwords": list(words)}
            for code, (stemmer, words) in self.own.items()
        }
        return settings

    def describe(self) -> dict[str, str]:
        """Each language's analyzer by name (``{"ru": "snowball russian"}``); English: unstemmed."""
        return {"en": "unstemmed"} | {code: f"snowball {stemmer}" for code, (stemmer, _) in self.own.items()}

    @classmethod
    def from_settings(cls, tokenizer: Any) -> Analysis:
        """The analysis an index recorded; :class:`AnalysisError` when it is malformed, newer than
        this wikigr, or names a stemmer wikigr does not use for that language."""
        if not isinstance(tokenizer, dict):
            raise AnalysisError("tokenizer must be an object")
        stopwords = _word_list(tokenizer.get("stopwords"), "tokenizer.stopwords")
        version = tokenizer.get("version")
        if isinstance(version, int) and not isinstance(version, bool) and version > LANGUAGES_VERSION:
            raise AnalysisError(
                f"keyword index tokenizer version {version} is newer than this wikigr supports "
                f"({LANGUAGES_VERSION}): upgrade wikigr"
            )
        recorded = tokenizer.get("languages") if version == LANGUAGES_VERSION else None
        own: dict[str, tuple[str, Sequence[str]]] = {}
        if version == LANGUAGES_VERSION:
            if not isinstance(recorded, dict) or not recorded or len(recorded) > MAX_LANGUAGES:
                raise AnalysisError(
                    f"tokenizer.languages must be an object of 1 to {MAX_LANGUAGES} languages"
                )
            for code, entry in recorded.items():
                own[code] = _language_entry(code, entry)
        analysis = cls(stopwords, own)
        if tokenizer != analysis.settings():
            raise AnalysisError("unsupported tokenizer settings")
        return analysis


def _word_list(value: Any, where: str) -> list[str]:
    if (
        not isinstance(value, list)
        or len(value) > MAX_STOPWORDS
        or not all(isinstance(w, str) and len(w) <= MAX_TOKEN_CHARS for w in value)
    ):
        raise AnalysisError(f"{where} must be a list of at most {MAX_STOPWORDS} words")
    return value


def _language_entry(code: Any, entry: Any) -> tuple[str, list[str]]:
    """A recorded language's (stemmer, stopwords), checked: a stemmer wikigr uses for it."""
    shown = str(code)[:20]
    if not isinstance(code, str) or not _CODE.fullmatch(code) or not isinstance(entry, dict):
        raise AnalysisError(f"tokenizer.languages has a malformed entry {shown!r}")
    stemmer = entry.get("stemmer")
    if not isinstance(stemmer, str) or stemmer != lang.stemmer_name(code):
        raise AnalysisError(
            f"unknown stemmer {str(stemmer)[:40]!r} for language {shown!r} "
            f"(this wikigr stems it with {lang.stemmer_name(code)!r}): rebuild the pack or upgrade wikigr"
        )
    if not stemmer_available(stemmer):
        raise AnalysisError(f"the Snowball stemmer {stemmer!r} is missing from pystemmer: upgrade pystemmer")
    return stemmer, _word_list(entry.get("stopwords"), f"tokenizer.languages.{code}.stopwords")
