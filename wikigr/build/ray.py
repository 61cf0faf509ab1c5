"""Distributed builds on Ray: the per-document work of a build spread over a cluster's workers.

    uv sync --extra ray                                   # or: pip install 'wikigr[ray]'
    wikigr pack create wiki --urls urls.txt --ray          # a local Ray on all cores
    RAY_ADDRESS=ray://head:10001 wikigr pack create wiki --urls urls.txt --ray   # a cluster

A distributed build is the build of wikigr.build.pipeline with its per-document work on Ray, nothing of
our own besides (no sockets, schedulers or worker pools: Ray tasks, ``ray.wait`` and the object
store). What runs where:

- **Workers** (the Ray task :func:`prepare_batch`, about ``batch_chunks`` chunks per task): for a
  batch of sources, fetch (a batch of URLs with ``fetch_all``), parse and chunk (wikigr.build.prepare's
  ``prepare_fetched`` / ``prepare_passage``), embed (``embed_pending``; the embedder is loaded
  once per worker process, as ``get_embedder`` keeps it; when the user did not choose the embedder,
  only batches in English until a document in another language is seen, the others once the
  languages have chosen it: :func:`prepare_on_ray`), and find each chunk's keyword names
  (``graph.extract.keyword_entities``: the names are normalised there). The batch comes back as one
  Arrow table: a row per document, its chunk vectors as a list of fixed-size float32 lists.
- **The driver** caches each document as its batch arrives — the resume cache of a local build,
  so an interrupted distributed build resumes without fetching or embedding those documents again
  — then merges globally what spans the corpus: duplicates, links, and the entity graph (names
  merged by key over every chunk, the skeleton by PageRank over all the chunk vectors). spaCy's
  extraction of the skeleton's chunks and the embedding of entity names run as Ray tasks again
  (:class:`RayExtractor`, :class:`RayEmbed`). The store is written by the driver with COPY (bulk
  load), as a local build writes it; with ``--shards N``, one store per shard, each by a Ray task
  (wikigr.build.shards' ``write_shard_task``) given its part of the pack's entity graph.

A source that fails on a worker (unreachable, not parseable, no text) is reported like a local
one; a task that fails as a whole (its worker died, after Ray's retries) marks its sources failed
with the reason, and the build goes on. Ray is an optional extra: without it, :func:`connect`
raises a one-line :class:`UsageError` saying how to install it.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import logging
import os
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any

import numpy as np

from wikigr import lang
from wikigr.build.cache import BuildCache
from wikigr.build.languages import choose_embedder, language_counts, not_english
from wikigr.build.options import BuildOptions
from wikigr.build.prepare import (
    PreparedDocument,
    embed_pending,
    passage_url,
    prepare_fetched,
    prepare_passage,
)
from wikigr.embed import DEFAULT_EMBEDDER, Embedder, embedder_info, get_embedder
from wikigr.errors import BuildError, EmbedderUnavailableError, UsageError
from wikigr.graph.extract import Extraction, SpacyExtractor, keyword_entities
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.sources.fetch import fetch_all
from wikigr.sources.urls import normalize_url

if TYPE_CHECKING:
    import pyarrow as pa

INSTALL_HINT = "--ray needs Ray: install the extra with `uv sync --extra ray` or `pip install 'wikigr[ray]'`"
BATCH_CHUNKS = 256  # about this many chunks per task (the build embeds EMBED_GROUP between cache writes)
BATCH_URLS = 16  # URLs per task (their chunk count is unknown before they are fetched)
EXTRACT_BATCH = 64  # skeleton chunks per spaCy task
EMBED_BATCH = 512  # entity names per embedding task
# At least one task per CPU when the batch sizes above would give fewer (a small build then keeps
# every worker busy). Not more: smaller tasks were slower here (bench/scale.py, 400 passages).
TASKS_PER_CPU = 1
# A local Ray's start is tried again when it times out. Ray (2.60) gives its helper processes
# fixed windows that no setting changes (15 s for the dashboard agent to write its ports, 30 s for
# the raylet to register), and a busy machine misses them; on a fresh machine the first start also
# compiles and caches Ray's bytecode, which makes the next one about twice as fast.
START_ATTEMPTS = 3
# Ray's start-up waits that can be set, made generous for a local Ray (a variable already set wins):
# the GCS's port file (default 30 s) and a new worker process's registration (default 60 s).
RAY_START_ENV = {"RAY_gcs_server_port_wait_time_s": "120", "RAY_worker_register_timeout_seconds": "600"}


@dataclass
class RayOptions:
    """Where and how a build runs on Ray."""

    address: str | None = None  # a cluster (ray://head:10001, or "auto"); None: $RAY_ADDRESS, else local
    num_cpus: int | None = None  # CPUs of a local Ray (None: all the machine's)
    batch_chunks: int = BATCH_CHUNKS
    batch_urls: int = BATCH_URLS
    in_flight: int = 2  # tasks submitted ahead per CPU of the cluster (bounds the object store's use)


def embedder_dimension(embedder: str) -> int:
    """The dimension of an embedder's vectors (loading the model only when the registry does not
    know it: st: and onnx: models)."""
    return embedder_info(embedder).dimension or get_embedder(embedder).dimension


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300] or exc.__class__.__name__


def require_ray() -> None:
    """Raise the one-line :class:`UsageError` of :data:`INSTALL_HINT` when Ray cannot be imported."""
    if not os.environ.get("RAY_ADDRESS"):
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")  # see connect()
    try:
        import ray  # noqa: F401
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc


def connect(options: RayOptions) -> Any:
    """The ``ray`` module, connected: to a Ray this process already joined, else to
    ``options.address`` or ``$RAY_ADDRESS``, else to a new local Ray on this machine."""
    address = options.address or os.environ.get("RAY_ADDRESS") or None
    if address is None:
        # A local Ray runs this very Python and its packages: Ray's `uv run` hook would package the
        # working folder and make each worker build an environment of its own instead.
        os.environ.setdefault("RAY_ENABLE_UV_RUN_RUNTIME_ENV", "0")
        for name, value in RAY_START_ENV.items():
            os.environ.setdefault(name, value)
    try:
        import ray
    except ImportError as exc:
        raise UsageError(INSTALL_HINT) from exc
    if ray.is_initialized():
        return ray
    if address is None:
        _no_uv_run_hook()
    kwargs: dict[str, Any] = {
        "address": address,
        "include_dashboard": False,
        "logging_level": logging.WARNING,
        "log_to_driver": False,
    }
    if address is None and options.num_cpus:
        kwargs["num_cpus"] = options.num_cpus
    attempts, attempt = (1 if address else START_ATTEMPTS), 1
    while True:
        started = {child.pid for child in _descendants()}
        try:
            ray.init(**kwargs)
            return ray
        except Exception as exc:  # Ray raises a bare Exception when its node does not start in time
            _stop_new(started)  # what the failed start left running (Ray leaves it to this process's exit)
            if attempt == attempts or not _timed_out(exc):
                where = address or "a local Ray"
                hint = f" (after {attempt} tries: is the machine very busy?)" if attempt > 1 else ""
                raise BuildError(f"cannot start or reach Ray ({where}): {_one_line(exc)}{hint}") from exc
        attempt += 1


def _no_uv_run_hook() -> None:
    """Ray's `uv run` hook off for a local Ray, also when Ray was imported before
    ``RAY_ENABLE_UV_RUN_RUNTIME_ENV`` was set (Ray reads it once, on import). Under `uv run` the hook
    ships the working folder, ``.venv`` and all, to the new Ray and starts each worker with `uv run`,
    which may sync (download) an environment of its own: a local Ray runs this very Python."""
    if os.environ.get("RAY_ENABLE_UV_RUN_RUNTIME_ENV") != "0":
        return  # the user's own choice
    constants: Any = importlib.import_module("ray._private.ray_constants")
    if getattr(constants, "RAY_ENABLE_UV_RUN_RUNTIME_ENV", False):
        constants.RAY_ENABLE_UV_RUN_RUNTIME_ENV = False


def _timed_out(exc: BaseException) -> bool:
    """Whether Ray's start failed on one of its fixed start-up windows."""
    return isinstance(exc, TimeoutError) or "timed out" in str(exc).lower()


