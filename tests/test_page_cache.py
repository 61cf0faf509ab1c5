"""The page index's cache (``$WIKIGR_HOME/cache/pages/``, wikigr/retrieval/page_cache.py): a fresh
process answers from it exactly as from the store, without pyarrow; a pack changed since (rebuilt,
or written in place) is read again, never from an old entry; damaged files are rebuilt silently."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.httpserver import LocalServer
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.pack.queries import StoreQueries
from wikigr.pack.store import open_store
from wikigr.retrieval import page_cache
from wikigr.retrieval.page_index import page_tables, store_page_tables

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = (
    "How do I join strings with str.join?",
    "set a timeout on a socket",
    "lowercase copy of a string",
)
OPTIONS = {"router": {"budget_ms": 1e9}}  # every attempt the router would make, however slow a run is


def _page(title: str, sections: list[tuple[str, str, str]]) -> str:
    """A Sphinx-like page: one <section id> with a heading per (anchor, heading, body HTML)."""
    body = "".join(f'<section id="{a}"><h2>{h}</h2>{html}</section>' for a, h, html in sections)
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        f'<div class="body" role="main"><h1>{title}</h1>{body}</div></body></html>'
    )


def _definition(anchor: str, signature: str, text: str) -> str:
    return f'<dl><dt id="{anchor}">{signature}</dt><dd><p>{text}</p></dd></dl>'


JOIN = '<a href="stdtypes.html#str.join">str.join()</a>'
TIMEOUT = '<a href="socket.html#socket.socket.settimeout">socket.settimeout()</a>'


def _pages(extra: str = "") -> dict[str, str]:
    """Three pages that link to each other's definitions; ``extra``: one more definition."""
    return {
        "stdtypes.html": _page(
            "Built-in Types",
            [
                (
                    "str",
                    "String methods",
                    _definition(
                        "str.join",
                        "str.join(iterable)",
                        "Return a string which is the concatenation of the strings in iterable. "
                        "The separator between elements is the string providing this method.",
                    )
                    + _definition(
                        "str.lower",
                        "str.lower()",
                        "Return a copy of the string with all the cased characters converted to lowercase.",
                    )
                    + extra,
                ),
                (
                    "dict",
                    "Mapping types",
                    _definition("dict.items", "dict.items()", "Return a new view of the dictionary's items."),
                ),
            ],
        ),
        "socket.html": _page(
            "socket — networking",
            [
                (
                    "objects",
                    "Socket objects",
                    _definition(
                        "socket.socket.settimeout",
                        "socket.settimeout(value)",
                        "Set a timeout on blocking socket operations. The value is a number of seconds.",
                    ),
                ),
                (
                    "example",
                    "Example",
                    f"<p>An echo server reads bytes and joins them with {JOIN} before it answers.</p>",
                ),
            ],
        ),
        "tutorial.html": _page(
            "Tutorial",
            [
                ("strings", "Strings", f"<p>Strings are joined with {JOIN}; a separator goes between.</p>"),
                ("network", "Networking", f"<p>A client that must not wait forever sets {TIMEOUT}.</p>"),
            ],
        ),
    }


def _build(out: Path, pages: dict[str, str]) -> None:
    with LocalServer() as server:
        for path, body in pages.items():
            server.add("/" + path, body)
        report = build_pack(
            "docs", [server.url("/" + p) for p in pages], out=out, options=BuildOptions(graph=False)
        )
    assert not report.failed


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    out = tmp_path_factory.mktemp("page-cache") / "docs"
    with pytest.MonkeyPatch.context() as patch:  # the build's caches: not the tests' homes
        patch.setenv("WIKIGR_HOME", str(tmp_path_factory.mktemp("build-home")))
        _build(out, _pages())
    yield out


def _without_timings(value: Any) -> Any:
    """``value`` without its timings (``ms`` and ``*_ms`` keys, at any depth)."""
    if isinstance(value, dict):
        return {k: _without_timings(v) for k, v in value.items() if k != "ms" and not k.endswith("_ms")}
    if isinstance(value, list):
        return [_without_timings(v) for v in value]
    return value


def _answers(pack: Path) -> list[Any]:
    """The whole result of each question, from a new agent (the pack's default profile, auto)."""
    with KnowledgeGraphAgent(pack, llm=None, options=OPTIONS) as agent:
        results = [agent.query(q).to_json() for q in QUESTIONS]
    for result in results:  # the router chose the pages strategy: page_score ran
        router = next(s for s in result["trace"]["stages"] if s["stage"] == "router")
        assert router["detail"]["chosen"] == "pages", router
    return [_without_timings(r) for r in results]


