"""One question, analysed once: what kind of question it is, what it asks for, its slot, its
names and content words.

:class:`Question` holds the analysis of one question; :meth:`Question.of` makes it once per
question text, and every part of the answer reads it from there (``QueryState.asked``):

- the router (:mod:`wikigr.retrieval.stages.router`) picks its retrieval by the question's
  ``kind`` (:func:`classify`): ``simple``, ``relation`` (how two named things relate),
  ``multi_hop`` (a chain: "the composer of the opera that ..."), ``global`` (enumerate or
  summarise: "list all ...", "what are the main ...") or ``aggregate`` ("how many ...", "the
  total ...") and scores its attempts by the question's ``content_words``;
- the extractive answer (:mod:`wikigr.retrieval.short_answer`, :mod:`wikigr.retrieval.candidates`)
  reads what a factoid question asks for (``answer_kind``: a date, a number, a person, a place or a
  name; None for "how do I ...", "what does X do?"), the two things it compares, the words that
  describe its bridge, its head words ("which *function*") and its slot ("developed by *what*");
- the OpenML planner (:func:`wikigr.openml.rules.plan`) reads which tool answers it (``intent``:
  Cypher, a count, a ranking of a measure, or a description) and the measure it names.

Rules only: no model, no network. The rules are the ones each part had; they moved here unchanged.
"""

from __future__ import annotations

import functools
import re

from wikigr.graph.extract import CODE, STOP_NAMES, keyword_entities, normalize

# What a factoid question asks for, for the extractive answer.
DATE, NUMBER, PERSON, PLACE, NAME = "date", "number", "person", "place", "name"

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
HEAD = re.compile(rf"\b(?:which|what|whose)\s+((?:(?!{_VERB})[\w-]+\s*){{1,2}})", re.I)
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


PREPOSITIONS = frozenset("by of in for from into with to at on as under about after during".split())  # noqa: SIM905
ARTICLES = frozenset("the a an his her its their".split())  # noqa: SIM905
_WH_SLOT = re.compile(r"\b(?:what|which|whose|who|whom|where)\b", re.I)
_NO_HEAD = (
    PREPOSITIONS
    | ARTICLES
    | frozenset(  # before "which" / "that", no noun: "to which actress?"
        "what which who whom when where how is was are were and or than".split()  # noqa: SIM905
    )
)
WORD = re.compile(r"[\w'’-]+")

CODE_HEADS = frozenset(  # what "which ...?" asks for when it asks for a code identifier
    """function functions method methods module modules class classes exception exceptions error
    errors attribute attributes decorator decorators constant constants keyword argument
    parameter""".split()  # noqa: SIM905
)

_RAISES = re.compile(  # "What does json.loads raise ...?", "what does int() raise ...": an exception
    r"^\s*(?i:what (?:does|do|did|will|would|can|could|might|may)) .*?"
    r"(?:\b[A-Za-z_]\w*\.[a-z_]\w*|\b\w+\(\)).*? (?i:raise|throw)\b"  # of code: not "the band", "the U.S."
)


def head_words(question: str) -> set[str]:
    """The words that say what ``question`` asks for ("which *exception* ...": exception; "what
    does X raise?": exception too), case-folded."""
    head = HEAD.search(question)
    words = {w.casefold() for w in WORD.findall(head.group(1))} if head else set()
    return words | {"exception"} if _RAISES.search(question) else words


def asks_code(question: str) -> bool:
    """Whether ``question`` asks for a code name: "which function ...", "what exception ...",
    "what does X raise?", "which module ..." (a question on documentation, though a factoid one)."""
    return bool(head_words(question) & CODE_HEADS)


def stem(word: str) -> str:
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
    before = [w.casefold() for w in WORD.findall(question[: match.start()])]
    if before and before[-1] in PREPOSITIONS:
        prior = [w for w in before[:-1] if w not in ARTICLES]
        return before[-1], stem(prior[-1]) if prior else ""
    words = [w.casefold() for w in WORD.findall(question[match.end() :])]
    if words and words[-1] in PREPOSITIONS:  # stranded: "... translated into?"
        return words[-1], stem(words[-2]) if len(words) > 1 else ""
    if match.group(0).casefold() == "who" and words and words[0] not in QUESTION_WORDS:
        return "", stem(words[0])
    return "", ""


