"""Issue 36: ``pack create --crawl``, the crawl itself (wikigr.sources.crawl) over real HTTP.

A site served on 127.0.0.1 and a second host on 127.0.0.2 ("elsewhere"), crawled by real builds
(``graph=False`` keeps them fast): a tree of pages, a page only a sitemap names (a sitemap index
named by robots.txt, gzipped), a folder robots.txt disallows, a calendar that links to the next
month forever, redirects (within the site's folder, out of it, to the other host, into the
disallowed folder), links to the other host, types that are not documents (by extension, and by
a big response's Content-Type), a page that is gone, nofollow links and pages, a canonical link;
``Crawl-delay``; a busy server (429 with Retry-After); ``depth``; a crawl of file URLs. The
command line, the interruption and its resume are tests/test_crawl_cli.py.
"""

from __future__ import annotations

import gzip
import json
from collections.abc import Iterator
from itertools import pairwise
from pathlib import Path

import pytest

from tests.crawlsite import Site, page
from tests.httpserver import Reply, Request
from tests.sources.pdfgen import make_pdf
from wikigr.build import BuildOptions, BuildReport, build_pack
from wikigr.errors import UsageError
from wikigr.pack.pack import open_pack
from wikigr.progress import ProgressCallback, ProgressEvent
from wikigr.sources.crawl import Crawler, CrawlFile, CrawlOptions, Page
from wikigr.sources.crawl.site import Scope, check_seed
from wikigr.sources.fetch import FetchOptions

FAST = FetchOptions(timeout=20.0, retries=1, backoff_base=0.05)
BIG = 64 * 1024 * 1024  # a body far over the 10 MiB cap: read, it would be "too large"


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as local:
        yield local


@pytest.fixture
def elsewhere() -> Iterator[Site]:
    with Site("127.0.0.2") as other:
        yield other


def crawl(seed: str, on_progress: ProgressCallback | None = None, **options: object) -> BuildReport:
    crawl_options = CrawlOptions((seed,), **options)  # type: ignore[arg-type]
    build = BuildOptions(graph=False, fetch=FAST, crawl=crawl_options)
    return build_pack("site", [], options=build, on_progress=on_progress)


def in_pack(report: BuildReport) -> dict[str, str]:
    """The pack's sources (URL -> status) as its manifest records them."""
    return {s.url: s.status for s in open_pack(report.path).manifest.sources}


