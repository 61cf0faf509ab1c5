"""``wikigr pack export``: a pack written to a ``.tar.gz`` archive whose manifest lists the sha256
and the size of every file, as :func:`wikigr.share.install_pack` checks them."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import io
import json
import os
import tarfile
import time
import uuid
from dataclasses import dataclass, replace
from pathlib import Path
from typing import IO

from wikigr.errors import ShareError, UsageError
from wikigr.home import expand_user
from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest
from wikigr.pack.store import Store
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.share.files import WAL_FILE, pack_files, sha256_file
from wikigr.skill import skill_text


@dataclass
class ExportReport:
    path: Path
    name: str
    files: int
    bytes: int  # size of the archive
    checkpointed: bool  # a pending write-ahead log was folded into the store first


def checkpoint_store(folder: Path) -> bool:
    """Fold a pending write-ahead log (``pack.db.wal``) into the store; True if there was one."""
    wal = folder / WAL_FILE
    if not wal.exists():
        return False
    Store.open(folder / layout.STORE_FILE, read_only=False).close()
    if wal.exists() and wal.stat().st_size > 0:
        raise ShareError(f"{folder / layout.STORE_FILE} still has a pending write-ahead log: is it in use?")
    return True


def export_pack(ref: str | Path, out: Path, on_progress: ProgressCallback | None = None) -> ExportReport:
    """Write the pack ``ref`` (name or path) to the ``.tar.gz`` archive ``out``.

    The archive holds one folder named after the pack; its ``manifest.json`` lists the sha256 of
    every other file (``files``). The archive is written beside ``out`` and renamed into place."""
    progress = on_progress or no_progress
    pack = layout.open_pack(ref)
    out = expand_user(out).absolute()
    if out.is_dir():
        raise UsageError(f"{out} is a folder: give the archive's file name (e.g. {pack.name}.tar.gz)")
    if not out.parent.is_dir():
        raise UsageError(f"no such folder: {out.parent}")
    if out.resolve().is_relative_to(pack.path):
        raise UsageError("refusing to write the archive inside the pack it exports")
    checkpointed = any([checkpoint_store(shard.path) for shard in pack.shards()])
    folders, files = pack_files(pack.path)
    files = [f for f in files if f != layout.MANIFEST_FILE]
    # The archive's skill names the pack by name: that is how it is queried once installed.
    skill = skill_text(pack.path, pack.manifest).encode("utf-8")
    hashes: dict[str, str] = {}
    sizes: dict[str, int] = {}
    progress(ProgressEvent("checksum", 0, len(files)))
    for i, rel in enumerate(files, 1):
        if rel == layout.SKILL_FILE:
            hashes[rel], sizes[rel] = hashlib.sha256(skill).hexdigest(), len(skill)
        else:
            hashes[rel], sizes[rel] = sha256_file(pack.path / rel)
        progress(ProgressEvent("checksum", i, len(files), rel))
    if layout.SKILL_FILE not in hashes:
        files.append(layout.SKILL_FILE)
        hashes[layout.SKILL_FILE], sizes[layout.SKILL_FILE] = hashlib.sha256(skill).hexdigest(), len(skill)
    manifest = replace(pack.manifest, files=dict(sorted(hashes.items())), sizes=dict(sorted(sizes.items())))
    manifest_bytes = _manifest_bytes(manifest)

    top = pack.name
    now = int(time.time())
    tmp = out.with_name(f".{out.name}.{uuid.uuid4().hex[:8]}.tmp")
    try:
        with (
            open(tmp, "wb") as raw,
            gzip.GzipFile(fileobj=raw, mode="wb", mtime=now) as gz,
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):

            def add(rel: str, data: IO[bytes] | None, size: int, folder: bool = False) -> None:
                info = tarfile.TarInfo(f"{top}/{rel}" if rel else top)
                info.type = tarfile.DIRTYPE if folder else tarfile.REGTYPE
                info.mode = 0o755 if folder else 0o644
                info.size = 0 if folder else size
                info.mtime = now
                info.uid = info.gid = 0
                info.uname = info.gname = ""
                tar.addfile(info, data)

            add("", None, 0, folder=True)
            add(layout.MANIFEST_FILE, io.BytesIO(manifest_bytes), len(manifest_bytes))
            for rel in folders:
                add(rel, None, 0, folder=True)
            progress(ProgressEvent("archive", 0, len(files)))
            for i, rel in enumerate(sorted(files), 1):
                if rel == layout.SKILL_FILE:
                    add(rel, io.BytesIO(skill), len(skill))
                else:
                    path = pack.path / rel
                    with path.open("rb") as f:
                        size = os.fstat(f.fileno()).st_size
                        add(rel, f, size)
                progress(ProgressEvent("archive", i, len(files), rel))
        # A file that changed while it was archived would fail its checksum at install: check now.
        for rel in files:
            if rel != layout.SKILL_FILE and sha256_file(pack.path / rel) != (hashes[rel], sizes[rel]):
                raise ShareError(f"{rel} changed during the export: try again")
        os.replace(tmp, out)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    return ExportReport(
        path=out, name=pack.name, files=len(files) + 1, bytes=out.stat().st_size, checkpointed=checkpointed
    )


def _manifest_bytes(manifest: Manifest) -> bytes:
    return (json.dumps(manifest.to_dict(), indent=2) + "\n").encode("utf-8")
