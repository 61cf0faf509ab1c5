"""Packs in shards (wikigr.pack.shards): ``pack create --shards N`` writes one logical pack in N
stores with one manifest listing them and their checksums; the set validates, exports, installs,
describes itself in one skill and answers as one pack: one agent over the union of its shards'
stores (wikigr.pack.union)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.cli.test_cli import assert_one_error, cli
from tests.test_graph import CORPUS
from tests.test_ray import MORE, QUESTIONS
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.errors import InvalidPackError, StoreError, UsageError
from wikigr.pack.keyword import KeywordUnion
from wikigr.pack.manifest import load_manifest
from wikigr.pack.pack import open_pack
from wikigr.pack.shards import store_digest
from wikigr.pack.union import StoreUnion
from wikigr.packset import PackSet, open_agent
from wikigr.skill import parse_front_matter
from wikigr.validate import validate_pack


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("shard-corpus") / "corpus.json"
    path.write_text(json.dumps(CORPUS + MORE))
    return path


@pytest.fixture(scope="module")
def one_store(corpus: Path) -> Path:
    return build_pack("whole", [], out=corpus.parent / "whole", corpus=corpus).path


@pytest.fixture(scope="module")
def sharded(corpus: Path) -> Path:
    return build_pack("wiki", [], out=corpus.parent / "wiki", corpus=corpus, shards=3).path


def test_a_pack_in_shards_lists_its_shards_with_checksums(sharded: Path, one_store: Path) -> None:
    manifest = load_manifest(sharded / "manifest.json")
    whole = load_manifest(one_store / "manifest.json")
    assert [s.path for s in manifest.shards] == ["shards/00", "shards/01", "shards/02"]
    assert not (sharded / "pack.db").exists()
    for record in manifest.shards:
        shard = sharded / record.path
        assert record.sha256 == store_digest(shard / "pack.db")
        assert load_manifest(shard / "manifest.json").name == record.name == f"wiki-s{record.path[-2:]}"
        assert record.chunks > 0 and validate_pack(shard).ok  # each shard is a pack of its own
    # Every document is in exactly one shard: the sums are the one-store pack's.
    for key in ("articles", "sections", "chunks"):
        assert getattr(manifest.stats, key) == getattr(whole.stats, key)
    assert [(s.url, s.status) for s in manifest.sources] == [(s.url, s.status) for s in whole.sources]
    report = validate_pack(sharded)
    assert report.ok, report.to_json()
    assert [c.name for c in report.checks if c.name.startswith("shard ")] == [
        "shard shards/00",
        "shard shards/01",
        "shard shards/02",
    ]


def test_a_pack_in_shards_answers_as_one_pack(
    capsys: pytest.CaptureFixture[str], sharded: Path, one_store: Path
) -> None:
    """One agent over the union of the shards' stores: the same passages as the one store."""
    with open_agent(sharded, llm=None, top_k=3) as agent:
        assert isinstance(agent, KnowledgeGraphAgent) and agent.name == "wiki"
        union = agent.context.store
        assert isinstance(union, StoreUnion) and [s.path.parent.name for s in union.members] == [
            "00",
            "01",
            "02",
        ]
        with open_agent(one_store, llm=None, top_k=3) as whole:
            for question in QUESTIONS:
                result, alone = agent.query(question), whole.query(question)
                assert {s.pack for s in result.sources} == {"wiki"}
                assert [s.title for s in result.sources] == [s.title for s in alone.sources]
                # Exact vector search over every shard: the one store's nearest chunks and cosines.
                vector = agent.new_state(question).vector().tolist()
                assert union.nearest_chunks(vector, 6) == pytest.approx(
                    whole.context.store.nearest_chunks(vector, 6)
                )
    code, out, err = cli(capsys, "query", str(sharded), QUESTIONS[1], "--json")
    assert code == 0, err
    answer = json.loads(out)
    assert answer["sources"][0]["title"] == "Bread" and answer["sources"][0]["pack"] == "wiki"


