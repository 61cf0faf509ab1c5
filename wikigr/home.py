"""The wikigr home (``$WIKIGR_HOME``, default ``~/.wikigr``) and its ``cache/`` folder.

The cache holds what only saves time: a process that cannot read or write it does the work again,
and each kind keeps its most recent entries only (:func:`prune`).
:func:`file_digest` is the sha256 of a file, remembered (``cache/digests.json``) against the file's
identity and modification times, so that caches keyed by a file's digest cost a ``stat`` per
process, not a read of the whole file.

This module imports nothing heavy: the query path uses it before anything is loaded.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from wikigr.pack.reader import PackStore

DIGESTS_FILE = "digests.json"
MAX_DIGESTS = 256
_HEX64 = re.compile(r"[0-9a-f]{64}")


def wikigr_home() -> Path:
    return expand_user(Path(os.environ.get("WIKIGR_HOME") or Path.home() / ".wikigr"))


def expand_user(path: Path) -> Path:
    """``path`` with a leading ``~`` or ``~user`` expanded; kept as it is when there is no such
    user (or no home), as the shell leaves ``~nobody/x`` alone: the path then simply does not
    exist, instead of ``Path.expanduser`` raising RuntimeError."""
    try:
        return path.expanduser()
    except RuntimeError:
        return path


def cache_dir(*parts: str) -> Path:
    """``$WIKIGR_HOME/cache/PARTS...`` (not created)."""
    return wikigr_home().joinpath("cache", *parts)


def _identity(stat: os.stat_result) -> list[int]:
    return [stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns]


def file_identity(path: Path) -> list[int] | None:
    """What tells one state of a file from another without reading it: device, inode, size,
    modification and change times (ns); None when there is no file."""
    try:
        return _identity(Path(path).stat())
    except FileNotFoundError:
        return None


def files_state(path: Path) -> tuple[list[int] | None, list[int] | None]:
    """The state of a store's file and of its write-ahead log (:func:`file_identity`): a read-only
    store whose files no longer have the state they had when it was opened (a ``pack update``
    swapped the folder, a build wrote in place) is not what its path now holds."""
    return file_identity(path), file_identity(path.with_name(path.name + ".wal"))


def _read_digests(path: Path) -> dict[str, dict[str, object]]:
    try:
        with path.open("rb") as f:
            raw = f.read(1024 * 1024 + 1)
        data = json.loads(raw) if len(raw) <= 1024 * 1024 else None
    except (OSError, ValueError, RecursionError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)}


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``path`` through a temporary sibling and a rename (readers never see half a file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def file_digest(path: Path) -> str:
    """The sha256 (hex) of the file at ``path``.

    Remembered in ``cache/digests.json`` with the file's device, inode, size and modification and
    change times (ns): while those are the same the file is not read again. Any write to the file
    changes its times, and a file put in its place has another inode."""
    path = Path(path).resolve()
    identity = _identity(path.stat())
    memo_file = cache_dir(DIGESTS_FILE)
    memo = _read_digests(memo_file)
    entry = memo.get(str(path))
    if entry is not None and entry.get("stat") == identity:
        known = entry.get("sha256")
        if isinstance(known, str) and _HEX64.fullmatch(known):
            return known
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    value = digest.hexdigest()
    if _identity(path.stat()) == identity:  # not changed while it was read: remember it
        memo.pop(str(path), None)
        memo[str(path)] = {"stat": identity, "sha256": value}
        while len(memo) > MAX_DIGESTS:
            memo.pop(next(iter(memo)))
        with contextlib.suppress(OSError):  # a cache that cannot be written only costs time
            write_atomic(memo_file, json.dumps(memo, indent=0).encode("utf-8"))
    return value


@contextlib.contextmanager
def new_cache_folder(folder: Path, keep: int, done: str = "record.json") -> Iterator[Path]:
    """A temporary folder beside ``folder`` to fill; when the block ends without an error it
    becomes ``folder`` (a rename: another process sees all of it or nothing; a complete copy, one
    with ``done``, that another process put there first is as good) and the cache folder keeps its
    ``keep`` newest entries (:func:`prune`). The temporary folder is removed in any case."""
    import shutil
    import threading

    tmp = folder.with_name(f".{folder.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        tmp.mkdir(parents=True)
        yield tmp
        try:
            os.rename(tmp, folder)
        except OSError:
            if not (folder / done).is_file():
                raise
        prune(folder.parent, keep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prune(folder: Path, keep: int) -> None:
    """Remove all but the ``keep`` most recently written entries (files or folders) of a cache
    folder, leaving temporary ones (``.NAME``) alone; what cannot be removed stays."""
    import shutil

    try:
        entries = [p for p in folder.iterdir() if not p.name.startswith(".")]
        entries.sort(key=lambda p: p.stat().st_mtime_ns, reverse=True)
    except OSError:
        return
    for stale in entries[keep:]:
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def store_cache_file(store: PackStore, kind: str, *parts: str) -> Path | None:
    """Where something computed from ``store`` is cached: ``cache/KIND/KEY.npz``, KEY the sha256 of
    the store's files (its database file and write-ahead log, if any; a pack in shards: every
    shard's) and ``parts`` (the format, the code, the options). None when the files cannot be read,
    or are no longer in the state they were in when the store was opened (the value is then
    computed from the open store, as it answers from that state)."""
    members = store.members
    if any(m.opened_state is None or files_state(m.path) != m.opened_state for m in members):
        return None
    key_parts = [kind, *parts]
    try:
        for member in members:
            for path in (member.path, member.path.with_name(member.path.name + ".wal")):
                if path.exists():
                    key_parts.append(f"{path.name} {file_digest(path)}")
    except OSError:
        return None
    if any(files_state(m.path) != m.opened_state for m in members):  # changed while it was read
        return None
    key = hashlib.sha256("\n".join(key_parts).encode("utf-8")).hexdigest()
    return cache_dir(kind, f"{key[:40]}.npz")
