"""Fresh-process start-up of `wikigr query`: what a Claude Code skill pays for every question.

Prints a table and writes bench/results/startup.json.

1. Wall time of `wikigr query PACK QUESTION --json` as a new process, p50/p95 over --runs runs
   (questions from bench/build_query.py, in turn), in three arms whose runs alternate, so all see
   the same machine load: `default`, the default profile on packs/pydocs with WIKIGR_WORKER=off
   (each process answers by itself); `graph`, `--profile graph` on a copy of it with an entity
   graph (made here with `wikigr pack graph`, or given with --graph-pack), also alone; `worker`,
   the default profile on packs/pydocs as shipped: the query worker (wikigr/worker.py) answers,
   which the arm's first run (`first_run_s`, answered alone) starts; it is stopped at the end.
   The console script installed in .venv/bin is run directly, not through `uv run` (uv's own
   start-up would be timed too). Bytecode is compiled first (compileall of the environment's
   site-packages and of wikigr, as `pip install` does) and the processes run without
   PYTHONDONTWRITEBYTECODE (the sandbox sets it; with it and no .pyc files Python would compile every
   module at every start, ~0.5 s) and without ANTHROPIC_API_KEY. WIKIGR_HOME is a new temporary
   folder: the first query of each kind fills its caches and is reported apart (`first_run_s`); the
   timed runs come after it, as every later question does.
2. A breakdown, in fresh child processes (median of --breakdown-runs):
   - `steps`: each part loaded in turn, not concurrently: imports (wikigr.cli, as the console script,
     and wikigr.agent, as the query command), embedder open, store open, BM25 index load, entity
     graph load (graph profile), then the first query of an agent opened on top of them;
   - `cli_path`: what `wikigr query` does, in order: imports, the agent's constructor (it loads the
     model and the store concurrently, and what the profile uses), the first query;
   - `python_startup_s`: `python -c pass`, the floor of any fresh process.
3. The load average (os.getloadavg) at the start and the end, and the machine's core count: the
   machine is shared, timings are noisy.

    uv run python bench/startup.py [--runs 15] [--breakdown-runs 7] [--graph-pack PATH]
                                   [--code DIR --out bench/results/startup-before.json]

--code DIR times another copy of the wikigr package (DIR/wikigr, e.g. from `git archive`), put first
on the timed processes' PYTHONPATH: a before/after comparison on the same machine and load.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from _common import header, load

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from build_query import QUESTIONS, compile_bytecode, fresh_env, fresh_query_seconds, summary  # noqa: E402

EXAMPLE = ROOT / "packs" / "pydocs"
QUESTION = "How do I set a socket timeout?"

# Run with `python -c CHILD MODE PACK PROFILE QUESTION`: prints one JSON object of seconds.
CHILD = r"""
import sys, time, json
T = time.perf_counter
mode, pack_ref, profile, question = sys.argv[1:5]
profile = profile or None  # "": the pack's default
out = {}
t = T()
import wikigr.cli  # what the console script imports
import wikigr.agent  # what the query command imports
out["imports"] = T() - t
if mode == "steps":
    from wikigr.embed import get_embedder
    from wikigr.pack.pack import open_pack
    from wikigr.retrieval.profiles import DEFAULT_PROFILE, load_pack_config, resolve_stages
    pack = open_pack(pack_ref)
    config = load_pack_config(pack.config())
    name = profile or config.profile or DEFAULT_PROFILE
    resolved = resolve_stages(name, overrides=config.stages)
    if isinstance(resolved, tuple):  # (stages, options) since the router runs stages itself
        resolved = resolved[0]
    stages = {s.name: s for s in resolved}
    t = T(); get_embedder(pack.manifest.embedder.name); out["embedder_open"] = T() - t
    try:  # as the agent opens it (older wikigr: the default buffer pool)
        from wikigr.pack.store import query_buffer_pool_size
        pool = query_buffer_pool_size(pack.store_path)
        t = T(); store = pack.open_store(pool); out["store_open"] = T() - t
    except ImportError:
        t = T(); store = pack.open_store(); out["store_open"] = T() - t
    if "keyword" in stages or "router" in stages:  # the router's strategies search by keyword too
        from wikigr.pack.keyword import KeywordIndex
        t = T(); KeywordIndex.load(pack.path / "bm25"); out["bm25_load"] = T() - t
    if "ppr" in stages:
        from wikigr.graph.index import EdgeWeights, EntityGraph
        o = stages["ppr"].options
        weights = EdgeWeights(cooccur=o.cooccur, synonym=o.synonym, fact=o.fact, home=o.home)
        t = T(); EntityGraph.load(store, weights); out["graph_load"] = T() - t
    store.close()
    agent = wikigr.agent.KnowledgeGraphAgent(pack_ref, profile=profile, llm=None)
    t = T(); agent.query(question); out["first_query"] = T() - t
    agent.close()
