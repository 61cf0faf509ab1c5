"""``manifest.json``: what a pack is, how it was built, and from what. See docs/pack-format.md."""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from wikigr import schema
from wikigr.errors import InvalidPackError, shown
from wikigr.pack.kind import kind_names, pack_kind

FORMAT_VERSION = 1
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
MAX_NAME = 64
#: The one name rule, for every way a name comes in (``pack create``, a manifest being installed
#: or opened, ``pack remove``): the Agent Skills rule for skill names (Claude Code's), since an
#: installed pack's folder, its skill folder and its skill's ``name`` are all this name —
#: lowercase letters and digits in words joined by single hyphens, at most 64 characters.
NAME_RE = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
RESERVED_NAMES = frozenset({"all"})  # `wikigr query all` names every installed pack

#: How the description a build writes for a pack given none begins (build._describe):
#: "12 documents from docs.python.org: ...", "3 passages from the corpus c.json: ...".
AUTO_DESCRIPTION = re.compile(r"^\d+ (?:documents|passages) from ")


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def suggest_name(name: str) -> str | None:
    """A valid name close to ``name`` (``my_pack.v2`` -> ``my-pack-v2``), or None."""
    words = re.findall(r"[a-z0-9]+", name.lower())
    suggestion = "-".join(words)[:MAX_NAME].strip("-")
    return suggestion if suggestion and suggestion != name else None


def check_name(name: str) -> str:
    """``name`` if it follows the name rule, else a ValueError of one line suggesting one that does."""
    if name in RESERVED_NAMES:
        raise ValueError(f"the pack name {name!r} is reserved: `wikigr query all` asks every installed pack")
    if isinstance(name, str) and len(name) <= MAX_NAME and NAME_RE.fullmatch(name):
        return name
    suggestion = suggest_name(name) if isinstance(name, str) else None
    hint = f"; try {suggestion!r}" if suggestion else ""
    raise ValueError(
        f"invalid pack name {shown(repr(name))}: a pack's name is also its skill's, so it follows Claude "
        f"Code's rule: lowercase letters, digits and single hyphens (none first or last), at most "
        f"{MAX_NAME} characters{hint}"
    )


def read_json(path: Path, max_bytes: int, label: str) -> Any:
    """An untrusted JSON file; every failure is an :class:`InvalidPackError` of one line naming
    ``label``: too large, not UTF-8, not JSON, or nested too deeply for the parser."""
    try:
        if path.stat().st_size > max_bytes:
            raise InvalidPackError(f"{label} is too large (over {max_bytes:,} bytes)")
        return schema.parse_json(schema.decode_utf8(path.read_bytes()))
    except schema.JSONError as exc:
        raise InvalidPackError(f"corrupt {label}: {exc}") from exc
    except OSError as exc:
        raise InvalidPackError(f"cannot read {label}: {exc.strerror or exc}") from exc


@dataclass
class EmbedderRecord:
    name: str
    dimension: int
    backend: str
    digest: str = ""  # sha256 of the weights (wikigr/embed.py); "" in packs built before it was recorded

    def __post_init__(self) -> None:
        if self.dimension <= 0:
            raise ValueError("embedder.dimension must be positive")


@dataclass
class GraphStats:
    articles: int
    sections: int
    chunks: int
    links: int
    categories: int = 0
    entities: int = 0
    facts: int = 0
    relations: int = 0
    # OpenML packs (docs/openml.md): the Run facts and the dimension rows
    runs: int = 0
    algorithms: int = 0
    families: int = 0
    datasets: int = 0
    tasks: int = 0
    dates: int = 0

    def __post_init__(self) -> None:
        for name, value in vars(self).items():
            if value < 0:
                raise ValueError(f"stats.{name} must not be negative")


@dataclass
class SourceRecord:
    url: str
    status: str  # "ok", "duplicate of URL", or the error text
    final_url: str | None = None
    sha256: str | None = None
    fetched_at: str | None = None
    content_type: str | None = None
    bytes: int | None = None
    chunks: int = 0


@dataclass
class EvalScores:
    """The latest evaluation of one profile (``wikigr eval`` replaces it when it evaluates that
    profile again; the other profiles' entries stay)."""

    date: str
    profile: str
    questions: int
    results_file: str
    metrics: dict[str, float] = field(default_factory=dict)


@dataclass
class OpenMLRecord:
    """How an OpenML pack was built: from export files or the REST API, and what was refused."""

    origin: Literal["export", "api"]
    measure: str = "predictive_accuracy"
    api_url: str | None = None
    selection: str = ""  # the --study / --tasks / --max-datasets selection, for an API build
    files: list[str] = field(default_factory=list)
    rows: int = 0
    malformed_rows: int = 0
    malformed_examples: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    licence: str = ""


@dataclass
class ShardRecord:
    """One store of a pack in shards (wikigr.pack.shards): a complete pack folder inside it."""

    path: str  # relative POSIX path of the shard's folder, e.g. "shards/00"
    name: str  # the name in the shard's own manifest
    sha256: str  # of the shard's store (pack.db)
    articles: int = 0
    chunks: int = 0


