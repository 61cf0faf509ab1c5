"""What a crawl knows of its pages (:class:`Page`), what it did (:class:`CrawlReport`), and what a
crawled pack keeps of it in ``crawl.json`` (:class:`CrawlFile`)."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from wikigr.errors import InvalidPackError
from wikigr.pack import pack as layout
from wikigr.pack.manifest import Manifest
from wikigr.sources.crawl.options import CrawlOptions

#: The skipped pages a report lists (the counts cover them all).
MAX_SKIPPED_LISTED = 10_000


@dataclass
class Page:
    """One page of a crawl: where it was found and what became of it."""

    url: str
    depth: int
    #: discovered, fetched (its links not yet followed), expanded, failed, or duplicate (another
    #: page has its final or canonical URL)
    state: str = "discovered"
    retries: int = 0
    claimed_at: str | None = None  # when its last request began
    error: str | None = None
    final_url: str | None = None
    etag: str | None = None
    last_modified: str | None = None
    content_type: str = ""
    charset: str | None = None
    fetched_at: str | None = None
    links: list[str] = field(default_factory=list)  # in scope

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v not in (None, [], "", 0) or k in ("url", "depth")}

    @classmethod
    def from_json(cls, data: object) -> Page:
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            raise ValueError("a crawled page is not an object with a url")
        known = {f.name for f in fields(cls)}
        page = cls(**{k: v for k, v in data.items() if k in known})
        ints = (page.depth, page.retries)
        if not all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in ints):
            raise ValueError(f"crawled page {page.url}: depth and retries must be counts")
        texts = (page.etag, page.last_modified, page.error, page.final_url, page.charset, page.fetched_at)
        if not isinstance(page.state, str) or not isinstance(page.content_type, str):
            raise ValueError(f"crawled page {page.url}: state and content_type must be text")
        if not all(t is None or isinstance(t, str) for t in (*texts, page.claimed_at)):
            raise ValueError(f"crawled page {page.url}: a field that is text or null is neither")
        if not isinstance(page.links, list) or not all(isinstance(link, str) for link in page.links):
            raise ValueError(f"crawled page {page.url}: links is not a list of strings")
        return page


@dataclass
class CrawlReport:
    """What a crawl did: its pages, and what it skipped and why."""

    pages: dict[str, Page] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)  # URL -> why (listed up to a cap)
    skipped_counts: dict[str, int] = field(default_factory=dict)  # why -> how many
    requests: int = 0  # page requests made by this run (robots.txt and sitemaps not counted)
    restored: int = 0  # pages read from an interrupted crawl's folder

    def counts(self) -> dict[str, int]:
        states: dict[str, int] = {}
        for page in self.pages.values():
            states[page.state] = states.get(page.state, 0) + 1
        return {
            "discovered": len(self.pages),
            "fetched": states.get("expanded", 0) + states.get("fetched", 0),
            "failed": states.get("failed", 0),
            "queued": states.get("discovered", 0),
            "skipped": sum(self.skipped_counts.values()),
            "requests": self.requests,
            "restored": self.restored,
        }

    def in_order(self, urls: list[str]) -> list[str]:
        """``urls`` (pages of this crawl) in an order that does not depend on which fetch finished
        first: by depth, then URL; a pack built or updated twice lists its sources alike."""
        return sorted(urls, key=lambda u: (self.pages[u].depth if u in self.pages else 1 << 30, u))

    def to_json(self) -> dict[str, Any]:
        return {
            **self.counts(),
            "skipped_by_reason": dict(sorted(self.skipped_counts.items())),
            "skipped_pages": [{"url": url, "why": why} for url, why in self.skipped.items()],
        }


#: The largest crawl.json read (a pack from someone else is data: its size is capped).
MAX_CRAWL_FILE_BYTES = 256 * 1024 * 1024


@dataclass
class CrawlFile:
    """What a crawled pack keeps of its crawl (``crawl.json``): the sources listed beside the
    seeds, and each page's state (for ``pack update``: validators, links)."""

    urls: list[str]
    pages: dict[str, Page]

    def dump(self, path: Path, report: CrawlReport | None = None) -> None:
        data: dict[str, Any] = {"urls": self.urls, "pages": [p.to_json() for p in self.pages.values()]}
        if report is not None:
            data["report"] = {k: v for k, v in report.to_json().items() if k != "skipped_pages"}
        path.write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, path: Path) -> CrawlFile:
        """Read and check a pack's crawl.json; a ValueError names what is wrong."""
        if path.stat().st_size > MAX_CRAWL_FILE_BYTES:
            raise ValueError(f"{path.name} is larger than {MAX_CRAWL_FILE_BYTES // 2**20} MiB")
        try:
            data = json.loads(path.read_bytes().decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise ValueError(f"{path.name} is not JSON ({exc})") from None
        if not isinstance(data, dict) or not isinstance(data.get("pages"), list):
            raise ValueError(f"{path.name} has no list of pages")
        urls = data.get("urls", [])
        if not isinstance(urls, list) or not all(isinstance(u, str) for u in urls):
            raise ValueError(f"{path.name}: urls is not a list of strings")
        pages = [Page.from_json(item) for item in data["pages"]]
        return cls(urls, {page.url: page for page in pages})


def kept_pages(report: CrawlReport) -> dict[str, Page]:
    """The pages a pack keeps a record of: those fetched (their links too) and those failed."""
    return {u: replace(p) for u, p in report.pages.items() if p.state in ("expanded", "fetched", "failed")}


def crawl_of(folder: Path, manifest: Manifest) -> tuple[CrawlOptions | None, CrawlFile]:
    """The crawl a pack records (None: not crawled) and its crawl.json (its listed sources and its
    pages' states); a pack whose record is damaged is refused in one line."""
    if manifest.crawl is None:
        return None, CrawlFile([], {})
    try:
        crawl = CrawlOptions.from_json(manifest.crawl)
        path = folder / layout.CRAWL_FILE
        return crawl, CrawlFile.load(path) if path.is_file() else CrawlFile([], {})
    except (ValueError, OSError) as exc:
        raise InvalidPackError(f"pack {manifest.name}: its crawl cannot be read: {exc}") from None
