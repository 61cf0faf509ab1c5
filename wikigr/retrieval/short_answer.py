"""The short extractive answer: the few sentences of the retrieved passages that answer the
question, each citing its passage as ``[n]``, about ``answer_words`` words in all. No LLM.

The sentences (and list items; see :mod:`wikigr.retrieval.sentences`) of the top
``sentence_passages`` passages are scored by their signals (:mod:`wikigr.retrieval.sentence_scores`).
The answer is made of them in one of these ways (:func:`answer_from`): a factoid question
("who", "when", "how many", "which X"...) leads with the part of the sentence that holds its best
answer candidate, then those of the next candidates (:func:`compose`; the candidates and their
signals: :mod:`wikigr.retrieval.candidates`); a comparison ("which ..., A or B?") gets a sentence
on each of the two things (:func:`compare`); a how-to question leads with the API that does the
job (:func:`api_answer`, :mod:`wikigr.retrieval.api_lead`) and a question on the difference of two
things quotes both (:func:`differences`); anything else gets the best sentences. There, the
best sentence comes first (see :func:`select`); each next one gains ``follow`` × how well it
continues the answer (the question's words still missing, an entity the quoted passages introduce)
and loses ``same_source`` if its passage is quoted already; sentences are added while the word
budget lasts and their score stays above ``min_relative`` of the range. An enumeration (a global
question) gets one item per source page: its best sentence. A factoid question's sentences are
ranked with ``weights``, any other's (how to, what X does, a list; and a question that asks for
code, "which function ...") with ``open_weights``
(:meth:`AnswerOptions.weights_for`). The weights were fitted, and the options chosen, on the first
half of MuSiQue-100, HotpotQA-100 (``weights``) and the Python docs questions (``open_weights``)
(``bench/answers.py --tune``); ``bench/answers.py`` reports the other half.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Container

from wikigr.graph.extract import normalize, title_name
from wikigr.question import Question
from wikigr.retrieval.api_lead import (
    VERSION_NOTE,
    about,
    api_of,
    defines,
    differed,
    recommendation,
    recommends,
    runners_up,
)
from wikigr.retrieval.api_names import api_names, same_api, shown_name
from wikigr.retrieval.api_rank import Closeness, rank_apis
from wikigr.retrieval.candidates import AnswerCandidate, candidates, rank_candidates, window
from wikigr.retrieval.page_index import PageIndex
from wikigr.retrieval.sentence_scores import (
    POOL,
    AnswerOptions,
    Asked,
    Scored,
    add_dense,
    factoid_kind,
    how_to,
    preselect,
    rank,
    score_sentences,
    sentence_features,
    share,
)
from wikigr.retrieval.sentences import SCRAP_WORDS, strip_citations
from wikigr.retrieval.stage import Candidate, QueryState

NO_PASSAGE = "No passage in this pack matches the question."
_END_PUNCT = re.compile(r"([.!?]+)([\"'”’»)\]]*)$")


def clip(text: str, words: int) -> str:
    """``text`` cut to at most ``words`` words (marked with …)."""
    parts = text.split()
    if len(parts) <= words:
        return text
    return " ".join(parts[:words]).rstrip(",;:") + " …"


# a page's footnote mark after a word: "all cased characters [4] in", "... the default [2]." (not
# code: "[0] * 3", "returns [1, 2]")
_FOOTNOTE = re.compile(r"(?<=[A-Za-zА-Яа-яЁё]) \[\d{1,3}\](?=\s+[a-zа-яё]|[.,;:!?)]|$)")


def cite(text: str, source: int) -> str:
    """``text`` as a cited sentence: ``[source]`` before its final stop ("... in seconds [1]."),
    before the last mark of a title's own ("the FAQ entry How do I create a list? [2]."); a
    sentence that ends without one (a list item, one that introduced code with ":") gets a full
    stop, one cut with "…" keeps it. The page's own footnote marks ("[4]") are left out: they
    would read as citations of the answer's sources."""
    text = _FOOTNOTE.sub("", text)
    if text.endswith("…"):
        return f"{text} [{source}]"
    body = text.rstrip(":;,").rstrip()
    match = _END_PUNCT.search(body)
    if match:
        stops, after = match.group(1), match.group(2)
        kept = stops[:-1] if stops.endswith(".") and len(set(stops)) > 1 else ""  # "list?." : "list? [2]."
        return f"{body[: match.start()]}{kept} [{source}]{stops[len(kept) :]}{after}"
    return f"{body} [{source}]."


