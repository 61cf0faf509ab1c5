"""Which sentence leads the answer to a how-to question on documentation: the API that does the
job, not a version note, not a spelling the documents advise against.

A how-to question ("How do I get the current time in UTC?", "read a CSV file") is answered by an
API — a function, class, method or option — and a developer reads the first sentence for its name.
The lead is:

1. a sentence near the best (within ``margin`` of its score, readable, no version note) that
   recommends an API ("the recommended way ... is by calling ``datetime.now(timezone.utc)``", "...
   is preferred", "use ... instead"), if one names an API the documents do not advise against
   (:func:`recommendation`);
2. else the definition of the best API the passages define (:mod:`wikigr.retrieval.api_rank`
   ranks them: how close its passage is to the question, its name and description in the
   question's words, ...);
3. else none (the answer is the best sentences, as for any other question).

An API is advised against (:func:`discouraged`) when a sentence prefers another over it
("This function is preferred over today() and utcnow()", "... instead of ...", "... rather than
...") or its own description says "Deprecated since version ...": it never leads. The runner-up
APIs (:func:`runners_up`) are the next ones of the ranking, other sources' first, named after the
answer ("Also: socket.setdefaulttimeout() [2]").

A question on the difference between two things ("What is the difference between re.match and
re.search?") names both (:func:`differed`): the answer gives a sentence on each.
"""

from __future__ import annotations

import re

from wikigr.graph.extract import normalize
from wikigr.question import QUESTION_WORDS
from wikigr.retrieval.api_names import api_names, called_name, ends_with, same_api, shown_name
from wikigr.retrieval.sentence_scores import Scored

RECOMMENDS = re.compile(
    r"\b(?:recommended|(?:is|are) preferred\b(?! over)|preferred (?:way|method|approach)|should (?:be )?used?"
    r"|better to use|use\b[^.;]{0,60}\binstead\b)",
    re.I,
)
_ADVISED_AGAINST = re.compile(r"\b(?:preferred over|instead of|rather than)\s+([^.;:]+)", re.I)
_DEPRECATED = re.compile(r"(?:^|: )Deprecated since version\b")
_DIFFERENCE = re.compile(
    r"\bdiffer(?:ence|ences)?\s+between\s+(?P<a>.+?)\s+and\s+(?P<b>.+?)\s*\??\s*$"
    r"|^\s*how\s+(?:does|do|is|are)\s+(?P<c>.+?)\s+differ(?:ent)?\s+from\s+(?P<d>.+?)\s*\??\s*$"
    r"|(?P<e>[\w.]+(?:\(\))?)\s+(?:vs\.?|versus)\s+(?P<f>[\w.]+(?:\(\))?)"
    # in Russian: "(В чём) разница между A и B?", "Чем A отличается от B?", "Чем отличается A от B?"
    r"|\b(?:разниц[аы]|различи[ея]|отличи[ея])\s+между\s+(?P<g>.+?)\s+и\s+(?P<h>.+?)\s*\??\s*$"
    r"|^\s*чем\s+(?P<i>.+?)\s+отлича(?:ется|ются)\s+от\s+(?P<j>.+?)\s*\??\s*$"
    r"|^\s*чем\s+отлича(?:ется|ются)\s+(?P<k>.+?)\s+от\s+(?P<l>.+?)\s*\??\s*$",
    re.I,
)
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.I)
VERSION_NOTE = re.compile(  # "Changed in version 3.6: Returned rows are now of type OrderedDict",
    r"(?:New in version|Changed in version|Deprecated since version|Availability:)"  # "Availability: Unix."
)  # never leads (a signature's "tempfile.mktemp(...): Deprecated since version 2.3: ..." defines it)
MAX_RUNNERS_UP = 4


def api_of(s: Scored) -> str:
    """The API whose definition ``s`` is or goes on describing ("" for none)."""
    return shown_name(s.unit.label or s.unit.owner) if (s.unit.label or s.unit.owner) else ""


def recommends(s: Scored) -> bool:
    """Whether ``s`` recommends an API ("the recommended way ... is by calling ...")."""
    return bool(RECOMMENDS.search(s.unit.text)) and bool(api_names(s.unit.text))