def test_the_union_reads_the_whole_pack(sharded: Path, one_store: Path) -> None:
    """The entity graph, title index and BM25 statistics of the union are the whole pack's; what
    the union cannot put together (raw Cypher) is refused."""
    from wikigr.graph.index import EdgeWeights, EntityGraph, graph_cache_file

    with open_agent(sharded, llm=None) as agent, open_agent(one_store, llm=None) as whole:
        assert isinstance(agent, KnowledgeGraphAgent) and isinstance(whole, KnowledgeGraphAgent)
        union, one = agent.context.store, whole.context.store
        assert sorted(union.chunk_ids()) == sorted(one.chunk_ids())
        assert sorted(union.chunk_articles()) == sorted(one.chunk_articles())
        ids = one.chunk_ids()
        assert union.chunk_texts(ids) == one.chunk_texts(ids) and len(one.chunk_texts(ids)) == len(ids)
        keys = [key for key, _ in union.entities()]
        assert len(keys) == len(set(keys)) < sum(len(s.entities()) for s in union.members)  # shared: once
        graph = EntityGraph.load(union, EdgeWeights())
        assert graph.n_chunks == len(one.chunk_ids())
        # The graph is cached under all the shards' files: read back, and not any one shard's.
        cache = graph_cache_file(union, EdgeWeights())
        assert cache is not None and cache.is_file()
        assert cache not in {graph_cache_file(s, EdgeWeights()) for s in union.members}
        assert EntityGraph.load(union, EdgeWeights()).chunk_ids == graph.chunk_ids
        keyword, alone = agent.context.keyword_index(), whole.context.keyword_index()
        assert isinstance(keyword, KeywordUnion) and len(keyword) == len(alone)
        for token in ("bread", "court", "flour"):
            assert keyword.document_frequency(token) == alone.document_frequency(token)
        # BM25 weights rescaled to the pack's idf: the one store's best passage, where the shards'
        # own scores, merged, would put first one whose words are rare in its shard only.
        raw = sorted(
            (hit for part in keyword.parts for hit in part.search(QUESTIONS[0], 3)), key=lambda h: -h[1]
        )
        assert raw[0][0] != alone.search(QUESTIONS[0], 1)[0][0]
        for question in QUESTIONS:
            assert keyword.search(question, 1)[0][0] == alone.search(question, 1)[0][0]
        with pytest.raises(StoreError, match="no one database"):
            union.one_store()
        # Both are the read interface in full, and the union is no Store (it has no database).
        from wikigr.pack.reader import PackStore
        from wikigr.pack.store import Store

        members = [name for name in dir(PackStore) if not name.startswith("_")]
        assert {"nearest_chunks", "entity_paths", "one_store", "stats"} <= set(members)
        assert [name for name in members if not (hasattr(union, name) and hasattr(one, name))] == []
        assert not isinstance(union, Store) and one.one_store() is one


def test_the_shards_answer_with_the_packs_config(sharded: Path, tmp_path: Path) -> None:
    copy = tmp_path / "wiki"
    shutil.copytree(sharded, copy)
    (copy / "kg_config.json").write_text(json.dumps({"profile": "baseline"}))
    with open_agent(copy, llm=None) as agent:
        assert isinstance(agent, KnowledgeGraphAgent) and agent.profile == "baseline"


def test_export_install_and_skill_treat_it_as_one_pack(
    capsys: pytest.CaptureFixture[str], sharded: Path, tmp_path: Path, wikigr_home: Path
) -> None:
    archive = tmp_path / "wiki.tar.gz"
    code, _, err = cli(capsys, "pack", "export", str(sharded), "-o", str(archive))
    assert code == 0, err
    skills = tmp_path / "skills"
    code, out, err = cli(capsys, "pack", "install", str(archive), "--skills-dir", str(skills), "--json")
    assert code == 0, err
    assert json.loads(out)["checksums_verified"]
    installed = wikigr_home / "packs" / "wiki"
    assert validate_pack(installed).ok
    code, out, _ = cli(capsys, "pack", "list", "--json")
    [row] = json.loads(out)["packs"]  # one pack, not one per shard
    assert row["name"] == "wiki" and row["chunks"] == load_manifest(sharded / "manifest.json").stats.chunks
    skill = (skills / "wiki" / "SKILL.md").read_text()
    assert parse_front_matter(skill)["name"] == "wiki" and "It holds 14 articles" in skill
    for row in CORPUS + MORE:  # the skill speaks of the whole pack: the titles of every shard
        assert f"- {row['title']} — passage:{row['id']}" in skill
    code, out, err = cli(capsys, "query", "wiki", QUESTIONS[2], "--json")
    assert code == 0, err
    assert json.loads(out)["sources"][0]["title"] == "Supreme Court of the United States"


