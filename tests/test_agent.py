"""KnowledgeGraphAgent: profiles, stages, kg_config, trace — on a real pack, offline."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakeclaude import FakeClaude, cite_all, make_llm
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.errors import InvalidPackError, UsageError
from wikigr.retrieval.profiles import PROFILES, resolve_stages
from wikigr.retrieval.stage import (
    BUILTIN_STAGES,
    STAGES,
    Candidate,
    QueryState,
    Stage,
    builtin_stages,
    register,
    stage_class,
)
from wikigr.retrieval.stages.quality import QualityStage
from wikigr.retrieval.stages.synthesize import keep_valid_citations

PAGES = {
    "hub.md": "# Networking hub\n\nThis hub page links the networking guides: [sockets](sockets.md), "
    "[timeouts](timeouts.md) and [ssl](ssl.md).\n",
    "sockets.md": "# Sockets\n\nA socket connects two programs over a network. Create one with "
    "socket.socket() and connect it to a host and a port. See [timeouts](timeouts.md).\n",
    "timeouts.md": "# Timeouts\n\nsettimeout(seconds) sets a timeout on blocking socket operations; "
    "when it expires the call raises TimeoutError. See the [hub](hub.md).\n",
    "ssl.md": "# TLS and SSL\n\nWrap a socket with ssl.create_default_context().wrap_socket() to encrypt "
    "the connection with TLS certificates.\n",
    "baking.md": "# Baking bread\n\nKnead the dough for ten minutes, let it rise for an hour, and bake it "
    "at 220 degrees until the crust is brown.\n",
    "tiny.md": "# Tiny\n\nok\n",
}


@pytest.fixture(scope="module")
def pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("agentdocs")
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    out = tmp_path_factory.mktemp("agentpacks") / "net"
    build_pack("net", [docs.as_uri()], out=out)
    return out


def stage_names(result_trace: dict[str, object]) -> list[str]:
    return [s["stage"] for s in result_trace["stages"]]  # type: ignore[index, union-attr]


def test_profiles_run_their_stages_in_order(pack: Path) -> None:
    assert PROFILES["max"] == [
        "multi_query", "vector", "keyword", "title_match", "quality", "dedup", "cross_encoder",
        "graph_rerank", "multidoc", "gate", "few_shot", "synthesize",
    ]  # fmt: skip
    for profile, names in PROFILES.items():
        with KnowledgeGraphAgent(pack, profile=profile, llm=None) as agent:
            result = agent.query("How do I set a timeout on a socket?")
        assert stage_names(result.trace) == names
        assert result.profile == profile
        assert result.sources[0].title == "Timeouts"
        for entry in result.trace["stages"]:
            assert {"stage", "ms", "in", "out", "top_scores"} <= set(entry)


def test_default_profile_is_auto_and_kg_config_overrides_it(pack: Path, tmp_path: Path) -> None:
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        assert agent.profile == "auto"
    copy = tmp_path / "net"
    shutil.copytree(pack, copy)
    (copy / "kg_config.json").write_text(
        json.dumps({"profile": "baseline", "stages": {"vector": {"candidates": 7}}})
    )
    with KnowledgeGraphAgent(copy, llm=None) as agent:
        assert agent.profile == "baseline"
        result = agent.query("sockets")
    assert result.trace["stages"][0]["out"] == 6  # 7 fetched, but the pack has only 6 chunks


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"profile": "turbo"}, "unknown profile 'turbo'"),
        ({"stages": {"vectr": {}}}, "unknown stage 'vectr'"),
        ({"stages": {"gate": {"treshold": 0.5}}}, "stages.gate.treshold: unknown field"),
        ({"stages": {"gate": {"threshold": "high"}}}, "stages.gate.threshold: must be a number"),
        ({"profil": "max"}, "profil: unknown field"),
    ],
)
def test_bad_kg_config_is_refused(
    pack: Path, tmp_path: Path, config: dict[str, object], message: str
) -> None:
    copy = tmp_path / "net"
    shutil.copytree(pack, copy)
    (copy / "kg_config.json").write_text(json.dumps(config))
    with pytest.raises(InvalidPackError, match=message):
        KnowledgeGraphAgent(copy, llm=None)


def test_enable_and_disable(pack: Path) -> None:
    with KnowledgeGraphAgent(
        pack, profile="baseline", enable=["keyword", "gate"], disable=["dedup"], llm=None
    ) as a:
        assert a.stage_names == ["vector", "keyword", "gate", "synthesize"]
    with pytest.raises(UsageError, match="unknown stage 'bogus'"):
        resolve_stages("baseline", enable=["bogus"])
    with pytest.raises(UsageError, match="unknown profile"):
        resolve_stages("fastest")


def test_unknown_option_from_the_api_is_refused(pack: Path) -> None:
    with pytest.raises(UsageError, match="options of keyword: candidates, fusion, weight, rrf_k"):
        KnowledgeGraphAgent(pack, options={"keyword": {"wieght": 0.5}}, llm=None)


def test_keyword_stage_finds_exact_identifiers(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, profile="balanced", llm=None) as agent:
        result = agent.query("create_default_context wrap_socket")
    keyword = next(s for s in result.trace["stages"] if s["stage"] == "keyword")
    assert keyword["detail"]["keyword_hits"] >= 1
    assert result.sources[0].title == "TLS and SSL"


def test_quality_filter_drops_short_passages(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, profile="balanced", llm=None, top_k=10) as agent:
        result = agent.query("tiny ok")
    assert "Tiny" not in [s.title for s in result.sources]
    assert QualityStage().is_poor("ok") == "short"
    assert (
        QualityStage().is_poor("Previous topic: sockets. Next topic: ssl. Show source of this page.")
        == "boilerplate"
    )
    assert QualityStage().is_poor("A real sentence about sockets and their timeouts in Python.") is None
    banner = "We use cookies to improve your experience. Read our cookie policy. Accept?"
    assert QualityStage().is_poor(banner) == "boilerplate"
    # One phrase in a passage with content is content (a HotpotQA gold passage was dropped so).
    listing = (
        "This page is a list of the Tampa Bay Buccaneers NFL Draft selections. The first draft the "
        "Buccaneers participated in was 1976, in which they made Lee Roy Selmon their first pick."
    )
    assert QualityStage().is_poor(listing) is None
    assert QualityStage().is_poor("Skip to content. Menu. Search the site.") == "boilerplate"


def test_a_page_whose_best_passage_is_too_short_keeps_its_place(pack: Path) -> None:
    """A man page's "curl - transfer a URL" finds its page but is too short to quote: the page's
    best passage that is not takes its place and score; a page with only short passages goes."""
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        state = agent.new_state("How do I set a timeout on a socket?")
    base = Candidate("c", "", "a", "A", "https://x/a", "s", "S", "", 0.0)

    def passage(chunk: str, page: str, text: str, score: float) -> Candidate:
        return dataclasses.replace(base, chunk_id=chunk, article_id=page, text=text, score=score)

    long = "A passage long enough to be quoted in the answer, about curl's options."
    state.candidates = [
        passage("curl-name", "curl", "curl - transfer a URL", 0.9),
        passage("wget-1", "wget", long, 0.8),
        passage("tiny", "tiny", "ok", 0.7),
        passage("wget-2", "wget", long, 0.6),
        passage("curl-options", "curl", long, 0.5),
        passage("ss-2", "ss", long, 0.45),
        passage("ss-1", "ss", "ss - dump sockets", 0.4),  # not the page's best: dropped, nothing moves
    ]
    QualityStage().run(state)
    assert [c.chunk_id for c in state.candidates] == ["curl-options", "wget-1", "wget-2", "ss-2"]
    assert [c.score for c in state.candidates] == [0.9, 0.8, 0.6, 0.45]
    assert state.notes["quality"]["dropped"] == {"short": 3}


def test_gate_flags_questions_the_pack_cannot_answer(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        off_topic = agent.query("Who won the football world cup in 1998?")
        on_topic = agent.query("How do I set a socket timeout?")
    assert off_topic.low_confidence and off_topic.confidence < 0.3
    assert off_topic.answer.startswith("I found little grounded context")
    assert "Also possible:" not in off_topic.answer  # no names to guess among, far from the question
    assert not on_topic.low_confidence and on_topic.confidence > 0.5


def test_the_answer_says_which_words_of_the_question_the_pack_never_mentions(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        rust = agent.query("How do I set a socket timeout in Rust or Nginx?")
        plain = agent.query("How are socket timeouts set?")  # "timeouts": the pack says "timeout"
        quoted = agent.query("How do I set a timeout on socket `sock_xyzzy`?")  # the asker's own name
    assert rust.answer.startswith("This pack never mentions “Rust” or “Nginx”.\n\n")
    assert "settimeout" in rust.answer  # the closest sentences still follow
    gate = next(s for s in rust.trace["stages"] if s["stage"] == "gate")
    assert gate["detail"]["absent"] == ["Rust", "Nginx"]
    assert "never mentions" not in plain.answer and "never mentions" not in quoted.answer


def test_what_counts_as_a_word_the_pack_never_mentions(pack: Path) -> None:
    from wikigr.pack.keyword import KeywordIndex
    from wikigr.retrieval.stages.gate import MAX_ABSENT, absent_words

    index = KeywordIndex.load(pack / "bm25")

    def absent(question: str) -> list[str]:
        return absent_words(question, index)

    assert absent("What's the socket's Kubernetes timeout? Don't say") == ["Kubernetes"]  # apostrophes
    assert absent("Hello. Please set the socket timeout") == []  # a sentence's first word is no name
    assert absent("如何设置套接字超时？") == []  # a script without spaces: no words to look up
    assert absent("nginx or Nginx or NGINX?") == ["nginx"]
    assert absent("Is “Kubernetes” or ‘Nginx’ in it?") == []  # quoted: the asker's own names
    assert len(absent(" ".join(f"zzq{n}x" for n in range(20)))) == MAX_ABSENT


def test_graph_rerank_and_multidoc_use_the_links(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, profile="balanced", llm=None, top_k=1) as agent:
        result = agent.query("settimeout raises TimeoutError")
    strict = {"multidoc": {"min_similarity": 0.9}}
    with KnowledgeGraphAgent(pack, profile="balanced", llm=None, top_k=1, options=strict) as agent:
        unrelated = agent.query("settimeout raises TimeoutError")
    assert not [s for s in unrelated.sources if s.origin == "multidoc"]  # nothing that similar
    stages = {s["stage"]: s for s in result.trace["stages"]}
    assert "skipped" not in stages["graph_rerank"]
    assert stages["graph_rerank"]["detail"]["linked_articles"] >= 2
    assert result.sources[0].title == "Timeouts"
    related = [s for s in result.sources if s.origin == "multidoc"]
    assert related and {s.title for s in related} <= {"Sockets", "Networking hub"}
    assert stages["multidoc"]["detail"]["added"] == len(related)


def test_multidoc_reads_the_vectors_page_score_loaded_with_the_same_result(pack: Path) -> None:
    # balanced has no page_score: multidoc asks the store; with page_score enabled its chunk
    # vectors are in memory and multidoc reads them there: the same passages, the same scores.
    question = "settimeout raises TimeoutError"
    with KnowledgeGraphAgent(pack, profile="balanced", llm=None, top_k=1) as agent:
        from_store = agent.query(question)
        assert "page_index" not in agent.context.cache
    with KnowledgeGraphAgent(pack, profile="balanced", enable=["page_score"], llm=None, top_k=1) as agent:
        in_memory = agent.query(question)
        assert "page_index" in agent.context.cache

    def added(result: object) -> list[tuple[str, float]]:
        sources = result.sources  # type: ignore[attr-defined]
        return [(s.title, round(s.score, 4)) for s in sources if s.origin == "multidoc"]

    assert added(from_store) and added(in_memory) == added(from_store)


def test_few_shot_never_uses_the_question_being_asked(
    pack: Path, tmp_path: Path, fake_claude: FakeClaude, wikigr_home: Path
) -> None:
    copy = tmp_path / "net"
    shutil.copytree(pack, copy)
    rows = [
        {"id": "q1", "question": "How do I set a socket timeout?", "ground_truth": "settimeout"},
        {"id": "q2", "question": "How do I set a timeout on sockets?", "ground_truth": "use settimeout"},
        {"id": "q3", "question": "How long should bread rise?", "ground_truth": "an hour"},
        {"id": "q4", "question": "What encrypts a socket?", "ground_truth": "ssl"},
    ]
    (copy / "eval" / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    fake_claude.respond_with(cite_all)
    with (
        make_llm(fake_claude) as llm,
        KnowledgeGraphAgent(copy, llm=llm, options={"few_shot": {"n": 2}}) as agent,
    ):
        result = agent.query("How do I set a socket timeout?", question_id="q2")
    detail = next(s for s in result.trace["stages"] if s["stage"] == "few_shot")["detail"]
    assert "q1" not in detail["examples"] and "q2" not in detail["examples"]
    assert detail["examples"][0] == "q4"
    assert "Example question: What encrypts a socket?" in fake_claude.last.prompt
    # The question file's vectors are cached for the next process; without Claude nothing is done.
    assert list((wikigr_home / "cache" / "embeddings" / "questions").glob("*.npy"))
    with KnowledgeGraphAgent(copy, llm=None) as agent:
        offline = agent.query("How do I set a socket timeout?")
    few_shot = next(s for s in offline.trace["stages"] if s["stage"] == "few_shot")
    assert few_shot["skipped"].startswith("no Claude API key")


def test_cross_encoder_is_skipped_with_a_reason_when_no_model(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, profile="max", llm=None) as agent:
        result = agent.query("socket timeout")
    stages = {s["stage"]: s for s in result.trace["stages"]}
    assert stages["cross_encoder"]["skipped"].startswith("no cross-encoder model configured")
    assert stages["multi_query"]["skipped"].startswith("no Claude API key")
    assert result.sources[0].title == "Timeouts"


def test_citations_outside_the_sources_are_removed() -> None:
    answer, removed = keep_valid_citations("Use settimeout [1][7]. It raises TimeoutError [2] [0].", 2)
    assert answer == "Use settimeout [1]. It raises TimeoutError [2] ."
    assert removed == [7, 0]


def test_a_new_stage_plugs_in_through_the_seam(pack: Path) -> None:
    @register
    class Shout(Stage):
        name = "test_shout"

        def run(self, state: QueryState) -> None:
            state.facts.append(f"{len(state.candidates)} candidates")

    try:
        assert "test_shout" in builtin_stages()
        with KnowledgeGraphAgent(pack, profile="baseline", enable=["test_shout"], llm=None) as agent:
            result = agent.query("sockets")
        assert agent.stage_names[-1] == "test_shout"
        assert result.facts == ["6 candidates"]
    finally:
        STAGES.pop("test_shout")


def test_every_builtin_stage_is_its_module_registered_by_name() -> None:
    stages = builtin_stages()
    for name in BUILTIN_STAGES:
        assert stages[name].name == name
        assert stages[name].__module__ == f"wikigr.retrieval.stages.{name}"
    with pytest.raises(UsageError, match=r"unknown stage 'nope' \(known: bridge, cross_encoder, "):
        stage_class("nope")


def test_a_stage_is_imported_when_first_asked_for_and_the_seam_imports_no_stage() -> None:
    code = (
        "import sys\n"
        "from wikigr.retrieval.stage import stage_class\n"
        "loaded = lambda: sorted(m for m in sys.modules if m.startswith('wikigr.retrieval.stages.'))\n"
        "print(loaded())\n"
        "stage_class('keyword')\n"
        "print(loaded())\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.splitlines() == [
        "[]",
        "['wikigr.retrieval.stages.fusion', 'wikigr.retrieval.stages.keyword']",
    ]


def test_empty_question_is_refused(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, llm=None) as agent, pytest.raises(UsageError, match="empty"):
        agent.query("  ")


def test_title_match_boosts_pages_the_question_names(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, profile="balanced", llm=None) as agent:
        result = agent.query("what temperature for baking bread and how long to knead")
    detail = next(s for s in result.trace["stages"] if s["stage"] == "title_match")["detail"]
    assert detail["boosted"] == 1 and result.sources[0].title == "Baking bread"
    from wikigr.retrieval.stages.title_match import TitleMatchStage

    stage = TitleMatchStage()
    assert stage._named("Lilu (mythology)", " what kind of being is lilu ")
    assert not stage._named("Lilu (mythology)", " lilupad ")
    assert not stage._named("json — JSON encoder and decoder for Python data and files today", " json ")


def test_auto_on_documentation_ranks_pages_over_fused_search(pack: Path) -> None:
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        result = agent.query("How do I set a timeout on a socket?")
        listing = agent.query("List all the modules for networking.")
    [router] = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert router["detail"]["strategy"] == "pages"
    assert router["detail"]["pack"].startswith("documentation pages")
    assert router["detail"]["strategy_why"].startswith("documentation pages: vector and keyword search fused")
    assert router["detail"]["answer_style"] == "answer"
    [router] = [s for s in listing.trace["stages"] if s["stage"] == "router"]
    assert router["detail"]["kind"] == "global" and router["detail"]["strategy"] == "wide"
    assert router["detail"]["answer_style"] == "enumeration"


def test_quality_counts_letters_as_python_does() -> None:
    from wikigr.retrieval.stages.quality import visible_and_letters

    for text in ["", "a b\tc\n", "x\x1cy\x1f z\x0b", "ÄÖ ü 数字 ½ ⅷ", "code: {[()]} == 1;", "é\u2003é"]:
        visible = [ch for ch in text if not ch.isspace()]
        assert visible_and_letters(text) == (len(visible), sum(ch.isalpha() for ch in visible)), text


def test_warming_an_agent_makes_the_first_questions_reads_and_changes_no_answer(pack: Path) -> None:
    """The agent warms its store while the model loads (Context.warm): the reads a question makes,
    prepared and made once before it. Warmed or not, a question gets the same answer."""
    with KnowledgeGraphAgent(pack, llm=None) as cold:
        cold.context.cache.clear()
        expected = cold.query("What is the capital of France?")
        assert "has_entities" in cold.context.cache  # the question asked it
    with KnowledgeGraphAgent(pack, llm=None) as warm:
        warm.context.cache.clear()
        warm.context.warm(warm.pack.manifest.embedder.dimension)
        assert "has_entities" in warm.context.cache
        answer = warm.query("What is the capital of France?")
    assert answer.answer == expected.answer
    assert [s.chunk_id for s in answer.sources] == [s.chunk_id for s in expected.sources]
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        agent.context.store.close()
        agent.context.warm(agent.pack.manifest.embedder.dimension)  # a failing read: left to the question