# The question's kind, for the router.
KINDS = ("simple", "relation", "multi_hop", "global", "aggregate")
# Each cue in English, then in Russian: "сколько" (how many), "количество" (the number of),
# "перечисли" (list), "вывести список" (list ...), "каждого" is "each" more than "every" and "все"
# is "all" (neither a cue in English), "сравни" (compare), "который" (which, that).
_AGGREGATE = re.compile(
    r"^\s*(how many|how much|сколько)\b|\b(total|average|sum of|number of|count)\b"
    r"|\b(количеств\w*|числ[оа]|средн\w+|итого|в сумме|просуммир\w*|суммарн\w*|(?:по|под)сч[иеё]т\w*)\b",
    re.I,
)
_GLOBAL = re.compile(
    r"^\s*(list|enumerate|name all|summari[sz]e|give an overview|overview)\b"
    r"|\b(all the|every|main (themes|topics|ideas)|what are the (main|key|different|types))\b"
    r"|^\s*(перечисл\w*|назов\w* все|обзор|кратко (?:изложи|опиши|перескажи)\w*|(?:\w+\s+)?списо?к\w*)"
    r"|\b(основн\w+ (?:темы|идеи)|какие (?:бывают|есть) (?:типы|виды))\b",
    re.I,
)
_RELATION = re.compile(
    r"\b(relationship|relation|related|connection|difference|differ|compare|comparison|versus|vs\.?)\b"
    r"|\bbetween\b.+\band\b"
    r"|\b(связ[ьи]|связан\w*|отношени\w*|разниц\w*|различи\w*|отлич\w*|сравн\w*)\b|\bмежду\b.+\bи\b",
    re.I,
)
_KIND_RELATIVE = re.compile(
    r"\b(who|which|that|whose|where|when|whom|котор\w+|кто|где|когда|чей|чья|чь[её]|чьи)\b", re.I
)
_NESTED = re.compile(r"\b(of|in|by|for) the \w+ (of|who|which|that|where|whose)\b", re.I)
# "Corey Taylor's city of birth", "the author of Brand": a relation of a named thing, which the
# question then asks something about — a chain of two facts.
_RELATIONAL_NP = re.compile(
    r"\b[A-Z][\w.-]*(?:\s+[A-Z][\w.-]*)*'s\s+\w+"
    r"|\bthe\s+(?:\w+\s+){0,2}?of\s+(?:the\s+)?(?:\d+\s+)?[A-Z\"]"
)
_KIND_QUESTION_WORDS = {"what", "which", "who", "when", "where", "why", "how", "whose", "list", "name"}


def classify(question: str) -> tuple[str, str]:
    """The question's kind by rules, and the rule that decided."""
    if _AGGREGATE.search(question):
        return "aggregate", "counting or totalling words"
    if _GLOBAL.search(question):
        return "global", "enumeration or summary words"
    if _RELATION.search(question):
        return "relation", "relation or comparison words"
    body = question.split(None, 1)[1] if len(question.split()) > 1 else ""
    if _NESTED.search(question) or (len(_KIND_RELATIVE.findall(body)) >= 1 and len(question.split()) >= 10):
        return "multi_hop", "a nested or relative clause"
    if _RELATIONAL_NP.search(question):
        return "multi_hop", "a relation of a named thing (X's Y, the Y of X)"
    names = {m.key for m in keyword_entities("", question) if m.type != CODE}
    if len(names - _KIND_QUESTION_WORDS) >= 2:
        return "multi_hop", "several names"
    return "simple", "no multi-hop, relation, global or aggregate cue"


_CONTENT_WORD = re.compile(r"\w+")


def content_words(text: str) -> set[str]:
    """The words of ``text`` that carry its content: case-folded, not a stop word nor one letter."""
    return {w for w in _CONTENT_WORD.findall(text.casefold()) if w not in STOP_NAMES and len(w) > 1}


# What the OpenML tools read of a question (wikigr/openml/rules.py).
CYPHER_START = re.compile(r"^\s*(MATCH|OPTIONAL\s+MATCH|CALL|RETURN|WITH|UNWIND)\b", re.IGNORECASE)

