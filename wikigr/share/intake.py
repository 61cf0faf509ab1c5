"""Taking in an untrusted pack: one path for archives and folders (:class:`Intake`).

A pack from someone else is data, never code:

- an archive is read as a stream, member by member, and each member is checked *before* anything
  of it is written: tar's ``data`` filter (:func:`tarfile.data_filter`) and stricter — a relative
  path without ``..`` inside one top folder, a regular file or a folder (no links of any kind, no
  device files, FIFOs or sparse files), no duplicate; the decompressed stream may not hold more
  than its members declare (plus 1 MiB of headers each);
- the manifest comes first and must load (a newer ``format_version``, a bad name, missing or
  unknown fields are refused); it lists a sha256 and a size for every file: a member it does not
  list, or whose declared size differs, is refused from its header, before its data is read; the
  declared total is capped (and must fit on the disk); a file whose bytes differ is refused as
  soon as it is written; a listed file missing at the end is refused;
- a folder goes through the same checks, file by file (no symbolic or hard links, no special
  files; checksums and sizes when its manifest lists them);
- nothing from the pack is ever run, and file modes and owners from the archive are ignored.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import os
import posixpath
import shutil
import stat
import tarfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from wikigr.errors import InvalidPackError, ShareError, one_line
from wikigr.pack import pack as layout
from wikigr.pack.manifest import MAX_MANIFEST_BYTES, Manifest, load_manifest
from wikigr.share.files import BLOCK, GIB, MIB, WAL_FILE, human, is_junk, pack_files


@dataclass(frozen=True)
class InstallLimits:
    """Caps on what an install accepts (archives, folders and downloads)."""

    max_members: int = 10_000
    max_member_bytes: int = 8 * GIB
    max_total_bytes: int = 16 * GIB
    max_download_bytes: int = 8 * GIB
    timeout: float = 600.0  # seconds for the whole download of a URL install (curl's --max-time)


def _safe_rel(name: str) -> str | None:
    """``name`` as a normalised relative POSIX path, or None when it could escape the target."""
    if not name or "\x00" in name or "\\" in name or name.startswith("/") or posixpath.isabs(name):
        return None
    if len(name) > 1 and name[1] == ":":  # a Windows drive
        return None
    parts = [p for p in name.split("/") if p not in ("", ".")]
    if not parts or any(p == ".." for p in parts):
        return None
    return "/".join(parts)


#: Bytes an archive may hold beyond the data its members declare, per member: its headers (a
#: PAX or long-name header is read into memory by tarfile) and the padding. More is refused.
HEADER_ALLOWANCE = 1 * MIB
_READ_AHEAD = 64 * 1024


class _Budget(io.RawIOBase):
    """A read-only stream that gives at most the bytes it is allowed (:meth:`allow`), so an
    archive never expands past what its members declare: a gzip bomb, an oversized header or
    data beyond a member's size stops at the first byte over the allowance."""

    def __init__(self, inner: IO[bytes], allowed: int, raw: IO[bytes]) -> None:
        self._inner = inner
        self._raw = raw  # the file under a decompressor, closed with it
        self._left = allowed

    def allow(self, n: int) -> None:
        self._left = n

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer)
        if self._left <= 0:
            if self._inner.read(1):
                raise ShareError(
                    "refusing the archive: it expands to more than its members declare "
                    f"(a header over {human(HEADER_ALLOWANCE)}, or data past a member's size)"
                )
            return 0
        data = self._inner.read(min(len(view), self._left))
        view[: len(data)] = data
        self._left -= len(data)
        return len(data)

    def close(self) -> None:
        self._inner.close()
        self._raw.close()
        super().close()


def _open_regular(path: Path) -> IO[bytes]:
    """``path`` opened for reading, refused unless it is a regular file: a FIFO, a device or a
    socket is never read (opening does not block: O_NONBLOCK)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as exc:
        raise ShareError(f"cannot read {path}: {exc.strerror or exc}") from exc
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise ShareError(f"refusing {path}: not a regular file (a FIFO, device or socket)")
    os.set_blocking(fd, True)
    return os.fdopen(fd, "rb")


def _open_archive(path: Path) -> tuple[_Budget, IO[bytes]]:
    """The archive's decompressed tar stream (gzip or plain tar): the budget that caps it, and
    the buffered stream to read."""
    raw = _open_regular(path)
    try:
        head = raw.read(512)
        raw.seek(0)
        if head[:2] == b"\x1f\x8b":
            inner: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb")  # type: ignore[assignment]
        elif len(head) == 512 and head[257:262] == b"ustar":
            inner = raw
        else:
            raise ShareError(f"refusing {path.name}: not a .tar.gz archive")
    except BaseException:
        raw.close()
        raise
    budget = _Budget(inner, HEADER_ALLOWANCE, raw)  # the first header; each member allows more
    return budget, io.BufferedReader(budget, buffer_size=_READ_AHEAD)


def _member_type(member: tarfile.TarInfo) -> str | None:
    """Why a member's type is refused, or None for a regular file or a folder."""
    if member.sparse is not None or any(key.startswith("GNU.sparse") for key in member.pax_headers):
        return "a sparse file"  # its data would expand past what the archive holds
    if member.type in (tarfile.REGTYPE, tarfile.AREGTYPE, tarfile.DIRTYPE):
        return None
    if member.issym():
        return f"a symbolic link (to {member.linkname!r})"
    if member.islnk():
        return f"a hard link (to {member.linkname!r})"
    if member.ischr() or member.isblk():
        return "a device file"
    if member.isfifo():
        return "a FIFO"
    if member.type == tarfile.GNUTYPE_SPARSE:
        return "a sparse file"
    return f"an unsupported member type ({member.type!r})"