def _descendants() -> list[Any]:
    """This process's descendants, as psutil processes (psutil: Ray's own dependency)."""
    psutil: Any = importlib.import_module("psutil")
    return list(psutil.Process().children(recursive=True))


def _stop_new(before: set[int]) -> None:
    """Kill the descendants of this process whose ids are not in ``before``: the GCS, raylet and
    helper processes of a local Ray whose start failed."""
    psutil: Any = importlib.import_module("psutil")
    left = [child for child in _descendants() if child.pid not in before]
    for child in left:
        with contextlib.suppress(psutil.Error):
            child.kill()
    psutil.wait_procs(left, timeout=30)


_REMOTE: dict[Callable[..., Any], Any] = {}


def remote_task(ray: Any, function: Callable[..., Any]) -> Any:
    """The Ray task of a worker function (``prepare_batch``, ``extract_batch``, ``embed_batch``,
    wikigr.build.shards' ``write_shard_task``): one CPU each, retried by Ray when its worker dies."""
    if function not in _REMOTE:
        _REMOTE[function] = ray.remote(num_cpus=1, max_retries=2)(function)
    return _REMOTE[function]


# -- documents as Arrow --------------------------------------------------------------------------

_RECORD_FIELDS = (
    "source",
    "fetch",
    "title",
    "sections",
    "links",
    "anchors",
    "chunks",
    "error",
    "mentions",
    "language",
)


