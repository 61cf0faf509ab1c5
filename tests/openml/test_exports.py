"""Offline import of OpenML exports: every row becomes a run or is reported, the star's counts
equal what the files say (computed here straight from the files), and the CLI builds packs."""

from __future__ import annotations

import csv
import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.openml.conftest import AMLB, QUALITIES, STUDY1
from wikigr.errors import UsageError
from wikigr.openml.exports import import_exports
from wikigr.pack.pack import open_pack
from wikigr.pack.store import Store
from wikigr.validate import validate_pack


def amlb_rows() -> list[dict[str, str]]:
    with AMLB.open(newline="") as handle:
        return list(csv.DictReader(handle))


def arff_rows(path: Path) -> list[list[str]]:
    lines = path.read_text().splitlines()
    start = next(i for i, line in enumerate(lines) if line.strip().upper() == "@DATA")
    return [line.split(",") for line in lines[start + 1 :] if line.strip() and not line.startswith("%")]


def test_amlb_csv_rows_become_runs_and_dimensions() -> None:
    rows = amlb_rows()
    star, report = import_exports([AMLB])
    assert report.malformed == 0 and report.rows == len(rows) == len(star.runs)
    assert set(star.algorithms) == {f"{r['framework']} {r['framework_version']}" for r in rows}
    assert {d.name for d in star.datasets.values()} == {r["dataset_name"] for r in rows}
    assert set(star.tasks) == {f"task:{r['openml_task_id']}" for r in rows}
    runs = star.runs.columns
    by_id = {runs["id"][i]: i for i in range(len(star.runs))}
    for row in rows:
        i = by_id[f"amlb2019_sample:{row['run_key']}"]
        assert runs["accuracy"][i] == (float(row["acc"]) if row["acc"] else None)
        assert runs["log_loss"][i] == (float(row["logloss"]) if row["logloss"] else None)
        assert runs["fold"][i] == int(row["fold"])
        assert runs["date"][i] == int(row["utc"][:10].replace("-", ""))
        no_measure = not (row["acc"] or row["auc"] or row["logloss"])
        assert runs["status"][i] == ("no_result" if no_measure else "ok")
    assert any(s == "no_result" for s in runs["status"])  # the sample keeps failed runs
    assert "columns not used: models, source_file" in " ".join(report.notes)


def test_arff_setup_ids_statuses_and_inferred_tasks() -> None:
    rows = arff_rows(STUDY1)
    star, report = import_exports([STUDY1])
    assert report.malformed == 0 and len(star.runs) == len(rows)
    runs = star.runs.columns
    for i, row in enumerate(rows):
        setup, flow = row[2].split("_", 1)
        assert runs["setup_id"][i] == int(setup)
        assert star.algorithms[runs["algorithm"][i]].name == flow
        assert runs["dataset"][i] == f"data:{row[0]}"
        assert runs["status"][i] == row[4]
        # the exporter writes 0 for a setup never run on the task: no measure is recorded then
        assert runs["accuracy"][i] == (float(row[3]) if row[4] == "ok" else None)
    task = star.tasks["task-of:data:2"]
    assert task.task_id is None and task.type == "Supervised Classification"
    assert task.measure == "predictive_accuracy"
    assert any("other" in note and "no measures" in note for note in report.notes)


def test_qualities_join_on_data_id_and_set_buckets() -> None:
    star, report = import_exports([STUDY1], [QUALITIES])
    qualities = {r[0]: r for r in arff_rows(QUALITIES)}
    for data_id in ("2", "3", "6", "11"):
        dataset = star.datasets[f"data:{data_id}"]
        q = qualities[data_id]
        assert dataset.rows == round(float(q[2])) and dataset.features == round(float(q[3]))
        assert dataset.classes == round(float(q[4]))
    balance = star.datasets["data:11"]  # 288 / 49
    assert balance.imbalance_ratio == pytest.approx(288 / 49) and balance.imbalance_bucket == "imbalanced"
    assert star.datasets["data:3"].imbalance_bucket == "balanced"  # 1669 / 1527
    assert star.datasets["data:2"].imbalance_bucket == "imbalanced"  # a class with no instance
    assert star.datasets["data:2"].imbalance_ratio is None
    assert star.datasets["data:6"].size_bucket == "large" and star.datasets["data:11"].size_bucket == "small"
    assert star.datasets["data:11"].dimension_bucket == "low"
    assert "qualities for 4 datasets of the runs; 1 rows name a data id no run has" in " ".join(report.notes)


