"""A question (or a search) as a request to ``wikigr serve`` states it: :func:`parse_ask` checks
its fields (the packs it names, the text, the profile, ``top_k``, the stages switched on or off)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from wikigr.errors import UsageError
from wikigr.retrieval.profiles import PROFILES
from wikigr.retrieval.stage import stage_class
from wikigr.serve.http import int_param
from wikigr.serve.packs import ServedPacks

MAX_QUESTION_CHARS = 4000
MAX_TOP_K = 100
MAX_STAGE_SWITCHES = 32


@dataclass(frozen=True)
class Ask:
    """A question (or a search) as a request states it, checked."""

    names: str
    refs: list[str]
    text: str
    profile: str | None
    top_k: int | None  # None: the pack's (kg_config.json), else 5
    enable: list[str]
    disable: list[str]
    fallback: bool

    def record(self) -> dict[str, Any]:
        return {
            "pack": self.names,
            "question": self.text,
            "profile": self.profile,
            "top_k": self.top_k,
            "enable": self.enable,
            "disable": self.disable,
        }


def parse_ask(data: dict[str, Any], packs: ServedPacks, text_field: str) -> Ask:
    fields = {"pack", text_field, "profile", "top_k", "enable", "disable"}
    if text_field == "question":
        fields.add("fallback")
    unknown = sorted(set(data) - fields)
    if unknown:
        raise UsageError(f"unknown field '{unknown[0]}' (fields: {', '.join(sorted(fields))})")
    if "pack" not in data:
        raise UsageError("pack is required (a name, 'a,b', a list, or 'all')")
    text = data.get(text_field)
    if not isinstance(text, str):
        raise UsageError(f"{text_field} must be a string")
    text = text.strip()
    if not text:
        raise UsageError(f"the {text_field} is empty")
    if len(text) > MAX_QUESTION_CHARS:
        raise UsageError(f"the {text_field} is longer than {MAX_QUESTION_CHARS} characters")
    profile = data.get("profile")
    if profile is not None and not isinstance(profile, str):
        raise UsageError(f"profile must be a string (profiles: {', '.join(PROFILES)})")
    if profile is not None and profile not in PROFILES:
        raise UsageError(f"unknown profile '{profile[:40]}' (profiles: {', '.join(PROFILES)})")
    top_k = None if data.get("top_k") is None else int_param(data["top_k"], "top_k", 1, MAX_TOP_K)
    switches: dict[str, list[str]] = {}
    for key in ("enable", "disable"):
        value = data.get(key) or []
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise UsageError(f"{key} must be a list of stage names")
        if len(value) > MAX_STAGE_SWITCHES:
            raise UsageError(f"{key}: at most {MAX_STAGE_SWITCHES} stages")
        for name in value:
            stage_class(name[:64])  # an unknown stage is a UsageError naming the known ones
        switches[key] = sorted(set(value))
    fallback = data.get("fallback", False)
    if not isinstance(fallback, bool):
        raise UsageError("fallback must be true or false")
    ref = data["pack"]
    refs = packs.resolve(ref)
    names = ",".join(ref) if isinstance(ref, list) else str(ref)
    return Ask(names, refs, text, profile, top_k, switches["enable"], switches["disable"], fallback)
