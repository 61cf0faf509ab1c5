"""Packs built, updated and removed through ``wikigr serve``'s API (wikigr/serve/builds.py), and the
write safety of the guard (wikigr/serve/guard.py): the real uvicorn server on a loopback port, a
real site on another (tests/httpserver.py), httpx, the real build."""

from __future__ import annotations

import json
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.crawlsite import page
from tests.httpserver import LocalServer, Reply, Request
from tests.test_serve import QUESTION, running
from wikigr.pack.transaction import pack_lock
from wikigr.serve.app import create_app
from wikigr.serve.guard import READ_ONLY, same_origin

PAGES = {
    "/docs/sockets.html": page(
        "Sockets guide",
        "A socket timeout is set with settimeout(seconds); a blocking call then raises after it.",
        "/docs/files.html",
    ),
    "/docs/files.html": page(
        "Reading files",
        "Open a file with open(path) and read it line by line in a for loop.",
        "/docs/sockets.html",
    ),
}


@pytest.fixture
def site() -> Iterator[LocalServer]:
    with LocalServer() as served:
        for path, body in PAGES.items():
            served.add(path, body)
        yield served


@pytest.fixture
def url(wikigr_home: Path) -> Iterator[str]:
    """A server of the packs home (empty at first)."""
    with running(create_app([])) as served:
        yield served


def _error(response: httpx.Response, status: int) -> str:
    assert response.status_code == status, response.text
    data = response.json()
    assert set(data) == {"error"} and "\n" not in data["error"] and "Traceback" not in data["error"]
    return str(data["error"])


def follow(url: str, job: str) -> list[tuple[str, dict[str, Any]]]:
    """A job's events, from the first until it ends (its SSE stream)."""
    events: list[tuple[str, dict[str, Any]]] = []
    with httpx.stream("GET", f"{url}/api/v1/jobs/{job}/events", timeout=600) as response:
        assert response.status_code == 200
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: "):
                events.append((name, json.loads(line[6:])))
    return events


def wait_for_event(url: str, job: str, wanted: Any) -> None:
    """Read the job's events until ``wanted(event, data)`` holds."""
    with httpx.stream("GET", f"{url}/api/v1/jobs/{job}/events", timeout=600) as response:
        name = ""
        for line in response.iter_lines():
            if line.startswith("event: "):
                name = line[7:]
            elif line.startswith("data: ") and wanted(name, json.loads(line[6:])):
                return
    raise AssertionError(f"the job ended before the event awaited: {follow(url, job)[-1]}")


def build(url: str, **body: Any) -> httpx.Response:
    return httpx.post(f"{url}/api/v1/builds", json=body, timeout=600)


def leftovers(home: Path) -> list[str]:
    """What the packs home holds besides packs: staging folders, locks."""
    packs = home / "packs"
    return sorted(p.name for p in packs.iterdir() if p.name.startswith(".")) if packs.is_dir() else []


def blocking(site: LocalServer, path: str, body: str, hits: int = 1) -> threading.Event:
    """``path`` answers ``body``, its ``hits``-th request only once the event returned is set."""
    release = threading.Event()

    def handler(request: Request) -> Reply:
        if request.hit >= hits:
            release.wait(600)
        return Reply(body=body.encode())

    site.route(path, handler)
    return release


# -- build, follow, ask, update, remove ------------------------------------------------------------


