"""One description of a pack: what ``wikigr pack info`` (text and ``--json``), ``wikigr serve``
(``GET /api/v1/packs/{pack}``) and the MCP server (the ``pack_info`` tool) show.

:func:`pack_info` is the pack's manifest (without its per-source list), the statistics of its
store, the vector search path, a summary of its sources and what it covers (the most linked article
titles, the categories). A pack in shards is described as one pack: its statistics are the sums
of its shards' (an entity mentioned in two shards is counted in each), its titles and categories
the shards' merged (wikigr.pack.shards), and the manifest lists the shards. :func:`agent_pack_info`
adds what an open agent answers with (its profile, stages, Claude, the entity graph).

A pack of passages is also described by its languages (:func:`language_summary`: the documents per
language its manifest records; a pack built before they were recorded is English) and how each
language's words are analysed (:func:`analyzers`: the keyword index's stemmer, the entity graph's
extractor).

This sits above wikigr/pack (it reads the digest a skill is written from: wikigr.skill).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from wikigr import lang
from wikigr.errors import InvalidPackError
from wikigr.graph.extract import extractor_for
from wikigr.pack.definitions import Definitions
from wikigr.pack.kind import pack_kind
from wikigr.pack.lexicon import Lexicon
from wikigr.pack.manifest import Manifest
from wikigr.pack.pack import Pack
from wikigr.pack.reader import PackStore
from wikigr.skill import PackDigest, digest, shards_digest

if TYPE_CHECKING:
    from wikigr.agent import KnowledgeGraphAgent


def pack_info(pack: Pack, store: PackStore, max_failed: int | None = None) -> dict[str, Any]:
    """The description of ``pack`` read from ``store``, its store opened for questions (see the
    module's docstring). ``max_failed``: at most this many failed sources listed (None: all)."""
    manifest = pack.manifest
    covered = _digest(pack, store)
    failed = [{"url": s.url, "status": s.status} for s in manifest.sources if s.status != "ok"]
    return {
        "path": str(pack.path),
        **{k: v for k, v in manifest.to_dict().items() if k != "sources"},
        "store_stats": store.stats(),
        "vector_search": store.vector_path,
        "sources": {
            "total": len(manifest.sources),
            "ok": sum(1 for s in manifest.sources if s.status == "ok"),
            "failed": failed if max_failed is None else failed[:max_failed],
        },
        "titles": covered.titles,
        "categories": covered.categories,
        **_languages(manifest),
        **_vector_folders(pack),
    }


NOT_RECORDED = "English (not recorded)"
"""The languages of a pack built before they were recorded."""


def language_summary(languages: Mapping[str, int]) -> str:
    """``{"ru": 5, "en": 2}`` → ``"Russian (5), English (2)"``; :data:`NOT_RECORDED` when empty."""
    if not languages:
        return NOT_RECORDED
    return lang.summarize({"undetermined" if c == lang.UNKNOWN else c: n for c, n in languages.items()})


def keyword_analyzer(code: str) -> str:
    """How the keyword index reads a language's words: ``Snowball russian``, or ``unstemmed``."""
    stemmer = lang.stemmer_name(code)
    return f"Snowball {stemmer}" if stemmer else "unstemmed"


def analyzers(manifest: Manifest) -> list[dict[str, Any]]:
    """Per language of the pack (most documents first), how its words are analysed: the keyword
    index's analyzer and the entity extractor (None: no offline model, the graph skips them)."""
    return [
        {
            "language": code,
            "name": "undetermined" if code == lang.UNKNOWN else lang.name(code),
            "documents": manifest.languages.get(code),
            "keyword": keyword_analyzer(code),
            "entities": extractor_for(code),
        }
        for code in manifest.language_codes()
    ]


def _languages(manifest: Manifest) -> dict[str, Any]:
    """What :func:`pack_info` says of a pack's languages (nothing for a kind without passages)."""
    if not pack_kind(manifest.source_kind).passages:
        return {}
    return {
        "languages": dict(manifest.languages),
        "language_summary": language_summary(manifest.languages),
        "analyzers": analyzers(manifest),
    }


def _vector_folders(pack: Pack) -> dict[str, Any]:
    """How many words the pack's lexicon holds for questions in other languages, and how many APIs
    its definitions hold for how-to questions (a pack in shards: its shards' together); nothing for
    a folder the pack does not have, its one-line damage for a damaged one."""
    dimension = pack.manifest.embedder.dimension
    found: dict[str, Any] = {}
    for key, load, folders in (
        ("lexicon", Lexicon.load, [pack.path]),  # a pack in shards has none: its questions do not read one
        ("definitions", Definitions.load, [shard.path for shard in pack.shards()]),
    ):
        try:
            parts = [load(folder, dimension) for folder in folders]
        except InvalidPackError as exc:
            found[key] = exc.message
            continue
        if any(part is not None for part in parts):
            found[key] = sum(len(part.vectors) for part in parts if part is not None)
    return found


def agent_pack_info(agent: KnowledgeGraphAgent, max_failed: int | None = None) -> dict[str, Any]:
    """:func:`pack_info` of the pack ``agent`` has open, with what the agent answers with: its
    ``profile``, ``stages``, whether ``claude`` writes the answers, and whether the pack has an
    ``entity_graph``."""
    data = pack_info(agent.pack, agent.context.store, max_failed)
    data.update(
        {
            "profile": agent.profile,
            "stages": agent.stage_names,
            "claude": agent.llm is not None,
            "entity_graph": agent.context.has_entity_graph,
        }
    )
    return data


def _digest(pack: Pack, store: PackStore) -> PackDigest:
    """What the pack covers: its one store's digest, or its shards' merged."""
    if pack.sharded:  # each shard's store opened again to read it, its digest merged
        return shards_digest(pack.path, pack.manifest)
    return digest(store.one_store())
