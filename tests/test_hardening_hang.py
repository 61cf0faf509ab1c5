"""Issue 35, sources that hang a build: each hostile input is built here (real files, real HTTP
on 127.0.0.1, real subprocesses of the CLI) and must end in a document, a failed source or a
one-line error within a bound far below the hang it used to cause.

- 1: HTML nested 100,000 deep (closed or unclosed tags), from a file or over http; a Markdown
  list nested 3,000 deep;
- 2: a FIFO as a source (a usage error) or in a source folder (a failed source, skipped);
- 3: a server trickling its headers a byte at a time: ``--timeout`` bounds the whole request;
- 4: Ctrl-C during a build stops it at once: "interrupted", exit 130, the previous pack kept;
- 5: ``~nobody/x.html`` (a user that does not exist) is kept as the shell keeps it: a source
  that does not exist (a usage error), an ``--out`` folder of that name;
- 6: a ``--corpus`` file with a UTF-8 byte-order mark is read; a lone surrogate in a passage is a
  usage error naming the passage.
"""

from __future__ import annotations

import codecs
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.httpserver import LocalServer
from wikigr.build import BuildOptions, build_pack
from wikigr.pack.pack import open_pack
from wikigr.sources.fetch import FetchOptions, fetch_all
from wikigr.sources.html_parser import MAX_NESTING, cap_nesting, parse_html

FAST = FetchOptions(retries=0, timeout=20.0, backoff_base=0.0)
OFFLINE = BuildOptions(graph=False, fetch=FAST)
DEEP = 100_000
TEA = "Green tea is steeped at 80 degrees for two minutes."


def _statuses(pack: Path) -> dict[str, str]:
    return {s.url: s.status for s in open_pack(pack).manifest.sources}


# -- 1. deeply nested HTML --------------------------------------------------------------------


def _nested(closed: bool) -> str:
    """A page whose text sits below DEEP <div>s, closed or never closed."""
    if closed:
        return f"<title>Tea</title><body>{'<div>' * DEEP}<p>{TEA}</p>{'</div>' * DEEP}</body>"
    return f"<title>Tea</title><body>{'<div>' * DEEP}<b>x</b> <p>{TEA}</p>"


def _depth(html: str) -> int:
    """How deep the <div>s of ``html`` nest."""
    depth = deepest = 0
    for i in range(len(html)):
        if html.startswith("<div>", i):
            depth += 1
            deepest = max(deepest, depth)
        elif html.startswith("</div>", i):
            depth -= 1
    return deepest


@pytest.mark.parametrize("closed", [True, False], ids=["closed", "unclosed"])
def test_deeply_nested_html_is_parsed_up_to_the_cap(closed: bool) -> None:
    html = _nested(closed)
    assert _depth(cap_nesting(html)) == MAX_NESTING
    started = time.monotonic()
    document = parse_html(html, "https://example.org/tea.html")
    assert time.monotonic() - started < 60  # it took minutes (lexbor is quadratic in the depth)
    assert TEA in "\n".join(section.text for section in document.sections)


def test_a_page_nesting_within_the_cap_is_left_alone() -> None:
    html = "<p>one<p>two" * 2000 + "<ul><li>" * 200 + "deep" + "</li></ul>" * 200
    assert cap_nesting(html) is html


def test_a_markdown_list_nested_3000_deep_is_parsed() -> None:
    from wikigr.sources.markdown_parser import parse_markdown

    text = "".join("  " * depth + f"- item {depth}\n" for depth in range(3000))  # 9 MB
    started = time.monotonic()
    document = parse_markdown(text, "file:///deep.md")
    assert time.monotonic() - started < 60  # the table-rule pattern backtracked for hours
    assert "item 2999" in document.sections[-1].text


@pytest.mark.parametrize("served", [True, False], ids=["http", "file"])
def test_a_build_of_deeply_nested_html_keeps_its_text(
    server: LocalServer, tmp_path: Path, served: bool
) -> None:
    page = _nested(closed=True)
    if served:
        url = server.add("/deep.html", page)
    else:
        (tmp_path / "deep.html").write_text(page, encoding="utf-8")
        url = (tmp_path / "deep.html").as_uri()
    report = build_pack("deep", [url], out=tmp_path / "deep", options=OFFLINE)
    assert _statuses(report.path)[url] == "ok"
    assert report.manifest.stats.articles == 1


# -- 2. FIFOs and other special files ---------------------------------------------------------


