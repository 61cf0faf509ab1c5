"""Building, opening, validating and querying a real pack (real store, real embedder)."""

from __future__ import annotations

import hashlib
import json
import re
import shutil
from pathlib import Path

import pytest

from tests.conftest import DOCS
from wikigr.agent import KnowledgeGraphAgent, query_pack
from wikigr.build import BuildOptions, build_pack
from wikigr.documents_kind import NODE_TABLES, REL_TABLES
from wikigr.errors import BuildError, EmbedderUnavailableError, InvalidPackError, StoreError, UsageError
from wikigr.pack.manifest import FORMAT_VERSION, load_manifest
from wikigr.pack.pack import open_pack
from wikigr.pack.store import Store
from wikigr.progress import ProgressEvent
from wikigr.validate import validate_pack


def test_pack_folder_has_every_file(built_pack: Path) -> None:
    for rel in ("pack.db", "manifest.json", "urls.txt", "skill.md", "kg_config.json", "eval/questions.jsonl"):
        assert (built_pack / rel).is_file(), rel
    assert (built_pack / "eval" / "results").is_dir()
    assert not (built_pack / "cache").exists()
    leftovers = [p.name for p in built_pack.parent.iterdir() if p.name.startswith(".fixture")]
    assert leftovers == []  # no .partial, .old or .lock left beside it


def test_manifest_records_sources_embedder_and_stats(built_pack: Path) -> None:
    m = load_manifest(built_pack / "manifest.json")
    assert m.format_version == FORMAT_VERSION
    assert m.name == "fixture"
    assert m.source_kind == "documents"
    assert m.embedder.name == "all-MiniLM-L6-v2-int8" and m.embedder.dimension == 384
    assert m.stats.articles == 4
    assert {Path(s.url).name for s in m.sources} == {"sockets.html", "json.html", "dates.md", "gardening.txt"}
    for source in m.sources:
        assert source.status == "ok"
        content = (DOCS / Path(source.url).name).read_bytes()
        assert source.sha256 == hashlib.sha256(content).hexdigest()
        assert source.chunks >= 1 and source.fetched_at
    assert m.description  # drawn from the content
    assert "Sockets guide" in m.description or "Working with JSON" in m.description


def test_store_schema_and_graph(built_pack: Path) -> None:
    with Store.open(built_pack / "pack.db") as store:
        assert set(NODE_TABLES + REL_TABLES) <= set(store.tables())
        stats = store.stats()
        assert stats["articles"] == 4
        assert stats["chunks"] >= stats["sections"] >= 4
        assert stats["entities"] > 0 and stats["relations"] > 0  # the entity graph (tests/test_graph.py)
        links = store.rows(
            "MATCH (a:Article)-[:LINKS_TO]->(b:Article) RETURN a.title, b.title ORDER BY a.title"
        )
        assert ["Sockets guide", "Working with JSON"] in links
        assert ["Working with JSON", "Sockets guide"] in links
        sections = [
            r[0]
            for r in store.rows(
                "MATCH (a:Article {title: 'Sockets guide'})-[:HAS_SECTION]->(s) RETURN s.title ORDER BY s.ord"
            )
        ]
        assert sections == ["Sockets guide", "Creating sockets", "Timeouts", "Servers"]
        texts = " ".join(r[0] for r in store.rows("MATCH (c:Chunk) RETURN c.text"))
        for dropped in ("Navigation menu", "Copyright footer", "tracking", "Site header", "Prev | Next"):
            assert dropped not in texts
        code = store.rows("MATCH (s:Section {title: 'Creating sockets'})-[:HAS_CHUNK]->(c) RETURN c.text")
        assert (
            's = socket.socket(socket.AF_INET, socket.SOCK_STREAM)\ns.connect(("example.org", 80))'
            in code[0][0]
        )
        dims = store.rows("MATCH (s:Section) RETURN size(s.embedding) LIMIT 1")
        assert dims == [[384]]


