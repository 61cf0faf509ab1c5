"""Agent speed per profile on the example pack, retrieval only (no LLM), all profiles in one run.

- in-process: KnowledgeGraphAgent.query() p50/p95 per profile (the trace's retrieval_ms), after
  a warm-up, over the same questions;
- fresh process: `wikigr query PACK "..." --json` with the balanced profile, p50/p95 wall time.

    uv run python bench/profiles.py [--pack packs/pydocs] [--runs 40]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.profiles import PROFILES

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from build_query import QUESTIONS, compile_bytecode  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description="agent speed per profile")
    parser.add_argument("--pack", type=Path, default=ROOT / "packs" / "pydocs")
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--fresh-runs", type=int, default=15)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "profiles.json")
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    os.environ.pop("ANTHROPIC_API_KEY", None)
    in_process = {}
    for profile in PROFILES:
        with KnowledgeGraphAgent(args.pack, profile=profile, llm=None) as agent:
            for q in QUESTIONS[:3]:
                agent.query(q)
            times, skipped = [], set()
            for i in range(args.runs):
                trace = agent.query(QUESTIONS[i % len(QUESTIONS)]).trace
                times.append(trace["retrieval_ms"])
                skipped |= {f"{s['stage']}: {s['skipped']}" for s in trace["stages"] if "skipped" in s}
        in_process[profile] = {
            "p50_ms": round(statistics.median(times), 2),
            "p95_ms": round(float(np.percentile(times, 95)), 2),
            "stages": PROFILES[profile],
            "skipped": sorted(skipped),
        }
    compile_bytecode()
    exe = Path(sys.executable).parent / "wikigr"
    walls = []
    for i in range(args.fresh_runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [
                str(exe),
                "query",
                str(args.pack),
                QUESTIONS[i % len(QUESTIONS)],
                "--json",
                "--profile",
                "balanced",
            ],
            capture_output=True,
            text=True,
            env=env,
        )
        walls.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
    results = {
        "wikigr": __version__,
        "date": time.strftime("%Y-%m-%d"),
        "pack": str(args.pack),
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        "llm": "none (retrieval and extractive answer only)",
        "in_process": in_process,
        "fresh_process_balanced": {
            "p50_s": round(statistics.median(walls), 3),
            "p95_s": round(float(np.percentile(walls, 95)), 3),
            "runs": args.fresh_runs,
            "bytecode": "precompiled, as pip install does",
        },
        "targets": {
            "baseline_p50_ms": 30,
            "balanced_p50_ms": 60,
            "max_p50_ms": 1000,
            "fresh_balanced_p50_s": 1.2,
        },
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    for profile, r in in_process.items():
        skipped = "; ".join(r["skipped"]) or "-"
        print(f"{profile:<9} p50 {r['p50_ms']:>7} ms  p95 {r['p95_ms']:>7} ms  skipped: {skipped}")
    f = results["fresh_process_balanced"]
    print(f"fresh process, balanced: p50 {f['p50_s']} s  p95 {f['p95_s']} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
