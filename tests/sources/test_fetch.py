from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

import httpx
import pytest

from tests.httpserver import LocalServer, Reply, Request, closed_port_url
from tests.sources.pdfgen import make_pdf
from wikigr.documents import FetchResult
from wikigr.errors import UsageError
from wikigr.sources.fetch import FetchOptions, _describe_connect_error, default_user_agent, fetch_all

KIB = 1024


def fetch_one(url: str, options: FetchOptions) -> FetchResult:
    (result,) = fetch_all([url], options)
    return result


# -- success ---------------------------------------------------------------------------------


def test_fetches_a_page_with_its_metadata(server: LocalServer, fast: FetchOptions) -> None:
    url = server.add("/page.html", "<h1>Hello</h1>", content_type="text/html; charset=ISO-8859-1")
    result = fetch_one(url, fast)
    assert result.ok, result.error
    assert result.url == url
    assert result.final_url == url
    assert result.content == b"<h1>Hello</h1>"
    assert result.content_type == "text/html"
    assert result.charset == "ISO-8859-1"
    fetched = datetime.fromisoformat(result.fetched_at.replace("Z", "+00:00"))
    assert fetched.tzinfo is not None and fetched.utcoffset() == UTC.utcoffset(None)
    assert abs((datetime.now(UTC) - fetched).total_seconds()) < 60
    (request,) = server.requests
    assert request.headers["user-agent"] == default_user_agent()
    assert default_user_agent().startswith("wikigr/")
    assert default_user_agent().endswith("(+https://github.com/wikigr/wikigr)")


def test_results_in_input_order_with_progress_per_url(server: LocalServer, fast: FetchOptions) -> None:
    def delayed(i: int) -> Callable[[Request], Reply]:
        # Earlier URLs answer later, so completion order differs from input order.
        return lambda _request: Reply(body=f"<p>page {i}</p>".encode(), delay=0.05 * (5 - i))

    urls = [server.route(f"/p{i}", delayed(i)) for i in range(6)]
    urls.insert(3, server.url("/missing"))
    seen: list[str] = []
    results = fetch_all(urls, fast, on_progress=lambda r: seen.append(r.url))
    assert [r.url for r in results] == urls
    assert sorted(seen) == sorted(urls)
    assert seen != urls  # progress reports in completion order
    assert results[3].error == "HTTP 404"
    assert [r.content for r in results if r.ok] == [f"<p>page {i}</p>".encode() for i in range(6)]


def test_concurrency_is_bounded_by_workers(server: LocalServer, fast: FetchOptions) -> None:
    active = 0
    peak = 0
    lock = threading.Lock()

    def handler(_request: Request) -> Reply:
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.15)
        with lock:
            active -= 1
        return Reply(body=b"<p>ok</p>")

    server.route("/busy", handler)
    urls = [server.url(f"/busy?n={i}") for i in range(6)]
    results = fetch_all(urls, replace(fast, workers=2))
    assert all(r.ok for r in results)
    assert peak == 2


def test_empty_list() -> None:
    assert fetch_all([], FetchOptions()) == []


def test_fetch_all_with_pdf_served_as_octet_stream(server: LocalServer, fast: FetchOptions) -> None:
    pdf = make_pdf([["Hello PDF"]])
    url = server.add("/paper.pdf", pdf, content_type="application/octet-stream")
    result = fetch_one(url, fast)
    assert result.ok, result.error
    assert result.content_type == "application/pdf"
    assert result.content == pdf


def test_markdown_served_as_text_plain_is_markdown(server: LocalServer, fast: FetchOptions) -> None:
    url = server.add("/README.md", "# Title\n", content_type="text/plain; charset=utf-8")
    result = fetch_one(url, fast)
    assert (result.content_type, result.charset) == ("text/markdown", "utf-8")
    url = server.add("/notes", "# Title\n", content_type="text/x-markdown")
    assert fetch_one(url, fast).content_type == "text/markdown"


def test_missing_content_type_is_guessed(server: LocalServer, fast: FetchOptions) -> None:
    by_extension = server.add("/guide.md", "# Guide\n", content_type=None)
    sniffed_html = server.add("/page", "<!DOCTYPE html><html><p>x</p></html>", content_type=None)
    sniffed_text = server.add("/notes", "just some words", content_type=None)
    results = fetch_all([by_extension, sniffed_html, sniffed_text], fast)
    assert [r.content_type for r in results] == ["text/markdown", "text/html", "text/plain"]


# -- HTTP failures ---------------------------------------------------------------------------


def test_404_is_not_retried(server: LocalServer, fast: FetchOptions) -> None:
    url = server.add("/gone", "no", status=404)
    result = fetch_one(url, fast)
    assert result.error == "HTTP 404"
    assert not result.ok
    assert result.content == b""
    assert server.hits("/gone") == 1


