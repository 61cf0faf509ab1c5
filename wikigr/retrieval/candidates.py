"""Answer candidates for a factoid question: what the question asks for (a date, a number, a
person, a place, a name), the spans of the top passages' sentences that could be it, and their
signals. No model: names are the capitalised spans and quoted titles of
:func:`wikigr.graph.extract.keyword_entities` (with "Columbus, Ohio" and "Studio 33" kept whole),
dates, times of day and numbers come from regular expressions, and so do the lower-case words
that fill the question's slot ("depictions of what?": "... depictions of urban landscapes") or,
for a question asking for a role ("what position / genre ..."), follow "as" or "known for"
("plays as a central defender"). A
candidate the question names is left out, and so is one word capitalised only where it opens a
sentence ("Return ...", "Please ..."), a lone digit that does not count what the question counts,
and two names of a list ("Robert Newton and Edward Chapman", "Sleepy Brown, Phantogram") are two.

Each candidate is scored by a weighted sum (the weights fitted on the dev halves of MuSiQue and
HotpotQA with ``bench/answers.py --tune``) of:

- ``type``: it is what the question asks for (a date or a time of day for "when" and "what time",
  a number for "how many", a name for "who", "where", "which" and "what"; for "which function"
  or "which exception", a code name of that form; for "which module", a module that a top
  passage's page is about — "json" for "json — JSON encoder and decoder" —, spelt as its page
  spells it and found where its sentences name it, say "this module", or, failing both, at the
  start of each of them);
- ``sentence``: the score of its best sentence (:mod:`wikigr.retrieval.short_answer`), from 0 for
  the question's worst sentence to 1 for its best;
- ``near``: the share of the question's words (by IDF) within ``NEAR`` words of it in that sentence;
- ``rank``: 1 / the rank of its passage; ``passages``: the share of the top passages naming it;
- ``subject``: it is the title of its passage (what the passage is about);
- ``hop2``: its passage's subject is named by another top passage and not by the question — the
  second hop of a multi-hop question; ``hop1``: its passage's subject is named by the question;
- ``bridge``: it is named by passages of two articles and not by the question (the link itself);
- ``lead``: it is in its passage's first sentence; ``words``: its length (words / 4, at most 1);
- ``fits``: it has the form of what is asked: a person's name has two words or more, a place
  follows "in", "at", "from" or "near", a date holds a year, a number is not a year;
- ``order``: 1 / the rank of its best sentence among the question's sentences;
- ``relation``: as ``near``, over the question's words that are not in the names it holds (what it
  asks of them: "first president", "born");
- ``head``: the noun the question asks for ("which *band*", "what *currency*") is near it, or in
  the first sentence of its passage when it is the passage's subject ("... is an American rock band");
- ``cover``: the share of the question's words (by IDF) that a sentence holding it and its title
  hold, at best (near 1: a one-hop question, answered in that sentence);
- ``slot``: it stands where the question's "what" does (:func:`slot_words`, :func:`slot_fit`):
  "developed by what company" and "... developed by Studio 33", "Earl of which location" and
  "Earl of Northumbria", "who founded X" and "... founded by Y" or "Y founded ..."; a role
  after "as" for a question asking for one ("what position ... play?", "plays as a striker");
- ``described``: it is a name whose last word the question uses as a common noun, not the one
  it asks for ("Northern Limnology Association" for "Who was the first president of the
  association that ...?"): the thing the question describes, its bridge, rarely its answer;
- ``chain``: its passage is a second hop from the question: it is not about what the question
  names, but it names something that a passage about it names ("Who is the opposition leader in
  the country where Buyende is located?": "Buyende is a town in ... Uganda", then the passage on
  Uganda's Leader of Opposition), by how specific that link is;
- ``rehop``: the same second hop, read at the sentence: a sentence of a passage that is not about
  what the question names, naming such a link, holds this share of what the question asks of the
  link: its words but those of the names it holds and those that describe the bridge
  (:func:`bridge_words`: "the country where Buyende is located" asks nothing of Uganda; "the
  current opposition leader" does).

``relation`` and ``rehop`` leave the words that describe the bridge out.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wikigr.graph.extract import (
    CODE,
    CONCEPT,
    CONNECT,
    STOP_NAMES,
    Mention,
    keyword_entities,
    normalize,
    title_name,
)
from wikigr.retrieval.api_names import same_api, shown_name

if TYPE_CHECKING:
    from wikigr.retrieval.sentences import Unit
    from wikigr.retrieval.short_answer import Scored, Vocabulary

CANDIDATE_FEATURES = (
    "type",
    "sentence",
    "near",
    "rank",
    "passages",
    "subject",
    "hop2",
    "hop1",
    "bridge",
    "lead",
    "words",
    "fits",
    "order",
    "relation",
    "head",
    "cover",
    "slot",
    "described",
    "chain",
    "rehop",
)
DEFAULT_CANDIDATE_WEIGHTS = {  # fitted on the dev halves (bench/answers.py --tune: answers_tuning.json)
    "type": 3.195,
    "sentence": 3.827,
    "near": -0.223,
    "rank": 1.766,
    "passages": -0.714,
    "subject": 0.722,
    "hop2": 0.868,
    "hop1": -0.67,
    "bridge": -1.187,
    "lead": 0.435,
    "words": 1.758,
    "fits": 1.298,
    "order": -0.637,
    "relation": 0.785,
    "head": 0.858,
    "cover": -1.136,
    "slot": 2.942,
    "described": -2.343,
    "chain": 0.028,
    "rehop": 5.442,
}
NEAR = 10  # words either side of a candidate that count as near it
_TITLE_WORDS = 6  # a passage's title is a candidate where its sentences name it, if this short

DATE, NUMBER, PERSON, PLACE, NAME = "date", "number", "person", "place", "name"
_MONTH = (
    r"(?:January|February|March|April|May|June|July|August|September|October|November|December|"
    r"Jan\.|Feb\.|Aug\.|Sept?\.|Oct\.|Nov\.|Dec\.)"
)
_DATES = re.compile(
    rf"\b\d{{1,2}} {_MONTH},? \d{{3,4}}\b"  # 1 August 1973
    rf"|\b{_MONTH} \d{{1,2}},? \d{{3,4}}\b"  # August 1, 1973
    rf"|\b{_MONTH} \d{{3,4}}\b"  # August 1973
    rf"|\b\d{{1,2}} {_MONTH}\b|\b{_MONTH} \d{{1,2}}\b"  # 6 August, August 6: no year
    r"|\b(?:1\d{3}|20\d{2})s?\b"  # 1973, 1970s
    r"|\b\d{1,2}(?:st|nd|rd|th) century\b"  # 19th century
    r"|(?<![\d:.])\b\d{1,2}(?:[:.]\s?\d\d)?\s?(?:[ap]\.m\.|[ap]m\b|[AP]M\b)"  # a time: 3 a.m., 10:30 pm
)
_SCALE = (
    r"(?:thousand|million|billion|trillion|percent|per cent|%|years?|months?|days?|hours?|minutes?|"
    r"seconds?|times|people|inhabitants|residents|members|episodes|seasons|games|goals|points|"
    r"metres|meters|km|kilometres|kilometers|miles|feet|ft|inches|acres|hectares|square \w+|"
    r"pounds|kg|tonnes|tons|dollars|euros)"
)
_NUMBERS = re.compile(
    rf"(?:[$£€]\s?)?\b\d(?:[\d,]*\d)?(?:\.\d+)?(?:\s?{_SCALE})?(?![\w-])"
    rf"|\b(?:one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|twenty|thirty|forty|fifty|"
    rf"hundred)(?:\s{_SCALE})\b"
    r"|\b(?:once|twice|thrice)\b"
    r"|\b(?:\d+|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve)-time\b",  # a two-time winner
    re.I,
)
_PLACE_WORDS = r"[A-Z][\w.'’-]+(?:(?<![a-z]{2}\.) [A-Z][\w.'’-]+)*"  # St. Louis; not "Michigan. Also"
_PLACE_PAIR = re.compile(rf"\b({_PLACE_WORDS}), ({_PLACE_WORDS})\b")  # Columbus, Ohio
_LISTED_AFTER = re.compile(r",\s*(?:and\s+)?[A-Z]|\s+and\s+[A-Z]")
_LISTED_BEFORE = re.compile(r"[A-Z][\w.'’-]*,\s*$")
_NICKNAMED = re.compile(  # Nicholas Lofton "Nick" Hexum, Eddie "The Eagle" Edwards: one name
    r"\b[A-Z][\w.'’-]+(?: [A-Z][\w.'’-]+)* [\"“][A-Z][^\"“”]{0,30}[\"”] [A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*"
)
_NAME_NUMBER = re.compile(r"\b([A-Z][\w'’-]+(?: [A-Z][\w'’-]+)*) (\d{1,4})\b(?![.,]\d)")
_ASKS_NUMBER = re.compile(
    r"\bhow (many|much|long|old|far|tall|big|large|high|often)\b"
    r"|\bwhat (percentage|percent|number|amount|population|size|length|height|area)\b"
    r"|\bwhat (?:is|was|are|were) (?:[\w'’]+ ){1,2}(?:average|mean|median|total|annual|maximum|minimum|"
    r"population|number|amount|percentage|size|length|height|area)\b(?!\s+(?:one|cent(?:er|re)s?)\b)"
    r"|\b(?:area|zip|postal|dialling|dialing) codes?\b",
    re.I,
)
_ASKS_DATE = re.compile(
    r"^\s*when\b|\bwhen\W*$|\b(what|which|in what) (year|date|decade|century|month|day)\b"
    r"|\b(?:what|which|at what) time\b(?! (?:zone|period|frame|signature))",
    re.I,
)
_WHEN = re.compile(r"\bwhen (was|were|did|is|does|do|will)\b", re.I)
_ASKS_PERSON = re.compile(r"\b(who|whom|whose)\b", re.I)
_RELATIVE = re.compile(  # "the person who made ...", "the state where ...": a clause about a noun
    r"\b(?!(?:by|to|with|for|from|of|under|and|or|than|about|on|in|at)\s)[a-z]+[,]?\s+(?:who|whom|whose|where)\b"
    r"(?!\s*\??\s*$)"
)
_ASKS_PLACE = re.compile(
    r"\bwhere\b|\b(what|which|in what) (city|country|state|county|town|village|region|place|"
    r"continent|province|river|island|location|nation|district|area)\b",
    re.I,
)
_VERB = r"(?:is|was|are|were|did|does|do|has|had|can|could|will|would|the|a|an|of|in|on|to)\b"
_HEAD = re.compile(rf"\b(?:which|what|whose)\s+((?:(?!{_VERB})[\w-]+\s*){{1,2}})", re.I)
_ASKS_NAME = re.compile(r"\b(what|which|name)\b", re.I)
_HOW_TO = re.compile(
    r"\bhow (to|do|does|can|could|should|would|is|are)\b"
    r"|\bwhat is the (best|right|correct|proper) way\b",
    re.I,
)
_DESCRIBE = re.compile(  # asks what a thing is or does: a description, not a name
    r"^\s*what (?:does|do|did) .+? (?:do|mean|return|returns)\b"
    r"|^\s*what (?:is|are) (?:a |an |the )?[\w.()\[\]-]+\s*\??\s*$"
    # a list: "what are the numeric types?", "what levels are there?" (not "what are the names of
    # ...?", "how many are there?")
    r"|^\s*what (?:are|were) (?:the|some) (?!names?\b|first names?\b)"
    r"|^(?!\s*how (?:many|much)\b).*\bare there\s*\??\s*$"
    r"|^\s*what (?:is|are) the (?:difference|differences|purpose|point|use|meaning)s? (?:of|between)\b"
    r"|\bused for\s*\??\s*$"
    r"|^\s*(?:why|explain|describe)\b",
    re.I,
)


_QUESTION = re.compile(
    r"\?\s*$|\b(?:who|whom|what|when|where|which)\W*$"
    r"|^\s*(?:(?:in|at|on|by|for|from|to|during|of) )?(?:who|whom|whose|what|when|where|which|how)\b",
    re.I,
)


_OPTION = r"(?:[A-Z0-9][\w'’.&-]*)(?:\s+(?:of|the|de|and|&|[A-Z0-9\"“][\w'’.&\"”-]*))*"
_FIRST_OPTION = re.compile(rf"({_OPTION})\s*$")
_SECOND_OPTION = re.compile(rf"^\s*(?:the\s+|a\s+|an\s+)?({_OPTION})")
_WHICH = re.compile(r"^\s*(?:which|who|what|whose)\b", re.I)


def comparison(question: str) -> tuple[str, str] | None:
    """The two things a question compares ("Which band was formed first, The Exies or Circus
    Diablo?"), or None."""
    if not _WHICH.search(question) or " or " not in question:
        return None
    left, right = question.rsplit(" or ", 1)
    first = _FIRST_OPTION.search(left.rsplit(",", 1)[-1])
    second = _SECOND_OPTION.search(right)
    if first is None or second is None:
        return None
    a, b = first.group(1).strip(), second.group(1).strip()
    return (a, b) if a and b and normalize(a) != normalize(b) else None


QUESTION_WORDS = frozenset(
    "who whom whose what when where which why how many much did does do i is was were are".split()  # noqa: SIM905
)  # a question's own words: never in the sentence that answers it


_BRIDGE_CLAUSE = re.compile(
    r"\b([a-z]+)\s+(where|in which|of which|at which|which|that|who|whom|whose|containing)\s(.*)$"
)
_POSSESSIVE = re.compile(r"(?:[A-Z][\w.'-]*\s?)+'s?(?:\s+(?!of\b|in\b)[a-z]+){1,2}")
_NAME_RUN = r"(?:the\s+)?[A-Z][\w.'-]*(?:\s+(?:of|the|and|de|[A-Z][\w.'-]*))*"  # Fist Power, The X of Y
_VERB_THEN_NAME = re.compile(rf"(?!the\b)[a-z][\w-]*(?:\s+[a-z][\w-]*)*\s+{_NAME_RUN}")  # produced Fist Power
_NAME_FIRST = re.compile(_NAME_RUN)
_SLOT_WORD = re.compile(r"\b(?:what|which|whom|who|when|where|how)\b", re.I)


def bridge_words(question: str) -> str:
    """The part of ``question`` that describes its bridge, not what it asks of it: a clause
    about a noun that names something ("the country where Buyende is located", "the person who
    made The Oddventures of Mr. Cool") and a possessive ("Damerjog's country"); "" when there is
    none. A clause that holds the question's slot ("... that was formed in what year?") is none."""
    parts = []
    clause = _BRIDGE_CLAUSE.search(question)
    if (
        clause
        and clause.group(1).casefold() not in _NO_HEAD
        and not _SLOT_WORD.search(clause.group(3))
        and re.search(r"\b[A-Z]", clause.group(3))
    ):
        body = clause.group(3)
        # a verb before the name ("that produced Fist Power taken by ...", "containing Nugegoda
        # leave ..."): the clause ends with the name; else ("where Buyende is located") at the end
        verb_first = (_NAME_FIRST if clause.group(2) == "containing" else _VERB_THEN_NAME).match(body)
        end = clause.start(3) + verb_first.end() if verb_first else len(question)
        parts.append(question[clause.start() : end])
    parts += [m.group(0) for m in _POSSESSIVE.finditer(question)]
    return " ".join(parts)


def asked_tokens(vocabulary: Vocabulary, question: str) -> set[str]:
    """The tokens of ``question`` that an answer may hold (not "when", "who", "how many"...)."""
    return {t for t in vocabulary.tokens(question) if t not in QUESTION_WORDS}


def answer_kind(question: str) -> str | None:
    """What a factoid question asks for (DATE, NUMBER, PERSON, PLACE or NAME), or None for what
    is not a factoid question ("how do I ...", "what does X do?", "why ...", an instruction such as
    "sort a list by key")."""
    if not _QUESTION.search(question) or _DESCRIBE.search(question):
        return None
    if _ASKS_NUMBER.search(question):
        return NUMBER
    if _ASKS_DATE.search(question):
        return DATE
    if _HOW_TO.search(question):
        return None
    if _ASKS_PERSON.search(_RELATIVE.sub(" ", question)):
        return PERSON
    if _WHEN.search(question):
        return DATE
    if _ASKS_PLACE.search(_RELATIVE.sub(" ", question)):
        return PLACE
    if _ASKS_NAME.search(question):
        return NAME
    return None


@dataclass
class Occurrence:
    """Where a candidate is: a sentence, and its characters in the sentence's text."""

    scored: Scored
    start: int
    end: int


@dataclass
class AnswerCandidate:
    """A span that may answer the question, with its signals and score."""

    key: str  # normalize(text): what merges its occurrences
    text: str  # as first written
    type: str  # DATE, NUMBER or NAME
    occurrences: list[Occurrence] = field(default_factory=list)
    features: dict[str, float] = field(default_factory=dict)
    score: float = 0.0
    defined: bool = False  # a sentence opens with its definition ("os.path.isabs(path): Return ...")
    coded: bool = False  # the question asks for code, and it has the form asked ("which exception": KeyError)
    answered: bool = False  # ranked first: it answers outright (one-hop, a definition: rank_candidates)

    @property
    def best(self) -> Occurrence:
        """The occurrence in the best-scoring sentence (earliest passage on a tie)."""
        return max(self.occurrences, key=lambda o: (o.scored.score, -o.scored.source, -o.scored.unit.index))


_JOINING = re.compile(rf"(?:{CONNECT}\s+)+")  # the joining words of names: "of", "de", "and" ...
_CAPITALISED_RUN = re.compile(r"(?:\b[A-Z]\S*(?:\s+|$))+")
_ROW_WORDS = 5  # capitalised words a name runs together, at most: John F. Kennedy International Airport


def _table_row(text: str, span: str, start: int) -> bool:
    """Whether ``span`` (at ``start`` in ``text``) runs more capitalised words together than a
    name does, with no "of" or "and" between them: a table's row flattened into a sentence ("State
    Sport Lacrosse State Team Sport Massachusetts Basketball"), no name; not a quoted title."""
    quoted = start > 0 and text[start - 1] in "\"“'‘"
    return not quoted and any(len(m.group().split()) > _ROW_WORDS for m in _CAPITALISED_RUN.finditer(span))


def spans(
    text: str, title: str = "", code: bool = False, common: Container[str] = (), module: bool = False
) -> list[tuple[str, str, int, int]]:
    """The spans of ``text`` that may answer a question: (span, type, start, end); ``title``, the
    subject of its passage, is one where the text names it ("The Finnish markka was the currency
    of Finland": a name that is not all capitalised); with ``code``, its code identifiers too
    (``socket.getdefaulttimeout()``, ``sys.setrecursionlimit``: names for "which function"). A
    name is never part of a word ("Warns" in "assertWarns"), keeps its "New" ("New York"), and a
    name that opens the sentence loses its first word if that word is ``common`` (see
    :func:`common_words`: "Return True" is "True", "Press Control-C" is "Control-C"). With
    ``module`` (the question asks for a module, and ``title`` is one: "json"), the title is
    spelt as it spells it, and "this module" is it too."""
    found: list[tuple[str, str, int, int]] = []
    taken: list[tuple[int, int]] = []

    def add(span: str, kind: str, start: int, end: int) -> None:
        if any(a <= start < b or a < end <= b for a, b in taken) and kind != NAME:
            return
        found.append((span, kind, start, end))
        taken.append((start, end))

    for match in _DATES.finditer(text):
        add(match.group(0), DATE, match.start(), match.end())
    dates = list(taken)  # a name does not run into a date ("July 1921")
    for match in _NUMBERS.finditer(text):
        add(match.group(0), NUMBER, match.start(), match.end())
    for pattern in (_PLACE_PAIR, _NAME_NUMBER, _NICKNAMED):
        for match in pattern.finditer(text):
            if pattern is _PLACE_PAIR and (
                _LISTED_AFTER.match(text, match.end()) or _LISTED_BEFORE.search(text[: match.start()])
            ):
                continue  # two names of a list ("Sleepy Brown, Phantogram, T.I."), no place
            if not any(a < match.end() and match.start() < b for a, b in dates):
                found.append((match.group(0), NAME, match.start(), match.end()))
    for name, start in _names_at(text):
        if text[max(0, start - 4) : start] == "New " and (start == 4 or not text[start - 5].isalnum()):
            name, start = f"New {name}", start - 4  # the extractor drops "New" ("New in version 3.4")
        first, _, rest = name.partition(" ")
        if rest and first.casefold() in common and _OPENING.search(text[:start]):
            name, start = rest, start + len(first) + 1
            joined = _JOINING.match(name)  # "Much of Brittonic-controlled Britain": not "of ..."
            if joined and joined.end() < len(name):
                name, start = name[joined.end() :], start + joined.end()
        if not _table_row(text, name, start):
            found.append((name, NAME, start, start + len(name)))
    for name in codes_in(text) if code else ():
        start = text.find(name)
        if start >= 0:
            end = start + len(name) + (2 if text.startswith("()", start + len(name)) else 0)
            found.append((text[start:end], NAME, start, end))
    if title and len(title.split()) <= _TITLE_WORDS:
        named = re.search(rf"(?<!\w){re.escape(title)}(?!\w)", text, re.I)
        if named:  # a module as its page spells it, not as the sentence does ("JSON")
            found.append((title if module else named.group(0), NAME, named.start(), named.end()))
    if module:
        found += [(title, NAME, m.start(), m.end()) for m in _THIS_MODULE.finditer(text)]
    return found


def _names_at(text: str) -> list[tuple[str, int]]:
    """The names of ``text`` with where each starts; names joined by "and" where both have two
    words or more are two ("Robert Newton and Edward Chapman"; not "Bosnia and Herzegovina")."""
    out = []
    for name, _ in names_in(text):
        at = re.search(rf"(?<!\w){re.escape(name)}", text)
        if at is None:
            continue
        parts = name.split(" and ")
        if len(parts) > 1 and all(len(part.split()) > 1 for part in parts):
            offset = at.start()
            for part in parts:
                out.append((part, offset))
                offset += len(part) + len(" and ")
        else:
            out.append((name, at.start()))
    return list(dict.fromkeys(out))


@functools.lru_cache(maxsize=4096)
def _mentions(text: str) -> tuple[Mention, ...]:
    """The mentions of a sentence, remembered for the sentences of recent answers (the signals
    of a sentence and its candidates ask for its names and its code identifiers)."""
    return tuple(keyword_entities("", text))


def names_in(text: str) -> tuple[tuple[str, str], ...]:
    """The names of a sentence (not code, not noun phrases): (as written, key)."""
    return tuple((m.name, m.key) for m in _mentions(text) if m.type not in (CODE, CONCEPT))


def codes_in(text: str) -> tuple[str, ...]:
    """The code identifiers of a sentence, as written (without a call's "()"); not an
    abbreviation such as "e.g" or "U.S" (dotted single letters)."""
    return tuple(
        m.name for m in _mentions(text) if m.type == CODE and any(len(part) > 1 for part in m.name.split("."))
    )


_NOT_PEOPLE = frozenset(
    """association society company corporation university college school institute academy museum
    church party council club league team band group records studios studio network agency
    committee foundation bank hospital river mountain mountains lake island islands county state
    city kingdom republic empire war battle award awards prize film album song series show
    festival station airport bridge park street road building hall house center centre""".split()  # noqa: SIM905
)
_PLACE_BEFORE = re.compile(r"\b(in|at|from|near|of|to)\s*$", re.I)
_YEAR = re.compile(r"\b\d{3,4}\b")


_EXCEPTION = re.compile(r"\w*(?:Error|Exception|Warning|Interrupt|Exit|Iteration)")
_CALLABLE = re.compile(r"(?:\w+\.)*[a-z_]\w*(?:\(\))?")
_MODULE = re.compile(r"[a-z_][a-z0-9_]*(?:\.[A-Za-z_]\w*)*")  # json, os.path, xml.etree.ElementTree
_THIS_MODULE = re.compile(r"\b[Tt]his module\b")


def _fits(
    candidate: AnswerCandidate, asked: str, head: Container[str] = (), modules: Container[str] = ()
) -> bool:
    """Whether ``candidate`` has the form of what is asked (see the module's docstring); for
    "which exception" an exception's name, for "which function" or "method" a callable's, for
    "which module" one of the ``modules`` (those the passages are about: "json")."""
    if "exception" in head or "error" in head:
        return _EXCEPTION.fullmatch(candidate.text.rsplit(".", 1)[-1]) is not None
    if "function" in head or "method" in head:
        return _CALLABLE.fullmatch(candidate.text) is not None
    if "module" in head or "modules" in head:
        return candidate.text in modules
    if asked == PERSON:
        words = candidate.text.split()
        return candidate.type == NAME and len(words) >= 2 and words[-1].casefold() not in _NOT_PEOPLE
    if asked == PLACE:
        o = candidate.best
        return candidate.type == NAME and bool(_PLACE_BEFORE.search(o.scored.unit.text[: o.start]))
    if asked == DATE:
        return bool(_YEAR.search(candidate.text))
    if asked == NUMBER:
        return candidate.type == NUMBER and not re.fullmatch(r"(1\d|20)\d\d", candidate.text)
    return candidate.type == NAME


def _is_type(kind: str, asked: str) -> bool:
    if asked in (PERSON, PLACE, NAME):
        return kind == NAME
    return kind == asked


_PREPOSITIONS = frozenset("by of in for from into with to at on as under about after during".split())  # noqa: SIM905
_ARTICLES = frozenset("the a an his her its their".split())  # noqa: SIM905
_WH_SLOT = re.compile(r"\b(?:what|which|whose|who|whom|where)\b", re.I)
_NO_HEAD = (
    _PREPOSITIONS
    | _ARTICLES
    | frozenset(  # before "which" / "that", no noun: "to which actress?"
        "what which who whom when where how is was are were and or than".split()  # noqa: SIM905
    )
)
_WORD = re.compile(r"[\w'’-]+")
_LOWER_WORD = re.compile(r"\b[a-z][\w-]+")
_CODE_HEADS = frozenset(  # what "which ...?" asks for when it asks for a code identifier
    """function functions method methods module modules class classes exception exceptions error
    errors attribute attributes decorator decorators constant constants keyword argument
    parameter""".split()  # noqa: SIM905
)
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.\w+)*(?:\(\))?")


