"""Issue 36: ``pack update`` of a crawled pack crawls again — conditional requests (a 304 keeps
the page as the store has it), a page gone (404) removed, a new page added, nothing unchanged
embedded again — and a source both listed and found by the crawl is fetched once."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.crawlsite import Site, page
from tests.httpserver import Reply, Request
from wikigr.build import BuildOptions, build_pack, update_pack
from wikigr.pack.pack import open_pack
from wikigr.sources.crawl import CrawlFile, CrawlOptions
from wikigr.sources.fetch import FetchOptions
from wikigr.validate import validate_pack

FAST = FetchOptions(timeout=20.0, retries=1, backoff_base=0.05)


class Pages:
    """Pages served with an ETag each (the hash of the body), answering 304 to a request whose
    If-None-Match holds it; counts the 304s and the bodies sent."""

    def __init__(self, site: Site) -> None:
        self.site = site
        self.bodies: dict[str, str] = {}
        self.not_modified: list[str] = []
        self.sent: list[str] = []

    def put(self, path: str, body: str | None) -> None:
        """Serve ``body`` at ``path`` (None: the page is gone, 404)."""
        if path not in self.bodies:
            self.site.route(path, lambda request, p=path: self.reply(p, request))
        self.bodies[path] = body if body is not None else ""

    def reply(self, path: str, request: Request) -> Reply:
        body = self.bodies[path]
        if not body:
            return Reply(status=404, body=b"gone", content_type="text/plain")
        tag = '"' + hashlib.sha256(body.encode()).hexdigest()[:16] + '"'
        if request.headers.get("if-none-match") == tag:
            self.not_modified.append(path)
            return Reply(status=304, content_type=None)
        self.sent.append(path)
        return Reply(body=body.encode(), headers={"ETag": tag})


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as local:
        yield local


def test_an_update_crawls_again_asking_conditionally(site: Site, wikigr_home: Path) -> None:
    pages = Pages(site)
    pages.put("/docs/index.html", page("Tea", "Notes on tea.", "green.html", "black.html", "gone.html"))
    pages.put("/docs/green.html", page("Green tea", "Sencha is steamed green tea from Japan."))
    pages.put("/docs/black.html", page("Black tea", "Assam is a malty black tea."))
    pages.put("/docs/gone.html", page("Oolong", "Oolong is partly oxidised."))
    seed = site.url("/docs/index.html")
    options = BuildOptions(graph=False, fetch=FAST, crawl=CrawlOptions((seed,)))
    built = build_pack("tea", [], options=options)
    assert {s.url for s in built.manifest.sources} == {
        site.url(f"/docs/{p}.html") for p in ("index", "green", "black", "gone")
    }

    # The site changes: a page edited, one gone, one new (linked from the edited index).
    pages.put(
        "/docs/index.html",
        page("Tea", "Notes on tea.", "green.html", "black.html", "gone.html", "white.html"),
    )
    pages.put("/docs/black.html", page("Black tea", "Assam is a malty black tea; Darjeeling is lighter."))
    pages.put("/docs/gone.html", None)
    pages.put("/docs/white.html", page("White tea", "Silver needle is a white tea of buds."))
    pages.not_modified.clear()
    pages.sent.clear()
    report = update_pack("tea", options=BuildOptions(fetch=FAST))

    url = lambda name: site.url(f"/docs/{name}.html")  # noqa: E731
    assert report.added == [url("white")]
    assert sorted(report.changed) == [url("black"), url("index")]
    assert report.removed == [url("gone")]
    assert report.unchanged == [url("green")]
    assert pages.not_modified == ["/docs/green.html"]  # asked with its ETag: not sent again
    assert sorted(pages.sent) == ["/docs/black.html", "/docs/index.html", "/docs/white.html"]
    pack = open_pack("tea")
    assert {s.url for s in pack.manifest.sources} == {url(n) for n in ("index", "green", "black", "white")}
    assert pack.manifest.crawl is not None and pack.manifest.crawl["seeds"] == [seed]
    kept = CrawlFile.load(pack.path / "crawl.json")
    assert kept.pages[url("white")].etag and url("gone") not in [
        u for u, p in kept.pages.items() if p.error is None
    ]
    listed = (pack.path / "urls.txt").read_text()
    assert url("white") in listed and url("gone") not in listed
    with pack.open_store() as store:
        texts = [r[0] for r in store.rows("MATCH (c:Chunk) RETURN c.text")]
    assert any("Silver needle" in t for t in texts) and not any("oxidised" in t for t in texts)
    assert validate_pack(pack.path).ok

    # Nothing changed since: every page is a 304, nothing is embedded, the store is kept.
    pages.not_modified.clear()
    pages.sent.clear()
    again = update_pack("tea", options=BuildOptions(fetch=FAST))
    assert (again.added, again.changed, again.removed) == ([], [], [])
    assert pages.sent == [] and len(pages.not_modified) == 4
    assert again.chunks_embedded == 0 and again.store_kept


def test_a_source_listed_and_found_by_the_crawl_is_fetched_once(site: Site, wikigr_home: Path) -> None:
    site.add("/docs/index.html", page("Tea", "Notes on tea.", "green.html"))
    site.add("/docs/green.html", page("Green tea", "Sencha is steamed green tea."))
    site.add("/extra/matcha.html", page("Matcha", "Matcha is powdered green tea."))
    seed = site.url("/docs/index.html")
    listed = [site.url("/docs/green.html"), site.url("/extra/matcha.html")]
    options = BuildOptions(graph=False, fetch=FAST, crawl=CrawlOptions((seed,)))
    built = build_pack("tea", listed, options=options)
    asked = site.asked()
    assert (
        asked["/docs/green.html"] == 1 and asked["/extra/matcha.html"] == 1 and asked["/docs/index.html"] == 1
    )
    assert sorted(s.url for s in built.manifest.sources if s.status == "ok") == sorted([seed, *listed])
    assert CrawlFile.load(built.path / "crawl.json").urls == listed
    manifest = json.loads((built.path / "manifest.json").read_text())
    assert manifest["crawl"]["seeds"] == [seed]

    update_pack("tea", options=BuildOptions(fetch=FAST))
    asked = site.asked()
    assert asked["/docs/green.html"] == 2 and asked["/extra/matcha.html"] == 2  # once per run
