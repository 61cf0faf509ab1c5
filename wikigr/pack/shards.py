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
partition of the graph of documents: :func:`assign_shards`); the shards hold about as many chunks
each. Everything that belongs to a document stays in its shard (sections, chunks, their vectors).
The entity graph is the one store's: built once over all the pack's chunks (build.py's
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
"""

from __future__ import annotations

import hashlib
import math
import shutil
from collections import deque
from collections.abc import Sequence
from dataclasses import fields
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING

from wikigr.errors import InvalidPackError, UsageError
from wikigr.pack import pack as layout
from wikigr.pack.keyword import KEYWORD_DIR
from wikigr.pack.manifest import GraphStats, Manifest, ShardRecord, SourceRecord, load_manifest

if TYPE_CHECKING:
    from wikigr.build import BuildOptions, _Prepared
    from wikigr.embed import Embedder
    from wikigr.graph.build import GraphReport, GraphTables
    from wikigr.skill import PackDigest
    from wikigr.validate.checks import ValidationReport

SHARDS_DIR = "shards"
MAX_SHARDS = 1024
MAX_SHARED_DF = 50  # a name mentioned by more documents than this does not tie them to one shard
PASSES = 3  # of the streaming partition (chosen on MuSiQue's dev questions: bench/scale.py)


def shard_name(name: str, index: int) -> str:
    """The name in a shard's own manifest: ``NAME-sNN`` (a valid pack name, at most 64 characters)."""
    suffix = f"-s{index:02d}"
    return name[: 64 - len(suffix)].rstrip("-") + suffix


def _names(doc: _Prepared) -> set[str]:
    """The keys of the names a document's chunks mention (as the entity graph finds them: on the
    workers of a distributed build, else here), concepts left out."""
    from wikigr.graph.extract import CONCEPT, keyword_entities

    if doc.mentions is not None:
        return {row[2] for mentions in doc.mentions for row in mentions if row[1] != CONCEPT}
    return {m.key for c in doc.chunks for m in keyword_entities(doc.title, c["text"]) if m.type != CONCEPT}


def assign_shards(
    docs: Sequence[_Prepared], count: int, max_df: int = MAX_SHARED_DF, passes: int = PASSES
) -> list[int]:
    """The shard of each document: documents that share rare names (mentioned by 2 to ``max_df``
    documents) or link to each other go together, so that what a multi-hop question walks through
    stays in one store; a shard holds at most 5% (and one document) more than an equal share of
    the chunks.

    A streaming graph partition, restreamed (linear deterministic greedy: Stanton and Kliot, 2012;
    restreaming: Nishimura and Ugander, 2013): documents in breadth-first order over that graph,
    each to the shard holding most of its neighbours — a shared name weighs 1 / (the other
    documents that mention it), a link 1 — discounted by how full the shard is; a document with no
    neighbour placed goes to the emptiest shard. Each pass after the first counts the neighbours
    not yet placed where the previous pass put them."""
    from wikigr.build import _url_variants

    keys = [_names(doc) for doc in docs]
    postings: dict[str, list[int]] = {}
    for i, names in enumerate(keys):
        for key in names:
            postings.setdefault(key, []).append(i)
    weights: list[dict[int, float]] = [{} for _ in docs]
    for found in postings.values():
        if 2 <= len(found) <= max_df:
            for i in found:
                for j in found:
                    if i != j:
                        weights[i][j] = weights[i].get(j, 0.0) + 1.0 / (len(found) - 1)
    by_url: dict[str, int] = {}
    for i, doc in enumerate(docs):
        for url in _url_variants(doc.source) + _url_variants(doc.fetch.get("final_url") or doc.source):
            by_url.setdefault(url, i)
    for i, doc in enumerate(docs):
        for link in doc.links:
            target = next((by_url[v] for v in _url_variants(link) if v in by_url), None)
            if target is not None and target != i:
                weights[i][target] = weights[i].get(target, 0.0) + 1.0
                weights[target][i] = weights[target].get(i, 0.0) + 1.0
    order: list[int] = []  # breadth-first over the graph, component by component
    seen = [False] * len(docs)
    for start in range(len(docs)):
        if not seen[start]:
            seen[start] = True
            queue = deque([start])
            while queue:
                i = queue.popleft()
                order.append(i)
                for j in weights[i]:
                    if not seen[j]:
                        seen[j] = True
                        queue.append(j)
    sizes = [max(1, len(doc.chunks)) for doc in docs]
    capacity = math.ceil(1.05 * sum(sizes) / count) + max(sizes, default=1)  # 5% and a document
    shard: list[int | None] = [None] * len(docs)
    for _ in range(max(1, passes)):
        previous, shard, load = shard, [None] * len(docs), [0] * count
        for i in order:
            votes: dict[int, float] = {}
            for j, weight in weights[i].items():
                placed = shard[j] if shard[j] is not None else previous[j]
                if placed is not None:
                    votes[placed] = votes.get(placed, 0.0) + weight
            fits = [s for s in range(count) if load[s] + sizes[i] <= capacity] or list(range(count))
            best = max(fits, key=lambda s: (votes.get(s, 0.0) * (1 - load[s] / capacity), -load[s], -s))
            shard[i] = best
            load[best] += sizes[i]
    return [s if s is not None else 0 for s in shard]


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


def write_shards(
    folder: Path,
    name: str,
    docs: list[_Prepared],
    records: list[SourceRecord],
    embedder: Embedder,
    options: BuildOptions,
    description: str,
    count: int,
    graph_reports: list[GraphReport] | None = None,
    aliases: dict[str, str] | None = None,
) -> Manifest:
    """Write ``docs`` as ``count`` shards into ``folder/shards/`` (each with build.py's
    ``write_documents_pack`` and support files) and return the manifest of the logical pack (not
    yet written: the caller writes it and the pack's own support files).

    The entity graph is built once, over all the documents (build.py's ``corpus_graph``, as for
    one store: its report is appended to ``graph_reports``), and each shard stores its part
    (``GraphTables.part``)."""
    from wikigr.build import corpus_graph
    from wikigr.pack.manifest import FORMAT_VERSION, now_iso

    check_count(count)
    if count > len(docs):
        raise UsageError(f"--shards {count}: more shards than documents ({len(docs)})")
    groups: list[list[_Prepared]] = [[] for _ in range(count)]
    for doc, index in zip(docs, assign_shards(docs, count), strict=True):
        groups[index].append(doc)
    if any(not group for group in groups):  # a tiny corpus: deal the documents out instead
        groups = [docs[i::count] for i in range(count)]
    graphs: list[GraphTables | None] = [None] * count
    if options.graph:
        shard_of = {id(doc): index for index, group in enumerate(groups) for doc in group}
        parts = [shard_of[id(doc)] for doc in docs]
        graph, report = corpus_graph(docs, embedder.dimension, options, embedder, aliases, parts)
        if graph_reports is not None:
            graph_reports.append(report)
        graphs = [graph.part(index) for index in range(count)]
    for stale in [folder / SHARDS_DIR, folder / KEYWORD_DIR, *folder.glob(layout.STORE_FILE + "*")]:
        if stale.is_dir():  # what an interrupted build left (in shards, or in one store)
            shutil.rmtree(stale)
        elif stale.exists():
            stale.unlink()
    by_source = {r.url: r for r in records}
    width = max(2, len(str(count - 1)))
    jobs = [
        (
            f"{SHARDS_DIR}/{index:0{width}d}",
            index,
            group,
            [by_source[doc.source] for doc in group],
            graphs[index],
        )
        for index, group in enumerate(groups)
    ]
    if options.ray is not None and options.llm is None:  # each shard's store written by a Ray task
        from wikigr.distributed import write_shards_on_ray

        manifests = write_shards_on_ray(folder, name, count, jobs, options, aliases)
    else:
        manifests = [
            write_shard(folder / rel, name, i, count, group, sources, embedder, options, aliases, graph)
            for rel, i, group, sources, graph in jobs
        ]
    shard_records = [
        ShardRecord(
            path=rel,
            name=manifest.name,
            sha256=store_digest(folder / rel / layout.STORE_FILE),
            articles=manifest.stats.articles,
            chunks=manifest.stats.chunks,
        )
        for (rel, *_), manifest in zip(jobs, manifests, strict=True)
    ]
    first = manifests[0]
    return Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        description=description,
        created_at=now_iso(),
        wikigr_version=first.wikigr_version,
        source_kind="documents",
        embedder=first.embedder,
        schema_version=first.schema_version,
        vector_index="hnsw" if all(m.vector_index == "hnsw" for m in manifests) else "exact",
        stats=summed_stats(manifests),
        sources=records,
        shards=shard_records,
    )


