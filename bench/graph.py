"""Graph retrieval at scale: build cost, extraction speed, query latency, PPR sensitivity.

1. A 10,000-passage pack (bench/work/mixed-10k): the 2,884 distinct passages of MuSiQue-100 and
   HotpotQA-100 (../shared/data/multihop), then perturbed copies until there are 10,000 — copy k of
   a passage is titled "TITLE [k]" and has its sentences rotated by k, so it is a distinct passage
   with the same entities (the hardest case for the graph: every name has four times the mentions).
2. Offline extraction speed over its chunks: the keyword extractor on every chunk, spaCy on the
   skeleton (25%), from the build's own graph report; LLM calls (zero without a key).
3. Retrieval latency (no LLM) per profile (auto, the default, first) on that pack, 200 questions
   (MuSiQue-100 + HotpotQA-100), after one warm-up query (which loads the graph: reported
   separately); and a fresh `python -m wikigr query --profile graph` process, end to end.
4. PPR selection: R@5 of the graph profile on MuSiQue-100 and HotpotQA-100 for damping, home
   edges and passage weight, on the first half of each question set (dev: questions 1-50, where
   the defaults were chosen), the second half (test: 51-100, never used to choose) and all 100.

    uv run python bench/graph.py [--rebuild | --regraph] [--skip-sensitivity]   -> bench/results/graph.json

--regraph rebuilds only the entity graph of the cached pack, in place (`wikigr pack graph`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import multihop

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.graph.extract import keyword_entities
from wikigr.pack.pack import open_pack
from wikigr.pack.store import open_store

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
TARGET = 10_000


def mixed_corpus() -> list[dict[str, str]]:
    musique = json.loads((multihop.SHARED / "musique_train100" / "musique_train_corpus.json").read_text())
    hotpot = json.loads((multihop.SHARED / "hotpotqa_train100" / "hotpotqa_train_corpus.json").read_text())
    base: list[tuple[str, str]] = []
    seen: set[tuple[str, str]] = set()
    for p in musique:
        key = (p["title"], p["text"])
        if key not in seen:
            seen.add(key)
            base.append(key)
    for title, sentences in hotpot.items():
        key = (title, "".join(sentences))
        if key not in seen:
            seen.add(key)
            base.append(key)
    passages = [{"id": f"0-{i}", "title": t, "text": x} for i, (t, x) in enumerate(base)]
    k = 1
    while len(passages) < TARGET:
        for i, (title, text) in enumerate(base):
            if len(passages) == TARGET:
                break
            sentences = re.split(r"(?<=[.!?])\s+", text.strip())
            r = k % max(1, len(sentences))
            rotated = " ".join(sentences[r:] + sentences[:r])
            passages.append({"id": f"{k}-{i}", "title": f"{title} [{k}]", "text": rotated})
        k += 1
    return passages


def ensure_pack(rebuild: bool, regraph: bool) -> tuple[Path, dict[str, Any]]:
    out = WORK / "mixed-10k"
    info = WORK / "mixed-10k.build.json"
    if regraph and not rebuild and (out / "manifest.json").is_file() and info.is_file():
        from wikigr.graph.pack import rebuild_graph

        data = json.loads(info.read_text())
        data["graph"] = rebuild_graph(out).to_json()
        data["graph_rebuilt_in_place"] = True
        info.write_text(json.dumps(data))
    if rebuild or not (out / "manifest.json").is_file() or not info.is_file():
        corpus = WORK / "mixed-10k.corpus.json"
        passages = mixed_corpus()
        corpus.write_text(json.dumps(passages))
        start = time.perf_counter()
        report = build_pack("mixed-10k", [], out=out, corpus=corpus, options=BuildOptions(fresh=True))
        assert report.graph is not None
        info.write_text(
            json.dumps(
                {
                    "passages": len(passages),
                    "chunks": report.manifest.stats.chunks,
                    "build_seconds": round(time.perf_counter() - start, 1),
                    "seconds": {k: round(v, 1) for k, v in report.seconds.items()},
                    "graph": report.graph.to_json(),
                }
            )
        )
    return out, json.loads(info.read_text())


def extraction_speed(pack: Path, build: dict[str, Any]) -> dict[str, Any]:
    with open_store(pack / "pack.db") as store:
        rows = store.graph_inputs()
    start = time.perf_counter()
    for _, title, text, _ in rows:
        keyword_entities(title, text)
    keywords_s = time.perf_counter() - start
    graph = build["graph"]
    seconds = graph["seconds"]
    spacy_s = seconds.get("extract", 0.0)
    offline_s = seconds["keywords"] + seconds.get("skeleton", 0.0) + spacy_s + seconds["merge"]
    return {
        "chunks": len(rows),
        "keyword_extractor_chunks_per_s": round(len(rows) / keywords_s, 1),
        "spacy_full_pass_chunks_per_s": round(graph["skeleton_chunks"] / spacy_s, 1) if spacy_s else None,
        "offline_extraction_chunks_per_s": round(len(rows) / offline_s, 1),
        "graph_build_chunks_per_s_with_name_vectors_and_synonyms": round(
            len(rows) / sum(seconds.values()), 1
        ),
        "entity_vectors": graph.get("entity_vectors", 0),
        "graph_seconds": seconds,
        "llm_calls": graph["llm_calls"],
        "entities": graph["entities"],
        "facts": graph["facts"],
        "relations": graph["relations"],
        "skeleton_chunks": graph["skeleton_chunks"],
    }


def latency(pack: Path, profiles: list[str]) -> list[dict[str, Any]]:
    questions = [q["question"] for name in ("musique", "hotpotqa") for q in multihop.DATASETS[name]()[1]]
    rows = []
    for profile in profiles:
        with KnowledgeGraphAgent(pack, profile=profile, llm=None, top_k=5) as agent:
            start = time.perf_counter()
            agent.query("warm-up question about the pack")
            first_ms = (time.perf_counter() - start) * 1000
            times = [agent.query(q).trace["retrieval_ms"] for q in questions]
        times.sort()
        rows.append(
            {
                "profile": profile,
                "questions": len(times),
                "first_query_ms": round(first_ms, 1),
                "p50_ms": round(statistics.median(times), 1),
                "p95_ms": round(times[int(0.95 * (len(times) - 1))], 1),
                "max_ms": round(times[-1], 1),
            }
        )
    return rows


def cli_latency(pack: Path, runs: int = 3) -> dict[str, Any]:
    question = (
        "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    )
    walls = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(
            [sys.executable, "-m", "wikigr", "query", str(pack), question, "--profile", "graph", "--json"],
            check=True,
            capture_output=True,
        )
        walls.append((time.perf_counter() - start) * 1000)
    return {"runs": runs, "p50_ms": round(statistics.median(walls), 1)}


def sensitivity() -> list[dict[str, Any]]:
    # (damping, home, passage_weight): the defaults (0.85, 1.0, 0.05), then one change at a time.
    grid = [
        (0.85, 1.0, 0.05),
        (0.5, 0.0, 0.05),  # HippoRAG 2's damping, no home edges: the previous defaults
        (0.5, 1.0, 0.05),
        (0.7, 1.0, 0.05),
        (0.8, 1.0, 0.05),
        (0.9, 1.0, 0.05),
        (0.85, 0.0, 0.05),
        (0.85, 2.0, 0.05),
        (0.85, 1.0, 0.2),
    ]
    rows = []
    for dataset in ("musique", "hotpotqa"):
        _, questions = multihop.DATASETS[dataset]()
        pack = WORK / f"{dataset}-100"
        for damping, home, weight in grid:
            options = {"ppr": {"damping": damping, "home": home, "passage_weight": weight}}
            with KnowledgeGraphAgent(pack, profile="graph", llm=None, top_k=10, options=options) as agent:

                def rank(q: dict[str, Any], a: KnowledgeGraphAgent = agent) -> list[str]:
                    return [
                        multihop.chunk_articles_from_url(s.url) for s in a.query(q["question"]).sources[:10]
                    ]

                arm = multihop.run_arm("graph", questions, rank)
                halves = {"dev": arm["dev"]["R@5"], "test": arm["test"]["R@5"]}
            row = {
                "dataset": dataset,
                "damping": damping,
                "home": home,
                "passage_weight": weight,
                "R@5_dev": halves["dev"],
                "R@5_test": halves["test"],
                "R@5": round((halves["dev"] + halves["test"]) / 2, 1),
            }
            rows.append(row)
            print(json.dumps(row), file=sys.stderr)
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description="graph retrieval at scale")
    parser.add_argument("--rebuild", action="store_true", help="rebuild the 10k pack")
    parser.add_argument("--regraph", action="store_true", help="rebuild only its entity graph, in place")
    parser.add_argument("--skip-sensitivity", action="store_true")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "graph.json")
    args = parser.parse_args()
    if not multihop.SHARED.is_dir():
        print(f"Error: {multihop.SHARED} not found (the shared data sets)", file=sys.stderr)
        return 1
    pack, build = ensure_pack(args.rebuild, args.regraph)
    stats = open_pack(pack).manifest.stats
    results: dict[str, Any] = {
        "wikigr": __version__,
        "date": time.strftime("%Y-%m-%d"),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "pack": {
            "name": "mixed-10k",
            "how": "MuSiQue-100 + HotpotQA-100 passages, then copies titled 'TITLE [k]' with sentences "
            "rotated by k, until 10,000 passages",
            **build,
            "stats": {"entities": stats.entities, "facts": stats.facts, "relations": stats.relations},
        },
        "extraction": extraction_speed(pack, build),
        "latency": latency(pack, ["auto", "baseline", "balanced", "graph", "routed"]),
        "cli_graph_query": cli_latency(pack),
    }
    if not args.skip_sensitivity:
        results["ppr_sensitivity"] = sensitivity()
        results["ppr_sensitivity_date"] = results["date"]
    elif args.out.is_file():  # keep the previous run's table
        previous = json.loads(args.out.read_text())
        if "ppr_sensitivity" in previous:
            results["ppr_sensitivity"] = previous["ppr_sensitivity"]
            results["ppr_sensitivity_date"] = previous.get("ppr_sensitivity_date", previous.get("date"))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(json.dumps({k: results[k] for k in ("extraction", "latency", "cli_graph_query")}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
