"""Installing and removing packs. :func:`install_pack` takes a pack from an archive, a folder or
a URL through the untrusted intake (:mod:`wikigr.share.intake`) into a staging folder beside the
packs home (locked while in use; the stale ones of killed installs are removed by the next
install), validates the whole pack there with ``pack validate``'s checks (which read every value
of the store and answer a question with the agent's own code), and moves it into place by renames
only when every check passed: an installed pack is replaced only with ``force``, and only after
the new one has answered."""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from wikigr.errors import PackNotFoundError, ShareError, UsageError
from wikigr.home import expand_user
from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest, check_name
from wikigr.pack.transaction import pack_lock, pack_transaction
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.share.download import check_url, download
from wikigr.share.intake import InstallLimits, Intake, copy_folder, extract_archive
from wikigr.share.skills import register_pack_skill, unregister_pack_skill
from wikigr.validate import validate_pack


@dataclass
class InstallReport:
    path: Path
    name: str
    source: str
    kind: str  # "archive", "folder" or "url"
    files: int
    bytes: int  # total size of the pack's files
    replaced: bool
    checked: bool  # checksums were verified (always for archives; for folders when listed)
    skill: Path | None = None
    warnings: list[str] = field(default_factory=list)


@dataclass
class RemoveReport:
    name: str
    path: Path | None  # the pack folder removed, if there was one
    skill: Path | None  # the skill unregistered, if there was one
    warnings: list[str] = field(default_factory=list)


STAGING_PREFIX = ".install-"
STALE_LOCK_SECONDS = 3600.0


def clean_stale_staging(home: Path) -> list[Path]:
    """Remove the staging folders of installs that were killed (``.install-*`` whose lock no
    process holds), as pip and git clear their stale temporary folders; return what was removed.
    An install in progress holds its lock (``.install-*.lock``) and is left alone."""
    removed: list[Path] = []
    if not home.is_dir():
        return removed
    for entry in sorted(home.iterdir()):
        if not entry.name.startswith(STAGING_PREFIX) or entry.is_symlink():
            continue
        if entry.suffix == ".lock":
            # A lock without its folder: left by a cleanup cut short. Its folder never comes back.
            folder = entry.with_suffix("")
            with contextlib.suppress(OSError):
                if not folder.exists() and time.time() - entry.stat().st_mtime > STALE_LOCK_SECONDS:
                    entry.unlink()
            continue
        if not entry.is_dir():
            continue
        lock = entry.with_name(entry.name + ".lock")
        try:
            fd = os.open(lock, os.O_RDWR | os.O_NOFOLLOW)
        except FileNotFoundError:
            fd = -1  # the lock is always made before its folder: this folder is stale
        except OSError:
            continue
        try:
            if fd >= 0:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # an install is running
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
            if fd >= 0:
                with contextlib.suppress(OSError):
                    lock.unlink()
        finally:
            if fd >= 0:
                os.close(fd)
    return removed


@contextlib.contextmanager
def staging_folder(home: Path) -> Iterator[Path]:
    """A temporary folder beside the packs home, locked while in use and removed after; the
    stale ones of killed installs are removed first."""
    home.mkdir(parents=True, exist_ok=True)
    clean_stale_staging(home)
    token = uuid.uuid4().hex[:12]
    lock = home / f"{STAGING_PREFIX}{token}.lock"
    fd = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    folder = home / f"{STAGING_PREFIX}{token}"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        folder.mkdir(mode=0o700)  # after the lock is held: a cleaner never takes it for stale
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            lock.unlink()
        os.close(fd)


