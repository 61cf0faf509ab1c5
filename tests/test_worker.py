"""The query worker (wikigr/worker.py): a second ``wikigr query`` is answered by the worker the
first one started, with the same answer; errors keep their line and exit code; the worker sees a
pack removed; it is its user's alone; it exits when idle."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikigr import worker

QUESTION = "What is the capital of France?"
WAIT = 600.0  # seconds: a worker loads the model on a busy machine


@pytest.fixture
def with_worker(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The worker on (conftest turns it off), and stopped at the end, whatever happened."""
    monkeypatch.delenv("WIKIGR_WORKER")
    monkeypatch.setenv("WIKIGR_WORKER_IDLE", "300")
    path = worker.socket_path()
    assert path is not None
    try:
        yield path
    finally:
        worker.stop(path)


def query(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "wikigr", "query", *args],
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


def status(path: Path) -> dict[str, int] | None:
    reply = worker.ask({"op": "status"}, path)
    return None if reply is None else reply["result"]


def wait_for_worker(path: Path) -> dict[str, int]:
    deadline = time.monotonic() + WAIT
    while (found := status(path)) is None:
        assert time.monotonic() < deadline, "no worker started"
        time.sleep(0.1)
    return found


def test_the_second_query_is_answered_by_the_worker_the_first_started(
    built_pack: Path, tmp_path: Path, with_worker: Path
) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    assert status(with_worker) is None
    first = query(str(pack), QUESTION, "--json")
    assert first.returncode == 0, first.stderr
    assert wait_for_worker(with_worker)["served"] == 0  # the first answered itself
    run = with_worker.parent
    assert stat.S_IMODE(run.stat().st_mode) == 0o700
    assert stat.S_IMODE(with_worker.stat().st_mode) == 0o600
    second = query(str(pack), QUESTION, "--json")
    assert second.returncode == 0, second.stderr
    assert status(with_worker)["served"] == 1  # type: ignore[index]
    a, b = json.loads(first.stdout), json.loads(second.stdout)
    assert (b["answer"], b["sources"], b["profile"]) == (a["answer"], a["sources"], a["profile"])
    text = query(str(pack), QUESTION)  # the text output, from the worker's answer
    assert text.returncode == 0 and "Sources" in text.stdout and "[1] " in text.stdout

    relative = subprocess.run(  # a pack named relative to the asker's folder
        [sys.executable, "-m", "wikigr", "query", "fixture", QUESTION, "--json"],
        capture_output=True,
        text=True,
        timeout=WAIT,
        cwd=tmp_path,
    )
    assert relative.returncode == 0, relative.stderr
    assert json.loads(relative.stdout)["answer"] == a["answer"]

    config = pack / "kg_config.json"  # the worker reads the pack's settings for each question
    config.write_text(json.dumps({**json.loads(config.read_text()), "profile": "baseline"}))
    changed = query(str(pack), QUESTION, "--json")
    assert changed.returncode == 0, changed.stderr
    assert (a["profile"], json.loads(changed.stdout)["profile"]) == ("auto", "baseline")

    shutil.rmtree(pack)  # and looks at the disk for each question
    gone = query(str(pack), QUESTION, "--json")
    assert status(with_worker)["served"] == 5  # type: ignore[index]
    assert gone.returncode == 2
    assert gone.stderr.startswith("Error: ") and len(gone.stderr.strip().splitlines()) == 1


def test_errors_through_the_worker_are_the_commands_own(
    built_pack: Path, tmp_path: Path, with_worker: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    worker.start(with_worker)
    wait_for_worker(with_worker)
    through = query(str(tmp_path / "no-such-pack"), QUESTION)
    assert status(with_worker)["served"] == 1  # type: ignore[index]
    monkeypatch.setenv("WIKIGR_WORKER", "off")
    alone = query(str(tmp_path / "no-such-pack"), QUESTION)
    assert (through.returncode, through.stderr, through.stdout) == (
        alone.returncode,
        alone.stderr,
        alone.stdout,
    )
    assert through.returncode == 2


def test_no_worker_with_claude_or_when_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    assert not worker.enabled()  # conftest: WIKIGR_WORKER=off
    monkeypatch.delenv("WIKIGR_WORKER")
    assert worker.enabled()
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    assert not worker.enabled()  # the key stays in the asking process
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    before = worker.socket_path()
    monkeypatch.setenv("WIKIGR_PROFILE_X", "1")  # another setting, another worker
    assert worker.socket_path() != before


def test_an_idle_worker_exits(with_worker: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WIKIGR_WORKER_IDLE", "1")
    path = worker.socket_path()  # the idle time is not part of the key
    assert path == with_worker
    worker.start(path)
    wait_for_worker(path)
    deadline = time.monotonic() + WAIT
    while path.exists():
        assert time.monotonic() < deadline, "the idle worker did not exit"
        time.sleep(0.2)
    assert status(path) is None
    assert os.listdir(path.parent)  # its lock and log stay; the socket is gone
