"""A pack on disk: where its files are, how a name resolves, and opening it safely."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from wikigr.errors import InvalidPackError, NotAPackError, PackNotFoundError, UsageError, shown
from wikigr.home import expand_user, wikigr_home

# The file names, re-exported: they are read as layout.STORE_FILE and so on.
from wikigr.pack.files import CONFIG_FILE as CONFIG_FILE
from wikigr.pack.files import CRAWL_FILE as CRAWL_FILE
from wikigr.pack.files import MANIFEST_FILE as MANIFEST_FILE
from wikigr.pack.files import QUESTIONS_FILE as QUESTIONS_FILE
from wikigr.pack.files import RESULTS_DIR as RESULTS_DIR
from wikigr.pack.files import SKILL_FILE as SKILL_FILE
from wikigr.pack.files import STORE_FILE as STORE_FILE
from wikigr.pack.files import URLS_FILE as URLS_FILE
from wikigr.pack.kind import pack_kind
from wikigr.pack.manifest import RESERVED_NAMES, Manifest, check_name, load_manifest, read_json
from wikigr.pack.shards import shard_folder
from wikigr.pack.store import Store

MAX_CONFIG_BYTES = 1024 * 1024


def packs_home() -> Path:
    return wikigr_home() / "packs"


def looks_like_path(ref: str) -> bool:
    return os.sep in ref or "/" in ref or ref.startswith(".") or ref.startswith("~")


def path_for_name(ref: str, command: str, takes: str) -> str | None:
    """When ``ref``, given to ``command`` as a pack's name, is a path (``packs/pydocs``, or a file
    or folder here): a one-line message saying what ``command`` takes, suggesting the path's last
    part if that is a valid name (not a name made of the whole path, ``packs-pydocs``). Else None."""
    try:
        is_path = looks_like_path(ref) or expand_user(Path(ref)).exists()
    except (OSError, ValueError):
        is_path = False
    if not is_path or ref in RESERVED_NAMES:  # `all` is refused as reserved, a folder of it or not
        return None
    last = Path(ref).name
    try:
        hint = f"; try {check_name(last)!r}"
    except ValueError:
        hint = ""
    return f"{ref!r} is a path, not a pack name: {command} takes {takes}{hint}"


def check_new_name(name: str) -> str:
    """``name`` for a pack ``pack create`` writes, checked: a one-line usage error for a path
    (:func:`path_for_name`) or another invalid name."""
    try:
        return check_name(name)
    except ValueError as exc:
        takes = "the new pack's name (and --out the folder to write it to)"
        raise UsageError(path_for_name(name, "pack create", takes) or str(exc)) from exc


def is_folder(path: Path) -> bool:
    """Whether ``path`` is a folder; False for what no folder can be (a name too long for the file
    system, one holding a NUL byte)."""
    try:
        return path.is_dir()
    except (OSError, ValueError):
        return False


def resolve_pack_path(ref: str) -> Path:
    """A pack reference is a path to a pack folder or the name of a pack in the packs home. What
    is not a pack at all (nothing there, a file, a folder without manifest.json) is a usage error
    (:class:`PackNotFoundError`, :class:`NotAPackError`); whether the pack is sound is checked
    when it is opened."""
    if not ref.strip():
        raise PackNotFoundError("no pack given")
    try:
        candidate = expand_user(Path(ref))
        if looks_like_path(ref) or candidate.is_dir():
            if not candidate.exists():
                raise PackNotFoundError(f"no pack at {shown(candidate, 200)}")
            if not candidate.is_dir():
                raise NotAPackError(f"not a pack: {shown(candidate, 200)} is not a folder")
            found = candidate.resolve()
        else:
            named = packs_home() / ref
            if not named.is_dir():
                raise PackNotFoundError(
                    f"unknown pack '{shown(ref, 200)}' (not a folder here, nor in {packs_home()})"
                )
            found = named.resolve()
        if not (found / MANIFEST_FILE).exists():
            raise NotAPackError(f"not a pack: {shown(found, 200)} has no manifest.json")
    except (OSError, ValueError) as exc:  # a name too long for the file system, a NUL byte
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise PackNotFoundError(f"no pack at {shown(ref, 200)} ({reason.lower()})") from exc
    return found


@dataclass
class Pack:
    """An opened pack: its folder and validated manifest. The store is opened on demand."""

    path: Path
    manifest: Manifest

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def sharded(self) -> bool:
        """Whether the pack is in shards: several stores, each a pack folder inside this one."""
        return bool(self.manifest.shards)

    def shards(self) -> list[Pack]:
        """The shards of a pack in shards, opened (their manifests checked); [self] for a pack in
        one store."""
        if not self.sharded:
            return [self]
        return [open_pack(shard_folder(self.path, record)) for record in self.manifest.shards]

    @property
    def store_path(self) -> Path:
        return self.path / STORE_FILE

    def open_store(self, buffer_pool_size: int = 0) -> Store:
        """Open the store read-only (a pack from someone else is data; it is never written here)."""
        if self.sharded:
            first = self.manifest.shards[0].path
            raise InvalidPackError(
                f"pack {self.name} is in {len(self.manifest.shards)} shards, not one store: ask it with "
                f"`wikigr query` (or wikigr.KnowledgeGraphAgent), or name one shard ({self.path / first})"
            )
        return Store.open(
            self.store_path, read_only=True, kind=self.manifest.source_kind, buffer_pool_size=buffer_pool_size
        )

    def config(self) -> dict[str, Any]:
        """``kg_config.json`` as a dict ({} when absent)."""
        return read_config(self.path)


def read_config(folder: Path) -> dict[str, Any]:
    """The ``kg_config.json`` of the pack folder ``folder`` as a dict ({} when absent); its
    content is checked by :func:`wikigr.retrieval.profiles.load_pack_config`."""
    path = folder / CONFIG_FILE
    if not path.is_file():
        return {}
    data = read_json(path, MAX_CONFIG_BYTES, str(path))
    if not isinstance(data, dict):
        raise InvalidPackError(f"corrupt {path}: not a JSON object")
    return data


def open_pack(ref: str | Path) -> Pack:
    """Resolve ``ref`` (path or name) and validate the manifest; the store is not opened yet."""
    path = resolve_pack_path(str(ref))
    manifest = load_manifest(path / MANIFEST_FILE)
    if not manifest.shards and not (path / STORE_FILE).is_file():
        raise InvalidPackError(f"pack {path} has no {STORE_FILE}")
    return Pack(path=path, manifest=manifest)


def list_packs(home: Path | None = None) -> list[Pack | tuple[Path, str]]:
    """Every folder in the packs home: an opened Pack, or (path, error) for a broken one."""
    root = home or packs_home()
    found: list[Pack | tuple[Path, str]] = []
    if not root.is_dir():
        return found
    for child in sorted(root.iterdir()):
        if not child.is_dir() or child.name.startswith("."):
            continue
        try:
            found.append(open_pack(child))
        except InvalidPackError as exc:
            found.append((child, str(exc)))
    return found


def pack_rows(home: Path | None = None) -> list[dict[str, Any]]:
    """One summary row per folder of the packs home (what `pack list` and the MCP server show)."""
    rows: list[dict[str, Any]] = []
    for item in list_packs(home):
        if isinstance(item, tuple):
            rows.append({"name": item[0].name, "path": str(item[0]), "ok": False, "error": item[1]})
        else:
            rows.append(pack_row(item))
    return rows


def pack_row(pack: Pack) -> dict[str, Any]:
    """A pack's summary row (see :func:`pack_rows`)."""
    m = pack.manifest
    return {
        "name": m.name,
        "path": str(pack.path),
        "ok": True,
        "source_kind": m.source_kind,
        "description": m.description,
        "articles": m.stats.articles,
        "chunks": m.stats.chunks,
        "runs": m.stats.runs,
        "size": pack_kind(m.source_kind).size(m),
        "created_at": m.created_at,
    }
