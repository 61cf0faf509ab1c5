"""OpenML packs: import throughput from local exports, aggregate query latency, and the routing
accuracy of the offline rules.

    uv run python bench/openml.py            # -> bench/results/openml.json
    uv run python bench/openml.py --routing  # only the routing section (needs no ../shared data)

Import: builds packs from the real exports in ../shared/data/openml (the AutoML benchmark CSV
plus OpenML study 1's ARFF: 51,118 runs; and LCDB's 124,029 runs) and reports runs per second
for the whole build, and for the import itself — parsing the files and bulk-loading the star —
apart from embedding the dimension descriptions (a cost per dimension row, not per run). Each
pack is built cold (no embedding cache) and then rebuilt (the descriptions' vectors cached).

Aggregates: ``aggregate_measures`` calls on the 51,118-run pack, each with a fresh tool object
(dimension tables read again every time), five different questions; p50 and p90 in milliseconds.
Routing: ``bench/data/openml_routing.jsonl`` is a labelled set of varied questions, each with
the intent the rules should give it (``aggregate``: a ranking or comparison of measures;
``count``; ``describe``: a similarity or description question, for ``semantic_search``;
``cypher``). The rules (wikigr/openml/rules.py) plan each question with the vocabulary of the
example pack packs/amlb2019 and every family wikigr knows; the share routed to the labelled intent
is reported for the development half (even lines, 0-based: the rules were chosen looking at it)
and for the held-out half (odd lines), with the questions routed wrong.

Never a timed unit test: the numbers depend on the machine (recorded with them).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from wikigr.embed import get_embedder  # noqa: E402
from wikigr.openml.build import build_openml_pack  # noqa: E402
from wikigr.openml.families import FAMILIES  # noqa: E402
from wikigr.openml.rules import Vocabulary, plan  # noqa: E402
from wikigr.openml.tools import OpenMLTools  # noqa: E402
from wikigr.pack.pack import open_pack  # noqa: E402

DATA = ROOT.parent / "shared" / "data" / "openml"
WORK = ROOT / "bench" / "work" / "openml"
RESULTS = ROOT / "bench" / "results" / "openml.json"
ROUTING = ROOT / "bench" / "data" / "openml_routing.jsonl"
EXAMPLE = ROOT / "packs" / "amlb2019"
REPEATS = 30

QUERIES = {
    "family median accuracy, classification tasks": {
        "group_by": ["Algorithm.family"],
        "filters": {"Task.type": "Supervised Classification"},
    },
    "family median accuracy, imbalanced datasets": {
        "group_by": ["Algorithm.family"],
        "filters": {"Dataset.imbalance_bucket": "imbalanced"},
    },
    "algorithm mean accuracy, datasets with 1k-100k rows": {
        "group_by": ["Algorithm.name"],
        "filters": {"Dataset.rows": {"gte": 1000, "lt": 100000}},
        "statistic": "mean",
    },
    "framework median log-loss by month": {
        "group_by": ["Algorithm.name", "Date.month"],
        "measure": "log_loss",
    },
    "dataset median accuracy, worst first": {"group_by": ["Dataset.name"], "order": "worst", "limit": 10},
}


def build(name: str, exports: list[Path], qualities: list[Path]) -> dict[str, object]:
    """A cold build (empty embedding cache), then a rebuild of the same pack (warm cache)."""
    out = WORK / name
    cache = WORK / "home" / "cache"
    get_embedder()  # load the model outside the timing
    result: dict[str, object] = {"exports": [p.name for p in exports + qualities]}
    for run in ("cold", "rebuild"):
        if run == "cold" and cache.exists():
            shutil.rmtree(cache)
        started = time.perf_counter()
        report = build_openml_pack(name, exports=exports, qualities=qualities, out=out)
        total = time.perf_counter() - started
        runs = report.manifest.stats.runs
        seconds = report.seconds
        import_s = seconds["read"] + seconds["load"]
        result["runs"] = runs
        result["dimension_rows"] = sum(
            getattr(report.manifest.stats, k) for k in ("algorithms", "families", "datasets", "tasks")
        )
        result["malformed_rows"] = report.imported.malformed
        result["pack_bytes"] = (out / "pack.db").stat().st_size
        result[run] = {
            "seconds": {k: round(v, 3) for k, v in {**seconds, "wall": total}.items()},
            "import_runs_per_s": round(runs / import_s),
            "end_to_end_runs_per_s": round(runs / total),
        }
    return result


def aggregates(pack: Path) -> dict[str, object]:
    opened = open_pack(pack)
    store = opened.open_store()
    timings: dict[str, list[float]] = {}
    try:
        for name, arguments in QUERIES.items():
            OpenMLTools(store, get_embedder).aggregate_measures(**arguments)  # warm the page cache
            samples = []
            for _ in range(REPEATS):
                tools = OpenMLTools(store, get_embedder)
                started = time.perf_counter()
                output = tools.aggregate_measures(**arguments)
                samples.append((time.perf_counter() - started) * 1000)
                assert output["groups"], name
            timings[name] = samples
    finally:
        store.close()
    every = [t for samples in timings.values() for t in samples]
    return {
        "pack_runs": opened.manifest.stats.runs,
        "repeats": REPEATS,
        "p50_ms": round(statistics.median(every), 2),
        "p90_ms": round(statistics.quantiles(every, n=10)[-1], 2),
        "per_query": {
            name: {"p50_ms": round(statistics.median(s), 2), "max_ms": round(max(s), 2)}
            for name, s in timings.items()
        },
    }


def routing() -> dict[str, object]:
    """The share of the labelled questions the rules route to their intent, per half."""
    store = open_pack(EXAMPLE).open_store()
    try:
        vocab = Vocabulary(
            datasets=[r[0] for r in store.rows("MATCH (d:Dataset) RETURN d.name")],
            algorithms=[r[0] for r in store.rows("MATCH (a:Algorithm) RETURN a.name")],
            families=list(FAMILIES),
            years=[int(r[0]) for r in store.rows("MATCH (d:Date) RETURN DISTINCT d.year")],
        )
    finally:
        store.close()
    rows = [json.loads(line) for line in ROUTING.read_text(encoding="utf-8").splitlines() if line.strip()]
    halves: dict[str, dict[str, object]] = {}
    for name, parity in (("development", 0), ("held_out", 1)):
        half = [r for i, r in enumerate(rows) if i % 2 == parity]
        wrong = []
        per_intent: dict[str, list[int]] = {}
        for row in half:
            got = plan(row["question"], vocab).intent
            per_intent.setdefault(row["intent"], [0, 0])
            per_intent[row["intent"]][1] += 1
            if got == row["intent"]:
                per_intent[row["intent"]][0] += 1
            else:
                wrong.append({"question": row["question"], "expected": row["intent"], "routed": got})
        halves[name] = {
            "questions": len(half),
            "accuracy": round(1 - len(wrong) / len(half), 4),
            "per_intent": {k: f"{ok}/{n}" for k, (ok, n) in sorted(per_intent.items())},
            "wrong": wrong,
        }
    return {
        "question_set": str(ROUTING.relative_to(ROOT)),
        "vocabulary": "packs/amlb2019 + all families",
        **halves,
    }


def machine() -> dict[str, object]:
    return {
        "platform": platform.platform(),
        "python": platform.python_version(),
        "cpus": os.cpu_count(),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--routing", action="store_true", help="only the routing section")
    args = parser.parse_args()
    if args.routing:
        previous = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.is_file() else {}
        previous["routing"] = routing()
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(previous, indent=2) + "\n", encoding="utf-8")
        print(json.dumps(previous["routing"], indent=2))
        return
    if not DATA.is_dir():
        sys.exit(f"needs the OpenML exports in {DATA}")
    WORK.mkdir(parents=True, exist_ok=True)
    os.environ["WIKIGR_HOME"] = str(WORK / "home")  # the embedding cache lives here
    amlb = DATA / "amlb2019_runs.csv"
    study1 = DATA / "study_1_run_evaluations_predictive_accuracy.arff"
    qualities = [DATA / "study_14_metafeatures.arff", DATA / "study_34_metafeatures.arff"]
    imports = {
        "amlb+study1": build("amlb-study1", [amlb, study1], qualities),
        "lcdb": build("lcdb", [DATA / "lcdb_final_anchor_runs.csv"], [DATA / "study_14_metafeatures.arff"]),
    }
    result = {
        "machine": machine(),
        "import": imports,
        "aggregate": aggregates(WORK / "amlb-study1"),
        "targets": {"import_runs_per_s": 20000, "aggregate_p50_ms": 50},
        "routing": routing(),
    }
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