def _identifier(span: str) -> bool:
    """Whether ``span`` is written as code: snake_case, dotted, called, all lower case, or with
    a capital inside ("KeyError", "OSError"); not a word such as "None" or "Delete"."""
    return bool(_IDENTIFIER.fullmatch(span)) and (
        span.islower() or any(c in span for c in "_.(") or bool(re.search(r"[a-z][A-Z]|[A-Z]{2}", span))
    )


_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")


_RAISES = re.compile(  # "What does json.loads raise ...?", "what does int() raise ...": an exception
    r"^\s*(?i:what (?:does|do|did|will|would|can|could|might|may)) .*?"
    r"(?:\b[A-Za-z_]\w*\.[a-z_]\w*|\b\w+\(\)).*? (?i:raise|throw)\b"  # of code: not "the band", "the U.S."
)


def head_words(question: str) -> set[str]:
    """The words that say what ``question`` asks for ("which *exception* ...": exception; "what
    does X raise?": exception too), case-folded."""
    head = _HEAD.search(question)
    words = {w.casefold() for w in _WORD.findall(head.group(1))} if head else set()
    return words | {"exception"} if _RAISES.search(question) else words


def asks_code(question: str) -> bool:
    """Whether ``question`` asks for a code name: "which function ...", "what exception ...",
    "what does X raise?", "which module ..." (a question on documentation, though a factoid one)."""
    return bool(head_words(question) & _CODE_HEADS)


