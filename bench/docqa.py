"""Doc QA retrieval: CoNaLa dev questions whose gold answers are pages of the Python 3.11 docs
(../shared/data/docqa), over the example pack `packs/pydocs` (59 pages of the Python 3.11 docs,
all but two gold pages among them) or, with --whole, over a pack of the whole Python 3.11 docs.
R@k of the gold page(s): per question |gold pages among the top k distinct pages| / |gold pages|,
averaged, over the 132 questions whose gold is all in the Python docs: for the first half in file
order (dev: where the documentation stages' rules and weights were chosen), the second half
(held-out) and all.

Arms, in one run with the same embedder: bm25 alone, dense alone, fusion (the vector and keyword
stages), each profile of KnowledgeGraphAgent, and the documentation stages `literals` and
`page_score` on top of fusion and of the balanced profile, with ablations (auto without the pack's
definitions, `defined_near` 0, and without the links among the pages in play, `centrality` 0;
retrieval only, no LLM).
Prints a table, writes bench/results/docqa.json (docqa_whole.json with --whole).

    uv run python bench/docqa.py [--pack packs/pydocs] [--profiles auto,baseline,balanced,max,graph,routed]
    uv run python bench/docqa.py --whole [--build-only]   # builds bench/work/pydocs-whole once (~15 min)
    uv run python bench/docqa.py --whole --tune           # the dev-half grid of page_score's weights
    uv run python bench/docqa.py --whole --tune defined   # ... of its use of the pack's definitions
    uv run python bench/docqa.py --whole --timing 10000   # the stages' milliseconds at 10,000 chunks

--whole: every page of library/, reference/, tutorial/ and howto/ of Debian's python3.11-doc
(/usr/share/doc/python3.11/html), served from 127.0.0.1 to the real fetcher and cited at
https://docs.python.org/3.11/, built with the entity graph (build_pack's default); the pack is
cached in bench/work/pydocs-whole (delete it to rebuild). --tune and --timing add their figures to
docqa_whole.json; a full run keeps them.

The graph profiles need the pack's entity graph: when the pack has none, the bench copies it to
bench/work/pydocs-graph and builds the graph there (`wikigr pack graph`: same chunks and
embeddings, so every arm runs on the same passages).
"""

from __future__ import annotations

import argparse
import functools
import http.server
import itertools
import json
import os
import shutil
import statistics
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.graph.pack import rebuild_graph
from wikigr.pack.keyword import KeywordIndex
from wikigr.pack.pack import open_pack

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "docqa" / "conala_dev_python311doc.json"
PUBLIC = "https://docs.python.org/3.11/"
KS = (1, 5, 10)
DOCS = Path("/usr/share/doc/python3.11/html")
WHOLE = ROOT / "bench" / "work" / "pydocs-whole"
# The arms of the documentation stages `literals` and `page_score` (on top of fusion, and in the
# balanced profile), with ablations: (name, KnowledgeGraphAgent keyword arguments).
_FUSION = ["keyword"]
# Spot checks for --whole, written for this bench (not a benchmark): questions about one narrow
# module, unlike CoNaLa's, whose answers are mostly the built-in functions and types. They show
# whether the in-link prior of page_score pulls a central page above the module that answers.
SPOT_CHECKS = [
    ("How do I set a timeout on a socket?", "library/socket.html"),
    ("parse command line arguments with subcommands", "library/argparse.html"),
    ("read rows of a CSV file as dictionaries", "library/csv.html"),
    ("compute the SHA-256 digest of some bytes", "library/hashlib.html"),
    ("compress a file with gzip", "library/gzip.html"),
    ("serialize a Python object to JSON text", "library/json.html"),
    ("match a string against a regular expression", "library/re.html"),
    ("create a temporary directory that is removed afterwards", "library/tempfile.html"),
    ("copy a whole directory tree", "library/shutil.html"),
    ("measure the execution time of small code snippets", "library/timeit.html"),
    ("what does the with statement do", "reference/compound_stmts.html"),
    ("send an email over SMTP", "library/smtplib.html"),
]
SPOT_ARMS = (
    "fusion",
    "auto",
    "auto, defined_near 0",
    "auto, centrality 0",
    "fusion+lit+pages",
    "  -authority",
    "auto, authority 0.3",
)
NEW_ARMS: list[tuple[str, dict[str, Any]]] = [
    ("auto, defined_near 0", {"profile": "auto", "options": {"page_score": {"defined_near": 0.0}}}),
    ("auto, centrality 0", {"profile": "auto", "options": {"page_score": {"centrality": 0.0}}}),
    ("fusion+literals", {"profile": "baseline", "enable": [*_FUSION, "literals"]}),
    ("fusion+pages", {"profile": "baseline", "enable": [*_FUSION, "page_score"]}),
    ("fusion+lit+pages", {"profile": "baseline", "enable": [*_FUSION, "literals", "page_score"]}),
    (
        "  -authority",
        {
            "profile": "baseline",
            "enable": [*_FUSION, "literals", "page_score"],
            "options": {"page_score": {"authority": 0.0}},
        },
    ),
    ("auto, authority 0.3", {"profile": "auto", "options": {"page_score": {"authority": 0.3}}}),
    (
        "  -link_text",
        {
            "profile": "baseline",
            "enable": [*_FUSION, "literals", "page_score"],
            "options": {"page_score": {"link_text": 0.0}},
        },
    ),
    (
        "  -both",
        {
            "profile": "baseline",
            "enable": [*_FUSION, "literals", "page_score"],
            "options": {"page_score": {"authority": 0.0, "link_text": 0.0}},
        },
    ),
    ("balanced+lit+pages", {"profile": "balanced", "enable": ["literals", "page_score"]}),
]


