"""synthesize: the answer. With Claude: an answer grounded in the numbered passages, citing them
as [n]; citations that point at no passage are removed (a source is never invented). Without an
API key (or when Claude fails and the caller asked for ``fallback``): the short extractive answer,
the sentences of the passages that answer the question, each citing its passage
(:mod:`wikigr.retrieval.short_answer`)."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass

from wikigr import lang
from wikigr.embed import ENGLISH_ONLY
from wikigr.llm import LLMError
from wikigr.retrieval.sentence_scores import AnswerOptions, asks_how
from wikigr.retrieval.short_answer import (
    RELATED_ORIGIN,
    asserted,
    enumeration,
    page_passages,
    short_answer,
    where,
    with_page_passages,
)
from wikigr.retrieval.stage import Candidate, QueryState, Stage, register

LOW_CONFIDENCE = (
    "I found little grounded context for this question in this pack; "
    "the closest sentences follow, but they may not answer it."
)
SYSTEM = (
    "You answer questions using only the numbered passages from a knowledge pack. Cite every "
    "claim with the passage number in square brackets, like [1] or [2][3]. If the passages do not "
    "contain the answer, say so plainly. Never cite a number that is not in the list. Be concise; "
    "keep code exact."
)
_CITATION = re.compile(r"\[(\d+)\]")


@dataclass
class SynthesizeOptions(AnswerOptions):
    """The short answer's options (:class:`AnswerOptions`), and Claude's."""

    max_passage_chars: int = 1500  # per passage in the prompt
    max_tokens: int = 800


def excerpt(text: str, limit: int) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(". ", 0, limit)
    return (text[: cut + 1] if cut > limit // 2 else text[:limit].rstrip()) + " …"


ENUMERATE = (
    " The question asks for an enumeration: answer with a list, one item per distinct thing, each cited."
)


def keep_valid_citations(answer: str, count: int) -> tuple[str, list[int]]:
    """Remove citations [n] with n outside 1..count; return the cleaned answer and what was removed."""
    removed: list[int] = []

    def fix(match: re.Match[str]) -> str:
        n = int(match.group(1))
        if 1 <= n <= count:
            return match.group(0)
        removed.append(n)
        return ""

    return _CITATION.sub(fix, answer), removed


def english_only(state: QueryState) -> str:
    """For a question in another language than the pack's (English) documents on a pack whose
    embedder reads English alone: the line that says so and what to do; else "". Its words match
    no passage and its vector is an English model's reading of them, so what is found is chance."""
    embedder = state.ctx.pack.manifest.embedder.name
    if not state.across or state.language == lang.ENGLISH or embedder not in ENGLISH_ONLY:
        return ""
    return (
        f"This pack's model ({embedder}) reads English only, and the question is in "
        f"{lang.name(state.language)}: ask in English, or build the pack with --embedder multilingual."
    )


def never_mentions(words: list[str], packs: int = 1) -> str:
    """The line that says which of the question's words the pack (or none of the ``packs``)
    mentions."""
    quoted = [f"“{w}”" for w in words]
    listed = quoted[0] if len(quoted) == 1 else f"{', '.join(quoted[:-1])} or {quoted[-1]}"
    return f"This pack never mentions {listed}." if packs == 1 else f"No pack searched mentions {listed}."


@register
class SynthesizeStage(Stage):
    name = "synthesize"
    summary = "answer with Claude citing [n], or extractively without an API key"
    Options = SynthesizeOptions

    def passages(self, state: QueryState) -> list[Candidate]:
        top = state.candidates[: state.top_k]
        extra = [c for c in state.candidates[state.top_k :] if c.origin == "multidoc"]
        return top + extra

    def extractive(self, state: QueryState, passages: list[Candidate], enumerate_style: bool) -> str:
        if enumerate_style and passages:
            return enumeration(state, passages, self.options)
        more = page_passages(state, passages, self.options)
        if not more:
            return short_answer(state, passages, self.options)
        read = passages[: self.options.sentence_passages] + more  # the page passages after the top ones
        wider = dataclasses.replace(self.options, sentence_passages=len(read))
        answer, added = with_page_passages(
            short_answer(state, read, wider), len(read) - len(more), passages, more
        )
        state.candidates.extend(dataclasses.replace(c, origin=RELATED_ORIGIN) for c in added)  # listed last
        state.note(self.name, page_passages=[c.chunk_id for c in added])
        return answer

    def run(self, state: QueryState) -> None:
        passages = self.passages(state)
        # "How do I count how many ...?" is answered by an API, not a list of pages, whatever the
        # router made of its count (on a document pack there are no tools that count)
        enumerate_style = state.notes.get("router", {}).get("answer_style") == "enumeration" and not asks_how(
            state.question
        )
        llm = state.ctx.llm
        if llm is None or not passages or state.low_confidence:
            state.answer_mode = "extractive"
            answer = self.extractive(state, passages, enumerate_style)
            if state.low_confidence:  # far from the question: no list of other names to guess among
                answer = asserted(answer) or answer
            other = english_only(state)
            caveat = " ".join(
                ([other] if other else [])
                + ([LOW_CONFIDENCE] if state.low_confidence else [])
                + ([never_mentions(state.absent, state.packs)] if state.absent else [])
            )
            state.answer = f"{caveat}\n\n{answer}" if caveat else answer
            reason = (
                "no API key" if llm is None else "low confidence" if state.low_confidence else "no passages"
            )
            state.note(self.name, mode="extractive", why=reason)
            return
        numbered = "\n\n".join(
            f"[{n}] {where(c)} ({c.citation_url})\n{excerpt(c.text, self.options.max_passage_chars)}"
            for n, c in enumerate(passages, 1)
        )
        shots = "".join(
            f"Example question: {e.question}\nExample answer: {e.answer}\n\n" for e in state.examples
        )
        prompt = f"{shots}Passages:\n\n{numbered}\n\nQuestion: {state.question}"
        try:
            completion = llm.complete(
                SYSTEM + (ENUMERATE if enumerate_style else ""),
                [{"role": "user", "content": prompt}],
                max_tokens=self.options.max_tokens,
            )
        except LLMError as exc:
            if not state.fallback:
                raise
            state.answer_mode = "extractive"
            state.answer = self.extractive(state, passages, enumerate_style)
            state.note(self.name, mode="extractive", why=f"Claude failed: {exc}")
            return
        if state.usage is not None:
            state.usage.add(completion)
        answer, removed = keep_valid_citations(completion.text.strip(), len(passages))
        state.answer = answer
        state.answer_mode = "claude"
        state.note(
            self.name,
            mode="claude",
            model=completion.model,
            input_tokens=completion.input_tokens,
            output_tokens=completion.output_tokens,
            cost_usd=round(completion.cost_usd, 6),
            removed_citations=removed,
        )
