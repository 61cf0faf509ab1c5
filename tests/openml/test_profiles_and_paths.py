"""An OpenML pack under `eval --all-profiles` and `--trace`, and `~user` paths given to its build
and to a set of packs (issue 35)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.openml.conftest import AMLB
from wikigr.packset import pack_refs

QUESTION = "Which algorithm family has the highest median accuracy on classification tasks?"
NO_USER = "~wikigr-no-such-user-35"


@pytest.fixture
def pack(openml_pack: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "sample"
    shutil.copytree(openml_pack, copy)
    (copy / "eval").mkdir(exist_ok=True)
    (copy / "eval" / "questions.jsonl").write_text(
        json.dumps({"id": "q1", "question": QUESTION, "ground_truth": "automl"}) + "\n"
    )
    return copy


def test_all_profiles_evaluates_those_that_apply_and_names_the_others(
    capsys: pytest.CaptureFixture[str], pack: Path
) -> None:
    code, out, err = cli(capsys, "eval", str(pack), "--all-profiles", "--json")
    assert code == 0, err
    assert [r["profile"] for r in json.loads(out)] == ["auto", "routed"]
    skipped = "skipped profiles baseline, balanced, max, graph: no stage of them applies to openml packs"
    assert skipped in err and "Traceback" not in err
    code, out, err = cli(capsys, "eval", str(pack), "--all-profiles")
    assert code == 0, err
    assert skipped in out
    scores = json.loads((pack / "manifest.json").read_text())["eval_scores"]
    assert sorted(s["profile"] for s in scores) == ["auto", "routed"]
    # one profile asked by name that does not apply is still refused, with one line
    code, _, err = cli(capsys, "eval", str(pack), "--profile", "baseline")
    assert code == 2
    assert_one_error(err, "no stage of profile baseline applies to openml packs")


def test_the_trace_of_auto_on_an_openml_pack_shows_the_stage_its_router_ran(
    capsys: pytest.CaptureFixture[str], pack: Path
) -> None:
    code, out, err = cli(capsys, "query", str(pack), QUESTION, "--json")
    assert code == 0, err
    [router] = json.loads(out)["trace"]["stages"]
    [attempt] = router["detail"]["attempts"]
    assert attempt["strategy"] == "openml"
    [stage] = attempt["stages"]
    assert stage["stage"] == "openml_tools" and stage["ms"] > 0 and stage["out"] >= 1
    assert stage["detail"]["tools"] == ["aggregate_measures"]
    code, _, err = cli(capsys, "query", str(pack), QUESTION, "--trace")
    assert code == 0
    assert "└ openml_tools (openml)" in err


def test_an_unknown_user_in_a_path_is_a_plain_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = cli(capsys, "pack", "create", "x", "--openml-export", f"{NO_USER}/runs.csv")
    assert code == 2
    assert_one_error(err, f"no such export file: {NO_USER}/runs.csv")
    code, _, err = cli(
        capsys, "pack", "create", "x", "--openml-export", str(AMLB), "--openml-qualities", f"{NO_USER}/q.arff"
    )
    assert code == 2
    assert_one_error(err, f"no such export file: {NO_USER}/q.arff")
    # a target under an unknown user's home is a folder of that name here, as the shell makes it
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "pack", "create", "x", "--openml-export", str(AMLB), "--out", f"{NO_USER}/x")
    assert code == 0, err
    assert (tmp_path / NO_USER / "x" / "manifest.json").is_file()
    assert pack_refs(f"{NO_USER}/a,{NO_USER}/b") == [f"{NO_USER}/a", f"{NO_USER}/b"]