def common_words(texts: list[str]) -> set[str]:
    """The words ``texts`` write in lower case and never capitalise inside a sentence: "return"
    of "Return True if ..." and "... return it", not "new" where "in New York" shows a name."""
    lower = {w for text in texts for w in _LOWER_WORD.findall(text)}
    inside = {
        m.group(0).casefold()
        for text in texts
        for m in _CAPITALISED.finditer(text)
        if not _OPENING.search(text[: m.start()])
    }
    return lower - inside


def _stem(word: str) -> str:
    """A word's first five letters: what "developed" and "develops", "founded" and "founder" share
    (there is no stemmer without a new dependency)."""
    return word.casefold()[:5]


def slot_words(question: str) -> tuple[str, str]:
    """The words around the question's slot (its "what", "which", else "who"): the preposition
    before it and the stem of the word before that ("developed by what company" -> ("by",
    "devel")), or a stranded one at the end ("Who did she write the song for?" -> ("for",
    "song")); for "who VERB ..." ("", the verb's stem); else ("", "")."""
    matches = list(_WH_SLOT.finditer(question))
    match = next((m for m in matches if not m.group(0).casefold().startswith("who")), None)
    match = match or (matches[0] if matches else None)
    if match is None:
        return "", ""
    before = [w.casefold() for w in _WORD.findall(question[: match.start()])]
    if before and before[-1] in _PREPOSITIONS:
        prior = [w for w in before[:-1] if w not in _ARTICLES]
        return before[-1], _stem(prior[-1]) if prior else ""
    words = [w.casefold() for w in _WORD.findall(question[match.end() :])]
    if words and words[-1] in _PREPOSITIONS:  # stranded: "... translated into?"
        return words[-1], _stem(words[-2]) if len(words) > 1 else ""
    if match.group(0).casefold() == "who" and words and words[0] not in QUESTION_WORDS:
        return "", _stem(words[0])
    return "", ""