@dataclass
class Manifest:
    format_version: int
    name: str
    created_at: str
    wikigr_version: str
    source_kind: str  # the pack's kind: a registered kind's name (wikigr.pack.kind)
    embedder: EmbedderRecord
    schema_version: int
    stats: GraphStats
    version: str = "1.0.0"
    description: str = ""
    vector_index: Literal["exact", "hnsw"] = "exact"
    sources: list[SourceRecord] = field(default_factory=list)
    # The latest evaluation of each profile evaluated, one entry per profile, by profile name.
    eval_scores: list[EvalScores] | None = None
    # Relative path -> sha256 of every other file of the pack; written by `pack export`, checked by
    # `pack install`. Empty for a pack as built.
    files: dict[str, str] = field(default_factory=dict)
    # Relative path -> size in bytes of the same files (written with ``files``): an install refuses
    # an archive member whose declared size differs before reading its data.
    sizes: dict[str, int] = field(default_factory=dict)
    openml: OpenMLRecord | None = None
    # A pack in shards: its stores, each in a pack folder of its own (empty: the pack's pack.db).
    shards: list[ShardRecord] = field(default_factory=list)
    # A pack crawled from seed URLs: the crawl's seeds and options (wikigr.sources.crawl), which
    # `pack update` repeats; its pages' states are in crawl.json.
    crawl: dict[str, Any] | None = None
    # Documents per language (wikigr.lang: ISO 639-1 codes, "und" when undetermined), found at build
    # time. Empty in a pack built before languages were recorded: such packs are English.
    languages: dict[str, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        check_name(self.name)
        for rel, size in self.sizes.items():
            if size < 0:
                raise ValueError(f"sizes.{rel} must not be negative")
        for code, count in self.languages.items():
            if not (2 <= len(code) <= 3 and code.isascii() and code.isalpha() and code.islower()):
                raise ValueError(f"languages: {code!r} is not a language code")
            if count < 0:
                raise ValueError(f"languages.{code} must not be negative")

    def language_codes(self) -> list[str]:
        """The pack's document languages, most documents first (["en"] for a pack that records none)."""
        if not self.languages:
            return ["en"]
        return [code for code, _ in sorted(self.languages.items(), key=lambda item: (-item[1], item[0]))]

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = schema.dump(self)
        if data.get("openml") is None:
            data.pop("openml", None)  # document packs carry no OpenML record
        if not data.get("sizes"):
            data.pop("sizes", None)  # only an exported archive's manifest lists sizes
        if not data.get("shards"):
            data.pop("shards", None)  # a pack in one store lists no shards
        if not data.get("languages"):
            data.pop("languages", None)  # not yet detected (a pack kind without documents)
        if data.get("crawl") is None:
            data.pop("crawl", None)  # a pack built from listed sources only
        return data

    def dump(self, path: Path) -> None:
        """Write atomically: a reader sees the old manifest or the new one, never half of one."""
        tmp = path.with_name(f".{path.name}.tmp")
        tmp.write_text(json.dumps(self.to_dict(), indent=2) + "\n", encoding="utf-8")
        os.replace(tmp, path)


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; every failure is an :class:`InvalidPackError` of one line."""
    if not path.is_file():
        raise InvalidPackError(f"not a pack: {path.parent} has no manifest.json")
    data = read_json(path, MAX_MANIFEST_BYTES, f"manifest {path}")
    if not isinstance(data, dict):
        raise InvalidPackError(f"corrupt manifest {path}: not a JSON object")
    version = data.get("format_version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise InvalidPackError(f"corrupt manifest {path}: format_version must be an integer")
    if version > FORMAT_VERSION:
        raise InvalidPackError(
            f"pack format_version {version} is newer than this wikigr supports ({FORMAT_VERSION}): "
            "upgrade wikigr"
        )
    if version < 1:
        raise InvalidPackError(f"corrupt manifest {path}: format_version {version}")
    if isinstance(data.get("eval_scores"), dict):  # written before one was kept per profile
        data["eval_scores"] = [data["eval_scores"]]
    try:
        manifest = schema.load(Manifest, data)
    except schema.SchemaError as exc:
        raise InvalidPackError(f"invalid manifest {path}: {exc}") from exc
    if manifest.source_kind not in kind_names():
        allowed = ", ".join(repr(name) for name in kind_names())
        raise InvalidPackError(
            f"invalid manifest {path}: source_kind: must be one of {allowed}, not {manifest.source_kind!r}"
        )
    newest = pack_kind(manifest.source_kind).schema_version  # the newest store schema this wikigr reads
    if manifest.schema_version > newest:
        raise InvalidPackError(
            f"pack schema_version {manifest.schema_version} is newer than this wikigr reads ({newest} for "
            f"a {manifest.source_kind} pack): upgrade wikigr"
        )
    return manifest
