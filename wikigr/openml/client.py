"""A small client of OpenML's REST API (JSON), and the fetch of a star from it.

Endpoints used (``/api/v1/json/...``): ``study/{id}``, ``task/list/type/1/status/active/limit/N/offset/M``,
``evaluation/list/function/{measure}/task/{ids}/limit/N/offset/M`` (and ``/run/{ids}`` for further
measures of the same runs), ``task/{id}``, ``data/{id}``, ``data/qualities/{id}`` and ``flow/{id}``.

- Paging: listings are read ``limit``/``offset`` page by page until a short page or OpenML's
  "No results" (HTTP 412 with ``{"error": {"code": ..., "message": "No results"}}``).
- Bounded concurrency: at most ``workers`` requests at a time (a thread pool).
- Retries with exponential backoff on 429, 5xx, timeouts, connection errors and bodies that are
  cut short or are not JSON; other 4xx fail at once (a 412 or 404 for one entity is noted and the
  build goes on without its details).
- An on-disk response cache (one JSON file per request path, written atomically): a build that
  was interrupted picks up where it stopped; the cache lives in the build's ``.NAME.partial``.

The library never prints: progress goes to the callback.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from wikigr import __version__, schema
from wikigr.errors import BuildError, UsageError, WikigrError
from wikigr.openml.exports import ImportReport, RowProblem
from wikigr.openml.model import (
    CLASSIFICATION,
    FUNCTION_MEASURES,
    OPENML_FUNCTIONS,
    UNIT_MEASURES,
    AlgorithmRow,
    DatasetRow,
    StarData,
    TaskRow,
    date_key,
    measure_name,
)
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress

DEFAULT_URL = "https://www.openml.org"
API = "/api/v1/json"
NO_RESULTS = "no results"
MAX_BODY = 256 * 1024 * 1024
RUN_CHUNK = 100  # run ids per request for further measures
TASK_CHUNK = 50  # task ids per evaluation listing
QUALITY_NAMES = (
    "NumberOfInstances",
    "NumberOfFeatures",
    "NumberOfClasses",
    "MajorityClassSize",
    "MinorityClassSize",
    "PercentageOfMissingValues",
)


class OpenMLError(WikigrError):
    """OpenML answered with an error (``code`` and ``message`` from its error JSON or XML), or
    stayed unreachable through the retries (``status`` None, or 429 / 5xx)."""

    def __init__(
        self,
        message: str,
        status: int | None = None,
        code: str | None = None,
        detail: str = "",
        *,
        resumable: bool | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.detail = detail  # OpenML's own message ("Unknown study")
        # Whether running the build again may get further: a failure of the network or the
        # server, not an answer that the request itself is wrong (an unknown study, a 404).
        self.resumable = (
            resumable if resumable is not None else status is None or status == 429 or status >= 500
        )


def error_fields(content: bytes) -> tuple[str | None, str]:
    """``(code, message)`` of an OpenML error body: the JSON API's ``{"error": {"code", "message"}}``
    or the XML API's ``<oml:error><oml:code/><oml:message/></oml:error>`` (some errors come as
    XML even from the JSON API)."""
    try:
        data = schema.parse_json(content)
    except schema.JSONError:
        data = None
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict):
        code = error.get("code")
        return (str(code) if code is not None else None), str(error.get("message") or "")
    import xml.etree.ElementTree as ET  # only for an error body

    try:
        root = ET.fromstring(content)
    except ET.ParseError:
        return None, ""
    if root.tag.rsplit("}", 1)[-1] != "error":
        return None, ""
    fields = {child.tag.rsplit("}", 1)[-1]: (child.text or "").strip() for child in root}
    return fields.get("code") or None, fields.get("message", "")


class FetchError(BuildError):
    """The fetch of a star failed; ``resumable``: the cache of the responses so far is worth
    keeping, as running the build again may get further."""

    def __init__(self, message: str, *, resumable: bool) -> None:
        super().__init__(message)
        self.resumable = resumable


@dataclass
class ApiSelection:
    """What to fetch: a study, tasks, or the first classification tasks; how, and from where."""

    base_url: str = DEFAULT_URL
    study: int | None = None
    tasks: list[int] = field(default_factory=list)
    max_datasets: int | None = None
    max_runs_per_dataset: int | None = None
    measure: str = "predictive_accuracy"
    extra_measures: tuple[str, ...] = ("area_under_roc_curve", "f_measure", "usercpu_time_millis")
    workers: int = 4
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 0.5
    page_size: int = 1000

    def __post_init__(self) -> None:
        self.base_url = self.base_url.rstrip("/")
        if not self.base_url.startswith(("http://", "https://")):
            raise UsageError(f"--openml-url must be an http(s) URL, not {self.base_url!r}")
        try:
            self.measure = OPENML_FUNCTIONS[measure_name(self.measure)]
        except ValueError as exc:
            raise UsageError(str(exc)) from exc
        self.extra_measures = tuple(m for m in self.extra_measures if m != self.measure)
        if self.study is not None and self.tasks:
            raise UsageError("give --study or --tasks, not both")
        if self.study is None and not self.tasks and self.max_datasets is None:
            raise UsageError("say what to fetch: --study ID, --tasks ID,ID,... or --max-datasets N")
        for name in ("max_datasets", "max_runs_per_dataset"):
            value = getattr(self, name)
            if value is not None and value < 1:
                raise UsageError(f"--{name.replace('_', '-')} must be at least 1")

    def describe(self) -> str:
        parts = []
        if self.study is not None:
            parts.append(f"study {self.study}")
        if self.tasks:
            parts.append("tasks " + ",".join(str(t) for t in self.tasks))
        if self.max_datasets is not None:
            parts.append(f"at most {self.max_datasets} datasets")
        if self.max_runs_per_dataset is not None:
            parts.append(f"at most {self.max_runs_per_dataset} runs per dataset")
        parts.append(f"measure {self.measure}")
        return ", ".join(parts)


@dataclass
class Fetched:
    star: StarData
    report: ImportReport
    requests: int = 0
    cached: int = 0


# -- the HTTP client -------------------------------------------------------------------------------


class ResponseCache:
    """One JSON file per request URL; a "No results" answer is cached too."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        if root is not None:
            root.mkdir(parents=True, exist_ok=True)

    def _file(self, path: str) -> Path:
        assert self.root is not None
        return self.root / (hashlib.sha256(path.encode("utf-8")).hexdigest()[:40] + ".json")

    def get(self, path: str) -> tuple[bool, Any]:
        if self.root is None:
            return False, None
        try:
            entry = schema.parse_json(self._file(path).read_bytes())
        except (OSError, ValueError):  # ValueError: schema.JSONError too
            return False, None
        if not isinstance(entry, dict) or entry.get("path") != path:
            return False, None
        return True, entry.get("body")

    def put(self, path: str, body: Any) -> None:
        if self.root is None:
            return
        target = self._file(path)
        tmp = target.with_suffix(f".{os.getpid()}.{threading.get_ident()}.tmp")
        tmp.write_text(json.dumps({"path": path, "body": body}), encoding="utf-8")
        os.replace(tmp, target)


