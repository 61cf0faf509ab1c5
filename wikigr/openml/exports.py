"""Offline import of OpenML result exports: run tables (CSV, ARFF) and dataset qualities.

Columns are recognised by name (case-insensitive; :data:`RUN_COLUMNS`): e.g. ``openml_task_id``
or ``task_id`` is the task, ``framework``/``learner``/``flow_name``/``algorithm`` the flow,
``acc``/``predictive_accuracy``/``test_accuracy`` the accuracy. Columns no role claims are listed
in the report as ignored. A file must name a flow, a dataset or task, and at least one measure.

Every row becomes a ``Run``, or is reported as malformed (the count, and the first examples
with file and line): a wrong number of fields, a number that does not parse, a measure out of
range, a missing flow or dataset, a date that is not a date, a duplicate run id. Nothing is
dropped silently and nothing is guessed:

- ARFF run-evaluation exports (openml-aslib) write the algorithm as ``SETUPID_FLOWNAME``: the
  setup id is kept on the run and the flow name names the algorithm;
- a row whose status is not ``ok`` keeps its status and no measures (those exports write 0 for a
  setup never run on the task); without a status column a row with no quality measure
  (accuracy, AUC, F1, log-loss; a runtime alone is no result) gets status ``no_result``;
- an export without task ids gets one task per dataset, ``task-of:DATASET``, whose type is
  ``Supervised Classification`` when the export's measures are classification measures
  (accuracy, AUC, F1, log-loss), else unknown.
"""

from __future__ import annotations

import csv
import re
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from wikigr.errors import UsageError
from wikigr.openml.model import (
    CLASSIFICATION,
    CLASSIFICATION_MEASURES,
    OPENML_FUNCTIONS,
    RUN_FIELDS,
    UNIT_MEASURES,
    AlgorithmRow,
    DatasetRow,
    StarData,
    TaskRow,
    date_key,
)

MAX_EXPORT_BYTES = 4 * 1024**3
MAX_EXAMPLES = 5

#: Column roles and the header names (lower-cased) that fill them, most specific first.
RUN_COLUMNS: dict[str, tuple[str, ...]] = {
    "run_id": ("run_id", "openml_run_id"),
    "run_key": ("run_key", "key"),
    "task_id": ("openml_task_id", "task_id"),
    "data_id": ("openml_data_id", "data_id", "did", "dataset_id"),
    "data_name": ("dataset_name", "data_name", "dataset"),
    "flow_id": ("flow_id", "openml_flow_id", "implementation_id"),
    "flow_name": ("flow_name", "framework", "learner", "algorithm", "flow", "implementation"),
    "version": ("framework_version", "flow_version", "version"),
    "setup_id": ("setup_id",),
    "fold": ("fold",),
    "repeat": ("repeat", "repetition"),
    "date": ("utc", "upload_time", "date", "timestamp", "start_time"),
    "accuracy": ("acc", "accuracy", "predictive_accuracy", "test_accuracy"),
    "auc": ("auc", "area_under_roc_curve", "roc_auc"),
    "f1": ("f1", "f_measure", "f1_score"),
    "log_loss": ("logloss", "log_loss"),
    "runtime_s": ("duration_s", "runtime_s", "traintime_s", "training_time_s", "duration", "runtime"),
    "runtime_ms": ("usercpu_time_millis", "runtime_ms", "duration_ms"),
    "status": ("runstatus", "status", "run_status"),
    "task_type": ("task_type",),
    "target": ("target", "target_feature"),
}
MEASURE_ROLES = ("accuracy", "auc", "f1", "log_loss", "runtime_s", "runtime_ms")
INT_ROLES = ("run_id", "task_id", "data_id", "flow_id", "setup_id", "fold", "repeat")
QUALITY_KEYS: dict[str, tuple[str, ...]] = {
    "data_id": ("openml_data_id", "data_id", "did", "dataset_id"),
    "task_id": ("openml_task_id", "task_id"),
}
MISSING = frozenset({"", "?", "null", "none", "nan", "na", "n/a"})
_SETUP_FLOW = re.compile(r"^(\d+)_(.+)$")


@dataclass(frozen=True)
class RowProblem:
    file: str
    line: int
    reason: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.reason}"


