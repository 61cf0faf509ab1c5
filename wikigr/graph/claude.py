"""The skeleton's extraction with Claude: entities and facts as JSON, several chunks per call."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from wikigr import schema
from wikigr.graph.extract import NAME, Extraction, FactTriple, Mention
from wikigr.llm import LLM, LLMError, Usage

SYSTEM = (
    "You extract a knowledge graph from passages. For each passage, list the named entities and "
    "important concepts it mentions, and the facts it states as subject-predicate-object triples "
    "whose subject and object are entities from the list. Answer with JSON only: "
    '{"passages": [{"id": 1, "entities": [{"name": "...", '
    '"type": "person|organization|place|work|event|concept|other"}], '
    '"facts": [["subject", "predicate", "object"]]}]}'
)
_JSON = re.compile(r"\{.*\}", re.S)


class ClaudeExtractor:
    """Entities and facts from Claude, ``batch`` passages per request. A failed or malformed
    answer leaves those passages with their keyword entities only (recorded in ``errors``)."""

    name = "claude"
    multilingual = True  # it reads every language: the graph build gives it every document

    def __init__(self, llm: LLM, batch: int = 8, max_tokens: int = 2000, max_chars: int = 2000) -> None:
        self.llm = llm
        self.batch = batch
        self.max_tokens = max_tokens
        self.max_chars = max_chars
        self.usage = Usage()
        self.errors: list[str] = []

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        out: list[Extraction] = []
        for start in range(0, len(texts), self.batch):
            out.extend(self._batch(list(texts[start : start + self.batch])))
        return out

    def _batch(self, texts: list[str]) -> list[Extraction]:
        prompt = "\n\n".join(f"Passage {i + 1}:\n{t[: self.max_chars]}" for i, t in enumerate(texts))
        results = [Extraction() for _ in texts]
        try:
            completion = self.llm.complete(SYSTEM, [{"role": "user", "content": prompt}], self.max_tokens)
        except LLMError as exc:
            self.errors.append(str(exc))
            return results
        self.usage.add(completion)
        match = _JSON.search(completion.text)
        try:
            data: Any = schema.parse_json(match.group(0)) if match else None
        except schema.JSONError:
            data = None
        if not isinstance(data, dict) or not isinstance(data.get("passages"), list):
            self.errors.append("malformed extraction answer")
            return results
        for item in data["passages"]:
            if not isinstance(item, dict) or not isinstance(item.get("id"), int):
                continue
            index = item["id"] - 1
            if not 0 <= index < len(texts):
                continue
            text = texts[index]
            for entity in item.get("entities") or []:
                if isinstance(entity, dict) and isinstance(entity.get("name"), str):
                    kind = entity.get("type") if isinstance(entity.get("type"), str) else NAME
                    results[index].mentions.append(Mention(entity["name"], str(kind)))
            for fact in item.get("facts") or []:
                if isinstance(fact, list) and len(fact) == 3 and all(isinstance(x, str) for x in fact):
                    results[index].facts.append(FactTriple(fact[0], fact[1], fact[2], _sentence(text, fact)))
        return results


def _sentence(text: str, fact: list[str]) -> str:
    """The passage's sentence that names the fact's subject and object, else the subject's."""
    sentences = re.split(r"(?<=[.!?])\s+", text)
    subject, obj = fact[0].lower(), fact[2].lower()
    for sentence in sentences:
        low = sentence.lower()
        if subject in low and obj in low:
            return sentence.strip()
    for sentence in sentences:
        if subject in sentence.lower():
            return sentence.strip()
    return " ".join(fact)