def test_manifest_stats_match_the_store(built_pack: Path) -> None:
    report = validate_pack(built_pack)
    assert report.ok, report.to_json()


@pytest.mark.parametrize(
    ("question", "title", "section"),
    [
        ("How do I set a socket timeout?", "Sockets guide", "Timeouts"),
        ("which error do invalid JSON documents raise", "Working with JSON", "Decoding"),
        ("convert a datetime to another time zone", "Dates and times", "Time zones"),
        ("how much sun do tomato plants need", "Growing tomatoes", ""),
    ],
)
def test_query_finds_the_right_section(built_pack: Path, question: str, title: str, section: str) -> None:
    result = query_pack(built_pack, question, top_k=3)
    top = result.sources[0]
    assert top.title == title
    if section:
        assert top.section == section
    assert re.search(r"\[\d\]", result.answer) and result.answer_mode == "extractive"  # sentences, cited
    assert result.trace["vector_path"] == "exact"
    assert [s.score for s in result.sources] == sorted((s.score for s in result.sources), reverse=True)


def test_query_cites_urls_with_anchors(built_pack: Path) -> None:
    result = query_pack(built_pack, "socket timeout", top_k=1)
    assert result.sources[0].url == (DOCS / "sockets.html").as_uri() + "#timeouts"
    data = result.to_json()
    keys = {"answer", "answer_mode", "sources", "profile", "trace", "confidence", "low_confidence", "facts"}
    assert keys == set(data)
    assert set(data["sources"][0]) == {"title", "section", "url", "score", "text", "pack", "related"}
    assert data["sources"][0]["text"] == result.sources[0].text and data["answer_mode"] == "extractive"
    assert data["sources"][0]["pack"] == "fixture"
    assert data["profile"] == "auto"  # the default, written to kg_config.json


def test_query_returns_one_hit_per_section(built_pack: Path) -> None:
    result = query_pack(built_pack, "sockets", top_k=10)
    keys = [(s.title, s.section) for s in result.sources]
    assert len(keys) == len(set(keys))


def test_query_never_writes_the_pack(built_pack: Path) -> None:
    before = {p: p.read_bytes() for p in built_pack.rglob("*") if p.is_file()}
    with KnowledgeGraphAgent(built_pack, profile="max") as agent:
        agent.query("json")
    after = {p: p.read_bytes() for p in built_pack.rglob("*") if p.is_file()}
    assert before.keys() == after.keys()
    assert all(before[p] == after[p] for p in before)


def test_empty_question_is_a_usage_error(built_pack: Path) -> None:
    with pytest.raises(UsageError, match="question is empty"):
        query_pack(built_pack, "   ")


