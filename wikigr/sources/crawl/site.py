"""What a crawl knows of a site: its scope, its ``robots.txt``, its sitemaps and the links of a page.

- **Scope** (:class:`Scope`): by default a seed's scheme, host and folder (``/3/library/index.html``
  → ``/3/library/``; ``/docs/`` → ``/docs/``), as wget's ``--no-parent``; ``include`` patterns
  widen it, ``exclude`` patterns narrow it. A pattern with ``*`` or ``?`` is matched against the
  whole URL (``fnmatch``); one without is a URL prefix.
- **robots.txt** (:class:`Robots`): the standard library's parser, user agent ``wikigr``, read as
  RFC 9309 says: a 4xx answer (no file) allows everything, a 5xx or no answer forbids everything
  for now; ``Crawl-delay`` and ``Sitemap:`` lines are honoured.
- **Sitemaps** (:func:`sitemap_locations`): the sitemaps protocol's ``<urlset>`` and
  ``<sitemapindex>`` documents, gzipped or not, capped in size and count.
- **Links** (:func:`page_links`): ``<a href>`` (not ``rel=nofollow``), ``<link rel=canonical>``
  and ``<base href>`` of an HTML page, made absolute and normalised, fragments dropped; a page
  whose ``<meta name=robots>`` says ``nofollow`` gives none.
"""

from __future__ import annotations

import fnmatch
import gzip
import io
import urllib.robotparser
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from urllib.parse import urldefrag, urljoin, urlsplit, urlunsplit

from selectolax.lexbor import LexborHTMLParser

from wikigr.errors import UsageError, shown
from wikigr.sources.html_parser import cap_nesting
from wikigr.sources.urls import normalize_url, validate_url

#: The name a crawl gives itself in robots.txt groups.
ROBOTS_AGENT = "wikigr"
#: Caps on what sitemaps may make a crawl read: files (an index names others), and locations.
MAX_SITEMAPS = 50
MAX_SITEMAP_URLS = 50_000  # the protocol's own limit for one file
MAX_SITEMAP_BYTES = 50 * 1024 * 1024  # the protocol's limit, uncompressed

_SCHEMES = ("http", "https", "file")


def check_seed(seed: str) -> str:
    """``seed`` normalised; a usage error when it is not an http(s) or file URL (checked as
    ``--url`` checks one: a bad port, credentials, spaces)."""
    text = seed.strip()
    if text.partition(":")[0].lower() not in _SCHEMES:
        raise UsageError(f"--crawl takes an http(s) or file URL, not {shown(seed)!r}")
    try:
        return normalize_url(validate_url(text))
    except UsageError as exc:
        raise UsageError(f"--crawl: {exc.message}") from None


def folder_of(url: str) -> str:
    """The folder a URL is in: the URL up to the last ``/`` of its path (no query)."""
    parts = urlsplit(url)
    path = parts.path[: parts.path.rfind("/") + 1] or "/"
    return str(urlunsplit((parts.scheme, parts.netloc, path, "", "")))


def site_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL: what robots.txt, politeness and sitemaps are kept by."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@dataclass(frozen=True)
class Scope:
    """Which URLs a crawl may fetch."""

    prefixes: tuple[str, ...]
    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def of(cls, seeds: tuple[str, ...], include: tuple[str, ...], exclude: tuple[str, ...]) -> Scope:
        return cls(tuple(dict.fromkeys(folder_of(seed) for seed in seeds)), include, exclude)

    def why_not(self, url: str) -> str | None:
        """None when ``url`` is in scope, else why not: ``out of scope`` or ``excluded``."""
        if any(_matches(pattern, url) for pattern in self.exclude):
            return "excluded"
        if any(url.startswith(prefix) for prefix in self.prefixes):
            return None
        if any(_matches(pattern, url) for pattern in self.include):
            return None
        return "out of scope"


def _matches(pattern: str, url: str) -> bool:
    if "*" in pattern or "?" in pattern:  # "[" is no wildcard: an IPv6 host has brackets
        return fnmatch.fnmatchcase(url, pattern.replace("[", "[[]"))
    return url.startswith(pattern)


