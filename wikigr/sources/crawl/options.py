"""What a crawl is asked to do (:class:`CrawlOptions`): recorded in a crawled pack's manifest, so
``pack update`` crawls the same way."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from typing import Any

from wikigr.errors import UsageError
from wikigr.sources.crawl.site import check_seed


@dataclass(frozen=True)
class CrawlOptions:
    """What to crawl and how; recorded in the manifest, so ``pack update`` crawls the same."""

    seeds: tuple[str, ...]
    max_pages: int = 1000
    depth: int = 5
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    delay: float = 0.0  # seconds between two requests to one site (robots.txt may ask for more)
    per_host: int = 4
    query_variants: int = 10
    sitemaps: bool = True

    def __post_init__(self) -> None:
        if not self.seeds:
            raise UsageError("--crawl needs a seed URL")
        object.__setattr__(self, "seeds", tuple(dict.fromkeys(check_seed(s) for s in self.seeds)))
        if self.max_pages < 1:
            raise UsageError(f"--max-pages must be at least 1, not {self.max_pages}")
        if self.depth < 0:
            raise UsageError(f"--depth must not be negative, not {self.depth}")
        if not 0 <= self.delay <= 3600:
            raise UsageError(f"--delay must be between 0 and 3600 seconds, not {self.delay:g}")
        if self.per_host < 1:
            raise UsageError(f"per_host must be at least 1, not {self.per_host}")
        if self.query_variants < 0:
            raise UsageError(f"query_variants must not be negative, not {self.query_variants}")

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        return {k: list(v) if isinstance(v, tuple) else v for k, v in data.items()}

    @classmethod
    def from_json(cls, data: object) -> CrawlOptions:
        """The options a manifest records; a ValueError names what is wrong."""
        if not isinstance(data, dict):
            raise ValueError("crawl options are not an object")
        known = {f.name: f for f in fields(cls)}
        values: dict[str, Any] = {}
        for key, value in data.items():
            if key not in known:
                raise ValueError(f"unknown crawl option {key!r}")
            if key in ("seeds", "include", "exclude"):
                if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
                    raise ValueError(f"crawl option {key} is not a list of strings")
                value = tuple(value)
            elif key == "sitemaps":
                if not isinstance(value, bool):
                    raise ValueError("crawl option sitemaps is not true or false")
            elif key == "delay":
                if isinstance(value, bool) or not isinstance(value, int | float):
                    raise ValueError("crawl option delay is not a number")
            elif isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"crawl option {key} is not an integer")
            values[key] = value
        try:
            return cls(**values)
        except UsageError as exc:
            raise ValueError(exc.message) from None