def install_pack(
    source: str | Path,
    *,
    force: bool = False,
    skills_dir: Path | None = None,
    register_skill: bool = True,
    limits: InstallLimits | None = None,
    on_progress: ProgressCallback | None = None,
) -> InstallReport:
    """Install a pack into the packs home from a ``.tar.gz`` archive, a pack folder, or an
    http(s) URL of an archive; register its skill in ``skills_dir`` (default ``~/.claude/skills``).

    The pack is unpacked into a staging folder and checked there — every file on its way in
    (:class:`Intake`), then the whole pack with ``pack validate``'s checks, which open it and
    answer a question with the agent's own code — and only then swapped in: an installed pack
    of the same name (``force``) stays in place until the new one has answered."""
    limits = limits or InstallLimits()
    progress = on_progress or no_progress
    text = str(source)
    url = check_url(text) if "://" in text else None
    path = expand_user(Path(text))
    if url is None:
        if not path.exists():
            raise PackNotFoundError(f"no such archive or pack folder: {path}")
        if not path.is_dir() and not path.is_file():
            raise ShareError(f"refusing {path}: not a regular file or a folder (a FIFO, device or socket)")
    home = layout.packs_home()

    def early_check(manifest: Manifest) -> None:
        """The manifest comes first: refuse before the rest is unpacked."""
        if not force and (home / manifest.name).exists():
            raise ShareError(
                f"pack {manifest.name} is already installed at {home / manifest.name}: "
                "use --force to replace it"
            )

    with staging_folder(home) as staging:
        unpacked = staging / "pack"
        unpacked.mkdir()
        if url is not None:
            kind = "url"
            archive = staging / "download.tar.gz"
            download(url, archive, limits, progress)
        else:
            kind = "folder" if path.is_dir() else "archive"
            archive = path
        intake = Intake(unpacked, limits, archive=kind != "folder", on_manifest=early_check)
        if kind == "folder":
            copy_folder(path.resolve(), intake)
        else:
            extract_archive(archive, intake)
        manifest = intake.finish()
        progress(ProgressEvent("verify", 0, 1))
        report = validate_pack(unpacked)  # opens the pack and answers a question, read-only
        if not report.ok:
            first = next(c for c in report.checks if not c.ok)
            raise ShareError(f"refusing the pack: invalid {first.name}: {first.detail}")
        progress(ProgressEvent("verify", 1, 1))
        target = home / manifest.name
        if kind == "folder" and path.resolve() == target.resolve():
            raise UsageError(f"{target} is already the installed pack {manifest.name}")
        with pack_transaction(target, check=False) as txn:  # checked below, under the lock
            replaced = target.exists()
            if replaced and not force:
                raise ShareError(
                    f"pack {manifest.name} is already installed at {target}: use --force to replace it"
                )
            if replaced and not target.is_dir():
                raise ShareError(f"{target} exists and is not a folder")
            if replaced and any(target.iterdir()) and not (target / layout.MANIFEST_FILE).is_file():
                raise ShareError(f"{target} exists and is not a pack: refusing to replace it")
            txn.commit(staged=unpacked)  # as validated: nothing of the replaced pack is kept
    installed = InstallReport(
        path=target,
        name=manifest.name,
        source=text,
        kind=kind,
        files=len(intake.hashes),
        bytes=sum((target / rel).stat().st_size for rel in intake.hashes),
        replaced=replaced,
        checked=intake.checked,
    )
    if register_skill:
        try:
            installed.skill = register_pack_skill(manifest.name, skills_dir)
        except ShareError as exc:
            installed.warnings.append(exc.message)
    return installed


def remove_pack(name: str, skills_dir: Path | None = None, keep_skill: bool = False) -> RemoveReport:
    """Remove the pack ``name`` from the packs home and unregister its skill."""
    try:
        check_name(name)
    except ValueError as exc:
        takes = "the name of an installed pack, as `wikigr pack list` shows"
        message = layout.path_for_name(name, "pack remove", takes) or f"{exc} (pack remove takes {takes})"
        raise UsageError(message) from exc
    target = layout.packs_home() / name
    removed: Path | None = None
    if target.is_symlink():
        raise ShareError(f"refusing to remove {target}: a symbolic link")
    if target.exists():
        if not target.is_dir() or (any(target.iterdir()) and not (target / layout.MANIFEST_FILE).is_file()):
            raise ShareError(f"refusing to remove {target}: not a pack")
        with pack_lock(target):  # not while a build or an install of it runs
            trash = target.parent / f".{target.name}.removing-{uuid.uuid4().hex[:8]}"
            os.rename(target, trash)  # atomic: the pack is gone, or still whole
            shutil.rmtree(trash, ignore_errors=True)
        removed = target
    skill: Path | None = None
    warnings: list[str] = []
    if not keep_skill:
        skill, warning = unregister_pack_skill(name, skills_dir)
        if warning:
            warnings.append(warning)
    if removed is None and skill is None:
        raise PackNotFoundError(f"unknown pack '{name}' (not in {layout.packs_home()}, no skill registered)")
    return RemoveReport(name=name, path=removed, skill=skill, warnings=warnings)
