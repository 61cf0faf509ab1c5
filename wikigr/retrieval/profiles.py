"""Enhancement profiles: an ordered list of stage names plus their options.

A pack's ``kg_config.json`` may choose the default profile and override stage options::

    {"profile": "balanced", "stages": {"gate": {"threshold": 0.35}}, "model": "claude-sonnet-4-5"}

Unknown keys, stage names and option names are rejected with a clear error.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from wikigr import schema
from wikigr.errors import InvalidPackError, UsageError
from wikigr.retrieval.stage import Stage, stage_class

# The order stages run in: a profile lists its stages in this order, and a stage enabled on top
# of a profile goes before the first stage that comes later here.
CANONICAL_ORDER = [
    "multi_query",
    "literals",
    "vector",
    "keyword",
    "title_match",
    "ppr",
    "vector_cypher",
    "router",
    "page_score",
    "quality",
    "dedup",
    "cross_encoder",
    "graph_rerank",
    "multidoc",
    "gate",
    "few_shot",
    "synthesize",
]


def _in_order(*names: str) -> list[str]:
    return sorted(set(names), key=CANONICAL_ORDER.index)


BALANCED = [
    "vector",
    "keyword",
    "title_match",
    "quality",
    "dedup",
    "graph_rerank",
    "multidoc",
    "gate",
    "few_shot",
    "synthesize",
]
PROFILES: dict[str, list[str]] = {
    "baseline": ["vector", "dedup", "synthesize"],
    "balanced": BALANCED,
    "max": _in_order(*BALANCED, "multi_query", "cross_encoder"),
    "graph": _in_order(*BALANCED, "ppr"),
    "routed": ["router", "quality", "dedup", "multidoc", "gate", "few_shot", "synthesize"],
}
DEFAULT_PROFILE = "balanced"


@dataclass
class PackConfig:
    """``kg_config.json``."""

    profile: str | None = None
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    model: str | None = None
    top_k: int | None = None


def load_pack_config(data: dict[str, Any], where: str = "kg_config.json") -> PackConfig:
    try:
        config = schema.load(PackConfig, data)
    except schema.SchemaError as exc:
        raise InvalidPackError(f"{where}: {exc}") from exc
    if config.profile is not None and config.profile not in PROFILES:
        raise InvalidPackError(f"{where}: profile: unknown profile {config.profile!r}")
    for name, options in config.stages.items():
        try:
            make_options(name, options)
        except UsageError as exc:
            raise InvalidPackError(f"{where}: {exc}") from exc
    return config


def make_options(stage_name: str, values: dict[str, Any]) -> Any:
    cls = stage_class(stage_name)
    try:
        return schema.load(cls.Options, values, f"stages.{stage_name}")
    except schema.SchemaError as exc:
        known = ", ".join(f.name for f in fields(cls.Options)) or "none"
        raise UsageError(f"{exc} (options of {stage_name}: {known})") from exc


def _rank(name: str) -> int:
    """A stage's place in CANONICAL_ORDER; stages from elsewhere (plugins) go last."""
    return CANONICAL_ORDER.index(name) if name in CANONICAL_ORDER else len(CANONICAL_ORDER)


def _insert(names: list[str], name: str) -> list[str]:
    if name in names:
        return names
    for i, existing in enumerate(names):
        if _rank(existing) > _rank(name):
            return [*names[:i], name, *names[i:]]
    return [*names, name]


def resolve_stages(
    profile: str,
    enable: list[str] | None = None,
    disable: list[str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
) -> list[Stage]:
    """The stages of ``profile`` with ``enable``/``disable`` applied and options set."""
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    names = list(PROFILES[profile])
    for name in enable or []:
        stage_class(name)
        names = _insert(names, name)
    for name in disable or []:
        stage_class(name)
        names = [n for n in names if n != name]
    for name in overrides or {}:
        stage_class(name)
    return [stage_class(n)(make_options(n, (overrides or {}).get(n, {}))) for n in names]
