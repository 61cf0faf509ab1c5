"""Several packs at once (wikigr/packset.py): recall when packs are asked together, and latency.

Recall: the docs set's pack (bench/work/pydocs-whole, built by `bench/docqa.py --whole`) and
MuSiQue-100's pack (bench/work/musique-100, built by bench/multihop.py) queried together, as
`wikigr query all` would with both installed, against each pack queried alone; the default
profile (auto) everywhere, retrieval only (no LLM). R@k as in bench/docqa.py (gold pages) and
bench/multihop.py (gold passages). The merge's step is chosen on the first half of each question
set (dev) from STEPS and the second half (test) is reported; every step is printed.

Latency (--latency): retrieval milliseconds (the agent's own `retrieval_ms`) of one pack of ~10k
chunks (bench/work/mixed-10k, built by bench/graph.py) and of a set of 10 such packs (copies of it
in bench/work/packs10/; identical copies are the worst case for the set: every pack ties on
relevance, so the most packs run their full profile), the packs opened in parallel, the two
asked each question in turn (so that both see the same load on a shared machine); and the wall
time of fresh `wikigr query all` processes over the two shipped packs (packs/pydocs and
packs/amlb2019 installed in a temporary WIKIGR_HOME) beside `wikigr query pydocs`.

Retrieval only (the `synthesize` stage disabled: a set answers once, over the merged passages, as
one pack does). The CPU time of each query (the whole process's, the database's threads included)
is recorded beside: on a shared machine it depends less on the load than the wall time, and on an
idle one the set's wall time is about its CPU time over the cores.

Writes bench/results/packs.json with the machine's load average.

    uv run python bench/packs.py [--latency] [--questions 100]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from docqa import DATA as DOCQA
from docqa import page
from multihop import load_musique

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.packset import PackSet

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work"
DOCS_PACK, MUSIQUE_PACK, TEN_K = WORK / "pydocs-whole", WORK / "musique-100", WORK / "mixed-10k"
STEPS = (0.0, 0.005, 0.01, 0.02, 0.03, 0.05, 0.1)
KS = (2, 5)


def recall(ranked: list[str], gold: set[str], k: int) -> float:
    top: list[str] = []
    for item in ranked:
        if item not in top:
            top.append(item)
        if len(top) == k:
            break
    return len(set(top) & gold) / len(gold)


def question_sets() -> dict[str, list[dict[str, Any]]]:
    docs = [
        {"question": q["nl"], "gold": {g.split("#", 1)[0] for g in q["gold_python311_html"]}}
        for q in json.loads(DOCQA.read_text())
        if q["all_gold_in_python_docs"]
    ]
    _, musique = load_musique()
    return {
        "docs": docs,
        "musique": [{"question": q["question"], "gold": set(q["gold"])} for q in musique],
    }


def key(name: str, url: str) -> str:
    """What a source counts as: a docs page, or a MuSiQue passage."""
    return page(url) if name == "docs" else url.split("#", 1)[0]


def scores(name: str, questions: list[dict[str, Any]], rankings: list[list[str]]) -> dict[str, Any]:
    half = len(questions) // 2
    parts = {"dev": slice(0, half), "test": slice(half, None), "all": slice(None)}
    result: dict[str, Any] = {}
    for part, chosen in parts.items():
        pairs = list(zip(questions[chosen], rankings[chosen], strict=True))
        result[part] = {
            f"R@{k}": round(100 * statistics.mean(recall(r, q["gold"], k) for q, r in pairs), 1) for k in KS
        }
    return result


def accuracy() -> dict[str, Any]:
    sets = question_sets()
    packs = {"docs": DOCS_PACK, "musique": MUSIQUE_PACK}
    alone: dict[str, Any] = {}
    for name, questions in sets.items():
        with KnowledgeGraphAgent(packs[name], profile="auto", llm=None, top_k=10) as agent:
            rankings = [[key(name, s.url) for s in agent.query(q["question"]).sources] for q in questions]
        alone[name] = scores(name, questions, rankings)
        print(f"{name} alone: {alone[name]}", file=sys.stderr)
    together: dict[str, dict[str, Any]] = {}
    with PackSet.open([DOCS_PACK, MUSIQUE_PACK], profile="auto", llm=None, top_k=10) as agents:
        for step in STEPS:
            agents.step = step
            row: dict[str, Any] = {}
            for name, questions in sets.items():
                rankings, wrong = [], 0
                for q in questions:
                    result = agents.query(q["question"])
                    rankings.append([key(name, s.url) for s in result.sources])
                    wrong += result.sources[0].pack != packs[name].name
                row[name] = scores(name, questions, rankings) | {"first_source_from_other_pack": wrong}
            together[str(step)] = row
            print(f"step {step}: {row}", file=sys.stderr)

    def dev_loss(step: str) -> float:  # the worst drop of R@5 on the dev halves
        return max(alone[n]["dev"]["R@5"] - together[step][n]["dev"]["R@5"] for n in sets)

    # The steps with the smallest loss form a plateau: take its middle (on a log scale), away from
    # the edges where the merge starts to hurt.
    best = min(dev_loss(s) for s in together)
    plateau = [float(s) for s in together if dev_loss(s) == best and float(s) > 0]
    middle = math.exp(statistics.mean(math.log(s) for s in plateau)) if plateau else 0.0
    chosen = min(
        together, key=lambda s: (dev_loss(s), abs(math.log(max(float(s), 1e-9) / max(middle, 1e-9))))
    )
    return {
        "packs": {name: str(path.relative_to(ROOT)) for name, path in packs.items()},
        "questions": {name: len(q) for name, q in sets.items()},
        "alone": alone,
        "together_by_step": together,
        "chosen_step": float(chosen),
        "chosen_on": "dev halves: of the steps with the smallest worst drop of R@5 against each "
        "pack alone, the one nearest the middle of that plateau (log scale)",
        "test_drop_R@5": {
            name: round(alone[name]["test"]["R@5"] - together[chosen][name]["test"]["R@5"], 1)
            for name in sets
        },
    }


def ten_copies(count: int = 10) -> list[Path]:
    root = WORK / "packs10"
    copies = []
    for i in range(count):
        target = root / f"part{i:02d}"
        if not (target / "manifest.json").is_file():
            shutil.rmtree(target, ignore_errors=True)
            shutil.copytree(TEN_K, target)
            manifest = json.loads((target / "manifest.json").read_text())
            manifest["name"] = target.name
            (target / "manifest.json").write_text(json.dumps(manifest, indent=2))
        copies.append(target)
    return copies


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * (len(ordered) - 1) + 0.5))], 2)


def latency(n_questions: int) -> dict[str, Any]:
    _, musique = load_musique()
    questions = [q["question"] for q in musique][:n_questions]
    out: dict[str, Any] = {}
    copies = ten_copies()
    retrieval = {"profile": "auto", "llm": None, "disable": ["synthesize"]}  # the answer is timed apart
    with KnowledgeGraphAgent(TEN_K, **retrieval) as agent:
        start = time.perf_counter()
        with PackSet.open(copies, **retrieval) as agents:
            open_s = time.perf_counter() - start
            agent.query(questions[0])
            agents.query(questions[0])
            one, ten, searched = [], [], []
            one_cpu, ten_cpu = [], []  # the process's CPU time, every thread's (the database's too)
            for q in questions:  # interleaved: the one pack and the ten see the same load
                cpu = time.process_time()
                one.append(agent.query(q).trace["retrieval_ms"])
                one_cpu.append((time.process_time() - cpu) * 1000)
                cpu = time.process_time()
                result = agents.query(q)
                ten_cpu.append((time.process_time() - cpu) * 1000)
                ten.append(result.trace["retrieval_ms"])
                searched.append(sum(1 for p in result.trace["packs"] if p["searched"]))
    out["one_pack"] = {
        "chunks": 10278,
        "p50_ms": pct(one, 0.5),
        "p95_ms": pct(one, 0.95),
        "cpu_p50_ms": pct(one_cpu, 0.5),
    }
    out["ten_packs"] = {
        "packs": len(copies),
        "open_s": round(open_s, 2),
        "p50_ms": pct(ten, 0.5),
        "p95_ms": pct(ten, 0.95),
        "packs_searched_mean": round(statistics.mean(searched), 2),
        "ratio_p50": round(pct(ten, 0.5) / pct(one, 0.5), 2),
        "cpu_p50_ms": pct(ten_cpu, 0.5),
        "cpu_ratio_p50": round(pct(ten_cpu, 0.5) / pct(one_cpu, 0.5), 2),
        "cpu_count": os.cpu_count(),
    }
    out["fresh_process"] = fresh_process()
    return out


def fresh_process(runs: int = 10) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        home = Path(tmp)
        for name in ("pydocs", "amlb2019"):
            shutil.copytree(ROOT / "packs" / name, home / "packs" / name)
        env = {**os.environ, "WIKIGR_HOME": str(home), "ANTHROPIC_API_KEY": ""}
        exe = [sys.executable, "-m", "wikigr", "query"]
        result: dict[str, Any] = {}
        for label, pack in (("all", "all"), ("pydocs", "pydocs")):
            times = []
            for i in range(runs + 1):
                start = time.perf_counter()
                subprocess.run(
                    [*exe, pack, "How do I set a socket timeout?"], env=env, check=True, capture_output=True
                )
                if i:  # the first run fills the caches of the wikigr home
                    times.append(time.perf_counter() - start)
            result[label] = {"p50_s": round(statistics.median(times), 3), "max_s": round(max(times), 3)}
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description="several packs at once: recall and latency")
    parser.add_argument("--latency", action="store_true", help="also the latency figures")
    parser.add_argument("--questions", type=int, default=100, help="questions for the latency figures")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "packs.json")
    args = parser.parse_args()
    for pack in (DOCS_PACK, MUSIQUE_PACK) + ((TEN_K,) if args.latency else ()):
        if not (pack / "manifest.json").is_file():
            print(f"Error: {pack} is not built (see this script's docstring)", file=sys.stderr)
            return 1
    results: dict[str, Any] = {
        "version": __version__,
        "load_before": list(os.getloadavg()),
        "accuracy": accuracy(),
    }
    if args.latency:
        results["latency"] = latency(args.questions)
    results["load_after"] = list(os.getloadavg())
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        json.dumps(
            {k: v for k, v in results.items() if k != "accuracy"}
            | {
                "chosen_step": results["accuracy"]["chosen_step"],
                "test_drop_R@5": results["accuracy"]["test_drop_R@5"],
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
