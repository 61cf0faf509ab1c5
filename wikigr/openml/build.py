"""Build an OpenML pack: read exports (or fetch from the REST API), embed the dimension
descriptions, bulk-load the star into the store — atomically, like every wikigr build.

The pack is written in ``.NAME.partial`` beside the target and swapped in with renames at the end
(:func:`wikigr.pack.transaction.pack_transaction`). An API build caches every response in that folder as it
arrives, so running the same command again after an interruption resumes without refetching.
"""

from __future__ import annotations

import hashlib
import shutil
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from wikigr import __version__
from wikigr.build.write import write_support_files
from wikigr.embed import Embedder, default_embedder_name, get_embedder
from wikigr.embed_cache import EmbeddingCache, embed_cached
from wikigr.errors import BuildError, UsageError
from wikigr.home import expand_user, wikigr_home
from wikigr.openml.exports import ImportReport, import_exports
from wikigr.openml.families import FAMILIES
from wikigr.openml.kind import OPENML_SCHEMA_VERSION
from wikigr.openml.model import RUN_COLUMNS, StarData
from wikigr.pack import pack as layout
from wikigr.pack.manifest import (
    FORMAT_VERSION,
    EmbedderRecord,
    GraphStats,
    Manifest,
    OpenMLRecord,
    SourceRecord,
    check_name,
    now_iso,
)
from wikigr.pack.store import Store, vectors_to_arrow
from wikigr.pack.transaction import check_target, pack_transaction
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress

API_CACHE_DIR = "openml-cache"


@dataclass
class OpenMLBuildOptions:
    description: str = ""
    embedder: str = field(default_factory=default_embedder_name)
    fresh: bool = False  # ignore the response cache of an interrupted API build
    measure: str | None = None  # the OpenML evaluation measure the runs were scored with
    licence: str = ""  # recorded in the manifest (e.g. "MIT (amlb)")
    embedding_cache: bool = True  # reuse vectors of descriptions embedded by earlier builds


@dataclass
class OpenMLBuildReport:
    path: Path
    manifest: Manifest
    imported: ImportReport
    seconds: dict[str, float]
    requests: int = 0  # API requests sent in this run
    cached: int = 0  # API responses taken from the cache of an interrupted build


# -- writing the store ---------------------------------------------------------------------------


def _int_array(values: list[Any]) -> pa.Array:
    return pa.array(values, type=pa.int64())


def _float_array(values: list[Any]) -> pa.Array:
    return pa.array(values, type=pa.float64())


