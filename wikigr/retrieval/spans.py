"""The spans of a passage's sentences that could answer a factoid question: the candidates'
text, before :mod:`wikigr.retrieval.candidates` gives them their signals. No model: names are the
capitalised spans and quoted titles of :func:`wikigr.graph.extract.keyword_entities` (with
"Columbus, Ohio" and "Studio 33" kept whole), dates, times of day and numbers come from regular
expressions, and so do the lower-case words that fill the question's slot ("depictions of what?":
"... depictions of urban landscapes") or, for a question asking for a role ("what position /
genre ..."), follow "as" or "known for" ("plays as a central defender"). Two names of a list
("Robert Newton and Edward Chapman", "Sleepy Brown, Phantogram") are two.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Container

from wikigr.graph.extract import CODE, CONCEPT, CONNECT, Mention, keyword_entities
from wikigr.question import DATE, NAME, NUMBER

TITLE_WORDS = 6  # a passage's title is a candidate where its sentences name it, if this short

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
        if rest and first.casefold() in common and OPENING.search(text[:start]):
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
    if title and len(title.split()) <= TITLE_WORDS:
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


_THIS_MODULE = re.compile(r"\b[Tt]his module\b")

LOWER_WORD = re.compile(r"\b[a-z][\w-]+")

_CAPITALISED = re.compile(r"\b[A-Z][a-z]+\b")


def common_words(texts: list[str]) -> set[str]:
    """The words ``texts`` write in lower case and never capitalise inside a sentence: "return"
    of "Return True if ..." and "... return it", not "new" where "in New York" shows a name."""
    lower = {w for text in texts for w in LOWER_WORD.findall(text)}
    inside = {
        m.group(0).casefold()
        for text in texts
        for m in _CAPITALISED.finditer(text)
        if not OPENING.search(text[: m.start()])
    }
    return lower - inside


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


ROLE_HEADS = frozenset("position role genre occupation profession job instrument".split())  # noqa: SIM905
_AS_ROLE = re.compile(r"\b(?:as|known for)\s+(?:(?:a|an|the)\s+)?(?=[a-z])")


def role_fillers(text: str) -> list[tuple[str, str, int, int]]:
    """For a question asking for a role ("What position did he play?", "What genre ...?"): the
    lower-case words after "as" or "known for" ("plays as a central defender", "known as the lead
    vocalist", "known for aviation techno-thriller novels"), at most 3, up to a function word or
    a punctuation mark."""
    runs = [_lower_words(text, match.end()) for match in _AS_ROLE.finditer(text)]
    return [(text[run[0] : run[1]], NAME, *run) for run in runs if run]


OPENING = re.compile(r"(?:^|[.!?:]\s)[\W_]*$")  # before a sentence's first word: quotes, bullets