def discouraged(scored: list[Scored]) -> set[str]:
    """The APIs the sentences advise against: named after "preferred over", "instead of" or
    "rather than", or whose description opens with "Deprecated since version ..." (a note further
    on is of a parameter or a use: "Deprecated since version 3.9, removed in version 3.11: The
    optional parameter random." does not deprecate ``random.shuffle``)."""
    names: set[str] = set()
    for s in scored:
        for match in _ADVISED_AGAINST.finditer(s.unit.text):
            names.update(api_names(match.group(1)))
        if s.unit.label and _DEPRECATED.search(s.unit.text) and (api := api_of(s)):
            names.add(api)  # its own description, not a later note of its
    return names


def advised_against(name: str, bad: set[str]) -> bool:
    return bool(name) and any(same_api(name, b) for b in bad)


_PART = re.compile(r"[a-z0-9]+")


_NAME_PARTS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")  # TemporaryDirectory, file_digest, HTTPError


def named_for(name: str, question: str) -> float:
    """The share of the parts of an API's name (its last dotted part, cut at capitals and
    underscores) that spell the question's words (a part holds one, or starts as it does, or is
    the start of one): ``collections.Counter`` for "count" (1), ``tempfile.TemporaryDirectory``
    for "a temporary directory" (1), ``tempfile.TemporaryFile`` for it (0.5). The module's own
    name says nothing (``random.random`` for "a random integer": 0)."""
    qualifier, _, last = name.rpartition(".")
    parts = [p.casefold() for p in _NAME_PARTS.findall(last)]
    words = {w for w in _PART.findall(question.casefold()) if len(w) >= 3 and w not in QUESTION_WORDS}
    words -= set(_PART.findall(qualifier.casefold()))

    def spelt(part: str) -> bool:
        return any(
            w in part or part.startswith(w[:5]) or (len(part) >= 3 and w.startswith(part)) for w in words
        )

    return sum(map(spelt, parts)) / len(parts) if parts else 0.0


def recommendation(pool: list[Scored], scored: list[Scored], margin: float) -> Scored | None:
    """The sentence of ``pool`` (the readable best sentences, best first) within ``margin`` of the
    best that recommends an API the documents do not advise against ("the recommended way ... is
    by calling ``datetime.now(timezone.utc)``"), or None. ``scored``: all the sentences, read for
    the APIs advised against."""
    if not pool:
        return None
    bad = discouraged(scored)
    for s in pool:
        if s.score < pool[0].score - margin:
            break
        if recommends(s) and any(not advised_against(n, bad) for n in api_names(s.unit.text)):
            return s
    return None


def runners_up(ranked: list[tuple[str, Scored]], quoted: list[Scored]) -> list[tuple[str, int]]:
    """The next APIs of ``ranked`` (each with the sentence that defines it, best first) that the
    ``quoted`` sentences do not name: (how prose calls it, its source), at most
    ``MAX_RUNNERS_UP``; the best of each source the answer does not cite yet first (another page's
    way to do it), then the next best."""
    said = " ".join(s.unit.text for s in quoted)
    named = [api_of(s) for s in quoted] + api_names(said)
    left: list[Scored] = []
    for name, s in ranked:
        if not any(same_api(name, n) for n in named):
            named.append(name)
            left.append(s)
    cited = {s.source for s in quoted}
    first: list[Scored] = []
    for s in left:
        if s.source not in cited:
            cited.add(s.source)
            first.append(s)
    ordered = first + [s for s in left if s not in first]
    return [(called_name(s.unit.label), s.source) for s in ordered[:MAX_RUNNERS_UP]]


def differed(question: str) -> tuple[str, str] | None:
    """The two things a question asks the difference of ("re.match" and "re.search" in "What is
    the difference between re.match and re.search?"), or None."""
    match = _DIFFERENCE.search(question)
    if match is None:
        return None
    a, b = (g for g in match.groups() if g is not None)
    a, b = _ARTICLE.sub("", a.strip()), _ARTICLE.sub("", b.strip())
    return (a, b) if a and b and normalize(a) != normalize(b) else None


def defines(thing: str, s: Scored) -> bool:
    """Whether ``s`` is the definition of ``thing`` (``re.match``, ``list``)."""
    return bool(s.unit.label) and same_api(shown_name(s.unit.label), thing.removesuffix("()"))


def about(thing: str, s: Scored) -> bool:
    """Whether ``s`` defines ``thing`` (an API: ``re.match``, ``list``) or names it."""
    name = thing.removesuffix("()")
    if defines(thing, s):
        return True
    if api_names(thing):  # code: named as code, as fully ("re.match()"; not "re.Match", "match()")
        return any(ends_with(n, name) for n in api_names(s.unit.text))
    words = normalize(name).split()
    return bool(words) and f" {' '.join(words)} " in f" {s.norm} "
