"""The files of a pack as sharing sees them: which are junk (never exported nor copied), the
listing of a pack's files and folders, their checksums, and sizes as people read them."""

from __future__ import annotations

import hashlib
import os
import stat
from pathlib import Path

from wikigr.errors import ShareError
from wikigr.pack import pack as layout

GIB = 1024**3
MIB = 1024**2
BLOCK = 1024 * 1024  # bytes read or written at a time

#: Names never exported nor copied: lock files, caches, temporary files.
JUNK_NAMES = frozenset({".DS_Store", "Thumbs.db", "__pycache__", "cache", ".lock"})
JUNK_SUFFIXES = (".lock", ".tmp", ".pyc", ".swp", "~")
WAL_FILE = layout.STORE_FILE + ".wal"


def is_junk(rel: str) -> bool:
    parts = rel.split("/")
    return any(p in JUNK_NAMES or p.endswith(JUNK_SUFFIXES) for p in parts) or parts[-1] == WAL_FILE


def sha256_file(path: Path) -> tuple[str, int]:
    """The sha256 and the size of the file at ``path``."""
    digest = hashlib.sha256()
    size = 0
    with path.open("rb") as f:
        while block := f.read(BLOCK):
            digest.update(block)
            size += len(block)
    return digest.hexdigest(), size


def human(n: int) -> str:
    for unit, size in (("TiB", 1024 * GIB), ("GiB", GIB), ("MiB", MIB), ("KiB", 1024)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{n} bytes"


def pack_files(root: Path) -> tuple[list[str], list[str]]:
    """(folders, files) of a pack as relative POSIX paths, sorted, junk left out.

    Refuses symbolic links and anything that is not a regular file or a folder."""
    folders: list[str] = []
    files: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        base = Path(dirpath)
        for name in sorted(dirnames + filenames):
            path = base / name
            rel = path.relative_to(root).as_posix()
            if is_junk(rel):
                if name in dirnames:
                    dirnames.remove(name)
                continue
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise ShareError(f"refusing {rel}: a symbolic link (a pack holds only files and folders)")
            if stat.S_ISDIR(mode):
                folders.append(rel)
            elif stat.S_ISREG(mode):
                files.append(rel)
            else:
                raise ShareError(f"refusing {rel}: not a regular file (device, FIFO or socket)")
    return sorted(folders), sorted(files)
