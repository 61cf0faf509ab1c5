"""Doc QA retrieval: CoNaLa dev questions whose gold answers are pages of the Python 3.11 docs
(../shared/data/docqa), over the example pack `packs/pydocs` (59 pages of the Python 3.11 docs,
every gold page among them). R@k of the gold page(s): per question |gold pages among the top k
distinct pages| / |gold pages|, averaged, over the questions whose gold is all in the Python docs.

Arms, in one run with the same embedder: bm25 alone, dense alone, and each profile of
KnowledgeGraphAgent (retrieval only, no LLM). Prints a table, writes bench/results/docqa.json.

    uv run python bench/docqa.py [--pack packs/pydocs] [--profiles baseline,balanced,max,graph,routed]

The graph profiles need the pack's entity graph: when the pack has none, the bench copies it to
bench/work/pydocs-graph and builds the graph there (`wikigr pack graph`: same chunks and
embeddings, so every arm runs on the same passages).
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.graph.pack import rebuild_graph
from wikigr.pack.keyword import KeywordIndex
from wikigr.pack.pack import open_pack

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "docqa" / "conala_dev_python311doc.json"
PUBLIC = "https://docs.python.org/3.11/"
KS = (1, 5, 10)


def page(url: str) -> str:
    return url.split("#", 1)[0].removeprefix(PUBLIC)


def recall(ranked: list[str], gold: set[str], k: int) -> float:
    top: list[str] = []
    for p in ranked:
        if p not in top:
            top.append(p)
        if len(top) == k:
            break
    return len(set(top) & gold) / len(gold)


def run_arm(name: str, questions: list[dict[str, Any]], rank: Any) -> dict[str, Any]:
    rows, latencies = [], []
    for q in questions:
        start = time.perf_counter()
        ranked = rank(q["nl"])
        latencies.append((time.perf_counter() - start) * 1000)
        rows.append({k: recall(ranked, q["gold"], k) for k in KS})
    return {
        "arm": name,
        **{f"R@{k}": round(100 * statistics.mean(r[k] for r in rows), 1) for k in KS},
        "p50_ms": round(statistics.median(latencies), 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="doc QA retrieval recall")
    parser.add_argument("--pack", type=Path, default=ROOT / "packs" / "pydocs")
    parser.add_argument("--profiles", default="baseline,balanced,max,graph,routed")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "docqa.json")
    args = parser.parse_args()
    if not DATA.is_file():
        print(f"Error: {DATA} not found (the shared data sets)", file=sys.stderr)
        return 1
    if open_pack(args.pack).manifest.stats.entities == 0:
        copy = ROOT / "bench" / "work" / f"{args.pack.name}-graph"
        if not (copy / "manifest.json").is_file() or open_pack(copy).manifest.stats.entities == 0:
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(args.pack, copy)
            report = rebuild_graph(copy)
            print(f"built the entity graph of {copy}: {report.entities} entities", file=sys.stderr)
        args.pack = copy
    questions = []
    for q in json.loads(DATA.read_text()):
        if q["all_gold_in_python_docs"]:
            questions.append({"nl": q["nl"], "gold": {g.split("#", 1)[0] for g in q["gold_python311_html"]}})
    arms = []
    keyword = KeywordIndex.load(args.pack / "bm25")
    with KnowledgeGraphAgent(args.pack, profile="baseline", llm=None, top_k=10) as agent:
        store = agent.context.store
        chunk_page = {
            r[0]: page(r[1])
            for r in store.rows("MATCH (c:Chunk), (a:Article {id: c.article_id}) RETURN c.id, a.url")
        }
        pages = set(chunk_page.values())
        missing = sorted({g for q in questions for g in q["gold"]} - pages)
        arms.append(
            run_arm("bm25", questions, lambda text: [chunk_page[c] for c, _ in keyword.search(text, 50)])
        )
        embedder = agent.context.embedder
        arms.append(
            run_arm(
                "dense",
                questions,
                lambda text: [
                    chunk_page[h.chunk_id]
                    for h in store.search_chunks(embedder.embed([text])[0].tolist(), 50)
                ],
            )
        )
    for profile in args.profiles.split(","):
        with KnowledgeGraphAgent(args.pack, profile=profile, llm=None, top_k=10) as agent:
            arms.append(
                run_arm(
                    profile, questions, lambda text, a=agent: [page(s.url) for s in a.query(text).sources]
                )
            )
    results = {
        "wikigr": __version__,
        "date": time.strftime("%Y-%m-%d"),
        "pack": str(args.pack.relative_to(ROOT)) if args.pack.is_relative_to(ROOT) else str(args.pack),
        "pages": len(pages),
        "questions": len(questions),
        "gold_pages_missing_from_pack": missing,
        "metric": "recall@k of the gold pages among the top k distinct pages, %",
        "arms": arms,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(f"CoNaLa dev ({len(questions)} questions) over {results['pack']} ({len(pages)} pages)")
    print(f"{'arm':<10}" + "".join(f"{'R@' + str(k):>8}" for k in KS) + f"{'p50 ms':>10}")
    for arm in arms:
        print(f"{arm['arm']:<10}" + "".join(f"{arm['R@' + str(k)]:>8}" for k in KS) + f"{arm['p50_ms']:>10}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