MEASURE_WORDS: tuple[tuple[str, str], ...] = (
    (r"\bauc\b|area under|\broc\b", "auc"),
    (r"\bf1\b|f-measure|f measure|f-score", "f1"),
    (r"log[- ]?loss|cross[- ]entropy", "log_loss"),
    (
        r"runtime|run time|running time|duration|fastest|slowest|how long|training time|\bspeed\b|\bquick",
        "runtime_s",
    ),
    (r"accura|error rate", "accuracy"),
)
COUNT_WORDS = re.compile(
    r"how many (runs?|data ?sets?|algorithms?|flows?|tasks?|famil(y|ies)|frameworks?)", re.IGNORECASE
)
RANKING = re.compile(
    r"\bbest\b|\bworst\b|highest|lowest|\btop\b|\bmost\b|\bleast\b|compare|comparison|\bversus\b|\bvs\.?\b"
    r"|better|\bwins?\b|outperform|rank|median|\bmean\b|average|\bhow (well|good|does|do)\b|perform"
    r"|hardest|easiest|fastest|slowest|accura|\bbeat(s|en)?\b|\bstrong(er|est)?\b|\bweak(er|est)?\b"
    r"|\bpoor(er|est|ly)?\b|\bgood\b|\bwell\b|\bscor(e|es|ed|ing)\b",
    re.IGNORECASE,
)


# A similarity or description question is answered by semantic search, whatever else it holds:
# "algorithms similar to random forest", "datasets like credit-g", "alternatives to TPOT".
SIMILAR = re.compile(
    r"similar|\blike\b|\bresembl|related to|comparable to|\balternatives?\b|\bakin\b|analogous"
    r"|same (family|kind|type) as|close to",
    re.IGNORECASE,
)


class Question:
    """The analysis of one question, each part computed on first use and kept."""

    def __init__(self, text: str) -> None:
        self.text = text

    @staticmethod
    @functools.lru_cache(maxsize=1024)
    def of(text: str) -> Question:
        """The analysis of ``text``, made once for the questions of recent queries."""
        return Question(text)

    @functools.cached_property
    def classified(self) -> tuple[str, str]:
        """The question's kind (one of :data:`KINDS`) by rules, and the rule that decided."""
        return classify(self.text)

    @property
    def kind(self) -> str:
        return self.classified[0]

    @functools.cached_property
    def content_words(self) -> set[str]:
        return content_words(self.text)

    @functools.cached_property
    def answer_kind(self) -> str | None:
        return answer_kind(self.text)

    @functools.cached_property
    def compared(self) -> tuple[str, str] | None:
        return comparison(self.text)

    @functools.cached_property
    def bridge_words(self) -> str:
        return bridge_words(self.text)

    @functools.cached_property
    def head(self) -> str:
        """The words after its "which", "what" or "whose" ("which *rock band* ..."), or ""."""
        head = HEAD.search(self.text)
        return head.group(1) if head else ""

    @functools.cached_property
    def head_words(self) -> set[str]:
        return head_words(self.text)

    @property
    def asks_code(self) -> bool:
        return bool(self.head_words & CODE_HEADS)

    @functools.cached_property
    def slot(self) -> tuple[str, str]:
        return slot_words(self.text)

    # The OpenML tools' reading (wikigr.openml.rules.plan), on the question without its outer spaces.

    @functools.cached_property
    def stripped(self) -> str:
        return self.text.strip()

    @functools.cached_property
    def lower(self) -> str:
        return self.stripped.lower()

    @functools.cached_property
    def counted(self) -> re.Match[str] | None:
        """What a count question counts ("how many *datasets*"), as matched, or None."""
        return COUNT_WORDS.search(self.stripped)

    @functools.cached_property
    def measure(self) -> str | None:
        """The measure the question names (``auc``, ``f1``, ``log_loss``, ``runtime_s``,
        ``accuracy``), or None."""
        return next((m for pattern, m in MEASURE_WORDS if re.search(pattern, self.lower)), None)

    @functools.cached_property
    def similarity(self) -> str | None:
        """The words that ask for things similar to another ("similar to", "like"), or None."""
        similar = SIMILAR.search(self.lower)
        return similar.group(0) if similar else None

    @functools.cached_property
    def intent(self) -> str:
        """Which OpenML tool answers: ``cypher`` (the question is Cypher), ``count`` ("how many
        runs ..."), ``describe`` (a similarity asked, or no measure, ranking or comparison) or
        ``aggregate`` (a measure ranked or compared)."""
        if CYPHER_START.match(self.stripped):
            return "cypher"
        if self.counted:
            return "count"
        if self.similarity is not None or not (self.measure or RANKING.search(self.stripped)):
            return "describe"
        return "aggregate"
