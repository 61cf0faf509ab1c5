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

A question may name its pack (``pack``: "pydocs" for packs/pydocs, "whole" for the pack of the
whole Python 3.11 docs that bench/docqa.py builds in bench/work/pydocs-whole; none: --pack) and,
for "What is the difference between A and B?", ``both``: names that must all appear as well
(bench/data/developer_questions_new.json, 40 questions written before any answer was read, half of
them on each pack). The questions of a pack that is not built are left out, and the output says
how many.

Arms (default profile, no LLM): `default` (as shipped), `one_per_page` (`page_score`'s
`first_page_passages` 1: one passage per page before any page's second, as before 2026-11-25),
`two_per_page` (`passages_per_page` 2: two passages of every page), `no_api_first` (the
synthesize stage's `api_first` off: a how-to answer is the best sentences, as before issue 40) and
`no_definitions` (the pack's definitions unused, `defined_top` and `defined_passages` 0: the
how-to answer as before 2026-11-29, on the same packs).
`bench/data/developer_questions_dev2.json`: 42 more questions (21 on each pack), a second dev set
written on 2026-11-29 to choose rules that generalise; its answers are read while tuning.
`bench/data/developer_questions_dev3.json`: 50 more (25 on each pack), a third dev set written on
2026-11-29 and committed alone before any answer to it was run; rules are chosen by the sum over the
three dev sets (a gain on one that loses on another is none).
Prints, per arm, the share of questions whose short answer names an expected name (anywhere:
``names_in_answer``; in what it states, without its lists of other names, "Also: ..." and "Also
possible: ...": ``names_in_lead``; in its first sentence: ``names_first``), and the share whose
sources' passages name one (``names_in_sources``: what the answer can quote), over the first half,
the second and all, and per pack, with the ``synthesize`` stage's time (p50, ms: the answer's
cost); writes bench/results/developer_questions.json (--out) with the load average.

    uv run python bench/developer_questions.py [--pack packs/pydocs] [--questions FILE] [--out FILE]
        [--arms default,no_api_first]
    uv run python bench/developer_questions.py --questions bench/data/developer_questions_new.json \
        --out bench/results/developer_questions_new.json
    uv run python bench/developer_questions.py --questions bench/data/developer_questions_dev3.json \
        --out bench/results/developer_questions_dev3.json
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
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
    "no_api_first": {"synthesize": {"api_first": False}},
    "no_definitions": {"synthesize": {"defined_top": 0, "defined_passages": 0}},
}
PACKS = {"pydocs": ROOT / "packs" / "pydocs", "whole": ROOT / "bench" / "work" / "pydocs-whole"}
_FIRST = re.compile(r".+?\s\[\d+\][.!?…]*")  # the first cited sentence


def names(text: str, q: dict[str, Any]) -> bool:
    """Whether ``text`` names one of the question's expected names, and all of its ``both``."""
    return any(name in text for name in q["expect"]) and all(name in text for name in q.get("both", ()))


def first_sentence(answer: str) -> str:
    found = _FIRST.match(answer)
    return found.group(0) if found else answer


def run(packs: dict[str, Path], asked: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per question of ``asked`` (in order), each asked of its pack."""
    rows: dict[int, dict[str, Any]] = {}
    for name, pack in packs.items():
        with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, options=options) as agent:
            for n, q in enumerate(asked):
                if q.get("pack", name) != name:
                    continue
                result = agent.query(q["question"])
                answer = result.answer or ""
                synthesize = sum(s["ms"] for s in result.trace["stages"] if s["stage"] == "synthesize")
                rows[n] = {
                    "names_in_sources": names(" ".join(s.text for s in result.sources), q),
                    "names_in_answer": names(answer, q),
                    "names_in_lead": names(asserted(answer), q),
                    "names_first": names(first_sentence(answer), q),
                    "words": len(answer.split()),
                    "synthesize_ms": synthesize,
                    "pack": name,
                }
    return [rows[n] for n in sorted(rows)]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    found = {
        **shares(rows),
        "answer_words_mean": round(sum(r["words"] for r in rows) / len(rows), 1),
        "synthesize_ms_p50": round(statistics.median(r["synthesize_ms"] for r in rows), 1),
    }
    by_pack = sorted({r["pack"] for r in rows})
    if len(by_pack) > 1:
        found["by_pack"] = {p: shares([r for r in rows if r["pack"] == p]) for p in by_pack}
    return found


def main() -> int:
    parser = argparse.ArgumentParser(
        description="developers' questions: does the offline answer name the API?"
    )
    parser.add_argument("--pack", type=Path, default=ROOT / "packs" / "pydocs")
    parser.add_argument("--questions", type=Path, default=QUESTIONS, help="a file of the same form")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "developer_questions.json")
    parser.add_argument("--arms", default=",".join(ARMS), help=f"comma-separated, of {', '.join(ARMS)}")
    args = parser.parse_args()
    arms = {arm: ARMS[arm] for arm in args.arms.split(",") if arm}
    if not arms or len(arms) != len([a for a in args.arms.split(",") if a]):
        parser.error(f"--arms: choose among {', '.join(ARMS)}")
    asked = json.loads(args.questions.read_text())["questions"]
    packs = {"": args.pack}
    if any("pack" in q for q in asked):
        packs = {name: PACKS[name] for name in sorted({q["pack"] for q in asked}, key=list(PACKS).index)}
    missing = {name: pack for name, pack in packs.items() if not (pack / "manifest.json").is_file()}
    for name, pack in missing.items():
        left = sum(q.get("pack", "") == name for q in asked)
        print(
            f"skipped {left} questions of pack {name!r}: no pack at {pack} "
            "(bench/docqa.py --whole --build-only builds it)"
        )
    packs = {name: pack for name, pack in packs.items() if name not in missing}
    asked = [q for q in asked if q.get("pack", "") in packs]
    result: dict[str, Any] = {
        **header(),
        "pack": ", ".join(str(p.relative_to(ROOT) if p.is_absolute() else p) for p in packs.values()),
        "skipped": {name: f"no pack at {pack}" for name, pack in missing.items()},
    }
    result["report"] = arms_report(
        "+".join(p.name for p in packs.values()),
        asked,
        arms,
        lambda options: run(packs, asked, options),
        summarize,
    )
    write_results(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