WHOLE_DIRS = ("library", "reference", "tutorial", "howto")


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def whole_pages(docs: Path) -> list[str]:
    """The pages of the whole pack: every HTML page of the library, reference, tutorial and howto."""
    return sorted(str(p.relative_to(docs)) for d in WHOLE_DIRS for p in (docs / d).glob("*.html"))


def build_whole(docs: Path, out: Path) -> None:
    """Build the pack of the whole Python 3.11 docs (served from 127.0.0.1, cited at PUBLIC)."""
    handler = functools.partial(_Quiet, directory=str(docs))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}/"
    pages = whole_pages(docs)
    try:
        report = build_pack(
            "pydocs-whole",
            [base + p for p in pages],
            out=out,
            options=BuildOptions(
                description="Python 3.11 documentation: the library, language reference, tutorial and HOWTOs",
                public_urls=[(base, PUBLIC)],
            ),
            url_list="".join(PUBLIC + p + "\n" for p in pages),
        )
    finally:
        server.shutdown()
    stats = report.manifest.stats
    print(
        f"built {report.path}: {stats.articles} articles, {stats.chunks} chunks, {stats.entities} "
        f"entities in {report.seconds['total']:.0f}s; failed: {report.failed or 'none'}",
        file=sys.stderr,
    )


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
    """R@k of one arm over the dev half, the held-out (test) half and all questions."""
    rows, latencies = [], []
    for q in questions:
        start = time.perf_counter()
        ranked = rank(q["nl"])
        latencies.append((time.perf_counter() - start) * 1000)
        rows.append({k: recall(ranked, q["gold"], k) for k in KS})
    half = len(rows) // 2
    arm: dict[str, Any] = {"arm": name}
    for part, chosen in (("dev", rows[:half]), ("test", rows[half:]), ("all", rows)):
        arm[part] = {f"R@{k}": round(100 * statistics.mean(r[k] for r in chosen), 1) for k in KS}
    arm["p50_ms"] = round(statistics.median(latencies), 2)
    return arm