def test_a_fifo_given_as_a_source_is_a_usage_error(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    fifo = tmp_path / "pipe.html"
    os.mkfifo(fifo)
    code, _, err = cli(capsys, "pack", "create", "piped", "--url", str(fifo))
    assert code == 2
    assert_one_error(err, "not a regular file (a FIFO): ")
    assert "pipe.html" in err
    listed = tmp_path / "urls.txt"
    listed.write_text("pipe.html\n", encoding="utf-8")
    code, _, err = cli(capsys, "pack", "create", "piped", "--urls", str(listed))
    assert code == 2
    assert_one_error(err, "line 1: not a regular file (a FIFO)")
    os.mkfifo(tmp_path / "list.txt")
    code, _, err = cli(capsys, "pack", "create", "piped", "--urls", str(tmp_path / "list.txt"))
    assert code == 2
    assert_one_error(err, "not a regular file (a FIFO)")


def test_a_fifo_in_a_source_folder_is_a_failed_source(tmp_path: Path) -> None:
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "tea.html").write_text(f"<title>Tea</title><h1>Tea</h1><p>{TEA}</p>", encoding="utf-8")
    os.mkfifo(folder / "pipe.html")
    report = build_pack("notes", [folder.as_uri()], out=tmp_path / "pack", options=OFFLINE)
    pipe = (folder / "pipe.html").as_uri()
    assert report.failed == [(pipe, "not a regular file (a FIFO)")]
    assert _statuses(report.path)[(folder / "tea.html").as_uri()] == "ok"
    assert report.manifest.stats.articles == 1


# -- 3. trickling headers ---------------------------------------------------------------------