def slot_fit(text: str, start: int, end: int, slot: tuple[str, str]) -> float:
    """How well the words around a candidate fill the question's slot: the preposition just
    before it (0.5), the word before that preposition among its 4 words before (0.5), or for
    "who VERB" the verb just after it or "VERB by" just before it (1)."""
    prep, word = slot
    if not prep and not word:
        return 0.0
    before = [w.casefold() for w in _WORD.findall(text[max(0, start - 80) : start])[-5:]]
    while before and before[-1] in _ARTICLES:
        before.pop()
    score = 0.0
    if prep:
        if before and before[-1] == prep:
            score += 0.5
        if word and any(_stem(w) == word for w in before[-5:-1]):
            score += 0.5
        return score
    after = [w.casefold() for w in _WORD.findall(text[end : end + 60])[:3]]
    passive = len(before) > 1 and before[-1] == "by" and _stem(before[-2]) == word
    return 1.0 if passive or any(_stem(w) == word for w in after) else 0.0


_FILLER_STOP = frozenset(
    """that which who whom whose and or but as in on of for with by from to at into than is was are
    were be being been has have had it its this these those""".split()  # noqa: SIM905
)


def _lower_words(text: str, at: int) -> tuple[int, int] | None:
    """Where the lower-case words of ``text`` from ``at`` run, at most 3, up to a function word or
    a punctuation mark ("urban landscapes that ..."); None when there is none."""
    words: list[re.Match[str]] = []
    for w in re.finditer(r"[a-z][\w-]*|\S", text[at : at + 60]):
        if not w.group(0)[0].islower() or w.group(0) in _FILLER_STOP or len(words) == 3:
            break
        words.append(w)
    return (at + words[0].start(), at + words[-1].end()) if words else None