def _cache_files(home: Path) -> list[Path]:
    folder = home / "cache" / "pages"
    return sorted(folder.iterdir()) if folder.exists() else []


def _entry(home: Path) -> Path:
    """The one entry in the cache (its path without suffix)."""
    files = _cache_files(home)
    assert [f.suffix for f in files] == [".json", ".npy"], files
    return files[0].with_suffix("")


@pytest.fixture
def no_store_reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Reading what the page index reads from the store fails the test."""

    def refuse(self: StoreQueries, *args: object) -> None:
        raise AssertionError("the page index read the store")

    for name in ("chunk_matrix", "article_urls", "article_in_degrees", "link_anchors", "chunk_texts"):
        monkeypatch.setattr(StoreQueries, name, refuse)
    yield


def test_a_warm_cache_answers_as_the_store_does(pack: Path, wikigr_home: Path, request: Any) -> None:
    before = wikigr_home / "cache" / "vectors"  # where an earlier version kept the chunk vectors alone
    before.mkdir(parents=True)
    (before / f"{'0' * 40}.npz").write_bytes(b"PK")
    cold = _answers(pack)  # an empty home: read from the store, then kept
    entry = _entry(wikigr_home)
    assert not before.exists()
    with open_store(pack / "pack.db") as store:
        from_store = store_page_tables(store)
    kept = page_cache.read_page_tables(entry)
    assert kept is not None
    for field in ("chunk_ids", "pages", "urls", "target_fragments", "parts", "shown", "described"):
        assert getattr(kept, field) == getattr(from_store, field), field
    assert kept.matrix.dtype == np.float32 and np.array_equal(kept.matrix, from_store.matrix)
    assert np.array_equal(kept.part_rows, from_store.part_rows)
    assert kept.shown and kept.target_fragments  # the pack has definitions and link texts
    request.getfixturevalue("no_store_reads")
    assert _answers(pack) == cold  # from the cache alone: the same answers, sources and traces


def test_a_fresh_query_on_a_warm_cache_imports_no_pyarrow(pack: Path) -> None:
    """As a skill asks: `python -m wikigr query PACK Q --json` in new processes, the first filling
    the cache; the second answers the same without importing pyarrow (nor numpy.ma)."""
    probe = (
        "import atexit, runpy, sys\n"
        "names = ('pyarrow', 'numpy.ma')\n"
        "imported = lambda: [m for m in names if m in sys.modules]\n"
        "atexit.register(lambda: print('IMPORTED', imported(), file=sys.stderr))\n"
        "sys.argv = ['wikigr', *sys.argv[1:]]\n"
        "runpy.run_module('wikigr', run_name='__main__', alter_sys=True)\n"
    )
    runs = []
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-c", probe, "query", str(pack), QUESTIONS[0], "--json"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=ROOT,  # `-c` puts the working folder first on sys.path: this checkout's wikigr
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        assert proc.returncode == 0, proc.stderr
        imported = next(x for x in proc.stderr.splitlines() if x.startswith("IMPORTED "))
        runs.append((_without_timings(json.loads(proc.stdout)), imported))
    (cold, cold_imports), (warm, warm_imports) = runs
    assert "pyarrow" in cold_imports  # the store's vectors are read through Arrow once
    assert warm_imports == "IMPORTED []"
    assert warm == cold


def test_a_changed_pack_is_not_answered_from_an_old_entry(
    tmp_path: Path, wikigr_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "docs"
    _build(out, _pages())
    before = _answers(out)
    [old] = {f.with_suffix("") for f in _cache_files(wikigr_home)}

    def fresh_answers() -> list[Any]:
        """The answers from an empty home: what the store gives now."""
        with monkeypatch.context() as patch:
            patch.setenv("WIKIGR_HOME", str(tmp_path / f"home-{len(list(tmp_path.iterdir()))}"))
            return _answers(out)

    # Rebuilt in place with one more definition, which the question asks for.
    extra = _definition("str.upper", "str.upper()", "Return an uppercase copy of the string.")
    _build(out, _pages(extra))
    after = _answers(out)
    assert after == fresh_answers() and after != before
    entries = {f.with_suffix("") for f in _cache_files(wikigr_home)}
    assert old in entries and len(entries) == 2

    # Written in place, the folder and the file's size the same: a chunk's text and vector.
    with open_store(out / "pack.db", read_only=False) as store:
        [[chunk_id, vector]] = store.rows(
            "MATCH (c:Chunk) WHERE c.text CONTAINS 'upper' RETURN c.id, c.embedding LIMIT 1"
        )
        store.rows(
            "MATCH (c:Chunk) WHERE c.id = $id SET c.text = $t, c.embedding = $v",
            {"id": chunk_id, "t": "str.casefold()\n\nReturn a casefolded copy.", "v": vector[::-1]},
        )
    edited = _answers(out)
    assert edited == fresh_answers() and edited != after
    assert len({f.with_suffix("") for f in _cache_files(wikigr_home)}) == 3


def _damages(entry: Path) -> Iterator[tuple[str, str, bytes]]:
    """Ways a cache entry can be damaged: (what, which file, its new bytes)."""
    tables = json.loads(entry.with_suffix(".json").read_bytes())
    vectors = entry.with_suffix(".npy").read_bytes()

    def edited(**changes: Any) -> bytes:
        return json.dumps({**tables, **changes}).encode()

    yield "not JSON", ".json", b"\x00garbage"
    yield "cut short", ".json", entry.with_suffix(".json").read_bytes()[:-100]
    yield "a list", ".json", b"[]"
    yield "a field missing", ".json", json.dumps({k: v for k, v in tables.items() if k != "urls"}).encode()
    yield "a number for a string", ".json", edited(pages=[1, *tables["pages"][1:]])
    yield "a fraction for an index", ".json", edited(chunk_page=[0.5, *tables["chunk_page"][1:]])
    yield "a page out of range", ".json", edited(chunk_page=[len(tables["pages"]), *tables["chunk_page"][1:]])
    yield "a target out of range", ".json", edited(part_rows=[10**6, *tables["part_rows"][1:]])
    yield "counts that disagree", ".json", edited(chunk_ids=tables["chunk_ids"][:-1])
    yield "no links counted", ".json", edited(target_counts=[0] * len(tables["target_counts"]))
    yield "definitions unordered", ".json", edited(defining_rows=tables["defining_rows"][::-1])
    yield "vectors cut short", ".npy", vectors[: len(vectors) // 2]
    yield "vectors not npy", ".npy", b"PK\x03\x04 not an array"
    nan = np.load(entry.with_suffix(".npy"))
    nan[0, 0] = np.nan
    yield "vectors not finite", ".npy", _npy(nan)
    yield "vectors of ints", ".npy", _npy(np.zeros(nan.shape, dtype=np.int64))
    yield "fewer vectors", ".npy", _npy(nan[1:])


def _npy(array: np.ndarray) -> bytes:
    import io

    buffer = io.BytesIO()
    np.save(buffer, array)
    return buffer.getvalue()


def test_a_damaged_entry_is_rebuilt_silently(pack: Path, wikigr_home: Path) -> None:
    cold = _answers(pack)
    entry = _entry(wikigr_home)
    good = page_cache.read_page_tables(entry)
    assert good is not None
    for what, suffix, damage in list(_damages(entry)):
        entry.with_suffix(suffix).write_bytes(damage)
        assert page_cache.read_page_tables(entry) is None, what
        assert _answers(pack) == cold, what  # read from the store again, no traceback
        rebuilt = page_cache.read_page_tables(entry)  # and kept again
        assert rebuilt is not None and rebuilt.chunk_ids == good.chunk_ids, what
    entry.with_suffix(".npy").unlink()  # half an entry
    assert _answers(pack) == cold
    assert page_cache.read_page_tables(entry) is not None


def test_where_nothing_can_be_kept_the_definitions_are_read_per_page(pack: Path, wikigr_home: Path) -> None:
    cached = _answers(pack)
    (wikigr_home / "cache").mkdir(exist_ok=True)
    for f in _cache_files(wikigr_home):
        f.unlink()
    (wikigr_home / "cache" / "pages").rmdir()
    (wikigr_home / "cache" / "pages").write_text("a file where the folder would be")
    assert _answers(pack) == cached  # each chunk's definitions read when its page is looked at
    assert (wikigr_home / "cache" / "pages").read_text() == "a file where the folder would be"
    with open_store(pack / "pack.db") as store:
        assert page_cache.page_cache_file(store) is not None  # a place, where nothing can be written:
        tables = page_tables(store)  # every chunk's text is not read ahead
    assert not tables.has_definitions and not tables.shown and tables.chunk_ids
