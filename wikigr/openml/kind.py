"""The ``openml`` kind of pack: OpenML experiment results as a Kimball star (docs/openml.md; the
seam: :mod:`wikigr.pack.kind`).

Its store holds the fact table ``Run``, the dimensions ``Algorithm``, ``Dataset``, ``Task`` and
``Date``, the outrigger ``AlgorithmFamily``, and the rel tables ``USED_ALGORITHM``, ``ON_DATASET``,
``FOR_TASK``, ``RUN_ON_DATE``, ``PART_OF_TASK`` (Dataset→Task) and ``BELONGS_TO_FAMILY``
(Algorithm→AlgorithmFamily). It has no passages: the router's ``openml`` strategy (the
``openml_tools`` stage) answers from the runs. Nothing heavy is imported here: the kind is read
whenever an OpenML pack's manifest is.
"""

from __future__ import annotations

import json
import re
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from wikigr import __version__
from wikigr.errors import UsageError
from wikigr.openml.names import Vocabulary, load_vocabulary
from wikigr.pack.kind import KindStrategy, PackKind, register_kind
from wikigr.pack.manifest import Manifest
from wikigr.pack.store import Store
from wikigr.skill import MARKER, MAX_DESCRIPTION, clean, sentence, yaml_string

if TYPE_CHECKING:
    from wikigr.embed import Embedder
    from wikigr.openml.tools import OpenMLTools

OPENML_SCHEMA_VERSION = 1
OPENML_NODE_TABLES = ("Run", "Algorithm", "AlgorithmFamily", "Dataset", "Task", "Date")
OPENML_REL_TABLES = (
    "USED_ALGORITHM",
    "ON_DATASET",
    "FOR_TASK",
    "RUN_ON_DATE",
    "PART_OF_TASK",
    "BELONGS_TO_FAMILY",
)


def openml_schema(dim: int) -> list[str]:
    """The Kimball star of an OpenML pack. ``key`` columns are integer surrogate keys (the primary
    keys; ``id`` is the readable, unique id): the fact table ``Run`` holds the foreign keys of its
    dimensions (``algorithm_key``, ``dataset_key``, ``task_key``, ``date_key`` = the Date id)
    besides the rels that mirror them for traversal. Dimension descriptions carry an embedding."""
    return [
        "CREATE NODE TABLE Run(id STRING, key INT64, run_id INT64, setup_id INT64, fold INT64, "
        "repeat INT64, accuracy DOUBLE, auc DOUBLE, f1 DOUBLE, log_loss DOUBLE, runtime_s DOUBLE, "
        "status STRING, source STRING, algorithm_key INT64, dataset_key INT64, task_key INT64, "
        "date_key INT64, PRIMARY KEY(key))",
        "CREATE NODE TABLE Algorithm(id STRING, key INT64, flow_id INT64, name STRING, version STRING, "
        "family STRING, paradigm STRING, library STRING, description STRING, "
        f"embedding FLOAT[{dim}], PRIMARY KEY(key))",
        "CREATE NODE TABLE AlgorithmFamily(id STRING, name STRING, paradigm STRING, rule STRING, "
        f"description STRING, embedding FLOAT[{dim}], PRIMARY KEY(id))",
        "CREATE NODE TABLE Dataset(id STRING, key INT64, data_id INT64, name STRING, rows INT64, "
        "features INT64, "
        "classes INT64, missing_pct DOUBLE, majority_class INT64, minority_class INT64, "
        "imbalance_ratio DOUBLE, size_bucket STRING, dimension_bucket STRING, imbalance_bucket STRING, "
        f"description STRING, embedding FLOAT[{dim}], PRIMARY KEY(key))",
        "CREATE NODE TABLE Task(id STRING, key INT64, task_id INT64, type STRING, target STRING, "
        "measure STRING, "
        f"estimation STRING, description STRING, embedding FLOAT[{dim}], PRIMARY KEY(key))",
        "CREATE NODE TABLE Date(id INT64, date STRING, year INT64, quarter INT64, month INT64, "
        "month_name STRING, day INT64, weekday STRING, PRIMARY KEY(id))",
        "CREATE REL TABLE USED_ALGORITHM(FROM Run TO Algorithm)",
        "CREATE REL TABLE ON_DATASET(FROM Run TO Dataset)",
        "CREATE REL TABLE FOR_TASK(FROM Run TO Task)",
        "CREATE REL TABLE RUN_ON_DATE(FROM Run TO Date)",
        "CREATE REL TABLE PART_OF_TASK(FROM Dataset TO Task)",
        "CREATE REL TABLE BELONGS_TO_FAMILY(FROM Algorithm TO AlgorithmFamily)",
    ]


