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
failing. Only document types are fetched: a URL whose extension names another type (an image, an
archive, a style sheet or a script: Scrapy's ignored extensions) is skipped unrequested; a
response of another type, or over the size cap, is skipped before its body is read. A path is followed
with at most ``query_variants`` query strings (a calendar that links to the next month forever
cannot fill the budget).

Redirects are links: a page that redirects is not followed there by its request; its target
joins the frontier at the same depth (as Scrapy schedules a redirect), where the scope,
robots.txt and what was fetched already decide (a redirect out of scope is skipped, one to a
page fetched already asks nothing more). A seed's redirect moves the seed: the target's folder
joins the scope (``http://`` to ``https://``, ``/docs/`` to ``/docs/en/latest/``).

State: with a ``folder``, every page's state (discovered, fetched, expanded, failed, duplicate,
redirected; depth, retries, error, validators, links) is appended to ``folder/log.jsonl``, and
each answer is kept in ``folder/bodies/`` (the body, then a record of the rest) by the worker
that got it, so a crawl interrupted (Ctrl-C) and run again with the same options resumes: no
page it fetched is asked again, not even those in flight at the interruption (it waits up to
:data:`GRACE` seconds for them; a second Ctrl-C does not wait). ``previous`` (the pages of the
pack being updated) makes conditional requests (``ETag``, ``Last-Modified``): a 304 yields a
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
from dataclasses import asdict, dataclass, field, replace
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
    folder_of,
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
from wikigr.sources.urls import normalize_url
from wikigr.threads import POLL

__all__ = ["Crawler"]

#: How many times a page a busy server turned away (429, 503) is tried again, later.
BUSY_RETRIES = 5
#: The longest a busy site's delay grows to, seconds.
MAX_DELAY = 60.0
#: How long an interrupted crawl waits for its requests in flight (their answers are kept).
GRACE = 15.0  # 5 s was not always enough on a busy machine: a rerun asked a page in flight again
#: Text types no format reads, skipped by their extension like the binary ones (``.css``, ``.js``).
_NOT_DOCUMENTS = frozenset({"text/css", "text/javascript", "application/javascript"})


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
    sheet, a script): such a page is skipped without a request. Other text types (``.py``) are
    asked for: servers often send them as text/plain."""
    if guess_content_type(url):
        return False
    guessed, _ = mimetypes.guess_type(urlsplit(url).path)
    if guessed is None or format_for(guessed) is not None:
        return False
    return not guessed.startswith("text/") or guessed in _NOT_DOCUMENTS


def _without_query(url: str) -> str:
    parts = urlsplit(url)
    return str(urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")))


def _skipped_after_asking(error: str) -> str | None:
    """Why a page whose request failed with ``error`` is skipped rather than failed."""
    if error.startswith("unsupported content type"):
        return "not a document type"
    if error.startswith("larger than"):
        return "too large"
    return None


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


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
        self._claimed: dict[str, str] = {}  # a canonical URL -> the page that has it
        self._passed: set[str] = set()  # every URL skipped (the report lists up to a cap)
        self._variants: dict[str, int] = {}
        self._order = 0
        self._log: IO[str] | None = None
        self._restored: list[FetchResult] = []  # answers an interrupted crawl went through
        self._recovered: list[tuple[Page, FetchResult]] = []  # answers it got and did not log
        self._client: httpx.Client | None = None
        self._logged_robots: dict[str, tuple[int, str | None, str | None]] = {}
        self._sitemaps_done: set[str] = set()

    # ---------------------------------------------------------------------------------------
    # The frontier

    def _skip(self, url: str, why: str) -> None:
        if url in self._passed or url in self.report.pages:
            return
        self._passed.add(url)
        self.report.skipped_counts[why] = self.report.skipped_counts.get(why, 0) + 1
        if len(self.report.skipped) < MAX_SKIPPED_LISTED:
            self.report.skipped[url] = why

    def _refusal(self, url: str, depth: int) -> str | None:
        """Why ``url`` found at ``depth`` is not crawled (None: it is)."""
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
        return why

    def _admit(self, url: str, depth: int) -> str | None:
        """Put ``url`` in the frontier at ``depth`` unless it is known or refused; why it was
        refused now (None: admitted, or known already)."""
        if url in self.report.pages or url in self._claimed or url in self._passed:
            return None
        why = self._refusal(url, depth)
        if why is not None:
            self._skip(url, why)
            return why
        page = Page(url, depth)
        self.report.pages[url] = page
        self._queue(page)
        self._write(page)
        return None

    def _queue(self, page: Page) -> None:
        self._order += 1
        heapq.heappush(self._site(page.url).frontier, (page.depth, self._order, page.url))

    def _drop(self, page: Page, why: str) -> None:
        """A page asked for that is skipped after all (a type that is no document...)."""
        del self.report.pages[page.url]
        self._skip(page.url, why)
        self._write_raw({"page": {**page.to_json(), "state": "skipped", "error": why}})

    # ---------------------------------------------------------------------------------------
    # Sites: robots.txt, delays, sitemaps

    def _site(self, url: str) -> _Site:
        name = site_of(url)
        site = self._sites.get(name)
        if site is None:
            robots = Robots.allow_all()
            if name.startswith(("http:", "https:")):
                robots = self._robots(name)
            delay = max(self.options.delay, robots.delay())
            # robots.txt was a request (or one of an interrupted run was, just now): wait as after one
            site = _Site(robots, delay, next_at=time.monotonic() + delay)
            self._sites[name] = site
        return site

    def _robots(self, name: str) -> Robots:
        logged = self._logged_robots.get(name)
        if logged is not None:
            return Robots(*logged)
        result = fetch_one(name + "/robots.txt", self.fetch, self._client, request=Request(raw=True))
        text = robots_text(result.content) if result.ok else None
        status = result.status if result.status else (200 if result.ok else 0)
        if 200 <= status < 500:  # a lasting answer: kept for a resumed crawl (an error: asked again)
            self._write_raw({"robots": name, "status": status, "text": text, "error": None})
        return Robots(status, text, result.error)

    def _sitemaps(self, seed: str) -> None:
        """Admit the pages the sitemaps of the seed's site list: those robots.txt names, and
        ``/sitemap.xml``; only sitemaps of that site (another's robots.txt is not read)."""
        name = site_of(seed)
        if not name.startswith(("http:", "https:")) or name in self._sitemaps_done:
            return
        self._sitemaps_done.add(name)
        site = self._site(seed)
        todo = [normalize_url(url) for url in site.robots.sitemaps()] + [name + "/sitemap.xml"]
        seen: set[str] = set()
        while todo and len(seen) < MAX_SITEMAPS:
            url = todo.pop(0)
            if url in seen or site_of(url) != name or not site.robots.allows(url):
                continue
            seen.add(url)
            wait_for = site.next_at - time.monotonic()
            if wait_for > 0:
                self.sleep(wait_for)
            result = fetch_one(url, self.fetch, self._client, request=Request(raw=True))
            site.next_at = time.monotonic() + site.delay
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

    def _save(self, url: str, result: FetchResult) -> None:
        """In a worker: keep an answer in the folder, its body first, then the record of the rest
        (written whole, so a record means its body is there)."""
        if self.folder is None:
            return
        bodies, key = self.folder / "bodies", _key(url)
        record = {k: v for k, v in asdict(result).items() if k != "content"}
        with contextlib.suppress(OSError):  # a full disk: the page is asked again on a resume
            (bodies / key).write_bytes(result.content)
            (bodies / f"{key}.part").write_text(json.dumps(record, ensure_ascii=False), encoding="utf-8")
            (bodies / f"{key}.part").replace(bodies / f"{key}.json")

    def _saved(self, url: str) -> FetchResult | None:
        """The answer kept for ``url``, if any."""
        if self.folder is None:
            return None
        bodies, key = self.folder / "bodies", _key(url)
        try:
            record = json.loads((bodies / f"{key}.json").read_text(encoding="utf-8"))
            result = FetchResult(**{**record, "content": (bodies / key).read_bytes()})
        except (OSError, ValueError, TypeError):
            return None
        return result if result.url == url else None

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
        text = log.read_text(encoding="utf-8", errors="replace") if log.is_file() else ""
        pages: dict[str, Page] = {}
        for line in text.splitlines():
            try:
                data = json.loads(line)
                if "claim" in data:
                    self._claimed[str(data["claim"])] = str(data["page"])
                elif "page" in data:
                    page = Page.from_json(data["page"])
                    pages[page.url] = page
                elif "robots" in data:
                    answer, error = data.get("text"), data.get("error")
                    if not all(v is None or isinstance(v, str) for v in (answer, error)):
                        continue
                    self._logged_robots[str(data["robots"])] = (int(data["status"]), answer, error)
                elif "sitemaps" in data:
                    self._sitemaps_done.add(str(data["sitemaps"]))
            except (ValueError, TypeError, KeyError, AttributeError):
                continue  # a line cut short by the interruption
        self._log = log.open("a", encoding="utf-8")
        if text and not text.endswith("\n"):
            self._log.write("\n")  # after a line cut short, the next one starts on its own
        for page in pages.values():
            if page.state == "skipped":
                self._skip(page.url, page.error or "skipped")
                continue
            self.report.pages[page.url] = page
            if page.state == "redirected" and page.depth == 0 and page.final_url:
                self._widen(page.final_url)
            if urlsplit(page.url).query:  # the query strings of a path it followed count
                path = _without_query(page.url)
                self._variants[path] = self._variants.get(path, 0) + 1
        for page in list(self.report.pages.values()):
            saved = self._saved(page.url) if page.state != "duplicate" else None
            if page.state == "discovered" and saved is not None:
                self._recovered.append((page, saved))
            elif page.state in ("fetched", "expanded") and saved is not None:
                self._restored.append(saved)
                found = self._links(saved)  # its links out of scope too: the report counts them
                for link in found.links if found is not None else page.links:
                    self._admit(link, page.depth + 1)
            elif page.state in ("discovered", "fetched", "expanded"):
                page.state = "discovered"
                self._queue(page)
            elif page.state == "failed" and saved is not None:
                self._restored.append(saved)  # listed as failed again
        self.report.restored = len(self._restored) + len(self._recovered)

    # ---------------------------------------------------------------------------------------
    # Fetching

    def _fetch_page(self, page: Page, request: Request) -> _Fetched:
        """In a worker: fetch the page, keep the answer, and find its links."""
        result = fetch_one(page.url, self.fetch, self._client, request=request)
        if result.status not in (429, 503):  # a busy server's answer is asked again anyway
            self._save(page.url, result)
        return _Fetched(result, self._links(result))

    @staticmethod
    def _links(result: FetchResult) -> PageLinks | None:
        """The links of a page fetched: an HTML page's (see :func:`page_links`), a text
        document's (Markdown); none of a PDF's, as wget and Scrapy follow none (and a PDF is not
        parsed twice)."""
        if not result.ok or result.not_modified or result.content_type == "application/pdf":
            return None
        url = result.final_url or result.url
        try:
            if result.content_type == "text/html":
                return page_links(decode_text(result.content, result.charset, html=True), url)
            return PageLinks(list(parse(result).links))
        except Exception:  # noqa: BLE001 - a page whose links cannot be read is still a page
            return None

    def _request_for(self, page: Page) -> Request:
        old = self.previous.get(page.url)
        validators = (old.etag, old.last_modified) if old is not None else (None, None)
        return Request(validators=validators, follow_redirects=False, retry_busy=False)

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
        if 300 <= result.status < 400 and result.final_url != page.url:
            self._redirected(page, result.final_url)
            return None
        if result.error is not None:
            # A seed is asked for as a listed URL is: not a document, it failed (a link is skipped)
            why = _skipped_after_asking(result.error) if page.depth > 0 else None
            if why is not None:
                self._drop(page, why)
                return None
            page.state, page.error = "failed", result.error
            self._write(page)
            return result
        page.etag, page.last_modified = result.etag, result.last_modified
        page.fetched_at = result.fetched_at
        found = fetched.found or PageLinks([])
        if result.not_modified:
            previous = self.previous.get(page.url)
            found = PageLinks(list(previous.links) if previous is not None else [])
            page.content_type, page.charset = (
                (previous.content_type, previous.charset) if previous else ("", None)
            )
        else:
            page.content_type, page.charset = result.content_type, result.charset
        page.links = [u for u in found.links if self.scope.why_not(u) is None]
        owner = self._owner(page, found.canonical)
        if owner is not None:
            page.state, page.error = "duplicate", f"duplicate of {owner}"
            self._follow(page, found.links)
            return None
        page.state = "fetched"
        self._write(page)
        self._follow(page, found.links)
        return result

    def _owner(self, page: Page, canonical: str | None) -> str | None:
        """The page that has ``page``'s canonical URL already (None: ``page`` has it now)."""
        if canonical is None or canonical == page.url:
            return None
        owner = self._claimed.get(canonical) or (canonical if canonical in self.report.pages else None)
        if owner is not None and owner != page.url:
            return owner
        self._claimed[canonical] = page.url
        self._write_raw({"claim": canonical, "page": page.url})
        return None

    def _redirected(self, page: Page, target: str) -> None:
        """``page`` redirects to ``target``: the target is a page of the crawl, if it may be. A
        seed's target is the seed (http to https, ``/docs/`` to ``/docs/en/latest/``): its
        folder joins the scope, and its site's sitemaps are read."""
        if page.depth == 0:
            self._widen(target)
        elif self.scope.why_not(target) is not None:
            self._drop(page, "redirect out of scope")
            return
        page.state, page.error, page.final_url = "redirected", f"redirect to {target}", target
        self._write(page)
        self._admit(target, page.depth)
        if page.depth == 0 and self.options.sitemaps:
            self._sitemaps(target)

    def _widen(self, seed: str) -> None:
        if folder_of(seed) not in self.scope.prefixes:
            self.scope = replace(self.scope, prefixes=(*self.scope.prefixes, folder_of(seed)))

    def _follow(self, page: Page, links: list[str]) -> None:
        """Admit the page's links (those out of scope are skipped, and said so)."""
        for link in links:
            self._admit(link, page.depth + 1)
        if page.state == "fetched":
            page.state = "expanded"
        self._write(page)

    def _start(self) -> None:
        """Admit the seeds and what the sitemaps list; a SourceError when no seed may be crawled."""
        refused = [(seed, why) for seed in self.options.seeds if (why := self._admit(seed, 0)) is not None]
        if refused and len(refused) == len(self.options.seeds):
            if self._log is not None and self.folder is not None:  # nothing to resume from
                self._log.close()
                self._log = None
                shutil.rmtree(self.folder, ignore_errors=True)
            seed, why = refused[0]
            raise SourceError(f"cannot crawl {seed}: {why}")
        if self.options.sitemaps:
            for seed in self.options.seeds:
                self._sitemaps(seed)

    def run(self) -> Generator[FetchResult, None, None]:
        """Crawl, yielding each page fetched (a failed one too: its ``error`` says why)."""
        self._client = make_client(self.fetch)
        pool = ThreadPoolExecutor(max_workers=self.fetch.workers, thread_name_prefix="wikigr-crawl")
        running: dict[Future[_Fetched], tuple[Page, _Site]] = {}
        try:
            self._resume()
            yield from self._restored
            self._restored = []
            for page, saved in self._recovered:
                result = self._done(page, _Fetched(saved, self._links(saved)), self._site(page.url))
                if result is not None:
                    yield result
            self._recovered = []
            self._start()
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
                        page.claimed_at = _now()
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
                timeout = max(0.01, min(soonest) - time.monotonic()) if soonest else POLL
                finished, _ = wait(running, timeout=min(timeout, POLL), return_when=FIRST_COMPLETED)
                for future in finished:
                    page, site = running.pop(future)
                    site.active -= 1
                    if site.delay > 0:
                        site.next_at = time.monotonic() + site.delay
                    result = self._done(page, future.result(), site)
                    self._tell()
                    if result is not None:
                        yield result
        except BaseException:
            # Interrupted (or closed early): the answers in flight are kept as they come, for a
            # rerun (their workers save them); a second Ctrl-C stops waiting for them.
            if running:
                with contextlib.suppress(KeyboardInterrupt):
                    wait(running, timeout=GRACE)
            raise
        finally:
            pool.shutdown(wait=False, cancel_futures=True)
            client = self._client
            threading.Thread(target=_close_when_done, args=(list(running), client), daemon=True).start()
            if self._log is not None:
                with contextlib.suppress(OSError):
                    self._log.close()

    def _tell(self) -> None:
        counts = self.report.counts()
        done = counts["fetched"] + counts["failed"]
        detail = f"fetched, {counts['queued']} queued, {counts['skipped']} skipped"
        self.progress(ProgressEvent("crawl", done, done + counts["queued"], detail))


def _close_when_done(futures: list[Future[_Fetched]], client: httpx.Client | None) -> None:
    wait(futures)
    if client is not None:
        client.close()