class OpenMLClient:
    """GET JSON from OpenML's REST API with retries, backoff and the response cache."""

    def __init__(
        self,
        base_url: str = DEFAULT_URL,
        *,
        cache_dir: Path | None = None,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.5,
        workers: int = 4,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.retries = retries
        self.backoff = backoff
        self.workers = max(1, workers)
        self.cache = ResponseCache(cache_dir)
        self.requests = 0
        self.cached = 0
        self._sleep = sleep
        self._lock = threading.Lock()
        self._http = httpx.Client(
            timeout=timeout,
            headers={"User-Agent": f"wikigr/{__version__}", "Accept": "application/json"},
            follow_redirects=True,
            limits=httpx.Limits(max_connections=self.workers),
        )

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> OpenMLClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def get(self, path: str) -> Any:
        """The JSON at ``API + path``; None for OpenML's "No results". Raises OpenMLError."""
        url = f"{self.base_url}{API}{path}"
        hit, body = self.cache.get(url)
        if hit:
            with self._lock:
                self.cached += 1
            return body
        attempt = 0
        while True:
            attempt += 1
            with self._lock:
                self.requests += 1
            failure, retry_after = self._attempt(url)
            if failure is None:
                body = retry_after  # the parsed JSON (or None for "No results")
                self.cache.put(url, body)
                return body
            if isinstance(failure, OpenMLError) or attempt > self.retries:
                if isinstance(failure, OpenMLError):
                    raise failure
                raise OpenMLError(f"OpenML request failed after {attempt} attempts: {url}: {failure}")
            wait = retry_after if isinstance(retry_after, float) else self.backoff * 2 ** (attempt - 1)
            self._sleep(min(wait, 60.0) * (1.0 - 0.25 * random.random()))

    def _attempt(self, url: str) -> tuple[OpenMLError | str | None, Any]:
        """``(None, json)`` on success; ``(message, retry_after)`` to retry; ``(OpenMLError, None)``
        to give up at once."""
        try:
            response = self._http.get(url)
            content = response.content
        except httpx.TimeoutException:
            return "timed out", None
        except httpx.HTTPError as exc:  # connection errors, bodies cut short
            return f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}", None
        status = response.status_code
        if len(content) > MAX_BODY:
            return OpenMLError(f"OpenML response too large: {url}", status), None
        data: Any = None
        parsed = True
        try:
            data = schema.parse_json(content) if content else None
        except schema.JSONError:
            parsed = False
        if status == 200:
            if not parsed or data is None:
                return "the response is not JSON (cut short?)", None
            return None, data
        code, message = error_fields(content)
        if status == 412 and message.strip().lower() == NO_RESULTS:
            return None, None
        if status == 429 or status >= 500:
            after = response.headers.get("retry-after")
            try:
                wait = float(after) if after is not None else None
            except ValueError:
                wait = None
            return f"HTTP {status}", wait
        detail = f" (code {code}: {message})" if message else ""
        return OpenMLError(f"OpenML answered HTTP {status}{detail} for {url}", status, code, message), None

    def get_many(self, paths: Sequence[str], on_done: Callable[[], None] | None = None) -> list[Any]:
        """GET several paths, at most ``workers`` at a time; results in order (errors raised)."""
        return self._map(self.get, paths, on_done)

    def get_or_error(self, paths: Sequence[str], on_done: Callable[[], None] | None = None) -> list[Any]:
        """Like :meth:`get_many`, but a permanent error for one path is returned, not raised."""

        def get(path: str) -> Any:
            try:
                return self.get(path)
            except OpenMLError as exc:
                if exc.status in (404, 412):
                    return exc
                raise

        return self._map(get, paths, on_done)

    def _map(
        self, get: Callable[[str], Any], paths: Sequence[str], on_done: Callable[[], None] | None
    ) -> list[Any]:
        def one(path: str) -> Any:
            try:
                return get(path)
            finally:
                if on_done is not None:
                    on_done()

        if len(paths) <= 1 or self.workers == 1:
            return [one(p) for p in paths]
        with ThreadPoolExecutor(max_workers=self.workers) as pool:
            return list(pool.map(one, paths))


