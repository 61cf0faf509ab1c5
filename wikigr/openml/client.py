"""A small client of OpenML's REST API (work in progress)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from wikigr.errors import BuildError
from wikigr.openml.exports import ImportReport
from wikigr.openml.model import StarData
from wikigr.progress import ProgressCallback


@dataclass
class ApiSelection:
    base_url: str = "https://www.openml.org"
    measure: str = "predictive_accuracy"

    def describe(self) -> str:
        return ""


@dataclass
class Fetched:
    star: StarData
    report: ImportReport
    requests: int = 0
    cached: int = 0


def fetch_star(selection: ApiSelection, cache_dir: Path, on_progress: ProgressCallback) -> Fetched:
    raise BuildError("the OpenML API client is not there yet")