def test_500_is_retried_then_reported(server: LocalServer, fast: FetchOptions) -> None:
    url = server.always("/broken", 500)
    result = fetch_one(url, replace(fast, retries=3))
    assert result.error == "HTTP 500"
    assert server.hits("/broken") == 4  # the first try and 3 retries


def test_zero_retries_means_one_attempt(server: LocalServer, fast: FetchOptions) -> None:
    url = server.always("/broken", 503)
    assert fetch_one(url, replace(fast, retries=0)).error == "HTTP 503"
    assert server.hits("/broken") == 1


def test_429_then_ok(server: LocalServer, fast: FetchOptions) -> None:
    url = server.flaky("/busy", 2, status=429, retry_after="0")
    result = fetch_one(url, replace(fast, retries=3))
    assert result.ok, result.error
    assert result.content == b"<p>finally</p>"
    assert server.hits("/busy") == 3


def test_retry_after_is_capped(server: LocalServer, fast: FetchOptions) -> None:
    url = server.flaky("/busy", 1, status=503, retry_after="120")
    started = time.monotonic()
    result = fetch_one(url, replace(fast, retries=1, retry_after_cap=0.1))
    assert result.ok, result.error
    assert time.monotonic() - started < 60  # not the 120 s asked for


def test_backoff_is_exponential(server: LocalServer, fast: FetchOptions) -> None:
    url = server.always("/broken", 500)
    started = time.monotonic()
    fetch_one(url, replace(fast, retries=3, backoff_base=0.05))
    elapsed = time.monotonic() - started
    assert elapsed >= 0.05 + 0.1 + 0.2  # waits of 0.05, 0.1 and 0.2 s
    stamps = [r for r in server.requests if r.path == "/broken"]
    assert len(stamps) == 4


def test_timeout(server: LocalServer, fast: FetchOptions) -> None:
    url = server.slow("/slow", delay=60)
    started = time.monotonic()
    result = fetch_one(url, replace(fast, timeout=0.3, retries=1))
    assert result.error == "timed out after 0.3s"
    assert server.hits("/slow") == 2  # timeouts are retried
    assert time.monotonic() - started < 30  # not twice the server's 60 s


def test_huge_body_with_content_length_is_refused_up_front(server: LocalServer, fast: FetchOptions) -> None:
    url = server.huge("/big", 50 * 1024 * 1024, content_length=True)
    started = time.monotonic()
    result = fetch_one(url, replace(fast, max_bytes=64 * KIB))
    assert result.error == "larger than 64 KiB cap"
    assert server.hits("/big") == 1
    assert time.monotonic() - started < 30


def test_huge_body_without_content_length_stops_at_the_cap(server: LocalServer, fast: FetchOptions) -> None:
    url = server.huge("/stream", 50 * 1024 * 1024, content_length=False)
    started = time.monotonic()
    result = fetch_one(url, replace(fast, max_bytes=64 * KIB))
    assert result.error == "larger than 64 KiB cap"
    assert result.content == b""
    assert time.monotonic() - started < 30


def test_body_exactly_at_the_cap_is_fine(server: LocalServer, fast: FetchOptions) -> None:
    exact = server.huge("/exact", 64 * KIB, content_length=False)
    over = server.huge("/over", 64 * KIB + 1, content_length=False)
    ok, too_big = fetch_all([exact, over], replace(fast, max_bytes=64 * KIB))
    assert ok.ok and len(ok.content) == 64 * KIB
    assert too_big.error == "larger than 64 KiB cap"


def test_default_cap_is_reported_in_mib() -> None:
    assert FetchOptions().max_bytes == 10 * 1024 * 1024


def test_redirects_are_followed(server: LocalServer, fast: FetchOptions) -> None:
    server.add("/new/page.html", "<p>moved</p>")
    url = server.redirect("/old", "/new/page.html", status=301)
    server.redirect("/relative", "page.html#frag")
    server.route("/new/relative", lambda _r: Reply(status=307, headers={"Location": "page.html"}))
    moved, relative = fetch_all([url, server.url("/new/relative")], fast)
    assert moved.ok and moved.content == b"<p>moved</p>"
    assert moved.url == url
    assert moved.final_url == server.url("/new/page.html")
    assert relative.final_url == server.url("/new/page.html")


def test_redirect_loop(server: LocalServer, fast: FetchOptions) -> None:
    url = server.redirect_loop("/a", "/b")
    result = fetch_one(url, fast)
    assert result.error == "redirect loop"
    assert server.hits("/a") == 1 and server.hits("/b") == 1


def test_too_many_redirects(server: LocalServer, fast: FetchOptions) -> None:
    server.add("/end", "<p>end</p>")
    long_chain = server.redirect_chain("/long", 4, "/end")
    short_chain = server.redirect_chain("/short", 3, "/end")
    too_long, fine = fetch_all([long_chain, short_chain], replace(fast, max_redirects=3))
    assert too_long.error == "too many redirects"
    assert fine.ok and fine.final_url == server.url("/end")


