"""``manifest.json``: what a pack is, how it was built, and from what. See docs/pack-format.md."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from wikigr.errors import InvalidPackError

FORMAT_VERSION = 1
MAX_MANIFEST_BYTES = 64 * 1024 * 1024
NAME_RE = re.compile(r"^[a-z0-9][a-z0-9._-]{0,63}$")


def now_iso() -> str:
    return datetime.now(UTC).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def check_name(name: str) -> str:
    if not NAME_RE.match(name):
        raise ValueError(
            f"invalid pack name {name!r}: use 1-64 lowercase letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
        )
    return name


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EmbedderRecord(_Strict):
    name: str
    dimension: int = Field(gt=0)
    backend: str


class GraphStats(_Strict):
    articles: int = Field(ge=0)
    sections: int = Field(ge=0)
    chunks: int = Field(ge=0)
    links: int = Field(ge=0)
    categories: int = Field(ge=0, default=0)
    entities: int = Field(ge=0, default=0)
    facts: int = Field(ge=0, default=0)
    relations: int = Field(ge=0, default=0)


class SourceRecord(_Strict):
    url: str
    final_url: str | None = None
    sha256: str | None = None
    fetched_at: str | None = None
    status: str  # "ok", or the error text
    content_type: str | None = None
    bytes: int | None = None
    chunks: int = 0


class Manifest(_Strict):
    format_version: int
    name: str
    version: str = "1.0.0"
    description: str = ""
    created_at: str
    wikigr_version: str
    source_kind: Literal["documents", "openml"]
    embedder: EmbedderRecord
    schema_version: int
    vector_index: Literal["exact", "hnsw"] = "exact"
    stats: GraphStats
    sources: list[SourceRecord] = Field(default_factory=list)

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        return check_name(value)

    def dump(self, path: Path) -> None:
        path.write_text(json.dumps(self.model_dump(), indent=2) + "\n", encoding="utf-8")


def load_manifest(path: Path) -> Manifest:
    """Read and validate a manifest; every failure is an :class:`InvalidPackError` of one line."""
    if not path.is_file():
        raise InvalidPackError(f"not a pack: {path.parent} has no manifest.json")
    if path.stat().st_size > MAX_MANIFEST_BYTES:
        raise InvalidPackError(f"manifest too large: {path}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InvalidPackError(f"corrupt manifest {path}: {exc}") from exc
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
    try:
        return Manifest.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "manifest"
        raise InvalidPackError(f"invalid manifest {path}: {where}: {first['msg']}") from exc