def write_shard(
    shard: Path,
    name: str,
    index: int,
    count: int,
    docs: list[_Prepared],
    sources: list[SourceRecord],
    embedder: Embedder,
    options: BuildOptions,
    aliases: dict[str, str] | None = None,
    graph: GraphTables | None = None,
) -> Manifest:
    """Write one shard of the pack ``name`` — a complete pack folder — at ``shard``, with
    ``graph``: its part of the pack's entity graph (see :func:`write_shards`)."""
    from wikigr.build import _write_support_files, write_documents_pack

    shard.mkdir(parents=True)
    manifest = write_documents_pack(
        shard,
        shard_name(name, index),
        docs,
        sources,
        embedder,
        options,
        f"shard {index + 1} of {count} of the pack {name}",
        None,
        aliases,
        graph,
    )
    manifest.dump(shard / layout.MANIFEST_FILE)
    _write_support_files(shard, manifest, "".join(f"{s.url}\n" for s in sources))
    return manifest


def validate_shards(path: Path, manifest: Manifest, report: ValidationReport) -> None:
    """The checks of a pack in shards: each shard is where the manifest says, its store has the
    recorded sha256, it is a valid pack itself (``validate_pack``), it has the pack's embedder, and
    the pack's statistics are the sum of the shards'."""
    from wikigr.pack.manifest import load_manifest
    from wikigr.validate.checks import validate_pack

    if (path / layout.STORE_FILE).exists():
        report.add("shards", False, f"a pack in shards has no {layout.STORE_FILE} of its own")
    manifests: list[Manifest] = []
    for record in manifest.shards:
        where = f"shard {record.path}"
        try:
            folder = shard_folder(path, record)
        except InvalidPackError as exc:
            report.add(where, False, exc.message)
            continue
        inner = validate_pack(folder)
        if not inner.ok:
            first = next(c for c in inner.checks if not c.ok)
            report.add(where, False, f"{first.name}: {first.detail}")
            continue
        store = folder / layout.STORE_FILE
        if store_digest(store) != record.sha256.lower():
            report.add(where, False, f"checksum mismatch for {record.path}/{layout.STORE_FILE}")
            continue
        shard = load_manifest(folder / layout.MANIFEST_FILE)
        if shard.name != record.name or shard.embedder != manifest.embedder:
            report.add(where, False, "its name or embedder differs from the pack's manifest")
            continue
        if (shard.stats.articles, shard.stats.chunks) != (record.articles, record.chunks):
            report.add(where, False, "its articles or chunks differ from the pack's manifest")
            continue
        manifests.append(shard)
        report.add(where, True, f"{shard.stats.chunks} chunks, sha256 ok")
    if len(manifests) == len(manifest.shards):
        total, recorded = vars(summed_stats(manifests)), vars(manifest.stats)
        wrong = [k for k in recorded if total[k] != recorded[k]]
        detail = ", ".join(f"{k}: manifest {recorded[k]}, shards {total[k]}" for k in wrong)
        report.add("stats", not wrong, detail or f"summed over {len(manifests)} shards")


def digest(path: Path, manifest: Manifest) -> PackDigest:
    """What a skill says about a pack in shards: the shards' digests merged (titles taken in turn
    from each shard's most linked, counts summed)."""
    from wikigr.pack.store import Store
    from wikigr.skill import PackDigest
    from wikigr.skill import digest as store_digest_of

    parts: list[PackDigest] = []
    for record in manifest.shards:
        with Store.open(shard_folder(path, record) / layout.STORE_FILE, read_only=True) as store:
            parts.append(store_digest_of(store))
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
