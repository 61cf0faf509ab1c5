"""Issue 36: ``wikigr pack create NAME --crawl URL`` on the command line: its limits and ``--json``
report, bad input (one line, exit 2 or 1, no pack written), and Ctrl-C mid-crawl then a rerun
that fetches no page twice (a real process, a real server counting its requests)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.crawlsite import Site, page
from tests.httpserver import Reply, Request, closed_port_url
from wikigr.pack.pack import open_pack


@pytest.fixture
def site() -> Iterator[Site]:
    with Site() as local:
        yield local


def create(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    return cli(capsys, "pack", "create", "site", "--no-graph", *args)


def test_max_pages_and_the_json_report_of_what_was_skipped_and_why(
    capsys: pytest.CaptureFixture[str], site: Site, wikigr_home: Path
) -> None:
    links = [f"p{i}.html" for i in range(1, 7)]
    site.add("/docs/index.html", page("Home", "Tea notes in six parts.", *links, "../about.html"))
    for i, link in enumerate(links, 1):
        site.add(f"/docs/{link}", page(f"Part {i}", f"Part {i} of the tea notes: infusion number {i}."))

    code, out, err = create(capsys, "--crawl", site.url("/docs/index.html"), "--max-pages", "3", "--json")

    assert code == 0, err
    crawl = json.loads(out)["crawl"]
    assert (crawl["discovered"], crawl["fetched"], crawl["failed"], crawl["queued"]) == (3, 3, 0, 0)
    assert crawl["skipped_by_reason"] == {"out of scope": 1, "over --max-pages 3": 4}
    assert crawl["skipped"] == 5
    assert sorted(crawl["skipped_pages"], key=lambda p: p["url"]) == [
        {"url": site.url("/about.html"), "why": "out of scope"},
        *({"url": site.url(f"/docs/{link}"), "why": "over --max-pages 3"} for link in links[2:]),
    ]
    asked = sorted(p for p in site.asked() if p.startswith("/docs/"))
    assert asked == ["/docs/index.html", "/docs/p1.html", "/docs/p2.html"]
    assert open_pack(wikigr_home / "packs" / "site").manifest.stats.articles == 3


def test_include_widens_and_exclude_narrows_the_scope(capsys: pytest.CaptureFixture[str], site: Site) -> None:
    site.add(
        "/docs/index.html",
        page(
            "Home", "Tea notes with a shared glossary.", "drafts/wip.html", "/shared/glossary.html", "/blog/"
        ),
    )
    site.add("/docs/drafts/wip.html", page("Draft", "Not ready yet."))
    site.add("/shared/glossary.html", page("Glossary", "Tisane: an infusion of anything but tea leaves."))

    code, out, err = create(
        capsys,
        "--crawl",
        site.url("/docs/index.html"),
        "--include",
        site.url("/shared/"),
        "--exclude",
        "*/drafts/*",
        "--json",
    )

    assert code == 0, err
    skipped = {p["url"]: p["why"] for p in json.loads(out)["crawl"]["skipped_pages"]}
    assert skipped == {site.url("/docs/drafts/wip.html"): "excluded", site.url("/blog/"): "out of scope"}
    assert site.hits("/shared/glossary.html") == 1 and site.hits("/docs/drafts/wip.html") == 0


# -- bad input: one line, exit 2 (usage) or 1, no pack ----------------------------------------


@pytest.mark.parametrize(
    ("seed", "expected"),
    [
        ("ftp://example.org/docs/", "--crawl takes an http(s) or file URL"),
        ("example.org/docs/", "--crawl takes an http(s) or file URL"),
        ("http://127.0.0.1:99999/docs/", "malformed URL"),
    ],
)
def test_a_seed_that_is_not_an_http_or_file_url_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], wikigr_home: Path, seed: str, expected: str
) -> None:
    code, _, err = create(capsys, "--crawl", seed)
    assert code == 2
    assert_one_error(err, expected)
    assert not (wikigr_home / "packs").exists()


def test_an_unreachable_seed_is_one_line_that_says_why(
    capsys: pytest.CaptureFixture[str], wikigr_home: Path
) -> None:
    seed = closed_port_url("/docs/")
    code, _, err = create(capsys, "--crawl", seed, "--retries", "0")
    assert code == 1
    assert_one_error(err, f"cannot crawl {seed}: robots.txt could not be fetched (connection refused)")
    assert not (wikigr_home / "packs" / "site").exists()


def test_a_seed_robots_txt_forbids_is_one_line_and_nothing_is_fetched(
    capsys: pytest.CaptureFixture[str], site: Site, wikigr_home: Path
) -> None:
    """robots.txt forbids wikigr, then answers 503 (RFC 9309: nothing is allowed for now): one
    line each time, nothing fetched, no pack; neither answer is kept for the next run, which
    crawls once robots.txt allows it."""
    seed = site.url("/docs/index.html")
    robots = "User-agent: wikigr\nDisallow: /\n\nUser-agent: *\nAllow: /\n"
    site.add("/robots.txt", robots, content_type="text/plain")
    site.add("/docs/index.html", page("Home", "Tea notes for other robots only."))

    code, _, err = create(capsys, "--crawl", seed)

    assert code == 1
    assert_one_error(err, f"cannot crawl {seed}: disallowed by robots.txt")
    assert site.asked() == {"/robots.txt": 1}
    assert not (wikigr_home / "packs" / "site").exists()

    site.always("/robots.txt", 503)
    code, _, err = create(capsys, "--crawl", seed, "--retries", "0")
    assert code == 1
    assert_one_error(err, f"cannot crawl {seed}: robots.txt could not be fetched (HTTP 503)")
    assert site.asked() == {"/robots.txt": 2}

    site.add("/robots.txt", "User-agent: *\nDisallow: /private/\n", content_type="text/plain")
    code, _, err = create(capsys, "--crawl", seed)
    assert code == 0, err
    assert site.hits("/docs/index.html") == 1


@pytest.mark.parametrize("served", ["nothing", "an image"])
def test_a_crawl_that_finds_no_document_fails_as_a_build_whose_sources_all_failed(
    capsys: pytest.CaptureFixture[str], site: Site, wikigr_home: Path, served: str
) -> None:
    """The seed is gone (404), or is no document: the error is the one of a build from that URL
    listed (a link that is no document is skipped; a seed, asked for by name, failed)."""
    site.add("/outside.html", page("Elsewhere", "Out of the seed's folder."))
    site.add("/sitemap.xml", f"<urlset><url><loc>{site.url('/outside.html')}</loc></url></urlset>")
    if served == "an image":
        site.binary("/docs/index.html")
    seed = site.url("/docs/index.html")
    code, _, listed_err = create(capsys, "--url", seed)
    assert code == 1
    code, _, crawled_err = create(capsys, "--crawl", seed)
    assert code == 1
    why = "HTTP 404" if served == "nothing" else "unsupported content type image/png"
    assert_one_error(crawled_err, f"no document could be fetched and parsed: 1 failed (first: {seed}: {why})")
    assert crawled_err.splitlines()[-1] == listed_err.splitlines()[-1]
    assert not (wikigr_home / "packs" / "site").exists()


# -- Ctrl-C and resume ------------------------------------------------------------------------

PAGES = 24
SERVED_BEFORE_THE_GATE = 10


def test_ctrl_c_mid_crawl_then_a_rerun_fetches_no_page_twice(site: Site, wikigr_home: Path) -> None:
    """SIGINT into a real ``pack create --crawl`` once the server has served 10 of 25 pages (the
    requests after those wait at a gate, opened once the signal is sent: the crawl is mid-way
    with requests in flight), then the same command again: it ends the crawl and builds the
    pack, and the server saw every path once in both runs, robots.txt and the sitemap included
    (the first run's log keeps their answers, and what the requests in flight brought). A page
    not fetched before the interruption and gone since (404) is a failed source of the rerun."""
    links = [f"p{i:02}.html" for i in range(1, PAGES + 1)]
    site.add("/robots.txt", "User-agent: *\nAllow: /\n", content_type="text/plain")
    site.add("/docs/index.html", page("Home", "The tea notes, in many parts.", *links))
    gate = threading.Event()
    served = iter(range(1, 10_000))
    lock = threading.Lock()

    def part(request: Request) -> Reply:
        with lock:
            count = next(served)
        if count > SERVED_BEFORE_THE_GATE:
            gate.wait(600)
        n = int(request.path.removeprefix("/docs/p").removesuffix(".html"))
        return Reply(body=page(f"Part {n}", f"Part {n} of the tea notes: steep number {n}.").encode())

    for link in links:
        site.route(f"/docs/{link}", part)
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # a background job: let the child get it
        signal.signal(signal.SIGINT, signal.default_int_handler)
    seed = site.url("/docs/index.html")
    command = [sys.executable, "-m", "wikigr", "pack", "create", "book", "--crawl", seed, "--no-graph"]

    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not site.wait_for(SERVED_BEFORE_THE_GATE + 1, "/docs/p", timeout=1):
            assert proc.poll() is None, proc.communicate()
        proc.send_signal(signal.SIGINT)
    finally:
        gate.set()
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "Error: interrupted" and "Traceback" not in err, err
    first = site.asked()
    assert SERVED_BEFORE_THE_GATE < sum(n for p, n in first.items() if p.startswith("/docs/p")) < PAGES
    assert first[f"/docs/{links[-1]}"] == 0
    site.add(f"/docs/{links[-1]}", "gone", status=404, content_type="text/plain")

    done = subprocess.run(command, capture_output=True, text=True, timeout=600)

    assert done.returncode == 0, done.stderr
    asked = site.asked()
    assert max(asked.values()) == 1, asked
    assert sorted(asked) == sorted(
        ["/robots.txt", "/sitemap.xml", "/docs/index.html", *(f"/docs/{p}" for p in links)]
    )
    sources = {s.url: s.status for s in open_pack(wikigr_home / "packs" / "book").manifest.sources}
    assert sources.pop(site.url(f"/docs/{links[-1]}")) == "HTTP 404"
    assert set(sources.values()) == {"ok"} and len(sources) == PAGES
