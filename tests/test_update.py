"""``pack update``: incremental over real HTTP from a local server; refusals; nothing lost."""

from __future__ import annotations

import hashlib
import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.conftest import DOCS
from tests.httpserver import LocalServer
from wikigr.build import BuildOptions, build_pack, update_pack
from wikigr.pack.keyword import KeywordIndex
from wikigr.pack.manifest import load_manifest
from wikigr.pack.store import Store
from wikigr.share import register_pack_skill
from wikigr.validate import validate_pack

PAGES = {
    "/site/kettles.html": "<title>Kettles</title><h1>Kettles</h1><p>An electric kettle boils water "
    "quickly; descale it with vinegar every month. See <a href='/site/teapots.html'>teapots</a> "
    "and <a href='/site/oolong.html'>oolong</a>.</p>",
    "/site/teapots.html": "<title>Teapots</title><h1>Teapots</h1><p>A clay teapot keeps heat; warm "
    "it with hot water before brewing. Back to <a href='/site/kettles.html'>kettles</a>.</p>",
    "/site/sugar.html": "<title>Sugar</title><h1>Sugar</h1><p>Rock sugar dissolves slowly and "
    "sweetens chrysanthemum tea gently.</p>",
}
OOLONG = (
    "<title>Oolong</title><h1>Oolong</h1><p>Oolong leaves are rolled and partially oxidised; "
    "steep them at 90 degrees, several short infusions.</p>"
)


@pytest.fixture
def site(server: LocalServer) -> LocalServer:
    for path, body in PAGES.items():
        server.add(path, body)
    return server


def _urls(tmp_path: Path, server: LocalServer, paths: list[str], name: str = "urls.txt") -> Path:
    urls = tmp_path / name
    urls.write_text("".join(server.url(p) + "\n" for p in paths))
    return urls


def _query(capsys: pytest.CaptureFixture[str], question: str, *extra: str) -> dict[str, object]:
    code, out, err = cli(capsys, "query", "tea", question, "--json", *extra)
    assert code == 0, err
    result: dict[str, object] = json.loads(out)
    return result