def huge(sent: list[int], content_type: str) -> Reply:
    """A big body of ``content_type``; ``sent`` adds up the bytes the server could send."""

    def chunks() -> Iterator[bytes]:
        block = b"x" * 65536
        for _ in range(BIG // len(block)):
            sent.append(len(block))
            yield block

    return Reply(body=chunks(), content_type=content_type, content_length=BIG)


def serve_calendar(request: Request) -> Reply:
    month = int(request.query.removeprefix("m=") or 0)
    body = page(f"Month {month}", f"Tea tastings of month {month}.", f"cal?m={month + 1}", "cal?m=1")
    return Reply(body=body.encode())


def test_a_site_is_crawled_within_its_folder_with_manners(site: Site, elsewhere: Site) -> None:
    """One crawl of the whole site: what it fetches, what it never asks for, and why."""
    other = elsewhere.base_url
    site.add(
        "/robots.txt",
        f"User-agent: *\nDisallow: /docs/private/\nSitemap: {site.base_url}/maps/index.xml\n"
        f"Sitemap: {other}/sitemap.xml\n",
        content_type="text/plain",
    )
    site.add(
        "/maps/index.xml",
        '<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<sitemap><loc>{site.base_url}/maps/pages.xml.gz</loc></sitemap></sitemapindex>",
        content_type="application/xml",
    )
    urlset = (
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
        f"<url><loc>{site.base_url}/docs/only-in-sitemap.html</loc></url>"
        f"<url><loc>{site.base_url}/outside/listed.html</loc></url>"
        f"<url><loc>{site.base_url}/docs/private/listed.html</loc></url></urlset>"
    )
    site.add("/maps/pages.xml.gz", gzip.compress(urlset.encode()), content_type="application/gzip")
    site.add(
        "/docs/index.html",
        page(
            "Tea handbook",
            "Everything about brewing tea, from kettles to cups.",
            "kettles.html",
            "kettles.html#descaling",
            "cups.html",
            "cups-print.html",
            "private/secret.html",
            "cal?m=1",
            "moved.html",
            "away.html",
            "inside.html",
            "sneaky.html",
            f"{other}/docs/elsewhere.html",
            "../outside.html",
            "picture.png",
            "bundle.zip",
            "site.css",
            "style",
            "photo",
            "gone.html",
            "huge.html",
            'nofollowed.html" rel="nofollow',
            "robots-meta.html",
        ),
    )
    site.add(
        "/docs/kettles.html",
        page("Kettles", "An electric kettle boils water quickly; descale it monthly.", "deep/steep.html"),
    )
    site.add("/docs/deep/steep.html", page("Steeping", "Green tea steeps for two minutes at 80 degrees."))
    site.add("/docs/cups.html", page("Cups", "A porcelain cup keeps the colour of the tea visible."))
    site.add(
        "/docs/cups-print.html",
        page(
            "Cups",
            "A porcelain cup keeps the colour of the tea visible.",
            head='<link rel="canonical" href="cups.html">',
        ),
    )
    site.add("/docs/only-in-sitemap.html", page("Sugar", "Rock sugar sweetens chrysanthemum tea gently."))
    site.add(
        "/docs/robots-meta.html",
        page(
            "Storage",
            "Keep leaves in a dark airtight tin.",
            "hidden-by-meta.html",
            head='<meta name="robots" content="noindex, NoFollow">',
        ),
    )
    site.route("/docs/cal", serve_calendar)
    site.redirect("/docs/moved.html", f"{other}/docs/moved.html")
    site.redirect("/docs/away.html", "/outside/away.html")
    site.redirect("/docs/inside.html", "/docs/cups.html")  # linked too: one request of cups.html
    site.redirect("/docs/sneaky.html", "/docs/private/sneaky.html")
    css: list[int] = []
    image: list[int] = []
    html: list[int] = []
    site.route("/docs/style", lambda _request: huge(css, "text/css"))
    site.route("/docs/photo", lambda _request: huge(image, "image/png"))
    site.route("/docs/huge.html", lambda _request: huge(html, "text/html"))
    for path in ("/docs/picture.png", "/docs/bundle.zip", "/docs/site.css"):
        site.binary(path)

    report = crawl(site.url("/docs/index.html"), depth=30)

    docs = site.base_url + "/docs/"
    pages = in_pack(report)
    assert {url for url, status in pages.items() if status == "ok"} == {
        docs + "index.html",
        docs + "kettles.html",
        docs + "deep/steep.html",
        docs + "cups.html",
        docs + "only-in-sitemap.html",
        docs + "robots-meta.html",
        *(docs + f"cal?m={m}" for m in range(1, 11)),
    }
    assert report.failed == [(docs + "gone.html", "HTTP 404")]
    asked = site.asked()
    never = [
        "/docs/private/secret.html",  # robots.txt
        "/docs/private/listed.html",  # robots.txt, though a sitemap lists it
        "/docs/private/sneaky.html",  # robots.txt, though a redirect leads there
        "/docs/nofollowed.html",  # rel=nofollow
        "/docs/hidden-by-meta.html",  # <meta name=robots content=nofollow>
        "/outside.html",  # out of the seed's folder
        "/outside/listed.html",
        "/outside/away.html",  # a redirect out of the folder is not followed
        "/docs/picture.png",  # not a document, by its extension
        "/docs/bundle.zip",
        "/docs/site.css",
    ]
    assert [path for path in never if asked[path]] == []
    assert elsewhere.asked() == {}  # nothing on the other host: links, a redirect, a sitemap
    assert max(asked.values()) == 1, asked  # each page once: the one a redirect leads to too
    assert asked["/docs/cups-print.html"] == 1  # fetched to read its canonical link: one page
    assert asked["/docs/style"] == asked["/docs/photo"] == asked["/docs/huge.html"] == 1
    # Not a document by its Content-Type, or too large by its Content-Length: dropped before the
    # body (read, the first two would be too large, not "not a document type").
    assert max(sum(css), sum(image), sum(html)) < 16 * 1024 * 1024
    crawled = report.crawl
    assert crawled is not None
    skipped = crawled.skipped
    assert skipped[docs + "style"] == skipped[docs + "photo"] == "not a document type"
    assert skipped[docs + "huge.html"] == "too large"
    assert skipped[docs + "picture.png"] == skipped[docs + "site.css"] == "not a document type"
    assert skipped[docs + "private/secret.html"] == "disallowed by robots.txt"
    assert skipped[docs + "private/sneaky.html"] == "disallowed by robots.txt"
    assert (
        skipped[f"{other}/docs/elsewhere.html"] == skipped[site.base_url + "/outside.html"] == "out of scope"
    )
    assert skipped[docs + "moved.html"] == skipped[docs + "away.html"] == "redirect out of scope"
    assert skipped[docs + "cal?m=11"] == "too many query strings on one path"
    assert docs + "nofollowed.html" not in skipped and docs + "hidden-by-meta.html" not in skipped
    assert crawled.pages[docs + "cups-print.html"].state == "duplicate"
    assert crawled.pages[docs + "inside.html"].state == "redirected"
    assert crawled.pages[docs + "deep/steep.html"].depth == 2

    # The pack keeps the crawl: its options in the manifest, its pages in crawl.json, urls.txt.
    manifest = json.loads((report.path / "manifest.json").read_text())
    assert manifest["crawl"]["seeds"] == [docs + "index.html"] and manifest["crawl"]["depth"] == 30
    kept = CrawlFile.load(report.path / "crawl.json")
    assert kept.pages[docs + "kettles.html"].links == [docs + "deep/steep.html"]
    assert kept.pages[docs + "gone.html"].error == "HTTP 404"
    listed = (report.path / "urls.txt").read_text().splitlines()
    assert listed[0].startswith("# crawled from " + docs + "index.html")
    documents = [u for u, status in pages.items() if status == "ok"]  # not the page gone (404)
    assert sorted(listed[1:]) == sorted(documents), (listed, pages)


def test_depth_bounds_the_links_followed(site: Site) -> None:
    site.add("/docs/", page("Home", "The home of the tea notes.", "one.html"))
    site.add("/docs/one.html", page("One", "Oolong is rolled and partly oxidised.", "two.html"))
    site.add("/docs/two.html", page("Two", "Pu-erh is aged for years in cakes."))

    events: list[ProgressEvent] = []

    report = crawl(site.url("/docs/"), depth=1, on_progress=events.append)

    assert sorted(in_pack(report)) == [site.url("/docs/"), site.url("/docs/one.html")]
    assert report.crawl is not None
    assert report.crawl.skipped == {site.url("/docs/two.html"): "deeper than --depth 1"}
    assert site.hits("/docs/two.html") == 0
    told = [event for event in events if event.stage == "crawl"]
    assert told[-1] == ProgressEvent("crawl", 2, 2, "fetched, 0 queued, 1 skipped")


def test_crawl_delay_spaces_every_request_by_a_second(site: Site) -> None:
    """``Crawl-delay: 1``: the server never sees two requests within a second, robots.txt and
    the sitemap included."""
    site.add("/robots.txt", "User-agent: *\nCrawl-delay: 1\n", content_type="text/plain")
    site.add("/docs/index.html", page("Home", "Tea notes, slowly served.", "a.html", "b.html"))
    site.add("/docs/a.html", page("A", "Assam is a strong black tea."))
    site.add("/docs/b.html", page("B", "Bancha is an everyday green tea."))

    report = crawl(site.url("/docs/index.html"))

    assert len(in_pack(report)) == 3
    times = [when for when, _ in site.arrivals]
    assert len(times) == 5, site.arrivals  # robots.txt, sitemap.xml (404), three pages
    assert min(b - a for a, b in pairwise(times)) >= 1.0, site.arrivals


def test_a_busy_server_slows_the_crawl_and_the_page_is_fetched_later(site: Site) -> None:
    """429 with Retry-After: the page is asked again after that long, and kept, not failed."""
    site.add("/docs/index.html", page("Home", "Tea notes from a busy server.", "busy.html"))
    site.flaky(
        "/docs/busy.html",
        1,
        status=429,
        retry_after="1",
        then=Reply(body=page("Busy", "Matcha is whisked, not steeped.").encode()),
    )

    report = crawl(site.url("/docs/index.html"))

    assert in_pack(report)[site.url("/docs/busy.html")] == "ok" and report.failed == []
    asked = [when for when, path in site.arrivals if path == "/docs/busy.html"]
    assert len(asked) == 2 and asked[1] - asked[0] >= 1.0
    assert report.crawl is not None and report.crawl.pages[site.url("/docs/busy.html")].retries == 1


def test_a_seed_that_redirects_moves_the_scope_to_its_target(site: Site, elsewhere: Site) -> None:
    """A seed redirected elsewhere (http to https, a docs host's /en/latest/): the target's
    folder is the crawl's, as if it had been the seed."""
    site.redirect("/docs/", f"{elsewhere.base_url}/manual/index.html", status=301)
    elsewhere.add(
        "/manual/index.html", page("Manual", "The tea manual starts here.", "part.html", "/blog.html")
    )
    elsewhere.add("/manual/part.html", page("Part", "Water at 95 degrees suits black tea."))

    report = crawl(site.url("/docs/"))

    assert sorted(in_pack(report)) == [
        elsewhere.url("/manual/index.html"),
        elsewhere.url("/manual/part.html"),
    ]
    assert report.crawl is not None and report.crawl.skipped == {elsewhere.url("/blog.html"): "out of scope"}
    assert report.crawl.pages[site.url("/docs/")].state == "redirected"
    assert sorted(elsewhere.asked()) == [
        "/manual/index.html",
        "/manual/part.html",
        "/robots.txt",
        "/sitemap.xml",
    ]


def test_a_crawl_closed_early_resumes_from_its_folder(site: Site, tmp_path: Path) -> None:
    """A crawl stopped after three pages (the generator closed, as an interruption closes it)
    and run again with the same folder: no page is asked twice, the answers in flight at the
    stop included, and the calendar's ten query strings are ten over both runs, not ten more."""
    site.route("/docs/cal", serve_calendar)
    options = CrawlOptions((site.url("/docs/cal?m=1"),), depth=50)
    folder = tmp_path / "crawl"

    first = Crawler(options, FAST, folder=folder).run()
    before = [next(first).url for _ in range(3)]
    first.close()
    second = Crawler(options, FAST, folder=folder)
    after = [result.url for result in second.run()]

    assert after[:3] == before  # the pages of the first run come first, from the folder
    assert sorted(after) == sorted(site.url(f"/docs/cal?m={m}") for m in range(1, 11))
    assert sorted(site.asked()) == sorted(
        ["/robots.txt", "/sitemap.xml", *(f"/docs/cal?m={m}" for m in range(1, 11))]
    )
    assert max(site.asked().values()) == 1, site.asked()
    assert second.report.restored >= 3  # what the first run got, and had in flight at its stop
    assert second.report.requests == 10 - second.report.restored


def test_a_crawl_run_again_on_its_folder_asks_nothing_and_reports_the_same(
    site: Site, tmp_path: Path
) -> None:
    site.add("/docs/index.html", page("Home", "Tea notes.", "a.html", "../about.html", "logo.png"))
    site.add("/docs/a.html", page("A", "Assam is malty.", "index.html", "/blog/"))
    options = CrawlOptions((site.url("/docs/index.html"),))
    first = Crawler(options, FAST, folder=tmp_path / "crawl")
    got = [result.url for result in first.run()]
    asked = site.asked()

    again = Crawler(options, FAST, folder=tmp_path / "crawl")

    assert [result.url for result in again.run()] == got
    assert site.asked() == asked and again.report.requests == 0 and again.report.restored == 2
    assert again.report.skipped == first.report.skipped and len(first.report.skipped) == 3
    assert again.report.counts() == {**first.report.counts(), "requests": 0, "restored": 2}


def test_a_crawl_with_the_pages_of_a_previous_one_asks_conditionally(site: Site) -> None:
    """What ``pack update`` gives the crawler: the pages it kept. A page whose validators still
    hold is a 304 (no body), yielded as not modified, and the links it had are followed."""

    def index(request: Request) -> Reply:
        if request.headers.get("if-none-match") == '"v1"':
            return Reply(status=304, content_type=None)
        return Reply(body=page("Home", "Tea notes.", "new.html").encode(), headers={"ETag": '"v2"'})

    def dated(request: Request) -> Reply:
        if request.headers.get("if-modified-since") == "Sat, 01 Jun 2024 10:00:00 GMT":
            return Reply(status=304, content_type=None)
        return Reply(body=page("Old", "Old notes.").encode())

    site.route("/docs/index.html", index)
    site.route("/docs/old.html", dated)
    site.add("/docs/new.html", page("New", "Genmaicha has roasted rice in it."))
    seed = site.url("/docs/index.html")
    previous = {
        seed: Page(seed, 0, etag='"v1"', content_type="text/html", links=[site.url("/docs/old.html")]),
        site.url("/docs/old.html"): Page(
            site.url("/docs/old.html"), 1, last_modified="Sat, 01 Jun 2024 10:00:00 GMT"
        ),
    }

    crawler = Crawler(CrawlOptions((seed,)), FAST, previous=previous)
    results = {result.url: result for result in crawler.run()}

    assert sorted(results) == [seed, site.url("/docs/old.html")]
    assert all(r.not_modified and r.status == 304 and r.content == b"" for r in results.values())
    assert results[seed].etag == '"v1"' and site.hits("/docs/new.html") == 0
    assert crawler.report.pages[seed].links == [site.url("/docs/old.html")]


def test_a_crawl_of_file_urls_stays_in_its_folder(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    (docs / "sub").mkdir(parents=True)
    (docs / "index.html").write_text(
        page("Home", "Local tea notes.", "sub/a.html", "../secret.html", "b.md", "guide.pdf")
    )
    (docs / "sub" / "a.html").write_text(page("A", "Assam is malty."))
    (docs / "b.md").write_text("# B\n\nBancha is roasted into hojicha. [A](sub/a.html) [C](c.md)\n")
    (docs / "c.md").write_text("# C\n\nCeylon is bright and brisk.\n")
    (docs / "guide.pdf").write_bytes(
        make_pdf([["A guide to brewing oolong in a gaiwan."]], links={0: (docs / "from-pdf.md").as_uri()})
    )
    (docs / "from-pdf.md").write_text("# Only linked from a PDF\n\nA PDF's links are not followed.\n")
    (tmp_path / "secret.html").write_text(page("Secret", "Not part of the docs."))

    report = crawl((docs / "index.html").as_uri())

    found = ("index.html", "sub/a.html", "b.md", "c.md", "guide.pdf")  # not from-pdf.md
    assert sorted(in_pack(report)) == sorted((docs / name).as_uri() for name in found)
    assert report.crawl is not None
    assert report.crawl.skipped == {(tmp_path / "secret.html").as_uri(): "out of scope"}


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        ("ftp://example.org/docs/", "--crawl takes an http(s) or file URL, not 'ftp://example.org/docs/'"),
        ("docs/index.html", "--crawl takes an http(s) or file URL, not 'docs/index.html'"),
        ("http:///docs/", "--crawl: URL has no host: 'http:///docs/'"),
        ("http://[::1/docs/", "--crawl: malformed URL"),
        ("http://example.org:99999/", "--crawl: malformed URL"),
        ("http://exa mple.org/", "--crawl: URL contains whitespace"),
        ("http://me:secret@example.org/", "--crawl: URL with credentials is not supported"),
    ],
)
def test_a_seed_that_is_not_an_http_or_file_url_is_a_usage_error(seed: str, expected: str) -> None:
    with pytest.raises(UsageError) as caught:
        check_seed(seed)
    assert caught.value.message.startswith(expected), caught.value.message