# -- OpenML's JSON ---------------------------------------------------------------------------------


def as_list(value: Any) -> list[Any]:
    """OpenML's JSON gives a single element as an object and several as a list."""
    if value is None or value == "":
        return []
    return value if isinstance(value, list) else [value]


def _int(value: Any) -> int | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return int(number) if number == int(number) else None


def _float(value: Any) -> float | None:
    if value is None or value == "" or isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if number == number and abs(number) != float("inf") else None


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""


def paged(client: OpenMLClient, base: str, page_size: int, cap: int | None = None) -> list[dict[str, Any]]:
    """Every evaluation of a listing ``base`` (without limit/offset), page by page."""
    found: list[dict[str, Any]] = []
    offset = 0
    while cap is None or len(found) < cap:
        limit = page_size if cap is None else min(page_size, cap - len(found))
        body = client.get(f"{base}/limit/{limit}/offset/{offset}")
        if body is None:  # "No results": past the end
            break
        container = body.get("evaluations") if isinstance(body, dict) else None
        items = as_list(container.get("evaluation") if isinstance(container, dict) else None)
        if not isinstance(container, dict):
            raise OpenMLError(f"OpenML evaluation listing {base}: unexpected JSON (no 'evaluations')")
        found.extend(i for i in items if isinstance(i, dict))
        if len(items) < limit:
            break
        offset += limit
    return found


# -- the fetch of a star ---------------------------------------------------------------------------