def make_copy_with_chunks(pack: Path, target: Path, n: int) -> Path:
    """A copy of ``pack`` whose store holds ``n`` chunks: its own plus repeats of them (same page,
    section and text, vectors perturbed), so a stage's cost can be measured at that size."""
    import numpy as np
    import pyarrow as pa

    from wikigr.pack.manifest import load_manifest
    from wikigr.pack.store import Store, vectors_to_arrow

    shutil.rmtree(target, ignore_errors=True)
    shutil.copytree(pack, target)
    with Store.open(target / "pack.db", read_only=False) as store:
        rows = store.rows(
            "MATCH (c:Chunk) RETURN c.id, c.article_id, c.section_id, c.ord, c.text, c.embedding "
            "ORDER BY c.id"
        )
        extra = [rows[i % len(rows)] for i in range(max(0, n - len(rows)))]
        if extra:
            rng = np.random.default_rng(0)
            vectors = np.asarray([r[5] for r in extra], dtype=np.float32)
            vectors += rng.normal(0, 0.02, vectors.shape).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            ids = [f"{r[0]}~{i}" for i, r in enumerate(extra)]
            store.copy(
                "Chunk",
                pa.table(
                    {
                        "id": ids,
                        "article_id": [r[1] for r in extra],
                        "section_id": [r[2] for r in extra],
                        "ord": [r[3] for r in extra],
                        "text": [r[4] for r in extra],
                        "embedding": vectors_to_arrow(vectors),
                    }
                ),
            )
            store.copy("HAS_CHUNK", pa.table({"from": [r[2] for r in extra], "to": ids}))
        chunks = store.count("Chunk")
    manifest = load_manifest(target / "manifest.json")
    manifest.stats.chunks = chunks
    manifest.dump(target / "manifest.json")
    return target


def time_stages(pack: Path, questions: list[dict[str, Any]], rounds: int = 2) -> dict[str, Any]:
    """Milliseconds of the documentation stages per query (from the agent's trace), and of the
    whole retrieval with and without them, in process; the page index load is timed apart."""
    out: dict[str, Any] = {"load_before": [round(x, 2) for x in os.getloadavg()]}
    arms = {"fusion": ["keyword"], "fusion+lit+pages": ["keyword", "literals", "page_score"]}
    for name, enable in arms.items():
        with KnowledgeGraphAgent(pack, profile="baseline", enable=enable, llm=None, top_k=10) as agent:
            out["chunks"] = agent.context.store.count("Chunk")
            first = agent.query(questions[0]["nl"]).trace
            stage_ms: dict[str, list[float]] = {}
            totals = []
            for _ in range(rounds):
                for q in questions:
                    trace = agent.query(q["nl"]).trace
                    totals.append(trace["retrieval_ms"])
                    for entry in trace["stages"]:
                        stage_ms.setdefault(entry["stage"], []).append(entry["ms"])
        arm: dict[str, Any] = {"retrieval_p50_ms": round(statistics.median(totals), 2)}
        arm["stages_p50_ms"] = {k: round(statistics.median(v), 2) for k, v in stage_ms.items()}
        if "page_score" in stage_ms:
            arm["page_score_p95_ms"] = round(
                sorted(stage_ms["page_score"])[int(0.95 * len(stage_ms["page_score"]))], 2
            )
            detail = next(e for e in first["stages"] if e["stage"] == "page_score").get("detail", {})
            arm["page_index_load_ms"] = detail.get("index_load_ms")
        out[name] = arm
    out["load_after"] = [round(x, 2) for x in os.getloadavg()]
    return out


TUNE_GRID = {
    "authority": [0.0, 0.1, 0.2, 0.3, 0.4, 0.5],
    "link_text": [0.0, 0.1, 0.2, 0.3],
    "top_chunks": [1, 3],
}


# page_score's definitions (defined_near: the weight; defined_spread; defined_top), in the auto profile.
DEFINED_GRID = {
    "defined_near": [0.0, 0.1, 0.2, 0.3, 0.4],
    "defined_spread": [0.3, 1.0],
    "defined_top": [50, 200],
}