def test_seeds_are_normalised() -> None:
    assert check_seed(" HTTP://Example.ORG:80/a/./b/../c.html#top ") == "http://example.org/a/c.html"


def test_scope_is_the_seed_folder_widened_by_include_and_narrowed_by_exclude() -> None:
    """A pattern with * or ? is matched against the whole URL (brackets are literal: an IPv6
    host); one without is a prefix."""
    scope = Scope.of(
        ("http://[::1]:8000/docs/index.html", "https://example.org/guide/"),
        include=("http://[::1]:8000/shared/*.html", "https://example.org/api/"),
        exclude=("*/drafts/*", "https://example.org/guide/old"),
    )
    assert scope.why_not("http://[::1]:8000/docs/a/b.html") is None
    assert scope.why_not("http://[::1]:8000/shared/glossary.html") is None
    assert scope.why_not("http://[::1]:8000/shared/logo.png") == "out of scope"
    assert scope.why_not("http://[::1]:8000/index.html") == "out of scope"
    assert scope.why_not("https://example.org/api/v1.html") is None
    assert scope.why_not("http://example.org/guide/") == "out of scope"  # another scheme
    assert scope.why_not("http://[::1]:8000/docs/drafts/wip.html") == "excluded"
    assert scope.why_not("https://example.org/guide/older.html") == "excluded"
