"""The rows of an OpenML pack's star: the ``Run`` facts and their dimensions.

Keys are strings that say where they come from (docs/openml.md):

- ``Run.id``: ``run:ID`` for an OpenML run; ``FILE:KEY`` for a row of an export (the export's run
  key, else its line number);
- ``Algorithm.id``: ``flow:ID`` for an OpenML flow; else the flow name, with `` VERSION`` when the
  export gives one (``autosklearn 0.5.1``);
- ``Dataset.id``: ``data:ID``; else ``name:NAME`` (an export that names the dataset only), or
  ``data-of-task:ID`` (an export that gives only the task);
- ``Task.id``: ``task:ID``; else ``task-of:DATASET KEY`` (an export without task ids);
- ``Date.id``: the integer ``YYYYMMDD``.
"""

from __future__ import annotations

import calendar
import datetime as dt
from dataclasses import dataclass, field
from typing import Any

from wikigr.openml.families import classify

#: Measures a run can carry, as stored on ``Run``. Higher is better except for log_loss and runtime.
MEASURES = ("accuracy", "auc", "f1", "log_loss", "runtime_s")
LOWER_IS_BETTER = frozenset({"log_loss", "runtime_s"})
#: OpenML's evaluation measure (function) names for our measures.
OPENML_FUNCTIONS = {
    "accuracy": "predictive_accuracy",
    "auc": "area_under_roc_curve",
    "f1": "f_measure",
    "runtime_s": "usercpu_time_millis",
}
FUNCTION_MEASURES = {v: k for k, v in OPENML_FUNCTIONS.items()}
#: Measures in [0, 1]; a value outside is a malformed row.
UNIT_MEASURES = frozenset({"accuracy", "auc", "f1"})
CLASSIFICATION_MEASURES = frozenset({"accuracy", "auc", "f1", "log_loss"})
CLASSIFICATION = "Supervised Classification"


def measure_name(name: str) -> str:
    """``predictive_accuracy`` or ``accuracy`` -> ``accuracy``; ValueError for anything else."""
    key = name.strip().lower().replace("-", "_")
    if key in MEASURES:
        return key
    if key in FUNCTION_MEASURES:
        return FUNCTION_MEASURES[key]
    aliases = {
        "acc": "accuracy",
        "roc_auc": "auc",
        "f_measure": "f1",
        "logloss": "log_loss",
        "runtime": "runtime_s",
    }
    if key in aliases:
        return aliases[key]
    known = ", ".join(list(MEASURES) + list(FUNCTION_MEASURES))
    raise ValueError(f"unknown measure {name!r} (known: {known})")


# -- buckets -------------------------------------------------------------------------------------

#: (upper bound exclusive, label) — documented in docs/openml.md.
SIZE_BUCKETS = ((1_000, "small"), (10_000, "medium"), (100_000, "large"), (None, "very_large"))
DIMENSION_BUCKETS = ((20, "low"), (100, "medium"), (None, "high"))
IMBALANCE_BUCKETS = ((1.5, "balanced"), (5.0, "moderate"), (None, "imbalanced"))
UNKNOWN = "unknown"


def _bucket(value: float | None, table: tuple[tuple[float | None, str], ...]) -> str:
    if value is None:
        return UNKNOWN
    for bound, label in table:
        if bound is None or value < bound:
            return label
    return UNKNOWN


def size_bucket(rows: int | None) -> str:
    return _bucket(rows, SIZE_BUCKETS)


def dimension_bucket(features: int | None) -> str:
    return _bucket(features, DIMENSION_BUCKETS)


def imbalance(majority: int | None, minority: int | None) -> tuple[float | None, str]:
    """``(ratio, bucket)`` of majority / minority class sizes. A declared class without instances
    (minority 0) makes the ratio infinite: ratio None, bucket ``imbalanced``."""
    if majority is None or minority is None or majority <= 0:
        return None, UNKNOWN
    if minority == 0:
        return None, "imbalanced"
    ratio = majority / minority
    return ratio, _bucket(ratio, IMBALANCE_BUCKETS)


# -- rows ----------------------------------------------------------------------------------------

#: Characters of a dimension's text that are embedded (cost grows with length; names come first).
EMBED_CHARS = 300


def _embed_text(summary: str, description: str) -> str:
    """A row's summary and description, clipped to what is worth embedding."""
    text = f"{summary}. {description}" if description else summary
    return text if len(text) <= EMBED_CHARS else text[: EMBED_CHARS - 1].rsplit(" ", 1)[0] + "…"


@dataclass
class AlgorithmRow:
    id: str
    name: str
    flow_id: int | None = None
    version: str = ""
    description: str = ""
    family: str = ""
    paradigm: str = ""
    library: str = ""
    rule: str = ""

    def __post_init__(self) -> None:
        if not self.family:
            match = classify(self.name)
            self.family, self.paradigm, self.library, self.rule = (
                match.family,
                match.paradigm,
                match.library,
                match.rule,
            )

    def summary(self) -> str:
        """A one-line description from what is known (when the source gives none)."""
        version = f" {self.version}" if self.version else ""
        flow = f", OpenML flow {self.flow_id}" if self.flow_id is not None else ""
        library = f", {self.library}" if self.library else ""
        return f"{self.name}{version}: {self.family.replace('_', ' ')} ({self.paradigm}{library}{flow})"

    def text(self) -> str:
        """What is embedded for semantic search (short: embedding cost grows with length)."""
        return _embed_text(self.summary(), self.description)