def tune_defined(pack: Path, dev: list[dict[str, Any]]) -> dict[str, Any]:
    """R@k on the dev half for each setting of DEFINED_GRID (the auto profile): how page_score's
    use of the pack's definitions was chosen. The held-out half is not looked at."""
    rows = []
    for values in itertools.product(*DEFINED_GRID.values()):
        options = dict(zip(DEFINED_GRID, values, strict=True))
        if not options["defined_near"] and rows and not rows[-1]["defined_near"]:
            continue  # off: one row
        with KnowledgeGraphAgent(pack, llm=None, top_k=10, options={"page_score": options}) as agent:
            arm = run_arm("dev", dev, lambda text, a=agent: [page(s.url) for s in a.query(text).sources])
        rows.append({**options, **arm["all"]})
        print(json.dumps(rows[-1]), flush=True)
    return {"questions": f"the dev half ({len(dev)})", "arm": "auto", "grid": rows}


def tune(pack: Path, dev: list[dict[str, Any]]) -> dict[str, Any]:
    """R@k on the dev half for each `page_score` setting of TUNE_GRID (fusion + literals +
    page_score): how its weights were chosen. The held-out half is not looked at."""
    rows = []
    for authority, link_text, top_chunks in itertools.product(*TUNE_GRID.values()):
        options = {"authority": authority, "link_text": link_text, "top_chunks": top_chunks}
        kwargs: dict[str, Any] = {
            "profile": "baseline",
            "enable": [*_FUSION, "literals", "page_score"],
            "options": {"page_score": options},
        }
        with KnowledgeGraphAgent(pack, llm=None, top_k=10, **kwargs) as agent:
            arm = run_arm("dev", dev, lambda text, a=agent: [page(s.url) for s in a.query(text).sources])
        rows.append({**options, **arm["all"]})
        print(json.dumps(rows[-1]), flush=True)
    return {"questions": f"the dev half ({len(dev)})", "arm": "fusion+literals+page_score", "grid": rows}


def write_results(out: Path, results: dict[str, Any], replace: bool = False) -> None:
    """Write ``results`` to ``out``; the timing and tuning figures of earlier runs are kept (a full
    run replaces the rest)."""
    old = json.loads(out.read_text()) if out.is_file() else {}
    kept = {k: v for k, v in old.items() if k.startswith(("timing_", "dev_grid"))} if replace else old
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({**kept, **results}, indent=2) + "\n")