def to_arrow(items: Sequence[PreparedDocument], dim: int) -> pa.Table:
    """Prepared documents as one Arrow table: ``record`` (the document but its vectors, as JSON)
    and ``embeddings`` (its chunk vectors: a list of fixed-size float32 lists)."""
    import pyarrow as pa

    records = [json.dumps({k: getattr(item, k) for k in _RECORD_FIELDS}) for item in items]
    matrices = [
        item.embeddings if item.embeddings is not None else np.zeros((0, dim), np.float32) for item in items
    ]
    offsets = np.concatenate([[0], np.cumsum([len(m) for m in matrices])]).astype(np.int32)
    flat = np.zeros(0, np.float32)
    if matrices:
        flat = np.concatenate([np.asarray(m, np.float32).reshape(-1) for m in matrices])
    vectors = pa.FixedSizeListArray.from_arrays(pa.array(flat), dim)
    embeddings = pa.ListArray.from_arrays(pa.array(offsets), vectors)
    return pa.table({"record": pa.array(records, pa.string()), "embeddings": embeddings})


def from_arrow(table: pa.Table) -> list[PreparedDocument]:
    """The documents of :func:`to_arrow`'s table."""
    column = table.column("embeddings").combine_chunks()
    offsets = column.offsets.to_numpy()
    dim = column.type.value_type.list_size
    flat = column.values.values.to_numpy(zero_copy_only=False)
    matrix = np.asarray(flat, np.float32).reshape(-1, dim)
    items: list[PreparedDocument] = []
    for row, record in enumerate(table.column("record").to_pylist()):
        item = PreparedDocument(**json.loads(record))
        if item.error is None and offsets[row + 1] > offsets[row]:
            item.embeddings = matrix[offsets[row] : offsets[row + 1]].copy()
        items.append(item)
    return items


# -- the workers' functions ----------------------------------------------------------------------


def _guarded(source: str, prepare: Callable[[], PreparedDocument]) -> PreparedDocument:
    """``prepare()``, or a failed document: one odd source must not fail its whole batch."""
    try:
        return prepare()
    except Exception as exc:  # noqa: BLE001 - reported as the source's error, like a fetch failure
        error = f"{exc.__class__.__name__}: {_one_line(exc)}"
        return PreparedDocument(source=source, fetch=_failed_fetch(source, error), error=error)


