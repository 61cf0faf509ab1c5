"""Answer candidates for a factoid question: what the question asks for (a date, a number, a
person, a place, a name: :attr:`wikigr.question.Question.answer_kind`), the spans of the top
passages' sentences that could be it (:mod:`wikigr.retrieval.spans`), and their signals. A
candidate the question names is left out, and so is one word capitalised only where it opens a
sentence ("Return ...", "Please ..."), and a lone digit that does not count what the question
counts.

Each candidate is scored by a weighted sum (the weights fitted on the dev halves of MuSiQue and
HotpotQA with ``bench/answers.py --tune``) of:

- ``type``: it is what the question asks for (a date or a time of day for "when" and "what time",
  a number for "how many", a name for "who", "where", "which" and "what"; for "which function"
  or "which exception", a code name of that form; for "which module", a module that a top
  passage's page is about — "json" for "json — JSON encoder and decoder" —, spelt as its page
  spells it and found where its sentences name it, say "this module", or, failing both, at the
  start of each of them);
- ``sentence``: the score of its best sentence (:mod:`wikigr.retrieval.sentence_scores`), from 0 for
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

import re
from collections.abc import Container
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from wikigr.graph.extract import STOP_NAMES, keyword_entities, normalize, title_name
from wikigr.question import (
    ARTICLES,
    CODE_HEADS,
    DATE,
    NAME,
    NUMBER,
    PERSON,
    PLACE,
    QUESTION_WORDS,
    WORD,
    Question,
    stem,
)
from wikigr.retrieval.api_names import same_api, shown_name
from wikigr.retrieval.spans import (
    LOWER_WORD,
    OPENING,
    ROLE_HEADS,
    common_words,
    fillers,
    role_fillers,
    spans,
)

if TYPE_CHECKING:
    from wikigr.retrieval.sentence_scores import Scored, Vocabulary
    from wikigr.retrieval.sentences import Unit

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


def asked_tokens(vocabulary: Vocabulary, question: str) -> set[str]:
    """The tokens of ``question`` that an answer may hold (not "when", "who", "how many"...)."""
    return {t for t in vocabulary.tokens(question) if t not in QUESTION_WORDS}


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


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*(?:\.\w+)*(?:\(\))?")


def _identifier(span: str) -> bool:
    """Whether ``span`` is written as code: snake_case, dotted, called, all lower case, or with
    a capital inside ("KeyError", "OSError"); not a word such as "None" or "Delete"."""
    return bool(_IDENTIFIER.fullmatch(span)) and (
        span.islower() or any(c in span for c in "_.(") or bool(re.search(r"[a-z][A-Z]|[A-Z]{2}", span))
    )


def slot_fit(text: str, start: int, end: int, slot: tuple[str, str]) -> float:
    """How well the words around a candidate fill the question's slot: the preposition just
    before it (0.5), the word before that preposition among its 4 words before (0.5), or for
    "who VERB" the verb just after it or "VERB by" just before it (1)."""
    prep, word = slot
    if not prep and not word:
        return 0.0
    before = [w.casefold() for w in WORD.findall(text[max(0, start - 80) : start])[-5:]]
    while before and before[-1] in ARTICLES:
        before.pop()
    score = 0.0
    if prep:
        if before and before[-1] == prep:
            score += 0.5
        if word and any(stem(w) == word for w in before[-5:-1]):
            score += 0.5
        return score
    after = [w.casefold() for w in WORD.findall(text[end : end + 60])[:3]]
    passive = len(before) > 1 and before[-1] == "by" and stem(before[-2]) == word
    return 1.0 if passive or any(stem(w) == word for w in after) else 0.0


def _defines(unit: Unit, start: int, name: str) -> bool:
    """Whether ``unit`` is the sentence after the definition line of ``name``, which opens it
    ("os.path.isabs(path): Return ...")."""
    return bool(unit.label) and start == 0 and same_api(shown_name(unit.label), name.removesuffix("()"))


_WORD_CAPITALISED = re.compile(r"[A-Z][a-z]+")  # "Return", not "NASA", "McCartney" nor code


def _only_capitalised_as_first_word(candidate: AnswerCandidate, subjects: Container[str]) -> bool:
    """Whether ``candidate`` is one word that is capitalised only because it opens its sentences
    ("Return ...", "Please ...", "Deprecated since ...": no name), and no passage's subject."""
    return (
        candidate.type == NAME
        and _WORD_CAPITALISED.fullmatch(candidate.text) is not None
        and candidate.key not in subjects
        and all(OPENING.search(o.scored.unit.text[: o.start]) for o in candidate.occurrences)
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
    analysis = Question.of(question)
    bridge_tokens = set(vocabulary.tokens(analysis.bridge_words))
    relation = {t: w for t, w in relation.items() if t not in bridge_tokens} or relation
    head = set(vocabulary.tokens(analysis.head)) if analysis.head else set()
    relation_total = sum(relation.values()) or 1.0
    slot = analysis.slot
    heads = analysis.head_words
    described = {w.casefold() for w in LOWER_WORD.findall(question)} - heads
    found: dict[str, AnswerCandidate] = {}
    keys: dict[str, str] = {}
    titles = {n: title_name(title) for n, (_, title) in articles.items()}
    common = common_words([s.unit.text for s in scored])
    modules = {title for title in titles.values() if _MODULE.fullmatch(title)}  # pages about a module
    code = code and asked == NAME
    code_only = code and bool(heads & CODE_HEADS)  # "which exception ...": identifiers only
    asks_module = code_only and bool({"module", "modules"} & heads)
    asks_role = bool(ROLE_HEADS & heads)
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
