"""Questions that name an API: does the answer lead with its definition?

A user of a documentation pack often names what they ask about: "What does str.join do?",
"What does functools.lru_cache do?". page_score's ``defined_names`` puts the chunk that shows the
named API's definition first, cited at its anchor, and the short answer leads with that
definition's sentence (wikigr/retrieval/stages/page_score.py, short_answer.definition_first).

Questions: "What does NAME do?" for link targets of the pack (the names its pages link to, such as
``str.join`` in ``stdtypes.html#str.join``) that are dotted names on a library page and that a
chunk of their page defines (a line showing the name: ``str.join(iterable)``) — sampled with a
fixed seed. NAME is written as users do: a method without its module (``socket.settimeout``
for ``socket.socket.settimeout``), anything else whole. Per question, with ``defined_names`` off
and on, the default profile, no LLM:

- ``page@1``: the first source is on the target's page;
- ``defines@1``: the first source shows the definition;
- ``anchor@1``: the first source is cited at the target's anchor (``...#str.join``);
- ``answer_leads``: the short answer's first sentence shows the definition;
- ``query_ms``: p50 and p95 of the whole query.

Nothing is chosen on these questions (the rule has no parameter); both halves are printed. Writes
bench/results/api_names.json with the load average.

    uv run python bench/api_names.py [--packs packs/pydocs,bench/work/pydocs-whole] [--questions 100]
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from _common import header, load

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.api_names import same_api, shown_name
from wikigr.retrieval.stages.page_score import PageIndex, defines

ROOT = Path(__file__).resolve().parent.parent
ARMS = {"off": False, "on": True}


def spelled(fragment: str) -> str:
    """How a user writes the name: a method (``module.Class.method``) as ``Class.method``'s last
    two parts when its class is written in lower case as the module (``socket.socket.settimeout``:
    ``socket.settimeout``), else whole."""
    parts = fragment.split(".")
    if len(parts) == 3 and parts[0] == parts[1]:
        return ".".join(parts[1:])
    return fragment


def questions(pack: Path, count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` link targets of ``pack`` defined on their library page, as questions."""
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        index = PageIndex.of(agent.context)
        store = agent.context.store
        targets = sorted(
            (page, fragment)
            for found in index.fragments.values()
            for page, fragment in found
            if "." in fragment and "/library/" in index.urls[page] and re.fullmatch(r"[\w.]+", fragment)
        )
        random.Random(seed).shuffle(targets)
        out: list[dict[str, Any]] = []
        for page, fragment in targets:
            rows = [i for i, p in enumerate(index.chunk_page.tolist()) if p == page]
            hits = store.chunk_details({index.chunk_ids[i]: 0.0 for i in rows})
            if not any(defines(hit.text, fragment) for hit in hits):
                continue  # no chunk shows it: nothing for the rule to find
            name = spelled(fragment)
            out.append(
                {
                    "question": f"What does {name} do?",
                    "name": name,
                    "fragment": fragment,
                    "page": index.urls[page],
                }
            )
            if len(out) >= count:
                break
    return out


def first_sentence(answer: str) -> str:
    match = re.match(r"(.+?)\s\[\d+\]", answer, re.S)
    return match.group(1) if match else answer


def run(pack: Path, asked: list[dict[str, Any]], on: bool) -> list[dict[str, Any]]:
    rows = []
    options = {"page_score": {"defined_names": on}}
    with KnowledgeGraphAgent(pack, llm=None, options=options) as agent:
        agent.query("warm up")
        for q in asked:
            start = time.perf_counter()
            result = agent.query(q["question"])
            ms = (time.perf_counter() - start) * 1000
            top = result.sources[0] if result.sources else None
            rows.append(
                {
                    "page@1": bool(top) and top.url.split("#", 1)[0] == q["page"].split("#", 1)[0],
                    "defines@1": bool(top) and defines(top.text, q["fragment"]),
                    "anchor@1": bool(top) and top.url.endswith("#" + q["fragment"]),
                    "answer_leads": same_api(shown_name(first_sentence(result.answer)), q["name"]),
                    "query_ms": ms,
                }
            )
    return rows


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {"questions": n}
    for key in ("page@1", "defines@1", "anchor@1", "answer_leads"):
        out[f"{key}_%"] = round(100 * sum(r[key] for r in rows) / n, 1)
    ms = sorted(r["query_ms"] for r in rows)
    out["query_ms_p50"] = round(statistics.median(ms), 1)
    out["query_ms_p95"] = round(ms[int(0.95 * (n - 1))], 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description="questions naming an API: the definition first?")
    parser.add_argument("--packs", default="packs/pydocs,bench/work/pydocs-whole")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "api_names.json")
    args = parser.parse_args()
    result: dict[str, Any] = {**header(), "packs": {}}
    for name in args.packs.split(","):
        pack = ROOT / name
        if not (pack / "manifest.json").is_file():
            print(f"skipped {name}: no pack there", file=sys.stderr)
            continue
        asked = questions(pack, args.questions)
        report: dict[str, Any] = {"questions": len(asked), "examples": [q["question"] for q in asked[:5]]}
        for arm, on in ARMS.items():
            rows = run(pack, asked, on)
            half = len(rows) // 2
            report[arm] = {
                "first_half": summarize(rows[:half]),
                "second_half": summarize(rows[half:]),
                "all": summarize(rows),
            }
            for part in ("first_half", "second_half", "all"):
                print(f"{name:24s} {arm:4s} {part:12s} {json.dumps(report[arm][part])}", flush=True)
        result["packs"][name] = report
    result["load_average_at_end"] = load()
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