@dataclass
class FileReport:
    path: str
    kind: str  # "runs" or "qualities"
    rows: int = 0
    loaded: int = 0
    malformed: int = 0
    columns: dict[str, str] = field(default_factory=dict)  # role -> header
    ignored_columns: list[str] = field(default_factory=list)
    statuses: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    """What an import read, loaded and refused."""

    files: list[FileReport] = field(default_factory=list)
    problems: list[RowProblem] = field(default_factory=list)  # the first MAX_EXAMPLES
    malformed: int = 0

    @property
    def rows(self) -> int:
        return sum(f.rows for f in self.files)

    def refuse(self, problem: RowProblem, report: FileReport) -> None:
        self.malformed += 1
        report.malformed += 1
        if len(self.problems) < MAX_EXAMPLES:
            self.problems.append(problem)

    @property
    def examples(self) -> list[str]:
        return [str(p) for p in self.problems]

    @property
    def notes(self) -> list[str]:
        return [f"{Path(f.path).name}: {n}" for f in self.files for n in f.notes]


# -- reading tables ------------------------------------------------------------------------------


def _check_file(path: Path) -> None:
    if not path.is_file():
        raise UsageError(f"no such export file: {path}")
    if path.stat().st_size > MAX_EXPORT_BYTES:
        raise UsageError(f"export {path} is larger than {MAX_EXPORT_BYTES // 1024**3} GiB")


def _arff_name(text: str) -> tuple[str, str]:
    """An @ATTRIBUTE line's rest: ``(name, type)``; the name may be quoted."""
    text = text.strip()
    if text[:1] in ("'", '"'):
        end = text.find(text[0], 1)
        if end < 0:
            raise ValueError("unterminated quoted attribute name")
        return text[1:end], text[end + 1 :].strip()
    name, _, kind = text.partition(" ")
    if not kind:
        name, _, kind = text.partition("\t")
    return name, kind.strip()


def _split_arff(line: str) -> list[str]:
    if "'" not in line and '"' not in line:
        return line.split(",")
    return next(csv.reader([line], quotechar="'" if "'" in line else '"', skipinitialspace=True))


@contextmanager
def open_table(path: Path) -> Iterator[tuple[list[str], Iterator[tuple[int, list[str]]]]]:
    """``with open_table(path) as (header, rows)``: a CSV or ARFF file's header and its rows as
    ``(line number, fields)``; the file is closed at the end of the block."""
    _check_file(path)
    handle = path.open(newline="", encoding="utf-8-sig", errors="strict")
    with handle:
        yield _read_arff(path, handle) if path.suffix.lower() == ".arff" else _read_csv(path, handle)


def _read_csv(path: Path, handle: TextIO) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    reader = csv.reader(handle)
    try:
        header = next(reader)
    except StopIteration:
        raise UsageError(f"export {path} is empty") from None
    except (csv.Error, UnicodeDecodeError) as exc:
        raise UsageError(f"export {path} is not a readable CSV file: {exc}") from exc

    def rows() -> Iterator[tuple[int, list[str]]]:
        line = reader.line_num
        try:
            for fields in reader:
                if fields:
                    yield line + 1, fields
                line = reader.line_num
        except (csv.Error, UnicodeDecodeError) as exc:
            raise UsageError(f"export {path} line {line + 1}: not readable as CSV: {exc}") from exc

    return [h.strip() for h in header], rows()


def _read_arff(path: Path, handle: TextIO) -> tuple[list[str], Iterator[tuple[int, list[str]]]]:
    header: list[str] = []
    number = 0
    try:
        for raw in handle:
            number += 1
            line = raw.strip()
            if not line or line.startswith("%"):
                continue
            upper = line[:10].upper()
            if upper.startswith("@ATTRIBUTE"):
                header.append(_arff_name(line[len("@attribute") :])[0])
            elif upper.startswith("@DATA"):
                break
            elif not upper.startswith("@RELATION"):
                raise UsageError(f"export {path} line {number}: not an ARFF header line: {line[:60]!r}")
        else:
            raise UsageError(f"export {path} has no @DATA section")
    except (UnicodeDecodeError, ValueError) as exc:
        raise UsageError(f"export {path} line {number}: unreadable ARFF header: {exc}") from exc
    if not header:
        raise UsageError(f"export {path} declares no @ATTRIBUTE")
    start = number

    def rows() -> Iterator[tuple[int, list[str]]]:
        number = start
        try:
            for raw in handle:
                number += 1
                line = raw.strip()
                if not line or line.startswith("%"):
                    continue
                if line.startswith("{"):
                    yield number, ["\0sparse"]
                    continue
                try:
                    yield number, _split_arff(line)
                except csv.Error:
                    yield number, ["\0unparsable"]
        except UnicodeDecodeError as exc:
            raise UsageError(f"export {path} line {number + 1}: not UTF-8: {exc}") from exc

    return header, rows()