def fillers(text: str, slot: tuple[str, str]) -> list[tuple[str, str, int, int]]:
    """The lower-case words that fill the question's slot where a sentence words it as the
    question does: "depictions of what?" and "... his precisionist depictions of urban landscapes
    that ..." give "urban landscapes" (a name is a candidate anyway); at most 3 words, up to a
    function word or a punctuation mark."""
    prep, word = slot
    if not prep or not word:
        return []
    found = []
    pattern = (
        rf"\b{re.escape(word)}\w*\s+(?:[\w'’-]+\s+){{0,2}}?{re.escape(prep)}\s+"
        r"(?:(?:the|a|an|his|her|its|their)\s+)?"
    )
    for match in re.finditer(pattern, text, re.I):
        run = _lower_words(text, match.end())
        if run:
            found.append((text[run[0] : run[1]], NAME, *run))
    return found


_ROLE_HEADS = frozenset("position role genre occupation profession job instrument".split())  # noqa: SIM905
_AS_ROLE = re.compile(r"\b(?:as|known for)\s+(?:(?:a|an|the)\s+)?(?=[a-z])")


def role_fillers(text: str) -> list[tuple[str, str, int, int]]:
    """For a question asking for a role ("What position did he play?", "What genre ...?"): the
    lower-case words after "as" or "known for" ("plays as a central defender", "known as the lead
    vocalist", "known for aviation techno-thriller novels"), at most 3, up to a function word or
    a punctuation mark."""
    runs = [_lower_words(text, match.end()) for match in _AS_ROLE.finditer(text)]
    return [(text[run[0] : run[1]], NAME, *run) for run in runs if run]


