"""Progress reporting: the library never prints; it calls a callback the caller may pass."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class ProgressEvent:
    stage: str  # "fetch", "embed", "write"
    done: int
    total: int
    detail: str = ""


ProgressCallback = Callable[[ProgressEvent], None]


def no_progress(event: ProgressEvent) -> None:
    """The default callback: ignore progress."""