def test_malformed_rows_are_counted_and_shown_never_dropped_silently(tmp_path: Path) -> None:
    lines = AMLB.read_text().splitlines()
    header, good = lines[0], lines[1:]
    fields = good[0].split(",")
    bad = [
        ",".join([*fields[:7], "abc", *fields[8:]]),  # accuracy not a number
        ",".join([*fields[:7], "1.7", *fields[8:]]),  # accuracy out of range
        ",".join(fields[:5]),  # too few fields
        ",".join([*fields[:3], "", *fields[4:]]),  # no framework
        ",".join([*fields[:6], "yesterday", *fields[7:]]),  # not a date
    ]
    bad = [b.replace(fields[0] + ",", f"9{i}{fields[0]},", 1) for i, b in enumerate(bad)]
    export = tmp_path / "runs.csv"
    export.write_text("\n".join([header, *good, *bad, good[0]]) + "\n")  # good[0] again: a duplicate
    star, report = import_exports([export])
    assert len(star.runs) == len(good)
    assert report.malformed == 6 and report.rows == len(good) + 6
    first = len(good) + 2  # line numbers: the header is line 1
    assert report.examples == [
        f"runs.csv:{first}: accuracy 'abc' is not a number",
        f"runs.csv:{first + 1}: accuracy 1.7 is outside [0, 1]",
        f"runs.csv:{first + 2}: 5 fields, the header has 13",
        f"runs.csv:{first + 3}: no flow name or id",
        f"runs.csv:{first + 4}: date 'yesterday' is not an ISO date",
    ]


def test_files_without_the_needed_columns_are_refused(tmp_path: Path) -> None:
    export = tmp_path / "x.csv"
    export.write_text("framework,dataset_name,color\nRF,iris,blue\n")
    with pytest.raises(UsageError, match="no measure column"):
        import_exports([export])
    export.write_text("dataset_name,acc\niris,0.9\n")
    with pytest.raises(UsageError, match="no flow column"):
        import_exports([export])
    with pytest.raises(UsageError, match="no such export file"):
        import_exports([tmp_path / "missing.csv"])
    arff = tmp_path / "x.arff"
    arff.write_text("@RELATION x\n@ATTRIBUTE a NUMERIC\n")
    with pytest.raises(UsageError, match="no @DATA"):
        import_exports([arff])


def test_pack_store_holds_the_star(openml_pack: Path) -> None:
    pack = open_pack(openml_pack)
    assert pack.manifest.source_kind == "openml" and pack.manifest.openml is not None
    n_runs = len(amlb_rows()) + len(arff_rows(STUDY1))
    assert pack.manifest.stats.runs == n_runs
    with Store.open(openml_pack / "pack.db") as store:
        assert store.kind == "openml"
        assert store.rows("MATCH (r:Run) RETURN count(r)")[0][0] == n_runs
        for rel in ("USED_ALGORITHM", "ON_DATASET", "FOR_TASK"):
            assert store.rows(f"MATCH (:Run)-[x:{rel}]->() RETURN count(x)")[0][0] == n_runs
        dated = sum(1 for r in amlb_rows() if r["utc"])
        assert store.rows("MATCH (:Run)-[x:RUN_ON_DATE]->(:Date) RETURN count(x)")[0][0] == dated
        day = store.rows("MATCH (d:Date) WHERE d.id = 20190419 RETURN d.year, d.quarter, d.month, d.weekday")
        assert day == [[2019, 2, 4, "Friday"]]
        families = store.rows(
            "MATCH (a:Algorithm)-[:BELONGS_TO_FAMILY]->(f:AlgorithmFamily) WHERE a.name = 'weka.ExtraTree' "
            "RETURN f.name, a.library"
        )
        assert families == [["decision_tree", "Weka"]]
        assert store.rows("MATCH (d:Dataset)-[:PART_OF_TASK]->(t:Task) RETURN count(*)")[0][0] == len(
            store.rows("MATCH (t:Task) RETURN t.id")
        )
        size = store.rows("MATCH (d:Dataset) RETURN size(d.embedding) LIMIT 1")[0][0]
        assert size == pack.manifest.embedder.dimension
    assert validate_pack(openml_pack).ok