def write_star(
    path: Path,
    star: StarData,
    embedder: Embedder,
    progress: ProgressCallback,
    seconds: dict[str, float] | None = None,
    use_cache: bool = True,
) -> dict[str, int]:
    """Bulk-load ``star`` into a new OpenML store at ``path``; return the store's stats.
    ``seconds`` gets the time spent embedding (``embed``) and loading the store (``load``);
    ``use_cache``: reuse (and keep) the vectors of descriptions embedded before (:class:`EmbeddingCache`)."""
    timings = seconds if seconds is not None else {}
    algorithms = list(star.algorithms.values())
    datasets = list(star.datasets.values())
    tasks = list(star.tasks.values())
    used = sorted({a.family for a in algorithms})
    rules = {f: sorted({a.rule for a in algorithms if a.family == f and a.rule}) for f in used}
    names = {d.id: d.name for d in datasets}

    texts = (
        [a.text() for a in algorithms]
        + [f"Algorithm family {f} ({FAMILIES[f].paradigm}): {FAMILIES[f].description}" for f in used]
        + [d.text() for d in datasets]
        + [t.text(names.get(t.dataset_id, t.dataset_id)) for t in tasks]
    )
    progress(ProgressEvent("embed", 0, len(texts)))
    started = time.perf_counter()
    cache = EmbeddingCache(wikigr_home() / "cache" / "embeddings", embedder) if use_cache else None
    vectors = embed_cached(embedder, texts, cache)
    timings["embed"] = time.perf_counter() - started
    progress(ProgressEvent("embed", len(texts), len(texts)))
    started = time.perf_counter()
    offsets = np.cumsum([0, len(algorithms), len(used), len(datasets), len(tasks)])

    def block(i: int) -> pa.Array:
        return vectors_to_arrow(vectors[offsets[i] : offsets[i + 1]])

    progress(ProgressEvent("write", 0, 1))
    runs = star.runs.columns
    # Integer surrogate keys: position in each dimension; the Date key is its YYYYMMDD id.
    algorithm_keys = {a.id: i for i, a in enumerate(algorithms)}
    dataset_keys = {d.id: i for i, d in enumerate(datasets)}
    task_keys = {t.id: i for i, t in enumerate(tasks)}
    run_table = pa.table(
        {
            "id": pa.array(runs["id"], type=pa.string()),
            "key": pa.array(range(len(runs["id"])), type=pa.int64()),
            "run_id": _int_array(runs["run_id"]),
            "setup_id": _int_array(runs["setup_id"]),
            "fold": _int_array(runs["fold"]),
            "repeat": _int_array(runs["repeat"]),
            "accuracy": _float_array(runs["accuracy"]),
            "auc": _float_array(runs["auc"]),
            "f1": _float_array(runs["f1"]),
            "log_loss": _float_array(runs["log_loss"]),
            "runtime_s": _float_array(runs["runtime_s"]),
            "status": pa.array(runs["status"], type=pa.string()),
            "source": pa.array(runs["source"], type=pa.string()),
            "algorithm_key": _int_array([algorithm_keys[k] for k in runs["algorithm"]]),
            "dataset_key": _int_array([dataset_keys[k] for k in runs["dataset"]]),
            "task_key": _int_array([task_keys[k] for k in runs["task"]]),
            "date_key": _int_array(runs["date"]),
        }
    )
    assert tuple(run_table.column_names) == RUN_COLUMNS
    algorithm_table = pa.table(
        {
            "id": [a.id for a in algorithms],
            "key": _int_array(list(range(len(algorithms)))),
            "flow_id": _int_array([a.flow_id for a in algorithms]),
            "name": [a.name for a in algorithms],
            "version": [a.version for a in algorithms],
            "family": [a.family for a in algorithms],
            "paradigm": [a.paradigm for a in algorithms],
            "library": [a.library for a in algorithms],
            "description": [a.description or a.summary() for a in algorithms],
            "embedding": block(0),
        }
    )
    family_table = pa.table(
        {
            "id": used,
            "name": used,
            "paradigm": [FAMILIES[f].paradigm for f in used],
            "rule": ["; ".join(rules[f]) or "no rule matched" for f in used],
            "description": [FAMILIES[f].description for f in used],
            "embedding": block(1),
        }
    )
    dataset_table = pa.table(
        {
            "id": [d.id for d in datasets],
            "key": _int_array(list(range(len(datasets)))),
            "data_id": _int_array([d.data_id for d in datasets]),
            "name": [d.name for d in datasets],
            "rows": _int_array([d.rows for d in datasets]),
            "features": _int_array([d.features for d in datasets]),
            "classes": _int_array([d.classes for d in datasets]),
            "missing_pct": _float_array([d.missing_pct for d in datasets]),
            "majority_class": _int_array([d.majority_class for d in datasets]),
            "minority_class": _int_array([d.minority_class for d in datasets]),
            "imbalance_ratio": _float_array([d.imbalance_ratio for d in datasets]),
            "size_bucket": [d.size_bucket for d in datasets],
            "dimension_bucket": [d.dimension_bucket for d in datasets],
            "imbalance_bucket": [d.imbalance_bucket for d in datasets],
            "description": [d.description or d.summary() for d in datasets],
            "embedding": block(2),
        }
    )
    task_table = pa.table(
        {
            "id": [t.id for t in tasks],
            "key": _int_array(list(range(len(tasks)))),
            "task_id": _int_array([t.task_id for t in tasks]),
            "type": [t.type for t in tasks],
            "target": [t.target for t in tasks],
            "measure": [t.measure for t in tasks],
            "estimation": [t.estimation for t in tasks],
            "description": [
                f"{t.summary(names.get(t.dataset_id, t.dataset_id))}. {t.description}".rstrip(". ")
                for t in tasks
            ],
            "embedding": block(3),
        }
    )
    dates = star.dates()
    date_table = pa.table(
        {
            key: _int_array([d[key] for d in dates])
            if key in ("id", "year", "quarter", "month", "day")
            else pa.array([d[key] for d in dates], type=pa.string())
            for key in ("id", "date", "year", "quarter", "month", "month_name", "day", "weekday")
        }
    )
    dated = [i for i, d in enumerate(runs["date"]) if d is not None]

    store = Store.create(path, embedder.dimension, kind="openml")
    try:
        store.copy("Run", run_table)
        store.copy("Algorithm", algorithm_table)
        store.copy("AlgorithmFamily", family_table)
        store.copy("Dataset", dataset_table)
        store.copy("Task", task_table)
        store.copy("Date", date_table)
        run_keys = run_table.column("key")
        store.copy("USED_ALGORITHM", pa.table({"from": run_keys, "to": run_table.column("algorithm_key")}))
        store.copy("ON_DATASET", pa.table({"from": run_keys, "to": run_table.column("dataset_key")}))
        store.copy("FOR_TASK", pa.table({"from": run_keys, "to": run_table.column("task_key")}))
        store.copy(
            "RUN_ON_DATE",
            pa.table({"from": _int_array(dated), "to": _int_array([runs["date"][i] for i in dated])}),
        )
        store.copy(
            "PART_OF_TASK",
            pa.table(
                {
                    "from": _int_array([dataset_keys[t.dataset_id] for t in tasks]),
                    "to": _int_array(list(range(len(tasks)))),
                }
            ),
        )
        store.copy(
            "BELONGS_TO_FAMILY",
            pa.table(
                {"from": _int_array(list(range(len(algorithms)))), "to": [a.family for a in algorithms]}
            ),
        )
        stats = store.stats()
    finally:
        store.close()
    timings["load"] = time.perf_counter() - started
    progress(ProgressEvent("write", 1, 1))
    return stats


