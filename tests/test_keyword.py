"""Keyword (BM25) search: building, loading untrusted files, searching (wikigr/pack/keyword.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from wikigr.errors import InvalidPackError
from wikigr.pack import keyword
from wikigr.pack.keyword import KEYWORD_DIR, KeywordIndex, build_keyword_index, tokenize

CORPUS = {
    "json": "The json module encodes and decodes JSON documents. json.loads parses a string into Python "
    "objects and json.dumps serialises them back; pass indent to pretty-print the output.",
    "socket": "The socket module is the low-level networking interface. Call socket.settimeout on a "
    "connected socket to bound how long recv and send may block before raising TimeoutError.",
    "re": "The re module provides regular expression matching. re.compile builds a pattern object; "
    "re.findall returns every non-overlapping match of the pattern in a string.",
    "pathlib": "The pathlib module offers object-oriented filesystem paths. Path.read_text reads a "
    "file, Path.iterdir lists a directory, and the slash operator joins path segments.",
    "collections": "The collections module adds specialised containers: Counter counts hashable "
    "items, deque is a double-ended queue, and defaultdict supplies missing values.",
    "itertools": "The itertools module builds fast iterators: itertools.chain concatenates "
    "iterables, itertools.groupby groups consecutive items, and product forms cartesian products.",
    "datetime": "The datetime module handles dates and times. datetime.now returns the current "
    "time, timedelta measures durations, and timezone attaches a UTC offset.",
    "subprocess": "The subprocess module runs child processes. subprocess.run waits for the command "
    "to finish and returns a CompletedProcess holding the return code and captured output.",
}
IDS = list(CORPUS)
TEXTS = list(CORPUS.values())


@pytest.fixture
def index_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "pack" / KEYWORD_DIR
    build_keyword_index(folder, IDS, TEXTS)
    return folder


@pytest.fixture
def index(index_dir: Path) -> KeywordIndex:
    return KeywordIndex.load(index_dir)


def top(index: KeywordIndex, query: str) -> str:
    hits = index.search(query, 3)
    assert hits, query
    return hits[0][0]


# --- tokenisation ------------------------------------------------------------------------------


def test_tokenize_keeps_identifiers_whole_and_split() -> None:
    tokens = tokenize("Call socket.settimeout() then pd.read_csv, self.__init__ and setTimeout.")
    for expected in ("socket", "settimeout", "socket.settimeout", "pd", "read", "csv", "pd.read_csv"):
        assert expected in tokens, expected
    assert {"read_csv", "__init__", "self.__init__", "set", "timeout"} <= set(tokens)
    assert "then" not in tokens and "and" not in tokens  # stopwords
    assert "settimeout." not in tokens  # a sentence's full stop is not part of the identifier


def test_tokenize_non_ascii() -> None:
    assert tokenize("Gödel’s STRASSE straße 東京") == ["gödel", "s", "strasse", "strasse", "東京"]
    assert tokenize("") == []
    assert tokenize("... !!! ---") == []


# --- search ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("regular expression", "re"),
        ("double-ended queue", "collections"),
        ("child processes return code", "subprocess"),
        ("filesystem paths", "pathlib"),
        ("cartesian products", "itertools"),
        ("UTC offset timezone", "datetime"),
        ("networking interface", "socket"),
        ("decode JSON", "json"),
    ],
)
def test_exact_terms_rank_the_right_chunk_first(index: KeywordIndex, query: str, expected: str) -> None:
    assert top(index, query) == expected


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("settimeout", "socket"),
        ("socket.settimeout", "socket"),
        ("how do I use settimeout?", "socket"),
        ("json.loads", "json"),
        ("loads", "json"),
        ("read_text", "pathlib"),
        ("Path.read_text", "pathlib"),
        ("itertools.groupby", "itertools"),
        ("TimeoutError", "socket"),
        ("subprocess.run", "subprocess"),
    ],
)
def test_identifiers_match(index: KeywordIndex, query: str, expected: str) -> None:
    assert top(index, query) == expected


def test_k_handling(index: KeywordIndex) -> None:
    assert len(index) == len(IDS)
    assert len(index.search("module", 1)) == 1
    assert len(index.search("module", 3)) == 3
    every = index.search("module", 1000)  # every chunk mentions "module"; k > corpus is fine
    assert sorted(cid for cid, _ in every) == sorted(IDS)
    assert index.search("module", 0) == []
    with pytest.raises(ValueError):
        index.search("module", -1)
    assert index.search("settimeout", 1000) == index.search("settimeout", 1)  # only positive scores


def test_results_are_sorted_positive_and_unique(index: KeywordIndex) -> None:
    hits = index.search("the string pattern returns time", 8)
    scores = [s for _, s in hits]
    assert scores == sorted(scores, reverse=True)
    assert all(isinstance(s, float) and s > 0 for s in scores)
    assert len({cid for cid, _ in hits}) == len(hits)


@pytest.mark.parametrize("query", ["", "   ", "the and of", "zzyzx qwertyuiop", "!!!"])
def test_query_without_known_tokens_returns_nothing(index: KeywordIndex, query: str) -> None:
    assert index.search(query, 5) == []


def test_repeating_a_query_word_does_not_change_the_ranking(index: KeywordIndex) -> None:
    assert index.search("socket socket socket", 5) == index.search("socket", 5)


def test_nothing_is_printed(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    capfd.readouterr()
    folder = tmp_path / KEYWORD_DIR
    build_keyword_index(folder, IDS, TEXTS)
    build_keyword_index(folder, IDS, TEXTS)  # rebuild over an existing index
    loaded = KeywordIndex.load(folder)
    loaded.search("settimeout", 3)
    loaded.search("nothing known", 3)
    build_keyword_index(tmp_path / "empty", [], [])
    KeywordIndex.load(tmp_path / "empty").search("json", 3)
    assert capfd.readouterr() == ("", "")


def test_nothing_is_printed_in_a_fresh_process(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from wikigr.pack.keyword import *; "
        "f = Path(sys.argv[1]); build_keyword_index(f, ['a', 'b'], ['socket.settimeout', 'json.loads']); "
        "assert KeywordIndex.load(f).search('settimeout', 5)[0][0] == 'a'"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "bm25")], capture_output=True, text=True, check=True
    )
    assert (done.stdout, done.stderr) == ("", "")


# --- edge cases ----------------------------------------------------------------------------------


def test_empty_corpus_gives_an_index_that_returns_nothing(tmp_path: Path) -> None:
    build_keyword_index(tmp_path / "bm25", [], [])
    loaded = KeywordIndex.load(tmp_path / "bm25")
    assert len(loaded) == 0
    assert loaded.search("anything", 10) == []


def test_corpus_without_tokens(tmp_path: Path) -> None:
    build_keyword_index(tmp_path / "bm25", ["a", "b"], ["", "the and of ..."])
    loaded = KeywordIndex.load(tmp_path / "bm25")
    assert len(loaded) == 2
    assert loaded.search("the", 10) == []


def test_one_document(tmp_path: Path) -> None:
    build_keyword_index(tmp_path / "bm25", ["only"], ["The only chunk mentions socket.settimeout."])
    loaded = KeywordIndex.load(tmp_path / "bm25")
    hits = loaded.search("settimeout", 10)
    assert [cid for cid, _ in hits] == ["only"] and hits[0][1] > 0
    assert loaded.search("json", 10) == []


def test_duplicate_texts_score_equally_in_index_order(tmp_path: Path) -> None:
    texts = ["deque rotates", "the json module", "deque rotates", "unrelated words"]
    build_keyword_index(tmp_path / "bm25", ["d1", "j", "d2", "u"], texts)
    hits = KeywordIndex.load(tmp_path / "bm25").search("deque", 10)
    assert [cid for cid, _ in hits] == ["d1", "d2"]
    assert hits[0][1] == hits[1][1]


def test_non_ascii_text(tmp_path: Path) -> None:
    texts = [
        "Kurt Gödel bewies den Unvollständigkeitssatz.",
        "Die Straße führt nach München.",
        "東京 は 日本 の 首都 です",
        "Plain ASCII text about sockets.",
    ]
    ids = ["gödel", "straße", "東京", "ascii"]
    build_keyword_index(tmp_path / "bm25", ids, texts)
    loaded = KeywordIndex.load(tmp_path / "bm25")
    assert top(loaded, "GÖDEL") == "gödel"
    assert top(loaded, "unvollständigkeitssatz") == "gödel"
    assert top(loaded, "STRASSE") == "straße"
    assert top(loaded, "首都") == "東京"
    assert top(loaded, "münchen") == "straße"


def test_build_rejects_bad_input(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="chunk ids"):
        build_keyword_index(tmp_path / "bm25", ["a"], ["x", "y"])
    with pytest.raises(ValueError, match="unique"):
        build_keyword_index(tmp_path / "bm25", ["a", "a"], ["x", "y"])
    with pytest.raises(ValueError, match="b must"):
        build_keyword_index(tmp_path / "bm25", ["a"], ["x"], b=2.0)
    with pytest.raises(ValueError, match="k1"):
        build_keyword_index(tmp_path / "bm25", ["a"], ["x"], k1=float("nan"))
    assert list(tmp_path.iterdir()) == []


def test_rebuild_replaces_the_index_and_leaves_no_temporary_folder(tmp_path: Path) -> None:
    folder = tmp_path / "bm25"
    build_keyword_index(folder, IDS, TEXTS)
    build_keyword_index(folder, ["x"], ["socket.settimeout only"])
    loaded = KeywordIndex.load(folder)
    assert len(loaded) == 1
    assert loaded.search("json", 5) == []
    assert [p.name for p in tmp_path.iterdir()] == ["bm25"]


def test_file_layout(index_dir: Path) -> None:
    assert sorted(p.name for p in index_dir.iterdir()) == sorted(
        [
            "wikigr_keyword.json",
            "chunk_ids.json",
            "params.index.json",
            "vocab.index.json",
            "data.csc.index.npy",
            "indices.csc.index.npy",
            "indptr.csc.index.npy",
        ]
    )
    meta = json.loads((index_dir / "wikigr_keyword.json").read_text(encoding="utf-8"))
    assert meta["format_version"] == keyword.FORMAT_VERSION
    assert (meta["k1"], meta["b"], meta["num_documents"]) == (1.2, 0.75, len(IDS))
    assert meta["tokenizer"]["stemmer"] is None and "the" in meta["tokenizer"]["stopwords"]
    assert json.loads((index_dir / "chunk_ids.json").read_text(encoding="utf-8")) == IDS


# --- round trip -----------------------------------------------------------------------------------


def test_round_trip_matches_bm25s_in_memory(index: KeywordIndex) -> None:
    import bm25s  # type: ignore[import-untyped]

    stop = keyword.default_stopwords()
    vocab: dict[str, int] = {}
    corpus = [[vocab.setdefault(t, len(vocab)) for t in tokenize(text, stop)] for text in TEXTS]
    retriever = bm25s.BM25(k1=1.2, b=0.75, method="lucene")
    retriever.index((corpus, vocab), create_empty_token=False, show_progress=False)
    for query in ("settimeout", "json.loads", "the module returns a string", "regular expression"):
        ids = [vocab[t] for t in dict.fromkeys(tokenize(query, stop)) if t in vocab]
        scores = retriever.get_scores_from_ids(ids)
        expected = sorted(
            ((IDS[i], float(s)) for i, s in enumerate(scores) if s > 0),
            key=lambda h: (-h[1], IDS.index(h[0])),
        )
        assert index.search(query, len(IDS)) == expected, query


def test_round_trip_is_reproducible(tmp_path: Path, index_dir: Path, index: KeywordIndex) -> None:
    again = tmp_path / "again"
    build_keyword_index(again, IDS, TEXTS)
    for f in index_dir.iterdir():
        assert (again / f.name).read_bytes() == f.read_bytes(), f.name
    reloaded = KeywordIndex.load(again)
    for query in ("settimeout", "json.loads", "module", "time and dates"):
        assert reloaded.search(query, 5) == index.search(query, 5)


# --- untrusted / corrupt packs ----------------------------------------------------------------------


def assert_invalid(folder: Path, match: str = "") -> InvalidPackError:
    with pytest.raises(InvalidPackError, match=match) as info:
        KeywordIndex.load(folder)
    assert "\n" not in str(info.value)
    return info.value


def test_missing_index(tmp_path: Path) -> None:
    assert_invalid(tmp_path / "nope", "missing")


@pytest.mark.parametrize(
    "name",
    [
        "wikigr_keyword.json",
        "chunk_ids.json",
        "params.index.json",
        "vocab.index.json",
        "data.csc.index.npy",
        "indices.csc.index.npy",
        "indptr.csc.index.npy",
    ],
)
def test_deleted_file(index_dir: Path, name: str) -> None:
    (index_dir / name).unlink()
    assert_invalid(index_dir, name)


@pytest.mark.parametrize("name", ["data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"])
@pytest.mark.parametrize("keep", [0, 5, 100, -4])
def test_truncated_npy(index_dir: Path, name: str, keep: int) -> None:
    path = index_dir / name
    raw = path.read_bytes()
    path.write_bytes(raw[:keep])
    assert_invalid(index_dir, "corrupt")


@pytest.mark.parametrize(
    "name", ["wikigr_keyword.json", "chunk_ids.json", "params.index.json", "vocab.index.json"]
)
def test_corrupt_json(index_dir: Path, name: str) -> None:
    path = index_dir / name
    path.write_bytes(path.read_bytes()[:-7])
    assert_invalid(index_dir, "corrupt")


def test_newer_format_version(index_dir: Path) -> None:
    path = index_dir / "wikigr_keyword.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta["format_version"] = keyword.FORMAT_VERSION + 1
    path.write_text(json.dumps(meta), encoding="utf-8")
    assert_invalid(index_dir, "upgrade wikigr")


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("format_version", "1"),
        ("format_version", 0),
        ("num_documents", 3),
        ("vocabulary_size", -1),
        ("k1", "1.2"),
        ("method", "bm25+"),
        ("tokenizer", {"name": "other"}),
    ],
)
def test_bad_metadata(index_dir: Path, key: str, value: object) -> None:
    path = index_dir / "wikigr_keyword.json"
    meta = json.loads(path.read_text(encoding="utf-8"))
    meta[key] = value
    path.write_text(json.dumps(meta), encoding="utf-8")
    assert_invalid(index_dir, "corrupt")


def test_metadata_must_be_an_object(index_dir: Path) -> None:
    (index_dir / "wikigr_keyword.json").write_text("[1, 2]", encoding="utf-8")
    assert_invalid(index_dir, "not a JSON object")


class _Payload:
    """Unpickling this runs ``os.mkdir(marker)``: the proof that code would have executed."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (str(self.marker),))