def _roles(header: list[str], table: dict[str, tuple[str, ...]]) -> dict[str, int]:
    lower = [h.strip().lower() for h in header]
    found: dict[str, int] = {}
    taken: set[int] = set()
    for role, names in table.items():
        for name in names:
            if name in lower and lower.index(name) not in taken:
                found[role] = lower.index(name)
                taken.add(found[role])
                break
    return found


# -- runs ----------------------------------------------------------------------------------------


class _Bad(Exception):
    pass


def _int(value: str, what: str) -> int | None:
    if value.isdigit():
        return int(value)
    text = value.strip()
    if text.lower() in MISSING:
        return None
    try:
        number = float(text)
    except ValueError:
        raise _Bad(f"{what} {text[:40]!r} is not a number") from None
    if number != int(number):
        raise _Bad(f"{what} {text[:40]!r} is not an integer")
    return int(number)


def _float(value: str, what: str) -> float | None:
    try:
        number = float(value)  # the common case: a plain number
    except ValueError:
        number = None
    if number is None or number != number:
        text = value.strip()
        if text.lower() in MISSING:
            return None
        try:
            number = float(text)
        except ValueError:
            raise _Bad(f"{what} {text[:40]!r} is not a number") from None
    if number != number or number in (float("inf"), float("-inf")):
        raise _Bad(f"{what} {value.strip()[:40]!r} is not a finite number")
    return number


def import_runs(path: Path, star: StarData, report: ImportReport, measure: str | None = None) -> FileReport:
    """Add the runs of one export file to ``star``; malformed rows go to ``report``."""
    with open_table(path) as (header, rows):
        return _import_runs(path, header, rows, star, report, measure)


def _import_runs(
    path: Path,
    header: list[str],
    rows: Iterator[tuple[int, list[str]]],
    star: StarData,
    report: ImportReport,
    measure: str | None,
) -> FileReport:
    roles = _roles(header, RUN_COLUMNS)
    file_report = FileReport(path=str(path), kind="runs")
    file_report.columns = {role: header[i] for role, i in roles.items()}
    file_report.ignored_columns = [h for i, h in enumerate(header) if i not in roles.values()]
    if "flow_name" not in roles and "flow_id" not in roles:
        raise UsageError(f"export {path}: no flow column (one of {', '.join(RUN_COLUMNS['flow_name'])})")
    if not {"data_id", "data_name", "task_id"} & roles.keys():
        raise UsageError(
            f"export {path}: no dataset or task column (openml_data_id, dataset_name, task_id...)"
        )
    measures = [m for m in MEASURE_ROLES if m in roles]
    if not measures:
        raise UsageError(f"export {path}: no measure column (acc, predictive_accuracy, auc, logloss...)")
    is_classification = any(m in CLASSIFICATION_MEASURES for m in measures)
    # Without a status column a run has a result when a quality measure (not a runtime) is there.
    result_measures = [m for m in measures if m in CLASSIFICATION_MEASURES] or measures
    primary = next((m for m in ("accuracy", "auc", "f1", "log_loss") if m in roles), "runtime_s")
    primary_function = OPENML_FUNCTIONS.get(primary, primary)
    if measure is not None:
        primary_function = measure
    stem = path.stem
    name = path.name
    ncols = len(header)
    statuses: Counter[str] = Counter()
    seen = set(star.runs.columns["id"]) if len(star.runs) else set()
    index = {role: i for role, i in roles.items()}
    runs = star.runs
    setup_prefixed = file_report.columns.get("flow_name", "").lower() == "algorithm"
    columns = [runs.columns[c] for c in RUN_FIELDS]  # the positions _RowPlan fills
    assert len(columns) == len(runs.columns)
    int_roles = [(role, index[role], role.replace("_", " ")) for role in INT_ROLES if role in index]
    measure_roles = [(role, index[role], role in UNIT_MEASURES) for role in MEASURE_ROLES if role in index]
    text_roles = [
        (role, index[role])
        for role in ("run_key", "data_name", "version", "task_type", "target")
        if role in index
    ]
    plan = _RowPlan(int_roles, measure_roles, text_roles, index, setup_prefixed)

    for line, fields in rows:
        file_report.rows += 1
        try:
            if len(fields) != ncols:
                if fields and fields[0] == "\0sparse":
                    raise _Bad("sparse ARFF rows are not supported")
                if fields and fields[0] == "\0unparsable":
                    raise _Bad("the row does not parse (quotes)")
                raise _Bad(f"{len(fields)} fields, the header has {ncols}")
            values = _run_values(fields, plan)
        except _Bad as exc:
            report.refuse(RowProblem(name, line, str(exc)), file_report)
            continue
        run_id = values["run_id"]
        if run_id is not None:
            key = f"run:{run_id}"
        elif values["run_key"]:
            key = f"{stem}:{values['run_key']}"
        else:
            key = f"{stem}:{line}"
        if key in seen:
            report.refuse(RowProblem(name, line, f"duplicate run {key}"), file_report)
            continue
        seen.add(key)

        algorithm = _algorithm(star, values)
        dataset = _dataset(star, values)
        task = _task(star, values, dataset, is_classification, primary_function)
        status = values["status"]
        if status is None:
            status = "ok" if any(values[m] is not None for m in result_measures) else "no_result"
        statuses[status] += 1
        keep = status == "ok"
        runtime = values["runtime_s"]
        if runtime is None and values["runtime_ms"] is not None:
            runtime = values["runtime_ms"] / 1000.0
        for column, value in zip(
            columns,
            (
                key,
                run_id,
                values["setup_id"],
                values["fold"],
                values["repeat"],
                values["accuracy"] if keep else None,
                values["auc"] if keep else None,
                values["f1"] if keep else None,
                values["log_loss"] if keep else None,
                runtime if keep else None,
                status,
                f"{name}:{line}",
                algorithm,
                dataset,
                task,
                values["date"],
            ),
            strict=True,
        ):
            column.append(value)
        file_report.loaded += 1

    file_report.statuses = dict(statuses)
    not_ok = {s: n for s, n in statuses.items() if s != "ok"}
    if not_ok:
        listed = ", ".join(f"{n} {s}" for s, n in sorted(not_ok.items()))
        file_report.notes.append(f"runs without a result, kept with their status and no measures: {listed}")
    if "task_id" not in roles:
        kind = CLASSIFICATION if is_classification else "unknown"
        file_report.notes.append(
            f"no task ids: one task per dataset, type {kind!r} inferred from the measures "
            f"({', '.join(measures)})"
        )
    if file_report.ignored_columns:
        file_report.notes.append(f"columns not used: {', '.join(file_report.ignored_columns)}")
    report.files.append(file_report)
    return file_report