class Robots:
    """The robots.txt rules of one site (scheme, host and port), from the answer to its request:
    ``status`` (0: none) and ``text``, or ``error`` (why there was no answer). ``error`` is then
    why the site is not crawled: "robots.txt could not be fetched (connection refused)"."""

    def __init__(self, status: int, text: str | None, error: str | None = None) -> None:
        self._parser = urllib.robotparser.RobotFileParser()
        self.error: str | None = None
        if text is not None and 200 <= status < 300:
            self._parser.parse(text.splitlines())
        elif 400 <= status < 500:  # no robots.txt: everything is allowed (RFC 9309 §2.3.1.3)
            self._parser.parse([])
        else:  # the server erred or did not answer: nothing is allowed for now (§2.3.1.4)
            self._parser.parse(["User-agent: *", "Disallow: /"])
            self.error = f"robots.txt could not be fetched ({f'HTTP {status}' if status else error})"

    @classmethod
    def allow_all(cls) -> Robots:
        return cls(404, None)

    def refusal(self, url: str) -> str | None:
        """Why ``url`` may not be fetched (None: it may)."""
        if self._parser.can_fetch(ROBOTS_AGENT, url):
            return None
        if self.error is not None:
            return self.error
        return "disallowed by robots.txt"

    def allows(self, url: str) -> bool:
        return self._parser.can_fetch(ROBOTS_AGENT, url)

    def delay(self) -> float:
        """The ``Crawl-delay`` for wikigr, 0 when none is given."""
        value = self._parser.crawl_delay(ROBOTS_AGENT)
        try:
            return max(0.0, float(value)) if value is not None else 0.0
        except (TypeError, ValueError):
            return 0.0

    def sitemaps(self) -> list[str]:
        return list(self._parser.site_maps() or [])


def robots_text(content: bytes) -> str:
    return content[: 512 * 1024].decode("utf-8", "replace")  # Google reads the first 500 KiB


def sitemap_locations(content: bytes, base: str) -> tuple[list[str], list[str]]:
    """The page URLs and the sitemap URLs (of a sitemap index) that a sitemap lists, absolute and
    normalised; ([], []) for what is not a sitemap. A gzipped sitemap is read unzipped."""
    if content[:2] == b"\x1f\x8b":
        try:
            with gzip.GzipFile(fileobj=io.BytesIO(content)) as unzipped:
                content = unzipped.read(MAX_SITEMAP_BYTES + 1)
        except (OSError, EOFError):
            return [], []
    if len(content) > MAX_SITEMAP_BYTES:
        content = content[:MAX_SITEMAP_BYTES]
    try:  # expat expands no external entity, and bounds entity amplification (billion laughs)
        root = ET.fromstring(content)
    except ET.ParseError:
        return [], []
    pages: list[str] = []
    sitemaps: list[str] = []
    kind = root.tag.rsplit("}", 1)[-1]
    for element in root.iter():
        if element.tag.rsplit("}", 1)[-1] != "loc" or not element.text:
            continue
        try:
            url = normalize_url(urljoin(base, element.text.strip()))
        except ValueError:
            continue
        (sitemaps if kind == "sitemapindex" else pages).append(url)
        if len(pages) + len(sitemaps) >= MAX_SITEMAP_URLS:
            break
    return pages, sitemaps


@dataclass(frozen=True)
class PageLinks:
    """What a crawl follows from one page."""

    links: list[str]
    canonical: str | None = None


def page_links(html: str, url: str) -> PageLinks:
    """The links a crawl follows from the HTML page at ``url`` (its final URL)."""
    tree = LexborHTMLParser(cap_nesting(html))
    base = url
    node = tree.css_first("base[href]")
    if node is not None and (href := (node.attributes.get("href") or "").strip()):
        base = _join(url, href) or url
    canonical = None
    for node in tree.css("link[rel][href]"):
        if "canonical" in (node.attributes.get("rel") or "").lower().split():
            canonical = _join(base, node.attributes.get("href") or "")
            break
    for node in tree.css("meta[name][content]"):
        directives = (node.attributes.get("content") or "").lower().replace(",", " ").split()
        if (node.attributes.get("name") or "").lower() == "robots" and "nofollow" in directives:
            return PageLinks([], canonical)
    seen: dict[str, None] = {}
    for node in tree.css("a[href]"):
        if "nofollow" in (node.attributes.get("rel") or "").lower().split():
            continue
        link = _join(base, node.attributes.get("href") or "")
        if link is not None:
            seen[link] = None
    return PageLinks(list(seen), canonical)


def _join(base: str, href: str) -> str | None:
    href = href.strip()
    if not href or href.startswith(("#", "javascript:", "mailto:", "data:")):
        return None
    try:
        joined, _ = urldefrag(urljoin(base, href))
        if urlsplit(joined).scheme.lower() not in _SCHEMES:
            return None
        return normalize_url(joined)
    except ValueError:
        return None
