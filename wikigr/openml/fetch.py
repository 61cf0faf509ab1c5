"""The fetch of a star from OpenML's REST API: what to fetch (:class:`ApiSelection`), the tasks of
a study or the first classification tasks, their runs from the evaluation listings, further
measures of the same runs, and the flows, datasets, qualities and tasks they refer to, fetched
concurrently through :class:`~wikigr.openml.client.OpenMLClient` (whose cache makes an interrupted
build resumable).

Endpoints used (``/api/v1/json/...``): ``study/{id}``, ``task/list/type/1/status/active/limit/N/offset/M``,
``evaluation/list/function/{measure}/task/{ids}/limit/N/offset/M`` (and ``/run/{ids}`` for further
measures of the same runs), ``task/{id}``, ``data/{id}``, ``data/qualities/{id}`` and ``flow/{id}``.

The library never prints: progress goes to the callback.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikigr.errors import BuildError, UsageError
from wikigr.openml.client import (
    DEFAULT_URL,
    OpenMLClient,
    OpenMLError,
    as_float,
    as_int,
    as_list,
    as_text,
    paged,
)
from wikigr.openml.exports import FileReport, ImportReport, RowProblem
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

__all__ = [
    "ApiSelection",
    "FetchError",
    "Fetched",
    "fetch_star",
    "parse_task_ids",
]

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
    ids = [as_int(t) for t in as_list(tasks.get("task_id") if isinstance(tasks, dict) else None)]
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
            task, data = as_int(item.get("task_id")), as_int(item.get("did"))
            if task is not None and data is not None and data not in chosen and len(chosen) < datasets:
                chosen[data] = task
        if len(items) < limit:
            break
        offset += limit
    return list(chosen.values())


def _estimation(procedure: dict[str, Any]) -> str:
    kind = as_text(procedure.get("type"))
    params = {
        as_text(p.get("name")): as_text(p.get("value"))
        for p in as_list(procedure.get("parameter"))
        if isinstance(p, dict) and as_text(p.get("value"))
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
    row.type = as_text(task.get("task_type")) or row.type
    for item in as_list(task.get("input")):
        if not isinstance(item, dict):
            continue
        if isinstance(item.get("data_set"), dict):
            row.target = as_text(item["data_set"].get("target_feature"))
        if isinstance(item.get("estimation_procedure"), dict):
            row.estimation = _estimation(item["estimation_procedure"])
        measures = item.get("evaluation_measures")
        if isinstance(measures, dict) and as_text(measures.get("evaluation_measure")):
            row.measure = as_text(measures.get("evaluation_measure"))
    row.description = as_text(task.get("task_name"))


def _apply_dataset(row: DatasetRow, body: Any) -> None:
    data = body.get("data_set_description") if isinstance(body, dict) else None
    if not isinstance(data, dict):
        return
    row.name = as_text(data.get("name")) or row.name
    row.description = " ".join(as_text(data.get("description")).split())[:1000]


def _apply_qualities(row: DatasetRow, body: Any) -> None:
    container = body.get("data_qualities") if isinstance(body, dict) else None
    qualities: dict[str, float] = {}
    for item in as_list(container.get("quality") if isinstance(container, dict) else None):
        if isinstance(item, dict) and as_text(item.get("name")) in QUALITY_NAMES:
            value = as_float(item.get("value"))
            if value is not None:
                qualities[as_text(item.get("name"))] = value
    row.apply_qualities(qualities)


def _apply_flow(row: AlgorithmRow, body: Any) -> None:
    flow = body.get("flow") if isinstance(body, dict) else None
    if not isinstance(flow, dict):
        return
    row.version = as_text(flow.get("external_version")) or as_text(flow.get("version"))
    row.description = " ".join(as_text(flow.get("description")).split())[:500]


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
        run_id, task_id = as_int(item.get("run_id")), as_int(item.get("task_id"))
        flow_id, data_id = as_int(item.get("flow_id")), as_int(item.get("data_id"))
        value = as_float(item.get("value"))
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
            day = date_key(as_text(item.get("upload_time"))) if as_text(item.get("upload_time")) else None
        except ValueError:
            day = None
        runs[run_id] = {
            "task": task_id,
            "flow": flow_id,
            "data": data_id,
            "setup": as_int(item.get("setup_id")),
            "flow_name": as_text(item.get("flow_name")) or f"flow {flow_id}",
            "data_name": as_text(item.get("data_name")) or f"data {data_id}",
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
                run_id, value = as_int(item.get("run_id")), as_float(item.get("value"))
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
