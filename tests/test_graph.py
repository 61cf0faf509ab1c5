"""The entity graph: offline extraction, the graph written at build, skeleton indexing, the ppr
stage — on real packs built from a small passage corpus, with the real embedder and spaCy."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.build.prepare import passage_url
from wikigr.graph.extract import SpacyExtractor, keyword_entities, normalize, title_name
from wikigr.graph.skeleton import knn_graph, pagerank, skeleton
from wikigr.pack.pack import open_pack
from wikigr.pack.store import open_store

# A two-hop question: the journal's passage names the association, and only the second passage
# (which never names the journal) says who its first president was.
CORPUS = [
    {
        "id": "jpi",
        "title": "Journal of Psychotherapy Integration",
        "text": "The Journal of Psychotherapy Integration is a peer-reviewed academic journal published by "
        "the American Psychological Association. It was established in 1991 and covers research in "
        "psychotherapy.",
    },
    {
        "id": "adolescence",
        "title": "Adolescence",
        "text": "The formal study of adolescent psychology began with the publication of G. Stanley Hall's "
        "book in 1904. Hall, who was the first president of the American Psychological Association, "
        "viewed adolescence as a time of turmoil.",
    },
    {
        "id": "aps",
        "title": "American Physical Society",
        "text": "The American Physical Society was founded in 1899. Its first president was Henry Augustus "
        "Rowland, a physicist who studied the spectrum of the Sun.",
    },
    {
        "id": "journal-physics",
        "title": "Journal of Mathematical Physics",
        "text": "The Journal of Mathematical Physics is a peer-reviewed journal published monthly by the "
        "American Institute of Physics. The current editor is Jan Philip Solovej.",
    },
    {
        "id": "court-a",
        "title": "Supreme Court of the United States",
        "text": "The U.S. Supreme Court is the highest court of the federal judiciary. It hears appeals from "
        "the circuit courts.",
    },
    {
        "id": "court-b",
        "title": "Marbury v. Madison",
        "text": "Marbury v. Madison was decided by the United States Supreme Court in 1803 and established "
        "judicial review.",
    },
    {
        "id": "president-club",
        "title": "Presidents Club",
        "text": "The first president of a club is usually its founder, who leads the first meetings and "
        "writes the first rules of the association. Bread and salt welcome new members.",
    },
    {
        "id": "bread",
        "title": "Bread",
        "text": "Knead the dough for ten minutes, let it rise for an hour, and bake it until the crust is "
        "brown. Rise times are longer in winter: the dough may rise for two hours. Bread is best "
        "eaten fresh, and good bread needs time.",
    },
]


@pytest.fixture(scope="module")
def graph_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("graphcorpus")
    corpus = folder / "corpus.json"
    corpus.write_text(json.dumps(CORPUS))
    out = tmp_path_factory.mktemp("graphpacks") / "hops"
    report = build_pack("hops", [], out=out, corpus=corpus)
    assert report.graph is not None
    assert report.graph.llm_calls == 0  # no API key: the build makes no LLM call
    assert report.graph.extractor == "spacy"
    return out


def test_normalize_merges_spellings() -> None:
    assert normalize("The American Psychological Association") == "american psychological association"
    assert normalize("G. Stanley Hall's") == normalize("G. Stanley Hall") == "g. stanley hall"
    assert normalize("Aschenbrödel") == "aschenbrodel"
    assert normalize("Akinoshu Kenji's birthplace") == "akinoshu kenji birthplace"
    assert normalize("socket.settimeout()") == "socket.settimeout"
    assert title_name("Lilu (mythology)") == "Lilu"
    assert title_name("socket — Low-level networking interface") == "socket"


def test_keyword_entities_finds_names_titles_and_identifiers() -> None:
    text = (
        'Published in 1904, G. Stanley Hall\'s "Adolescence in 1904" was read in France and Germany. '
        "Call socket.settimeout() or sock_recv."
    )
    keys = {m.key: m.type for m in keyword_entities("Lilu (mythology)", text)}
    assert keys["lilu"] == "title"
    assert keys["g. stanley hall"] == "name"
    assert keys["adolescence in 1904"] == "work"
    assert {"france", "germany"} <= set(keys)
    assert keys["socket.settimeout"] == "code" and keys["sock_recv"] == "code"
    assert "in" not in keys  # stop words never; "Call" (a sentence start) is dropped at build
    # a run of capitalised words too long for one name: the names it joins with "of"
    long = "It stands in the Sangre de Cristo Range of the Rocky Mountains of North America, 2 GWh The End."
    keys = {m.key for m in keyword_entities("", long)}
    assert {"sangre de cristo range", "rocky mountains", "north america", "gwh", "end"} <= keys
    assert "gwh the end" not in keys  # a capitalised "The" inside a run starts another name
    assert "lord of the rings" in {m.key for m in keyword_entities("", "I read The Lord of The Rings.")}


def test_spacy_extracts_entities_and_svo_facts() -> None:
    sentence = "The journal is published by the American Psychological Association."
    [result] = SpacyExtractor().extract([sentence])
    assert "american psychological association" in {m.key for m in result.mentions}
    [fact] = [f for f in result.facts if "published" in f.predicate]
    assert normalize(fact.object) == "american psychological association"


def test_build_writes_the_graph_and_the_manifest_counts_it(graph_pack: Path) -> None:
    pack = open_pack(graph_pack)
    stats = pack.manifest.stats
    assert stats.entities > 10 and stats.relations > 0 and stats.facts > 0
    with open_store(graph_pack / "pack.db") as store:
        assert store.stats()["entities"] == stats.entities
        assert store.stats()["relations"] == stats.relations
        mentions = store.entity_mentions()
        by_article = {r[0]: r[1] for r in store.rows("MATCH (c:Chunk) RETURN c.id, c.article_id")}
        apa = {by_article[c] for c, e in mentions if e == "american psychological association"}
        # Both passages mention the association: that is the bridge between the two hops.
        assert apa == {passage_url("jpi"), passage_url("adolescence")}
        relations = store.entity_relations()
        kinds = {r[2] for r in relations}
        assert "CO_OCCURS" in kinds
        synonyms = {(a, b) for a, b, kind, _ in relations if kind == "SYNONYM"}
        assert ("supreme court of the united states", "united states supreme court") in synonyms
        # Stop words are never names; "Rise" only starts a sentence while "rise" is an ordinary word.
        entities = {e for e, _ in store.entities()}
        assert not {"it", "its", "the", "rise"} & entities
        assert "knead" in entities  # capitalised, and never written in lower case here
        assert "bread" in entities  # an article's title stays a name, however the text writes it


def test_no_graph_option_leaves_the_tables_empty(tmp_path: Path) -> None:
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps(CORPUS[:2]))
    report = build_pack("plain", [], out=tmp_path / "plain", corpus=corpus, options=BuildOptions(graph=False))
    assert report.graph is None
    assert report.manifest.stats.entities == 0 and report.manifest.stats.relations == 0
    with KnowledgeGraphAgent(tmp_path / "plain", profile="graph", llm=None) as agent:
        result = agent.query("Who was the first president of the American Psychological Association?")
    [ppr] = [s for s in result.trace["stages"] if s["stage"] == "ppr"]
    assert ppr["skipped"] == "the pack has no entity graph (add one: wikigr pack graph PACK)"
    assert result.sources  # the other stages still answer


def test_ppr_finds_the_second_hop(graph_pack: Path) -> None:
    question = (
        "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    )
    with KnowledgeGraphAgent(graph_pack, profile="graph", llm=None, top_k=3) as agent:
        result = agent.query(question)
    [ppr] = [s for s in result.trace["stages"] if s["stage"] == "ppr"]
    assert "journal of psychotherapy integration" in ppr["detail"]["linked"]
    titles = [s.title for s in result.sources[:2]]
    assert set(titles) == {"Journal of Psychotherapy Integration", "Adolescence"}


def test_skeleton_picks_the_central_chunks() -> None:
    rng = np.random.default_rng(0)
    hub = rng.normal(size=16)
    near = [hub + 0.3 * rng.normal(size=16) for _ in range(8)]
    far = [rng.normal(size=16) * 3 for _ in range(4)]
    vectors = np.array(near + far, dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    graph = knn_graph(vectors, k=3)
    assert (graph != graph.T).nnz == 0  # symmetric
    rank = pagerank(graph)
    assert rank.sum() == pytest.approx(1.0)
    chosen = skeleton(vectors, beta=0.25, k=3)
    assert len(chosen) == 3
    assert set(chosen.tolist()) <= set(range(8))  # from the dense cluster, not the outliers
    assert len(skeleton(vectors, beta=1.0)) == len(vectors)


def test_above_exact_max_the_knn_graph_is_approximate_and_finds_most_neighbours() -> None:
    # Topics as clusters of passages: the approximate graph (cells of about sqrt(n) vectors, 16
    # searched per vector) must find most of each vector's exact neighbours, and the same on
    # every run (the cells are seeded).
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(60, 64))
    vectors = np.repeat(centres, 40, axis=0) + 1.5 * rng.normal(size=(2400, 64))  # overlapping
    vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
    exact = knn_graph(vectors, k=10)
    approx = knn_graph(vectors, k=10, exact_max=100)
    assert (approx != approx.T).nnz == 0 and approx.diagonal().sum() == 0
    assert (approx != knn_graph(vectors, k=10, exact_max=100)).nnz == 0  # deterministic
    found = [
        len(set(exact[i].indices) & set(approx[i].indices)) / len(exact[i].indices)
        for i in range(len(vectors))
    ]
    assert np.mean(found) >= 0.8  # 0.84 here
    # it searches part of the pairs: with 2 cells per vector it finds clearly fewer (0.66 here)
    narrow = knn_graph(vectors, k=10, exact_max=100, probe=2)
    kept = [len(set(exact[i].indices) & set(narrow[i].indices)) / len(exact[i].indices) for i in range(2400)]
    assert np.mean(kept) < np.mean(found) - 0.1


def test_vector_cypher_follows_shared_entities(graph_pack: Path) -> None:
    question = "Which journal is published by the American Psychological Association?"
    with KnowledgeGraphAgent(
        graph_pack,
        profile="baseline",
        enable=["vector_cypher"],
        options={"vector_cypher": {"seeds": 1}},  # one entry point: the journal's passage
        llm=None,
        top_k=4,
    ) as agent:
        result = agent.query(question)
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "vector_cypher"]
    assert not entry.get("skipped")
    assert entry["detail"]["reached"] >= 1
    # The path through the association joins the two passages that name it.
    assert any("American Psychological Association" in line for line in result.facts)
    assert {"Journal of Psychotherapy Integration", "Adolescence"} <= {s.title for s in result.sources}


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("How many journals does the American Institute of Physics publish?", "aggregate"),
        ("List all the courts of the federal judiciary.", "global"),
        ("What is the relationship between Marbury v. Madison and judicial review?", "relation"),
        ("Who was the first president of the association which published the journal?", "multi_hop"),
        ("When was the American Physical Society founded?", "simple"),
        ("Which region is Corey Taylor's city of birth located in?", "multi_hop"),
        ("What country was the author of Brand a citizen of?", "multi_hop"),
        ("What is the capital of france?", "simple"),  # "the Y of x" needs a name
    ],
)
def test_router_rules(question: str, kind: str) -> None:
    from wikigr.question import classify

    assert classify(question)[0] == kind


def test_router_escalates_and_keeps_the_best_attempt(graph_pack: Path) -> None:
    # An unreachable threshold: every rung of the simple ladder is tried, the best one is kept (a
    # time budget the slowest machine cannot exhaust: the budget has its own test below).
    options = {"router": {"score": "similarity", "threshold": 1.01, "max_attempts": 4, "budget_ms": 1e9}}
    with KnowledgeGraphAgent(graph_pack, profile="routed", llm=None, options=options) as agent:
        result = agent.query("When was the American Physical Society founded?")
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    detail = entry["detail"]
    assert detail["kind"] == "simple"
    assert [a["strategy"] for a in detail["attempts"]] == ["vector", "hybrid", "graph", "wide"]
    best = max(a["score"] for a in detail["attempts"])
    assert detail["chosen"] in {a["strategy"] for a in detail["attempts"] if a["score"] == best}
    assert result.sources[0].title == "American Physical Society"
    # A reachable one: the first rung is enough.
    with KnowledgeGraphAgent(
        graph_pack, profile="routed", llm=None, options={"router": {"threshold": 0.0}}
    ) as agent:
        result = agent.query("When was the American Physical Society founded?")
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert [a["strategy"] for a in entry["detail"]["attempts"]] == ["vector"]


def test_router_scores_attempts_by_how_much_of_the_question_they_cover(graph_pack: Path) -> None:
    # The default score: the share of the question's content words found in the top passages
    # (and a time budget a loaded machine cannot exhaust).
    options = {"router": {"budget_ms": 1e9}}
    with KnowledgeGraphAgent(graph_pack, profile="routed", llm=None, options=options) as agent:
        covered = agent.query("When was the American Physical Society founded?")
        uncovered = agent.query("When was the American Physical Society founded in Atlantis?")
    [entry] = [s for s in covered.trace["stages"] if s["stage"] == "router"]
    assert entry["detail"]["attempts"] == [entry["detail"]["attempts"][0]]  # all covered: no escalation
    assert entry["detail"]["attempts"][0]["score"] == 1.0
    [entry] = [s for s in uncovered.trace["stages"] if s["stage"] == "router"]
    attempts = entry["detail"]["attempts"]
    assert len(attempts) == 2  # "atlantis" is in no passage: it escalates up to max_attempts
    assert all(a["score"] == 0.8 for a in attempts)  # 4 of the 5 words, on every rung
    assert entry["detail"]["chosen"] == attempts[0]["strategy"]  # on a tie the first (cheapest) one is kept


def test_router_answers_global_questions_as_an_enumeration(graph_pack: Path) -> None:
    with KnowledgeGraphAgent(graph_pack, profile="routed", llm=None, top_k=2) as agent:
        result = agent.query("List all the journals in this pack.")
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert entry["detail"]["answer_style"] == "enumeration"
    assert len(result.sources) > 2  # widened from top_k=2
    lines = result.answer.splitlines()
    assert lines[0].startswith("- ") and all(line.startswith("- ") for line in lines)
    assert len(lines) == len({s.url.split("#")[0] for s in result.sources})


def test_router_classifies_with_claude_when_available(graph_pack: Path, fake_claude: Any) -> None:
    from tests.fakeclaude import make_llm

    fake_claude.script("multi_hop")
    with (
        make_llm(fake_claude) as llm,
        KnowledgeGraphAgent(graph_pack, profile="routed", llm=llm, disable=["synthesize"]) as agent,
    ):
        result = agent.query("When was the American Physical Society founded?")
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert entry["detail"]["kind"] == "multi_hop" and entry["detail"]["why"] == "Claude"
    assert len(fake_claude.requests) == 1
    assert result.trace["usage"]["calls"] == 1


def test_skeleton_extraction_with_claude(tmp_path: Path, fake_claude: Any) -> None:
    from tests.fakeclaude import make_llm, prompt_text

    def respond(body: dict[str, Any]) -> str:
        text = prompt_text(body)
        passages = []
        for n in range(1, 9):
            if f"Passage {n}:" in text:
                passages.append(
                    {
                        "id": n,
                        "entities": [{"name": "Psychology Society", "type": "organization"}],
                        "facts": [
                            ["Psychology Society", "publishes", "Journal of Psychotherapy Integration"]
                        ],
                    }
                )
        return json.dumps({"passages": passages})

    fake_claude.respond_with(respond)
    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps(CORPUS))
    options = BuildOptions()
    options.graph_options.beta = 0.25
    with make_llm(fake_claude) as llm:
        options.llm = llm
        report = build_pack("claude", [], out=tmp_path / "claude", corpus=corpus, options=options)
    graph = report.graph
    assert graph is not None and graph.extractor == "claude"
    assert graph.skeleton_chunks == 2  # 25% of 8 chunks
    assert graph.llm_calls == len(fake_claude.requests) == 1  # one batch
    assert graph.input_tokens > 0 and graph.output_tokens > 0
    with open_store(tmp_path / "claude" / "pack.db") as store:
        assert "psychology society" in {e for e, _ in store.entities()}
        facts = store.rows("MATCH (f:Fact) RETURN f.predicate")
        assert facts == [["publishes"]] * 2


def test_cli_create_no_graph_and_pack_graph(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from wikigr.cli import run

    corpus = tmp_path / "c.json"
    corpus.write_text(json.dumps(CORPUS[:3]))
    out = tmp_path / "cli"
    code = run(["pack", "create", "cli", "--corpus", str(corpus), "--out", str(out), "--no-graph", "--json"])
    created = json.loads(capsys.readouterr().out)
    assert code == 0 and created["graph"] is None and created["stats"]["entities"] == 0
    # The graph added afterwards, in place: counted in the manifest, and the pack still valid.
    code = run(["pack", "graph", str(out), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0 and report["llm_calls"] == 0 and report["entities"] > 0
    assert open_pack(out).manifest.stats.entities == report["entities"]
    assert run(["pack", "validate", str(out)]) == 0
    capsys.readouterr()
    code = run(["pack", "info", str(out), "--json"])
    info = json.loads(capsys.readouterr().out)
    assert code == 0
    assert info["store_stats"]["entities"] == report["entities"]
    assert info["store_stats"]["relations"] == report["relations"]


def test_home_edges_lead_a_name_to_its_own_page() -> None:
    # Chunk "seed" names "Bridge"; four chunks mention Bridge, and one of them is Bridge's own page.
    from wikigr.graph.index import EdgeWeights, EntityGraph

    chunks = ["seed", "bridge-page", "other-1", "other-2", "other-3"]
    mentions = [("seed", "seed"), ("seed", "bridge")] + [(c, "bridge") for c in chunks[1:]]
    homes = [("seed", "seed"), ("bridge-page", "bridge")]

    def mass(home: float) -> dict[str, float]:
        graph = EntityGraph(
            chunks, ["bridge", "seed"], ["name", "title"], mentions, [], EdgeWeights(home=home), homes=homes
        )
        reset = np.zeros(graph.size)
        reset[graph.n_chunks + graph.entity_index["seed"]] = 1.0
        rank = graph.ppr(reset, damping=0.85)
        return {c: float(rank[graph.chunk_index[c]]) for c in chunks}

    flat, homed = mass(0.0), mass(1.0)
    assert flat["bridge-page"] == pytest.approx(
        flat["other-1"]
    )  # without home edges: one mention like any other
    assert (
        homed["bridge-page"] > 2 * homed["other-1"]
    )  # with them: the page about Bridge gets most of its mass


def test_entity_graph_loads_home_edges_from_article_titles(graph_pack: Path) -> None:
    from wikigr.graph.index import EdgeWeights, EntityGraph

    with open_store(graph_pack / "pack.db", read_only=True) as store:
        homed = EntityGraph.load(store, EdgeWeights(home=1.0))
        flat = EntityGraph.load(store, EdgeWeights(home=0.0))
        [page] = [c for c, _, title in store.chunk_articles() if title == "Adolescence"]
    entity, chunk = homed.n_chunks + homed.entity_index["adolescence"], homed.chunk_index[page]
    # The transition from the entity to its page: more than a plain mention gives it.
    assert homed.transition[chunk, entity] > flat.transition[chunk, entity]


def _entity_vectors(store: Any) -> tuple[list[str], np.ndarray]:
    rows = store.rows("MATCH (e:Entity) WHERE e.embedding IS NOT NULL RETURN e.id, e.embedding")
    return [r[0] for r in rows], np.asarray([r[1] for r in rows], dtype=np.float32)


def test_entity_names_have_vectors_in_the_store(graph_pack: Path) -> None:
    with open_store(graph_pack / "pack.db", read_only=True) as store:
        ids, vectors = _entity_vectors(store)
        types = dict(store.entities())
        nearest = store.nearest_entity(vectors[ids.index("adolescence")].tolist())
    assert nearest is not None and nearest[0] == "adolescence" and nearest[1] > 0.999
    assert "adolescence" in ids  # an article's title
    assert "american psychological association" in ids  # named by two chunks
    assert all(types[i] != "concept" for i in ids)  # noun phrases are not linked by meaning
    assert vectors.shape == (len(ids), 384)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-3)


def test_ppr_links_a_misspelt_name_by_meaning(graph_pack: Path) -> None:
    # "Integrations" is not a name of the graph: no exact match, but the nearest name in meaning.
    question = (
        "Who was the first president of the association which published "
        "Journal of Psychotherapy Integrations?"
    )
    with KnowledgeGraphAgent(graph_pack, profile="graph", llm=None, top_k=3) as agent:
        result = agent.query(question)
    [ppr] = [s for s in result.trace["stages"] if s["stage"] == "ppr"]
    assert ppr["detail"]["linked"] == ["journal of psychotherapy integration"]
    assert ppr["detail"]["linked_by_meaning"] == 1
    assert {s.title for s in result.sources[:2]} == {"Journal of Psychotherapy Integration", "Adolescence"}
    off = {"ppr": {"link_threshold": 1.0}}  # exact matches only: the question names nothing
    with KnowledgeGraphAgent(graph_pack, profile="graph", llm=None, top_k=3, options=off) as agent:
        [ppr] = [s for s in agent.query(question).trace["stages"] if s["stage"] == "ppr"]
    assert "names no entity" in ppr["skipped"]


def test_pack_graph_upgrades_a_store_without_entity_vectors(graph_pack: Path, tmp_path: Path) -> None:
    import shutil

    from wikigr.graph.pack import rebuild_graph

    old = tmp_path / "old"
    shutil.copytree(graph_pack, old)
    with open_store(old / "pack.db", read_only=False) as store:
        store.rows("ALTER TABLE Entity DROP embedding")  # as packs were written before entity vectors
        assert not store.has_entity_vectors
    question = (
        "Who was the first president of the association which published Journal of Psychotherapy Integration?"
    )
    with KnowledgeGraphAgent(old, profile="graph", llm=None, top_k=3) as agent:
        [ppr] = [s for s in agent.query(question).trace["stages"] if s["stage"] == "ppr"]
    assert ppr["detail"]["linked_by_meaning"] == "no entity vectors in this pack"  # exact linking still runs
    report = rebuild_graph(old)
    assert report.entity_vectors > 0
    with open_store(old / "pack.db", read_only=True) as store:
        assert store.has_entity_vectors and "adolescence" in _entity_vectors(store)[0]


# Two pages: the guide links to a section of the reference by a name that the reference's
# section never writes ("Frobnicator Setup" -> the section about wiring the device).
LINKED_PAGES = {
    "/docs/guide.html": "<title>Guide</title><h1>Guide</h1><p>Before the first run, read "
    "<a href='reference.html#wiring'>Frobnicator Setup</a> and <a href='reference.html'>see here</a>. "
    "The guide then covers daily use of the machine.</p>",
    "/docs/reference.html": "<title>Reference</title><h1>Reference</h1><p>Specifications of the machine.</p>"
    "<h2 id='wiring'>Wiring the device</h2><p>Connect the red lead to terminal four and the black lead "
    "to the ground screw, then close the cover.</p>",
}


def test_parsers_keep_the_text_of_links() -> None:
    from wikigr.sources.html_parser import parse_html
    from wikigr.sources.markdown_parser import parse_markdown

    html = parse_html(LINKED_PAGES["/docs/guide.html"], "http://h/docs/guide.html")
    assert ("http://h/docs/reference.html#wiring", "Frobnicator Setup") in html.anchors
    markdown = parse_markdown(
        "# Guide\n\nRead [`Frobnicator` Setup](ref.md#wiring) first.\n", "http://h/guide.md"
    )
    assert markdown.anchors == [("http://h/ref.md#wiring", "Frobnicator Setup")]


def _link_entity(pack: Path) -> list[tuple[str, str]]:
    with open_store(pack / "pack.db", read_only=True) as store:
        rows = store.rows(
            "MATCH (a:Article)-[:HAS_SECTION]->(s:Section)-[:HAS_CHUNK]->(c:Chunk)-[:HAS_ENTITY]->(e:Entity) "
            "WHERE e.id = 'frobnicator setup' RETURN a.title, s.title ORDER BY a.title"
        )
    return [(r[0], r[1]) for r in rows]


def test_link_text_becomes_an_entity_of_both_ends(server: Any, tmp_path: Path, wikigr_home: Path) -> None:
    from wikigr.build import update_pack
    from wikigr.graph.pack import rebuild_graph

    for path, body in LINKED_PAGES.items():
        server.add(path, body)
    build_pack("linked", [server.url(p) for p in LINKED_PAGES])
    pack = wikigr_home / "packs" / "linked"
    # The linking chunk and the first chunk of the linked section; "see here" is not a name.
    ends = [("Guide", "Guide"), ("Reference", "Wiring the device")]
    assert _link_entity(pack) == ends
    with open_store(pack / "pack.db", read_only=True) as store:
        assert store.rows("MATCH (e:Entity) WHERE e.id = 'see here' RETURN e.id") == []
        assert ("wiring\tFrobnicator Setup") in [a for _, _, a in store.link_anchors()]
    # The question names the link; the walk lands on the section.
    with KnowledgeGraphAgent(pack, profile="graph", llm=None, top_k=3) as agent:
        result = agent.query("What does the Frobnicator Setup say?")
    [ppr] = [s for s in result.trace["stages"] if s["stage"] == "ppr"]
    assert "frobnicator setup" in ppr["detail"]["linked"]
    assert [s.section for s in result.sources[:2]] == ["Guide", "Wiring the device"]
    # The link texts survive a rebuild of the graph and an update that re-fetches nothing new.
    rebuild_graph(pack)
    assert _link_entity(pack) == ends
    update_pack("linked", skills_dir=tmp_path / "skills")
    assert _link_entity(pack) == ends


def test_router_stops_escalating_when_its_time_budget_is_spent(graph_pack: Path) -> None:
    options = {"router": {"score": "similarity", "threshold": 1.01, "max_attempts": 4, "budget_ms": 0.001}}
    with KnowledgeGraphAgent(graph_pack, profile="routed", llm=None, options=options) as agent:
        result = agent.query("When was the American Physical Society founded?")
    [entry] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert [a["strategy"] for a in entry["detail"]["attempts"]] == ["vector"]  # the first always runs
    assert entry["detail"]["budget"] == "stopped escalating after 0.001 ms"