def _tasks_of_study(client: OpenMLClient, study: int) -> list[int]:
    try:
        body = client.get(f"/study/{study}")
    except OpenMLError as exc:
        if exc.status not in (404, 412):
            raise
        said = f" ({exc.detail}, code {exc.code})" if exc.detail and exc.code else ""
        raise OpenMLError(
            f"OpenML has no study {study}{said} at {client.base_url}", exc.status, exc.code, exc.detail
        ) from exc
    if body is None or not isinstance(body.get("study"), dict):
        raise OpenMLError(f"OpenML has no study {study} at {client.base_url}", 404)
    tasks = body["study"].get("tasks")
    ids = [_int(t) for t in as_list(tasks.get("task_id") if isinstance(tasks, dict) else None)]
    found = [t for t in ids if t is not None]
    if not found:
        raise OpenMLError(f"OpenML study {study} lists no tasks", resumable=False)
    return found


def _first_tasks(client: OpenMLClient, datasets: int, page_size: int) -> list[int]:
    """Active classification tasks, one per dataset, for the first ``datasets`` datasets."""
    chosen: dict[int, int] = {}
    offset = 0
    while len(chosen) < datasets:
        limit = min(page_size, max(datasets * 2, 10))
        body = client.get(f"/task/list/type/1/status/active/limit/{limit}/offset/{offset}")
        if body is None:
            break
        items = as_list((body.get("tasks") or {}).get("task") if isinstance(body, dict) else None)
        for item in items:
            task, data = _int(item.get("task_id")), _int(item.get("did"))
            if task is not None and data is not None and data not in chosen and len(chosen) < datasets:
                chosen[data] = task
        if len(items) < limit:
            break
        offset += limit
    return list(chosen.values())


def _estimation(procedure: dict[str, Any]) -> str:
    kind = _text(procedure.get("type"))
    params = {
        _text(p.get("name")): _text(p.get("value"))
        for p in as_list(procedure.get("parameter"))
        if isinstance(p, dict) and _text(p.get("value"))
    }
    if kind == "crossvalidation" and params.get("number_folds"):
        repeats = params.get("number_repeats", "1")
        return f"{params['number_folds']}-fold crossvalidation" + (
            f", {repeats} repeats" if repeats != "1" else ""
        )
    return kind


def _apply_task(row: TaskRow, body: Any) -> None:
    task = body.get("task") if isinstance(body, dict) else None
    if not isinstance(task, dict):
        return
    row.type = _text(task.get("task_type")) or row.type
    for item in as_list(task.get("input")):
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("data_set"), dict):
            row.target = _text(item["data_set"].get("target_feature"))
        if isinstance(item.get("estimation_procedure"), dict):
            row.estimation = _estimation(item["estimation_procedure"])
        measures = item.get("evaluation_measures")
        if isinstance(measures, dict) and _text(measures.get("evaluation_measure")):
            row.measure = _text(measures.get("evaluation_measure"))
    row.description = _text(task.get("task_name"))


def _apply_dataset(row: DatasetRow, body: Any) -> None:
    data = body.get("data_set_description") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        return
    row.name = _text(data.get("name")) or row.name
    row.description = " ".join(_text(data.get("description")).split())[:1000]


def _apply_qualities(row: DatasetRow, body: Any) -> None:
    container = body.get("data_qualities") if isinstance(body, dict) else None
    qualities: dict[str, float] = {}
    for item in as_list(container.get("quality") if isinstance(container, dict) else None):
        if isinstance(item, dict) and _text(item.get("name")) in QUALITY_NAMES:
            value = _float(item.get("value"))
            if value is not None:
                qualities[_text(item.get("name"))] = value
    row.apply_qualities(qualities)


def _apply_flow(row: AlgorithmRow, body: Any) -> None:
    flow = body.get("flow") if isinstance(body, dict) else None
    if not isinstance(flow, dict):
        return
    row.version = _text(flow.get("external_version")) or _text(flow.get("version"))
    row.description = " ".join(_text(flow.get("description")).split())[:500]


