"""The skill digest of a pack in shards (wikigr.pack.shards): its shards' digests merged."""

from __future__ import annotations

from pathlib import Path

from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest
from wikigr.pack.shards import shard_folder
from wikigr.pack.store import Store
from wikigr.skill import PackDigest, digest


def shards_digest(path: Path, manifest: Manifest) -> PackDigest:
    """What a skill says about a pack in shards: the shards' digests merged (titles taken in turn
    from each shard's most linked, counts summed)."""
    parts: list[PackDigest] = []
    for record in manifest.shards:
        with Store.open(shard_folder(path, record) / layout.STORE_FILE, read_only=True) as store:
            parts.append(digest(store))
    merged = PackDigest(articles=sum(p.articles for p in parts), chunks=sum(p.chunks for p in parts))
    for rank in range(max((len(p.titles) for p in parts), default=0)):
        for part in parts:
            if rank < len(part.titles) and part.titles[rank] not in merged.titles and len(merged.titles) < 40:
                merged.titles.append(part.titles[rank])
                merged.urls.append(part.urls[rank])
    counts: dict[str, int] = {}
    for part in parts:
        for attr in ("hosts", "categories"):
            for i, value in enumerate(getattr(part, attr)):
                counts[f"{attr}\t{value}"] = counts.get(f"{attr}\t{value}", 0) + len(getattr(part, attr)) - i
    for attr, cap in (("hosts", 3), ("categories", 8)):
        values = [k.split("\t", 1)[1] for k in counts if k.startswith(attr + "\t")]
        setattr(merged, attr, sorted(values, key=lambda v: -counts[f"{attr}\t{v}"])[:cap])
    for part in parts:
        merged.sections.extend(s for s in part.sections if s not in merged.sections)
    merged.sections = merged.sections[:12]
    return merged
