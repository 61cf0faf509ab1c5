"""Before/after: fresh-process `wikigr query` wall time of two copies of the wikigr package, their
runs interleaved (A, B, A, B...) so that both see the same machine load. Prints and writes
bench/results/startup_ab.json.

Each copy is a folder holding a ``wikigr/`` package (e.g. ``git archive COMMIT wikigr | tar -x -C
DIR``), put first on the timed process's PYTHONPATH; the console script of .venv runs it, as in
bench/build_query.py (bytecode precompiled, no ANTHROPIC_API_KEY, the default profile on
packs/pydocs, a shared temporary WIKIGR_HOME whose caches the first, untimed, run of each fills).

    uv run python bench/startup_ab.py --a DIR_BEFORE --b DIR_AFTER [--runs 15]
"""

from __future__ import annotations

import argparse
import compileall
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from build_query import EXAMPLE, QUESTIONS, ROOT, compile_bytecode, fresh_env, fresh_query_seconds, pct


def main() -> int:
    parser = argparse.ArgumentParser(description="interleaved before/after fresh-process query time")
    parser.add_argument("--a", type=Path, required=True, help="folder holding the 'before' wikigr/")
    parser.add_argument("--b", type=Path, required=True, help="folder holding the 'after' wikigr/")
    parser.add_argument("--runs", type=int, default=15, help="timed runs of each")
    parser.add_argument("--pack", type=Path, default=EXAMPLE)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup_ab.json")
    args = parser.parse_args()
    for folder in (args.a, args.b):
        if not (folder / "wikigr" / "__init__.py").is_file():
            print(f"Error: {folder} holds no wikigr/ package", file=sys.stderr)
            return 1
    compile_bytecode()
    for folder in (args.a, args.b):
        compileall.compile_dir(str(folder / "wikigr"), quiet=2)
    load_start = [round(x, 2) for x in os.getloadavg()]
    times: dict[str, list[float]] = {"a": [], "b": []}
    with tempfile.TemporaryDirectory() as home:
        envs = {}
        for key, folder in (("a", args.a), ("b", args.b)):
            envs[key] = {**fresh_env(), "PYTHONPATH": str(folder.resolve()), "WIKIGR_HOME": home}
            fresh_query_seconds(args.pack, QUESTIONS[0], env=envs[key])  # fills the caches: untimed
        for i in range(args.runs):
            question = QUESTIONS[i % len(QUESTIONS)]
            for key in ("a", "b") if i % 2 == 0 else ("b", "a"):
                times[key].append(fresh_query_seconds(args.pack, question, env=envs[key]))
    summary = {
        key: {"p50_s": round(statistics.median(t), 3), "p95_s": round(pct(t, 95), 3), "runs": t}
        for key, t in times.items()
    }
    results = {
        "command": "wikigr query packs/pydocs QUESTION --json (default profile), a fresh process",
        "a": str(args.a),
        "b": str(args.b),
        "date": time.strftime("%Y-%m-%d"),
        "cpus": os.cpu_count(),
        "load_average_at_start": load_start,
        "load_average_at_end": [round(x, 2) for x in os.getloadavg()],
        **summary,
        "b_over_a_p50": round(summary["b"]["p50_s"] / summary["a"]["p50_s"], 3),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")
    print(
        f"a ({args.a}): p50 {summary['a']['p50_s']} s, p95 {summary['a']['p95_s']} s\n"
        f"b ({args.b}): p50 {summary['b']['p50_s']} s, p95 {summary['b']['p95_s']} s\n"
        f"b / a p50: {results['b_over_a_p50']}; "
        f"load average {load_start} -> {results['load_average_at_end']}; wrote {args.out}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