def test_a_pack_built_from_urls_is_served_updated_and_removed(
    url: str, site: LocalServer, wikigr_home: Path
) -> None:
    urls = [site.url(p) for p in PAGES]
    started = build(url, name="guide", urls="\n".join(["# the two pages", *urls]), graph=False)
    assert started.status_code == 202, started.text
    job = started.json()
    assert (job["kind"], job["key"], job["state"]) == ("build", "guide", "running")
    events = follow(url, job["id"])
    assert events[-1][0] == "done", events[-1]
    stages = [data["stage"] for name, data in events if name == "progress"]
    assert {"fetch", "embed", "write"} <= set(stages)
    fetched = [d for n, d in events if n == "progress" and d["stage"] == "fetch" and d["done"] == d["total"]]
    assert fetched and fetched[-1]["total"] == 2
    assert events[-1][1]["pack"] == "guide" and events[-1][1]["articles"] == 2

    names = [row["name"] for row in httpx.get(f"{url}/api/v1/packs").json()["packs"]]
    assert names == ["guide"]
    answer = httpx.post(f"{url}/api/v1/query", json={"pack": "guide", "question": QUESTION}, timeout=600)
    assert answer.json()["sources"][0]["title"] == "Sockets guide"
    assert leftovers(wikigr_home) == []

    again = build(url, name="guide", urls=urls)  # a pack of that name exists: not replaced unasked
    assert "exists" in _error(again, 409)

    updated = httpx.post(f"{url}/api/v1/packs/guide/update", timeout=600)
    assert updated.status_code == 202, updated.text
    done = follow(url, updated.json()["id"])[-1]
    assert done[0] == "done" and done[1]["unchanged"] == 2 and done[1]["chunks_embedded"] == 0

    removed = httpx.delete(f"{url}/api/v1/packs/guide", timeout=600)
    assert removed.status_code == 202
    assert follow(url, removed.json()["id"])[-1] == (
        "done",
        {"pack": "guide", "removed": True, "skill": False},
    )
    assert httpx.get(f"{url}/api/v1/packs").json()["packs"] == []
    assert not (wikigr_home / "packs" / "guide").exists() and leftovers(wikigr_home) == []
    assert "unknown pack" in _error(httpx.delete(f"{url}/api/v1/packs/guide"), 404)


def test_a_crawl_and_uploaded_files_build_one_pack(url: str, site: LocalServer) -> None:
    upload = httpx.post(f"{url}/api/v1/uploads")
    assert upload.status_code == 201
    data = upload.json()
    assert data["max_file_bytes"] == 10 * 1024 * 1024 and data["max_files"] == 10_000
    uid = data["upload"]
    text = "# Tomatoes\n\nSow tomato seeds 6 mm deep in warm soil.\n"
    put = httpx.put(f"{url}/api/v1/uploads/{uid}/Томаты.md", content=text.encode())
    assert put.status_code == 201 and put.json() == {"file": "Томаты.md", "bytes": len(text.encode())}
    assert "uploaded already" in _error(httpx.put(f"{url}/api/v1/uploads/{uid}/Томаты.md", content=b"x"), 409)
    for name in (".hidden.md", "a.exe", "a%01b.md", "%20a.md"):
        assert _error(httpx.put(f"{url}/api/v1/uploads/{uid}/{name}", content=b"x"), 400)
    too_big = httpx.put(f"{url}/api/v1/uploads/{uid}/big.txt", content=b"x" * (10 * 1024 * 1024 + 1))
    assert "larger than the cap" in _error(too_big, 413)

    started = build(
        url,
        name="garden",
        crawl=[site.url("/docs/sockets.html")],
        max_pages=5,
        depth=1,
        upload=uid,
        graph=False,
    )
    assert started.status_code == 202, started.text
    events = follow(url, started.json()["id"])
    assert events[-1][0] == "done", events[-1]
    assert events[-1][1]["articles"] == 3
    assert any(n == "progress" and d["stage"] == "crawl" for n, d in events)
    assert "wikigr-uploads" not in json.dumps(events)  # the staging folder is never shown
    cited = httpx.post(
        f"{url}/api/v1/search", json={"pack": "garden", "query": "how deep to sow tomato seeds"}, timeout=600
    ).json()["results"][0]
    assert cited["url"].startswith("upload:%D0%A2%D0%BE%D0%BC%D0%B0%D1%82%D1%8B.md")
    assert "no upload" in _error(httpx.put(f"{url}/api/v1/uploads/{uid}/more.md", content=b"x"), 404)
    assert not list(Path(tempfile.gettempdir()).glob(f"wikigr-uploads-*/{uid}"))  # its folder is gone