@pytest.mark.parametrize(
    ("path", "content_type"),
    [
        ("/blob", "application/octet-stream"),
        ("/logo.png", "image/png"),
        ("/archive.zip", "application/zip"),
        ("/page.html", "image/jpeg"),  # the declared type wins over the extension
    ],
)
def test_binary_content_types_are_rejected(
    server: LocalServer, fast: FetchOptions, path: str, content_type: str
) -> None:
    url = server.binary(path, content_type=content_type)
    result = fetch_one(url, fast)
    assert result.error == f"unsupported content type {content_type}"
    assert server.hits(path) == 1


def test_undeclared_binary_is_rejected(server: LocalServer, fast: FetchOptions) -> None:
    url = server.add("/data", b"\x00\x01\x02\x03binary\x00", content_type=None)
    assert (fetch_one(url, fast).error or "").startswith("unsupported content type")


def test_connection_refused(fast: FetchOptions) -> None:
    url = closed_port_url("/x")
    started = time.monotonic()
    result = fetch_one(url, replace(fast, retries=1))
    assert result.error == "connection refused"
    assert result.final_url == url
    assert time.monotonic() - started < 30


def test_name_resolution_failures_are_named() -> None:
    # Resolving a real name would leave the machine; build the exception httpx raises instead.
    try:
        try:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        except socket.gaierror as inner:
            raise httpx.ConnectError("[Errno -2] Name or service not known") from inner
    except httpx.ConnectError as exc:
        assert _describe_connect_error(exc) == ("name not resolved", False)


def test_unsupported_scheme_does_not_raise(fast: FetchOptions) -> None:
    result = fetch_one("ftp://example.org/file", fast)
    assert result.error == "unsupported URL scheme ftp"


# -- files -----------------------------------------------------------------------------------


def test_file_urls_read_from_disk(tmp_path: Path, fast: FetchOptions) -> None:
    (tmp_path / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (tmp_path / "page.HTML").write_bytes(b"<p>x</p>")
    (tmp_path / "paper.pdf").write_bytes(make_pdf([["x"]]))
    (tmp_path / "README").write_text("plain words\n", encoding="utf-8")
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    urls = [
        (tmp_path / name).as_uri()
        for name in ["guide.md", "page.HTML", "paper.pdf", "README", "photo.png", "missing.md"]
    ]
    results = fetch_all(urls, fast)
    assert [r.content_type for r in results[:4]] == [
        "text/markdown",
        "text/html",
        "application/pdf",
        "text/plain",
    ]
    assert results[0].content == b"# Guide\n"
    assert results[0].charset is None
    assert results[0].final_url == urls[0]
    assert results[4].error == "unsupported content type image/png"
    assert results[5].error == "file not found"


def test_file_size_cap_and_directory(tmp_path: Path, fast: FetchOptions) -> None:
    (tmp_path / "big.txt").write_bytes(b"x" * (2 * KIB + 1))
    (tmp_path / "dir").mkdir()
    big, folder = fetch_all(
        [(tmp_path / "big.txt").as_uri(), (tmp_path / "dir").as_uri()], replace(fast, max_bytes=2 * KIB)
    )
    assert big.error == "larger than 2 KiB cap"
    assert folder.error == "is a directory"


def test_serves_a_directory_tree(tmp_path: Path, fast: FetchOptions) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.html").write_text("<p>home</p>", encoding="utf-8")
    (tmp_path / "docs" / "notes.md").write_text("# Notes\n", encoding="utf-8")
    with LocalServer(root=tmp_path) as local:
        home, notes, missing, escape = fetch_all(
            [local.url("/docs/"), local.url("/docs/notes.md"), local.url("/nope.md"), local.url("/../x")],
            fast,
        )
    assert home.content == b"<p>home</p>" and home.content_type == "text/html"
    assert notes.content_type == "text/markdown"
    assert missing.error == "HTTP 404"
    assert escape.error in ("HTTP 403", "HTTP 404")


def test_a_broken_route_handler_is_a_visible_500(server: LocalServer, fast: FetchOptions) -> None:
    def broken(_request: Request) -> Reply:
        raise RuntimeError("bug in the test handler")

    url = server.route("/bug", broken)
    assert fetch_one(url, replace(fast, retries=0)).error == "HTTP 500"
    assert "bug in the test handler" in server.errors[0]


@pytest.mark.parametrize(
    "bad",
    [{"workers": 0}, {"timeout": 0}, {"max_bytes": 0}, {"retries": -1}, {"max_redirects": -1}],
)
def test_bad_options_are_usage_errors(bad: dict[str, int]) -> None:
    with pytest.raises(UsageError) as info:
        FetchOptions(**bad)  # type: ignore[arg-type]
    assert info.value.exit_code == 2