# -- the build -----------------------------------------------------------------------------------


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _describe(star: StarData, origin: str) -> str:
    families = len({a.family for a in star.algorithms.values()})
    return (
        f"OpenML results: {len(star.runs)} runs of {len(star.algorithms)} algorithms ({families} families) "
        f"on {len(star.datasets)} datasets and {len(star.tasks)} tasks, from {origin}"
    )


def _target(name: str, out: Path | None) -> Path:
    layout.check_new_name(name)
    target = expand_user(out or layout.packs_home() / name).absolute()
    check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    return target


def build_openml_pack(
    name: str,
    *,
    exports: Sequence[Path] = (),
    qualities: Sequence[Path] = (),
    api: Any = None,
    out: Path | None = None,
    options: OpenMLBuildOptions | None = None,
    on_progress: ProgressCallback | None = None,
) -> OpenMLBuildReport:
    """Build (or rebuild) the OpenML pack ``name`` from export files (``exports`` runs, with
    ``qualities``) or from the REST API (``api``: an :class:`wikigr.openml.fetch.ApiSelection`).
    """
    options = options or OpenMLBuildOptions()
    progress = on_progress or no_progress
    if bool(exports) == (api is not None):
        raise UsageError("give export files or an OpenML API selection (one of the two)")
    if qualities and not exports:
        raise UsageError("--openml-qualities goes with --openml-export")
    target = _target(name, out)
    started = time.perf_counter()
    embedder = get_embedder(options.embedder)
    seconds: dict[str, float] = {}
    requests = cached = 0

    with pack_transaction(target, fresh=options.fresh) as txn:
        partial = txn.partial
        api_cache = txn.scratch(API_CACHE_DIR)
        resuming = partial.exists()
        partial.mkdir(parents=True, exist_ok=True)
        t0 = time.perf_counter()
        sources: list[SourceRecord] = []
        if api is not None:
            from wikigr.openml.fetch import FetchError, fetch_star

            try:
                fetched = fetch_star(api, cache_dir=api_cache, on_progress=progress)
            except FetchError as exc:
                if not resuming and not exc.resumable:
                    shutil.rmtree(partial, ignore_errors=True)  # nothing worth resuming from
                raise
            star, imported = fetched.star, fetched.report
            requests, cached = fetched.requests, fetched.cached
            measure = api.measure
            listing = f"# OpenML REST API, {api.describe()}\n{api.base_url}\n"
            origin = f"the OpenML API at {api.base_url} ({api.describe()})"
            sources.append(
                SourceRecord(url=api.base_url, status="ok", final_url=api.base_url, fetched_at=now_iso())
            )
        else:
            paths = [expand_user(Path(p)) for p in exports]
            extra = [expand_user(Path(p)) for p in qualities]
            progress(ProgressEvent("read", 0, len(paths) + len(extra)))
            star, imported = import_exports(paths, extra, measure=options.measure)
            progress(ProgressEvent("read", len(paths) + len(extra), len(paths) + len(extra)))
            measure = options.measure or next((t.measure for t in star.tasks.values()), "")
            # Export files are named, not located: a pack never carries the builder's paths.
            listing = "# OpenML result exports\n" + "".join(f"{p.name}\n" for p in paths + extra)
            origin = ", ".join(p.name for p in paths + extra)
            for path in paths + extra:
                sources.append(
                    SourceRecord(
                        url=path.name,
                        status="ok",
                        final_url=path.name,
                        sha256=_sha256(path),
                        fetched_at=now_iso(),
                        content_type="text/x-arff" if path.suffix.lower() == ".arff" else "text/csv",
                        bytes=path.stat().st_size,
                    )
                )
        seconds["read"] = time.perf_counter() - t0
        if not len(star.runs):
            first = f" (first: {imported.examples[0]})" if imported.examples else ""
            raise BuildError(f"no run could be imported: {imported.malformed} malformed rows{first}")

        t0 = time.perf_counter()
        store_path = partial / layout.STORE_FILE
        for stale in partial.glob(layout.STORE_FILE + "*"):
            stale.unlink()
        stale_cache = partial / "cache"  # what an interrupted document build of this name left
        if stale_cache.is_dir():
            shutil.rmtree(stale_cache)
        stats = write_star(store_path, star, embedder, progress, seconds, options.embedding_cache)
        seconds["write"] = time.perf_counter() - t0

        manifest = Manifest(
            format_version=FORMAT_VERSION,
            name=check_name(name),
            description=options.description or _describe(star, origin),
            created_at=now_iso(),
            wikigr_version=__version__,
            source_kind="openml",
            embedder=EmbedderRecord(embedder.name, embedder.dimension, embedder.backend, embedder.digest),
            schema_version=OPENML_SCHEMA_VERSION,
            vector_index="exact",
            stats=GraphStats(**stats),
            sources=sources,
            openml=OpenMLRecord(
                origin="api" if api is not None else "export",
                measure=measure or "",
                api_url=api.base_url if api is not None else None,
                selection=api.describe() if api is not None else "",
                files=[Path(f.path).name for f in imported.files],
                rows=imported.rows,
                malformed_rows=imported.malformed,
                malformed_examples=imported.examples,
                notes=imported.notes,
                licence=options.licence,
            ),
        )
        manifest.dump(partial / layout.MANIFEST_FILE)
        write_support_files(partial, manifest, listing)
        txn.commit()
        seconds["total"] = time.perf_counter() - started

    return OpenMLBuildReport(
        path=target,
        manifest=manifest,
        imported=imported,
        seconds=seconds,
        requests=requests,
        cached=cached,
    )
