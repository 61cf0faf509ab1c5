"""Scale: distributed builds on Ray, the driver's write, packs in shards, and a cost model.

Parts (all by default; docs/scale.md explains the figures):

- ``throughput``: the same passages built in one process and with ``--ray`` (a local Ray on this
  machine's cores, started before the clock: its start-up is reported apart), entity graph
  included: chunks per second end to end, and the ratio (target >= 0.9).
- ``write``: the driver's write of a store from prepared documents (wikigr.build.write's ``write_store``
  without the entity graph: the rows, the BM25 index, COPY), on synthetic documents with random
  vectors: chunks per second (target >= 50,000), and COPY alone.
- ``shards``: MuSiQue-100 (../shared/data) in one store and in 3 and 10 shards, written from the
  same prepared documents (same chunks, same vectors): recall@5 of the default profile on the
  dev (1-50) and test (51-100) questions, and what crosses shard boundaries.
- ``latency``: exact vector search over synthetic unit vectors, ``--chunks`` (default 1M) in one
  store and in 10 shards searched in parallel: p50/p95 of one question.
- ``cost``: per-stage rates measured here (the first two parts and the skeleton's kNN at several
  sizes), turned into hours and machines for 1M and 30M chunks.

    uv run --extra ray python bench/scale.py [--parts throughput,write,shards,latency,cost]
        [--passages 400] [--write-chunks 100000] [--chunks 1000000] [--out bench/results/scale.json]

Writes JSON with the machine's load average at the start and the end (the machine is shared:
compare figures taken under similar load).
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
from _common import header, load

from wikigr.build import BuildOptions, build_pack
from wikigr.build.prepare import PreparedDocument, embed_pending, prepare_passage
from wikigr.build.write import write_store
from wikigr.embed import get_embedder

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "bench" / "work" / "scale"
MUSIQUE = ROOT.parent / "shared" / "data" / "multihop" / "musique_train100"
MAIN_MUSIQUE_PACK = Path("/work/main/bench/work/musique-100")  # vectors to reuse, when there
DIM = 384
STAT_KEYS = ("chunks", "entities", "relations", "facts")
SHARD_CHUNKS = 100_000  # the cost model's shard size


def musique_passages(limit: int | None = None) -> list[dict[str, Any]]:
    corpus = json.loads((MUSIQUE / "musique_train_corpus.json").read_text())
    rows = [{"id": str(i), "title": p["title"], "text": p["text"]} for i, p in enumerate(corpus)]
    return rows[:limit] if limit else rows


# -- throughput: one process vs Ray ------------------------------------------------------------


def part_throughput(passages: int, runs: int) -> dict[str, Any]:
    from wikigr.build.ray import RayOptions, connect

    WORK.mkdir(parents=True, exist_ok=True)
    corpus = WORK / "throughput.json"
    corpus.write_text(json.dumps(musique_passages(passages)))
    t0 = time.perf_counter()
    ray = connect(RayOptions())
    ray.get([ray.remote(lambda: 0).remote() for _ in range(4)])  # workers up
    startup = time.perf_counter() - t0
    cpus = int(ray.cluster_resources().get("CPU", 0))
    results: dict[str, list[dict[str, Any]]] = {"local": [], "ray": []}
    for _ in range(runs):
        for arm in ("local", "ray"):
            options = BuildOptions(fresh=True, ray=RayOptions() if arm == "ray" else None)
            start = time.perf_counter()
            report = build_pack(f"tp-{arm}", [], out=WORK / f"tp-{arm}", corpus=corpus, options=options)
            seconds = time.perf_counter() - start
            chunks = report.manifest.stats.chunks
            results[arm].append(
                {
                    "seconds": round(seconds, 2),
                    "chunks": chunks,
                    "chunks_per_s": round(chunks / seconds, 2),
                    "stages": {k: round(v, 2) for k, v in report.seconds.items()},
                    "graph_seconds": {
                        k: round(v, 2) for k, v in (report.graph.seconds if report.graph else {}).items()
                    },
                    "load": load(),
                }
            )
            print(f"throughput {arm}: {chunks} chunks in {seconds:.1f}s", file=sys.stderr)
    local = statistics.median(r["chunks_per_s"] for r in results["local"])
    distributed = statistics.median(r["chunks_per_s"] for r in results["ray"])
    return {
        "passages": passages,
        "ray_cpus": cpus,
        "ray_startup_s": round(startup, 2),
        "local": results["local"],
        "ray": results["ray"],
        "local_chunks_per_s": local,
        "ray_chunks_per_s": distributed,
        "ratio": round(distributed / local, 3),
        "target_ratio": 0.9,
    }


# -- the driver's write --------------------------------------------------------------------------


def synthetic_docs(chunks: int, per_doc: int = 5, seed: int = 0) -> list[PreparedDocument]:
    rng = np.random.default_rng(seed)
    words = ["alpha", "beta", "gamma", "delta", "river", "court", "journal", "bread", "garden", "music"]
    docs = []
    for d in range(math.ceil(chunks / per_doc)):
        n = min(per_doc, chunks - d * per_doc)
        vectors = rng.normal(size=(n, DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        texts = [" ".join(rng.choice(words, 40)) + f" doc{d} part{i}" for i in range(n)]
        url = f"passage:{d}"
        docs.append(
            PreparedDocument(
                source=url,
                fetch={
                    "url": url,
                    "final_url": url,
                    "sha256": f"{d:064x}",
                    "fetched_at": "2026-01-01T00:00:00Z",
                    "content_type": "text/plain",
                    "bytes": 100,
                    "error": None,
                },
                title=f"Document {d}",
                sections=[{"title": "", "level": 0, "text": " ".join(texts), "anchor": ""}],
                chunks=[{"section": 0, "ord": i, "text": t} for i, t in enumerate(texts)],
                embeddings=vectors,
            )
        )
    return docs


def _write_in_shards(docs: list[PreparedDocument], count: int) -> dict[str, Any]:
    """The same documents written as ``count`` shards: one after the other here, and in parallel
    by Ray tasks (a ``--ray --shards`` build); chunks per second of each."""
    from wikigr.build.ray import RayOptions, connect
    from wikigr.build.shards import write_shards
    from wikigr.build.write import classify_sources

    _, records, _ = classify_sources([d.source for d in docs], {d.source: d for d in docs})
    embedder = get_embedder(BuildOptions().embedder)
    chunks = sum(len(d.chunks) for d in docs)
    connect(RayOptions())
    found: dict[str, Any] = {"shards": count}
    for arm, ray in (("sequential", None), ("ray_parallel", RayOptions())):
        folder = WORK / f"write-shards-{arm}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        options = BuildOptions(graph=False, ray=ray)
        start = time.perf_counter()
        write_shards(folder, "w", docs, records, embedder, options, "write", count)
        seconds = time.perf_counter() - start
        found[arm] = {"seconds": round(seconds, 2), "chunks_per_s": round(chunks / seconds)}
        shutil.rmtree(folder, ignore_errors=True)
    return found


FLOOR_ROWS = 50_000  # rows of the vector column's COPY variants


def _vector_copy_floor(matrix: np.ndarray) -> dict[str, Any]:
    """Where COPY of the vector column spends its time: the same vectors (one ``id`` and the
    ``embedding`` column) given to LadybugDB in several ways, rows per second of each (COPY and
    the checkpoint that writes the rows to the file). The engine itself is measured here, so
    this talks to it directly."""
    import ladybug  # noqa: TID251  (LadybugDB's own COPY is what is measured)
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wikigr.pack.store import vectors_to_arrow

    n = len(matrix)
    ids = [f"c{i}" for i in range(n)]
    fixed = vectors_to_arrow(matrix)
    listed = pa.array(list(matrix), pa.list_(pa.float32()))
    blobs = pa.array([row.tobytes() for row in matrix], pa.binary())
    path = WORK / "floor.db"
    parquet = WORK / "floor.parquet"
    pq.write_table(pa.table({"id": ids, "embedding": fixed}), parquet)
    variants: list[tuple[str, str, Any, dict[str, Any]]] = [
        ("FLOAT[384] from fixed_size_list<float32>[384] (the build's)", f"FLOAT[{DIM}]", fixed, {}),
        (
            "FLOAT[384] from list<float32>",
            f"FLOAT[{DIM}]",
            listed,
            {},
        ),
        ("FLOAT[] from list<float32>", "FLOAT[]", listed, {}),
        ("FLOAT[384] from a parquet file", f"FLOAT[{DIM}]", parquet, {}),
        ("FLOAT[384], compression off", f"FLOAT[{DIM}]", fixed, {"compression": False}),
        ("FLOAT[384], 4 GiB buffer pool", f"FLOAT[{DIM}]", fixed, {"buffer_pool_size": 4 << 30}),
        (
            "INT32[384]: the same bytes, not floats",
            f"INT32[{DIM}]",
            pa.FixedSizeListArray.from_arrays(pa.array(matrix.reshape(-1).view(np.int32)), DIM),
            {},
        ),
        (
            "BLOB: the same bytes, one value a row",
            "BLOB",
            blobs,
            {},
        ),
        ("no vector: the ids alone", "", None, {}),
        ("FLOAT[384] in memory (no file, no checkpoint)", f"FLOAT[{DIM}]", fixed, {"memory": True}),
    ]
    found: dict[str, Any] = {"rows": n}
    for name, column, data, options in variants:
        for stale in WORK.glob("floor.db*"):
            stale.unlink()
        memory = options.pop("memory", False)
        db = (
            ladybug.Database(**options)
            if memory
            else ladybug.Database(str(path), auto_checkpoint=False, **options)
        )
        conn = ladybug.Connection(db)
        columns = f"id STRING, embedding {column}" if column else "id STRING"
        conn.execute(f"CREATE NODE TABLE T({columns}, PRIMARY KEY(id))")
        if not isinstance(data, Path):
            arrow_input = pa.table({"id": ids, "embedding": data} if column else {"id": ids})  # noqa: F841
        start = time.perf_counter()
        conn.execute(f"COPY T FROM '{data}'" if isinstance(data, Path) else "COPY T FROM arrow_input")
        copied = time.perf_counter()
        if not memory:
            conn.execute("CHECKPOINT")
        done = time.perf_counter()
        conn.close()
        db.close()
        found[name] = {
            "copy_s": round(copied - start, 2),
            "checkpoint_s": round(done - copied, 2),
            "rows_per_s": round(n / (done - start)),
        }
    for stale in [*WORK.glob("floor.db*"), parquet]:
        stale.unlink()
    found["load"] = load()
    return found


def part_write(chunks: int, shards: int) -> dict[str, Any]:
    from wikigr.pack.keyword import build_keyword_index
    from wikigr.pack.store import Store, vectors_to_arrow

    WORK.mkdir(parents=True, exist_ok=True)
    docs = synthetic_docs(chunks)
    folder = WORK / "write"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    start = time.perf_counter()
    stats = write_store(folder / "pack.db", docs, DIM, BuildOptions(graph=False))
    total = time.perf_counter() - start
    # Its parts: the BM25 index, and COPY of the chunk rows alone.
    texts = [c["text"] for d in docs for c in d.chunks]
    ids = [f"c{i}" for i in range(len(texts))]
    t0 = time.perf_counter()
    build_keyword_index(WORK / "write-bm25", ids, texts)
    bm25 = time.perf_counter() - t0
    import pyarrow as pa

    matrix = np.vstack([d.embeddings for d in docs if d.embeddings is not None])
    table = pa.table(
        {
            "id": ids,
            "article_id": ["a"] * len(ids),
            "section_id": ["s"] * len(ids),
            "ord": list(range(len(ids))),
            "text": texts,
            "embedding": vectors_to_arrow(matrix),
        }
    )
    path = WORK / "write-copy.db"
    for stale in WORK.glob("write-copy.db*"):
        stale.unlink()
    with Store.create(path, DIM) as store:
        t0 = time.perf_counter()
        store.copy("Chunk", table)
        copy = time.perf_counter() - t0
    for stale in WORK.glob("write-copy.db*"):
        stale.unlink()
    with Store.create(path, DIM) as store:  # the same rows without their vectors (the Fact table)
        bare = pa.table(
            {
                "id": ids,
                "subject": table.column("article_id"),
                "predicate": table.column("section_id"),
                "object": [""] * len(ids),
                "text": texts,
            }
        )
        t0 = time.perf_counter()
        store.copy("Fact", bare)
        copy_bare = time.perf_counter() - t0
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(WORK / "write-bm25", ignore_errors=True)
    floor = _vector_copy_floor(matrix[:FLOOR_ROWS])
    print(f"write: the vector column's COPY {floor}", file=sys.stderr)
    sharded = _write_in_shards(docs, shards)
    for stale in WORK.glob("write-copy.db*"):
        stale.unlink()
    return {
        "chunks": stats["chunks"],
        "write_seconds": round(total, 2),
        "write_chunks_per_s": round(chunks / total),
        "bm25_seconds": round(bm25, 2),
        "copy_chunk_table_seconds": round(copy, 2),
        "copy_chunks_per_s": round(chunks / copy),
        "copy_without_vectors_rows_per_s": round(chunks / copy_bare),
        "vector_copy_floor": floor,
        "in_shards": sharded,
        "target_chunks_per_s": 50_000,
        "load": load(),
    }


# -- shards: recall and what crosses -------------------------------------------------------------


def prepared_musique() -> list[PreparedDocument]:
    """The MuSiQue-100 passages prepared as a build prepares them; vectors from the main bench pack
    when its chunks are the same texts (no re-embedding), else embedded here."""
    from wikigr.build.prepare import embedding_text
    from wikigr.pack.store import Store

    options = BuildOptions()
    docs = [prepare_passage((p["id"], p["title"], p["text"]), options) for p in musique_passages()]
    docs = [d for d in docs if d.error is None]
    pool: dict[str, np.ndarray] = {}
    if (MAIN_MUSIQUE_PACK / "pack.db").is_file():
        with Store.open(MAIN_MUSIQUE_PACK / "pack.db", read_only=True) as store:
            rows = store.rows(
                "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk) "
                "RETURN a.title, s.title, c.text, c.embedding"
            )
        pool = {embedding_text(r[0], r[1], r[2]): np.asarray(r[3], np.float32) for r in rows}
    embed_pending(docs, get_embedder(options.embedder), None, lambda _e: None, pool.get)
    return docs


def json_sources(manifest: Path) -> list[Any]:
    from wikigr.pack.manifest import load_manifest

    return list(load_manifest(manifest).sources)


def part_shards(counts: list[int]) -> dict[str, Any]:
    sys.path.insert(0, str(ROOT / "bench"))
    import multihop

    from wikigr.build.shards import write_shards
    from wikigr.build.write import classify_sources, write_documents_pack
    from wikigr.embed import get_embedder
    from wikigr.pack.store import Store
    from wikigr.packset import open_agent

    _, questions = multihop.load_musique()
    docs = prepared_musique()
    _, records, aliases = classify_sources([d.source for d in docs], {d.source: d for d in docs})
    embedder = get_embedder(BuildOptions().embedder)
    options = BuildOptions()
    out: dict[str, Any] = {"questions": len(questions), "passages": len(docs), "arms": []}
    import hashlib

    import wikigr.build.shards as shards_module

    graph_placement = shards_module.assign_shards

    def hash_placement(docs: list[PreparedDocument], count: int) -> list[int]:  # the arm to compare with
        return [int(hashlib.sha256(d.source.encode()).hexdigest()[:12], 16) % count for d in docs]

    folders: dict[str, Path] = {}
    placed: dict[str, dict[str, int]] = {}  # arm -> article id -> its shard
    arms = [("1 store", 1, graph_placement)] + [
        (f"{count} stores ({name})", count, placement)
        for count in counts
        for name, placement in (("graph", graph_placement), ("hash", hash_placement))
    ]
    for label, count, placement in arms:
        shards_module.assign_shards = placement  # type: ignore[assignment]
        folder = WORK / f"musique-{label.replace(' ', '-').strip('()')}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        start = time.perf_counter()
        if count == 1:
            manifest = write_documents_pack(
                folder, "musique", docs, records, embedder, options, "MuSiQue", aliases=aliases
            )
        else:
            manifest = write_shards(
                folder, "musique", docs, records, embedder, options, "MuSiQue", count, aliases=aliases
            )
        manifest.dump(folder / "manifest.json")
        placed[label] = {
            source.final_url or source.url: index
            for index, record in enumerate(manifest.shards)
            for source in json_sources(folder / record.path / "manifest.json")
        }
        (folder / "kg_config.json").write_text('{"profile": "auto"}\n')
        print(f"{label}: written in {time.perf_counter() - start:.1f}s", file=sys.stderr)
        folders[label] = folder
        with open_agent(folder, llm=None, top_k=10) as agent:  # in shards: one agent over their union
            arm = multihop.run_arm(
                label,
                questions,
                lambda q, a=agent: [
                    multihop.chunk_articles_from_url(s.url) for s in a.query(q["question"]).sources[:10]
                ],
            )
            union = agent.context.store  # the pack's entity graph as a question sees it
            relations = {(a, b, kind) for a, b, kind, _ in union.entity_relations()}
            arm["graph"] = {
                "entities": len(union.entities()),
                "mentions": len(set(union.entity_mentions())),
                "relations": len(relations),
                "synonyms": sum(kind == "SYNONYM" for _, _, kind in relations),
            }
        arm["stats"] = {k: getattr(manifest.stats, k) for k in STAT_KEYS}
        out["arms"].append(arm)
        print(f"{arm['arm']}: {arm['dev']}, {arm['test']}", file=sys.stderr)
    shards_module.assign_shards = graph_placement  # type: ignore[assignment]
    # What crosses: entities shared by chunks of different shards, and gold passages split.
    with Store.open(folders["1 store"] / "pack.db", read_only=True) as store:
        mentions = store.entity_mentions()
        chunk_article = dict(store.rows("MATCH (c:Chunk) RETURN c.id, c.article_id"))
    by_entity: dict[str, list[str]] = {}
    for chunk, entity in mentions:
        by_entity.setdefault(entity, []).append(chunk_article[chunk])
    crossing: dict[str, Any] = {}
    for label, _count, _ in arms[1:]:
        pairs = cut = 0
        bridges = 0
        for articles in by_entity.values():
            if not 2 <= len(articles) <= 20:  # the entities a multi-hop walk goes through (low df)
                continue
            per_shard: dict[int, int] = {}
            for article in articles:
                per_shard[placed[label][article]] = per_shard.get(placed[label][article], 0) + 1
            n = len(articles)
            pairs += n * (n - 1) // 2
            cut += n * (n - 1) // 2 - sum(m * (m - 1) // 2 for m in per_shard.values())
            bridges += len(per_shard) > 1
        split = sum(len({placed[label][g] for g in q["gold"]}) > 1 for q in questions)
        one = next(a for a in out["arms"] if a["arm"] == "1 store")
        mine = next(a for a in out["arms"] if a["arm"] == label)
        crossing[label] = {
            "entity_pairs_cut_pct": round(100 * cut / max(pairs, 1), 1),
            "entities_in_several_shards": bridges,
            "questions_with_gold_in_several_shards_pct": round(100 * split / len(questions), 1),
            "entities_summed_over_shards_vs_one_store": [mine["stats"]["entities"], one["stats"]["entities"]],
            "graph_of_the_union_vs_one_store": {k: [mine["graph"][k], one["graph"][k]] for k in one["graph"]},
            "relations_summed_over_shards_vs_one_store": [
                mine["stats"]["relations"],
                one["stats"]["relations"],
            ],
            "delta_R@5_test_points": round(mine["test"]["R@5"] - one["test"]["R@5"], 1),
            "delta_R@5_dev_points": round(mine["dev"]["R@5"] - one["dev"]["R@5"], 1),
        }
    out["crossing"] = crossing
    out["load"] = load()
    for folder in folders.values():
        shutil.rmtree(folder, ignore_errors=True)
    return out


# -- latency: 1M synthetic vectors in one store and in 10 shards ----------------------------------


def _synthetic_store(path: Path, vectors: np.ndarray, offset: int) -> None:
    import pyarrow as pa

    from wikigr.pack.store import Store, vectors_to_arrow

    n = len(vectors)
    ids = [f"c{offset + i:08d}" for i in range(n)]
    articles = [f"a{(offset + i) // 100:07d}" for i in range(n)]
    unique = list(dict.fromkeys(articles))
    with Store.create(path, DIM) as store:
        store.copy(
            "Article",
            pa.table(
                {
                    "id": unique,
                    "title": unique,
                    "url": unique,
                    "source_url": unique,
                    "content_type": ["text/plain"] * len(unique),
                    "sha256": [""] * len(unique),
                    "fetched_at": [""] * len(unique),
                    "word_count": [0] * len(unique),
                }
            ),
        )
        sections = [f"{a}:0" for a in unique]
        store.copy(
            "Section",
            pa.table(
                {
                    "id": sections,
                    "article_id": unique,
                    "title": [""] * len(unique),
                    "anchor": [""] * len(unique),
                    "level": [0] * len(unique),
                    "ord": [0] * len(unique),
                    "text": [""] * len(unique),
                    "embedding": vectors_to_arrow(np.zeros((len(unique), DIM), np.float32)),
                }
            ),
        )
        store.copy(
            "Chunk",
            pa.table(
                {
                    "id": ids,
                    "article_id": articles,
                    "section_id": [f"{a}:0" for a in articles],
                    "ord": [i % 100 for i in range(n)],
                    "text": [f"chunk {offset + i}" for i in range(n)],
                    "embedding": vectors_to_arrow(vectors),
                }
            ),
        )
        store.copy("HAS_SECTION", pa.table({"from": unique, "to": sections}))
        store.copy("HAS_CHUNK", pa.table({"from": [f"{a}:0" for a in articles], "to": ids}))


def _vectors(n: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    matrix = rng.normal(size=(n, DIM)).astype(np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix


def part_latency(chunks: int, shards: int, queries: int) -> dict[str, Any]:
    from wikigr.pack.store import Store

    folder = WORK / "latency"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    per = chunks // shards
    t0 = time.perf_counter()
    for i in range(shards):  # the shards first: then the one store from the same vectors
        _synthetic_store(folder / f"shard{i}.db", _vectors(per, seed=i), i * per)
    shard_write = time.perf_counter() - t0
    t0 = time.perf_counter()
    whole = np.vstack([_vectors(per, seed=i) for i in range(shards)])
    _synthetic_store(folder / "one.db", whole, 0)
    del whole
    one_write = time.perf_counter() - t0
    size = sum(p.stat().st_size for p in folder.iterdir())
    questions = _vectors(queries, seed=999)

    def timed(search: Any) -> tuple[list[float], list[list[str]]]:
        times, tops = [], []
        for q in questions:
            start = time.perf_counter()
            tops.append(search(q.tolist()))
            times.append((time.perf_counter() - start) * 1000)
        return times, tops

    with Store.open(folder / "one.db", read_only=True) as one:
        one.search_chunks(questions[0].tolist(), 5)  # warm
        one_ms, one_tops = timed(lambda q: [h.chunk_id for h in one.search_chunks(q, 5)])
        vector_path = one.vector_path
    stores = [Store.open(folder / f"shard{i}.db", read_only=True) for i in range(shards)]
    try:
        with ThreadPoolExecutor(max_workers=shards) as pool:

            def fan_out(q: list[float]) -> list[str]:
                hits = [h for part in pool.map(lambda s: s.search_chunks(q, 5), stores) for h in part]
                return [h.chunk_id for h in sorted(hits, key=lambda h: -h.score)[:5]]

            fan_out(questions[0].tolist())
            shard_ms, shard_tops = timed(fan_out)
    finally:
        for store in stores:
            store.close()
    shutil.rmtree(folder, ignore_errors=True)

    def pct(values: list[float], q: float) -> float:
        return round(sorted(values)[int(q * (len(values) - 1))], 1)

    return {
        "chunks": chunks,
        "dimension": DIM,
        "shards": shards,
        "vector_path": vector_path,
        "store_bytes": size,
        "write_seconds": {"one_store": round(one_write, 1), f"{shards}_shards": round(shard_write, 1)},
        "write_chunks_per_s": {
            "one_store": round(chunks / one_write),
            f"{shards}_shards": round(chunks / shard_write),
        },
        "queries": queries,
        "one_store_ms": {"p50": pct(one_ms, 0.5), "p95": pct(one_ms, 0.95)},
        f"{shards}_shards_parallel_ms": {"p50": pct(shard_ms, 0.5), "p95": pct(shard_ms, 0.95)},
        "same_top5": sum(a == b for a, b in zip(one_tops, shard_tops, strict=True)),
        "load": load(),
    }


# -- the cost model ------------------------------------------------------------------------------


def skeleton_seconds(sizes: list[int]) -> dict[str, float]:
    from wikigr.graph.skeleton import skeleton

    found = {}
    for n in sizes:
        vectors = _vectors(n, seed=n)
        start = time.perf_counter()
        skeleton(vectors)
        found[str(n)] = round(time.perf_counter() - start, 2)
    return found


def approximate_knn() -> dict[str, Any]:
    """The skeleton's approximate kNN (above EXACT_MAX chunks): its time on synthetic vectors at
    two sizes (for the n^1.5 rate), and on the real vectors of bench/work/mixed-10k (10,278 chunks,
    forced approximate) how many of the exact neighbours it finds and how much of the exact
    skeleton it keeps."""
    from wikigr.graph.skeleton import EXACT_MAX, PROBE, knn_graph, pagerank

    seconds = {}
    for n in (2 * EXACT_MAX, 4 * EXACT_MAX):
        vectors = _vectors(n, seed=n)
        start = time.perf_counter()
        knn_graph(vectors)
        seconds[str(n)] = round(time.perf_counter() - start, 2)
        del vectors
    out: dict[str, Any] = {"exact_max": EXACT_MAX, "probe": PROBE, "seconds": seconds}
    pack = WORK.parent / "mixed-10k"
    if (pack / "manifest.json").is_file():
        from wikigr.pack.pack import open_pack

        with open_pack(pack).open_store() as store:
            matrix = np.asarray(store.chunk_matrix()[2], dtype=np.float32)
        exact = knn_graph(matrix, exact_max=len(matrix))
        approx = knn_graph(matrix, exact_max=100)

        def rows(graph: Any) -> list[set[int]]:
            return [
                set(graph.indices[graph.indptr[i] : graph.indptr[i + 1]].tolist()) for i in range(len(matrix))
            ]

        e, a = rows(exact), rows(approx)
        count = round(0.25 * len(matrix))
        top_e = set(np.argsort(-pagerank(exact), kind="stable")[:count].tolist())
        top_a = set(np.argsort(-pagerank(approx), kind="stable")[:count].tolist())
        out["mixed_10k"] = {
            "chunks": len(matrix),
            "edge_recall": round(
                float(np.mean([len(e[i] & a[i]) / max(1, len(e[i])) for i in range(len(e))])), 3
            ),
            "skeleton_overlap": round(len(top_e & top_a) / count, 3),
        }
    return out


def cost_model(
    throughput: dict[str, Any], write: dict[str, Any], latency: dict[str, Any] | None
) -> dict[str, Any]:
    """Hours for N chunks on M machines like this one (2 cores): the workers' part divides by M,
    the driver's (the write, the skeleton's kNN, the merge) does not. The skeleton's kNN is exact
    up to EXACT_MAX chunks (quadratic), approximate above (about n^1.5: wikigr.graph.skeleton)."""
    ray_run = throughput["ray"][-1]
    chunks = ray_run["chunks"]
    graph = ray_run["graph_seconds"]
    # Workers (per machine): fetch/parse/chunk/embed/names, spaCy on the skeleton, entity names.
    worker_s_per_chunk = (
        ray_run["stages"]["prepare"] + graph.get("extract", 0) + graph.get("entity_vectors", 0)
    ) / chunks
    driver_s_per_chunk = (
        1 / write["write_chunks_per_s"] + (graph.get("keywords", 0) + graph.get("merge", 0)) / chunks
    )
    from wikigr.graph.skeleton import EXACT_MAX

    sizes = [5000, 10000, 20000]
    skel = skeleton_seconds(sizes)
    c2 = skel[str(sizes[-1])] / sizes[-1] ** 2  # the exact kNN is quadratic
    approx = approximate_knn()
    largest = max(approx["seconds"], key=int)
    c15 = approx["seconds"][largest] / int(largest) ** 1.5  # the approximate kNN: about n^1.5
    model: dict[str, Any] = {
        "measured": {
            "worker_seconds_per_chunk_per_machine": round(worker_s_per_chunk, 4),
            "worker_chunks_per_s_per_machine": round(1 / worker_s_per_chunk, 1),
            "driver_seconds_per_chunk": round(driver_s_per_chunk, 6),
            "skeleton_seconds": skel,
            "skeleton_seconds_per_chunk_squared": c2,
            "approximate_knn": approx,
            "approximate_knn_seconds_per_chunk_1_5": c15,
            "vector_bytes_per_chunk": DIM * 4,
        },
        "targets": {},
    }
    for n in (1_000_000, 30_000_000):
        worker_h = n * worker_s_per_chunk / 3600
        driver_h = n * driver_s_per_chunk / 3600
        skeleton_h = (c2 * n * n if n <= EXACT_MAX else c15 * n**1.5) / 3600
        rows = {}
        for machines in (1, 10, 100, 1000):
            rows[str(machines)] = round(worker_h / machines + driver_h + skeleton_h, 1)
        need = {}
        for hours in (8, 24):
            left = hours - driver_h - skeleton_h
            need[f"{hours}h"] = math.ceil(worker_h / left) if left > 0 else None
        model["targets"][str(n)] = {
            "worker_machine_hours": round(worker_h, 1),
            "driver_hours_write_and_merge": round(driver_h, 2),
            "driver_hours_skeleton": round(skeleton_h, 2),
            "hours_by_machines": rows,
            "machines_to_finish_within": need,
            "driver_memory_gb_vectors": round(n * DIM * 4 / 1e9, 1),
            "exact_query_ms_one_store": round(latency["one_store_ms"]["p50"] * n / latency["chunks"], 0)
            if latency
            else None,
        }
        # In shards of SHARD_CHUNKS, each written by a Ray task (the shards in parallel); the
        # entity graph is the one store's, built once on the driver: the merge and the skeleton's
        # kNN over all the chunks stay there (wikigr.pack.shards).
        shards = math.ceil(n / SHARD_CHUNKS)
        per_shard_s = SHARD_CHUNKS / write["write_chunks_per_s"]
        sharded_worker_h = worker_h + shards * per_shard_s / 3600
        merge_h = n * (driver_s_per_chunk - 1 / write["write_chunks_per_s"]) / 3600 + skeleton_h
        model["targets"][str(n)]["in_shards"] = {
            "shards": shards,
            "chunks_per_shard": SHARD_CHUNKS,
            "worker_machine_hours": round(sharded_worker_h, 1),
            "driver_hours_merge_and_skeleton": round(merge_h, 2),
            "hours_by_machines": {
                str(m): round(max(sharded_worker_h / m, per_shard_s / 3600) + merge_h, 1)
                for m in (1, 10, 100, 1000)
            },
            "machines_to_finish_within": {
                f"{h}h": math.ceil(sharded_worker_h / (h - merge_h)) if h > merge_h else None for h in (8, 24)
            },
            "exact_query_ms_per_shard": (
                round(latency["one_store_ms"]["p50"] * SHARD_CHUNKS / latency["chunks"]) if latency else None
            ),
        }
    return model


def main() -> int:
    parser = argparse.ArgumentParser(
        description="scale: Ray builds, the driver's write, shards, latency, cost"
    )
    parser.add_argument("--parts", default="throughput,write,shards,latency,cost")
    parser.add_argument("--passages", type=int, default=400)
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--write-chunks", type=int, default=100_000)
    parser.add_argument("--write-shards", type=int, default=4)
    parser.add_argument("--chunks", type=int, default=1_000_000)
    parser.add_argument("--shards", default="3,10")
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "scale.json")
    args = parser.parse_args()
    parts = set(args.parts.split(","))
    previous = json.loads(args.out.read_text()) if args.out.is_file() else {}
    result: dict[str, Any] = {
        **previous,
        **header(),
    }
    if "throughput" in parts:
        result["throughput"] = part_throughput(args.passages, args.runs)
    if "write" in parts:
        result["driver_write"] = part_write(args.write_chunks, args.write_shards)
        print(f"write: {result['driver_write']}", file=sys.stderr)
    if "shards" in parts:
        result["shards"] = part_shards([int(c) for c in args.shards.split(",")])
    if "latency" in parts:
        result["latency"] = part_latency(args.chunks, 10, args.queries)
        print(f"latency: {result['latency']}", file=sys.stderr)
    if "cost" in parts and "throughput" in result and "driver_write" in result:
        result["cost_model"] = cost_model(result["throughput"], result["driver_write"], result.get("latency"))
    result["load_average_at_end"] = load()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "shards"}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