def _defines(unit: Unit, start: int, name: str) -> bool:
    """Whether ``unit`` is the sentence after the definition line of ``name``, which opens it
    ("os.path.isabs(path): Return ...")."""
    return bool(unit.label) and start == 0 and same_api(shown_name(unit.label), name.removesuffix("()"))


_WORD_CAPITALISED = re.compile(r"[A-Z][a-z]+")  # "Return", not "NASA", "McCartney" nor code
_OPENING = re.compile(r"(?:^|[.!?:]\s)[\W_]*$")  # before a sentence's first word: quotes, bullets


def _only_capitalised_as_first_word(candidate: AnswerCandidate, subjects: Container[str]) -> bool:
    """Whether ``candidate`` is one word that is capitalised only because it opens its sentences
    ("Return ...", "Please ...", "Deprecated since ...": no name), and no passage's subject."""
    return (
        candidate.type == NAME
        and _WORD_CAPITALISED.fullmatch(candidate.text) is not None
        and candidate.key not in subjects
        and all(_OPENING.search(o.scored.unit.text[: o.start]) for o in candidate.occurrences)
    )


def _counts(text: str, end: int, asked: Container[str], vocabulary: Vocabulary) -> bool:
    """Whether the two words after a number are words of the question: what it counts ("divided
    into 4 congressional districts" for "how many congressional districts"), which a lone digit
    must show to be a candidate."""
    return any(t in asked for word in text[end:].split()[:2] for t in vocabulary.tokens(word))


