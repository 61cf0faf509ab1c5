"""The CLI contract: exit codes 0/1/2, one `Error: ...` line and no traceback, `--json` parsed back."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import DOCS
from tests.httpserver import LocalServer
from wikigr.cli import run


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_error(err: str, expected: str) -> None:
    """One ``Error:`` line on stderr, and nothing else but progress lines (``wikigr: ...``, which a
    command that runs a few seconds prints when stderr is not a terminal)."""
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("wikigr: ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("Error: "), err
    assert expected in lines[0], err
    assert "Traceback" not in err


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# -- the happy path ---------------------------------------------------------------------------


def test_create_list_info_validate_query(capsys: pytest.CaptureFixture[str], wikigr_home: Path) -> None:
    code, out, err = cli(capsys, "pack", "create", "notes", "--url", str(DOCS), "--json")
    assert code == 0, err
    built = json.loads(out)
    assert built["stats"]["articles"] == 4 and built["failed"] == []
    assert Path(built["path"]) == wikigr_home / "packs" / "notes"

    code, out, _ = cli(capsys, "pack", "list", "--json")
    assert code == 0
    packs = json.loads(out)["packs"]
    assert [p["name"] for p in packs] == ["notes"] and packs[0]["ok"]

    code, out, _ = cli(capsys, "pack", "info", "notes", "--json")
    info = json.loads(out)
    assert code == 0 and info["vector_search"] == "exact" and info["store_stats"]["articles"] == 4
    assert info["embedder"]["name"] == "all-MiniLM-L6-v2-int8"

    code, out, _ = cli(capsys, "pack", "validate", built["path"], "--json")
    assert code == 0 and json.loads(out)["ok"] is True

    code, out, _ = cli(capsys, "query", "notes", "How do I set a socket timeout?", "--json", "--top-k", "2")
    result = json.loads(out)
    assert code == 0
    assert {"answer", "sources", "profile", "trace"} <= set(result)
    assert len(result["sources"]) == 2
    assert result["sources"][0]["section"] == "Timeouts"
    assert result["trace"]["vector_path"] == "exact"

    code, out, _ = cli(capsys, "query", "notes", "json.loads")
    assert code == 0 and "Working with JSON" in out and "Sources" in out

    code, out, _ = cli(capsys, "pack", "info", "notes")
    assert code == 0 and "exact cosine" in out


def test_create_from_urls_file_with_comments(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text(f"# my docs\n\n{(DOCS / 'json.html').as_uri()}  # JSON\n{(DOCS / 'dates.md').as_uri()}\n")
    out_dir = tmp_path / "pk"
    code, out, err = cli(capsys, "pack", "create", "pk", "--urls", str(urls), "--out", str(out_dir))
    assert code == 0, err
    assert "2 articles" in out
    assert (out_dir / "urls.txt").read_text() == urls.read_text()


def test_help_works_for_every_command(capsys: pytest.CaptureFixture[str]) -> None:
    for args in (
        ["--help"],
        ["pack", "--help"],
        ["pack", "create", "--help"],
        ["pack", "list", "--help"],
        ["pack", "info", "--help"],
        ["pack", "validate", "--help"],
        ["query", "--help"],
    ):
        code, out, _ = cli(capsys, *args)
        assert code == 0 and "Usage" in out, args


def _command_paths() -> list[list[str]]:
    """Every command and group of the ``wikigr`` application, as the words that name it."""
    import typer

    from wikigr.cli.typer_app import app

    paths: list[list[str]] = []

    def walk(command: Any, path: list[str]) -> None:
        paths.append(path)
        for name, sub in getattr(command, "commands", {}).items():
            walk(sub, [*path, name])

    walk(typer.main.get_command(app), [])
    return paths


def test_help_shows_flags_without_a_value(capsys: pytest.CaptureFixture[str]) -> None:
    """A flag takes no value, so no help shows one (typer's rich help drew ``--json <bool>``)."""
    paths = _command_paths()
    assert ["pack", "create"] in paths and ["query"] in paths and ["eval", "run"] in paths
    for path in paths:
        code, out, _ = cli(capsys, *path, "--help")
        assert code == 0 and "Usage" in out, path
        assert "<bool>" not in out, (path, out)
    code, out, _ = cli(capsys, "query", "--help")
    assert "--json " in out and "--passages " in out and "--top-k" in out and "<int range>" in out


def test_eval_help_lists_the_run_options(capsys: pytest.CaptureFixture[str]) -> None:
    """``wikigr eval PACK [options]`` runs an evaluation: its help shows those options, and the
    subcommands."""
    code, out, _ = cli(capsys, "eval", "--help")
    assert code == 0
    for option in (
        "--questions",
        "--profile",
        "--all-profiles",
        "--k ",
        "--judge",
        "--limit",
        "--fresh",
        "--json",
    ):
        assert option in out, option
    assert "pack" in out.lower() and "import" in out and "generate" in out


def test_partial_failure_is_reported_and_build_goes_on(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    missing = (tmp_path / "missing.html").as_uri()
    code, out, err = cli(
        capsys,
        "pack",
        "create",
        "pf",
        "--url",
        (DOCS / "json.html").as_uri(),
        "--url",
        missing,
        "--out",
        str(tmp_path / "pf"),
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["stats"]["articles"] == 1
    assert [f["url"] for f in report["failed"]] == [missing]
    manifest = json.loads((tmp_path / "pf" / "manifest.json").read_text())
    statuses = {s["url"]: s["status"] for s in manifest["sources"]}
    assert statuses[missing] != "ok" and statuses[(DOCS / "json.html").as_uri()] == "ok"


# -- bad input: one line, the right exit code ---------------------------------------------------


def test_unknown_pack(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "query", "no-such-pack", "hello")
    assert code == 2
    assert_one_error(err, "unknown pack 'no-such-pack'")


def test_folder_that_is_not_a_pack(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = cli(capsys, "pack", "info", str(tmp_path))
    assert code == 2  # not a pack at all: a usage error, as a path with nothing there is
    assert_one_error(err, "has no manifest.json")


def test_corrupt_manifest(capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path) -> None:
    pack = tmp_path / "p"
    shutil.copytree(built_pack, pack)
    (pack / "manifest.json").write_text("{ not json")
    code, _, err = cli(capsys, "query", str(pack), "hello")
    assert code == 1
    assert_one_error(err, "corrupt manifest")


def test_missing_manifest_validate(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path
) -> None:
    pack = tmp_path / "p"
    shutil.copytree(built_pack, pack)
    (pack / "manifest.json").unlink()
    code, out, err = cli(capsys, "pack", "validate", str(pack))
    assert code == 2  # a folder without manifest.json is not a pack at all: a usage error
    assert out == ""
    assert_one_error(err, f"not a pack: {pack} has no manifest.json")


def test_unreadable_store(capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path) -> None:
    pack = tmp_path / "p"
    shutil.copytree(built_pack, pack)
    (pack / "pack.db").write_bytes(os.urandom(8192))
    code, _, err = cli(capsys, "query", str(pack), "hello")
    assert code == 1
    assert_one_error(err, "cannot open store")


def test_empty_question(capsys: pytest.CaptureFixture[str], built_pack: Path) -> None:
    code, _, err = cli(capsys, "query", str(built_pack), "  ")
    assert code == 2
    assert_one_error(err, "question is empty")


def test_empty_urls_file(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("# nothing here\n\n")
    code, _, err = cli(capsys, "pack", "create", "x", "--urls", str(urls))
    assert code == 2
    assert_one_error(err, "no URLs")


def test_malformed_url_names_the_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    urls = tmp_path / "urls.txt"
    urls.write_text("https://example.org/a\nht!tp://bad url\n")
    code, _, err = cli(capsys, "pack", "create", "x", "--urls", str(urls))
    assert code == 2
    assert_one_error(err, "line 2")


def test_malformed_url_option(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "pack", "create", "x", "--url", "gopher://old.example/")
    assert code == 2
    assert_one_error(err, "gopher")


def test_unreachable_host(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}/page.html"
    code, _, err = cli(
        capsys, "pack", "create", "x", "--url", url, "--out", str(tmp_path / "x"), "--timeout", "2"
    )
    assert code == 1
    assert_one_error(err, "no document could be fetched")
    assert not (tmp_path / "x").exists()


def test_missing_option_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "pack", "create", "x")
    assert code == 2
    assert_one_error(err, "--urls")


def test_unknown_option_is_usage(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = cli(capsys, "query", "x", "y", "--no-such-flag")
    assert code == 2
    assert_one_error(err, "--no-such-flag")


def test_fresh_process_query_json(built_pack: Path) -> None:
    """What the skill runs: `wikigr query PACK "..." --json` as a new process, with no torch loaded."""
    code = (
        "import sys, runpy; sys.argv = ['wikigr', 'query', sys.argv[1], 'socket timeout', '--json'];\n"
        "from wikigr.cli import run\n"
        "rc = run(sys.argv[1:])\n"
        "names = ('torch', 'sentence_transformers', 'transformers', 'spacy', 'scipy')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print('HEAVY', heavy, file=sys.stderr); sys.exit(rc)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(built_pack)], capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["sources"][0]["section"] == "Timeouts"
    assert "HEAVY []" in proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["query", "fixture", "socket timeout", "--passages"],
        ["query", "fixture", "socket timeout", "--trace"],
        ["query", "fixture", "socket timeout", "--json"],
        ["pack", "list"],
        ["pack", "info", "fixture"],
    ],
)
def test_a_closed_stdout_ends_the_command_quietly(
    args: list[str], built_pack: Path, wikigr_home: Path
) -> None:
    """``wikigr ... | head -1``: the reader is gone before the command writes (the pipe's read end
    is closed before it starts); the command ends with 0 and says nothing, as cat and git log do."""
    shutil.copytree(built_pack, wikigr_home / "packs" / "fixture")
    read_end, write_end = os.pipe()
    os.close(read_end)  # every write to stdout now fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "wikigr", *args],
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=600,
        )
    finally:
        os.close(write_end)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no "Error:", no "Exception ignored ... BrokenPipeError"


def test_module_entry_point_errors_cleanly(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "wikigr", "pack", "info", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 2  # not a pack (no manifest.json): a usage error
    assert proc.stderr.startswith("Error: ") and "Traceback" not in proc.stderr


# -- over HTTP: every broken page is a one-line error when it is the only source ------------------


def _create(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, url: str, *extra: str
) -> tuple[int, str, str]:
    return cli(capsys, "pack", "create", "web", "--url", url, "--out", str(tmp_path / "web"), *extra)


@pytest.mark.parametrize(
    ("setup", "extra", "expected"),
    [
        (lambda s: s.url("/missing.html"), (), "HTTP 404"),
        (lambda s: s.always("/boom.html", 500), ("--retries", "1"), "HTTP 500"),
        (lambda s: s.huge("/huge.html", 2 * 1024 * 1024), ("--max-mb", "0.5"), "cap"),
        (lambda s: s.binary("/file.bin"), (), "unsupported content type"),
        (lambda s: s.slow("/slow.html", 3.0), ("--timeout", "0.3", "--retries", "0"), "timed out"),
        (lambda s: s.redirect_loop("/a.html", "/b.html"), (), "redirect"),
    ],
    ids=["404", "500", "huge", "binary", "slow", "redirect-loop"],
)
def test_broken_page(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    server: LocalServer,
    setup: Any,
    extra: tuple[str, ...],
    expected: str,
) -> None:
    url = setup(server)
    code, _, err = _create(capsys, tmp_path, url, *extra)
    assert code == 1
    assert_one_error(err, "no document could be fetched")
    assert expected in err
    assert not (tmp_path / "web").exists()


def test_http_build_with_redirects_charsets_and_links(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, server: LocalServer
) -> None:
    server.add(
        "/guide.html",
        "<title>Guide</title><h1>Guide</h1><p>See <a href='/old-cafe'>the café page</a>.</p>"
        "<p>Errors are listed on <a href='/gone.html'>a missing page</a>.</p>",
    )
    server.encoded(
        "/cafe.html",
        "<title>Café</title><h1>Café crème</h1><p>Un café crème à Paris, s'il vous plaît.</p>",
        "iso-8859-1",
        declared="iso-8859-1",
    )
    server.redirect("/old-cafe", "/cafe.html")
    code, out, err = cli(
        capsys,
        "pack",
        "create",
        "web",
        "--url",
        server.url("/guide.html"),
        "--url",
        server.url("/old-cafe"),
        "--url",
        server.url("/gone.html"),
        "--out",
        str(tmp_path / "web"),
        "--json",
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["stats"]["articles"] == 2 and report["stats"]["links"] == 1
    assert [f["url"] for f in report["failed"]] == [server.url("/gone.html")]
    code, out, _ = cli(capsys, "query", str(tmp_path / "web"), "café crème in Paris", "--json")
    top = json.loads(out)["sources"][0]
    assert top["title"] == "Café" and top["url"] == server.url("/cafe.html")
    manifest = json.loads((tmp_path / "web" / "manifest.json").read_text())
    cafe = next(s for s in manifest["sources"] if s["url"] == server.url("/old-cafe"))
    assert cafe["final_url"] == server.url("/cafe.html") and cafe["status"] == "ok"
    assert all(r.headers["user-agent"].startswith("wikigr/") for r in server.requests)


PYDOCS = Path(__file__).resolve().parents[2] / "packs" / "pydocs"


def test_trace_of_the_auto_profile_shows_the_stages_its_router_ran() -> None:
    """`--trace` on `auto` (a real process on packs/pydocs): after the router's row, one row per
    stage its strategy ran, with its time; `--json` has them in the router's attempts (added: the
    keys the trace had are all still there)."""
    question = "how do I read a file line by line"
    query = [sys.executable, "-m", "wikigr", "query", str(PYDOCS), question]
    done = subprocess.run([*query, "--trace"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    table = [line for line in done.stderr.splitlines() if "│" in line and line.split("│")[1].strip()]
    names = [line.split("│")[1].strip() for line in table]
    router = names.index("router")
    inner = names[router + 1 : router + 6]
    assert inner == [
        f"└ {name} (pages)" for name in ("literals", "vector", "keyword", "title_match", "page_score")
    ]
    assert all(float(table[router + 1 + i].split("│")[2]) >= 0 for i in range(5))  # each one's ms
    assert names[router + 6] == "quality"  # then the profile's own stages, as before

    done = subprocess.run([*query, "--json"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    entry = next(e for e in json.loads(done.stdout)["trace"]["stages"] if e["stage"] == "router")
    attempt = entry["detail"]["attempts"][0]
    assert {"strategy", "score", "ms", "candidates", "skipped"} <= set(attempt)  # as it was
    assert entry["detail"]["chosen"] == attempt["strategy"] == "pages"
    ran = attempt["stages"]
    assert [s["stage"] for s in ran] == ["literals", "vector", "keyword", "title_match", "page_score"]
    assert all({"ms", "in", "out", "top_scores"} <= set(s) for s in ran)
    assert ran[0]["skipped"] and ran[1]["detail"]["queries"] == 1
    assert ran[-1]["out"] == attempt["candidates"]