def render_openml_skill(manifest: Manifest, query_ref: str | None = None) -> str:
    """The ``SKILL.md`` of an OpenML pack: what its runs cover and how to ask for numbers."""
    ref = query_ref or manifest.name
    shell_ref = ref if re.fullmatch(r"[A-Za-z0-9._/~-]+", ref) else json.dumps(ref)
    stats = manifest.stats
    description = clean(
        f"OpenML experiment results pack {manifest.name}: {clean(manifest.description, 500)}. "
        "Use this skill for questions about how machine-learning algorithms and algorithm families "
        "perform on datasets and tasks (accuracy, AUC, runtime, medians, best runs): it answers from "
        "the recorded runs with cited run ids and group counts.",
        MAX_DESCRIPTION,
    )
    return f"""---
name: {manifest.name}
description: {yaml_string(description)}
---

<!-- {MARKER} {__version__} for the pack {clean(manifest.name, 64)}; `wikigr pack update` rewrites it -->

# OpenML pack: {clean(manifest.name, 64)}

{sentence(clean(manifest.description, 600))}
It holds {stats.runs:,} runs, built {clean(manifest.created_at, 40)}.

## How to query

```sh
wikigr query {shell_ref} "Which algorithm family has the highest median accuracy?" --json
wikigr cypher {shell_ref} "MATCH (r:Run)-[:USED_ALGORITHM]->(a:Algorithm) RETURN a.family, count(*)" --json
```

(From a clone of wikigr, run `uv run wikigr ...`.) `wikigr cypher` runs read-only Cypher over the
star schema (Run facts; Algorithm, Dataset, Task, Date dimensions; AlgorithmFamily).

## How to cite

- Every number in the answer comes from a tool result shown in `trace`; `[n]` is `sources[n-1]`
  (a group, a run or an entity). Cite the run ids, entity names and group counts it gives.
- Do not add numbers that no tool returned.
"""


class OpenMLKind(PackKind):
    """OpenML packs: no passages; their tools answer from the runs."""

    def __init__(self) -> None:
        # The names each open store holds, read on its first claim (and dropped with the store).
        self._vocabularies: weakref.WeakKeyDictionary[Store, Vocabulary] = weakref.WeakKeyDictionary()
        # The tools the page's pictures of each open store read (wikigr.openml.star).
        self._tools: weakref.WeakKeyDictionary[Store, OpenMLTools] = weakref.WeakKeyDictionary()

    name = "openml"
    schema_version = OPENML_SCHEMA_VERSION
    node_tables = OPENML_NODE_TABLES
    rel_tables = OPENML_REL_TABLES
    marker_table = "Run"
    default_config: ClassVar[Mapping[str, object]] = {"max_tool_calls": 6}
    stats: ClassVar[Mapping[str, str]] = {
        "runs": "Run",
        "algorithms": "Algorithm",
        "families": "AlgorithmFamily",
        "datasets": "Dataset",
        "tasks": "Task",
        "dates": "Date",
    }
    label = "an OpenML pack"
    plural = "OpenML packs"
    passages = False
    answers_with = "tools over its runs"
    strategy = KindStrategy(
        name="openml",
        stages=("openml_tools",),
        why="an OpenML pack: its tools answer from the runs (picked by rules, or by Claude)",
        shape="an OpenML pack (experiment runs in a star schema, no passages)",
    )

    def ddl(self, dim: int) -> list[str]:
        return openml_schema(dim)

    def size(self, manifest: Manifest) -> str:
        return f"{manifest.stats.runs:,} runs"

    def info_notes(self, manifest: Manifest) -> list[tuple[str, str]]:
        if manifest.openml is not None and manifest.openml.malformed_rows:
            return [("malformed rows", f"{manifest.openml.malformed_rows} (not imported)")]
        return []

    def skill(self, manifest: Manifest, store: Store, query_ref: str | None = None) -> str:
        return render_openml_skill(manifest, query_ref)

    def claim(self, question: str, store: Store) -> tuple[float, str] | None:
        """A question of measures, runs, or the pack's algorithms and datasets
        (:mod:`wikigr.openml.claim`)."""
        from wikigr.openml.claim import claim  # the question's analysis: only when a set asks

        vocab = self._vocabularies.get(store)
        if vocab is None:
            vocab = self._vocabularies[store] = load_vocabulary(store.rows)
        return claim(question, vocab)

    def picture(
        self,
        store: Store,
        manifest: Manifest,
        answer: Mapping[str, Any] | None,
        member: str | None,
        measure: str | None,
        limit: int,
    ) -> dict[str, Any]:
        """The Kimball star: its schema, what an answer aggregated, or a member's runs
        (:mod:`wikigr.openml.star`)."""
        from wikigr.openml.answer import pack_measure, pack_site  # numpy, pyarrow: when drawn
        from wikigr.openml.star import picture
        from wikigr.openml.tools import OpenMLTools

        tools = self._tools.get(store)
        if tools is None:
            tools = self._tools[store] = OpenMLTools(store, _no_embedder)
        return picture(tools, pack_site(manifest), pack_measure(manifest), answer, member, measure, limit)


def _no_embedder() -> Embedder:
    """The pictures never search by meaning (their tools aggregate and read)."""
    raise UsageError("the star's pictures do not search by meaning")


KIND = register_kind(OpenMLKind())