def test_a_cancelled_build_leaves_nothing_and_a_cancelled_update_the_old_pack(
    url: str, site: LocalServer, wikigr_home: Path
) -> None:
    release = blocking(site, "/docs/slow.html", page("Slow page", "It answers late."))
    started = build(url, name="slow", urls=[site.url("/docs/sockets.html"), site.url("/docs/slow.html")])
    job = started.json()["id"]
    wait_for_event(
        url, job, lambda name, data: name == "progress" and data["stage"] == "fetch" and data["done"] == 1
    )
    refused = build(url, name="slow", urls=[site.url("/docs/files.html")])  # one build of a name at a time
    assert "running already" in _error(refused, 409)
    cancel = httpx.post(f"{url}/api/v1/jobs/{job}/cancel")
    assert cancel.status_code == 202 and cancel.json()["cancelling"] is True
    release.set()
    assert follow(url, job)[-1] == ("cancelled", {})
    assert not (wikigr_home / "packs" / "slow").exists()
    assert leftovers(wikigr_home) == []  # no .slow.partial, no lock file

    # A pack, then an update cancelled while it fetches: the pack is the one it was.
    release = blocking(site, "/docs/late.html", page("Late page", "Fetched twice."), hits=2)
    first = build(
        url, name="kept", urls=[site.url("/docs/files.html"), site.url("/docs/late.html")], graph=False
    )
    assert follow(url, first.json()["id"])[-1][0] == "done"
    manifest = (wikigr_home / "packs" / "kept" / "manifest.json").read_bytes()
    update = httpx.post(f"{url}/api/v1/packs/kept/update").json()["id"]
    wait_for_event(
        url, update, lambda name, data: name == "progress" and data["stage"] == "fetch" and data["done"] == 1
    )
    httpx.post(f"{url}/api/v1/jobs/{update}/cancel")
    release.set()
    assert follow(url, update)[-1][0] == "cancelled"
    assert (wikigr_home / "packs" / "kept" / "manifest.json").read_bytes() == manifest
    assert leftovers(wikigr_home) == []


def test_a_second_build_of_a_name_is_refused_here_and_across_processes(
    url: str, site: LocalServer, wikigr_home: Path
) -> None:
    release = blocking(site, "/docs/slow.html", page("Slow page", "It answers late."))
    job = build(url, name="busy", urls=[site.url("/docs/slow.html")]).json()["id"]
    assert "a build of 'busy' is running already" in _error(
        build(url, name="busy", urls=[site.url("/x")]), 409
    )
    httpx.post(f"{url}/api/v1/jobs/{job}/cancel")
    release.set()
    assert follow(url, job)[-1][0] == "cancelled"

    target = wikigr_home / "packs" / "other"
    with pack_lock(target):  # `wikigr pack create other` running in another process
        message = _error(build(url, name="other", urls=[site.url("/docs/files.html")]), 409)
    assert message == "another build of the packs home/other is running"


def test_bad_input_is_a_400_of_one_line(url: str, site: LocalServer) -> None:
    ok = site.url("/docs/files.html")
    cases = [
        ({"name": "../evil", "urls": [ok]}, "invalid pack name"),
        ({"name": "Bad Name", "urls": [ok]}, "invalid pack name"),
        ({"name": "all", "urls": [ok]}, "reserved"),
        ({"name": "p"}, "give URLs, a crawl seed or files"),
        ({"name": "p", "urls": ["file:///etc/passwd"]}, "takes http(s) URLs"),
        ({"name": "p", "urls": ["/etc/passwd"]}, "takes http(s) URLs"),
        ({"name": "p", "crawl": ["file:///etc/"]}, "takes http(s) URLs"),
        ({"name": "p", "urls": [ok], "include": ["*"]}, "--include and --exclude go with --crawl"),
        ({"name": "p", "crawl": [ok], "max_pages": 100_000}, "max_pages must be an integer from 1 to 1000"),
        ({"name": "p", "crawl": [ok], "delay": "soon"}, "delay must be a number"),
        ({"name": "p", "urls": [ok], "out": "/tmp/x"}, "unknown field 'out'"),
        ({"name": "p", "urls": 3}, "urls must be a list of strings"),
        ({"name": "p", "urls": [ok], "graph": "yes"}, "graph and replace must be true or false"),
        ({"name": "p", "upload": "nope"}, "no upload 'nope'"),
    ]
    for body, message in cases:
        response = build(url, **body)
        assert message in _error(response, 404 if message.startswith("no upload") else 400), body
    assert "not a path" in _error(httpx.post(f"{url}/api/v1/packs/a%20b/update"), 400)
    assert "unknown pack" in _error(httpx.post(f"{url}/api/v1/packs/nothing/update"), 404)
    empty = httpx.post(f"{url}/api/v1/uploads").json()["upload"]
    assert _error(build(url, name="p", upload=empty), 400) == "the upload holds no file"