@dataclass
class DatasetRow:
    id: str
    name: str
    data_id: int | None = None
    rows: int | None = None
    features: int | None = None
    classes: int | None = None
    missing_pct: float | None = None
    majority_class: int | None = None
    minority_class: int | None = None
    description: str = ""

    @property
    def imbalance_ratio(self) -> float | None:
        return imbalance(self.majority_class, self.minority_class)[0]

    @property
    def imbalance_bucket(self) -> str:
        return imbalance(self.majority_class, self.minority_class)[1]

    @property
    def size_bucket(self) -> str:
        return size_bucket(self.rows)

    @property
    def dimension_bucket(self) -> str:
        return dimension_bucket(self.features)

    def apply_qualities(self, qualities: dict[str, float]) -> None:
        """Set rows, features, classes, class sizes and missing values from OpenML qualities."""

        def count(name: str) -> int | None:
            value = qualities.get(name)
            return None if value is None else round(value)

        self.rows = count("NumberOfInstances") if "NumberOfInstances" in qualities else self.rows
        self.features = count("NumberOfFeatures") if "NumberOfFeatures" in qualities else self.features
        self.classes = count("NumberOfClasses") if "NumberOfClasses" in qualities else self.classes
        if "MajorityClassSize" in qualities and "MinorityClassSize" in qualities:
            self.majority_class = count("MajorityClassSize")
            self.minority_class = count("MinorityClassSize")
        if "PercentageOfMissingValues" in qualities:
            self.missing_pct = qualities["PercentageOfMissingValues"]

    def summary(self) -> str:
        head = f"Dataset {self.name}" + (f" (OpenML data {self.data_id})" if self.data_id is not None else "")
        facts = []
        if self.rows is not None:
            facts.append(f"{self.rows} rows ({self.size_bucket.replace('_', ' ')})")
        if self.features is not None:
            facts.append(f"{self.features} features ({self.dimension_bucket} dimension)")
        if self.classes is not None:
            facts.append(f"{self.classes} classes")
        if self.imbalance_bucket != UNKNOWN:
            facts.append(
                f"{self.imbalance_bucket} classes" if self.classes is None else self.imbalance_bucket
            )
        return f"{head}: {', '.join(facts)}" if facts else head

    def text(self) -> str:
        return _embed_text(self.summary(), self.description)


@dataclass
class TaskRow:
    id: str
    dataset_id: str
    task_id: int | None = None
    type: str = ""
    target: str = ""
    measure: str = ""
    estimation: str = ""
    description: str = ""

    def summary(self, dataset_name: str) -> str:
        head = f"Task {self.task_id}" if self.task_id is not None else "Task"
        parts = [f"{head}: {self.type or 'unknown type'} on {dataset_name}"]
        if self.target:
            parts.append(f"target {self.target}")
        if self.measure:
            parts.append(f"measure {self.measure}")
        if self.estimation:
            parts.append(self.estimation)
        return ", ".join(parts)

    def text(self, dataset_name: str) -> str:
        return _embed_text(self.summary(dataset_name), self.description)


RUN_COLUMNS = (
    "id",
    "key",
    "run_id",
    "setup_id",
    "fold",
    "repeat",
    "accuracy",
    "auc",
    "f1",
    "log_loss",
    "runtime_s",
    "status",
    "source",
    "algorithm_key",
    "dataset_key",
    "task_key",
    "date_key",
)
RUN_LINKS = ("algorithm", "dataset", "task", "date")
# What the importers fill per run: the stored columns but the surrogate keys (set when written).
RUN_FIELDS = tuple(c for c in RUN_COLUMNS if c != "key" and not c.endswith("_key")) + RUN_LINKS


@dataclass
class RunColumns:
    """The Run facts, column by column (bulk-loaded as Arrow), and each run's dimension keys."""

    columns: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in RUN_FIELDS})

    def __len__(self) -> int:
        return len(self.columns["id"])

    def add(self, values: dict[str, Any]) -> None:
        for name, column in self.columns.items():
            column.append(values.get(name))


@dataclass
class StarData:
    """Everything that goes into an OpenML pack's store."""

    runs: RunColumns = field(default_factory=RunColumns)
    algorithms: dict[str, AlgorithmRow] = field(default_factory=dict)
    datasets: dict[str, DatasetRow] = field(default_factory=dict)
    tasks: dict[str, TaskRow] = field(default_factory=dict)

    def dates(self) -> list[dict[str, Any]]:
        """The conformed Date dimension: one row per distinct run date."""
        keys = sorted({k for k in self.runs.columns["date"] if k is not None})
        return [date_row(k) for k in keys]


def date_key(text: str) -> int:
    """``2019-04-19T01:38:55`` (or ``2019-04-19 ...``) -> 20190419; ValueError when not a date."""
    day = dt.date.fromisoformat(text.strip()[:10])
    return day.year * 10_000 + day.month * 100 + day.day


def date_row(key: int) -> dict[str, Any]:
    day = dt.date(key // 10_000, key // 100 % 100, key % 100)
    return {
        "id": key,
        "date": day.isoformat(),
        "year": day.year,
        "quarter": (day.month - 1) // 3 + 1,
        "month": day.month,
        "month_name": calendar.month_name[day.month],
        "day": day.day,
        "weekday": calendar.day_name[day.weekday()],
    }
