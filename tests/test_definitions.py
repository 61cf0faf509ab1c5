"""A pack's definitions (wikigr/pack/definitions.py): every API its documents define, embedded as
"name: what it does" at build time, so that a how-to question finds the API that does the job by
meaning, although the passage defining it is not among the question's nearest passages (issue 40).
Real packs: one built here from pages made in the test, and the shipped packs/pydocs."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import cli
from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.build.definitions import build_definitions, definitions_meanwhile, write_when_done
from wikigr.embed import OnnxMiniLM
from wikigr.errors import InvalidPackError
from wikigr.pack.definitions import DEFINITIONS_DIR, ENTRIES_FILE, Definitions
from wikigr.pack.vectors import VECTORS_FILE
from wikigr.retrieval.page_index import definition_texts
from wikigr.validate import Check, validate_pack

PYDOCS = Path(__file__).resolve().parent.parent / "packs" / "pydocs"
DIMENSION = 384
TIMING = """# time — Time access

This module provides various time-related functions.

time.sleep(secs)

Suspend execution of the calling thread for the given number of seconds. The argument may be a
floating point number to indicate a more precise sleep time.

time.time()

Return the time in seconds since the epoch as a floating point number.

time.monotonic()

Return the value (in fractional seconds) of a monotonic clock, i.e. a clock that cannot go backwards.
"""
NO_API = "# Tea\n\nBrew green tea at 80 degrees for two minutes. Black tea takes boiling water.\n"


@pytest.fixture(scope="module")
def timing_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("definitions")
    docs = root / "docs"
    docs.mkdir()
    (docs / "time.md").write_text(TIMING, encoding="utf-8")
    (docs / "tea.md").write_text(NO_API, encoding="utf-8")
    build_pack("timing", [docs.as_uri()], out=root / "pack")
    return root / "pack"


def _check(pack: Path) -> Check:
    return next(c for c in validate_pack(pack).checks if c.name == "definitions")


def first_sentence(answer: str) -> str:
    found = re.match(r".+?\s\[\d+\][.!?…]*", answer)
    assert found is not None, answer
    return found.group(0)


def test_the_build_embeds_each_api_its_pages_define(timing_pack: Path) -> None:
    definitions = Definitions.load(timing_pack, DIMENSION)
    assert definitions is not None
    assert sorted(name for _, name in definitions.entries) == ["time.monotonic", "time.sleep", "time.time"]
    assert np.allclose(np.linalg.norm(definitions.vectors, axis=1), 1.0, atol=1e-4)
    with KnowledgeGraphAgent(timing_pack, llm=None) as agent:
        vector = agent.context.embedder.embed(["pause the program for a few seconds"])[0]
        (chunk, name, cosine), *rest = definitions.nearest(vector, 3)
        assert name == "time.sleep" and all(cosine >= c for *_, c in rest)
        assert chunk in agent.context.store.chunk_texts([chunk])  # a chunk of the pack's store
    assert _check(timing_pack).ok


def test_a_how_to_answer_leads_with_the_api_whose_definition_means_the_task() -> None:
    question = "How do I pause my program for two seconds?"
    with KnowledgeGraphAgent(PYDOCS, llm=None) as agent:
        result = agent.query(question)
    assert "time.sleep" in first_sentence(result.answer), result.answer
    cited = int(re.findall(r"\[(\d+)\]", first_sentence(result.answer))[0])
    assert result.sources[cited - 1].url.split("#")[0].endswith("library/time.html")  # cited, listed
    off = {"synthesize": {"defined_top": 0, "defined_passages": 0}}
    with KnowledgeGraphAgent(PYDOCS, llm=None, options=off) as agent:  # as before the definitions
        assert "time.sleep" not in agent.query(question).answer


def test_a_question_that_asks_no_how_to_is_answered_as_before() -> None:
    question = "What does subprocess.run return?"
    with KnowledgeGraphAgent(PYDOCS, llm=None) as agent:
        answer = agent.query(question).answer
    off = {"synthesize": {"defined_top": 0, "defined_passages": 0}}
    with KnowledgeGraphAgent(PYDOCS, llm=None, options=off) as agent:
        assert agent.query(question).answer == answer


def test_a_pack_without_definitions_answers_without_them(tmp_path: Path) -> None:
    pack = tmp_path / "pydocs"
    shutil.copytree(PYDOCS, pack)
    shutil.rmtree(pack / DEFINITIONS_DIR)
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        assert agent.query("How do I pause my program for two seconds?").answer
    assert not any(c.name == "definitions" for c in validate_pack(pack).checks)


def _an_entry_that_is_no_pair(folder: Path) -> None:
    entries = json.loads((folder / ENTRIES_FILE).read_text(encoding="utf-8"))
    entries[7] = ["a chunk", 1]
    (folder / ENTRIES_FILE).write_text(json.dumps(entries), encoding="utf-8")


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        (lambda d: (d / ENTRIES_FILE).write_text("{", encoding="utf-8"), "entries.json"),
        (_an_entry_that_is_no_pair, "[chunk id, name] entries"),
        (lambda d: np.save(d / VECTORS_FILE, np.zeros((2, 3), np.float32)), "not float32"),
        (lambda d: (d / VECTORS_FILE).write_bytes(b"\x93NUMPY garbage"), VECTORS_FILE),
        (lambda d: (d / VECTORS_FILE).unlink(), "missing"),
    ],
)
def test_damaged_definitions_are_named_by_validate_info_and_a_how_to_query(
    damage: object, says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pack = tmp_path / "pydocs"
    shutil.copytree(PYDOCS, pack)
    damage(pack / DEFINITIONS_DIR)  # type: ignore[operator]
    with pytest.raises(InvalidPackError, match="corrupt definitions"):
        Definitions.load(pack, DIMENSION)
    check = _check(pack)
    assert not check.ok and says in check.detail
    code, out, err = cli(capsys, "pack", "info", str(pack), "--json")
    assert code == 0, err
    assert says in json.loads(out)["definitions"]
    code, out, err = cli(capsys, "query", str(pack), "How do I pause my program for two seconds?")
    assert code == 1 and err.startswith("Error: corrupt definitions") and len(err.splitlines()) == 1, err


def test_pack_info_says_how_many_apis_are_defined(capsys: pytest.CaptureFixture[str]) -> None:
    entries = json.loads((PYDOCS / DEFINITIONS_DIR / ENTRIES_FILE).read_text(encoding="utf-8"))
    code, out, err = cli(capsys, "pack", "info", str(PYDOCS), "--json")
    assert code == 0, err
    assert json.loads(out)["definitions"] == len(entries) > 3000
    code, out, err = cli(capsys, "pack", "info", str(PYDOCS))
    assert code == 0, err
    assert re.search(rf"definitions\s+{len(entries)} APIs, for how-to questions", out), out


def test_an_update_keeps_the_definitions_or_makes_them_again(tmp_path: Path) -> None:
    from wikigr.build import update_pack

    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "time.md").write_text(TIMING, encoding="utf-8")
    build_pack("timing", [docs.as_uri()], out=tmp_path / "pack")
    pack = tmp_path / "pack"
    before = (pack / DEFINITIONS_DIR / ENTRIES_FILE).read_bytes()
    update_pack(pack)  # nothing changed: copied
    assert (pack / DEFINITIONS_DIR / ENTRIES_FILE).read_bytes() == before
    shutil.rmtree(pack / DEFINITIONS_DIR)  # a pack built before they were kept: made, the store kept
    assert update_pack(pack).store_kept
    assert (pack / DEFINITIONS_DIR / ENTRIES_FILE).read_bytes() == before
    more = "\ntime.perf_counter()\n\nReturn the value (in fractional seconds) of a performance counter.\n"
    (docs / "time.md").write_text(TIMING + more, encoding="utf-8")
    update_pack(pack)
    definitions = Definitions.load(pack, DIMENSION)
    assert definitions is not None and "time.perf_counter" in {name for _, name in definitions.entries}
    assert _check(pack).ok


TABLE = """# 2to3 — fixers