@pytest.mark.parametrize("name", ["data.csc.index.npy", "indices.csc.index.npy", "indptr.csc.index.npy"])
def test_pickle_in_npy_is_refused_and_not_executed(tmp_path: Path, index_dir: Path, name: str) -> None:
    marker = tmp_path / "pwned"
    evil = np.empty(3, dtype=object)
    evil[:] = [_Payload(marker), 1, 2]
    probe = tmp_path / "probe.npy"
    np.save(probe, evil, allow_pickle=True)
    np.load(probe, allow_pickle=True)  # the payload is live ...
    assert marker.is_dir()
    marker.rmdir()
    np.save(index_dir / name, evil, allow_pickle=True)
    assert_invalid(index_dir, "corrupt")  # ... but the loader never unpickles it
    assert not marker.exists()


@pytest.mark.parametrize(
    ("name", "array"),
    [
        ("data.csc.index.npy", "float64"),
        ("indices.csc.index.npy", "bad-range"),
        ("indices.csc.index.npy", "negative"),
        ("indptr.csc.index.npy", "decreasing"),
        ("data.csc.index.npy", "nan"),
        ("data.csc.index.npy", "2-d"),
    ],
)
def test_tampered_arrays(index_dir: Path, name: str, array: str) -> None:
    path = index_dir / name
    original = np.load(path, allow_pickle=False)
    if array == "float64":
        new = original.astype(np.float64)
    elif array == "bad-range":
        new = original.copy()
        new[0] = len(IDS)
    elif array == "negative":
        new = original.copy()
        new[-1] = -1
    elif array == "decreasing":
        new = original.copy()
        new[1], new[2] = new[2], new[1] - 1
    elif array == "nan":
        new = original.copy()
        new[0] = np.nan
    else:
        new = np.stack([original, original])
    np.save(path, new, allow_pickle=False)
    assert_invalid(index_dir, "corrupt")


