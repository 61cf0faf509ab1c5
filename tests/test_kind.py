"""The pack-kind seam (wikigr.pack.kind): a third kind of pack, registered here as a plugin would
register it, is what the store, the manifest, `pack list`, `pack info`'s lines, the skill, a set of
packs, the router, `pack update` and `pack graph` dispatch to; the built-in kinds answer through
the same seam."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import ClassVar

import pyarrow as pa
import pytest

from wikigr import __version__
from wikigr.cli import run
from wikigr.errors import InvalidPackError, UsageError
from wikigr.graph.pack import rebuild_graph
from wikigr.pack.kind import KINDS, KindStrategy, PackKind, kind_names, pack_kind, register_kind
from wikigr.pack.manifest import FORMAT_VERSION, EmbedderRecord, GraphStats, Manifest, load_manifest, now_iso
from wikigr.pack.pack import open_pack, pack_rows
from wikigr.pack.store import Store
from wikigr.packset import passage_packs
from wikigr.retrieval.profiles import resolve_stages
from wikigr.retrieval.stages.router import PackShape, auto_plan
from wikigr.skill import skill_text

DIM = 4


class NotesKind(PackKind):
    """A tiny kind: notes in a chain, no passages, answered by a strategy of its own."""

    name = "notes"
    schema_version = 1
    node_tables = ("Note",)
    rel_tables = ("NEXT",)
    marker_table = "Note"
    stats: ClassVar[Mapping[str, str]] = {"articles": "Note", "links": "NEXT"}
    label = "a notes pack"
    plural = "notes packs"
    passages = False
    answers_with = "its notes read in order"
    strategy = KindStrategy("notes", ("vector",), "a notes pack: its notes in order", "a chain of notes")

    def ddl(self, dim: int) -> list[str]:
        return [
            f"CREATE NODE TABLE Note(id STRING, text STRING, embedding FLOAT[{dim}], PRIMARY KEY(id))",
            "CREATE REL TABLE NEXT(FROM Note TO Note)",
        ]

    def size(self, manifest: Manifest) -> str:
        return f"{manifest.stats.articles:,} notes"

    def skill(self, manifest: Manifest, store: Store, query_ref: str | None = None) -> str:
        return f"---\nname: {manifest.name}\n---\n\n{store.count('Note')} notes in a chain.\n"


@pytest.fixture
def notes_kind() -> Iterator[PackKind]:
    kind = register_kind(NotesKind())
    yield kind
    del KINDS["notes"]


def notes_pack(folder: Path, name: str = "jottings") -> Manifest:
    """A notes pack of three notes in ``folder``: its store written through the kind's tables."""
    folder.mkdir(parents=True)
    with Store.create(folder / "pack.db", DIM, kind="notes") as store:
        vectors = pa.array([[1.0, 0.0, 0.0, 0.0]] * 3, type=pa.list_(pa.float32(), DIM))
        notes = {"id": ["a", "b", "c"], "text": ["one", "two", "three"], "embedding": vectors}
        store.copy("Note", pa.table(notes))
        store.copy("NEXT", pa.table({"from": ["a", "b"], "to": ["b", "c"]}))
        stats = store.stats()
    manifest = Manifest(
        format_version=FORMAT_VERSION,
        name=name,
        created_at=now_iso(),
        wikigr_version=__version__,
        source_kind="notes",
        embedder=EmbedderRecord("all-MiniLM-L6-v2-int8", DIM, "onnx"),
        schema_version=1,
        stats=GraphStats(**stats),
    )
    manifest.dump(folder / "manifest.json")
    return manifest


def test_a_registered_kind_is_listed_and_its_store_opened_counted_and_described(
    notes_kind: PackKind, wikigr_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = wikigr_home / "packs" / "jottings"
    manifest = notes_pack(folder)
    assert kind_names() == ["documents", "openml", "notes"]
    assert load_manifest(folder / "manifest.json").source_kind == "notes"

    [row] = pack_rows()
    assert row["source_kind"] == "notes" and row["size"] == "3 notes"
    assert run(["pack", "list", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["packs"] == [row]
    assert run(["pack", "list"]) == 0
    assert "3 notes" in capsys.readouterr().out

    with Store.open(folder / "pack.db") as store:  # no kind given: told by its marker table
        assert store.kind == "notes"
        stats = store.stats()
    assert {k: v for k, v in stats.items() if v} == {"articles": 3, "links": 2}
    assert list(stats) == list(vars(GraphStats(0, 0, 0, 0)))  # every count of the manifest, in order
    with open_pack("jottings").open_store() as store:
        assert sorted(store.tables()) == ["NEXT", "Note"] and store.count("NEXT") == 2
    assert notes_kind.info_counts(stats) == [("articles", "3"), ("links", "2")]
    assert notes_kind.info_notes(manifest) == []
    assert skill_text(folder, manifest) == "---\nname: jottings\n---\n\n3 notes in a chain.\n"


def test_a_registered_kind_without_passages_is_answered_alone_by_its_own_strategy(
    notes_kind: PackKind, wikigr_home: Path, built_pack: Path
) -> None:
    folder = wikigr_home / "packs" / "jottings"
    manifest = notes_pack(folder)
    chosen, left_out = passage_packs(["jottings", built_pack])
    assert [p.name for p in chosen] == ["fixture"]
    why = "a notes pack answers with its notes read in order, not passages: ask it alone"
    assert left_out == {"jottings": why}
    with pytest.raises(UsageError, match=r"^notes packs answer one at a time: ask jottings separately$"):
        passage_packs(["jottings"])

    shape = PackShape(False, False, 0.0, kind="notes")
    assert auto_plan("simple", shape) == ("notes", "a notes pack: its notes in order")
    assert shape.describe() == "a chain of notes"
    stages, _ = resolve_stages("auto", pack_kind="notes")
    assert [s.name for s in stages] == ["router"]  # the router applies to every kind

    assert notes_kind.update_refusal(manifest) == (
        "update is not supported for this pack kind (notes): rebuild it with `wikigr pack create`"
    )
    with pytest.raises(UsageError, match=r"^graph is not supported for this pack kind \(notes\)"):
        rebuild_graph(folder)


def test_a_kind_nobody_registered_is_refused(built_pack: Path, tmp_path: Path) -> None:
    data = json.loads((built_pack / "manifest.json").read_text(encoding="utf-8"))
    (tmp_path / "manifest.json").write_text(json.dumps({**data, "source_kind": "notes"}), encoding="utf-8")
    refused = r"source_kind: must be one of 'documents', 'openml', not 'notes'$"
    with pytest.raises(InvalidPackError, match=refused):
        load_manifest(tmp_path / "manifest.json")
    with pytest.raises(InvalidPackError, match=r"^unknown pack kind 'notes' \(known: documents, openml\)$"):
        pack_kind("notes")


def test_the_built_in_kinds_size_their_packs_for_pack_list(built_pack: Path, tmp_path: Path) -> None:
    shutil.copytree(built_pack, tmp_path / "fixture")
    [row] = pack_rows(tmp_path)
    stats = load_manifest(built_pack / "manifest.json").stats
    assert row["size"] == f"4 articles, {stats.chunks:,} chunks" and stats.articles == 4
    documents = pack_kind("documents")
    assert documents.passages and documents.entity_graph and documents.strategy is None
    openml = pack_kind("openml")
    assert not openml.passages and openml.strategy is not None and openml.strategy.stages == ("openml_tools",)