@dataclass(frozen=True)
class _RowPlan:
    """Where each role of a file's rows is (computed once per file)."""

    ints: Sequence[tuple[str, int, str]]
    measures: Sequence[tuple[str, int, bool]]
    texts: Sequence[tuple[str, int]]
    index: dict[str, int]
    setup_prefixed: bool


_EMPTY_VALUES: dict[str, Any] = dict.fromkeys(RUN_COLUMNS)


def _run_values(fields: list[str], plan: _RowPlan) -> dict[str, Any]:
    values = dict(_EMPTY_VALUES)
    for role, i, what in plan.ints:
        values[role] = _int(fields[i], what)
    for role, i, unit in plan.measures:
        number = _float(fields[i], role)
        if number is not None:
            if unit and not 0.0 <= number <= 1.0:
                raise _Bad(f"{role} {number} is outside [0, 1]")
            if number < 0:
                raise _Bad(f"{role} {number} is negative")
        values[role] = number
    for role, i in plan.texts:
        values[role] = fields[i].strip()
    index = plan.index
    if "status" in index:
        status = fields[index["status"]].strip().lower()
        values["status"] = status or None
    if "date" in index:
        text = fields[index["date"]].strip()
        if text.lower() not in MISSING:
            try:
                values["date"] = date_key(text)
            except ValueError:
                raise _Bad(f"date {text[:40]!r} is not an ISO date") from None
    flow = fields[index["flow_name"]].strip() if "flow_name" in index else ""
    match = _SETUP_FLOW.match(flow) if plan.setup_prefixed else None
    if match and values["setup_id"] is None:
        values["setup_id"] = int(match.group(1))
        flow = match.group(2)
    if not flow and values["flow_id"] is None:
        raise _Bad("no flow name or id")
    values["flow_name"] = flow
    if values["data_id"] is None and not values["data_name"] and values["task_id"] is None:
        raise _Bad("no dataset or task")
    return values


