"""The grid that chose the default profile's stage options on the multi-hop sets (dev half).

Runs the `auto` profile (retrieval only, no LLM) on MuSiQue-100 and HotpotQA-100 (the packs that
bench/multihop.py builds under bench/work/) once per option set: the defaults, then one option
changed at a time (bridge, ppr, pair, title_match). Prints R@2 / R@5 on the
dev half (questions 1-50: where the choice is made, by the sum of the four dev figures, ties to
the defaults) and the test half (51-100: reported, never used to choose), and writes
bench/results/multihop_grid.json with the load average.

    uv run python bench/multihop_grid.py
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import header
from multihop import DATASETS, WORK, recall

from wikigr.agent import KnowledgeGraphAgent

GRID: list[dict[str, Any]] = [
    {},
    *(
        {"bridge": {"seeds": s, "title": t, "entity": e}}
        for s in (3, 5)
        for t in (0.3, 0.5)
        for e in (0.6, 1.0)
    ),
    *({"ppr": {"passage_weight": w}} for w in (0.02, 0.035, 0.07, 0.1, 0.2)),
    *({"ppr": {"damping": d}} for d in (0.75, 0.9)),
    *({"ppr": {"candidates": c}} for c in (20, 50)),
    *({"bridge": {"added": a}} for a in (15, 60)),
    *({"bridge": {"max_df": m}} for m in (50, 200)),
    *({"pair": {"candidates": c}} for c in (8, 12, 20, 24)),
    *({"pair": {"min_gain": g}} for g in (0.02, 0.1)),
    *({"pair": {"entity": e}} for e in (0.0, 0.5, 1.5, 2.0)),
    *({"title_match": {"boost": b}} for b in (0.1, 0.4)),
]


def run(dataset: str, questions: list[dict[str, Any]], options: dict[str, Any]) -> dict[str, list[float]]:
    pack = WORK / f"{dataset}-100"
    with KnowledgeGraphAgent(
        pack, profile="auto", disable=["synthesize"], options=options, llm=None, top_k=10
    ) as agent:
        out = {}
        for half, part in (("dev", questions[:50]), ("test", questions[50:100])):
            r2 = r5 = 0.0
            for q in part:
                ranked = [s.url.split("#")[0] for s in agent.query(q["question"]).sources]
                r2 += recall(ranked, q["gold"], 2)
                r5 += recall(ranked, q["gold"], 5)
            out[half] = [round(100 * r2 / len(part), 1), round(100 * r5 / len(part), 1)]
    return out


def main() -> None:
    sets = {name: DATASETS[name]()[1] for name in ("musique", "hotpotqa")}
    result: dict[str, Any] = {**header(), "profile": "auto", "metric": "R@2, R@5 (%)", "rows": []}
    for options in GRID:
        row: dict[str, Any] = {"options": options}
        for name, questions in sets.items():
            row[name] = run(name, questions, options)
        row["dev_sum"] = round(sum(sum(row[n]["dev"]) for n in sets), 1)
        result["rows"].append(row)
        print(
            f"{json.dumps(options):70} dev {row['musique']['dev']} {row['hotpotqa']['dev']} "
            f"test {row['musique']['test']} {row['hotpotqa']['test']}  dev sum {row['dev_sum']}",
            flush=True,
        )
    best = max(result["rows"], key=lambda r: r["dev_sum"])  # the first (the defaults) on ties
    result["best_on_dev"] = best["options"]
    result["load_average_after"] = list(os.getloadavg())
    out = Path(__file__).resolve().parent / "results" / "multihop_grid.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"best on dev: {json.dumps(best['options'])}; wrote {out}")


if __name__ == "__main__":
    main()