else:
    t = T(); agent = wikigr.agent.KnowledgeGraphAgent(pack_ref, profile=profile, llm=None)
    out["agent_open"] = T() - t
    t = T(); result = agent.query(question); out["first_query"] = T() - t
    out["stages_ms"] = {s["stage"]: s["ms"] for s in result.trace["stages"]}
    out["profile"] = result.profile
    t = T(); json.dumps(result.to_json(), indent=2, ensure_ascii=False); agent.close()
    out["output_and_close"] = T() - t
print(json.dumps(out))
"""


def make_graph_pack(work: Path, env: dict[str, str]) -> Path:
    """A copy of the example pack with an entity graph (`wikigr pack graph`, ~1 minute)."""
    target = work / "pydocs-graph"
    shutil.copytree(EXAMPLE, target)
    exe = Path(sys.executable).parent / "wikigr"
    proc = subprocess.run([str(exe), "pack", "graph", str(target)], capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"pack graph failed: {proc.stderr}")
    return target


def child(mode: str, pack: Path, profile: str, env: dict[str, str]) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, mode, str(pack), profile, QUESTION],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(env["WIKIGR_HOME"]).parent,  # not this checkout: `-c` puts the cwd first on sys.path
    )
    if proc.returncode != 0:
        raise SystemExit(f"breakdown child failed: {proc.stderr}")
    result: dict[str, Any] = json.loads(proc.stdout)
    return result


def medians(samples: list[dict[str, Any]]) -> dict[str, Any]:
    keys = [k for k in samples[0] if k not in ("stages_ms", "profile")]
    result: dict[str, Any] = {k: round(statistics.median(s[k] for s in samples), 3) for k in keys}
    result["sum_s"] = round(sum(v for v in result.values()), 3)
    if "stages_ms" in samples[0]:
        result["first_query_stages_ms"] = {
            k: round(statistics.median(s["stages_ms"][k] for s in samples), 1)
            for k in samples[0]["stages_ms"]
        }
    return result


def python_startup(env: dict[str, str], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], check=True, env=env)
        times.append(time.perf_counter() - start)
    return round(statistics.median(times), 3)


def main() -> int:
    parser = argparse.ArgumentParser(description="fresh-process start-up of wikigr query")
    parser.add_argument("--runs", type=int, default=15, help="timed fresh processes per kind")
    parser.add_argument("--breakdown-runs", type=int, default=7, help="child processes per breakdown")
    parser.add_argument("--graph-pack", type=Path, help="a copy of packs/pydocs with an entity graph")
    parser.add_argument("--code", type=Path, help="a folder holding another wikigr/ package to time")
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "startup.json")
    args = parser.parse_args()
    results: dict[str, Any] = {
        **header("cores", with_time=True),
        "method": (
            "fresh processes of the console script .venv/bin/wikigr (not `uv run`); bytecode "
            "precompiled (compileall of site-packages and wikigr) and PYTHONDONTWRITEBYTECODE unset; "
            "no ANTHROPIC_API_KEY; a new WIKIGR_HOME whose caches the first run fills"
        ),
    }
    compile_bytecode()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = {**fresh_env(), "WIKIGR_HOME": str(work / "home")}
        if args.code:
            import compileall

            compileall.compile_dir(str(args.code / "wikigr"), quiet=2)
            env["PYTHONPATH"] = str(args.code.resolve())
            results["code"] = f"wikigr from {args.code} (PYTHONPATH)"
        if args.graph_pack:
            graph_pack = args.graph_pack.resolve()
        else:
            print("building the entity graph of a copy of packs/pydocs ...", file=sys.stderr)
            graph_pack = make_graph_pack(work, env)
            shutil.rmtree(work / "home", ignore_errors=True)  # the timed runs start from empty caches
        stats = json.loads((graph_pack / "manifest.json").read_text())["stats"]
        results["graph_pack"] = {k: stats[k] for k in ("chunks", "entities", "facts", "relations")}
        alone = {**env, "WIKIGR_WORKER": "off"}  # each process answers by itself
        served = {**env, "WIKIGR_WORKER_IDLE": "300"}  # the query worker (wikigr/worker.py), as shipped
        served.pop("WIKIGR_WORKER", None)
        kinds = {
            "default": (EXAMPLE, [], alone),
            "graph": (graph_pack, ["--profile", "graph"], alone),
            "worker": (EXAMPLE, [], served),
        }
        try:
            first = {  # the worker arm's first run answers alone and starts the worker
                name: round(fresh_query_seconds(pack, QUESTION, extra, arm_env), 3)
                for name, (pack, extra, arm_env) in kinds.items()
            }
            walls: dict[str, list[float]] = {name: [] for name in kinds}
            for i in range(args.runs):
                for name, (pack, extra, arm_env) in kinds.items():
                    question = QUESTIONS[i % len(QUESTIONS)]
                    walls[name].append(fresh_query_seconds(pack, question, extra, arm_env))
        finally:
            stop = "from wikigr import worker; worker.stop(worker.socket_path())"
            subprocess.run([sys.executable, "-c", stop], env=served, check=False)
        results["fresh_process"] = {
            name: {
                "command": f"{'WIKIGR_WORKER=off ' if arm_env is alone else ''}wikigr query "
                f"{'GRAPH_COPY' if name == 'graph' else 'packs/pydocs'} QUESTION --json "
                f"{' '.join(extra)}".strip(),
                "first_run_s": first[name],
                **summary(walls[name]),
                "target_p50_s": None if name == "graph" else 0.4,
            }
            for name, (pack, extra, arm_env) in kinds.items()
        }
        env = alone  # the breakdown: what one process does
        results["breakdown"] = {"python_startup_s": python_startup(env, args.breakdown_runs)}
        for name, (pack, extra, _) in list(kinds.items())[:2]:
            profile = extra[1] if extra else ""  # "": the pack's default profile
            for mode in ("steps", "cli_path"):
                samples = [child(mode, pack, profile, env) for _ in range(args.breakdown_runs)]
                results["breakdown"][f"{name}_{mode}"] = {
                    "profile": samples[0].get("profile", profile or "the pack's default"),
                    **medians(samples),
                }
        home = work / "home" / "cache"
        results["cache_files"] = sorted(
            f"{p.relative_to(home)} ({p.stat().st_size:,} bytes)" for p in home.rglob("*") if p.is_file()
        )
    results["load_average_at_end"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(results, indent=2) + "\n")

    print(
        f"\nload average {results['load_average_at_start']} -> {results['load_average_at_end']}, "
        f"{os.cpu_count()} cores"
    )
    for name, r in results["fresh_process"].items():
        print(f"fresh {name:<8} p50 {r['p50_s']} s  p95 {r['p95_s']} s  first run {r['first_run_s']} s")
    for name, r in results["breakdown"].items():
        print(f"{name}: {r}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