class Intake:
    """Every file of an untrusted pack enters the staging folder here, from an archive or a
    folder alike, and is checked *before* any of its bytes are written:

    - the manifest comes first, and loads (name, format, fields); ``on_manifest`` may refuse it
      at once (a pack already installed, say);
    - a file the manifest does not list is refused; so is one whose size differs from the one the
      manifest declares (archives must declare sizes: an archive's files are checked against
      them from their headers, so nothing over the declared total is ever written);
    - the caps: files, each file, the declared and the written total, the free disk space;
    - each file's sha256 is checked against the manifest as soon as it is written.
    """

    def __init__(
        self,
        dest: Path,
        limits: InstallLimits,
        *,
        archive: bool,
        on_manifest: Callable[[Manifest], None],
    ) -> None:
        self.dest = dest
        self.limits = limits
        self.archive = archive
        self.on_manifest = on_manifest
        self.manifest: Manifest | None = None
        self.hashes: dict[str, str] = {}
        self._seen: set[str] = set()
        self._entries = 0
        self._total = 0

    @property
    def checked(self) -> bool:
        """Whether the files are checked against checksums (always for an archive)."""
        return self.archive or bool(self.manifest and self.manifest.files)

    def _refuse(self, what: str) -> ShareError:
        return ShareError(f"refusing the {'archive' if self.archive else 'pack'}: {what}")

    def folder(self, rel: str) -> None:
        self._count(rel)
        (self.dest / rel).mkdir(parents=True, exist_ok=True)

    def _count(self, rel: str) -> None:
        self._entries += 1
        if self._entries > self.limits.max_members:
            raise self._refuse(f"more than {self.limits.max_members} files and folders")
        if rel in self._seen:
            raise self._refuse(f"{rel} appears twice")
        self._seen.add(rel)

    def declared_size(self, rel: str, size: int) -> None:
        """Check a file from its declared size alone, before reading any of its data."""
        self._count(rel)
        if size > self.limits.max_member_bytes:
            cap = human(self.limits.max_member_bytes)
            raise self._refuse(f"{rel} is {human(size)}, over the cap of {cap}")
        manifest = self.manifest
        if manifest is None:
            if rel != layout.MANIFEST_FILE:
                raise self._refuse(
                    f"its first file is {rel}, not manifest.json (an archive begins with its "
                    "manifest, as `wikigr pack export` writes it)"
                )
            if size > MAX_MANIFEST_BYTES:
                raise self._refuse(f"manifest.json is {human(size)}, over {human(MAX_MANIFEST_BYTES)}")
        elif self.checked:
            if rel not in manifest.files:
                raise self._refuse(f"{rel} is present but not listed in the manifest")
            expected = manifest.sizes.get(rel)
            if expected is not None and size != expected:
                raise self._refuse(f"{rel} is {size:,} bytes but the manifest says {expected:,}")
        self._total += size
        if self._total > self.limits.max_total_bytes:
            raise self._refuse(f"its files add up to more than {human(self.limits.max_total_bytes)}")

    def write(self, rel: str, source: IO[bytes], size: int) -> None:
        """Write one file (its size already declared) and check it once written."""
        target = self.dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        written = 0
        # O_EXCL: a file is never written twice nor through anything already there.
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
        with os.fdopen(fd, "wb") as out:
            while block := source.read(min(BLOCK, size - written + 1)):
                written += len(block)
                if written > size:
                    raise self._refuse(f"{rel} is longer than its declared {size:,} bytes (did it change?)")
                digest.update(block)
                out.write(block)
        if written != size:
            raise self._refuse(f"{rel} is truncated")
        self.hashes[rel] = digest.hexdigest()
        if self.manifest is None:
            self._take_manifest(target)
        elif self.checked and self.manifest.files[rel].lower() != self.hashes[rel]:
            raise self._refuse(f"checksum mismatch for {rel}")

    def _take_manifest(self, path: Path) -> None:
        try:
            manifest = load_manifest(path)
        except InvalidPackError as exc:
            raise ShareError(f"refusing the pack: {exc.message}") from exc
        self.manifest = manifest
        if self.archive and not manifest.files:
            raise self._refuse("its manifest lists no file checksums (make it with `wikigr pack export`)")
        if self.checked:
            if self.archive and set(manifest.sizes) != set(manifest.files):
                raise self._refuse(
                    "its manifest does not list the size of every file (export it again with this wikigr)"
                )
            declared = sum(manifest.sizes.values())
            if declared > self.limits.max_total_bytes:
                raise self._refuse(
                    f"its manifest declares {human(declared)}, "
                    f"over the cap of {human(self.limits.max_total_bytes)}"
                )
            free = shutil.disk_usage(self.dest).free
            if declared > free:
                home = self.dest.parent.parent  # the packs home, where the staging folder is
                raise self._refuse(f"it needs {human(declared)}; the disk of {home} has {human(free)} free")
        self.on_manifest(manifest)

    def finish(self) -> Manifest:
        if self.manifest is None:
            raise ShareError("refusing the pack: it has no manifest.json")
        if self.checked:
            missing = sorted(set(self.manifest.files) - set(self.hashes))
            if missing:
                raise self._refuse(f"{missing[0]} is listed in the manifest but missing")
        return self.manifest