def _copy(pack: Path, tmp_path: Path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(pack, target)
    return target


def _edit_manifest(pack: Path, **changes: object) -> None:
    path = pack / "manifest.json"
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def test_newer_format_version_is_refused(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    _edit_manifest(pack, format_version=FORMAT_VERSION + 1)
    with pytest.raises(InvalidPackError, match="newer than this wikigr supports"):
        open_pack(pack)


def test_a_store_schema_newer_than_this_wikigr_reads_is_refused(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    _edit_manifest(pack, schema_version=99)
    with pytest.raises(InvalidPackError, match="schema_version 99 is newer than this wikigr reads"):
        open_pack(pack)


def test_unknown_manifest_field_and_missing_field_are_refused(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    _edit_manifest(pack, surprise=1)
    with pytest.raises(InvalidPackError, match="surprise"):
        open_pack(pack)
    data = json.loads((pack / "manifest.json").read_text())
    del data["surprise"], data["embedder"]
    (pack / "manifest.json").write_text(json.dumps(data))
    with pytest.raises(InvalidPackError, match="embedder"):
        open_pack(pack)


def test_pack_with_unavailable_embedder_is_refused(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    _edit_manifest(pack, embedder={"name": "bge-large-en", "dimension": 1024, "backend": "torch"})
    with pytest.raises(EmbedderUnavailableError, match="bge-large-en"):
        query_pack(pack, "socket timeout")
    assert not validate_pack(pack).ok


def test_garbage_store_is_a_store_error(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    (pack / "pack.db").write_bytes(b"this is not a database" * 100)
    with pytest.raises(StoreError):
        query_pack(pack, "socket timeout")
    report = validate_pack(pack)
    assert not report.ok and [c.name for c in report.checks if not c.ok] == ["store"]


def test_validate_reports_stats_that_disagree(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    data = json.loads((pack / "manifest.json").read_text())
    data["stats"]["chunks"] += 1
    (pack / "manifest.json").write_text(json.dumps(data))
    report = validate_pack(pack)
    assert [c.name for c in report.checks if not c.ok] == ["stats"]


def test_interrupted_rebuild_keeps_the_old_pack_and_resumes(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(DOCS, docs)
    out = tmp_path / "packs" / "notes"
    first = build_pack("notes", [docs.as_uri()], out=out)
    old_manifest = (out / "manifest.json").read_bytes()
    (out / "eval" / "questions.jsonl").write_text('{"id": "q1", "question": "socket timeout?"}\n')
    (docs / "extra.md").write_text("# Extra\n\nA page about kites and how to fly them on windy days.\n")

    def interrupt(event: ProgressEvent) -> None:
        if event.stage == "write":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_pack("notes", [docs.as_uri()], out=out, on_progress=interrupt)
    assert (out / "manifest.json").read_bytes() == old_manifest
    assert open_pack(out).manifest.stats.articles == first.manifest.stats.articles
    assert (tmp_path / "packs" / ".notes.partial").is_dir()

    second = build_pack("notes", [docs.as_uri()], out=out)
    assert second.resumed == 5 and second.fetched == 0 and second.chunks_embedded == 0
    assert second.manifest.stats.articles == 5
    assert (out / "eval" / "questions.jsonl").read_text().startswith('{"id": "q1"')
    assert not (tmp_path / "packs" / ".notes.partial").exists()
    assert query_pack(out, "flying a kite in the wind").sources[0].title == "Extra"


def test_fresh_rebuild_ignores_the_cache(tmp_path: Path) -> None:
    out = tmp_path / "p"

    def interrupt(event: ProgressEvent) -> None:
        if event.stage == "write":
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_pack("p", [DOCS.as_uri()], out=out, on_progress=interrupt)
    report = build_pack("p", [DOCS.as_uri()], out=out, options=BuildOptions(fresh=True))
    assert report.resumed == 0 and report.chunks_embedded > 0


def test_build_with_no_good_document_fails_and_keeps_the_old_pack(built_pack: Path, tmp_path: Path) -> None:
    pack = _copy(built_pack, tmp_path)
    before = (pack / "manifest.json").read_bytes()
    missing = (tmp_path / "nope.html").as_uri()
    with pytest.raises(BuildError, match="no document"):
        build_pack("fixture", [missing], out=pack)
    assert (pack / "manifest.json").read_bytes() == before


def test_build_refuses_to_replace_a_folder_that_is_not_a_pack(tmp_path: Path) -> None:
    precious = tmp_path / "precious"
    precious.mkdir()
    (precious / "thesis.tex").write_text("years of work")
    with pytest.raises(UsageError, match="not a pack"):
        build_pack("precious", [DOCS.as_uri()], out=precious)
    assert (precious / "thesis.tex").read_text() == "years of work"


def test_bad_pack_name_is_a_usage_error(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"'\.\./escape' is a path, not a pack name"):
        build_pack("../escape", [DOCS.as_uri()], out=tmp_path / "x")
    with pytest.raises(UsageError, match="invalid pack name 'my_pack'"):
        build_pack("my_pack", [DOCS.as_uri()], out=tmp_path / "x")


def test_build_into_packs_home_by_default(wikigr_home: Path) -> None:
    report = build_pack("homed", [(DOCS / "json.html").as_uri()])
    assert report.path == wikigr_home / "packs" / "homed"
    assert open_pack("homed").manifest.stats.articles == 1


def test_pack_from_a_passage_corpus(tmp_path: Path) -> None:
    corpus = tmp_path / "passages.json"
    corpus.write_text(
        json.dumps(
            [
                {
                    "title": "Lilu (mythology)",
                    "text": "Lilu is a masculine Akkadian word for a spirit or demon.",
                },
                {
                    "title": "Gallu",
                    "text": "In Mesopotamian religion, gallu were great demons of the underworld.",
                },
                {
                    "title": "Bread",
                    "text": "Bread is a staple food prepared from a dough of flour and water.",
                },
            ]
        )
    )
    report = build_pack("corpus", [], out=tmp_path / "c", corpus=corpus)
    assert report.manifest.stats.articles == 3
    assert (
        report.manifest.description
        == "3 passages from the corpus passages.json: Lilu (mythology); Gallu; Bread"
    )
    with pytest.raises(UsageError, match="cannot be combined with --url/--urls"):  # documents or passages
        build_pack("mixed", [DOCS.as_uri()], out=tmp_path / "m", corpus=corpus)
    assert not (tmp_path / "m").exists()
    assert [s.url for s in report.manifest.sources] == ["passage:0", "passage:1", "passage:2"]
    result = query_pack(tmp_path / "c", "underworld demons in Mesopotamia", top_k=2)
    assert result.sources[0].title == "Gallu" and result.sources[0].url == "passage:1"
    hotpot = tmp_path / "hotpot.json"
    hotpot.write_text(
        json.dumps({"Demon Dice": ["Demon Dice is a dice game.", " Each player controls a demon."]})
    )
    report = build_pack("hotpot", [], out=tmp_path / "h", corpus=hotpot)
    assert report.manifest.sources[0].url == "passage:Demon%20Dice"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "item 0"),
        ("{bad json", "not JSON"),
        ("[" * 100_000, "nested too deeply"),  # json's RecursionError
        ('[{"text": "a", "n": ' + "9" * 5000 + "}]", "a number too long"),  # a plain ValueError
        ("[]", "no passages"),
        ('[{"id": 1, "text": "a"}, {"id": 1, "text": "b"}]', "not unique"),
    ],
)
def test_bad_corpus_is_a_usage_error(tmp_path: Path, content: str, message: str) -> None:
    corpus = tmp_path / "c.json"
    corpus.write_text(content)
    with pytest.raises(UsageError, match=message):
        build_pack("c", [], out=tmp_path / "c", corpus=corpus)


def test_a_bad_corpus_line_or_encoding_is_named(tmp_path: Path) -> None:
    lines = tmp_path / "c.jsonl"
    lines.write_text('{"text": "a"}\n\n[[[\n')
    with pytest.raises(UsageError, match=r"c\.jsonl: line 3: not JSON \(Expecting value at character 3\)"):
        build_pack("c", [], out=tmp_path / "c", corpus=lines)
    lines.write_text('{"text": "a"}\n\n"oops"\n')
    with pytest.raises(UsageError, match=r"c\.jsonl: line 3: expected an object with a 'text' string"):
        build_pack("c", [], out=tmp_path / "c", corpus=lines)
    # a line is what "\n" ends: a passage may hold U+2028 (json.dumps writes it as it is)
    lines.write_text(json.dumps({"text": "one\u2028two"}, ensure_ascii=False) + "\n", encoding="utf-8")
    build_pack("c", [], out=tmp_path / "c", corpus=lines)
    binary = tmp_path / "b.json"
    binary.write_bytes(b'[{"text": "caf\xe9"}]')
    with pytest.raises(UsageError, match=r"b\.json: not UTF-8 \(invalid continuation byte at byte 14\)"):
        build_pack("b", [], out=tmp_path / "b", corpus=binary)
