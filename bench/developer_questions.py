"""Questions a developer asks of the example pack: does the offline answer name what they need?

`bench/data/developer_questions.json`: 46 questions a helper asked `packs/pydocs` while walking
through its offline answers ("How do I read a CSV file?", "What does subprocess.run return?",
"Is a Python dictionary ordered?"), each with what a right answer names — any one of a few API
names or words (`csv.reader` or `DictReader`; `CompletedProcess`; "insertion order"), matched as
case-sensitive substrings of the short answer. The questions were written before the answers they
measure were changed; the expected names were written afterwards, as the API a developer would be
told, and those that merely repeated the question ("What does zip() do?": ``zip(``) were then
replaced by what the answer must say ("in parallel"). Unlike CoNaLa's (bench/answers.py), these
ask for the usual API by its task, in a developer's words.

Arms (default profile, no LLM): `default` (as shipped), `one_per_page` (`page_score`'s
`first_page_passages` 1: one passage per page before any page's second, as before 2026-11-25) and
`two_per_page` (`passages_per_page` 2: two passages of every page). Prints, per arm, the share of
questions whose short answer names an expected name, over the first half, the second and all; writes
bench/results/developer_questions.json with the load average.

    uv run python bench/developer_questions.py [--pack packs/pydocs] [--questions FILE] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from _common import arms_report, header, shares, write_results

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.profiles import DEFAULT_PROFILE
from wikigr.retrieval.short_answer import asserted

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ROOT / "bench" / "data" / "developer_questions.json"
ARMS: dict[str, dict[str, Any]] = {
    "default": {},
    "one_per_page": {"page_score": {"first_page_passages": 1}},
    "two_per_page": {"page_score": {"passages_per_page": 2}},
}


def run(pack: Path, asked: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
    rows = []
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, options=options) as agent:
        for q in asked:
            answer = agent.query(q["question"]).answer or ""
            rows.append(
                {
                    "names_in_answer": any(name in answer for name in q["expect"]),
                    "names_in_lead": any(name in asserted(answer) for name in q["expect"]),
                    "words": len(answer.split()),
                }
            )
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    return {**shares(rows), "answer_words_mean": round(sum(r["words"] for r in rows) / len(rows), 1)}


def main() -> int:
    parser = argparse.ArgumentParser(
        description="developers' questions: does the offline answer name the API?"
    )
    parser.add_argument("--pack", type=Path, default=ROOT / "packs" / "pydocs")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="a file of the same form")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "developer_questions.json")
    args = parser.parse_args()
    asked = json.loads(args.questions.read_text())["questions"]
    result: dict[str, Any] = {
        **header(),
        "pack": str(args.pack.relative_to(ROOT) if args.pack.is_absolute() else args.pack),
    }
    result["report"] = arms_report(
        args.pack.name, asked, ARMS, lambda options: run(args.pack, asked, options), summarize
    )
    write_results(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
