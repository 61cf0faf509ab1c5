"""Evaluation questions: ``eval/questions.jsonl`` rows, validated on load, and importers from the
public multi-hop and doc QA formats."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikigr import schema
from wikigr.errors import UsageError

MAX_QUESTIONS_BYTES = 256 * 1024 * 1024
FORMATS = ("musique", "hotpotqa", "2wiki", "conala")


@dataclass
class Question:
    id: str
    question: str
    ground_truth: str = ""
    answer_aliases: list[str] = field(default_factory=list)
    type: str = ""
    difficulty: str = ""
    source: str = ""
    # URLs (page-level match; a #fragment is ignored), article titles, or passage ids
    gold_sources: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.id.strip():
            raise ValueError("id must not be empty")
        if not self.question.strip():
            raise ValueError("question must not be empty")

    def to_json(self) -> dict[str, Any]:
        return schema.dump(self)  # type: ignore[no-any-return]


def load_questions(path: Path) -> list[Question]:
    """Read a questions.jsonl file; a bad row is a UsageError naming its line."""
    if not path.is_file():
        raise UsageError(f"no questions file: {path}")
    if path.stat().st_size > MAX_QUESTIONS_BYTES:
        raise UsageError(f"{path} is larger than {MAX_QUESTIONS_BYTES // 2**20} MiB")
    try:
        text = schema.decode_utf8(path.read_bytes())
    except schema.JSONError as exc:
        raise UsageError(f"{path.name}: {exc}") from exc
    questions: list[Question] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(schema.json_lines(text), 1):
        if not line.strip():
            continue
        try:
            data = schema.parse_json(line)
        except schema.JSONError as exc:
            raise UsageError(f"{path.name} line {number}: {exc}") from exc
        if isinstance(data, dict) and isinstance(data.get("id"), int):
            data["id"] = str(data["id"])
        try:
            question = schema.load(Question, data)
        except schema.SchemaError as exc:
            raise UsageError(f"{path.name} line {number}: {exc}") from exc
        if question.id in seen:
            raise UsageError(
                f"{path.name} line {number}: id {question.id!r} repeats line {seen[question.id]}"
            )
        seen[question.id] = number
        questions.append(question)
    return questions


def write_questions(path: Path, questions: list[Question]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(
        "".join(json.dumps(q.to_json(), ensure_ascii=False) + "\n" for q in questions), encoding="utf-8"
    )
    tmp.replace(path)


def _musique(rows: list[dict[str, Any]]) -> list[Question]:
    out = []
    for row in rows:
        hops = len(row.get("question_decomposition") or []) or None
        gold = [p["title"] for p in row.get("paragraphs", []) if p.get("is_supporting")]
        out.append(
            Question(
                id=str(row["id"]),
                question=row["question"],
                ground_truth=str(row.get("answer", "")),
                answer_aliases=[str(a) for a in row.get("answer_aliases", [])],
                type=f"{hops}hop" if hops else "multihop",
                source="musique",
                gold_sources=list(dict.fromkeys(gold)),
            )
        )
    return out


def _hotpot_like(rows: list[dict[str, Any]], source: str) -> list[Question]:
    out = []
    for row in rows:
        gold = [fact[0] for fact in row.get("supporting_facts", [])]
        out.append(
            Question(
                id=str(row.get("_id") or row.get("id")),
                question=row["question"],
                ground_truth=str(row.get("answer", "")),
                type=str(row.get("type", "")),
                difficulty=str(row.get("level", "")),
                source=source,
                gold_sources=list(dict.fromkeys(gold)),
            )
        )
    return out


def _conala(rows: list[dict[str, Any]], docs_base: str) -> list[Question]:
    out = []
    for row in rows:
        gold = [docs_base + g.split("#", 1)[0] for g in row.get("gold_python311_html", [])]
        out.append(
            Question(
                id=str(row["question_id"]),
                question=row["nl"],
                ground_truth=str(row.get("cmd", "")),
                type="docqa",
                source="conala",
                gold_sources=list(dict.fromkeys(gold)),
            )
        )
    return out


def import_questions(
    path: Path, fmt: str, docs_base: str = "https://docs.python.org/3.11/"
) -> list[Question]:
    """Gold-labelled questions from a public data set file, as :class:`Question` rows.

    Gold sources: MuSiQue's supporting paragraphs and HotpotQA/2Wiki's supporting facts become
    article titles; CoNaLa's gold pages become URLs under ``docs_base``.
    """
    if fmt not in FORMATS:
        raise UsageError(f"unknown format {fmt!r} (known: {', '.join(FORMATS)})")
    if not path.is_file():
        raise UsageError(f"no such file: {path}")
    try:
        text = schema.decode_utf8(path.read_bytes())
        rows = (
            [schema.parse_json(line) for line in schema.json_lines(text) if line.strip()]
            if path.suffix == ".jsonl"
            else schema.parse_json(text)
        )
    except schema.JSONError as exc:
        raise UsageError(f"{path}: {exc}") from exc
    if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
        raise UsageError(f"{path}: expected a list of question objects")
    try:
        if fmt == "musique":
            questions = _musique(rows)
        elif fmt in ("hotpotqa", "2wiki"):
            questions = _hotpot_like(rows, fmt)
        else:
            questions = _conala(rows, docs_base)
    except (KeyError, TypeError, ValueError) as exc:
        raise UsageError(f"{path} does not look like {fmt}: {type(exc).__name__}: {exc}") from exc
    return _unique_ids(questions)


def _unique_ids(questions: list[Question]) -> list[Question]:
    """Data sets repeat an id for reworded questions: the second becomes ``ID#2`` and so on."""
    counts: dict[str, int] = {}
    for question in questions:
        counts[question.id] = counts.get(question.id, 0) + 1
        if counts[question.id] > 1:
            question.id = f"{question.id}#{counts[question.id]}"
    return questions
