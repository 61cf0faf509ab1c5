"""Issue 35 item 7: ``~user`` of a user that does not exist, in every path the CLI takes. The
shell leaves ``~nobody/x`` as it is, and so does wikigr (``wikigr.home.expand_user``): the path
then simply does not exist (a one-line usage error, exit 2, naming it) or, where a path is made
(``--out``, ``--skills-dir``, ``$WIKIGR_HOME``), is a folder of that name here. Never
``Path.expanduser``'s RuntimeError as "internal error"."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.conftest import DOCS

NOBODY = "~nonexistent_user_xyz"
MISSING = f"{NOBODY}/x"


@pytest.mark.parametrize(
    "args",
    [
        ["query", MISSING, "How do I set a socket timeout?"],
        ["query", MISSING, "socket timeout", "--json", "--profile", "baseline"],
        ["cypher", MISSING, "MATCH (n) RETURN n LIMIT 1"],
        ["pack", "info", MISSING],
        ["pack", "validate", MISSING],
        ["pack", "graph", MISSING],
        ["pack", "update", MISSING],
        ["pack", "export", MISSING, "--out", "x.tar.gz"],
        ["eval", MISSING],
        ["eval", "run", MISSING],
        ["eval", "import", MISSING, "data.json", "--format", "musique"],
        ["eval", "generate", MISSING],
    ],
    ids=lambda args: "-".join(a for a in args[:2] if a != MISSING) + ("-json" if "--json" in args else ""),
)
def test_a_pack_path_of_no_user_is_a_pack_not_found(
    capsys: pytest.CaptureFixture[str], args: list[str]
) -> None:
    code, _, err = cli(capsys, *args)
    assert code == 2, err
    assert_one_error(err, f"no pack at {MISSING}")


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["pack", "install", MISSING], f"no such archive or pack folder: {MISSING}"),
        (["pack", "create", "x", "--url", MISSING], f"not a URL or an existing path: '{MISSING}'"),
        (["pack", "create", "x", "--urls", MISSING], f"no such file: {MISSING}"),
        (["pack", "create", "x", "--corpus", MISSING], f"no such corpus file: {MISSING}"),
        (["serve", "--token-file", MISSING], f"no token file {MISSING}"),
    ],
    ids=["install", "url", "urls", "corpus", "token-file"],
)
def test_a_source_path_of_no_user_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], args: list[str], expected: str
) -> None:
    code, _, err = cli(capsys, *args)
    assert code == 2, err
    assert_one_error(err, expected)


def test_eval_files_of_no_user_are_usage_errors(capsys: pytest.CaptureFixture[str], built_pack: Path) -> None:
    code, _, err = cli(capsys, "eval", str(built_pack), "--questions", MISSING)
    assert code == 2, err
    assert_one_error(err, f"no questions file: {MISSING}")
    code, _, err = cli(capsys, "eval", "import", str(built_pack), MISSING, "--format", "musique")
    assert code == 2, err
    assert_one_error(err, MISSING)


@pytest.mark.parametrize("prefix", ["st:", "onnx:"])
def test_an_embedder_folder_of_no_user_is_no_such_model_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, prefix: str
) -> None:
    """As a model folder given by an absolute path that is not there (exit 1, the embedder is
    unavailable), named as given."""
    code, _, err = cli(capsys, "pack", "create", "x", "--url", str(DOCS), "--embedder", prefix + MISSING)
    assert code == 1, err
    assert_one_error(err, f"no such model folder: {MISSING}")
    absent = f"{prefix}{tmp_path}/no"
    code, _, err = cli(capsys, "pack", "create", "x", "--url", str(DOCS), "--embedder", absent)
    assert code == 1, err
    assert_one_error(err, "no such model folder")


def test_export_to_a_folder_of_no_user_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    code, _, err = cli(capsys, "pack", "export", str(built_pack), "--out", f"{MISSING}.tar.gz")
    assert code == 2, err
    assert_one_error(err, f"no such folder: {tmp_path / NOBODY}")
    (tmp_path / NOBODY).mkdir()  # a folder of that name here: the archive is written in it
    code, _, err = cli(capsys, "pack", "export", str(built_pack), "--out", f"{MISSING}.tar.gz")
    assert code == 0, err
    assert (tmp_path / NOBODY / "x.tar.gz").is_file()


def test_a_skills_dir_of_no_user_is_a_folder_here(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    skills = f"{NOBODY}/skills"
    code, _, err = cli(capsys, "pack", "install", str(built_pack), "--skills-dir", skills)
    assert code == 0, err
    skill = tmp_path / skills / "fixture" / "SKILL.md"
    assert skill.is_file()
    code, _, err = cli(capsys, "pack", "remove", "fixture", "--skills-dir", skills)
    assert code == 0, err
    assert not skill.exists()


def test_a_wikigr_home_of_no_user_is_a_folder_here(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WIKIGR_HOME", f"{NOBODY}/home")
    code, out, err = cli(capsys, "pack", "list")
    assert code == 0, err
    shutil.copytree(DOCS, tmp_path / "docs")
    code, _, err = cli(capsys, "pack", "create", "tea", "--url", "docs", "--no-graph")
    assert code == 0, err
    assert (tmp_path / NOBODY / "home" / "packs" / "tea" / "manifest.json").is_file()
    code, out, err = cli(capsys, "pack", "list")
    assert code == 0 and "tea" in out, err