def test_with_packs_named_a_pack_built_is_served_beside_them(built_pack: Path, site: LocalServer) -> None:
    with running(create_app([built_pack])) as url:
        assert "serves another pack named 'fixture'" in _error(
            build(url, name="fixture", urls=[site.url("/x")]), 409
        )
        job = build(url, name="guide", urls=[site.url("/docs/sockets.html")], graph=False).json()["id"]
        assert follow(url, job)[-1][0] == "done"
        names = [row["name"] for row in httpx.get(f"{url}/api/v1/packs").json()["packs"]]
        assert names == ["fixture", "guide"]
        refused = httpx.delete(f"{url}/api/v1/packs/fixture")
        assert "outside the packs home" in _error(refused, 409)
        removed = httpx.delete(f"{url}/api/v1/packs/guide").json()["id"]
        assert follow(url, removed)[-1][0] == "done"
        assert [row["name"] for row in httpx.get(f"{url}/api/v1/packs").json()["packs"]] == ["fixture"]


# -- write safety ----------------------------------------------------------------------------------


def test_a_write_from_another_origin_is_refused_and_changes_nothing(
    url: str, site: LocalServer, wikigr_home: Path
) -> None:
    body = {"name": "evil", "urls": [site.url("/docs/files.html")]}
    foreign = httpx.post(f"{url}/api/v1/builds", json=body, headers={"Origin": "http://evil.example"})
    assert (
        _error(foreign, 403)
        == "refused: a write from another origin (http://evil.example) than this server's"
    )
    cross = httpx.post(f"{url}/api/v1/builds", json=body, headers={"Sec-Fetch-Site": "cross-site"})
    assert _error(cross, 403) == "refused: a write from another site (Sec-Fetch-Site: cross-site)"
    same_site = httpx.post(f"{url}/api/v1/builds", json=body, headers={"Sec-Fetch-Site": "same-site"})
    assert _error(same_site, 403)  # another port or subdomain of this host: another origin
    port = url.rsplit(":", 1)[1]
    other_port = httpx.post(
        f"{url}/api/v1/builds", json=body, headers={"Origin": f"http://127.0.0.1:{int(port) + 1}"}
    )
    assert _error(other_port, 403)
    for method in ("PUT", "PATCH", "DELETE"):
        response = httpx.request(method, f"{url}/api/v1/packs/evil", headers={"Origin": "null"})
        assert response.status_code == 403, method
    assert _error(httpx.post(f"{url}/api/v1/uploads", headers={"Origin": "http://evil.example"}), 403)
    assert httpx.get(f"{url}/api/v1/jobs").json()["jobs"] == []
    assert not (wikigr_home / "packs" / "evil").exists() and site.hits("/docs/files.html") == 0

    same = httpx.post(
        f"{url}/api/v1/builds", json=body, headers={"Origin": url, "Sec-Fetch-Site": "same-origin"}
    )
    assert same.status_code == 202, same.text
    assert follow(url, same.json()["id"])[-1][0] == "done"
    assert (wikigr_home / "packs" / "evil" / "manifest.json").is_file()