def _failed_fetch(source: str, error: str) -> dict[str, Any]:
    keys = ("url", "final_url", "sha256", "fetched_at", "content_type", "bytes", "error")
    return {**dict.fromkeys(keys), "url": source, "error": error}


def prepare_batch(
    kind: str, batch: list[Any], options: BuildOptions, embed: bool = True, english_only: bool = False
) -> pa.Table:
    """On a worker: fetch (``kind`` "urls") or take (``kind`` "passages") a batch of sources,
    parse, chunk, embed (unless ``embed`` is False: an update embeds only what changed; with
    ``english_only``, only a batch whose documents are all English or undetermined: the embedder is
    not chosen, and another language calls for another model), and find each chunk's keyword names;
    the documents as Arrow."""
    if kind == "urls":
        items = [
            _guarded(r.url, partial(prepare_fetched, r, options)) for r in fetch_all(batch, options.fetch)
        ]
    else:
        items = [
            _guarded(passage_url(str(p[0])), partial(prepare_passage, (p[0], p[1], p[2]), options))
            for p in batch
        ]
    pending = [item for item in items if item.error is None]
    if english_only and not_english(language_counts(item.language for item in pending)):
        embed = False
    if pending and embed:
        embed_pending(pending, get_embedder(options.embedder), None, no_progress)
    if options.graph:
        for item in pending:
            item.mentions = [
                [[m.name, m.type, m.key] for m in keyword_entities(item.title, chunk["text"])]
                for chunk in item.chunks
            ]
    return to_arrow(items, embedder_dimension(options.embedder))


def extract_batch(texts: list[str]) -> list[Extraction]:
    """On a worker: spaCy's extraction of a batch of chunk texts (spaCy loaded once per worker)."""
    return SpacyExtractor().extract(texts)


def embed_batch(embedder: str, texts: list[str]) -> np.ndarray:
    """On a worker: the embeddings of ``texts``."""
    return get_embedder(embedder).embed(texts)


# -- the driver ----------------------------------------------------------------------------------