def test_bad_vocabulary_entry_is_caught_at_query_time(index_dir: Path) -> None:
    path = index_dir / "vocab.index.json"
    vocab = json.loads(path.read_text(encoding="utf-8"))
    vocab["settimeout"] = 10**9
    vocab["socket"] = "0"
    path.write_text(json.dumps(vocab), encoding="utf-8")
    loaded = KeywordIndex.load(index_dir)
    assert top(loaded, "regular expression") == "re"
    for query in ("settimeout", "socket"):
        with pytest.raises(InvalidPackError, match="vocabulary"):
            loaded.search(query, 3)


def test_oversized_file_is_refused(index_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(keyword, "MAX_VOCAB_BYTES", 100)
    assert_invalid(index_dir, "larger than")
    monkeypatch.setattr(keyword, "MAX_VOCAB_BYTES", 10**9)
    monkeypatch.setattr(keyword, "MAX_ARRAY_BYTES", 10)
    assert_invalid(index_dir, "larger than")


def test_chunk_ids_must_match_the_documents(index_dir: Path) -> None:
    (index_dir / "chunk_ids.json").write_text(json.dumps(IDS[:-1]), encoding="utf-8")
    assert_invalid(index_dir, "ids for")
    (index_dir / "chunk_ids.json").write_text(json.dumps([1] * len(IDS)), encoding="utf-8")
    assert_invalid(index_dir, "list of strings")


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (b"}", b" "),  # unbalanced: numpy's header parser raises tokenize.TokenError
        (b"{", b"["),
        (b"'descr'", b"'dexcr'"),
        (b"False", b"True "),  # Fortran order
        (b"'<", b"'>"),  # big-endian
        (b"\x93NUMPY", b"\x93NUMPX"),
        (b"\x93NUMPY\x01", b"\x93NUMPY\x07"),
    ],
)
def test_garbled_npy_header(index_dir: Path, old: bytes, new: bytes) -> None:
    path = index_dir / "data.csc.index.npy"
    raw = path.read_bytes()
    assert old in raw[:128]
    path.write_bytes(raw[:128].replace(old, new, 1) + raw[128:])
    assert_invalid(index_dir, "corrupt")