def _similar(x: frozenset[str], y: frozenset[str]) -> bool:
    return bool(x and y) and len(x & y) / min(len(x), len(y)) >= 0.8


def follow(s: Scored, chosen: list[Scored]) -> float:
    """How well ``s`` continues the sentences chosen so far (0-1): the share of the question's
    words they leave unanswered that it holds, and whether it (or its passage's title) names an
    entity that their passages introduce — the next hop of a multi-hop question."""
    return _follow(s, *_continuation(s.asked, chosen))


def _continuation(asked: Asked, chosen: list[Scored]) -> tuple[dict[str, float], frozenset[str]]:
    """What :func:`follow` needs of the sentences chosen so far: the question's words they leave
    unanswered (with their weights), and the names their passages introduce."""
    covered = frozenset().union(*(c.tokens for c in chosen))
    residual = {t: w for t, w in asked.weights.items() if t not in covered}
    links = frozenset().union(*(c.passage_names for c in chosen)) - asked.names
    return residual, links


def _follow(s: Scored, residual: dict[str, float], links: frozenset[str]) -> float:
    link = max((s.asked.specific.get(n, 0.0) for n in s.names & links), default=0.0)
    return (share(residual, set(s.tokens)) + link) / 2


_ASKS_VERSION = re.compile(  # "When was asyncio.timeout introduced?", "Is os.fork available on Windows?"
    r"\b(?:versions?|added|changed|deprecated|introduced|availab\w*|appear\w*|platforms?|since|when"
    r"|windows|unix|linux|macos|posix|\d+\.\d+)\b",
    re.I,
)


def select(
    scored: list[Scored],
    options: AnswerOptions,
    passage_words: int = 0,
    taken: list[Scored] | None = None,
    among: Callable[[Scored], bool] | None = None,
) -> list[Scored]:
    """The best sentences within the word budget (the best one, cut to it if it is longer), after
    those ``taken`` already, of those ``among`` allows (default: any). After the first, a sentence
    gains ``follow`` × :func:`follow` and, if its passage is quoted already, loses
    ``same_source``; none scoring below ``min_relative`` of the way from the lowest score to the
    best is taken. The budget is ``answer_words``, and at most ``max_share`` of the
    ``passage_words`` the sentences come from (but at least ``min_words``)."""
    chosen: list[Scored] = list(taken or [])
    if not scored:
        return chosen
    room = budget(options, passage_words)
    best, lowest = scored[0].score, min(s.score for s in scored)
    floor = lowest + options.min_relative * (best - lowest)
    left = [s for s in quotable(scored) if all(s is not c for c in chosen) and (among is None or among(s))]
    ranked: list[tuple[float, Scored]] = []
    while left:
        if not ranked:  # the values change only when a sentence is chosen
            ranked = _ranked(left, chosen, options)
        worth, pick = ranked.pop(0)
        left.remove(pick)
        if chosen and worth < floor:
            break
        if any(_similar(pick.words, c.words) or pick.unit.text in c.unit.rows for c in chosen):
            continue  # said already (a row: with the sentence that points at its table)
        its_rows = [c for c in chosen if c.unit.text in pick.unit.rows]  # quoted one by one
        kept = [c for c in chosen if c not in its_rows]
        if chosen and sum(_cost(c) for c in kept) + _cost(pick) > room:
            continue  # (the rows it would replace stay)
        if its_rows:  # the sentence and its table take the place of the first of its rows
            kept.insert(chosen.index(its_rows[0]), pick)
        else:
            kept.append(pick)
        chosen = kept
        ranked = []
        if sum(_cost(c) for c in chosen) >= room:
            break
    return chosen


