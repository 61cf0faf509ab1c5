"""Multi-hop retrieval recall on MuSiQue-100 and HotpotQA-100 (../shared/data/multihop).

Builds a pack from each passage corpus (cached under bench/work/, rebuilt with --rebuild), then
runs every arm over the same questions in one run, with the same embedder:

- bm25: the pack's BM25 index alone;
- dense: exact cosine over the pack's chunk embeddings alone (the `vector` stage);
- fusion: the `vector` and `keyword` stages (convex fusion), nothing else;
- each profile (auto — the default —, baseline, balanced, max, graph, routed) of
  KnowledgeGraphAgent, retrieval only (no LLM). The packs are built with the entity graph (the
  default).

Recall@k as HippoRAG defines it: per question |gold passages in the top k| / |gold passages|,
averaged. Rules, thresholds and weights are chosen on questions 1-50 of each set (`dev`) and
reported on 51-100 (`test`): every arm is printed for both halves and for all 100. Writes
bench/results/multihop.json with the load average.

    uv run python bench/multihop.py [--datasets musique,hotpotqa] [--profiles auto,graph]
        [--enable literals,page_score] [--out bench/results/multihop.json]

With --enable, each profile runs a second time with those stages enabled (arm "PROFILE+STAGE...").
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.build.prepare import passage_url
from wikigr.pack.keyword import KeywordIndex
from wikigr.pack.pack import open_pack

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data" / "multihop"
WORK = ROOT / "bench" / "work"
KS = (1, 2, 5, 10)
HALVES = {"dev": slice(0, 50), "test": slice(50, 100), "all": slice(0, 100)}


def load_musique() -> tuple[Path, list[dict[str, Any]]]:
    folder = SHARED / "musique_train100"
    corpus = json.loads((folder / "musique_train_corpus.json").read_text())
    index = {(p["title"], p["text"]): i for i, p in enumerate(corpus)}
    questions = []
    for q in json.loads((folder / "musique_train.json").read_text()):
        gold = {
            passage_url(str(index[(p["title"], p["paragraph_text"])]))
            for p in q["paragraphs"]
            if p["is_supporting"]
        }
        questions.append({"id": q["id"], "question": q["question"], "gold": sorted(gold)})
    return folder / "musique_train_corpus.json", questions


def load_hotpotqa() -> tuple[Path, list[dict[str, Any]]]:
    folder = SHARED / "hotpotqa_train100"
    questions = []
    for q in json.loads((folder / "hotpotqa_train.json").read_text()):
        gold = {passage_url(title) for title, _ in q["supporting_facts"]}
        questions.append({"id": q["_id"], "question": q["question"], "gold": sorted(gold)})
    return folder / "hotpotqa_train_corpus.json", questions


DATASETS = {"musique": load_musique, "hotpotqa": load_hotpotqa}


def ensure_pack(name: str, corpus: Path, rebuild: bool) -> Path:
    out = WORK / name
    if rebuild or not (out / "manifest.json").is_file():
        start = time.perf_counter()
        report = build_pack(name, [], out=out, corpus=corpus, options=BuildOptions(fresh=True))
        print(
            f"built {name}: {report.manifest.stats.chunks} chunks in {time.perf_counter() - start:.1f}s",
            file=sys.stderr,
        )
    return out


def recall(ranked: list[str], gold: list[str], k: int) -> float:
    top = []
    for article in ranked:  # a passage may have several chunks: count each passage once
        if article not in top:
            top.append(article)
        if len(top) == k:
            break
    return len(set(top) & set(gold)) / len(gold)


def run_arm(name: str, questions: list[dict[str, Any]], rank: Any) -> dict[str, Any]:
    rows = []
    latencies = []
    for q in questions:
        start = time.perf_counter()
        ranked = rank(q)
        latencies.append((time.perf_counter() - start) * 1000)
        rows.append({k: recall(ranked, q["gold"], k) for k in KS})
    arm: dict[str, Any] = {"arm": name}
    for half, part in HALVES.items():
        chosen = rows[part]
        arm[half] = {f"R@{k}": round(100 * statistics.mean(r[k] for r in chosen), 1) for k in KS}
    arm["p50_ms"] = round(statistics.median(latencies), 2)
    arm["p95_ms"] = round(sorted(latencies)[int(0.95 * (len(latencies) - 1))], 2)
    return arm


def evaluate(
    dataset: str, profiles: list[str], rebuild: bool, enable: list[str] | None = None
) -> dict[str, Any]:
    corpus, questions = DATASETS[dataset]()
    pack_path = ensure_pack(f"{dataset}-100", corpus, rebuild)
    arms = []
    keyword = KeywordIndex.load(pack_path / "bm25")
    with KnowledgeGraphAgent(pack_path, profile="baseline", llm=None, top_k=10) as agent:
        store = agent.context.store
        chunk_articles = {r[0]: r[1] for r in store.rows("MATCH (c:Chunk) RETURN c.id, c.article_id")}
        arms.append(
            run_arm(
                "bm25", questions, lambda q: [chunk_articles[c] for c, _ in keyword.search(q["question"], 30)]
            )
        )
        embedder = agent.context.embedder
        arms.append(
            run_arm(
                "dense",
                questions,
                lambda q: [
                    h.article_id for h in store.search_chunks(embedder.embed([q["question"]])[0].tolist(), 30)
                ],
            )
        )
    arms_to_run = [("fusion", "baseline", ["keyword"])] + [(p, p, []) for p in profiles]
    arms_to_run += [("+".join([p, *enable]), p, enable) for p in profiles if enable]
    for name, profile, extra in arms_to_run:
        with KnowledgeGraphAgent(pack_path, profile=profile, enable=extra, llm=None, top_k=10) as agent:
            arms.append(
                run_arm(
                    name,
                    questions,
                    lambda q, a=agent: [
                        chunk_articles_from_url(s.url)
                        for s in a.query(q["question"], question_id=q["id"]).sources[:10]
                    ],
                )
            )
    manifest = open_pack(pack_path).manifest
    return {
        "dataset": dataset,
        "questions": len(questions),
        "passages": manifest.stats.articles,
        "pack_built": manifest.created_at,  # a cached pack: when it was built (--rebuild to build it again)
        "arms": arms,
    }


def chunk_articles_from_url(url: str) -> str:
    return url.split("#", 1)[0]


def main() -> int:
    parser = argparse.ArgumentParser(description="multi-hop retrieval recall")
    parser.add_argument("--datasets", default="musique,hotpotqa")
    parser.add_argument("--profiles", default="auto,baseline,balanced,max,graph,routed")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the packs")
    parser.add_argument(
        "--enable", default="", help="stages (comma-separated): each profile runs again with them enabled"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "multihop.json")
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"Error: {SHARED} not found (the shared data sets)", file=sys.stderr)
        return 1
    results = {
        "wikigr": __version__,
        "date": time.strftime("%Y-%m-%d"),
        "metric": "recall@k as HippoRAG defines it (per question |gold in top k| / |gold|, averaged), %",
        "halves": "dev = questions 1-50 (rules and weights chosen there), test = 51-100 (reported)",
        "cores": os.cpu_count(),
        "load_average_before": os.getloadavg(),
        "datasets": [
            evaluate(d, args.profiles.split(","), args.rebuild, [s for s in args.enable.split(",") if s])
            for d in args.datasets.split(",")
        ],
        "load_average_after": os.getloadavg(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for data in results["datasets"]:
        print(f"\n{data['dataset']}-{data['questions']} ({data['passages']} passages)")
        header = "".join(f"{half + ' R@' + str(k):>12}" for half in HALVES for k in (2, 5))
        print(f"{'arm':<10}{header}{'p50 ms':>10}{'p95 ms':>10}")
        for arm in data["arms"]:
            cells = "".join(f"{arm[half]['R@' + str(k)]:>12}" for half in HALVES for k in (2, 5))
            print(f"{arm['arm']:<10}{cells}{arm['p50_ms']:>10}{arm['p95_ms']:>10}")
    print(f"\nload average {results['load_average_before']} -> {results['load_average_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
