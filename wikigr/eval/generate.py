"""``wikigr eval generate``: evaluation questions written by Claude from sampled sections.

Each question is drawn from one section, answerable from that section alone, with its ground truth
and its gold source (the section's article URL). Near-duplicates of existing questions (same
normalised text, or embedding similarity above ``DUPLICATE_SIMILARITY``) are dropped.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

from wikigr import schema
from wikigr.embed import pack_embedder
from wikigr.errors import UsageError
from wikigr.eval.questions import Question, load_questions, write_questions
from wikigr.pack import pack as layout
from wikigr.pack.pack import open_pack

DUPLICATE_SIMILARITY = 0.92
MIN_SECTION_WORDS = 12
SYSTEM = (
    "You write evaluation questions for a retrieval system. From the passage you are given, write "
    "ONE specific question that this passage answers and that someone could ask without seeing it "
    "(no 'in this passage', no 'according to the text'), and its short ground-truth answer taken "
    'from the passage. Reply with JSON only: {"question": "...", "answer": "..."}'
)
_JSON = re.compile(r"\{.*\}", re.DOTALL)


def _norm(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def generate_questions(ref: str | Path, n: int = 50, seed: int = 0) -> dict[str, Any]:
    from wikigr.llm import AnthropicLLM, Usage

    pack = open_pack(ref)
    llm = AnthropicLLM.from_env()
    if llm is None:
        raise UsageError("eval generate needs Claude: set ANTHROPIC_API_KEY")
    path = pack.path / layout.QUESTIONS_FILE
    existing = load_questions(path) if path.is_file() else []
    with pack.open_store() as store:
        sections = store.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(s:Section) "
            "RETURN a.url, a.title, s.title, s.anchor, s.text ORDER BY s.id"
        )
    sections = [s for s in sections if len(s[4].split()) >= MIN_SECTION_WORDS]
    if not sections:
        raise UsageError(f"pack {pack.name} has no section long enough to ask about")
    rng = random.Random(seed)
    sample = rng.sample(sections, min(len(sections), n * 2))  # spares for duplicates and bad replies
    embedder = pack_embedder(pack.manifest.embedder, f"pack {pack.name}")
    known_text = {_norm(q.question) for q in existing}
    known_vectors = list(embedder.embed([q.question for q in existing])) if existing else []
    taken = {q.id for q in existing}
    usage = Usage()
    added: list[Question] = []
    duplicates = failed = 0
    with llm:
        for url, title, section, _anchor, text in sample:
            if len(added) >= n:
                break
            prompt = f"Page: {title}\nSection: {section}\n\nPassage:\n{text[:4000]}"
            completion = llm.complete(SYSTEM, [{"role": "user", "content": prompt}], max_tokens=300)
            usage.add(completion)
            match = _JSON.search(completion.text)
            try:
                data = schema.parse_json(match.group(0)) if match else {}
                question, answer = str(data["question"]).strip(), str(data["answer"]).strip()
            except (ValueError, KeyError, TypeError):
                failed += 1
                continue
            if not question or not answer:
                failed += 1
                continue
            vector = embedder.embed([question])[0]
            if _norm(question) in known_text or any(
                float(vector @ v) >= DUPLICATE_SIMILARITY for v in known_vectors
            ):
                duplicates += 1
                continue
            number = len(taken) + 1
            while f"gen-{number}" in taken:
                number += 1
            qid = f"gen-{number}"
            taken.add(qid)
            added.append(
                Question(
                    id=qid,
                    question=question,
                    ground_truth=answer,
                    type="generated",
                    source="claude",
                    gold_sources=[url],
                )
            )
            known_text.add(_norm(question))
            known_vectors.append(vector)
    write_questions(path, existing + added)
    return {
        "path": str(path),
        "added": len(added),
        "duplicates": duplicates,
        "failed": failed,
        "usage": usage.to_json(),
    }
