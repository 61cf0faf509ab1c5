"""Enhancement profiles: an ordered list of stage names plus their options.

A pack's ``kg_config.json`` may choose the default profile and override stage options::

    {"profile": "auto", "stages": {"gate": {"threshold": 0.35}}, "model": "claude-sonnet-4-5"}

``max_tool_calls`` (OpenML packs) is short for ``stages.openml_tools.max_tool_calls``. Unknown
keys, stage names and option names are rejected with a clear error.
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
    "bridge",
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
    # The default: the router picks the retrieval for the pack and the question (router.py).
    "auto": ["router", "quality", "dedup", "graph_rerank", "multidoc", "gate", "few_shot", "synthesize"],
    "baseline": ["vector", "dedup", "synthesize"],
    "balanced": BALANCED,
    "max": _in_order(*BALANCED, "multi_query", "cross_encoder"),
    "graph": _in_order(*BALANCED, "ppr"),
    "routed": ["router", "quality", "dedup", "multidoc", "gate", "few_shot", "synthesize"],
}
# Stage options a profile sets; kg_config.json and the caller's options go on top.
PROFILE_OPTIONS: dict[str, dict[str, dict[str, Any]]] = {
    # The auto policy needs the question's kind only for global questions: the rules suffice, and
    # a Claude call per question would cost more than the choice is worth.
    "auto": {"router": {"policy": "auto", "max_attempts": 1, "use_llm": False}},
}
DEFAULT_PROFILE = "auto"


@dataclass
class PackConfig:
    """``kg_config.json``."""

    profile: str | None = None
    stages: dict[str, dict[str, Any]] = field(default_factory=dict)
    model: str | None = None
    top_k: int | None = None
    max_tool_calls: int | None = None  # the OpenML tools' budget


def load_pack_config(data: dict[str, Any], where: str = "kg_config.json") -> PackConfig:
    budget = data.get("max_tool_calls")
    if budget is not None and (isinstance(budget, bool) or not isinstance(budget, int) or budget < 1):
        raise InvalidPackError(f"{where}: max_tool_calls must be a positive integer")
    try:
        config = schema.load(PackConfig, data)
    except schema.SchemaError as exc:
        raise InvalidPackError(f"{where}: {exc}") from exc
    if config.top_k is not None and config.top_k < 1:
        raise InvalidPackError(f"{where}: top_k must be a positive integer")
    if config.profile is not None and config.profile not in PROFILES:
        raise InvalidPackError(f"{where}: profile: unknown profile {config.profile!r}")
    if config.max_tool_calls is not None:
        config.stages.setdefault("openml_tools", {}).setdefault("max_tool_calls", config.max_tool_calls)
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


def profile_options(
    profile: str, overrides: dict[str, dict[str, Any]] | None = None
) -> dict[str, dict[str, Any]]:
    """The stage options of ``profile`` with ``overrides`` on top, by stage name."""
    merged = {name: dict(values) for name, values in PROFILE_OPTIONS.get(profile, {}).items()}
    for name, values in (overrides or {}).items():
        merged.setdefault(name, {}).update(values)
    return merged


def profile_applies(profile: str, pack_kind: str) -> bool:
    """Whether a stage of ``profile`` applies to packs of ``pack_kind`` (on an OpenML pack only
    the router's profiles do: ``auto`` and ``routed``)."""
    return any(pack_kind in stage_class(name).pack_kinds for name in PROFILES[profile])


def resolve_stages(
    profile: str,
    enable: list[str] | None = None,
    disable: list[str] | None = None,
    overrides: dict[str, dict[str, Any]] | None = None,
    pack_kind: str = "documents",
) -> tuple[list[Stage], dict[str, Any]]:
    """The stages of ``profile`` with ``enable``/``disable`` applied and options set, and the
    options of every stage named in the profile's options or ``overrides`` (checked, by stage
    name: the router builds its strategies' stages with them). Only the stages that apply to
    ``pack_kind`` are kept (on an OpenML pack: the router, which answers with the tools)."""
    if profile not in PROFILES:
        raise UsageError(f"unknown profile {profile!r} (known: {', '.join(PROFILES)})")
    names = list(PROFILES[profile])
    for name in enable or []:
        if pack_kind not in stage_class(name).pack_kinds:
            raise UsageError(f"stage {name} does not apply to {pack_kind} packs")
        names = _insert(names, name)
    for name in disable or []:
        stage_class(name)
        names = [n for n in names if n != name]
    names = [n for n in names if pack_kind in stage_class(n).pack_kinds]
    if not names:  # profile_applies() is false, or every stage that applies was disabled
        left = " left" if disable else ""
        raise UsageError(
            f"no stage{left} of profile {profile} applies to {pack_kind} packs "
            "(the router of auto, the default, does)"
        )
    merged = profile_options(profile, overrides)
    options = {name: make_options(name, values) for name, values in merged.items()}
    stages = [stage_class(n)(options.get(n) or make_options(n, {})) for n in names]
    return stages, options