def test_cli_builds_an_openml_pack(capsys: pytest.CaptureFixture[str], wikigr_home: Path) -> None:
    code, out, err = cli(
        capsys, "pack", "create", "amlb", "--openml-export", str(AMLB), "--licence", "MIT", "--json"
    )
    assert code == 0, err
    built = json.loads(out)
    assert built["stats"]["runs"] == len(amlb_rows()) and built["malformed_rows"] == 0
    assert Path(built["path"]) == wikigr_home / "packs" / "amlb"
    code, out, _ = cli(capsys, "pack", "info", "amlb", "--json")
    info = json.loads(out)
    assert code == 0 and info["source_kind"] == "openml" and info["openml"]["licence"] == "MIT"
    assert info["store_stats"]["runs"] == len(amlb_rows())
    code, out, _ = cli(capsys, "pack", "info", "amlb")
    assert code == 0 and "runs" in out
    code, out, _ = cli(capsys, "pack", "list", "--json")
    [row] = json.loads(out)["packs"]
    assert code == 0 and row["source_kind"] == "openml" and row["size"] == f"{len(amlb_rows()):,} runs"
    code, out, _ = cli(capsys, "pack", "validate", "amlb", "--json")
    assert code == 0 and json.loads(out)["ok"]


def test_cli_reports_malformed_rows_and_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path
) -> None:
    export = tmp_path / "runs.csv"
    lines = AMLB.read_text().splitlines()
    fields = lines[1].split(",")
    broken = ",".join(["999", *fields[1:7], "zero", *fields[8:]])
    export.write_text("\n".join([*lines, broken]) + "\n")
    code, out, err = cli(capsys, "pack", "create", "amlb", "--openml-export", str(export))
    assert code == 0, err
    assert "1 malformed row(s) not imported" in out and "runs.csv:50:" in out

    code, _, err = cli(capsys, "pack", "create", "x", "--openml-export", str(tmp_path / "nope.csv"))
    assert code == 2
    assert_one_error(err, "no such export file")
    code, _, err = cli(capsys, "pack", "create", "x", "--openml-export", str(AMLB), "--url", "https://a.org/")
    assert code == 2
    assert_one_error(err, "OpenML packs are built from")
    code, _, err = cli(capsys, "pack", "create", "x", "--url", "https://a.org/", "--measure", "auc")
    assert code == 2
    assert_one_error(err, "--measure and --licence are for OpenML packs")

    only_bad = tmp_path / "bad.csv"
    only_bad.write_text(lines[0] + "\n" + broken + "\n")
    code, _, err = cli(capsys, "pack", "create", "amlb", "--openml-export", str(only_bad))
    assert code == 1
    assert_one_error(err, "no run could be imported: 1 malformed rows (first: bad.csv:2:")
    # the failed rebuild left the previous pack as it was
    assert open_pack("amlb").manifest.stats.runs == len(amlb_rows())


class CountingEmbedder:
    name = "counting/test"
    dimension = 4
    backend = "test"

    def __init__(self) -> None:
        self.embedded: list[str] = []

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.embedded.extend(texts)
        return np.array([[len(t), 1.0, 0.0, i] for i, t in enumerate(texts)], dtype=np.float32)


def test_descriptions_embedded_once_are_reused(tmp_path: Path) -> None:
    from wikigr.embed_cache import EmbeddingCache
    from wikigr.embed_cache import embed_cached as _embed_texts

    embedder = CountingEmbedder()
    first = _embed_texts(embedder, ["a", "bb", "a"], EmbeddingCache(tmp_path, embedder))
    assert embedder.embedded == ["a", "bb"] and first.shape == (3, 4) and (first[0] == first[2]).all()
    again = _embed_texts(embedder, ["bb", "ccc", "a"], EmbeddingCache(tmp_path, embedder))
    assert embedder.embedded == ["a", "bb", "ccc"]  # only the new text was embedded
    assert (again[0] == first[1]).all() and (again[2] == first[0]).all()
    (tmp_path / "counting_test.keys.json").write_text("not json")  # a broken cache costs time only
    _embed_texts(embedder, ["a"], EmbeddingCache(tmp_path, embedder))
    assert embedder.embedded[-1] == "a"
