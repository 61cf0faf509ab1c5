"""A pack in shards: one logical pack whose documents live in N stores.

    wikigr pack create wiki --corpus big.jsonl --shards 8 [--ray]
    wikigr query wiki "..."          # one agent over the union of the shards' stores (wikigr.pack.union)

The pack's folder holds one manifest (``manifest.json``) that lists its shards — each a complete
pack folder under ``shards/`` (its own manifest, ``pack.db``, BM25 index, support files), so a
shard can be validated and even queried alone — with the sha256 of each shard's store, their
article and chunk counts, the statistics summed over the shards, and every source of the build.
``urls.txt``, ``skill.md``, ``kg_config.json`` and ``eval/`` are the logical pack's, at its top:
the shards answer with its ``kg_config.json``.

Documents that share rare names or link to each other go to the same shard (a streaming
partition of the graph of documents: wikigr.build.shards' ``assign_shards``); the shards hold
about as many chunks each. Everything that belongs to a document stays in its shard (sections,
chunks, their vectors).
The entity graph is the one store's: built once over all the pack's chunks (wikigr.build.write's
``corpus_graph``: the skeleton by PageRank over all the chunk vectors, names merged and
``SYNONYM`` edges made over the whole pack), then each shard stores its part
(``GraphTables.part``): its chunks' mentions and facts, the relations counted in its chunks (with
its chunks' counts, so the weights summed over the shards are the pack's), and the entities these
name (an entity mentioned in two shards is stored in both, with one id: its normalised name; the
summed statistics count it once per shard). A ``SYNONYM`` edge is stored once: in the first shard
that holds both names, else in the first shard holding its first name, the other name stored
there too as an entity no chunk of that shard mentions.

At query time the union of the shards' stores (wikigr.pack.union) answers as the pack's one
store: the entity graph put together from the shards is the one store's, so personalised
PageRank and the bridge stage walk across shard boundaries. What crosses them and is lost
(docs/scale.md, "What crosses shard boundaries"): ``LINKS_TO`` edges between articles of
different shards (a store holds only its own articles), the paths of the ``vector_cypher`` stage
(one walk per shard), and BM25's length normalisation (per shard).

This module reads a pack in shards (its layout, where a shard is, whether a folder is one);
writing and checking one is wikigr.build.shards'.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path, PurePosixPath

from wikigr.errors import InvalidPackError, UsageError
from wikigr.pack import files as layout
from wikigr.pack.manifest import GraphStats, Manifest, ShardRecord, load_manifest

SHARDS_DIR = "shards"
MAX_SHARDS = 1024


def shard_name(name: str, index: int) -> str:
    """The name in a shard's own manifest: ``NAME-sNN`` (a valid pack name, at most 64 characters)."""
    suffix = f"-s{index:02d}"
    return name[: 64 - len(suffix)].rstrip("-") + suffix


def check_count(count: int) -> int:
    if not 1 <= count <= MAX_SHARDS:
        raise UsageError(f"--shards must be from 1 to {MAX_SHARDS}, not {count}")
    return count


def shard_folder(root: Path, record: ShardRecord) -> Path:
    """The folder of a shard, checked: a relative path under ``shards/`` of the pack, no ``..``,
    no symbolic link (a pack from someone else is data)."""
    rel = PurePosixPath(record.path)
    if rel.is_absolute() or ".." in rel.parts or len(rel.parts) != 2 or rel.parts[0] != SHARDS_DIR:
        raise InvalidPackError(f"pack {root}: shard path {record.path!r} is not a folder under {SHARDS_DIR}/")
    folder = root / rel
    if folder.is_symlink() or (folder / layout.STORE_FILE).is_symlink():
        raise InvalidPackError(f"pack {root}: shard {record.path} is a symbolic link")
    if not folder.is_dir():
        raise InvalidPackError(f"pack {root}: shard {record.path} is missing")
    if not (folder / layout.MANIFEST_FILE).exists():  # a damaged pack, not a usage error
        raise InvalidPackError(f"pack {root}: shard {record.path} has no {layout.MANIFEST_FILE}")
    return folder


def sharded_owner(folder: Path) -> Path | None:
    """The pack in shards whose manifest lists ``folder`` as a shard, if any."""
    folder = folder.resolve()
    root = folder.parent.parent
    if folder.parent.name != SHARDS_DIR or not (root / layout.MANIFEST_FILE).is_file():
        return None
    try:
        shards = load_manifest(root / layout.MANIFEST_FILE).shards
    except InvalidPackError:
        return None
    return root if any((root / record.path).resolve() == folder for record in shards) else None


def refuse_shard(folder: Path, command: str) -> None:
    """Refuse to change ``folder`` in place when it is a shard of a pack in shards: the pack's
    manifest lists its store's checksum (and its entity graph is the whole pack's)."""
    owner = sharded_owner(folder)
    if owner is not None:
        raise UsageError(
            f"{folder} is a shard of the pack {owner}: {command} would change a store whose checksum "
            "that pack lists; rebuild the pack with `wikigr pack create` instead"
        )


def store_digest(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        while block := f.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def summed_stats(manifests: Sequence[Manifest]) -> GraphStats:
    """The statistics of a pack in shards: each count summed over its shards."""
    return GraphStats(
        **{f.name: sum(getattr(m.stats, f.name) for m in manifests) for f in fields(GraphStats)}
    )