def _algorithm(star: StarData, values: dict[str, Any]) -> str:
    flow_id, name, version = values["flow_id"], values["flow_name"], values["version"] or ""
    key = f"flow:{flow_id}" if flow_id is not None else f"{name} {version}" if version else name
    if key not in star.algorithms:
        star.algorithms[key] = AlgorithmRow(id=key, name=name or key, flow_id=flow_id, version=version)
    return key


def _dataset(star: StarData, values: dict[str, Any]) -> str:
    data_id, name, task_id = values["data_id"], values["data_name"], values["task_id"]
    if data_id is not None:
        key = f"data:{data_id}"
    elif name:
        key = f"name:{name}"
    else:
        key = f"data-of-task:{task_id}"
    row = star.datasets.get(key)
    if row is None:
        label = name or (f"data {data_id}" if data_id is not None else f"dataset of task {task_id}")
        star.datasets[key] = DatasetRow(id=key, name=label, data_id=data_id)
    elif name and row.name != name and row.name.startswith(("data ", "dataset of task")):
        row.name = name
    return key


def _task(star: StarData, values: dict[str, Any], dataset: str, classification: bool, function: str) -> str:
    task_id = values["task_id"]
    key = f"task:{task_id}" if task_id is not None else f"task-of:{dataset}"
    if key not in star.tasks:
        kind = values["task_type"] or (CLASSIFICATION if classification else "")
        star.tasks[key] = TaskRow(
            id=key,
            dataset_id=dataset,
            task_id=task_id,
            type=kind,
            target=values["target"] or "",
            measure=function,
            description="" if task_id is not None else "The export gives no OpenML task id for these runs.",
        )
    return key


# -- qualities -----------------------------------------------------------------------------------


def import_qualities(path: Path, star: StarData, report: ImportReport) -> FileReport:
    """Attach dataset qualities (keyed by data id, or by task id) to the datasets of ``star``."""
    with open_table(path) as (header, rows):
        return _import_qualities(path, header, rows, star, report)


def _import_qualities(
    path: Path, header: list[str], rows: Iterator[tuple[int, list[str]]], star: StarData, report: ImportReport
) -> FileReport:
    keys = _roles(header, QUALITY_KEYS)
    file_report = FileReport(path=str(path), kind="qualities")
    if not keys:
        raise UsageError(f"qualities {path}: no openml_data_id or openml_task_id column")
    key_role, key_index = next(iter(keys.items()))
    file_report.columns = {key_role: header[key_index]}
    by_data = {row.data_id: row for row in star.datasets.values() if row.data_id is not None}
    by_task = {t.task_id: star.datasets[t.dataset_id] for t in star.tasks.values() if t.task_id is not None}
    wanted = {
        i: h
        for i, h in enumerate(header)
        if h
        in (
            "NumberOfInstances",
            "NumberOfFeatures",
            "NumberOfClasses",
            "MajorityClassSize",
            "MinorityClassSize",
            "PercentageOfMissingValues",
        )
    }
    ncols = len(header)
    matched: set[str] = set()
    unmatched = 0
    for line, fields in rows:
        file_report.rows += 1
        try:
            if len(fields) != ncols:
                raise _Bad(f"{len(fields)} fields, the header has {ncols}")
            key = _int(fields[key_index], key_role.replace("_", " "))
            if key is None:
                raise _Bad(f"no {key_role.replace('_', ' ')}")
            qualities: dict[str, float] = {}
            for i, quality in wanted.items():
                value = _float(fields[i], quality)
                if value is not None:
                    qualities[quality] = value
        except _Bad as exc:
            report.refuse(RowProblem(path.name, line, str(exc)), file_report)
            continue
        dataset = (by_data if key_role == "data_id" else by_task).get(key)
        if dataset is None:
            unmatched += 1
            continue
        dataset.apply_qualities(qualities)
        matched.add(dataset.id)
        file_report.loaded += 1
    file_report.notes.append(
        f"qualities for {len(matched)} datasets of the runs; {unmatched} rows name a "
        f"{key_role.replace('_', ' ')} no run has"
    )
    report.files.append(file_report)
    return file_report


def import_exports(
    runs: list[Path], qualities: list[Path] | None = None, measure: str | None = None
) -> tuple[StarData, ImportReport]:
    """Read run exports, then qualities, into one star."""
    if not runs:
        raise UsageError("no export file given")
    star = StarData()
    report = ImportReport()
    for path in runs:
        import_runs(path, star, report, measure=measure)
    for path in qualities or []:
        import_qualities(path, star, report)
    return star, report