def quotable(scored: list[Scored]) -> list[Scored]:
    """The best sentences (``POOL``) an answer takes a few of, best first: those that read on
    their own if there are any, and that are no version note unless the question asks about
    versions."""
    notes = bool(scored) and not _ASKS_VERSION.search(scored[0].asked.question)
    return [
        s for s in scored[:POOL] if s.unit.readable and not (notes and VERSION_NOTE.match(s.unit.text))
    ] or list(scored[:POOL])


def _cost(s: Scored) -> int:
    """The words quoting ``s`` takes: its own, and the name of the definition it describes."""
    return s.unit.words + bool(s.unit.owner_name)


def _ranked(left: list[Scored], chosen: list[Scored], options: AnswerOptions) -> list[tuple[float, Scored]]:
    """``left`` with the value of choosing each next, best first (equal values in their order, as
    max() would pick): its score, plus ``follow`` × :func:`follow`, minus ``same_source`` if its
    passage is quoted already."""
    if not chosen:
        values = [(s.score, s) for s in left]
    else:
        used = {c.source for c in chosen}
        continuations: dict[int, tuple[dict[str, float], frozenset[str]]] = {}
        values = []
        for s in left:
            gain = 0.0
            if options.follow:
                key = id(s.asked)  # one Asked per question: computed once per step
                if key not in continuations:
                    continuations[key] = _continuation(s.asked, chosen)
                gain = options.follow * _follow(s, *continuations[key])
            values.append((s.score + gain - options.same_source * (s.source in used), s))
    return sorted(values, key=lambda pair: -pair[0])


def budget(options: AnswerOptions, passage_words: int) -> int:
    """The answer's words, at most: ``answer_words``, and at most ``max_share`` of the
    ``passage_words`` it draws from (but at least ``min_words``)."""
    if not passage_words:
        return options.answer_words
    return min(options.answer_words, max(options.min_words, round(options.max_share * passage_words)))


def answer_candidates(question: str, scored: list[Scored], options: AnswerOptions) -> list[AnswerCandidate]:
    """The candidate answers of a factoid question in its ``scored`` sentences, best first (none
    for a question that is not a factoid one)."""
    kind = factoid_kind(question)
    if kind is None or not options.candidates or not scored:
        return []
    asked = scored[0].asked
    found = candidates(
        question, kind, scored, asked.vocabulary, asked.articles, len(asked.articles), options.code_names
    )
    return rank_candidates(found, options.candidate_weights, options.one_hop)


ALSO = "Also possible:"  # leads the list of the candidates named after the quoted ones


def asserted(answer: str) -> str:
    """``answer`` without its list of other candidates ("Also possible: ...") or other APIs
    ("Also: ..."): what it states."""
    if answer.startswith((ALSO, ALSO_API)):
        return ""
    return answer.split(f" {ALSO} ", 1)[0].split(f" {ALSO_API} ", 1)[0]