def main() -> int:
    parser = argparse.ArgumentParser(description="doc QA retrieval recall")
    parser.add_argument(
        "--pack", type=Path, default=None, help="default: packs/pydocs (bench/work/pydocs-whole with --whole)"
    )
    parser.add_argument(
        "--whole",
        action="store_true",
        help="the pack of the whole Python 3.11 docs (built once into bench/work)",
    )
    parser.add_argument("--build-only", action="store_true", help="with --whole: build the pack and stop")
    parser.add_argument(
        "--tune",
        nargs="?",
        const="weights",
        choices=["weights", "defined"],
        help="the dev-half grid of page_score's weights (TUNE_GRID), or of its use of the pack's "
        "definitions (--tune defined: DEFINED_GRID)",
    )
    parser.add_argument(
        "--timing",
        type=int,
        default=0,
        metavar="N",
        help="with --whole: time the documentation stages on a copy of the pack grown to N chunks "
        "(e.g. 10000) and add the figures to the JSON of the last --whole run",
    )
    parser.add_argument("--docs", type=Path, default=DOCS, help="the python3.11-doc HTML folder")
    parser.add_argument("--profiles", default="auto,baseline,balanced,max,graph,routed")
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="default: bench/results/docqa.json (docqa_whole.json with --whole)",
    )
    args = parser.parse_args()
    if not DATA.is_file():
        print(f"Error: {DATA} not found (the shared data sets)", file=sys.stderr)
        return 1
    if args.whole:
        args.pack = args.pack or WHOLE
        if not (args.pack / "manifest.json").is_file():
            if not (args.docs / "library" / "socket.html").is_file():
                print(
                    f"Error: no Python docs at {args.docs}: apt-get install python3.11-doc", file=sys.stderr
                )
                return 1
            build_whole(args.docs, args.pack)
        if args.build_only:
            return 0
    args.pack = args.pack or ROOT / "packs" / "pydocs"
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
    out = args.out or ROOT / "bench" / "results" / ("docqa_whole.json" if args.whole else "docqa.json")
    if args.whole and args.timing:
        copy = make_copy_with_chunks(
            args.pack, ROOT / "bench" / "work" / f"pydocs-whole-{args.timing}", args.timing
        )
        timing = time_stages(copy, questions)
        print(json.dumps(timing, indent=2))
        write_results(out, {f"timing_{args.timing}_chunks": timing})
        return 0
    if args.tune == "defined":
        grid = tune_defined(args.pack, questions[: len(questions) // 2])
        write_results(out, {"dev_grid_defined": {"loadavg": [round(x, 2) for x in os.getloadavg()], **grid}})
        return 0
    if args.tune:
        grid = tune(args.pack, questions[: len(questions) // 2])
        write_results(out, {"dev_grid": grid})
        return 0
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
        urls = dict(store.rows("MATCH (a:Article) RETURN a.id, a.url"))
        degrees = sorted(store.article_in_degrees().items(), key=lambda kv: (-kv[1], kv[0]))
        most_linked = {page(urls[a]): d for a, d in degrees[:5]}
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
    agent_arms: list[tuple[str, dict[str, Any]]] = [
        ("fusion", {"profile": "baseline", "enable": _FUSION}),
        *[(profile, {"profile": profile}) for profile in args.profiles.split(",") if profile],
        *NEW_ARMS,
    ]
    spots: dict[str, Any] = {}
    for name, kwargs in agent_arms:
        with KnowledgeGraphAgent(args.pack, llm=None, top_k=10, **kwargs) as agent:
            arms.append(
                run_arm(name, questions, lambda text, a=agent: [page(s.url) for s in a.query(text).sources])
            )
            if args.whole and name in SPOT_ARMS:
                tops = [
                    list(dict.fromkeys(page(s.url) for s in agent.query(q).sources))[:3]
                    for q, _ in SPOT_CHECKS
                ]
                hits = sum(top[:1] == [want] for top, (_, want) in zip(tops, SPOT_CHECKS, strict=True))
                spots[name.strip()] = {"top1_right": hits, "top3": tops}
    half = len(questions) // 2
    results = {
        "wikigr": __version__,
        "date": time.strftime("%Y-%m-%d"),
        "loadavg": [round(x, 2) for x in os.getloadavg()],
        "pack": str(args.pack.relative_to(ROOT)) if args.pack.is_relative_to(ROOT) else str(args.pack),
        "pages": len(pages),
        "chunks": len(chunk_page),
        "questions": len(questions),
        "halves": {
            "dev": f"questions 1-{half} in file order",
            "test": f"questions {half + 1}-{len(questions)}",
        },
        "gold_pages_missing_from_pack": missing,
        "questions_per_gold_page": dict(Counter(g for q in questions for g in q["gold"]).most_common(5)),
        "most_linked_pages": most_linked,
        "metric": "recall@k of the gold pages among the top k distinct pages, %",
        "arms_config": {name: kwargs for name, kwargs in agent_arms},
        "arms": arms,
    }
    if spots:
        results["spot_checks"] = {"questions": SPOT_CHECKS, "arms": spots}
    write_results(out, results, replace=True)
    print(
        f"CoNaLa dev ({len(questions)} questions: dev {half}, test {len(questions) - half}) over "
        f"{results['pack']} ({len(pages)} pages, {len(chunk_page)} chunks); load {results['loadavg']}"
    )
    print(
        f"{'arm':<14}"
        + "".join(f"{part + ' R@' + str(k):>11}" for part in ("dev", "test", "all") for k in KS)
        + f"{'p50 ms':>9}"
    )
    for arm in arms:
        cells = "".join(f"{arm[part]['R@' + str(k)]:>11}" for part in ("dev", "test", "all") for k in KS)
        print(f"{arm['arm']:<14}{cells}{arm['p50_ms']:>9}")
    for name, spot in spots.items():
        print(f"spot checks, {name}: the expected page first for {spot['top1_right']} of {len(SPOT_CHECKS)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