def fetch_star(
    selection: ApiSelection,
    cache_dir: Path | None = None,
    on_progress: ProgressCallback | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> Fetched:
    """Fetch the runs of the selection and their flows, datasets, qualities and tasks."""
    progress = on_progress or no_progress
    report = ImportReport()
    star = StarData()
    with OpenMLClient(
        selection.base_url,
        cache_dir=cache_dir,
        timeout=selection.timeout,
        retries=selection.retries,
        backoff=selection.backoff,
        workers=selection.workers,
        sleep=sleep,
    ) as client:
        try:
            _fetch(client, selection, star, report, progress)
        except OpenMLError as exc:
            if not exc.resumable:  # the request itself is wrong: running it again cannot help
                raise FetchError(str(exc), resumable=False) from exc
            raise FetchError(f"{exc} (run the same command again to resume)", resumable=True) from exc
        return Fetched(star=star, report=report, requests=client.requests, cached=client.cached)


def _fetch(
    client: OpenMLClient,
    selection: ApiSelection,
    star: StarData,
    report: ImportReport,
    progress: ProgressCallback,
) -> None:
    from wikigr.openml.exports import FileReport

    if selection.study is not None:
        tasks = _tasks_of_study(client, selection.study)
    elif selection.tasks:
        tasks = list(dict.fromkeys(selection.tasks))
    else:
        tasks = _first_tasks(client, selection.max_datasets or 10, selection.page_size)
    if selection.max_datasets is not None:
        tasks = tasks[: selection.max_datasets]
    if not tasks:
        raise OpenMLError("OpenML returned no task to fetch", resumable=False)

    listing = FileReport(path="OpenML API", kind="runs")
    report.files.append(listing)
    function = selection.measure
    measure = FUNCTION_MEASURES[function]
    done = 0

    def tick(total: int) -> Callable[[], None]:
        def step() -> None:
            nonlocal done
            done += 1
            progress(ProgressEvent("fetch", done, total))

        return step

    # 1. The runs: the evaluation listing of the measure, per task when runs are capped.
    progress(ProgressEvent("fetch", 0, len(tasks)))
    evaluations: list[dict[str, Any]] = []
    if selection.max_runs_per_dataset is not None:
        step = tick(len(tasks))
        for task in tasks:
            evaluations += paged(
                client,
                f"/evaluation/list/function/{function}/task/{task}",
                selection.page_size,
                cap=selection.max_runs_per_dataset,
            )
            step()
    else:
        step = tick(len(range(0, len(tasks), TASK_CHUNK)))
        for start in range(0, len(tasks), TASK_CHUNK):
            ids = ",".join(str(t) for t in tasks[start : start + TASK_CHUNK])
            evaluations += paged(
                client, f"/evaluation/list/function/{function}/task/{ids}", selection.page_size
            )
            step()

    runs: dict[int, dict[str, Any]] = {}
    for index, item in enumerate(evaluations, 1):
        listing.rows += 1
        run_id, task_id = _int(item.get("run_id")), _int(item.get("task_id"))
        flow_id, data_id = _int(item.get("flow_id")), _int(item.get("data_id"))
        value = _float(item.get("value"))
        problem = None
        if run_id is None or task_id is None or flow_id is None or data_id is None:
            problem = "an evaluation without run, task, flow or data id"
        elif value is None:
            problem = f"run {run_id}: value {str(item.get('value'))[:40]!r} is not a number"
        elif measure in UNIT_MEASURES and not 0.0 <= value <= 1.0:
            problem = f"run {run_id}: {function} {value} is outside [0, 1]"
        elif run_id in runs:
            problem = f"run {run_id} listed twice"
        if problem is not None:
            report.refuse(RowProblem("evaluation/list", index, problem), listing)
            continue
        assert run_id is not None and task_id is not None and flow_id is not None and data_id is not None
        assert value is not None
        try:
            day = date_key(_text(item.get("upload_time"))) if _text(item.get("upload_time")) else None
        except ValueError:
            day = None
        runs[run_id] = {
            "task": task_id,
            "flow": flow_id,
            "data": data_id,
            "setup": _int(item.get("setup_id")),
            "flow_name": _text(item.get("flow_name")) or f"flow {flow_id}",
            "data_name": _text(item.get("data_name")) or f"data {data_id}",
            "date": day,
            measure: value if function != "usercpu_time_millis" else value / 1000.0,
        }

    # 2. Further measures of the same runs (no result is fine: not every run has every measure).
    run_ids = sorted(runs)
    for extra in selection.extra_measures:
        name = FUNCTION_MEASURES.get(extra)
        if name is None:
            continue
        for start in range(0, len(run_ids), RUN_CHUNK):
            chunk = ",".join(str(r) for r in run_ids[start : start + RUN_CHUNK])
            for item in paged(client, f"/evaluation/list/function/{extra}/run/{chunk}", selection.page_size):
                run_id, value = _int(item.get("run_id")), _float(item.get("value"))
                if run_id in runs and value is not None:
                    if name in UNIT_MEASURES and not 0.0 <= value <= 1.0:
                        continue
                    runs[run_id][name] = value / 1000.0 if extra == "usercpu_time_millis" else value

    # 3. The dimensions, fetched concurrently.
    flows = sorted({r["flow"] for r in runs.values()})
    datas = sorted({r["data"] for r in runs.values()})
    task_ids = sorted({r["task"] for r in runs.values()})
    for run in runs.values():
        key = f"flow:{run['flow']}"
        if key not in star.algorithms:
            star.algorithms[key] = AlgorithmRow(id=key, name=run["flow_name"], flow_id=run["flow"])
        key = f"data:{run['data']}"
        if key not in star.datasets:
            star.datasets[key] = DatasetRow(id=key, name=run["data_name"], data_id=run["data"])
        key = f"task:{run['task']}"
        if key not in star.tasks:
            star.tasks[key] = TaskRow(
                id=key,
                dataset_id=f"data:{run['data']}",
                task_id=run["task"],
                type=CLASSIFICATION,
                measure=function,
            )
    paths = (
        [f"/flow/{f}" for f in flows]
        + [f"/data/{d}" for d in datas]
        + [f"/data/qualities/{d}" for d in datas]
        + [f"/task/{t}" for t in task_ids]
    )
    progress(ProgressEvent("fetch details", 0, len(paths)))
    counter = {"done": 0}
    lock = threading.Lock()

    def detail_done() -> None:
        with lock:
            counter["done"] += 1
            done_now = counter["done"]
        progress(ProgressEvent("fetch details", done_now, len(paths)))

    bodies = client.get_or_error(paths, on_done=detail_done)
    missing: list[str] = []
    for path, body in zip(paths, bodies, strict=True):
        if isinstance(body, OpenMLError):
            missing.append(f"{path}: HTTP {body.status}")
            continue
        kind, _, ident = path.rpartition("/")
        if kind == "/flow":
            _apply_flow(star.algorithms[f"flow:{ident}"], body)
        elif kind == "/data":
            _apply_dataset(star.datasets[f"data:{ident}"], body)
        elif kind == "/data/qualities":
            _apply_qualities(star.datasets[f"data:{ident}"], body)
        elif kind == "/task":
            _apply_task(star.tasks[f"task:{ident}"], body)
    if missing:
        listing.notes.append(f"details OpenML did not have ({len(missing)}): " + "; ".join(missing[:5]))

    for key_id in run_ids:
        run = runs[key_id]
        star.runs.add(
            {
                "id": f"run:{key_id}",
                "run_id": key_id,
                "setup_id": run["setup"],
                "accuracy": run.get("accuracy"),
                "auc": run.get("auc"),
                "f1": run.get("f1"),
                "log_loss": run.get("log_loss"),
                "runtime_s": run.get("runtime_s"),
                "status": "ok",
                "source": f"{selection.base_url}/r/{key_id}",
                "algorithm": f"flow:{run['flow']}",
                "dataset": f"data:{run['data']}",
                "task": f"task:{run['task']}",
                "date": run["date"],
            }
        )
        listing.loaded += 1
    listing.statuses = {"ok": listing.loaded}


def parse_task_ids(text: str) -> list[int]:
    """``"3,31, 37"`` -> [3, 31, 37]; UsageError for anything else."""
    ids = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        if not part.isdigit() or int(part) < 1:
            raise UsageError(f"--tasks expects task ids separated by commas, not {part!r}")
        ids.append(int(part))
    if not ids:
        raise UsageError("--tasks lists no task id")
    return ids


__all__ = [
    "ApiSelection",
    "Fetched",
    "OpenMLClient",
    "OpenMLError",
    "fetch_star",
    "parse_task_ids",
]
