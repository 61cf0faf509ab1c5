"""A pack from someone else whose keyword index (``bm25/``) is damaged: ``pack validate`` loads it
with the code queries load it with, checks every vocabulary entry and its chunk ids against the
store, and refuses it naming the file; install refuses the pack; a query says so in one line
instead of answering without it. Each case damages a copy of the session's small pack."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.test_share import packs_home_entries

Damage = Callable[[Path], None]


def _json(name: str, change: Callable[[object], object]) -> Damage:
    def damage(bm25: Path) -> None:
        path = bm25 / name
        path.write_text(json.dumps(change(json.loads(path.read_text("utf-8")))), "utf-8")

    return damage


def _bytes(name: str, data: bytes) -> Damage:
    return lambda bm25: (bm25 / name).write_bytes(data)


def _array(name: str, change: Callable[[np.ndarray], np.ndarray]) -> Damage:  # type: ignore[type-arg]
    def damage(bm25: Path) -> None:
        array = np.load(bm25 / name, allow_pickle=False)
        np.save(bm25 / name, change(array.copy()), allow_pickle=False)

    return damage


class Boom:  # unpickling it would run code: it must never be unpickled
    def __reduce__(self) -> tuple[object, ...]:
        return (print, ("unpickled!",))


def _pickled(bm25: Path) -> None:
    array = np.empty(1, dtype=object)
    array[0] = Boom()
    np.save(bm25 / "indices.csc.index.npy", array, allow_pickle=True)
    assert b"unpickled!" in (bm25 / "indices.csc.index.npy").read_bytes()  # a real pickle in it


def _out_of_range(array: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    array[0] = 10**6
    return array


def _not_monotonic(array: np.ndarray) -> np.ndarray:  # type: ignore[type-arg]
    array[1], array[2] = array[2] + 5, array[1]
    return array


def _unknown_chunk(ids: object) -> object:
    assert isinstance(ids, list)
    return ["no-such-chunk", *ids[1:]]


def _bad_vocab(vocab: object) -> object:
    assert isinstance(vocab, dict)
    return {**vocab, next(iter(vocab)): 10**9}


# case -> (damage, what validate's line says, whether a query also refuses the pack)
CASES: dict[str, tuple[Damage, str, bool]] = {
    "invalid-utf8-json": (_bytes("vocab.index.json", b'{"\xff\xfe": 0}'), "vocab.index.json", True),
    "garbage-npy": (_bytes("data.csc.index.npy", b"\x93NUMPY garbage" * 10), "data.csc.index.npy", True),
    "pickled-npy": (_pickled, "indices.csc.index.npy", True),
    "indices-out-of-range": (_array("indices.csc.index.npy", _out_of_range), "indices.csc.index.npy", True),
    "indptr-not-monotonic": (_array("indptr.csc.index.npy", _not_monotonic), "indptr.csc.index.npy", True),
    "duplicate-chunk-ids": (_json("chunk_ids.json", lambda ids: [ids[0], *ids[:-1]]), "chunk_ids.json", True),  # type: ignore[index]
    "unknown-chunk-id": (_json("chunk_ids.json", _unknown_chunk), "chunk_ids.json", False),
    "bad-vocabulary-entry": (_json("vocab.index.json", _bad_vocab), "vocab.index.json", False),
}


@pytest.mark.parametrize("case", list(CASES))
def test_validate_refuses_a_damaged_keyword_index_naming_the_file(
    case: str,
    capsys: pytest.CaptureFixture[str],
    built_pack: Path,
    tmp_path: Path,
) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    damage, names, query_refuses = CASES[case]
    damage(pack / "bm25")

    code, out, err = cli(capsys, "pack", "validate", str(pack))
    assert code == 1, out
    assert_one_error(err, f"invalid pack {pack}: keyword_index: ")
    assert names in err
    if query_refuses:  # the index does not load: a query says so, once, instead of answering without it
        code, out, err = cli(capsys, "query", str(pack), "socket timeout", "--profile", "baseline")
        assert code == 1, out
        assert_one_error(err, "corrupt keyword index")
        assert names in err
        assert "unpickled!" not in out + err


@pytest.mark.parametrize("case", ["pickled-npy", "unknown-chunk-id", "bad-vocabulary-entry"])
def test_install_refuses_a_damaged_keyword_index(
    case: str, capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    damage, names, _ = CASES[case]
    damage(pack / "bm25")
    code, _, err = cli(capsys, "pack", "install", str(pack), "--no-skill")
    assert code == 1
    assert_one_error(err, "refusing the pack: invalid keyword_index: ")
    assert names in err
    assert packs_home_entries(wikigr_home) == []


def test_a_sound_keyword_index_passes(capsys: pytest.CaptureFixture[str], built_pack: Path) -> None:
    code, out, err = cli(capsys, "pack", "validate", str(built_pack), "--json")
    assert code == 0, err
    checks = {c["name"]: c for c in json.loads(out)["checks"]}
    assert checks["keyword_index"]["ok"] and "all in the store" in checks["keyword_index"]["detail"]


def test_a_query_refuses_keyword_hits_the_store_does_not_hold(
    capsys: pytest.CaptureFixture[str], built_pack: Path, tmp_path: Path
) -> None:
    from wikigr.pack.store import open_store

    pack = tmp_path / "fixture"
    shutil.copytree(built_pack, pack)
    first = json.loads((pack / "bm25" / "chunk_ids.json").read_text("utf-8"))[0]
    with open_store(pack / "pack.db") as store:
        words = store.chunk_texts([first])[first].split()[:12]
    _json("chunk_ids.json", _unknown_chunk)(pack / "bm25")  # the first chunk's words now point nowhere
    code, out, err = cli(capsys, "query", str(pack), " ".join(words), "--profile", "balanced")
    assert code == 1, out
    assert_one_error(err, "bm25/chunk_ids.json names chunks the store does not hold, e.g. 'no-such-chunk'")