@contextmanager
def trickling_headers(seconds: float = 600.0) -> Iterator[tuple[str, threading.Event]]:
    """A server on 127.0.0.1 that answers every request with a status line and then one header
    byte every 0.2 s for ``seconds``: no read ever waits long enough to time out. Yields its URL
    and an event set once a request has come in."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()
    asked = threading.Event()

    def trickle(connection: socket.socket) -> None:
        with connection:
            connection.recv(65536)
            asked.set()
            connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nX-Slow: ")
            ends = time.monotonic() + seconds
            while not stop.is_set() and time.monotonic() < ends:
                try:
                    connection.sendall(b"x")
                except OSError:
                    return  # the client hung up
                time.sleep(0.2)

    def serve() -> None:
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except OSError:
                return
            threading.Thread(target=trickle, args=(connection,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/slow.html", asked
    finally:
        stop.set()
        listener.close()


def test_trickling_headers_time_out_at_the_timeout(
    capsys: pytest.CaptureFixture[str], server: LocalServer, wikigr_home: Path
) -> None:
    good = server.add("/tea.html", f"<title>Tea</title><h1>Tea</h1><p>{TEA}</p>")
    with trickling_headers() as (slow, _):
        started = time.monotonic()
        code, _, err = cli(
            capsys, "pack", "create", "slow", "--url", slow, "--url", good, "--timeout", "1", "--retries", "0"
        )
        took = time.monotonic() - started
    assert code == 0, err
    assert took < 300, took  # the trickle goes on for 600 s: it held the build as long
    assert _statuses(wikigr_home / "packs" / "slow")[slow] == "timed out after 1s"


# -- 4. Ctrl-C --------------------------------------------------------------------------------


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): (b"<dir>" if p.is_dir() else p.read_bytes())
        for p in sorted(folder.rglob("*"))
    }


def _interrupt_build(sources: list[str], started: Callable[[], bool]) -> tuple[int, str]:
    """Run ``wikigr pack create tea`` on ``sources`` in a child process, send it SIGINT once
    ``started()`` is true and return its exit code and stderr."""
    build = subprocess.Popen(
        [sys.executable, "-m", "wikigr", "pack", "create", "tea", *(f"--url={s}" for s in sources)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 300  # importing the heavy stacks on a loaded machine
        while not started() and build.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert build.poll() is None and started(), "the build never reached its slow part"
        build.send_signal(signal.SIGINT)
        _, err = build.communicate(timeout=60)  # minutes before (a parse, a 20 s timeout x 4)
    finally:
        if build.poll() is None:
            build.kill()
            build.wait()
    return build.returncode, err


@pytest.mark.parametrize("fetcher", ["wikigr-fetch-attempt", "wikigr-fetch"])
def test_a_ctrl_c_the_kernel_gives_to_another_thread_is_seen_at_once(fetcher: str) -> None:
    """The kernel may give a process's SIGINT to any of its threads (on a busy machine it gave it
    to a fetch's), and CPython then sees it only when the main thread next takes the interpreter
    lock: a main thread blocked on a fetch for its whole timeout went on for 60 s after Ctrl-C.
    Here the SIGINT goes to a fetch thread on purpose; the fetch of a trickling server is
    interrupted within seconds all the same."""
    with trickling_headers() as (url, asked):
        fired: list[float] = []

        def interrupt() -> None:
            asked.wait(60)
            time.sleep(0.5)
            thread = next(t for t in threading.enumerate() if t.name.startswith(fetcher))
            fired.append(time.monotonic())
            signal.pthread_kill(thread.ident or 0, signal.SIGINT)

        threading.Thread(target=interrupt, daemon=True).start()
        with pytest.raises(KeyboardInterrupt):
            fetch_all([url], FetchOptions(timeout=120.0, retries=0))
        assert fired and time.monotonic() - fired[0] < 10.0  # not the fetch's 120 s


@pytest.mark.parametrize("slow", ["fetch", "parse"])
def test_ctrl_c_stops_a_build_whatever_it_does(
    capsys: pytest.CaptureFixture[str], server: LocalServer, wikigr_home: Path, slow: str
) -> None:
    good = server.add("/tea.html", f"<title>Tea</title><h1>Tea</h1><p>{TEA}</p>")
    code, _, err = cli(capsys, "pack", "create", "tea", "--url", good)
    assert code == 0, err
    pack = wikigr_home / "packs" / "tea"
    before = _snapshot(pack)
    if slow == "fetch":
        with trickling_headers() as (trickle, asked):
            code, err = _interrupt_build([trickle, good], asked.is_set)
    else:  # ten pages nested 100,000 deep: each one held the parser for minutes
        pages = [server.add(f"/deep{i}.html", _nested(closed=i % 2 == 0) + f"<p>{i}</p>") for i in range(10)]
        code, err = _interrupt_build(pages, lambda: all(server.hits(urlsplit(p).path) for p in pages))
    assert code == 130, err
    assert_one_error(err, "interrupted")
    assert _snapshot(pack) == before  # the build's cache stays beside it, to resume from


# -- 5. ~user of no user ----------------------------------------------------------------------


def test_a_tilde_path_of_no_user_is_kept_as_the_shell_keeps_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, _, err = cli(capsys, "pack", "create", "tilde", "--url", "~nonexistent-wikigr-user/x.html")
    assert code == 2
    assert_one_error(err, "not a URL or an existing path: '~nonexistent-wikigr-user/x.html'")
    monkeypatch.chdir(tmp_path)
    Path("tea.html").write_text(f"<title>Tea</title><h1>Tea</h1><p>{TEA}</p>", encoding="utf-8")
    code, _, err = cli(
        capsys, "pack", "create", "tilde", "--url", "tea.html", "--out", "~nonexistent-wikigr-user/tilde"
    )
    assert code == 0, err
    assert (tmp_path / "~nonexistent-wikigr-user" / "tilde" / "manifest.json").is_file()


# -- 6. a corpus with a BOM, a corpus with a lone surrogate -----------------------------------


@pytest.mark.parametrize("name", ["corpus.json", "corpus.jsonl"])
def test_a_corpus_with_a_byte_order_mark_is_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, wikigr_home: Path, name: str
) -> None:
    passage = {"id": "tea", "title": "Tea", "text": TEA}
    body = json.dumps(passage) if name.endswith("l") else json.dumps([passage])
    corpus = tmp_path / name
    corpus.write_bytes(codecs.BOM_UTF8 + body.encode("utf-8"))
    code, _, err = cli(capsys, "pack", "create", "tea", "--corpus", str(corpus))
    assert code == 0, err
    assert open_pack(wikigr_home / "packs" / "tea").manifest.stats.articles == 1


@pytest.mark.parametrize("field", ["text", "title", "id"])
def test_a_lone_surrogate_in_a_corpus_is_a_usage_error_naming_the_passage(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, field: str
) -> None:
    passages = [{"id": "tea", "title": "Tea", "text": TEA}, {"id": "bad", "title": "Bad", "text": "x"}]
    passages[1][field] = "odd \udcff"
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(passages), encoding="ascii")  # json.dumps escapes it: "\udcff"
    code, _, err = cli(capsys, "pack", "create", "tea", "--corpus", str(corpus))
    assert code == 2
    bad = "odd \\udcff" if field == "id" else "bad"
    assert_one_error(err, f"item 1 (passage {bad}) holds a lone surrogate, not text")