def test_validate_and_install_refuse_a_tampered_or_missing_shard(
    capsys: pytest.CaptureFixture[str], sharded: Path, tmp_path: Path
) -> None:
    tampered = tmp_path / "tampered"
    shutil.copytree(sharded, tampered)
    store = tampered / "shards" / "01" / "pack.db"
    data = bytearray(store.read_bytes())
    data[-1] ^= 0xFF
    store.write_bytes(bytes(data))
    report = validate_pack(tampered)
    assert not report.ok
    [bad] = [c for c in report.checks if not c.ok]
    assert bad.name == "shard shards/01" and "checksum mismatch" in bad.detail
    code, _, err = cli(capsys, "pack", "install", str(tampered), "--skills-dir", str(tmp_path / "skills"))
    assert code == 1
    assert_one_error(err, "checksum mismatch for shards/01/pack.db")

    missing = tmp_path / "missing"
    shutil.copytree(sharded, missing)
    shutil.rmtree(missing / "shards" / "02")
    assert [c.detail for c in validate_pack(missing).checks if not c.ok] == [
        f"pack {missing}: shard shards/02 is missing"
    ]

    escaping = tmp_path / "escaping"
    shutil.copytree(sharded, escaping)
    manifest = json.loads((escaping / "manifest.json").read_text())
    manifest["shards"][0]["path"] = "shards/../../whole"
    (escaping / "manifest.json").write_text(json.dumps(manifest))
    assert any("is not a folder under shards/" in c.detail for c in validate_pack(escaping).checks)


def test_one_store_commands_say_the_pack_is_in_shards(sharded: Path) -> None:
    pack = open_pack(sharded)
    assert pack.sharded and [s.name for s in pack.shards()] == ["wiki-s00", "wiki-s01", "wiki-s02"]
    with pytest.raises(InvalidPackError, match="is in 3 shards, not one store"):
        pack.open_store()


def test_pack_info_describes_a_pack_in_shards_as_one_pack(
    capsys: pytest.CaptureFixture[str], sharded: Path, one_store: Path
) -> None:
    """`pack info`, serve's pack route and MCP's pack_info share one description (wikigr.info):
    a pack in shards has the one store's counts (summed over its shards) and titles."""
    import httpx

    from tests.test_serve import running
    from wikigr.agent_cache import AgentCache
    from wikigr.info import agent_pack_info
    from wikigr.serve.app import create_app

    code, out, err = cli(capsys, "pack", "info", str(sharded), "--json")
    assert code == 0, err
    info = json.loads(out)
    code, out, err = cli(capsys, "pack", "info", str(one_store), "--json")
    assert code == 0, err
    whole = json.loads(out)
    for key in ("articles", "sections", "chunks"):
        assert info["store_stats"][key] == whole["store_stats"][key] > 0
    assert info["store_stats"]["entities"] >= whole["store_stats"]["entities"]  # shared names: per shard
    assert [s["path"] for s in info["shards"]] == ["shards/00", "shards/01", "shards/02"]
    assert sorted(info["titles"]) == sorted(whole["titles"]) and len(info["titles"]) == 14
    assert set(info) == set(whole) | {"shards"}
    code, out, err = cli(capsys, "pack", "info", str(sharded))
    assert code == 0, err
    assert "3 (the statistics above are their sums)" in out and f"{info['store_stats']['chunks']}" in out

    cache = AgentCache()  # what the MCP tool calls
    try:
        agent = cache.one(str(sharded), None, "query")
        described = agent_pack_info(agent)
        assert described["store_stats"] == info["store_stats"] and described["titles"] == info["titles"]
        assert set(described) == set(info) | {"profile", "stages", "claude", "entity_graph"}
        assert described["entity_graph"] is True and described["claude"] is False
    finally:
        cache.close()
    with running(create_app([sharded])) as url:
        served = httpx.get(f"{url}/api/v1/packs/wiki", timeout=600).json()
    assert served["name"] == "wiki" and served["store_stats"] == info["store_stats"]
    assert served["titles"] == info["titles"] and served["shards"] == info["shards"]


