"""Issue 14, builds and updates: the hostile cases found by an attacker's and a new user's run,
each rebuilt here as a regression (real HTTP on 127.0.0.1, real stores, the real embedder).

- 7: binary content served as text is a failed source, not a document of control characters;
- 8: spellings of one URL are one article, duplicates (same address or same bytes) are recorded;
- 9: ``pack update`` with no reachable source fails (exit 1) and leaves the pack byte for byte;
- 10: an interrupted ``pack update`` resumes: the rerun embeds only what was not embedded;
- 11: a source that is neither a URL with a known scheme nor an existing path is a usage error;
  a line of a ``--urls`` file takes what ``--url`` takes (a relative path: from the list's
  folder); a folder without document files is a usage error, before anything is built;
- 18: a page at the root of a site has no category (its host is not the skill's topic).
"""

from __future__ import annotations

import codecs
import json
import random
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.httpserver import LocalServer
from wikigr.build import BuildOptions, build_pack, prepare, update_pack
from wikigr.build.rows import url_category
from wikigr.documents import FetchResult
from wikigr.errors import BuildError, SourceError, UsageError
from wikigr.pack.pack import open_pack
from wikigr.progress import ProgressEvent
from wikigr.sources.decode import decode_text
from wikigr.sources.fetch import FetchOptions
from wikigr.sources.parse import parse
from wikigr.sources.parsing import LinkCollector
from wikigr.sources.urls import normalize_source, normalize_url, read_url_list

FAST = FetchOptions(retries=0, timeout=60.0, backoff_base=0.0)  # no server here is slow
OFFLINE = BuildOptions(graph=False, fetch=FAST)
TEA = "<title>Tea</title><h1>Tea</h1><p>Green tea is steeped at 80 degrees for two minutes.</p>"


def _statuses(pack: Path) -> dict[str, str]:
    return {s.url: s.status for s in open_pack(pack).manifest.sources}


def _rows(pack: Path, cypher: str) -> list[list[object]]:
    with open_pack(pack).open_store() as store:
        return [list(row) for row in store.rows(cypher)]