def compose(found: list[AnswerCandidate], options: AnswerOptions, passage_words: int) -> str:
    """The answer built around the best candidates: the part of its sentence that holds the best
    one, then those of the next ones (each cited) while the budget lasts and they score within
    ``candidate_margin`` of the best, at most ``max_candidates``; then, at most ``listed`` more
    candidates by name alone, each cited, in what is left of the budget ("Also possible: Studio 33
    [4], Codemasters [5]."): those of the type asked for (a date for "when"...), at most
    ``listed_when_sure`` when the best answers the question outright (a sentence holding the
    question, a definition: :func:`rank_candidates`). A quoted part that spells a code candidate
    otherwise (a module its page is about, where the sentence says "JSON" or "this module") is led
    by it ("json: The JSON produced by this module ...")."""
    room = budget(options, passage_words)
    sure = bool(found) and found[0].answered
    listed_at_most = min(options.listed, options.listed_when_sure) if sure else options.listed
    parts: list[str] = []
    listed: list[str] = []
    shown = ""
    keys: list[str] = []  # the candidates named so far ("re.search": not "search()" again)
    used = 0  # the answer's words so far
    for c in found[: options.max_candidates + listed_at_most]:
        if parts and c.score < found[0].score - options.candidate_margin:
            break
        if f" {c.key} " in shown or any(same_api(c.key, k) for k in keys):  # already quoted or listed
            continue
        left = room - used
        o = c.best
        if len(parts) < options.max_candidates:
            if parts and left < 6:
                break
            width = options.next_window_words if parts else options.window_words
            text = window(o.scored.unit.text, o.start, o.end, min(width, left))
            unit = o.scored.unit
            if unit.rows and len(unit.text.split()) < min(width, left):  # with the table it points at
                text = clip(unit.shown, min(width, left))
            quoted = as_quoted(o.scored, text)
            if c.coded and o.scored.unit.text[o.start : o.end] != c.text:  # a module: "JSON", "this module"
                quoted = f"{c.text}: {quoted}"
            parts.append(cite(quoted, o.scored.source))
        else:
            if not c.features.get("type"):  # named only if it is the kind of thing asked for
                continue
            text = c.text
            cost = len(text.split()) + 1 + (0 if listed else len(ALSO.split()))
            if cost > left:
                continue  # a shorter one may fit
            listed.append(f"{text} [{o.scored.source}]")
        used = len(" ".join(parts + listed).split()) + (len(ALSO.split()) if listed else 0)
        shown += f" {normalize(text)} "
        keys.append(c.key)
        if used >= room:
            break
    if listed:
        parts.append(f"{ALSO} {', '.join(listed)}.")
    return " ".join(parts)


COMPARATIVES = frozenset(
    """first last earlier earliest later latest older oldest younger youngest larger largest bigger
    biggest smaller smallest taller tallest higher highest longer longest shorter shortest more most
    less least better best""".split()  # noqa: SIM905
)  # how a comparison asks, never what its sentences say