def test_cypher_runs_on_each_shard_or_the_one_named(
    capsys: pytest.CaptureFixture[str], sharded: Path
) -> None:
    count = "MATCH (c:Chunk) RETURN count(c) AS chunks"
    code, out, err = cli(capsys, "cypher", str(sharded), count, "--json")
    assert code == 0, err
    data = json.loads(out)
    records = load_manifest(sharded / "manifest.json").shards
    assert data["columns"] == ["shard", "chunks"] and data["shards"] == [r.path for r in records]
    assert data["rows"] == [[r.path, r.chunks] for r in records] and not data["truncated"]
    code, out, err = cli(capsys, "cypher", str(sharded), count, "--shard", "1", "--json")
    assert code == 0, err
    assert json.loads(out)["rows"] == [["shards/01", records[1].chunks]]
    # --max-rows caps the rows of all the shards together
    titles = "MATCH (a:Article) RETURN a.title ORDER BY a.title"
    code, out, err = cli(capsys, "cypher", str(sharded), titles, "--json", "--max-rows", "5")
    assert code == 0, err
    capped = json.loads(out)
    assert capped["row_count"] == 5 and capped["truncated"]
    assert [row[0] for row in capped["rows"]] == [r.path for r in records for _ in range(r.articles)][:5]
    code, out, err = cli(capsys, "cypher", str(sharded), count)
    assert code == 0, err
    assert "3 row(s) from 3 shards (the query ran on each)" in out and "shards/02" in out
    code, _, err = cli(capsys, "cypher", str(sharded), count, "--shard", "3")
    assert code == 2
    assert_one_error(err, "--shard must be from 0 to 2: pack wiki is in 3 shards")
    code, _, err = cli(capsys, "cypher", str(sharded / "shards" / "00"), count, "--shard", "0")
    assert code == 2
    assert_one_error(err, "is in one store: --shard is for a pack in shards")
    code, _, err = cli(capsys, "cypher", str(sharded), "MATCH (c:Chunk) DETACH DELETE c")
    assert code == 2
    assert_one_error(err, "refused: DETACH is not allowed")


