"""One transaction for every write that replaces a pack folder: create, update, the OpenML build
and install.

    with pack_transaction(target) as txn:      # checks the target, locks, undoes a cut swap
        ...write the new pack in txn.partial...  # (``.NAME.partial`` beside the target)
        txn.commit()                            # keeps the user's files, swaps in with renames

The new pack is written in a hidden folder beside the target (``.NAME.partial``) and swapped in
only at the end, with two renames, so an interrupted write (Ctrl-C, a crash) leaves the previous
pack untouched; what the staging folder holds stays there for the next run to resume from. A
rebuild keeps what the user wrote in the pack it replaces (its ``kg_config.json``, questions and
evaluation results). ``commit(staged=FOLDER)`` swaps in a folder staged elsewhere instead (an
install's validated folder), as it is.

The two renames are one step for Ctrl-C: a SIGINT that arrives while they run waits for the
second (:func:`interrupts_held`), so an interruption leaves the previous pack or the new one, never
a pack folder moved aside.

One build of a pack runs at a time: the transaction holds an exclusive ``flock`` on
``.NAME.lock`` beside the target, and removes that file when it ends.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

from wikigr.errors import BuildError, UsageError
from wikigr.pack import pack as layout

#: What a rebuild keeps from the pack it replaces: what the user wrote there.
USER_FILES = (layout.CONFIG_FILE, layout.QUESTIONS_FILE, layout.RESULTS_DIR)

#: Whether the last pack write this process began is swapped in (see :func:`last_write_swapped`).
_last_write = {"swapped": False}


def last_write_swapped() -> bool:
    """True once the last pack write this process began is swapped in, until another begins. A
    Ctrl-C from then on (while the command reports what it did) is not the interruption of a write
    that happened: the CLI ends with 0, not "interrupted", as the pack did change. The flag is set
    while interrupts are held for the swap, so no moment is left where the pack is swapped in and
    a Ctrl-C would still be reported as having stopped the write."""
    return _last_write["swapped"]


def forget_last_write() -> None:
    """Start afresh (a new command in the same process): no write is swapped in yet."""
    _last_write["swapped"] = False


def lock_path(target: Path) -> Path:
    """The lock file of the pack folder ``target``: ``.NAME.lock`` beside it."""
    return target.parent / f".{target.name}.lock"


def partial_path(target: Path) -> Path:
    """Where a new pack for ``target`` is staged: ``.NAME.partial`` beside it."""
    return target.parent / f".{target.name}.partial"


def check_target(target: Path) -> None:
    """Refuse to replace ``target`` unless it is absent, an empty folder or a pack folder."""
    if target.exists() and not target.is_dir():
        raise UsageError(f"{target} exists and is not a folder")
    if target.exists() and any(target.iterdir()) and not (target / layout.MANIFEST_FILE).is_file():
        raise UsageError(f"{target} exists and is not a pack: refusing to replace it")


@contextlib.contextmanager
def pack_lock(target: Path) -> Iterator[None]:
    """Hold the exclusive lock of ``target`` (a :class:`BuildError` when another process holds it),
    and remove the lock file when done.

    The lock is an ``flock`` on ``.NAME.lock``. As the holder unlinks that file while it still
    holds it, a process may lock a file that is no longer there (opened just before the unlink):
    after locking, the open file is compared with the one at the path, and on a mismatch it is
    opened again. A lock whose holder was killed is released by the kernel: it does not block."""
    path = lock_path(target)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError as exc:
            os.close(fd)
            raise BuildError(f"another build of {target} is running") from exc
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # the file its last holder removed: lock the one at the path now
    try:
        yield
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)  # while still holding it: a waiter retries on the new file
        os.close(fd)


@contextlib.contextmanager
def interrupts_held(deliver: bool = True) -> Iterator[list[int]]:
    """Hold SIGINT off while the block runs (it records the signal instead), and yield the list of
    the signals that arrived. At the end, a held signal goes to the handler that was in place
    (Python's raises KeyboardInterrupt) when ``deliver``; without it, the signal is dropped: the
    work it would have interrupted is done (dpkg finishes its critical section likewise).

    Outside the main thread, or when SIGINT is ignored or not Python's to handle, this does
    nothing: there is nothing to hold."""
    got: list[int] = []
    if threading.current_thread() is not threading.main_thread():
        yield got
        return
    previous = signal.getsignal(signal.SIGINT)
    if not callable(previous):  # SIG_IGN, SIG_DFL or a handler not installed from Python
        yield got
        return

    def hold(signum: int, frame: object) -> None:
        got.append(signum)

    signal.signal(signal.SIGINT, hold)
    try:
        yield got
    finally:
        signal.signal(signal.SIGINT, previous)
    if got and deliver:
        previous(signal.SIGINT, None)


def recover(target: Path) -> None:
    """Undo a swap that was cut between its two renames."""
    old = target.parent / f".{target.name}.old"
    if old.exists() and not target.exists():
        os.rename(old, target)


def swap_in(staged: Path, target: Path) -> None:
    """Replace ``target`` by ``staged`` with renames; the old pack is removed only afterwards."""
    old = target.parent / f".{target.name}.old"
    if old.exists():
        shutil.rmtree(old)
    if target.exists():
        os.rename(target, old)
    os.rename(staged, target)
    if old.exists():
        shutil.rmtree(old)


def keep_user_files(target: Path, staged: Path) -> None:
    """A rebuild keeps what the user wrote in the previous pack: config, questions, eval results
    (copied over what ``staged`` holds; a symbolic link is not followed)."""
    if not (target / layout.MANIFEST_FILE).is_file():
        return
    for rel in USER_FILES:
        src, dst = target / rel, staged / rel
        if src.is_symlink() or not src.exists():
            continue
        dst.parent.mkdir(parents=True, exist_ok=True)
        if src.is_dir():
            shutil.copytree(src, dst, symlinks=False, dirs_exist_ok=True)
        else:
            shutil.copyfile(src, dst)


class PackTransaction:
    """The write of a new pack for ``target``, staged in ``partial``, under the pack's lock."""

    def __init__(self, target: Path) -> None:
        self.target = target
        self.partial = partial_path(target)
        self.committed = False
        self._scratch: list[Path] = []

    def scratch(self, name: str) -> Path:
        """The folder ``name`` inside the staging folder that lives only while staging (a build's
        resume cache): it stays for an interrupted write to resume from, and is not swapped in."""
        folder = self.partial / name
        self._scratch.append(folder)
        return folder

    def commit(self, staged: Path | None = None) -> None:
        """Swap the new pack in. By default the staging folder: the user's files of the pack it
        replaces are kept (:func:`keep_user_files`) and its scratch folders dropped first.
        ``staged``: a folder staged elsewhere (a validated install), swapped in as it is."""
        if staged is None:
            keep_user_files(self.target, self.partial)
            for folder in self._scratch:
                shutil.rmtree(folder, ignore_errors=True)
            staged = self.partial
        with interrupts_held():  # the two renames are one step: Ctrl-C waits for the second
            swap_in(staged, self.target)
            self.committed = True
            _last_write["swapped"] = True


@contextlib.contextmanager
def pack_transaction(target: Path, *, fresh: bool = False, check: bool = True) -> Iterator[PackTransaction]:
    """Write a new pack for the folder ``target``: check it (unless ``check`` is False: the caller
    checks it under the lock itself) — it must be absent, empty or a pack —, take its lock, undo a
    swap cut short, and give the transaction, whose staging folder is emptied first when ``fresh``
    (what an interrupted write left is otherwise kept: it is what a build resumes from). Nothing
    is swapped in unless :meth:`PackTransaction.commit` is called."""
    if check:
        check_target(target)
    target.parent.mkdir(parents=True, exist_ok=True)
    _last_write["swapped"] = False
    with pack_lock(target):
        recover(target)
        txn = PackTransaction(target)
        if fresh and txn.partial.exists():
            shutil.rmtree(txn.partial)
        yield txn