def test_a_read_only_server_refuses_writes_and_answers_questions(built_pack: Path, site: LocalServer) -> None:
    with running(create_app([built_pack], read_only=True)) as url:
        assert httpx.get(f"{url}/api/v1/health").json()["read_only"] is True
        refused = [
            httpx.post(f"{url}/api/v1/builds", json={"name": "p", "urls": [site.url("/x")]}),
            httpx.post(f"{url}/api/v1/packs/fixture/update"),
            httpx.delete(f"{url}/api/v1/packs/fixture"),
            httpx.post(f"{url}/api/v1/uploads"),
            httpx.post(f"{url}/api/v1/jobs/build-1/cancel"),
        ]
        assert [_error(r, 403) for r in refused] == [READ_ONLY] * len(refused)
        answer = httpx.post(
            f"{url}/api/v1/query", json={"pack": "fixture", "question": QUESTION}, timeout=600
        )
        assert answer.status_code == 200 and answer.json()["sources"]
        found = httpx.post(
            f"{url}/api/v1/search", json={"pack": "fixture", "query": "socket timeout"}, timeout=600
        )
        assert found.status_code == 200
        assert built_pack.joinpath("manifest.json").is_file()
    with running(create_app([built_pack])) as url:
        assert httpx.get(f"{url}/api/v1/health").json()["read_only"] is False


@pytest.mark.parametrize(
    ("origin", "host", "same"),
    [
        ("http://127.0.0.1:8700", "127.0.0.1:8700", True),
        ("HTTP://LOCALHOST:8700", "localhost:8700", True),
        ("http://[::1]:8700", "[::1]:8700", True),
        ("http://localhost", "localhost:80", True),
        ("http://localhost:80", "localhost", True),
        ("http://127.0.0.1:8701", "127.0.0.1:8700", False),
        ("https://127.0.0.1:8700", "127.0.0.1:8700", False),
        ("http://localhost:8700", "127.0.0.1:8700", False),
        ("http://evil.example", "127.0.0.1:8700", False),
        ("null", "127.0.0.1:8700", False),
        ("http://127.0.0.1:8700/", "127.0.0.1:8700", False),
        ("http://user@127.0.0.1:8700", "127.0.0.1:8700", False),
        ("http://127.0.0.1:99999", "127.0.0.1:8700", False),
        ("", "127.0.0.1:8700", False),
    ],
)
def test_same_origin(origin: str, host: str, same: bool) -> None:
    assert same_origin(origin, "http", host) is same


def test_the_page_caps_a_crawl_at_the_cli_default() -> None:
    from wikigr.serve.builds import MAX_PAGES
    from wikigr.sources.crawl import CrawlOptions

    assert CrawlOptions(("http://127.0.0.1/",)).max_pages == MAX_PAGES  # pack create --max-pages


def test_uploads_waiting_are_capped(url: str) -> None:
    from wikigr.serve.builds import MAX_UPLOADS

    ids = [httpx.post(f"{url}/api/v1/uploads").json()["upload"] for _ in range(MAX_UPLOADS)]
    assert "waiting for their builds already" in _error(httpx.post(f"{url}/api/v1/uploads"), 409)
    assert httpx.delete(f"{url}/api/v1/uploads/{ids[0]}").status_code == 204  # dropped: room for one
    assert httpx.post(f"{url}/api/v1/uploads").status_code == 201


def test_a_build_waits_for_the_files_still_arriving(url: str) -> None:
    uid = httpx.post(f"{url}/api/v1/uploads").json()["upload"]
    more = threading.Event()

    def body() -> Iterator[bytes]:
        yield b"# Notes\n\nThe first half"
        more.wait(600)
        yield b" and the second.\n"

    sent: list[httpx.Response] = []
    thread = threading.Thread(
        target=lambda: sent.append(
            httpx.put(f"{url}/api/v1/uploads/{uid}/notes.md", content=body(), timeout=600)
        )
    )
    thread.start()
    try:
        for _ in range(600):  # until the server holds the first half
            refused = build(url, name="notes", upload=uid)
            if refused.status_code == 409:
                break
            threading.Event().wait(0.05)
        assert "still arriving" in _error(refused, 409)
    finally:
        more.set()
        thread.join(600)
    assert sent[0].status_code == 201 and sent[0].json()["bytes"] == 40