asserts

Replaces deprecated unittest method names with the correct ones.

From | To
failUnlessEqual(a, b) | assertEqual(a, b)
assertEquals(a, b) | assertEqual(a, b)
failIfEqual(a, b) | assertNotEqual(a, b)

time.sleep(secs)

Suspend execution of the calling thread for the given number of seconds.

time.time()"""


def test_only_a_definition_with_a_description_is_embedded() -> None:
    """A table row (2to3's "From | To") shows a name but describes nothing, and a definition on
    the last line of a chunk has its description in the next chunk, which defines it too: neither
    is embedded (on the dev questions, the answers named the API as often or more without them)."""
    assert definition_texts(TABLE) == [
        ("asserts", "asserts: Replaces deprecated unittest method names with the correct ones."),
        (
            "time.sleep",
            "time.sleep: Suspend execution of the calling thread for the given number of seconds.",
        ),
    ]


class CountingEmbedder:
    """The built-in model, counting the texts it embeds; ``one_thread`` gives its one-thread
    session, counted apart (what a build embeds its definitions with beside the rest)."""

    def __init__(self, model: OnnxMiniLM, name: str = "all") -> None:
        self.model, self.counted = model, name
        self.name, self.dimension, self.backend = model.name, model.dimension, model.backend
        self.digest = model.digest
        self.texts: dict[str, int] = {}

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.texts[self.counted] = self.texts.get(self.counted, 0) + len(texts)
        return self.model.embed(texts)

    def one_thread(self) -> CountingEmbedder:
        single = CountingEmbedder(self.model.one_thread(), "one thread")
        single.texts = self.texts
        return single


def test_a_build_embeds_its_definitions_on_a_session_of_one_thread(tmp_path: Path) -> None:
    """The definitions are embedded while the entity graph's spaCy and the store's bulk copy take
    a core (:func:`definitions_meanwhile`): on a session of their own with one thread, they take
    the other, and neither waits for the other's half of a matrix product. An update that makes
    them alone (:func:`build_definitions`) has both cores."""
    embedder = CountingEmbedder(OnnxMiniLM())
    chunks = ["time#0", "tea#0"]
    texts = [TIMING, NO_API]
    write_when_done(tmp_path / "build", definitions_meanwhile(chunks, texts, embedder))
    assert embedder.texts == {"one thread": 3}  # time.sleep, time.time, time.monotonic: there only
    assert build_definitions(tmp_path / "update", chunks, texts, embedder) == 3
    assert embedder.texts == {"one thread": 3, "all": 3}
    built, updated = (Definitions.load(tmp_path / f, DIMENSION) for f in ("build", "update"))
    assert built is not None and updated is not None and built.entries == updated.entries
    assert np.allclose(built.vectors, updated.vectors, atol=1e-5)
    sessions = (embedder.model, embedder.model.one_thread())
    assert [m._session.get_session_options().intra_op_num_threads for m in sessions] == [0, 1]