def test_update_adds_changes_removes_and_reuses_embeddings(
    capsys: pytest.CaptureFixture[str], site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    urls = _urls(tmp_path, site, list(PAGES))
    code, _, err = cli(capsys, "pack", "create", "tea", "--urls", str(urls), "--description", "Tea gear")
    assert code == 0, err
    pack = wikigr_home / "packs" / "tea"
    (pack / "kg_config.json").write_text('{"profile": "baseline", "top_k": 3}\n')
    skills = tmp_path / "skills"
    register_pack_skill("tea", skills)

    # Unchanged sources: nothing embedded, nothing changes but the fetch times.
    code, out, err = cli(capsys, "pack", "update", "tea", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["counts"] == {
        "added": 0,
        "changed": 0,
        "removed": 0,
        "unchanged": 3,
        "kept": 0,
        "failed": 0,
    }
    assert report["chunks_embedded"] == 0 and report["chunks_reused"] == report["stats"]["chunks"] > 0

    # One page edited, one added (and linked from an unchanged page), one dropped from the list.
    site.add("/site/teapots.html", PAGES["/site/teapots.html"].replace("clay", "Yixing clay"))
    site.add("/site/oolong.html", OOLONG)
    new_urls = _urls(
        tmp_path, site, ["/site/kettles.html", "/site/teapots.html", "/site/oolong.html"], "n.txt"
    )
    code, out, err = cli(
        capsys, "pack", "update", "tea", "--urls", str(new_urls), "--skills-dir", str(skills), "--json"
    )
    assert code == 0, err
    report = json.loads(out)
    assert report["added"] == [site.url("/site/oolong.html")]
    assert report["changed"] == [site.url("/site/teapots.html")]
    assert report["removed"] == [site.url("/site/sugar.html")]
    assert report["unchanged"] == [site.url("/site/kettles.html")]
    assert 0 < report["chunks_embedded"] < report["stats"]["chunks"]
    assert report["stats"]["articles"] == 3
    assert report["skill"] == str(skills / "tea" / "SKILL.md")
    assert "Oolong" in (skills / "tea" / "SKILL.md").read_text()
    assert report["stats"]["links"] == 3  # kettles -> teapots, kettles -> oolong (new), teapots -> kettles

    assert validate_pack(pack).ok
    manifest = json.loads((pack / "manifest.json").read_text())
    assert manifest["description"] == "Tea gear"
    assert (pack / "urls.txt").read_text() == new_urls.read_text()
    assert json.loads((pack / "kg_config.json").read_text())["top_k"] == 3  # the user's config kept
    assert "Oolong" in (pack / "skill.md").read_text() and "Sugar" not in (pack / "skill.md").read_text()
    assert KeywordIndex.load(pack / "bm25").search("oxidised", 3)

    top = _query(capsys, "Are oolong leaves rolled and oxidised?")["sources"][0]  # type: ignore[index]
    assert top["title"] == "Oolong"
    sources = _query(capsys, "rock sugar chrysanthemum")["sources"]
    assert all(s["title"] != "Sugar" for s in sources)  # type: ignore[union-attr]
    text = _query(capsys, "Yixing teapot")["answer"]
    assert "Yixing clay" in str(text)


def test_update_keeps_a_document_that_cannot_be_fetched_now(
    capsys: pytest.CaptureFixture[str], site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    urls = _urls(tmp_path, site, list(PAGES))
    assert cli(capsys, "pack", "create", "tea", "--urls", str(urls))[0] == 0
    site.always("/site/sugar.html", 500)
    code, out, err = cli(capsys, "pack", "update", "tea", "--retries", "0", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert [k["url"] for k in report["kept"]] == [site.url("/site/sugar.html")]
    assert "HTTP 500" in report["kept"][0]["error"]
    assert report["stats"]["articles"] == 3 and report["chunks_embedded"] == 0
    assert validate_pack(wikigr_home / "packs" / "tea").ok
    assert _query(capsys, "rock sugar chrysanthemum")["sources"][0]["title"] == "Sugar"  # type: ignore[index]


def test_update_that_fetches_nothing_leaves_the_pack_as_it_was(
    capsys: pytest.CaptureFixture[str], site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    urls = _urls(tmp_path, site, list(PAGES))
    assert cli(capsys, "pack", "create", "tea", "--urls", str(urls))[0] == 0
    before = (wikigr_home / "packs" / "tea" / "manifest.json").read_text()
    gone = _urls(tmp_path, site, ["/site/missing.html"], "gone.txt")
    code, _, err = cli(capsys, "pack", "update", "tea", "--urls", str(gone))
    assert code == 1
    assert_one_error(err, "the pack is unchanged")
    assert (wikigr_home / "packs" / "tea" / "manifest.json").read_text() == before


def test_update_refuses_a_passage_corpus_pack(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps([{"title": "A", "text": "Alpha passage about tea."}]))
    assert cli(capsys, "pack", "create", "corp", "--corpus", str(corpus))[0] == 0
    code, _, err = cli(capsys, "pack", "update", "corp")
    assert code == 2
    assert_one_error(err, "update is not supported for this pack kind")
    urls = tmp_path / "urls.txt"
    urls.write_text(f"{DOCS}\n")
    for extra in (["--url", str(DOCS)], ["--urls", str(urls)]):  # a mixed pack could not be updated
        code, _, err = cli(capsys, "pack", "create", "mixed", "--corpus", str(corpus), *extra)
        assert code == 2, err
        assert_one_error(
            err, "--corpus builds a pack from a passage corpus; it cannot be combined with --url/--urls"
        )
    assert cli(capsys, "pack", "info", "mixed")[0] == 2  # nothing built


def test_update_unknown_pack_and_missing_urls_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, _, err = cli(capsys, "pack", "update", "nope")
    assert code == 2
    assert_one_error(err, "unknown pack 'nope'")


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_an_unchanged_update_keeps_the_store_and_refreshes_the_fetch_times(
    site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    urls = _urls(tmp_path, site, list(PAGES))
    build_pack("tea", [site.url(p) for p in PAGES], url_list=urls.read_text())
    pack = wikigr_home / "packs" / "tea"
    data = json.loads((pack / "manifest.json").read_text())
    for source in data["sources"]:
        source["fetched_at"] = "2000-01-01T00:00:00Z"  # fetched long ago
    (pack / "manifest.json").write_text(json.dumps(data))
    before = load_manifest(pack / "manifest.json")
    store, index = _sha(pack / "pack.db"), _sha(pack / "bm25" / "chunk_ids.json")

    report = update_pack("tea")
    assert report.store_kept and report.chunks_embedded == 0
    assert len(report.unchanged) == 3 and report.chunks_reused == before.stats.chunks
    assert _sha(pack / "pack.db") == store and _sha(pack / "bm25" / "chunk_ids.json") == index
    after = load_manifest(pack / "manifest.json")
    assert after.stats == before.stats and after.stats.entities > 0  # the entity graph, as it was
    assert [s.sha256 for s in after.sources] == [s.sha256 for s in before.sources]
    assert all(s.fetched_at and s.fetched_at > "2000-01-01T00:00:00Z" for s in after.sources)
    assert validate_pack(pack).ok
    assert sorted(p.name for p in pack.parent.iterdir()) == ["tea"]  # no lock, partial or old

    site.add("/site/sugar.html", PAGES["/site/sugar.html"].replace("gently", "gently and slowly"))
    report = update_pack("tea")
    assert not report.store_kept and report.changed == [site.url("/site/sugar.html")]
    assert report.chunks_embedded >= 1


def test_an_update_of_a_pack_built_without_a_graph_builds_none(
    capsys: pytest.CaptureFixture[str], site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    urls = _urls(tmp_path, site, list(PAGES))
    assert cli(capsys, "pack", "create", "tea", "--urls", str(urls), "--no-graph")[0] == 0
    pack = wikigr_home / "packs" / "tea"
    assert load_manifest(pack / "manifest.json").stats.entities == 0
    site.add("/site/teapots.html", PAGES["/site/teapots.html"].replace("clay", "Yixing clay"))
    code, out, err = cli(capsys, "pack", "update", "tea", "--json")
    assert code == 0, err
    report = json.loads(out)
    assert report["changed"] == [site.url("/site/teapots.html")]  # the store was written again
    assert report["stats"]["entities"] == report["stats"]["facts"] == report["stats"]["relations"] == 0
    with Store.open(pack / "pack.db") as store:
        assert store.stats()["entities"] == 0


def _snapshot(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` with its sha256."""
    return {str(p.relative_to(folder)): _sha(p) for p in sorted(folder.rglob("*")) if p.is_file()}


def _written_since(path: Path, since: float) -> bool:
    """``path`` was written after ``since`` (not what an interrupted update left)."""
    try:
        return path.stat().st_mtime >= since
    except FileNotFoundError:
        return False


def _update(*args: str) -> subprocess.Popen[str]:
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:  # a background job: let the child get it
        signal.signal(signal.SIGINT, signal.default_int_handler)
    return subprocess.Popen(
        [sys.executable, "-m", "wikigr", "pack", "update", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_ctrl_c_at_any_moment_of_an_update_leaves_the_pack_as_it_was_or_updated(
    site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    """SIGINT into `pack update` (a real process, a page changed each time) at increasing shares of
    how long an update takes here, then once the new store is being written and once the new pack
    is swapped in (the skill, the report and the process's exit are left): it says "interrupted"
    and exits 130 with every file of the pack as it was, or it finished (exit 0)."""
    urls = _urls(tmp_path, site, list(PAGES))
    build_pack(
        "tea", [site.url(p) for p in PAGES], url_list=urls.read_text(), options=BuildOptions(graph=False)
    )
    pack = wikigr_home / "packs" / "tea"
    partial = pack.parent / ".tea.partial"
    edits = iter(range(100))

    def edit() -> None:  # a changed page: the update embeds and writes a new store
        site.add(
            "/site/sugar.html", PAGES["/site/sugar.html"].replace("gently", f"gently {next(edits)} times")
        )

    edit()
    started = time.monotonic()
    proc = _update("tea")
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    took = time.monotonic() - started
    manifest = pack / "manifest.json"
    launched, before = time.time(), _snapshot(pack)  # of each run, below
    moments: list[float | Callable[[], bool] | tuple[Callable[[], bool], float]] = [
        took * share for share in (0.1, 0.4, 0.7, 0.95)
    ]

    def swapped() -> bool:
        """The new manifest is in place (between the swap's two renames the folder is away)."""
        try:
            return _sha(manifest) != before["manifest.json"]
        except FileNotFoundError:
            return False

    moments += [lambda: _written_since(partial / "pack.db", launched), swapped]
    # Swapped in, then while the command reports what it did (a window of a few milliseconds).
    moments += [(swapped, delay) for delay in (0.002, 0.01, 0.03)]
    for moment in moments:
        edit()
        before = _snapshot(pack)
        launched = time.time()
        proc = _update("tea")
        if isinstance(moment, float):
            time.sleep(moment)
        else:
            condition, delay = moment if isinstance(moment, tuple) else (moment, 0.0)
            while not condition() and proc.poll() is None:
                time.sleep(0.002)
            time.sleep(delay)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=600)
        if proc.returncode == 130:
            assert err.splitlines()[-1:] == ["Error: interrupted"] and "Traceback" not in err, err
            assert _snapshot(pack) == before, f"changed by an update interrupted ({moment})"
        else:
            assert proc.returncode == 0, f"exit {proc.returncode} ({moment}): {err}"
            assert _snapshot(pack) != before
        assert validate_pack(pack).ok
        assert sorted(p.name for p in pack.parent.iterdir() if p.name != ".tea.partial") == ["tea"]


def test_progress_is_plain_lines_on_a_pipe_and_quiet_silences_it(
    site: LocalServer, tmp_path: Path, wikigr_home: Path
) -> None:
    """stderr a pipe (a log, CI): `pack create` says what it is doing in plain lines, at most one
    every 2 s (none for a command that takes less), and `--quiet` says nothing."""
    site.slow("/site/oolong.html", delay=3, body=OOLONG)  # the fetch takes 3 s at least: a line
    urls = _urls(tmp_path, site, [*PAGES, "/site/oolong.html"])
    create = [sys.executable, "-m", "wikigr", "pack", "create", "tea", "--urls", str(urls), "--no-graph"]
    done = subprocess.run(create, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.splitlines()
    assert any(line.startswith("wikigr: fetch 4/4 ") for line in lines), done.stderr
    assert all(line.startswith("wikigr: ") and line.endswith("s)") for line in lines), done.stderr
    assert "\x1b" not in done.stderr and "\r" not in done.stderr  # no bar drawn into a log
    site.add("/site/sugar.html", PAGES["/site/sugar.html"].replace("gently", "gently, slowly"))
    for command in (["pack", "update", "tea", "--quiet"], ["pack", "graph", "tea", "-q"]):
        done = subprocess.run(
            [sys.executable, "-m", "wikigr", *command], capture_output=True, text=True, timeout=600
        )
        assert (done.returncode, done.stderr) == (0, ""), done.stderr