def test_pack_graph_and_update_refuse_a_shard_and_graph_the_pack_in_shards(
    sharded: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = (sharded / "manifest.json").read_bytes()
    code, _, err = cli(capsys, "pack", "graph", str(sharded))
    assert code == 2
    assert_one_error(err, "is in 3 shards: its entity graph, built over all of them")
    for command in ("graph", "update"):
        code, _, err = cli(capsys, "pack", command, str(sharded / "shards" / "00"))
        assert code == 2
        assert_one_error(err, "is a shard of the pack")  # its store changed would break the checksums
    assert (sharded / "manifest.json").read_bytes() == before and validate_pack(sharded).ok


def test_shard_counts_that_make_no_sense_are_usage_errors(
    capsys: pytest.CaptureFixture[str], corpus: Path, tmp_path: Path
) -> None:
    with pytest.raises(UsageError, match="more shards than documents"):
        build_pack("many", [], out=tmp_path / "many", corpus=corpus, shards=len(CORPUS + MORE) + 1)
    assert not (tmp_path / "many").exists()
    with pytest.raises(UsageError, match="--shards must be from 1"):
        build_pack("none", [], out=tmp_path / "none", corpus=corpus, shards=0)
    code, _, err = cli(capsys, "pack", "create", "x", "--corpus", str(corpus), "--shards", "0")
    assert code == 2 and "Traceback" not in err


def test_a_rebuild_in_one_store_replaces_the_shards(corpus: Path, tmp_path: Path) -> None:
    out = tmp_path / "again"
    build_pack("again", [], out=out, corpus=corpus, shards=2)
    assert (out / "shards").is_dir()
    report = build_pack("again", [], out=out, corpus=corpus)
    assert not report.manifest.shards and (out / "pack.db").is_file() and not (out / "shards").exists()
    assert validate_pack(out).ok


def _doc(source: str, text: str, chunks: int = 1, links: list[str] | None = None) -> Any:
    from wikigr.build.prepare import PreparedDocument

    return PreparedDocument(
        source=source,
        fetch={"final_url": source},
        title="",
        chunks=[{"section": 0, "ord": i, "text": text} for i in range(chunks)],
        links=links or [],
    )


def test_documents_that_share_rare_names_or_links_go_to_one_shard() -> None:
    from wikigr.build.shards import assign_shards

    docs = [
        _doc("passage:a1", "Ada Lovelace wrote the first program for the Analytical Engine."),
        _doc("passage:b1", "The Treaty of Westphalia ended the Thirty Years War."),
        _doc("passage:c1", "Mount Kilimanjaro is the highest mountain of Tanzania."),
        _doc("passage:a2", "Charles Babbage designed the Analytical Engine in London."),
        _doc("passage:b2", "Osnabrück and Münster hosted the Treaty of Westphalia talks."),
        _doc("passage:c2", "Climbers of Mount Kilimanjaro start at Moshi."),
        _doc("https://x.org/p.html", "plain words only", links=["https://x.org/q.html"]),
        _doc("https://x.org/q.html", "more plain words"),
    ]
    placed = dict(zip([d.source for d in docs], assign_shards(docs, 3), strict=True))
    for a, b in (("passage:a1", "passage:a2"), ("passage:b1", "passage:b2"), ("passage:c1", "passage:c2")):
        assert placed[a] == placed[b], placed  # a shared rare name: the same shard
    assert placed["https://x.org/p.html"] == placed["https://x.org/q.html"]  # a link: the same shard
    assert len({placed["passage:a1"], placed["passage:b1"], placed["passage:c1"]}) == 3  # spread out


def test_shards_hold_about_as_many_chunks_each() -> None:
    from wikigr.build.shards import assign_shards

    # One name shared by everything would pull every document into one shard: the cap stops it.
    docs = [_doc(f"passage:{i}", f"Grand Duchy of Baden, item {i}", chunks=1 + i % 3) for i in range(40)]
    shards = assign_shards(docs, 4)
    load = [sum(len(d.chunks) for d, s in zip(docs, shards, strict=True) if s == k) for k in range(4)]
    total = sum(len(d.chunks) for d in docs)
    assert max(load) <= -(-105 * total // 400) + 3 and min(load) > 0, load  # 5% and a document at most


HOPS = {
    # The first passage names the second's title ("... founded by Zephyr Quill").
    "title": (
        "The Quillville Rowing Club was founded in 1921 by Zephyr Quill, a boat builder. "
        "Its crews race on the fjord every summer.",
        "Zephyr Quill",
        "Zephyr Quill came into the world in Tromsø, in the far north of Norway, and later "
        "built racing shells for crews across Europe.",
        "Where was the founder of the Quillville Rowing Club born?",
    ),
    # Not named by the first, but both name a rare entity the question does not (the Varnholt
    # Boatyard): the same normalised name is the same entity in each shard.
    "entity": (
        "The Quillville Rowing Club was founded in 1921. Its first racing shells came from "
        "the Varnholt Boatyard, and its crews race on the fjord every summer.",
        "Halvard Strand",
        "Halvard Strand ran the Varnholt Boatyard for forty years; he grew up in Bodø, "
        "a town on the coast of Nordland.",
        "Who made the first racing shells of the Quillville Rowing Club?",
    ),
}


@pytest.mark.parametrize("link", sorted(HOPS))
def test_the_next_hop_crosses_shards(link: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A multi-hop question whose second passage is in another shard: the pack follows the link
    (a title, or a shared entity) across the boundary, where the shards answering each on its own
    (and merged as several packs are) do not."""
    import wikigr.build.shards as shards

    first, title, second, question = HOPS[link]
    rows = [
        {"id": "club", "title": "Quillville Rowing Club", "text": first},
        {"id": "hop", "title": title, "text": second},
        *CORPUS,
        *MORE,
    ]
    corpus = tmp_path / "corpus.json"
    corpus.write_text(json.dumps(rows))

    def apart(docs: list[Any], count: int) -> list[int]:  # the two hops in different shards
        return [
            1 if d.source == "passage:hop" else 0 if d.source == "passage:club" else i % 2
            for i, d in enumerate(docs)
        ]

    monkeypatch.setattr(shards, "assign_shards", apart)
    out = build_pack("hop", [], out=tmp_path / "hop", corpus=corpus, shards=2).path
    alone = [KnowledgeGraphAgent(shard, llm=None, top_k=5) for shard in open_pack(out).shards()]
    with PackSet(alone, owns=True) as each:
        assert title not in [s.title for s in each.query(question).sources]
    with open_agent(out, llm=None, top_k=5) as agent:
        titles = [s.title for s in agent.query(question).sources]
    assert titles[0] == "Quillville Rowing Club" and title in titles

    def bridge(pack: Any) -> tuple[dict[str, Any], list[str]]:  # the next hop from the first passage
        with KnowledgeGraphAgent(pack, llm=None, top_k=5, profile="baseline", enable=["bridge"]) as agent:
            result = agent.query(question)
        [entry] = [s for s in result.trace["stages"] if s["stage"] == "bridge"]
        return entry, [s.title for s in result.sources]

    # The link itself: the union's title index and entity graph lead from the first passage to
    # the second, in the other shard; the first passage's shard alone has nowhere to go.
    alone_entry, _ = bridge(open_pack(out).shards()[0])
    assert alone_entry["skipped"] == "the top passages link to no other passage"
    entry, ranked = bridge(out)
    assert entry["detail"]["entity_links" if link == "entity" else "title_links"] >= 1
    assert ranked[:2] == ["Quillville Rowing Club", title]


def test_the_agent_cache_of_mcp_and_serve_opens_a_pack_in_shards(sharded: Path) -> None:
    from wikigr.agent_cache import AgentCache

    cache = AgentCache()
    try:
        agent = cache.get(str(sharded), None, "search")
        assert isinstance(agent, KnowledgeGraphAgent) and isinstance(agent.context.store, StoreUnion)
        assert agent.query(QUESTIONS[1]).sources[0].pack == "wiki"
        with cache.use([str(sharded)], None, "query") as used:
            assert (
                isinstance(used, KnowledgeGraphAgent) and used.query(QUESTIONS[1]).sources[0].title == "Bread"
            )
    finally:
        cache.close()


def test_pages_in_shards_keep_their_links(server: Any, tmp_path: Path) -> None:
    """--urls with --shards: pages that link to each other land in one shard, so no link is cut."""
    pairs = {"/a.html": "/b.html", "/b.html": "/a.html", "/c.html": "/d.html", "/d.html": "/c.html"}
    topics = {"/a.html": "kettles", "/b.html": "teapots", "/c.html": "violins", "/d.html": "cellos"}
    for path, target in pairs.items():
        body = (
            f"<title>{topics[path]}</title><h1>{topics[path]}</h1><p>"
            + (f"All about {topics[path]} and how to care for them. " * 20)
            + f"See <a href='{target}'>{topics[target]}</a>.</p>"
        )
        server.add(path, body)
    urls = [server.url(p) for p in pairs]
    whole = build_pack("whole", urls, out=tmp_path / "whole")
    report = build_pack("paged", urls, out=tmp_path / "paged", shards=2)
    assert whole.manifest.stats.links == 4
    assert report.manifest.stats.links == 4  # none crosses a shard boundary
    assert sorted(s.articles for s in report.manifest.shards) == [2, 2]
    assert validate_pack(report.path).ok
    # Pages answer through the stages that read links and whole pages (page_score, graph_rerank,
    # multidoc) as the one store does; the graph view of `wikigr serve` reads the union too.
    from wikigr.serve.graph import neighbourhood

    with (
        open_agent(report.path, llm=None, top_k=2) as paged,
        open_agent(whole.path, llm=None, top_k=2) as one,
    ):
        assert isinstance(paged, KnowledgeGraphAgent) and isinstance(one, KnowledgeGraphAgent)
        for question in ("How do I care for a kettle?", "What about cellos?"):
            result, alone = paged.query(question), one.query(question)
            assert result.trace["stages"][0]["detail"]["strategy"] == "pages"
            assert [(s.url, s.text) for s in result.sources] == [(s.url, s.text) for s in alone.sources]
        chunk = result.sources[0].chunk_id
        shown = neighbourhood(paged.context.store, [chunk], [])
        assert shown == neighbourhood(one.context.store, [chunk], [])
        assert paged.context.store.stats() == one.context.store.stats()


def _graph_of(
    store: Any,
) -> tuple[list[tuple[str, str]], list[tuple[str, str]], dict[tuple[str, str, str], float]]:
    """A store's entity graph: its entities (key, type), mentions (chunk, entity) and relations
    (from, to, type) -> weight, summed over the union's shards as the pack's graph sums them."""
    relations: dict[tuple[str, str, str], float] = {}
    for a, b, kind, weight in store.entity_relations():
        relations[(a, b, kind)] = relations.get((a, b, kind), 0.0) + weight
    return sorted(store.entities()), sorted(store.entity_mentions()), relations


def test_a_pack_in_shards_has_the_one_stores_entity_graph(sharded: Path, one_store: Path) -> None:
    """The entity graph is built once over all the pack's chunks — the skeleton (the chunks spaCy
    reads in full) chosen over all their vectors, synonyms over all the names — and each shard
    stores its part: the union's entities, mentions, facts and relations (SYNONYM edges between
    names of different shards too) are the one store's, where skeletons and synonyms chosen per
    shard would differ."""
    from wikigr.graph.build import SYNONYM
    from wikigr.graph.skeleton import skeleton
    from wikigr.pack.store import Store

    with open_agent(sharded, llm=None) as agent, Store.open(one_store / "pack.db", read_only=True) as one:
        union = agent.context.store
        assert isinstance(union, StoreUnion)
        entities, mentions, relations = _graph_of(union)
        assert (entities, mentions) == _graph_of(one)[:2]
        assert relations.keys() == _graph_of(one)[2].keys()
        assert relations == pytest.approx(_graph_of(one)[2])
        ids = union.chunk_ids()
        assert sorted(union.chunk_facts(ids)) == sorted(one.chunk_facts(ids))
        # Each shard holds its own chunks' mentions and the entities they name; a SYNONYM edge is
        # stored once, in a shard holding both names, or its first name's (the other a node there).
        homes: dict[str, set[int]] = {}
        for index, shard in enumerate(union.members):
            own = set(shard.chunk_ids())
            assert {chunk for chunk, _ in shard.entity_mentions()} <= own
            for _, key in shard.entity_mentions():
                homes.setdefault(key, set()).add(index)
        synonyms = [(a, b) for a, b, kind in relations if kind == SYNONYM]
        assert synonyms and any(not homes[a] & homes[b] for a, b in synonyms)  # across shards
        # A corpus where the shards' own skeletons are not the pack's: the old build's graph differed.
        ids_, _, vectors = one.chunk_matrix()
        whole = {ids_[i] for i in skeleton(vectors, 0.25, 10).tolist()}
        apart = set()
        for shard in union.members:
            shard_ids, _, shard_vectors = shard.chunk_matrix()
            apart |= {shard_ids[i] for i in skeleton(shard_vectors, 0.25, 10).tolist()}
        assert apart != whole


def test_cypher_caps_the_bytes_of_all_the_shards_together(
    sharded: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pickle

    from wikigr.pack import cypher

    titles = "MATCH (a:Article) RETURN a.title, a.url ORDER BY a.title"
    whole = cypher.read_pack_query(open_pack(str(sharded)), titles)
    size = sum(len(pickle.dumps(row[1:], protocol=pickle.HIGHEST_PROTOCOL)) for row in whole.rows)
    assert not whole.truncated and size > 300
    monkeypatch.setattr(cypher, "MAX_RESULT_BYTES", 150)  # less than one shard's rows
    capped = cypher.read_pack_query(open_pack(str(sharded)), titles)
    assert capped.truncated and 0 < len(capped.rows) < len(whole.rows)
    assert sum(len(pickle.dumps(row[1:], protocol=pickle.HIGHEST_PROTOCOL)) for row in capped.rows) <= 150
    assert capped.rows == whole.rows[: len(capped.rows)]