def candidates(
    question: str,
    asked: str,
    scored: list[Scored],
    vocabulary: Vocabulary,
    articles: dict[int, tuple[str, str]],
    passages: int,
    code: bool = True,
) -> list[AnswerCandidate]:
    """The answer candidates of the ``scored`` sentences (their scores set), with their signals.
    ``articles`` gives each source's (article id, title); ``passages``: how many were read; with
    ``code``, a question asking for a name ("which function ...?") has the sentences' code
    identifiers among them."""
    question_norm = f" {normalize(question)} "
    question_tokens = asked_tokens(vocabulary, question)
    weights = {t: vocabulary.idf(t) for t in question_tokens}
    total = sum(weights.values()) or 1.0
    in_names = {t for m in keyword_entities("", question) for t in vocabulary.tokens(m.name)}
    relation = {t: w for t, w in weights.items() if t not in in_names}
    bridge_tokens = set(vocabulary.tokens(bridge_words(question)))
    relation = {t: w for t, w in relation.items() if t not in bridge_tokens} or relation
    head_match = _HEAD.search(question)
    head = set(vocabulary.tokens(head_match.group(1))) if head_match else set()
    relation_total = sum(relation.values()) or 1.0
    slot = slot_words(question)
    heads = head_words(question)
    described = {w.casefold() for w in _LOWER_WORD.findall(question)} - heads
    found: dict[str, AnswerCandidate] = {}
    keys: dict[str, str] = {}
    titles = {n: title_name(title) for n, (_, title) in articles.items()}
    common = common_words([s.unit.text for s in scored])
    modules = {title for title in titles.values() if _MODULE.fullmatch(title)}  # pages about a module
    code = code and asked == NAME
    code_only = code and bool(heads & _CODE_HEADS)  # "which exception ...": identifiers only
    asks_module = code_only and bool({"module", "modules"} & heads)
    asks_role = bool(_ROLE_HEADS & heads)
    role_at: set[tuple[int, int]] = set()  # where a role filler stands: it fills the slot
    for s in scored:
        page = titles.get(s.source, "")
        found_spans = spans(s.unit.text, page, code, common, asks_module and page in modules)
        shown = shown_name(s.unit.label) if code and s.unit.label else ""
        if shown and s.unit.text.startswith(shown):  # what the definition line defines: sort(*, key=None)
            found_spans.append((shown, NAME, 0, len(shown)))
        if asked == NAME and not code_only:
            found_spans += fillers(s.unit.text, slot)
            if asks_role:
                roles = role_fillers(s.unit.text)
                found_spans += roles
                role_at.update((id(s), start) for _, _, start, _ in roles)
        if asks_module and page in modules and not any(span == page for span, *_ in found_spans):
            found_spans.append((page, NAME, 0, 0))  # "which module": the one its page is about
        for span, kind, start, end in found_spans:
            if code_only and kind == NAME and not _identifier(span):
                continue
            key = keys.get(span)
            if key is None:
                key = keys[span] = normalize(span)
            lone = len(key) < 2  # a lone digit must count what the question counts
            if code_only and span.removesuffix("()") not in question:
                named = False  # "Which function sorts a list?": sort(), though the question says "sorts"
            else:
                named = f" {key} " in question_norm or (
                    kind == NAME and set(vocabulary.tokens(span)) <= question_tokens
                )
            if (
                (lone and not (kind == NUMBER and _counts(s.unit.text, end, question_tokens, vocabulary)))
                or key in STOP_NAMES
                or named
            ):
                continue
            candidate = found.setdefault(key, AnswerCandidate(key, span, kind))
            candidate.occurrences.append(Occurrence(s, start, end))
    subjects = {n: normalize(title) for n, title in titles.items()}
    titled = set(subjects.values())
    for key in [k for k, c in found.items() if _only_capitalised_as_first_word(c, titled)]:
        del found[key]
    if not found:
        return []
    named_by: dict[str, set[str]] = {}  # a candidate key -> the articles naming it
    for candidate in found.values():
        named_by[candidate.key] = {articles[o.scored.source][0] for o in candidate.occurrences}
    texts = {n: "" for n in articles}
    for s in scored:
        texts[s.source] += f" {s.norm} "
    hop2 = {
        n
        for n, subject in subjects.items()
        if subject
        and f" {subject} " not in question_norm
        and any(f" {subject} " in texts[m] for m in texts if articles[m][0] != articles[n][0])
    }
    hop1 = {n for n, subject in subjects.items() if subject and f" {subject} " in question_norm}
    asked_names = scored[0].asked.names
    specific = scored[0].asked.specific
    names_of = {s.source: s.passage_names for s in scored}
    first_hop = {articles[n][0] for n, names in names_of.items() if n in hop1 or names & asked_names}
    links = " | ".join(
        k
        for n, names in names_of.items()
        if articles[n][0] in first_hop
        for k in names
        if k not in asked_names
    )  # "Uganda" links to "Eastern Region of Uganda"
    linked: dict[str, bool] = {}

    def is_link(name: str) -> bool:
        if name not in linked:
            linked[name] = name not in asked_names and bool(re.search(rf"\b{re.escape(name)}\b", links))
        return linked[name]

    chain = {
        n: max((specific.get(k, 0.0) for k in names if is_link(k)), default=0.0)
        for n, names in names_of.items()
        if articles[n][0] not in first_hop
    }
    rehop = {  # a second-hop sentence naming a link: the share of what is asked of the link it holds
        id(s): sum(w for t, w in relation.items() if t in s.tokens) / relation_total
        for s in scored
        if articles[s.source][0] not in first_hop and any(is_link(k) for k in s.names)
    }
    tokens_of: dict[str, list[str]] = {}
    leads = {s.source: set(s.tokens) for s in scored if s.unit.index == 0}
    order = {id(s): n for n, s in enumerate(sorted(scored, key=lambda s: -s.score), 1)}
    scores = [s.score for s in scored]
    low, high = min(scores), max(scores)
    spread = (high - low) or 1.0
    for candidate in found.values():
        near = related = slotted = 0.0
        headed = False
        for o in candidate.occurrences:
            text = o.scored.unit.text
            filled = (id(o.scored), o.start) in role_at  # "plays as a central defender": the role asked
            slotted = max(slotted, 1.0 if filled else slot_fit(text, o.start, o.end, slot))
            window: set[str] = set()
            for word in text[: o.start].split()[-NEAR:] + text[o.end :].split()[:NEAR]:
                if word not in tokens_of:
                    tokens_of[word] = vocabulary.tokens(word)
                window.update(tokens_of[word])
            near = max(near, sum(w for t, w in weights.items() if t in window) / total)
            related = max(related, sum(w for t, w in relation.items() if t in window) / relation_total)
            headed = headed or bool(head & window)
        best = candidate.best.scored
        candidate.defined = any(
            _defines(o.scored.unit, o.start, candidate.text) for o in candidate.occurrences
        )
        candidate.coded = code_only and _fits(candidate, asked, heads, modules)
        sources = {o.scored.source for o in candidate.occurrences}
        is_subject = any(candidate.key == subjects.get(n) for n in sources)
        candidate.features = {
            "type": float(_is_type(candidate.type, asked) and (candidate.coded or not code_only)),
            "sentence": (best.score - low) / spread,
            "near": near,
            "rank": 1.0 / min(sources),
            "passages": len(sources) / passages,
            "subject": float(is_subject),
            "hop2": float(bool(sources & hop2)),
            "hop1": float(bool(sources & hop1)),
            "bridge": float(len(named_by[candidate.key]) > 1),
            "lead": float(any(o.scored.unit.index == 0 for o in candidate.occurrences)),
            "words": min(1.0, len(candidate.key.split()) / 4),
            "fits": float(_fits(candidate, asked, heads if code_only else (), modules)),
            "order": 1.0 / order[id(best)],
            "relation": related,
            "cover": max(o.scored.features["joint"] for o in candidate.occurrences),
            "slot": slotted,
            "described": float(candidate.type == NAME and candidate.text.split()[-1].casefold() in described),
            "chain": max(chain.get(n, 0.0) for n in sources),
            "rehop": max(rehop.get(id(o.scored), 0.0) for o in candidate.occurrences),
            "head": float(headed or (is_subject and bool(head & leads.get(min(sources), set())))),
        }
    return list(found.values())


