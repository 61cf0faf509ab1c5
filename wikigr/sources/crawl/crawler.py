"""Crawl a site from seed URLs: the pages of a pack found by following links, not listed by hand.

:class:`Crawler` expands from the seeds breadth first, as wget's recursive mode does: each page
is fetched once, its links (and the site's sitemaps) put in the frontier one level deeper, within
the scope (:class:`wikigr.sources.crawl.site.Scope`), the depth (``depth``, wget's default 5) and the page
budget (``max_pages``). It yields each page as a :class:`FetchResult` as it is fetched; the build
parses, chunks and embeds them as it does listed URLs.

Manners, as the crawlers people trust have them: ``robots.txt`` is honoured (user agent
``wikigr``), with its ``Crawl-delay``; at most ``per_host`` requests run at a time on one site
(one, spaced by the delay, when there is a delay); a 429 or 503 slows the site down (its delay
doubles, at least what ``Retry-After`` asks) and the page is tried again later instead of
failing. Only document types are fetched: a URL whose extension names another type is skipped
unrequested, a response of another type is dropped before its body is read. A path is followed
with at most ``query_variants`` query strings (a calendar that links to the next month forever
cannot fill the budget).

State: with a ``folder``, every page's state (discovered, fetched, expanded, failed; depth,
retries, error, validators, links) is appended to ``folder/log.jsonl`` and every fetched body
kept in ``folder/bodies/``, so a crawl interrupted (Ctrl-C) and run again with the same options
resumes: what was fetched is read from the folder, not fetched again. ``previous`` (the pages of
the pack being updated) makes conditional requests (``ETag``, ``Last-Modified``): a 304 yields a
result with ``not_modified`` set, and the page's links recorded then are followed.
"""

from __future__ import annotations

import contextlib
import hashlib
import heapq
import json
import mimetypes
import shutil
import threading
import time
from collections.abc import Callable, Generator, Mapping
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any
from urllib.parse import urlsplit, urlunsplit

import httpx

from wikigr.documents import FetchResult
from wikigr.errors import SourceError
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.sources.crawl.options import CrawlOptions
from wikigr.sources.crawl.site import (
    MAX_SITEMAPS,
    PageLinks,
    Robots,
    Scope,
    page_links,
    robots_text,
    site_of,
    sitemap_locations,
)
from wikigr.sources.crawl.state import MAX_SKIPPED_LISTED, CrawlReport, Page
from wikigr.sources.decode import decode_text
from wikigr.sources.fetch import FetchOptions, Request, fetch_one, make_client
from wikigr.sources.formats import format_for, guess_content_type
from wikigr.sources.parse import parse

__all__ = ["Crawler"]

#: How many times a page a busy server turned away (429, 503) is tried again, later.
BUSY_RETRIES = 5
#: The longest a busy site's delay grows to, seconds.
MAX_DELAY = 60.0


@dataclass
class _Site:
    robots: Robots
    delay: float
    active: int = 0
    next_at: float = 0.0
    frontier: list[tuple[int, int, str]] = field(default_factory=list)  # (depth, order, url)


@dataclass(frozen=True)
class _Fetched:
    result: FetchResult
    found: PageLinks | None


def _key(url: str) -> str:
    return hashlib.sha256(url.encode("utf-8")).hexdigest()[:32]


def _unfetchable_type(url: str) -> bool:
    """Whether the URL's extension names a type no format reads (an image, an archive, a style
    sheet): such a page is skipped without a request."""
    if guess_content_type(url):
        return False
    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    return guessed is not None and not guessed.startswith("text/") and format_for(guessed) is None


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return str(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))