def _snapshot(folder: Path) -> dict[str, bytes]:
    """Every file below ``folder`` with its bytes (and every folder, as b"<dir>")."""
    return {
        str(p.relative_to(folder)): (b"<dir>" if p.is_dir() else p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


# -- 7. binary content ------------------------------------------------------------------------


def _random_bytes(size: int, *, nul: bool) -> bytes:
    data = random.Random(7).randbytes(size)
    return data if nul else data.replace(b"\x00", b"\x01")


@pytest.mark.parametrize("nul", [True, False], ids=["with-nul", "without-nul"])
def test_random_bytes_served_as_html_are_a_failed_source(
    server: LocalServer, tmp_path: Path, nul: bool
) -> None:
    junk = server.add("/junk.html", _random_bytes(200_000, nul=nul), content_type="text/html")
    good = server.add("/tea.html", TEA)
    report = build_pack("junk", [junk, good], out=tmp_path / "junk", options=OFFLINE)
    status = _statuses(report.path)
    assert status[good] == "ok"
    assert status[junk].startswith("binary content, not text"), status[junk]
    assert report.failed == [(junk, status[junk])]
    assert report.manifest.stats.articles == 1 and report.chunks_embedded == 1
    texts = _rows(report.path, "MATCH (c:Chunk) RETURN c.text")
    assert texts == [[texts[0][0]]] and "Green tea" in str(texts[0][0])


def test_a_build_of_binary_sources_only_fails(server: LocalServer, tmp_path: Path) -> None:
    junk = server.add("/junk.txt", _random_bytes(50_000, nul=False), content_type="text/plain")
    with pytest.raises(BuildError, match=r"no document could be fetched and parsed.*binary content"):
        build_pack("junk", [junk], out=tmp_path / "junk", options=OFFLINE)


def test_binary_detection_keeps_real_text() -> None:
    text = "Grüße aus Köln — naïve café. " * 200
    for data in (
        text.encode("utf-8"),
        text.encode("cp1252", errors="replace"),
        codecs.BOM_UTF16_LE + text.encode("utf-16-le"),  # NUL bytes, but a byte-order mark says UTF-16
        ("a\tb\fc\x1b[1md\r\n" * 100).encode(),  # tabs, page breaks, terminal escapes: text
        b"text" * 100 + b"\x01",  # one stray control byte is not data
    ):
        assert decode_text(data)
    for data in (_random_bytes(4000, nul=True), _random_bytes(4000, nul=False), b"GIF89a\x00\x01text"):
        with pytest.raises(SourceError, match="binary content"):
            decode_text(data)
    junk = _random_bytes(9000, nul=False)
    fetched = FetchResult("file:///x.md", "file:///x.md", junk, "text/markdown", None, "")
    with pytest.raises(SourceError, match="binary content"):
        parse(fetched)


# -- 8. one article per document ----------------------------------------------------------------


def test_normalize_url_follows_rfc_3986() -> None:
    assert normalize_url("HTTP://Example.ORG:80/a/./b/../c.html#top") == "http://example.org/a/c.html"
    assert normalize_url("https://example.org:443") == "https://example.org/"
    assert normalize_url("https://example.org:8443/x") == "https://example.org:8443/x"
    assert normalize_url("http://h/%7euser/%2fx%3F?q=%7e%3d") == "http://h/~user/%2Fx%3F?q=~%3D"
    assert normalize_url("http://h/../../a/..") == "http://h/"
    assert normalize_url("http://h/a/%2E%2E/b") == "http://h/b"
    assert normalize_url("http://[::1]:80/./x") == "http://[::1]/x"
    assert normalize_url("file://localhost/srv/docs/./x/../a%20b.md") == "file:///srv/docs/a%20b.md"
    assert normalize_url("passage:abc") == "passage:abc"
    assert normalize_url("http://h:99999/x") == "http://h:99999/x"  # unparsable: left as it is
    links = LinkCollector("http://h/docs/", "http://h/docs/index.html")
    for href in ("./a.html#s", "../docs/x/../a.html", "HTTP://H:80/docs/a.html", "index.html"):
        links.add(href, "A page")
    assert links.links == ["http://h/docs/a.html"]
    assert links.anchors == [("http://h/docs/a.html#s", "A page"), ("http://h/docs/a.html", "A page")]


def test_spellings_of_one_url_are_one_article_and_the_others_duplicates(
    capsys: pytest.CaptureFixture[str], server: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    server.add("/p.html", TEA)
    base = server.base_url
    spellings = [f"{base}/p.html", f"{base}/./p.html", f"{base}/x/../p.html", f"{base}/%70.html"]
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(u + "\n" for u in spellings))
    code, out, err = cli(capsys, "pack", "create", "dup", "--urls", str(urls), "--no-graph", "--json")
    assert code == 0, err
    assert json.loads(out)["stats"]["articles"] == 1
    pack = wikigr_home / "packs" / "dup"
    assert _statuses(pack) == {
        spellings[0]: "ok",
        **{u: f"duplicate of {spellings[0]}" for u in spellings[1:]},
    }
    assert server.hits("/p.html") == 1  # fetched once, not once per spelling
    assert _rows(pack, "MATCH (a:Article) RETURN a.id") == [[spellings[0]]]


def test_file_urls_with_dot_segments_are_resolved(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "p.md").write_text("# Kettles\n\nDescale the kettle with vinegar every month.\n")
    (docs / "link.md").symlink_to(docs / "p.md")
    plain = (docs / "p.md").as_uri()
    dotted = docs.as_uri() + "/missing-folder/../p.md"  # the kernel would refuse this path
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{plain}\n{dotted}\n{docs.as_uri()}\n")  # the folder lists link.md and p.md
    report = build_pack("files", read_url_list(urls), out=tmp_path / "files", options=OFFLINE)
    link = (docs / "link.md").as_uri()
    assert _statuses(report.path) == {
        plain: "ok",
        dotted: f"duplicate of {plain}",
        link: f"duplicate of {plain}",  # another name of the same file: the same bytes
    }
    assert report.manifest.stats.articles == 1


def test_the_same_bytes_under_two_urls_are_one_article(server: LocalServer, tmp_path: Path) -> None:
    home = "<title>Home</title><h1>Home</h1><p>Welcome to the kettle site; see the guide.</p>"
    root = server.add("/", home)
    index = server.add("/index.html", home)
    guide = server.add(
        "/guide/kettles.html",
        "<title>Kettles</title><h1>Kettles</h1><p>Boil water; back to <a href='/index.html'>Home</a>.</p>",
    )
    report = build_pack("same", [root, index, guide], out=tmp_path / "same", options=OFFLINE)
    assert _statuses(report.path) == {root: "ok", index: f"duplicate of {root}", guide: "ok"}
    assert report.manifest.stats.articles == 2
    # A link to the duplicate's URL lands on the article that holds its content.
    assert _rows(report.path, "MATCH (a:Article)-[:LINKS_TO]->(b:Article) RETURN a.id, b.id") == [
        [guide, root]
    ]


# -- 9. an update with nothing to update from --------------------------------------------------


def test_update_with_every_source_unreachable_fails_and_leaves_the_pack_unchanged(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path
) -> None:
    with LocalServer() as site:
        urls = [site.add("/tea.html", TEA), site.add("/kettles.html", TEA.replace("Green tea", "Kettles"))]
        report = build_pack("tea", urls, options=OFFLINE)
    pack, packs = report.path, report.path.parent
    before, listing = _snapshot(pack), sorted(p.name for p in packs.iterdir())

    code, out, err = cli(capsys, "pack", "update", "tea", "--retries", "0", "--timeout", "1")
    assert code == 1, err
    assert_one_error(err, "no source could be fetched and parsed: the pack is unchanged")
    assert "connection refused" in err and "Updated pack" not in out + err
    assert _snapshot(pack) == before  # byte for byte: created_at, store, skill, everything
    assert sorted(p.name for p in packs.iterdir()) == listing  # and no .tea.partial left behind
    with pytest.raises(BuildError, match="the pack is unchanged"):
        update_pack("tea", options=BuildOptions(graph=False, fetch=FAST))
    assert _snapshot(pack) == before


def test_update_whose_sources_all_answer_junk_fails_too(server: LocalServer, tmp_path: Path) -> None:
    url = server.add("/tea.html", TEA)
    report = build_pack("tea", [url], out=tmp_path / "tea", options=OFFLINE)
    before = _snapshot(report.path)
    server.add("/tea.html", _random_bytes(20_000, nul=False), content_type="text/html")
    with pytest.raises(BuildError, match=r"unchanged \(first: .*binary content"):
        update_pack(report.path, options=BuildOptions(graph=False, fetch=FAST))
    assert _snapshot(report.path) == before


# -- 10. an interrupted update resumes ---------------------------------------------------------


def _page(title: str, seed: int, words: int = 100) -> str:
    rng = random.Random(seed)
    vocabulary = ["tea", "kettle", "leaf", "water", "cup", "steam", "pot", "brew", "green", "oolong"]
    sentences = [" ".join(rng.choice(vocabulary) for _ in range(10)) + "." for _ in range(words // 10)]
    return f"<title>{title}</title><h1>{title}</h1><p>{' '.join(sentences)}</p>"


def test_an_interrupted_update_resumes_without_embedding_again(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Groups of 8 chunks instead of 256 (the batch between two cache writes), so that two small
    # pages take two groups; the embedder, cache and store are the real ones.
    monkeypatch.setattr(prepare, "EMBED_GROUP", 8)
    small = dict(max_words=20, overlap_words=5, graph=False, fetch=FAST)  # a few chunks a page
    first = server.add("/tea.html", TEA)
    pack = build_pack("tea", [first], out=tmp_path / "tea", options=BuildOptions(**small)).path
    before = _snapshot(pack)
    pages = [server.add(f"/page{i}.html", _page(f"Page {i}", i)) for i in range(2)]
    urls = tmp_path / "urls.txt"
    urls.write_text("".join(u + "\n" for u in [first, *pages]))

    events: list[tuple[int, int]] = []

    def interrupt_after_the_first_group(event: ProgressEvent) -> None:
        if event.stage == "embed":
            events.append((event.done, event.total))
            if 0 < event.done < event.total:
                raise KeyboardInterrupt  # Ctrl-C between two groups of embeddings

    with pytest.raises(KeyboardInterrupt):
        update_pack(pack, urls, BuildOptions(**small), on_progress=interrupt_after_the_first_group)
    done, total = events[-1]
    assert 0 < done < total  # one page embedded and cached, the other not yet
    assert _snapshot(pack) == before  # interrupted: the pack is untouched
    assert (tmp_path / ".tea.partial" / "cache").is_dir()

    report = update_pack(pack, urls, BuildOptions(**small))
    assert report.chunks_embedded == total - done  # only what the interrupted run had not embedded
    assert report.chunks_reused == done + 1  # its cache, and the unchanged page's one chunk
    assert sorted(report.added) == sorted(pages) and report.unchanged == [first]
    assert report.manifest.stats.chunks == total + 1
    assert not (tmp_path / ".tea.partial").exists()
    # A third run embeds nothing: everything is in the pack now.
    assert update_pack(pack, urls, BuildOptions(**small)).chunks_embedded == 0


# -- 11. neither a URL nor a path ---------------------------------------------------------------


@pytest.mark.parametrize("source", ["ht!tp://x", "nope.html", "./docs/missing/", "1http://x"])
def test_a_source_that_is_neither_url_nor_path_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UsageError, match="not a URL or an existing path") as info:
        normalize_source(source)
    assert info.value.exit_code == 2
    code, _, err = cli(capsys, "pack", "create", "typo", "--url", source)
    assert code == 2, err
    assert_one_error(err, f"not a URL or an existing path: {source!r}")
    assert not (tmp_path / "typo").exists()


def test_a_bad_line_of_a_url_list_is_a_usage_error_naming_file_and_line(
    capsys: pytest.CaptureFixture[str], server: LocalServer, tmp_path: Path
) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# tea\n{server.add('/tea.html', TEA)}\nht!tp://x\n")
    code, _, err = cli(capsys, "pack", "create", "typo", "--urls", str(urls))
    assert code == 2, err
    assert_one_error(err, f"{urls} line 3: not a URL or an existing path: 'ht!tp://x'")
    build_pack("typo", [server.url("/tea.html")], out=tmp_path / "typo", options=OFFLINE)
    code, _, err = cli(capsys, "pack", "update", str(tmp_path / "typo"), "--urls", str(urls))
    assert code == 2, err
    assert_one_error(err, f"{urls} line 3: not a URL")


@pytest.mark.parametrize("content", [None, "image.png"], ids=["empty", "no-documents"])
def test_a_folder_without_document_files_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str | None
) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    if content is not None:
        (folder / content).write_bytes(b"\x89PNG")
    (folder / ".hidden.md").write_text("# Hidden\n\nHidden files are skipped.\n")
    out = tmp_path / "bad"
    code, _, err = cli(capsys, "pack", "create", "bad", "--url", str(folder), "--out", str(out))
    assert code == 2, err
    assert_one_error(
        err, f"the folder {folder} holds no document files (.html, .htm, .md, .markdown, .txt, .pdf)"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes"]  # nothing built, nothing partial
    tea = tmp_path / "tea.html"
    tea.write_text(TEA)
    with pytest.raises(UsageError, match="holds no document files"):  # among other sources too
        build_pack("bad", [tea.as_uri(), folder.as_uri()], out=out, options=OFFLINE)
    assert not out.exists() and not (tmp_path / ".bad.partial").exists()


def test_a_url_list_takes_local_paths_as_url_does_and_the_pack_still_updates(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    shared = tmp_path / "shared"
    (shared / "notes").mkdir(parents=True)
    (shared / "notes" / "bikes.md").write_text("# Bikes\n\nOil the chain of a bike every month.\n")
    (shared / "moon.txt").write_text("Moon\n\nThe moon orbits the earth in about 27 days.\n")
    (shared / "tea.html").write_text(TEA)
    urls = shared / "urls.txt"
    urls.write_text(
        "# notes, shared with the list\n"
        f"{shared / 'notes'}   # a folder, by its absolute path\n"
        "./moon.txt\n"
        "tea.html # relative to this list's folder, not the working directory\n"
    )
    monkeypatch.chdir(tmp_path)  # not the list's folder
    out = tmp_path / "walk"
    code, _, err = cli(capsys, "pack", "create", "walk", "--urls", str(urls), "--out", str(out), "--no-graph")
    assert code == 0, err
    files = [shared / "notes" / "bikes.md", shared / "moon.txt", shared / "tea.html"]
    assert list(_statuses(out)) == [f.as_uri() for f in files]
    assert (out / "urls.txt").read_text() == (  # the same list, from any folder (pack update)
        "# notes, shared with the list\n"
        f"{(shared / 'notes').as_uri()}   # a folder, by its absolute path\n"
        f"{(shared / 'moon.txt').as_uri()}\n"
        f"{(shared / 'tea.html').as_uri()} # relative to this list's folder, not the working directory\n"
    )
    assert read_url_list(urls) == [(shared / "notes").as_uri(), *[f.as_uri() for f in files[1:]]]
    (shared / "notes" / "brakes.md").write_text("# Brakes\n\nCheck the brake pads before a ride.\n")
    report = update_pack(out, options=BuildOptions(graph=False, fetch=FAST))
    assert report.added == [(shared / "notes" / "brakes.md").as_uri()] and len(report.unchanged) == 3
    (shared / "missing.md").unlink(missing_ok=True)
    urls.write_text("missing.md\n")
    code, _, err = cli(capsys, "pack", "create", "walk", "--urls", str(urls), "--out", str(out))
    assert code == 2, err
    assert_one_error(err, f"{urls} line 1: not a URL or an existing path: 'missing.md'")


# -- 18. categories -----------------------------------------------------------------------------


def test_category_is_the_folder_of_the_page() -> None:
    assert url_category("http://h:8765/") is None
    assert url_category("http://h:8765/p.html") is None
    assert url_category("http://h/library/os.html") == "library"
    assert url_category("http://h/library/") == "library"
    assert url_category("http://h/a/b/c.html?x=1") == "b"
    assert url_category("file:///srv/my%20docs/a.md") == "my docs"
    assert url_category("passage:12") is None


def test_a_root_page_has_no_category_and_the_host_is_not_a_topic(server: LocalServer, tmp_path: Path) -> None:
    urls = [
        server.add("/", "<title>Tea house</title><h1>Tea house</h1><p>All about brewing tea.</p>"),
        server.add("/top.html", TEA),
        server.add("/library/kettles.html", TEA.replace("Green tea", "A kettle")),
        server.add("/guide/", TEA.replace("Green tea", "Oolong")),
    ]
    pack = build_pack("house", urls, out=tmp_path / "house", options=OFFLINE).path
    assert sorted(_rows(pack, "MATCH (c:Category) RETURN c.name")) == [["guide"], ["library"]]
    assert _rows(pack, "MATCH (:Article)-[r:IN_CATEGORY]->(:Category) RETURN count(r)") == [[2]]
    assert open_pack(pack).manifest.stats.categories == 2
    skill = (pack / "skill.md").read_text()
    host = f"127.0.0.1:{server.port}"
    topics = next(line for line in skill.splitlines() if line.startswith("Topics:"))
    assert topics == "Topics: guide, library." and host not in topics
    assert "Topics: " + host not in skill