def rank_candidates(
    found: list[AnswerCandidate], weights: dict[str, float], one_hop: float = 1.0
) -> list[AnswerCandidate]:
    """``found`` with their scores set, best first. The weights are fitted on multi-hop questions,
    whose answer is away from the question's words; so a candidate of the type asked for in a
    sentence that holds at least ``one_hop`` of the question (``cover``: a one-hop question,
    answered there) comes first, and so does one the best sentence defines (documentation:
    "os.path.isabs(path): Return True if path is an absolute pathname.") or, for a question that
    asks for code, one of the form asked in the best sentence ("which exception ...": "... this
    raises a KeyError exception")."""
    for c in found:
        c.score = sum(weights.get(f, 0.0) * c.features[f] for f in CANDIDATE_FEATURES)

    def answered(c: AnswerCandidate) -> bool:
        return c.features["type"] > 0 and (
            c.features["cover"] >= one_hop or ((c.defined or c.coded) and c.features["order"] == 1.0)
        )

    for c in found:
        c.answered = answered(c)
    return sorted(found, key=lambda c: (not c.answered, -c.score, c.best.scored.source, c.best.start))


_CLAUSE = re.compile(r"[,;:–—]\s+|\s+[–—-]\s+|\s\(|\)\s")


_WORD_AT = re.compile(r"\S+")


def _whole_words(text: str, start: int, end: int) -> tuple[int, int]:
    """``start`` and ``end`` moved out to the whitespace around the words they cut."""
    while start > 0 and not text[start - 1].isspace():
        start -= 1
    while end < len(text) and not text[end].isspace():
        end += 1
    return start, end


_SHORT_PART = 3  # clauses around a span shorter than a third of the words allowed are a scrap


def window(text: str, start: int, end: int, words: int) -> str:
    """The part of ``text`` around ``text[start:end]``, at most ``words`` words: the whole sentence
    if it is short enough, else the clauses around the span (cut at commas, semicolons and dashes)
    unless they come to less than a third of ``words`` ("A subclass of OSError"), else the words
    around it; a cut is marked with "…"."""
    if len(text.split()) <= words:
        return text
    cuts = [0, *(m.end() for m in _CLAUSE.finditer(text)), len(text)]
    lo = max(c for c in cuts if c <= start)
    hi = min(c for c in cuts if c >= end)
    piece = text[lo:hi]
    if len(piece.split()) <= words:  # grow clause by clause while it fits, after the span first
        while True:
            grown = False
            later = [c for c in cuts if c > hi]
            if later and len(text[lo : later[0]].split()) <= words:
                hi, grown = later[0], True
            earlier = [c for c in cuts if c < lo]
            if earlier and len(text[earlier[-1] : hi].split()) <= words:
                lo, grown = earlier[-1], True
            if not grown:
                break
    if len(piece.split()) > words or len(text[lo:hi].split()) * _SHORT_PART < words:
        # the words around the span: no clause fits, or those that do are a scrap of the room
        start, end = _whole_words(text, start, end)  # "OSError," and "(OSError)": one word each
        before = list(_WORD_AT.finditer(text, 0, start))
        after = list(_WORD_AT.finditer(text, end))
        room = max(0, words - len(text[start:end].split()))
        left = min(len(before), max(room // 2, room - len(after)))
        right = min(len(after), room - left)
        lo = before[len(before) - left].start() if left else start
        hi = after[right - 1].end() if right else end
        return ("… " if left < len(before) else "") + text[lo:hi] + (" …" if right < len(after) else "")
    piece = text[lo:hi].strip().rstrip(",;:–—(").rstrip()
    return ("… " if lo > 0 else "") + piece + (" …" if hi < len(text) else "")