def _batches(
    passages: Sequence[tuple[str, str, str]],
    urls: Sequence[str],
    options: BuildOptions,
    ray: RayOptions,
    cpus: int = 1,
) -> list[tuple[str, list[Any]]]:
    """The tasks: passages grouped to about ``batch_chunks`` chunks each (estimated from their
    words), URLs ``batch_urls`` at a time (spellings of one address in one batch, fetched once);
    smaller batches when that gives fewer than TASKS_PER_CPU tasks per CPU of the cluster."""
    batches: list[tuple[str, list[Any]]] = []
    step = max(1, options.max_words - options.overlap_words)
    sizes = [max(1, -(-len(p[2].split()) // step)) for p in passages]
    per_task = max(8, min(ray.batch_chunks, -(-sum(sizes) // (TASKS_PER_CPU * cpus))))
    urls_per_task = max(1, min(ray.batch_urls, -(-len(urls) // (TASKS_PER_CPU * cpus))))
    current: list[Any] = []
    size = 0
    for passage, estimate in zip(passages, sizes, strict=True):
        current.append(list(passage))
        size += estimate
        if size >= per_task:
            batches.append(("passages", current))
            current, size = [], 0
    if current:
        batches.append(("passages", current))
    spellings: dict[str, list[str]] = {}
    for url in urls:
        spellings.setdefault(normalize_url(url), []).append(url)
    groups = list(spellings.values())
    current = []
    for group in groups:
        current.extend(group)
        if len(current) >= urls_per_task:
            batches.append(("urls", current))
            current = []
    if current:
        batches.append(("urls", current))
    return batches


def prepare_on_ray(
    passages: Sequence[tuple[str, str, str]],
    urls: Sequence[str],
    options: BuildOptions,
    cache: BuildCache,
    prepared: dict[str, PreparedDocument],
    progress: ProgressCallback,
) -> int:
    """Prepare ``passages`` and ``urls`` on Ray into ``prepared`` (source -> document), caching
    each document that succeeded as its batch arrives; return the number of chunks embedded.

    When the user chose the embedder, the workers embed as they parse. Otherwise the documents'
    languages choose it (wikigr.build.languages), and they are known once every document is parsed.
    Until a document in another language than English is seen, the workers embed the batches that
    are all English with the built-in model (which an English pack keeps, and which is cached as it
    comes: an interrupted build resumes from it); the other batches, and all once such a document
    is seen, are only parsed. Once all are parsed, :func:`embed_once` embeds those waiting with the
    model the languages call for, or leaves every document to the build when that is another
    model: a pack in Russian is embedded once, with the multilingual model (only English batches
    sent before the first Russian document came back are embedded with the built-in model too).

    Progress: "fetch" counts the documents done (fetched, parsed and embedded), "embed" the chunks."""
    assert options.ray is not None
    chosen = options.chosen_embedder() is not None
    english = True  # every document seen so far is English or undetermined
    waiting: list[PreparedDocument] = []  # parsed, not embedded: the embedder is not chosen yet
    ray = connect(options.ray)
    remote = remote_task(ray, prepare_batch)
    cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
    batches = deque(_batches(passages, urls, options, options.ray, cpus))
    shipped = ray.put(replace(options, llm=None, ray=None))  # once in the object store, for every task
    window = max(2, options.ray.in_flight * cpus)
    total = len(passages) + len(urls)
    documents = embedded = 0
    running: dict[Any, tuple[str, list[Any]]] = {}
    progress(ProgressEvent("fetch", 0, total))
    progress(ProgressEvent("embed", 0, 0))
    try:
        while batches or running:
            while batches and len(running) < window:
                kind, batch = batches.popleft()
                embed, english_only = chosen or english, not chosen
                running[remote.remote(kind, batch, shipped, embed, english_only)] = (kind, batch)
            ready, _ = ray.wait(list(running), num_returns=1)
            for ref in ready:
                kind, batch = running.pop(ref)
                try:
                    items = from_arrow(ray.get(ref))
                except ray.exceptions.RayError as exc:  # the task failed as a whole, after retries
                    error = f"worker failed: {_one_line(exc)}"
                    sources = [passage_url(str(p[0])) if kind == "passages" else p for p in batch]
                    items = [
                        PreparedDocument(source=s, fetch=_failed_fetch(s, error), error=error)
                        for s in sources
                    ]
                for item in items:
                    prepared[item.source] = item
                    if item.error is not None:
                        continue
                    english = english and item.language in (lang.ENGLISH, lang.UNKNOWN)
                    if item.embeddings is not None and len(item.embeddings) == len(item.chunks):
                        cache.save(item)
                        embedded += len(item.chunks)
                    else:
                        waiting.append(item)
                documents += len(items)
                progress(ProgressEvent("fetch", documents, total, items[-1].source if items else ""))
                progress(ProgressEvent("embed", embedded, 0))
    except BaseException:
        for ref in running:  # an interrupted build: what is cached stays, the rest is not waited for
            ray.cancel(ref)
        raise
    return embedded + embed_once(waiting, prepared, options, cache, progress)


def embed_once(
    waiting: list[PreparedDocument],
    prepared: dict[str, PreparedDocument],
    options: BuildOptions,
    cache: BuildCache,
    progress: ProgressCallback,
) -> int:
    """Embed ``waiting`` (parsed on the workers, not embedded) on the workers with the embedder the
    languages of every document ``prepared`` call for (wikigr.build.languages.choose_embedder; the
    built-in model when the multilingual one cannot be loaded here), caching each as it is embedded.
    When that is another model than ``options.embedder``, nothing is embedded here: the build
    switches to it and embeds every document with it (wikigr.build.pipeline). Returns the chunks
    embedded."""
    assert options.ray is not None
    if not waiting:
        return 0
    languages = language_counts(d.language for d in prepared.values() if d.error is None)
    current = get_embedder(options.embedder)
    try:
        chosen = get_embedder(choose_embedder(languages, None)[0])
    except EmbedderUnavailableError:  # as the build does: it goes on with the built-in model
        chosen = get_embedder(DEFAULT_EMBEDDER)
    if chosen.name != current.name:
        return 0
    return embed_pending(waiting, RayEmbedder(options.ray, current), cache, progress)


def fetch_on_ray(
    urls: Sequence[str], options: BuildOptions, progress: ProgressCallback
) -> list[PreparedDocument]:
    """Fetch, parse and chunk ``urls`` on the workers, without embedding (an update embeds only
    the chunks its previous store does not have): the documents in the order of ``urls``."""
    assert options.ray is not None
    ray = connect(options.ray)
    remote = remote_task(ray, prepare_batch)
    shipped = ray.put(replace(options, llm=None, ray=None))
    batches = _batches([], urls, options, options.ray, max(1, int(ray.cluster_resources().get("CPU", 1))))
    refs = [remote.remote(kind, batch, shipped, False) for kind, batch in batches]
    found: dict[str, PreparedDocument] = {}
    progress(ProgressEvent("fetch", 0, len(urls)))
    try:
        for (_, batch), ref in zip(batches, refs, strict=True):
            try:
                items = from_arrow(ray.get(ref))
            except ray.exceptions.RayError as exc:
                error = f"worker failed: {_one_line(exc)}"
                items = [
                    PreparedDocument(source=u, fetch=_failed_fetch(u, error), error=error) for u in batch
                ]
            found.update((item.source, item) for item in items)
            progress(ProgressEvent("fetch", len(found), len(urls)))
    except BaseException:
        for ref in refs:
            ray.cancel(ref)
        raise
    return [found[url] for url in urls]


class RayEmbedder:
    """``embedder`` (wikigr.embed.Embedder) with its ``embed`` run on the workers, a share of the
    texts per CPU of the cluster."""

    def __init__(self, options: RayOptions, embedder: Embedder) -> None:
        self.name, self.dimension, self.backend = embedder.name, embedder.dimension, embedder.backend
        self.digest = embedder.digest
        self.options = options

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dimension), np.float32)
        ray = connect(self.options)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        size = max(8, -(-len(texts) // cpus))
        return RayEmbed(self.options, self.name, size)(list(texts))


class RayExtractor:
    """spaCy's extraction (graph.extract.SpacyExtractor) of the skeleton's chunks, on the workers."""

    name = "spacy"

    def __init__(self, options: RayOptions, batch: int = EXTRACT_BATCH) -> None:
        self.options = options
        self.batch = batch

    def extract(self, texts: Sequence[str]) -> list[Extraction]:
        if not texts:
            return []
        ray = connect(self.options)
        remote = remote_task(ray, extract_batch)
        cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
        batch = max(8, min(self.batch, -(-len(texts) // (TASKS_PER_CPU * cpus))))
        refs = [remote.remote(list(texts[i : i + batch])) for i in range(0, len(texts), batch)]
        return [extraction for part in ray.get(refs) for extraction in part]


class RayEmbed:
    """Embeds texts (entity names) on the workers: a callable for graph.build.build_graph."""

    def __init__(self, options: RayOptions, embedder: str, batch: int = EMBED_BATCH) -> None:
        self.options = options
        self.embedder = embedder
        self.batch = batch

    def __call__(self, texts: list[str]) -> np.ndarray:
        ray = connect(self.options)
        remote = remote_task(ray, embed_batch)
        refs = [
            remote.remote(self.embedder, texts[i : i + self.batch]) for i in range(0, len(texts), self.batch)
        ]
        parts = ray.get(refs)
        return np.vstack(parts).astype(np.float32) if parts else np.zeros((0, 0), np.float32)


__all__ = [
    "INSTALL_HINT",
    "RayEmbed",
    "RayExtractor",
    "RayOptions",
    "connect",
    "from_arrow",
    "prepare_on_ray",
    "to_arrow",
]