class Crawler:
    """One crawl: ``run()`` yields the pages; ``report`` says what happened."""

    def __init__(
        self,
        options: CrawlOptions,
        fetch: FetchOptions,
        *,
        folder: Path | None = None,
        previous: Mapping[str, Page] | None = None,
        on_progress: ProgressCallback | None = None,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.options = options
        self.fetch = fetch
        self.folder = folder
        self.previous = dict(previous or {})
        self.progress = on_progress or no_progress
        self.sleep = sleep
        self.scope = Scope.of(options.seeds, options.include, options.exclude)
        self.report = CrawlReport()
        self._sites: dict[str, _Site] = {}
        self._claimed: dict[str, str] = {}  # a final or canonical URL -> the page that has it
        self._variants: dict[str, int] = {}
        self._order = 0
        self._log: IO[str] | None = None
        self._restored: list[FetchResult] = []
        self._client: httpx.Client | None = None
        self._logged_robots: dict[str, tuple[int, str | None, str | None]] = {}
        self._sitemaps_done: set[str] = set()

    # ---------------------------------------------------------------------------------------
    # The frontier

    def _skip(self, url: str, why: str) -> None:
        if url in self.report.skipped or url in self.report.pages:
            return
        self.report.skipped_counts[why] = self.report.skipped_counts.get(why, 0) + 1
        if len(self.report.skipped) < MAX_SKIPPED_LISTED:
            self.report.skipped[url] = why

    def _admit(self, url: str, depth: int) -> None:
        """Put ``url`` in the frontier at ``depth``, unless it is known, or skipped (and why)."""
        if url in self.report.pages or url in self._claimed or url in self.report.skipped:
            return
        why = self.scope.why_not(url)
        if why is None and depth > self.options.depth:
            why = f"deeper than --depth {self.options.depth}"
        if why is None and _unfetchable_type(url):
            why = "not a document type"
        if why is None and urlsplit(url).query:
            path = _without_query(url)
            self._variants[path] = self._variants.get(path, 0) + 1
            if self._variants[path] > self.options.query_variants:
                why = "too many query strings on one path"
        if why is None:
            why = self._site(url).robots.refusal(url)
        if why is None and len(self.report.pages) >= self.options.max_pages:
            why = f"over --max-pages {self.options.max_pages}"
        if why is not None:
            self._skip(url, why)
            return
        page = Page(url, depth)
        self.report.pages[url] = page
        self._queue(page)
        self._write(page)

    def _queue(self, page: Page) -> None:
        self._order += 1
        heapq.heappush(self._site(page.url).frontier, (page.depth, self._order, page.url))

    # ---------------------------------------------------------------------------------------
    # Sites: robots.txt, delays, sitemaps

    def _site(self, url: str) -> _Site:
        name = site_of(url)
        site = self._sites.get(name)
        if site is None:
            robots = Robots.allow_all()
            if name.startswith(("http:", "https:")):
                robots = self._robots(name)
            site = _Site(robots, max(self.options.delay, robots.delay()))
            self._sites[name] = site
        return site

    def _robots(self, name: str) -> Robots:
        logged = self._logged_robots.get(name)
        if logged is not None:
            return Robots(*logged)
        result = self._request(name + "/robots.txt", Request(raw=True), None)
        text = robots_text(result.content) if result.ok else None
        status = result.status if result.status else (200 if result.ok else 0)
        if status:  # an answer: kept for a resumed crawl (no answer: asked again then)
            self._write_raw({"robots": name, "status": status, "text": text, "error": None})
        return Robots(status, text, result.error)

    def _request(self, url: str, request: Request, site: _Site | None) -> FetchResult:
        """One request made from this thread, paced as the site asks."""
        if site is not None:
            wait_for = site.next_at - time.monotonic()
            if wait_for > 0:
                self.sleep(wait_for)
        result = fetch_one(url, self.fetch, self._client, request=request)
        if site is not None:
            site.next_at = time.monotonic() + site.delay
        return result

    def _sitemaps(self, seed: str) -> None:
        name = site_of(seed)
        if not name.startswith(("http:", "https:")) or name in self._sitemaps_done:
            return
        self._sitemaps_done.add(name)
        site = self._site(seed)
        todo = [*site.robots.sitemaps(), name + "/sitemap.xml"]
        seen: set[str] = set()
        while todo and len(seen) < MAX_SITEMAPS:
            url = todo.pop(0)
            if url in seen or not site.robots.allows(url) or not url.startswith(("http:", "https:")):
                continue
            seen.add(url)
            result = self._request(url, Request(raw=True), self._sites.get(site_of(url)))
            if not result.ok:
                continue
            pages, indexes = sitemap_locations(result.content, result.final_url)
            todo += indexes
            for page in pages:
                self._admit(page, 1)
        self._write_raw({"sitemaps": name})

    # ---------------------------------------------------------------------------------------
    # The state folder

    def _write(self, page: Page) -> None:
        self._write_raw({"page": page.to_json()})

    def _write_raw(self, line: dict[str, Any]) -> None:
        if self._log is not None:
            self._log.write(json.dumps(line, ensure_ascii=False) + "\n")

    def _resume(self) -> None:
        """Read what an interrupted crawl with the same options left in the folder."""
        if self.folder is None:
            return
        options_file = self.folder / "options.json"
        wanted = json.dumps(self.options.to_json(), sort_keys=True)
        if options_file.is_file() and options_file.read_text(encoding="utf-8") != wanted:
            shutil.rmtree(self.folder)  # another crawl's: start over
        (self.folder / "bodies").mkdir(parents=True, exist_ok=True)
        options_file.write_text(wanted, encoding="utf-8")
        log = self.folder / "log.jsonl"
        pages: dict[str, Page] = {}
        if log.is_file():
            for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    data = json.loads(line)
                    if "page" in data:
                        page = Page.from_json(data["page"])
                        pages[page.url] = page
                    elif "robots" in data:
                        text, error = data.get("text"), data.get("error")
                        if not all(v is None or isinstance(v, str) for v in (text, error)):
                            continue
                        self._logged_robots[str(data["robots"])] = (int(data["status"]), text, error)
                    elif "sitemaps" in data:
                        self._sitemaps_done.add(str(data["sitemaps"]))
                except (ValueError, TypeError, KeyError):
                    continue  # a line cut short by the interruption
        self._log = log.open("a", encoding="utf-8")
        for page in list(pages.values()):
            if page.state == "skipped":
                del pages[page.url]
                self._skip(page.url, page.error or "skipped")
                continue
            if page.state in ("fetched", "expanded"):
                body = self.folder / "bodies" / _key(page.url)
                if not body.is_file():
                    page.state = "discovered"
                else:
                    self._restored.append(self._result(page, body.read_bytes()))
            self.report.pages[page.url] = page
            if page.final_url:
                self._claimed.setdefault(page.final_url, page.url)
        for page in pages.values():
            if page.state == "discovered":
                self._queue(page)
            elif page.state in ("fetched", "expanded"):
                for link in page.links:
                    self._admit(link, page.depth + 1)
        self.report.restored = len(self._restored)

    @staticmethod
    def _result(page: Page, content: bytes) -> FetchResult:
        return FetchResult(
            url=page.url,
            final_url=page.final_url or page.url,
            content=content,
            content_type=page.content_type,
            charset=page.charset,
            fetched_at=page.fetched_at or "",
            status=200,
            etag=page.etag,
            last_modified=page.last_modified,
        )

    # ---------------------------------------------------------------------------------------
    # Fetching

    def _fetch_page(self, page: Page, request: Request) -> _Fetched:
        """In a worker: fetch the page, keep its body, and find its links."""
        result = fetch_one(page.url, self.fetch, self._client, request=request)
        found: PageLinks | None = None
        if result.ok and not result.not_modified:
            if self.folder is not None:
                (self.folder / "bodies" / _key(page.url)).write_bytes(result.content)
            found = self._links(result)
        return _Fetched(result, found)

    @staticmethod
    def _links(result: FetchResult) -> PageLinks | None:
        url = result.final_url or result.url
        try:
            if result.content_type == "text/html":
                return page_links(decode_text(result.content, result.charset, html=True), url)
            return PageLinks(list(parse(result).links))
        except (SourceError, ValueError):
            return None

    def _request_for(self, page: Page) -> Request:
        old = self.previous.get(page.url)
        validators = (old.etag, old.last_modified) if old is not None else (None, None)
        return Request(validators=validators, may_redirect=self._may_redirect, retry_busy=False)

    def _may_redirect(self, url: str) -> bool:
        return self.scope.why_not(url) is None

    def _done(self, page: Page, fetched: _Fetched, site: _Site) -> FetchResult | None:
        """What a finished fetch means for the crawl; the result to yield, if any."""
        result = fetched.result
        if result.status in (429, 503) and page.retries < BUSY_RETRIES:
            page.retries += 1
            site.delay = min(MAX_DELAY, max(site.delay * 2, result.retry_after or 0.0, 1.0))
            site.next_at = time.monotonic() + site.delay
            self._queue(page)
            self._write(page)
            return None
        if result.error is not None and (
            result.error.startswith("unsupported content type")
            or result.error.startswith("redirect out of scope")
        ):
            del self.report.pages[page.url]
            why = "not a document type" if result.error.startswith("unsupported") else "redirect out of scope"
            self._skip(page.url, why)
            self._write_raw({"page": {**page.to_json(), "state": "skipped", "error": why}})
            return None
        if result.error is not None:
            page.state, page.error = "failed", result.error
            self._write(page)
            return result
        previous = self.previous.get(page.url)
        page.final_url = result.final_url if result.final_url != page.url else None
        page.etag, page.last_modified = result.etag, result.last_modified
        page.fetched_at = result.fetched_at
        if result.not_modified:
            page.links = list(previous.links) if previous is not None else []
            page.content_type, page.charset = (
                (previous.content_type, previous.charset) if previous else ("", None)
            )
            page.final_url = previous.final_url if previous is not None else None
        else:
            page.content_type, page.charset = result.content_type, result.charset
            found = fetched.found
            canonical = found.canonical if found is not None else None
            page.links = [u for u in (found.links if found else []) if self.scope.why_not(u) is None]
            for alias in (result.final_url, canonical):
                if alias is None or alias == page.url:
                    continue
                owner = self._claimed.get(alias) or (alias if alias in self.report.pages else None)
                if owner is not None and owner != page.url:
                    page.state, page.error = "duplicate", f"duplicate of {owner}"
                    self._follow(page)
                    return None
                self._claimed[alias] = page.url
        page.state = "fetched"
        self._write(page)
        self._follow(page)
        return result

    def _follow(self, page: Page) -> None:
        for link in page.links:
            self._admit(link, page.depth + 1)
        if page.state == "fetched":
            page.state = "expanded"
        self._write(page)

    def run(self) -> Generator[FetchResult, None, None]:
        """Crawl, yielding each page fetched (a failed one too: its ``error`` says why)."""
        self._client = make_client(self.fetch)
        self._resume()
        pool = ThreadPoolExecutor(max_workers=self.fetch.workers, thread_name_prefix="wikigr-crawl")
        running: dict[Future[_Fetched], tuple[Page, _Site]] = {}
        try:
            yield from self._restored
            self._restored = []
            for seed in self.options.seeds:
                self._admit(seed, 0)
            if self.options.sitemaps:
                for seed in self.options.seeds:
                    self._sitemaps(seed)
            self._tell()
            while True:
                now = time.monotonic()
                for site in self._sites.values():
                    limit = 1 if site.delay > 0 else self.options.per_host
                    while site.frontier and site.active < limit and site.next_at <= now:
                        if len(running) >= self.fetch.workers:
                            break
                        _, _, url = heapq.heappop(site.frontier)
                        page = self.report.pages[url]
                        page.claimed_at = (
                            datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
                        )
                        site.active += 1
                        self.report.requests += 1
                        running[pool.submit(self._fetch_page, page, self._request_for(page))] = (page, site)
                if not running:
                    waiting = [s.next_at for s in self._sites.values() if s.frontier]
                    if not waiting:
                        break
                    self.sleep(max(0.0, min(waiting) - time.monotonic()))
                    continue
                soonest = [s.next_at for s in self._sites.values() if s.frontier and s.active == 0]
                timeout = max(0.01, min(soonest) - time.monotonic()) if soonest else None
                finished, _ = wait(running, timeout=timeout, return_when=FIRST_COMPLETED)
                for future in finished:
                    page, site = running.pop(future)
                    site.active -= 1
                    if site.delay > 0:
                        site.next_at = time.monotonic() + site.delay
                    result = self._done(page, future.result(), site)
                    self._tell(page.url)
                    if result is not None:
                        yield result
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            client = self._client
            threading.Thread(target=_close_when_done, args=(list(running), client), daemon=True).start()
            if self._log is not None:
                with contextlib.suppress(OSError):
                    self._log.close()

    def _tell(self, detail: str = "") -> None:
        counts = self.report.counts()
        done = counts["fetched"] + counts["failed"]
        self.progress(ProgressEvent("crawl", done, done + counts["queued"], detail))


def _close_when_done(futures: list[Future[_Fetched]], client: httpx.Client | None) -> None:
    wait(futures)
    if client is not None:
        client.close()
