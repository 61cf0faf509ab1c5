"""The documentation stages `literals` and `page_score`, on real packs built from local HTML."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.errors import UsageError
from wikigr.pack.store import open_store
from wikigr.retrieval.page_index import PageIndex, defines
from wikigr.retrieval.profiles import CANONICAL_ORDER, make_options, resolve_stages
from wikigr.retrieval.stages.literals import strip_literals


def _page(title: str, sections: list[tuple[str, str, str]]) -> str:
    """A Sphinx-like page: one <section id> with a heading per (anchor, heading, body HTML)."""
    body = "".join(
        f'<section id="{anchor}"><h2>{heading}</h2>{html}</section>' for anchor, heading, html in sections
    )
    return (
        f"<!DOCTYPE html><html><head><title>{title}</title></head><body>"
        f'<div class="body" role="main"><h1>{title}</h1>{body}</div></body></html>'
    )


# Links from the tutorial to definitions in the library reference.
SORTED = '<a href="../library/functions.html#sorted">sorted()</a>'
LEN = '<a href="../library/functions.html#len">len()</a>'
ITEMS = '<a href="../library/stdtypes.html#dict.items">dict.items()</a>'
LOWER = '<a href="../library/stdtypes.html#str.lower">str.lower()</a>'

DOCS = {
    "library/functions.html": _page(
        "Built-in Functions",
        [
            (
                "sorted",
                "sorted",
                "<p>sorted(iterable, key=None, reverse=False) returns a new sorted list from the items in "
                "iterable. The key function extracts a comparison key from each element; reverse=True "
                "sorts in descending order. The sort is stable.</p>",
            ),
            (
                "len",
                "len",
                "<p>len(s) returns the length (the number of items) of an object: a string, bytes, tuple, "
                "list or range, or a collection such as a dictionary, set or frozen set.</p>",
            ),
            (
                "sum",
                "sum",
                "<p>sum(iterable, start=0) sums start and the items of an iterable from left to right and "
                "returns the total. The items are normally numbers.</p>",
            ),
        ],
    ),
    "library/stdtypes.html": _page(
        "Built-in Types",
        [
            (
                "dict.items",
                "Mapping types",
                "<p>dict.items() returns a new view of the dictionary's items, (key, value) pairs. "
                "dict.keys() returns a view of the dictionary's keys.</p>",
            ),
            (
                "str.lower",
                "String methods",
                "<p>str.lower() returns a copy of the string with all the cased characters converted to "
                "lowercase.</p>",
            ),
        ],
    ),
    "library/heapq.html": _page(
        "heapq — Heap queue algorithm",
        [
            (
                "heapq.nlargest",
                "Functions",
                "<p>heapq.nlargest(n, iterable, key=None) returns a list with the n largest elements "
                "from the dataset defined by iterable.</p>",
            ),
            (
                "theory",
                "Theory",
                "<p>Heaps are arrays for which a[k] &lt;= a[2*k+1] and a[k] &lt;= a[2*k+2] for all k, "
                "counting elements from zero.</p>",
            ),
        ],
    ),
    "library/socket.html": _page(
        "socket — Low-level networking interface",
        [
            (
                "socket.socket.settimeout",
                "Socket objects",
                "<p>socket.settimeout(value) sets a timeout on blocking socket operations; the value is "
                "a number of seconds.</p>",
            ),
            (
                "examples",
                "Example",
                '<p>An echo server counts the bytes it received with <a href="functions.html#len">len()</a> '
                "and closes the connection "
                "when the client is done.</p>",
            ),
        ],
    ),
    "tutorial/sorting.html": _page(
        "Sorting HOW TO",
        [
            (
                "basics",
                "Sorting basics",
                f"<p>A simple ascending sort is easy: call the {SORTED} function. It returns a new "
                f"sorted list. To sort a dictionary by value, sort its {ITEMS}.</p>",
            ),
            (
                "keys",
                "Key functions",
                f"<p>The key parameter of {SORTED} takes a function, such as {LOWER} for a "
                "case-insensitive sort of strings.</p>",
            ),
        ],
    ),
    "tutorial/datastructures.html": _page(
        "Data Structures",
        [
            (
                "lists",
                "More on lists",
                f"<p>The number of items of a list is {LEN}; a list can be sorted in place with "
                f"list.sort() or copied sorted with {SORTED}.</p>",
            ),
            (
                "dicts",
                "Dictionaries",
                f"<p>Looping over a dictionary, the key and value can be had at once with {ITEMS}; "
                f"{LEN} counts the keys.</p>",
            ),
        ],
    ),
}


def _served_pack(
    tmp_path_factory: pytest.TempPathFactory,
    name: str,
    pages: dict[str, str],
    options: BuildOptions | None = None,
) -> Path:
    """A pack built from ``pages`` (path -> HTML) served on 127.0.0.1."""
    from tests.httpserver import LocalServer

    out = tmp_path_factory.mktemp("docpacks") / name
    with LocalServer() as server:
        for path, body in pages.items():
            server.add("/" + path, body)
        report = build_pack(name, [server.url("/" + p) for p in pages], out=out, options=options)
    assert not report.failed
    return out


@pytest.fixture(scope="module")
def docs_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _served_pack(tmp_path_factory, "docs", DOCS)


def _detail(result: Any, stage: str) -> dict[str, Any]:
    entry = next(s for s in result.trace["stages"] if s["stage"] == stage)
    assert "skipped" not in entry, entry
    return dict(entry.get("detail", {}))


def _skipped(result: Any, stage: str) -> str:
    entry = next(s for s in result.trace["stages"] if s["stage"] == stage)
    return str(entry.get("skipped", ""))


def _page_name(url: str) -> str:
    return url.split("#", 1)[0].rsplit("/", 1)[-1]


# -- literals ------------------------------------------------------------------------------------


def test_strip_literals_drops_values_but_keeps_api_references() -> None:
    assert strip_literals("sort dictionary `mydict` by value") == "sort dictionary by value"
    assert strip_literals("read file 'myfile.txt' into \"data\"") == "read file into"
    assert (
        strip_literals("update the `globals()` dict from `os.environ`")
        == "update the globals() dict from os.environ"
    )
    assert strip_literals("apply `vars(args)` to `[1, 2]`") == "apply vars(args) to"
    assert strip_literals("don't split it's words") == "don't split it's words"  # apostrophes are no quotes
    assert strip_literals("keep `os.path` out", keep_api=False) == "keep out"
    # Quotes are dropped from code questions only: a quoted title is what a question is about.
    assert strip_literals('Who sang "Diamond Cut" in 1979?') == 'Who sang "Diamond Cut" in 1979?'
    assert strip_literals("check if variable 'myVar' exists") == "check if variable exists"
    assert strip_literals("convert '1633837924' to string") == "convert to string"
    assert strip_literals("run the command 'ls'") == "run the command 'ls'"  # a word: maybe a name


def test_literals_cleans_the_queries_the_search_stages_use(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(
        docs_pack, profile="baseline", enable=["keyword", "literals"], llm=None
    ) as agent:
        assert agent.stage_names[:3] == ["literals", "vector", "keyword"]
        result = agent.query("sort dictionary `mydict` by 'value'")
        assert _detail(result, "literals")["queries"] == ["sort dictionary by"]
        assert "quotes no literal value" in _skipped(agent.query("sort a dictionary by value"), "literals")
        # Fewer than min_words words left: the question is searched as it is.
        assert "quotes no literal value" in _skipped(agent.query("sort `mydict`"), "literals")


# -- page_score ----------------------------------------------------------------------------------


def test_page_score_goes_after_the_searches_and_the_router() -> None:
    assert CANONICAL_ORDER.index("literals") < CANONICAL_ORDER.index("vector")
    assert (
        CANONICAL_ORDER.index("router") < CANONICAL_ORDER.index("page_score") < CANONICAL_ORDER.index("dedup")
    )
    stages, _ = resolve_stages("balanced", enable=["page_score", "literals"])
    names = [s.name for s in stages]
    assert names[:4] == ["literals", "vector", "keyword", "title_match"]
    assert names[names.index("page_score") + 1] == "quality"


def test_page_score_options_are_checked() -> None:
    assert make_options("page_score", {"authority": 0.5}).authority == 0.5
    bad_options = (
        {"share": -1.0},
        {"top_chunks": 0},
        {"link_text": float("nan")},
        {"passages_per_page": 0},
        {"first_page_passages": 0},
    )
    for bad in bad_options:
        with pytest.raises(UsageError):
            make_options("page_score", bad)


def test_page_index_reads_authority_and_link_targets(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(docs_pack, profile="baseline", enable=["page_score"], llm=None) as agent:
        index = PageIndex.of(agent.context)
        assert PageIndex.of(agent.context) is index  # loaded once per agent
        pages = [_page_name(p) for p in index.pages]
        authority = dict(zip(pages, index.authority.tolist(), strict=True))
        # functions.html has the most linking pages (sorting, datastructures, socket).
        assert authority["functions.html"] == 1.0
        assert 0 < authority["stdtypes.html"] < 1.0
        assert authority["heapq.html"] == 0.0
        assert index.matrix.shape == (len(index.chunk_ids), agent.context.embedder.dimension)
        links = dict(zip(pages, index.link_scores("sort the dictionary").tolist(), strict=True))
        # "sort" names sorted (a prefix), "dictionary" names dict (items); nothing names heapq.
        assert links["functions.html"] > 0 and links["stdtypes.html"] > 0
        assert max(links.values()) == 1.0 and links["heapq.html"] == 0.0
        assert links["sorting.html"] == 0.0  # no page links to the tutorial's sections


def test_page_score_orders_passages_page_by_page(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(
        docs_pack,
        profile="baseline",
        enable=["keyword", "literals", "page_score"],
        options={"page_score": {"authority": 0.3}},  # the most linked page wins over the sorting HOWTO
        llm=None,
        top_k=6,
    ) as agent:
        result = agent.query("sort the dictionary `d` by its values in descending order")
    detail = _detail(result, "page_score")
    pages = [_page_name(s.url) for s in result.sources]
    assert _page_name(detail["top_pages"][0]) == pages[0] == pages[1] == "functions.html"  # the best: 2
    rest = pages[2:]
    distinct = list(dict.fromkeys(rest))
    assert rest[: len(distinct)] == distinct  # then one passage per page before a page's next one
    assert len(distinct) >= 3
    assert detail["authority"] == "yes" and detail["link_targets"] >= 4


CSV_CONTENTS = (  # one section of a reference page, cut into several chunks (max_words 40)
    "<p>csv.reader(csvfile, dialect='excel') returns a reader object that iterates over the lines "
    "of the given csvfile and reads each row of the CSV file as a list of strings, so a CSV file can "
    "be read row by row in a for loop.</p>"
    "<p>csv.writer(csvfile, dialect='excel') returns a writer object that converts the user's data "
    "into delimited strings and writes each row to the given CSV file; its writerow method writes "
    "one row and writerows writes many rows.</p>"
    "<p>csv.register_dialect(name, dialect) associates a dialect with a name, and csv.list_dialects "
    "returns the names of all registered dialects; a dialect groups the delimiter and quoting rules "
    "of a file format.</p>"
)
REFERENCE = {
    "library/csv.html": _page(
        "csv — CSV File Reading and Writing", [("module-contents", "Module Contents", CSV_CONTENTS)]
    ),
    "library/io.html": _page(
        "io — Core tools for working with streams",
        [("text", "Text I/O", "<p>A text file is read with open() and its read or readline methods.</p>")],
    ),
    "tutorial/inputoutput.html": _page(
        "Input and Output",
        [
            (
                "files",
                "Reading and writing files",
                "<p>open() returns a file object; read a file line by line by looping over it.</p>",
            )
        ],
    ),
}


@pytest.fixture(scope="module")
def reference_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _served_pack(
        tmp_path_factory, "reference", REFERENCE, BuildOptions(max_words=40, overlap_words=0, graph=False)
    )


def test_the_best_page_gives_two_passages_though_one_section_holds_them(reference_pack: Path) -> None:
    """A reference page's one section ("Module Contents") holds many definitions: the best page's
    two best passages come first (``first_page_passages``), and dedup keeps what page_score placed
    though it keeps one passage per section otherwise."""
    question = "How do I read rows of a CSV file with csv.reader and write rows with csv.writer?"
    sources = {}
    for first in (1, 2):
        with KnowledgeGraphAgent(
            reference_pack,
            profile="baseline",
            enable=["keyword", "page_score"],
            options={"page_score": {"first_page_passages": first, "min_chunks_per_page": 1.0}},
            llm=None,
            top_k=4,
        ) as agent:
            result = agent.query(question)
            sources[first] = [(_page_name(s.url), s.section) for s in result.sources]
            assert _detail(result, "dedup")["kept_as_page_score_placed"] >= 2  # the trace says why
    csv = ("csv.html", "Module Contents")
    assert sources[2][:2] == [csv, csv]
    assert sources[1][0] == csv != sources[1][1]
    options = {"first_page_passages": 1, "passages_per_page": 3, "min_chunks_per_page": 1.0}
    with KnowledgeGraphAgent(
        reference_pack,
        profile="baseline",
        enable=["keyword", "page_score"],
        options={"page_score": options},
        llm=None,
        top_k=3,
    ) as agent:  # the best page never gives fewer passages than the others
        assert [(_page_name(s.url), s.section) for s in agent.query(question).sources] == [csv] * 3
    with KnowledgeGraphAgent(reference_pack, profile="baseline", enable=["keyword"], llm=None) as agent:
        plain = [(_page_name(s.url), s.section) for s in agent.query(question).sources]
    assert plain.count(csv) == 1  # without page_score: one passage per section


def test_page_score_gives_top_pages_their_best_chunk(docs_pack: Path) -> None:
    options = {"vector": {"candidates": 1}}
    with KnowledgeGraphAgent(
        docs_pack, profile="baseline", enable=["page_score"], options=options, llm=None, top_k=10
    ) as agent:
        result = agent.query("the largest elements of a heap")
    detail = _detail(result, "page_score")
    assert detail["added"] >= 2
    assert any(s.origin == "page_score" for s in result.sources)
    assert len({_page_name(s.url) for s in result.sources}) >= 3


def test_page_score_skips_passage_packs(tmp_path: Path) -> None:
    corpus = tmp_path / "corpus.json"
    corpus.write_text(
        json.dumps(
            [
                {"title": "Heaps", "text": "A heap keeps its smallest element first."},
                {"title": "Sockets", "text": "A socket connects two programs over a network."},
            ]
        )
    )
    out = tmp_path / "passages"
    build_pack("passages", [], out=out, corpus=corpus, options=_no_graph())
    with KnowledgeGraphAgent(out, profile="baseline", enable=["page_score"], llm=None) as agent:
        result = agent.query("what keeps the smallest element first?")
    assert "passages, not pages" in _skipped(result, "page_score")
    assert result.sources[0].title == "Heaps"


def _no_graph() -> Any:
    from wikigr.build import BuildOptions

    return BuildOptions(graph=False)


def test_page_score_runs_without_links_and_refuses_bad_vectors(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, title in (("a.md", "Heaps"), ("b.md", "Sockets")):
        (docs / name).write_text(
            f"# {title}\n\n## One\n\n{title} part one explains the basics of {title.lower()}.\n\n"
            f"## Two\n\n{title} part two explains the details of {title.lower()}.\n"
        )
    out = tmp_path / "nolinks"
    build_pack("nolinks", [docs.as_uri()], out=out, options=_no_graph())
    with KnowledgeGraphAgent(out, profile="baseline", enable=["page_score"], llm=None) as agent:
        result = agent.query("the details of heaps")
    detail = _detail(result, "page_score")
    assert detail["authority"] == "no links in this pack" and "no link texts" in detail["link_targets"]
    assert result.sources[0].title == "Heaps"
    # A pack is data from anyone: vectors that are not finite numbers are refused, not used.
    with open_store(out / "pack.db", read_only=False) as store:
        [[chunk_id, dim]] = store.rows("MATCH (c:Chunk) RETURN c.id, size(c.embedding) LIMIT 1")
        store.rows(
            "MATCH (c:Chunk) WHERE c.id = $id SET c.embedding = $v",
            {"id": chunk_id, "v": [float("nan")] * dim},
        )
    with KnowledgeGraphAgent(out, profile="baseline", enable=["page_score"], llm=None) as agent:
        first = agent.query("the details of heaps")
        second = agent.query("the basics of sockets")
    assert "not all finite" in _skipped(first, "page_score")
    assert "not all finite" in _skipped(second, "page_score")  # the verdict is kept per agent
    assert second.sources


# -- page_score: the definition of an API the question names -------------------------------------

_FILLER = (
    "cmp_to_key transforms an old-style comparison function to a key function. It is used with "
    "tools that accept key functions, such as min, max, heapq.nlargest and itertools.groupby. A "
    "comparison function is any callable that accepts two arguments, compares them, and returns a "
    "negative number for less-than, zero for equality, or a positive number for greater-than. "
)
_CACHE_TALK = (  # about functools.lru_cache, closer to a question on it than its definition is
    "What functools.lru_cache does for you: with functools.lru_cache a function keeps the results "
    "of its latest calls, and functools.lru_cache gives it cache_info and cache_clear. "
)
API_DOCS = {
    "library/functools.html": (
        "<!DOCTYPE html><html><head><title>functools</title></head><body>"
        '<div class="body" role="main"><h1>functools — Higher-order functions</h1>'
        '<section id="module-functools">'
        f"<p>{_FILLER * 2}</p>"
        '<dl class="py function"><dt class="sig" id="functools.lru_cache">@functools.lru_cache('
        'maxsize=128, typed=False)<a class="headerlink" href="#functools.lru_cache">¶</a></dt>'
        "<dd><p>Decorator to wrap a function with a memoizing callable that saves up to the maxsize "
        "most recent calls.</p>"
        "<pre>@lru_cache\ndef count_vowels(sentence):\n    return sum(map(sentence.count, 'aeiou'))</pre>"
        f"<p>{_CACHE_TALK * 5}</p></dd></dl>"
        "</section></div></body></html>"
    ),
    "tutorial/caching.html": (
        "<!DOCTYPE html><html><head><title>Caching</title></head><body>"
        '<div class="body" role="main"><h1>Caching HOW TO</h1><section id="intro">'
        '<p>Memoize a function with <a href="../library/functools.html#functools.lru_cache">'
        "functools.lru_cache()</a>; sort old-style with "
        '<a href="../library/functools.html#functools.cmp_to_key">cmp_to_key()</a>.</p>'
        f"<p>{_CACHE_TALK * 2}</p></section></div></body></html>"
    ),
}


@pytest.fixture(scope="module")
def api_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _served_pack(tmp_path_factory, "api", API_DOCS)


def test_defines_reads_definition_lines_not_prose_or_code() -> None:
    assert defines("Intro.\n\n@functools.lru_cache(maxsize=128)\n\nDecorator.", "functools.lru_cache")
    assert defines("socket.settimeout(value)\n\nSet a timeout.", "socket.socket.settimeout")
    assert defines("class socket.socket(family=-1)", "socket.socket")
    assert defines("sys.argv\n\nThe list of arguments.", "sys.argv")
    assert not defines("Use functools.lru_cache(maxsize=None) for an unbounded cache.", "functools.lru_cache")
    assert not defines("```\n@lru_cache\ndef f(): ...\n```", "functools.lru_cache")
    assert not defines("socket.settimeout(value)", "socket.socket.setblocking")
    # a sentence that opens with a call is prose, and a box's heading no definition
    assert not defines("os.startfile(path)\n\nstartfile() returns as soon as it starts.", "startfile")
    assert defines("os.startfile(path)\n\nstartfile() returns as soon as it starts.", "os.startfile")
    assert not defines("Note\n\nIf you pass a relative pathname, do not change directory.", "Note")


@pytest.mark.parametrize("question", ["What does functools.lru_cache do?", "what does `lru_cache()` do"])
def test_a_named_api_brings_its_definition_first_cited_at_its_anchor(api_pack: Path, question: str) -> None:
    def ask(defined: bool) -> Any:
        # 2 small pages; off, definition_words too (the definition line holds the name's words)
        options = {
            "page_score": {
                "defined_names": defined,
                "definition_words": 2 * defined,
                "min_chunks_per_page": 1.0,
            }
        }
        with KnowledgeGraphAgent(api_pack, profile="auto", options=options, llm=None) as agent:
            return agent.query(question)

    before, after = ask(False), ask(True)
    assert "Decorator to wrap" not in before.sources[0].text  # vector search ranks other chunks first
    first = after.sources[0]
    assert "Decorator to wrap" in first.text and first.url.endswith("functools.html#functools.lru_cache")
    assert after.answer.startswith("@functools.lru_cache(maxsize=128, typed=False): Decorator to wrap"), (
        after.answer
    )


def test_the_names_a_question_gives_are_matched_to_link_targets() -> None:
    index = object.__new__(PageIndex)  # the lookup alone: its targets by last part, most linked first
    index.fragments = {
        "join": [(0, "str.join"), (1, "os.path.join")],
        "lru_cache": [(2, "functools.lru_cache")],
        "sorted": [(3, "sorted")],
        "settimeout": [(4, "socket.socket.settimeout")],
    }
    assert index.named("what does str.join do") == [(0, "str.join")]
    assert index.named("how to use os.path.join") == [(1, "os.path.join")]
    assert index.named("what does join() do") == []  # two targets end so: which one is not said
    assert index.named("what does `lru_cache()` do") == [(2, "functools.lru_cache")]
    assert index.named("sorted() or socket.settimeout?") == [(3, "sorted"), (4, "socket.socket.settimeout")]
    assert index.named("see e.g. the file data.txt, or sorted") == []


def test_a_passage_of_definitions_is_cited_where_the_question_is() -> None:
    index = object.__new__(PageIndex)
    index.fragments = {
        "setblocking": [(7, "socket.socket.setblocking")],
        "settimeout": [(7, "socket.socket.settimeout")],
    }
    text = (
        "socket.setblocking(flag)\n\nSet blocking or non-blocking mode of the socket.\n\n"
        "socket.settimeout(value)\n\nSet a timeout on blocking socket operations.\n\n"
        "```\nsocket.settimeout(value)\nset socket timeout\n```"
    )
    words = {"set", "socket", "timeout"}
    assert index.entry(text, 7, words) == "socket.socket.settimeout"
    assert index.entry(text, 8, words) == ""  # another page's targets are not this page's anchors
    assert index.entry(text, 7, {"timeout", "flag"}) == ""  # one word: not enough to say where
    del index.fragments["settimeout"]  # no page links to it: where its sibling is, shown alike
    assert index.entry(text, 7, words) == "socket.socket.settimeout"
    assert [(anchor, known) for _, _, anchor, known in index.definitions_in(text, 7)] == [
        ("socket.socket.setblocking", True),
        ("socket.socket.settimeout", False),
    ]
    del index.fragments["setblocking"]  # no anchor known at all: not the next best either
    assert index.entry(text, 7, words) == ""


def test_a_source_showing_definitions_is_cited_at_the_one_asked(api_pack: Path) -> None:
    def ask(defined: bool) -> Any:
        options = {"page_score": {"defined_names": defined, "min_chunks_per_page": 1.0}}
        with KnowledgeGraphAgent(api_pack, profile="auto", options=options, llm=None, top_k=10) as agent:
            return agent.query("which decorator wraps a function with a memoizing callable?")

    def cited(result: Any) -> list[str]:
        return [s.url for s in result.sources if "Decorator to wrap" in s.text]

    assert cited(ask(False)) and not any(u.endswith("#functools.lru_cache") for u in cited(ask(False)))
    assert [u.rsplit("#", 1)[-1] for u in cited(ask(True))] == ["functools.lru_cache"]


def test_a_definition_described_in_the_question_words_comes_first_in_its_page(api_pack: Path) -> None:
    question = "How do I keep the results of the latest calls of a function?"  # names no API

    def first_functools(words: int) -> Any:
        options = {"page_score": {"definition_words": words, "min_chunks_per_page": 1.0}}
        with KnowledgeGraphAgent(api_pack, profile="auto", options=options, llm=None) as agent:
            result = agent.query(question)
        return next(s for s in result.sources if "/functools.html" in s.url)

    off = first_functools(0)  # the page's best chunk by the ranking: talk about lru_cache
    assert not defines(off.text, "functools.lru_cache") and off.text.startswith("What functools.lru_cache")
    on = first_functools(2)  # its definition: "... saves up to the maxsize most recent calls" (2 words)
    assert defines(on.text, "functools.lru_cache") and on.url.endswith("#functools.lru_cache")
    assert first_functools(3).text == off.text  # 3 words: not enough
    with pytest.raises(UsageError, match="definition_words"):
        make_options("page_score", {"definition_words": -1})


_INDEX = "A abs() aiter() all() any() anext() ascii() B bin() bool() breakpoint() bytearray() bytes() " * 2
_MAGNITUDE = (  # closer to the question than the definition, as vector search reads them
    "<p>Which function returns the absolute value of a number depends on the number: a function "
    "returns the absolute value of a complex number as its magnitude.</p>"
)
FUNCTIONS_PAGE = {
    "library/functions.html": _page(
        "Built-in Functions",
        [
            (
                "built-in-functions",
                "Built-in Functions",
                f"<p>{_INDEX}</p>"
                '<dl class="py function"><dt class="sig" id="abs">abs(x)</dt>'
                "<dd><p>Return the absolute value of a number.</p></dd></dl>"
                f"{_MAGNITUDE * 4}",
            )
        ],
    ),
}


@pytest.fixture(scope="module")
def functions_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _served_pack(
        tmp_path_factory,
        "functions",
        FUNCTIONS_PAGE,
        BuildOptions(max_words=40, overlap_words=0, graph=False),
    )


def test_a_top_page_is_read_whole_for_the_definition_the_question_describes(functions_pack: Path) -> None:
    """The chunk of ``abs(x)`` opens with the page's index of names: vector search does not find it,
    but a definition whose line and first sentence hold the question's words is looked for in
    every chunk of the top ``described_pages`` pages."""
    question = "Which function returns the absolute value of a number?"

    def first(described: int) -> str:
        options = {
            "vector": {"candidates": 2},
            "page_score": {"described_pages": described, "pages": 0, "min_chunks_per_page": 1.0},
        }
        with KnowledgeGraphAgent(
            functions_pack, profile="baseline", enable=["page_score"], options=options, llm=None
        ) as agent:
            result = agent.query(question)
        assert _detail(result, "page_score")["described"] == described
        return result.sources[0].text

    assert "abs(x)" not in first(0)
    assert "abs(x)\n\nReturn the absolute value of a number." in first(1)
    with pytest.raises(UsageError, match="described_pages"):
        make_options("page_score", {"described_pages": -1})
