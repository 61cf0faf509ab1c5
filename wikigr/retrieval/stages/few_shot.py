"""few_shot: example question/answer pairs from the pack's eval/questions.jsonl, most similar
first — never the question being asked, nor one with the same id (no leakage into evaluation)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from wikigr import schema
from wikigr.embed_cache import EmbeddingCache, embed_cached
from wikigr.home import wikigr_home
from wikigr.pack import pack as layout
from wikigr.retrieval.stage import Example, QueryState, Skip, Stage, register

MAX_QUESTIONS_BYTES = 16 * 1024 * 1024


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


@dataclass
class FewShotOptions:
    n: int = 3
    max_pool: int = 500  # questions considered at most


@register
class FewShotStage(Stage):
    name = "few_shot"
    summary = "similar example Q/A pairs from eval/questions.jsonl (never the question asked)"
    Options = FewShotOptions

    def __init__(self, options: FewShotOptions | None = None) -> None:
        super().__init__(options)
        self._pool: tuple[list[Example], np.ndarray] | None = None

    def _load(self, state: QueryState) -> tuple[list[Example], np.ndarray]:
        if self._pool is None:
            path = state.ctx.pack.path / layout.QUESTIONS_FILE
            examples: list[Example] = []
            if path.is_file() and path.stat().st_size <= MAX_QUESTIONS_BYTES:
                text = path.read_text(encoding="utf-8", errors="replace")
                for number, line in enumerate(schema.json_lines(text), 1):
                    try:
                        row = schema.parse_json(line) if line.strip() else None
                    except schema.JSONError:
                        continue
                    if not isinstance(row, dict):
                        continue
                    question, answer = row.get("question"), row.get("ground_truth")
                    if isinstance(question, str) and isinstance(answer, str) and question and answer:
                        examples.append(Example(str(row.get("id", f"line-{number}")), question, answer))
                    if len(examples) >= self.options.max_pool:
                        break
            # Questions embedded by an earlier process are reused: a fresh `wikigr query` does not
            # embed the whole question file again.
            cache = EmbeddingCache(wikigr_home() / "cache" / "embeddings" / "questions", state.ctx.embedder)
            vectors = embed_cached(state.ctx.embedder, [e.question for e in examples], cache, queries=True)
            self._pool = (examples, vectors)
        return self._pool

    def run(self, state: QueryState) -> None:
        if state.ctx.llm is None:
            raise Skip("no Claude API key: examples only guide Claude's answer")
        examples, vectors = self._load(state)
        asked = _norm(state.question)
        allowed = [
            i
            for i, e in enumerate(examples)
            if _norm(e.question) != asked and (state.question_id is None or e.id != state.question_id)
        ]
        if not allowed:
            raise Skip("no example questions with answers in eval/questions.jsonl")
        similarity = vectors[allowed] @ state.vector()
        order = np.argsort(-similarity)[: self.options.n]
        state.examples = [examples[allowed[i]] for i in order]
        state.note(self.name, examples=[e.id for e in state.examples])