def compare(things: tuple[str, str], scored: list[Scored], options: AnswerOptions, passage_words: int) -> str:
    """The answer to a question that compares two things: for each, the sentence that names it
    (or of a passage about it) holding most of what the question asks of them (its words but the
    two names: "founded first"), in half the budget, cited; "" when neither is found."""
    each = max(6, budget(options, passage_words) // 2)
    asked = scored[0].asked
    names = [set(asked.vocabulary.tokens(name)) for name in things]
    relation = {
        t: w for t, w in asked.weights.items() if not any(t in n for n in names) and t not in COMPARATIVES
    }
    parts: list[str] = []
    for name in things:
        key = normalize(name)
        words = set(key.split())
        about = [
            s for s in scored if words <= s.words or normalize(title_name(asked.articles[s.source][1])) == key
        ]
        if not about:
            continue
        best = max(about, key=lambda s: (share(relation, set(s.tokens)), s.score))
        text = best.unit.text
        tokens = asked.vocabulary.tokens
        at = next((m for m in re.finditer(r"\S+", text) if relation.keys() & set(tokens(m.group()))), None)
        # the part of a long sentence around what is asked ("founded in 1930")
        text = window(text, at.start(), at.end(), each) if at else clip(text, each)
        text = as_quoted(best, text)
        if not words <= set(normalize(text).split()):
            text = f"{name}: {text}"
        parts.append(cite(text, best.source))
    return " ".join(parts)


def definition_first(question: str, scored: list[Scored]) -> list[Scored]:
    """``scored`` with, first, the best sentence that shows the definition of an API the question
    names ("str.join(iterable): Return a string which is the concatenation ..." for "What does
    str.join do?"); as it is when there is none."""
    names = api_names(question)
    if names:
        for n, s in enumerate(scored):
            shown = shown_name(s.unit.text)
            if shown and any(same_api(shown, name) for name in names):  # first, with the best score
                return [dataclasses.replace(s, score=scored[0].score), *scored[:n], *scored[n + 1 :]]
    return scored


def answer_from(
    question: str,
    scored: list[Scored],
    options: AnswerOptions,
    passage_words: int,
    near: Closeness | None = None,
) -> str:
    """The short answer made of the ``scored`` sentences (best first): one sentence per thing a
    comparison names; for a factoid question, the parts of sentences that hold its best candidates
    (:func:`compose`); for a how-to question, the API that does the job first, then what matters,
    then the others (:func:`api_answer`; ``near``: how close the passages are to the question);
    else the best sentences (:func:`select`), the definition of an API the question names first
    (:func:`definition_first`). "" when there is no sentence."""
    things = Question.of(question).compared if options.candidates else None
    if things is not None and scored:
        answer = compare(things, scored, options, passage_words)
        if answer:
            return answer
    found = answer_candidates(question, scored, options)
    if found:
        return compose(found, options, passage_words)
    if scored and options.api_first:
        answer = differences(question, scored, options, passage_words)
        if not answer and how_to(question):
            answer = api_answer(scored, options, passage_words, near)
        if answer:
            return answer
    return quote(select(definition_first(question, scored), options, passage_words), options)


WHAT_MATTERS = 1  # sentences after the API that leads a how-to answer, at most
ALSO_API = "Also:"  # leads the list of the other APIs a how-to answer names


def api_answer(
    scored: list[Scored], options: AnswerOptions, passage_words: int, near: Closeness | None = None
) -> str:
    """The answer to a how-to question: the sentence that names the API that does the job — one
    near the best that recommends an API (:func:`wikigr.retrieval.api_lead.recommendation`), else
    the definition of the best API the passages define (:func:`wikigr.retrieval.api_rank.rank_apis`;
    ``near``: how close the passages are to the question) — then at most ``WHAT_MATTERS``
    sentences within the budget, of its own description first, then on no API; then the next APIs
    of the ranking whose merit (their score without their page's rank) is within ``also_margin`` of
    the best's, by name, in what is left of the budget ("Also: socket.setdefaulttimeout() [2].");
    "" when no sentence recommends an API and the passages define none in the question's words."""
    pool = quotable(scored)
    apis = rank_apis(scored, near, options.api_weights)
    best = next((a.scored for a in apis if a.on_task), None)
    first = recommendation(pool, scored, options.lead_margin) or best
    if first is None:
        return ""
    its = "" if recommends(first) else api_of(first)  # a recommendation is of another API than its owner
    # what its definition says of it first, then sentences on no API; more than a scrap ("most
    # Unix platforms.")
    chosen = [first]
    for on in (its, ""):
        if len(chosen) <= WHAT_MATTERS:

            def among(s: Scored, on: str = on) -> bool:
                return s.unit.words > SCRAP_WORDS and api_of(s) == on

            chosen = select(scored, options, passage_words, taken=chosen, among=among)[: 1 + WHAT_MATTERS]
    answer = quote(chosen, options, recommended=first if its != api_of(first) else None)
    left = budget(options, passage_words) - len(strip_citations(answer).split()) - 1  # "Also:"
    # not cut by the page's rank: another page's way too (none: a recommendation led, no API defined)
    merits = [a.score if options.also_with_page else a.merit for a in apis]
    cut = max(merits, default=0.0) - options.also_margin
    ranked = [(a.name, a.scored) for a, merit in zip(apis, merits, strict=True) if merit >= cut]
    others = runners_up(ranked, chosen)[: max(0, left // 2)]
    if others:
        answer += f" {ALSO_API} {', '.join(f'{name} [{source}]' for name, source in others)}."
    return answer


def differences(question: str, scored: list[Scored], options: AnswerOptions, passage_words: int) -> str:
    """The answer to "What is the difference between A and B?": a sentence that names both, if one
    is near the best, then the definition of each (else the best sentence that names it), in half
    the budget each; "" when the question asks no difference or a thing is found nowhere."""
    things = differed(question)
    if things is None:
        return ""
    pool = quotable(scored)
    each = max(6, budget(options, passage_words) // 2)
    chosen: list[Scored] = []
    both = next((s for s in pool if all(about(t, s) for t in things)), None)
    if both is not None and both.score >= pool[0].score - options.lead_margin:
        chosen.append(both)
    for thing in things:  # its definition, else the best sentence on it if none names it yet
        its = [s for s in pool if about(thing, s)]
        if not its:
            return ""
        pick = next((s for s in its if defines(thing, s)), None)
        if pick is None and not any(about(thing, c) for c in chosen):
            pick = its[0]
        if pick is not None and pick not in chosen:
            chosen.append(pick)
    return quote(chosen, dataclasses.replace(options, answer_words=each))


def quote(chosen: list[Scored], options: AnswerOptions, recommended: Scored | None = None) -> str:
    """The ``chosen`` sentences, each cited; a definition's name leads the next sentences that
    describe it only until it is quoted, and never one that ``recommended`` another API."""
    quoted: set[str] = set()  # the definitions quoted so far
    parts = []
    for s in chosen:
        text = clip(s.unit.shown, options.answer_words)
        text = as_quoted(s, text, quoted) if s is not recommended else text
        parts.append(cite(text, s.source))
        quoted.add(s.unit.label or s.unit.owner)
    return " ".join(parts)


def as_quoted(s: Scored, text: str, quoted: Container[str] = ()) -> str:
    """``text`` (of ``s``) as quoted: marked "… " where the passage's start cuts its sentence
    ("… or socket's handle."), which the reader would otherwise take for a whole one; and led by
    the name of the definition it goes on describing, unless one of ``quoted`` is that definition
    ("os.environ: … This mapping is captured the first time the os module is imported")."""
    if s.unit.owner_name and s.unit.owner not in quoted:
        return f"{s.unit.owner_name}: … {text.removeprefix('… ')}"
    return f"… {text}" if s.unit.fragment and not text.startswith("…") else text


def short_answer(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> str:
    """The short answer to ``state.question`` from ``passages`` (numbered from 1)."""
    if not passages:
        return NO_PASSAGE
    top = passages[: options.sentence_passages]
    passage_words = sum(len(c.text.split()) for c in top)
    near = closeness(state, top, options) if options.api_first and how_to(state.question) else None
    scored = score_sentences(state, passages, options)
    answer = answer_from(state.question, scored, options, passage_words, near)
    if not answer:  # passages without a sentence: their opening words
        return cite(clip(" ".join(passages[0].text.split()), options.answer_words), 1)
    return answer


def closeness(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> Closeness:
    """How close ``passages`` (numbered from 1) are to the question: the cosines of their stored
    vectors (one lookup, no model call); and how near each API's definition is, among the pack's
    ``defined_top`` definitions nearest the question (:mod:`wikigr.pack.definitions`): 1 for the
    nearest, down to 0 at ``defined_spread`` (0.1) less cosine."""
    found = state.ctx.store.chunk_similarities([c.chunk_id for c in passages], state.vector().tolist())
    by_source = {n: found[c.chunk_id] for n, c in enumerate(passages, 1) if c.chunk_id in found}
    defined: dict[str, float] = {}
    near = state.defined_near(options.defined_top)
    for _, name, cosine in near:  # best first: 1 for the nearest, 0 at ``defined_spread`` less
        defined.setdefault(name, max(0.0, 1.0 - (near[0][2] - cosine) / options.defined_spread))
    return Closeness(by_source, defined)


RELATED_ORIGIN = "multidoc"  # a passage listed after the top k, marked related (wikigr.agent)
_CITED = re.compile(r"\[(\d+)\]")


def page_passages(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> list[Candidate]:
    """For a how-to question (or one on a difference) on pages the retrieval ranked (``page_score``
    ran: its page index is loaded) and linked (``multidoc`` ran: these are listed after its
    passages), the passage of each of the top ``look_pages`` pages most similar to the question,
    and the next passage of one that ends with a definition's line (:func:`described_after`), when
    the passages do not hold them: the definition of the API that does the job is often another
    passage of a page the passages come from (``hashlib.file_digest`` beside the hash
    constructors); and, for a how-to question, the passages of the pack's ``defined_passages``
    definitions nearest it, within ``defined_margin`` of the nearest (``time.sleep`` for "pause my
    program for two seconds")."""
    question = state.question
    index = state.ctx.cache.get("page_index")
    if not options.look_pages or not passages or not (how_to(question) or differed(question)):
        return []
    if not isinstance(index, PageIndex) or RELATED_ORIGIN not in state.notes:
        return []  # listed as related passages are: only when multidoc lists them (not with K exactly)
    top = passages[: options.sentence_passages]
    pages = list(dict.fromkeys(c.article_id for c in top))
    best = index.best_chunks(pages[: options.look_pages], state.vector())
    best.update({after: 0.0 for c in top if (after := described_after(c))})
    if how_to(question):  # the passages of the pack's definitions nearest the question
        near = state.defined_near(options.defined_top)[: options.defined_passages]  # closeness's too
        best.update({c: s for c, _, s in near if s >= near[0][2] - options.defined_margin and c not in best})
    held = {c.chunk_id for c in passages}
    missing = {chunk: score for chunk, score in best.items() if chunk not in held}
    if not missing:
        return []
    return [Candidate.from_hit(hit, "page") for hit in state.ctx.store.chunk_details(missing)]


def described_after(passage: Candidate) -> str:
    """The id of the passage after ``passage`` in its section when ``passage`` ends with a
    definition's line ("re.match(pattern, string, flags=0)"), whose description is there; else
    ""."""
    lines = [line.strip() for line in passage.text.splitlines() if line.strip()]
    section, _, place = passage.chunk_id.rpartition(":")
    if not lines or not place.isdigit() or section != passage.section_id or not shown_name(lines[-1]):
        return ""
    return f"{section}:{int(place) + 1}"


def with_page_passages(
    answer: str, top: int, passages: list[Candidate], more: list[Candidate]
) -> tuple[str, list[Candidate]]:
    """``answer`` (citing the ``top`` first ``passages`` then ``more`` as [1], [2] ...) with only
    the passages of ``more`` it cites, numbered after all the ``passages``, and those passages."""
    cited = sorted({int(n) for n in _CITED.findall(answer) if top < int(n) <= top + len(more)})
    added = [more[n - top - 1] for n in cited]
    renumber = {n: len(passages) + i for i, n in enumerate(cited, 1)}

    def number(match: re.Match[str]) -> str:
        n = int(match.group(1))
        return f"[{renumber.get(n, n)}]"

    return _CITED.sub(number, answer), added


def where(candidate: Candidate) -> str:
    if candidate.section_title and candidate.section_title != candidate.article_title:
        return f"{candidate.article_title} › {candidate.section_title}"
    return candidate.article_title


def enumeration(state: QueryState, passages: list[Candidate], options: AnswerOptions) -> str:
    """A list for a global question: one item per source page, its best sentence, cited."""
    if not passages:
        return NO_PASSAGE
    wide = dataclasses.replace(options, sentence_passages=len(passages))
    by_source: dict[int, list[Scored]] = {}
    for scored in sentence_features(state, passages, wide):
        by_source.setdefault(scored.source, []).append(scored)
    weights = options.weights_for(state.question)
    if weights["dense"]:  # the few worth embedding, from each source
        each = max(2, options.max_sentences // max(1, len(by_source)))
        kept = [s for group in by_source.values() for s in preselect(group, weights, each)]
        add_dense(state, kept)
    else:  # nothing to embed (the default): every sentence competes
        kept = [s for group in by_source.values() for s in group]
    best: dict[int, Scored] = {}
    for scored in rank(kept, weights):
        best.setdefault(scored.source, scored)
    items: list[str] = []
    seen: set[str] = set()
    for n, c in enumerate(passages, 1):
        if c.article_id in seen:
            continue
        seen.add(c.article_id)
        top = best.get(n)
        if top is not None:
            text = as_quoted(top, clip(top.unit.shown, options.item_words))
        else:
            text = clip(" ".join(c.text.split()), options.item_words)
        items.append(f"- {where(c)} [{n}]: {text}")
    return "\n".join(items)
