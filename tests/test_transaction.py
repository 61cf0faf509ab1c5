"""One transaction for every write of a pack folder (wikigr.pack.transaction): the lock, its file
removed when a build ends, a lock left by a killed process, a swap cut short, the user's files."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from tests.conftest import DOCS
from tests.openml.conftest import AMLB
from wikigr.build import build_pack, update_pack
from wikigr.errors import BuildError, UsageError
from wikigr.openml.build import OpenMLBuildOptions, build_openml_pack
from wikigr.pack.transaction import lock_path, pack_lock, pack_transaction

HOLDER = """
import sys, time
from pathlib import Path
from wikigr.pack.transaction import pack_lock
with pack_lock(Path(sys.argv[1])):
    print("locked", flush=True)
    time.sleep(600)
"""


def _locks(home: Path) -> list[str]:
    return sorted(p.name for p in home.iterdir() if p.name.endswith(".lock"))


def test_create_update_and_openml_build_leave_no_lock_file(tmp_path: Path) -> None:
    home = tmp_path / "packs"
    build_pack("docs", [DOCS.as_uri()], out=home / "docs")
    assert _locks(home) == []
    update_pack(home / "docs")
    assert _locks(home) == []
    build_openml_pack(
        "runs", exports=[AMLB], out=home / "runs", options=OpenMLBuildOptions(embedding_cache=False)
    )
    assert _locks(home) == []
    assert sorted(p.name for p in home.iterdir()) == ["docs", "runs"]  # no .partial, no .old either


def test_a_second_build_of_one_pack_is_refused_while_the_first_runs(tmp_path: Path) -> None:
    target = tmp_path / "docs"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target)], stdout=subprocess.PIPE, text=True
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
            with pytest.raises(BuildError, match=f"another build of {target} is running"):
                build_pack("docs", [DOCS.as_uri()], out=target)
            assert not target.exists()
        finally:
            holder.kill()
    # In this process too: the lock is the file's, not the process's.
    with pack_lock(target), pytest.raises(BuildError, match="another build of"), pack_lock(target):
        pass
    assert not lock_path(target).exists()


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path: Path) -> None:
    target = tmp_path / "docs"
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(target)], stdout=subprocess.PIPE, text=True
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait()
    assert lock_path(target).exists()  # killed: it could not remove its lock file
    report = build_pack("docs", [DOCS.as_uri()], out=target)
    assert report.manifest.stats.articles == 4
    assert not lock_path(target).exists()


def test_the_lock_excludes_while_its_file_is_removed_and_made_again(tmp_path: Path) -> None:
    """Many takers, each removing the lock file as it leaves: never two inside at once (a taker
    that locked a file already removed takes the new one instead)."""
    target = tmp_path / "docs"
    inside: list[int] = []
    overlaps: list[int] = []
    done = [0]
    guard = threading.Lock()

    def taker() -> None:
        while done[0] < 400:
            try:
                with pack_lock(target):
                    with guard:
                        inside.append(1)
                        if len(inside) > 1:
                            overlaps.append(len(inside))
                    done[0] += 1
                    with guard:
                        inside.pop()
            except BuildError:
                continue

    threads = [threading.Thread(target=taker) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert overlaps == [] and done[0] >= 400
    assert not lock_path(target).exists()


def test_a_swap_cut_short_is_undone_and_the_user_files_are_kept(tmp_path: Path) -> None:
    target = tmp_path / "docs"
    build_pack("docs", [DOCS.as_uri()], out=target)
    (target / "kg_config.json").write_text(json.dumps({"profile": "baseline"}) + "\n")
    (target / "eval" / "results" / "run.json").write_text("{}\n")
    old = tmp_path / ".docs.old"
    os.rename(target, old)  # a swap cut between its two renames
    with pack_transaction(target) as txn:
        assert (target / "manifest.json").is_file() and not old.exists()
        txn.partial.mkdir()
        (txn.partial / "manifest.json").write_text((target / "manifest.json").read_text())
        (txn.partial / "kg_config.json").write_text('{"profile": "auto"}\n')
        scratch = txn.scratch("cache")
        scratch.mkdir()
        txn.commit()
    assert json.loads((target / "kg_config.json").read_text()) == {"profile": "baseline"}
    assert (target / "eval" / "results" / "run.json").is_file()
    assert not (target / "cache").exists() and not txn.partial.exists()
    assert not (target / "pack.db").exists()  # the staged folder, as it was (no pack.db staged)


def test_an_uncommitted_transaction_leaves_the_pack_and_its_staging(tmp_path: Path) -> None:
    target = tmp_path / "docs"
    build_pack("docs", [DOCS.as_uri()], out=target)
    before = (target / "manifest.json").read_text()
    with pytest.raises(RuntimeError), pack_transaction(target) as txn:
        txn.partial.mkdir()
        (txn.partial / "half.txt").write_text("interrupted\n")
        raise RuntimeError("interrupted")
    assert (target / "manifest.json").read_text() == before
    assert (txn.partial / "half.txt").is_file()  # kept: what the next build resumes from
    with pack_transaction(target, fresh=True) as again:
        assert not again.partial.exists()
    assert not lock_path(target).exists()


def test_a_folder_that_is_not_a_pack_is_not_replaced(tmp_path: Path) -> None:
    target = tmp_path / "mine"
    target.mkdir()
    (target / "notes.txt").write_text("mine\n")
    with (
        pytest.raises(UsageError, match="exists and is not a pack: refusing to replace it"),
        pack_transaction(target),
    ):
        pass
    assert (target / "notes.txt").is_file() and not lock_path(target).exists()