def extract_archive(path: Path, intake: Intake) -> None:
    """Check and extract every member of the archive into ``intake.dest``, which receives the
    content of the archive's single top folder. Each member passes tar's ``data`` filter
    (:func:`tarfile.data_filter`, what ``tar`` and Python 3.14 use by default for untrusted
    archives) and stricter checks before anything of it is written."""
    budget, stream = _open_archive(path)
    top: str | None = None
    try:
        with stream, tarfile.open(fileobj=stream, mode="r|") as tar:
            for member in tar:
                rel = _safe_rel(member.name)
                if rel is None:
                    raise ShareError(
                        f"refusing the archive: member {member.name!r} has an absolute path or '..'"
                    )
                why = _member_type(member)
                if why is not None:
                    raise ShareError(f"refusing the archive: member {member.name!r} is {why}")
                try:
                    tarfile.data_filter(member, str(intake.dest))
                except tarfile.FilterError as exc:
                    why = one_line(exc)
                    raise ShareError(f"refusing the archive: member {member.name!r}: {why}") from exc
                head, _, inner = rel.partition("/")
                if top is None:
                    top = head
                elif head != top:
                    raise ShareError(
                        f"refusing the archive: members {top!r} and {head!r} are not in one top folder"
                    )
                if inner and is_junk(inner):
                    raise ShareError(
                        f"refusing the archive: member {member.name!r} is a lock file, cache or "
                        "write-ahead log, which a pack never ships"
                    )
                if not inner:
                    if not member.isdir():
                        raise ShareError(f"refusing the archive: {member.name!r} is not a folder")
                    budget.allow(HEADER_ALLOWANCE)
                    continue
                if member.isdir():
                    intake.folder(inner)
                    budget.allow(HEADER_ALLOWANCE)
                    continue
                intake.declared_size(inner, member.size)  # before any of its data is read
                padded = -(-member.size // tarfile.BLOCKSIZE) * tarfile.BLOCKSIZE
                budget.allow(padded + HEADER_ALLOWANCE)
                source = tar.extractfile(member)
                if source is None:  # pragma: no cover - regular members always have data
                    raise ShareError(f"refusing the archive: member {member.name!r} has no data")
                intake.write(inner, source, member.size)
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
        if isinstance(exc, FileExistsError):
            raise ShareError(f"refusing the archive: a member would overwrite {exc.filename}") from exc
        raise ShareError(f"refusing {path.name}: not a readable .tar.gz archive ({one_line(exc)})") from exc
    if top is None:
        raise ShareError(f"refusing {path.name}: the archive is empty")


def copy_folder(src: Path, intake: Intake) -> None:
    """Copy a pack folder (untrusted) into ``intake.dest``, the manifest first."""
    if (src / WAL_FILE).is_file() and (src / WAL_FILE).stat().st_size > 0:
        raise ShareError(
            f"refusing {src}: its store has a pending write-ahead log ({WAL_FILE}); "
            "open it with wikigr once, or install an exported archive instead"
        )
    folders, files = pack_files(src)
    if layout.MANIFEST_FILE not in files:
        raise ShareError(f"refusing {src}: it has no manifest.json (not a pack)")
    files.remove(layout.MANIFEST_FILE)
    files.insert(0, layout.MANIFEST_FILE)  # the manifest first, as in an archive
    for rel in folders:
        intake.folder(rel)
    for rel in files:
        try:
            fd = os.open(src / rel, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as exc:
            raise ShareError(f"refusing {rel}: {exc.strerror or exc}") from exc
        with os.fdopen(fd, "rb") as f:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode):
                raise ShareError(f"refusing {rel}: not a regular file (device, FIFO or socket)")
            if info.st_nlink > 1:
                raise ShareError(
                    f"refusing {rel}: a hard link ({info.st_nlink} names for one file; a pack holds "
                    "only files of its own — copy it)"
                )
            os.set_blocking(fd, True)
            intake.declared_size(rel, info.st_size)
            intake.write(rel, f, info.st_size)
