"""The offline answer to a how-to question leads with the API that does the job (issue 40): each
row of the issue's table, asked of the shipped example pack `packs/pydocs`, and the rule that a
document pack never routes a count question to aggregate tools."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import build_pack
from wikigr.retrieval.api_lead import differed, discouraged, named_for
from wikigr.retrieval.api_rank import Closeness, rank_apis
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.sentence_scores import (
    AnswerOptions,
    Scored,
    asks_how,
    factoid_kind,
    how_to,
    score_sentences,
)
from wikigr.retrieval.short_answer import ALSO, ALSO_API, answer_from, asserted
from wikigr.retrieval.stage import Candidate, QueryState

PYDOCS = Path(__file__).resolve().parent.parent / "packs" / "pydocs"
COUNT = "How do I count how many times each item occurs in a list?"


@pytest.fixture
def agent() -> Iterator[KnowledgeGraphAgent]:
    with KnowledgeGraphAgent(PYDOCS, llm=None) as opened:
        yield opened


def first_sentence(answer: str) -> str:
    """The answer's first cited sentence."""
    found = re.match(r".+?\s\[\d+\][.!?…]*", answer)
    assert found is not None, answer
    return found.group(0)


def test_a_count_question_leads_with_collections_counter(agent: KnowledgeGraphAgent) -> None:
    answer = agent.query(COUNT).answer
    assert "collections.Counter" in first_sentence(answer), answer
    assert "New in version" not in answer and ALSO not in answer  # no number guessed among version notes


def test_a_document_pack_never_routes_a_count_question_to_aggregate_tools(agent: KnowledgeGraphAgent) -> None:
    result = agent.query(COUNT)
    (router,) = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert router["detail"]["strategy"] == "pages"  # documentation's strategy, not a kind's tools
    assert router["detail"]["answer_style"] == "answer"  # no enumeration
    assert not any(s["stage"] == "openml_tools" for s in result.trace["stages"])
    assert factoid_kind(COUNT) is None and how_to(COUNT)  # the answer reads no number to count


def test_a_count_question_is_answered_by_an_api_under_the_routed_profile_too() -> None:
    with KnowledgeGraphAgent(PYDOCS, llm=None, profile="routed") as routed:
        result = routed.query(COUNT)
    (router,) = [s for s in result.trace["stages"] if s["stage"] == "router"]
    assert router["detail"]["kind"] == "aggregate"  # the ladder reads a count, and retrieves wide
    assert not result.answer.startswith("- ")  # yet no list of pages: an API that counts
    assert re.match(r"[\w.]+\(", first_sentence(result.answer)) and "count" in first_sentence(result.answer)
    assert factoid_kind("How many modules does the pack hold?") == "number"  # a count question is still one


def _answer_of(
    agent: KnowledgeGraphAgent, question: str, chunk_ids: list[str]
) -> tuple[str, list[Candidate]]:
    """The short answer to ``question`` from the passages ``chunk_ids`` of the pack, in that order."""
    state = QueryState(question=question, ctx=agent.context, top_k=len(chunk_ids))
    hits = {h.chunk_id: h for h in agent.context.store.chunk_details(dict.fromkeys(chunk_ids, 1.0))}
    passages = [Candidate.from_hit(hits[c], "vector") for c in chunk_ids]
    options = AnswerOptions()
    words = sum(len(c.text.split()) for c in passages)
    return answer_from(question, score_sentences(state, passages, options), options, words), passages


def test_a_temporary_directory_deleted_automatically_is_a_temporary_directory(
    agent: KnowledgeGraphAgent,
) -> None:
    # os.mkdir (which points at mkdtemp), mkdtemp (never deleted automatically), then the passage
    # that defines TemporaryDirectory, last
    chunks = ["37ca0ad2e470be38:8:12", "6460f07a40a47c93:0:9", "6460f07a40a47c93:0:5"]
    answer, passages = _answer_of(
        agent, "How do I create a temporary directory that is deleted automatically?", chunks
    )
    lead = first_sentence(answer)
    assert lead.startswith("class tempfile.TemporaryDirectory(") and lead.endswith("[3]."), answer
    assert "This class securely creates a temporary directory" in passages[2].text  # quoted from it
    assert "os.mkdir" not in answer  # no runner-up for its page's rank: it deletes nothing


def test_a_csv_file_read_as_dictionaries_is_csv_dictreader(agent: KnowledgeGraphAgent) -> None:
    answer = agent.query("How do I read a CSV file so that each row is a dictionary?").answer
    assert first_sentence(answer).startswith("class csv.DictReader("), answer
    assert "complex numbers" not in answer and "has_header" not in answer


def test_the_sha256_of_a_file_is_hashlib_file_digest(agent: KnowledgeGraphAgent) -> None:
    result = agent.query("How do I compute the SHA-256 of a file?")
    lead = first_sentence(result.answer)
    assert lead.startswith("hashlib.file_digest("), result.answer
    cited = int(re.findall(r"\[(\d+)\]", lead)[0])
    source = result.sources[cited - 1]  # the hashlib page's passage that defines it, listed last
    assert "hashlib.file_digest(fileobj, digest, /)" in source.text and source.related
    assert "file offset unchanged" not in result.answer


def test_the_difference_between_re_match_and_re_search_names_both(agent: KnowledgeGraphAgent) -> None:
    result = agent.query("What is the difference between re.match and re.search?")
    stated = asserted(result.answer)
    assert "re.match(" in stated and "re.search(" in stated, result.answer
    assert "at the beginning of string" in stated  # what re.match does that re.search does not
    assert "Match.re" not in result.answer  # not the trivia of match objects
    for n in {int(n) for n in re.findall(r"\[(\d+)\]", result.answer)}:
        assert 1 <= n <= len(result.sources)


def test_the_current_time_in_utc_is_now_with_timezone_utc_not_utcnow(agent: KnowledgeGraphAgent) -> None:
    answer = agent.query("How do I get the current time in UTC?").answer
    lead = first_sentence(answer)
    assert "datetime.now(timezone.utc)" in lead and "utcnow" not in lead, answer
    assert "utcnow" not in answer.partition("timezone.utc")[0]  # the deprecated spelling never leads


def test_version_notes_never_lead_a_how_to_answer(agent: KnowledgeGraphAgent) -> None:
    for question in (COUNT, "How do I set a socket timeout?", "How do I get the current time in UTC?"):
        lead = first_sentence(agent.query(question).answer)
        assert not re.match(r"(?:New|Changed) in version|Deprecated since", lead), (question, lead)


def test_a_how_to_answer_names_the_runners_up_after_also(agent: KnowledgeGraphAgent) -> None:
    result = agent.query("How do I set a socket timeout?")
    lead, _, also = result.answer.partition(f" {ALSO_API} ")
    assert lead.startswith("socket.settimeout(value): Set a timeout on blocking socket operations [1].")
    listed = re.findall(r"([\w.]+)\(?\)? \[(\d+)\]", also)
    assert ("socket.setdefaulttimeout", "2") in listed
    for name, n in listed:  # each defined in the source it cites
        assert f"{name}(" in result.sources[int(n) - 1].text
    assert asserted(result.answer) == lead  # what the answer states: not the list of other APIs


def test_a_how_to_answer_gives_one_caveat_then_four_other_apis(agent: KnowledgeGraphAgent) -> None:
    # the lead, one sentence of what matters (the second of its description would take the words
    # of the fourth API), then four other APIs: a developer reads more of the ways to do it
    answer = agent.query("How do I set a socket timeout?").answer
    lead, _, also = answer.partition(f" {ALSO_API} ")
    assert len(re.findall(r"\[\d+\]\.", lead)) == 2, answer  # each quoted sentence ends with its citation
    assert "If a non-zero value is given" in lead and "socket.getdefaulttimeout()" in also, answer
    assert len(re.findall(r"\[\d+\]", also)) == 4, answer


@pytest.mark.parametrize(
    ("question", "things"),
    [
        ("What is the difference between re.match and re.search?", ("re.match", "re.search")),
        ("What is the difference between a list and a tuple?", ("list", "tuple")),
        ("How does os.path differ from pathlib?", ("os.path", "pathlib")),
        ("How do I read a file?", None),
        # in Russian, three ways
        ("В чём разница между re.match и re.search?", ("re.match", "re.search")),
        ("Чем re.match отличается от re.search?", ("re.match", "re.search")),
        ("Чем отличается list от tuple?", ("list", "tuple")),
        ("Чем заняться от скуки?", None),
    ],
)
def test_the_two_things_a_difference_question_asks_of(question: str, things: tuple[str, str] | None) -> None:
    assert differed(question) == things


def test_what_the_lead_rules_read() -> None:
    assert how_to("How do I read a CSV file?") and how_to("sort a list by key")
    assert not how_to("Who founded the band?") and not how_to("What does str.join do?")
    # in Russian: "как" and an infinitive
    assert asks_how("Как установить таймаут сокета?") and asks_how("Как мне прочитать CSV-файл?")
    assert asks_how("Каким образом удалить каталог?") and asks_how("Какой лучший способ сравнить строки?")
    assert not asks_how("Как работает сборщик мусора?") and not asks_how("Как называется эта функция?")
    assert named_for("collections.Counter", COUNT) == 1  # "count"
    assert named_for("tempfile.TemporaryDirectory", "create a temporary directory") == 1
    assert named_for("tempfile.TemporaryFile", "create a temporary directory") == 0.5
    assert named_for("random.random", "a random integer") == 0  # the module's own name says nothing


def test_the_apis_the_documents_advise_against(agent: KnowledgeGraphAgent) -> None:
    state = QueryState(question="How do I get the current time in UTC?", ctx=agent.context, top_k=5)
    *retrieval, synthesize = agent.stages
    run_stages(retrieval, state)
    scored = score_sentences(state, synthesize.passages(state), AnswerOptions())  # type: ignore[attr-defined]
    assert "utcnow" in discouraged(scored)  # "This function is preferred over today() and utcnow()."


def _made(agent: KnowledgeGraphAgent, question: str, texts: list[tuple[str, str]]) -> list[Scored]:
    """The scored sentences of passages made here: (page, text) each, in that order."""
    passages = [
        Candidate(
            f"{page}:0:{n}", text, page, page, f"https://docs.example/{page}", f"{page}:0", page, "", 1.0
        )
        for n, (page, text) in enumerate(texts)
    ]
    state = QueryState(question=question, ctx=agent.context, top_k=len(passages))
    return score_sentences(state, passages, AnswerOptions())


WRAP = "How do I wrap a long paragraph to a fixed width?"
WRAP_PASSAGES = [
    (
        "tutorial",
        "A long paragraph is hard to read. Each line of a long paragraph should fit the fixed width of"
        " the terminal, and a paragraph wider than the terminal wraps badly.",
    ),
    (
        "textwrap",
        "textwrap.shorten(text, width, **kwargs)\n\nCollapse and truncate the given text to fit in the"
        " given width.",
    ),
    (
        "textwrap",
        "textwrap.fill(text, width=70, **kwargs)\n\nWraps the single paragraph in text, and returns a single"
        " string containing the wrapped paragraph.",
    ),
]


def test_a_definition_whose_description_does_the_task_leads_over_better_scored_prose(
    agent: KnowledgeGraphAgent,
) -> None:
    scored = _made(agent, WRAP, WRAP_PASSAGES)
    assert not scored[0].unit.label and scored[0].source == 1  # prose holds the question's words best
    answer = answer_from(WRAP, scored, AnswerOptions(), 600)
    assert "textwrap.fill(text, width=70, **kwargs): Wraps the single" in first_sentence(answer), answer
    assert "textwrap.shorten() [2]" in answer.partition(f" {ALSO_API} ")[2]  # the runner-up, by name


def test_the_api_of_the_passage_closer_to_the_question_ranks_first(agent: KnowledgeGraphAgent) -> None:
    question = "How do I read the lines of a file?"
    texts = [
        ("io", "readline(size=-1)\n\nRead and return one line from the stream."),
        ("io", "readlines(hint=-1)\n\nRead and return a list of lines from the stream."),
    ]
    scored = _made(agent, question, texts)
    first = [a.name for a in rank_apis(scored, Closeness({1: 0.9, 2: 0.2}))]
    second = [a.name for a in rank_apis(scored, Closeness({1: 0.2, 2: 0.9}))]
    assert first == ["readline", "readlines"] and second == ["readlines", "readline"]


def test_an_api_the_documents_advise_against_never_leads_nor_is_listed(agent: KnowledgeGraphAgent) -> None:
    question = "How do I list the entries of a directory?"
    texts = [
        (
            "os",
            "os.listdir(path='.')\n\nReturn a list containing the names of the entries in the directory"
            " given by path.",
        ),
        (
            "os",
            "os.scandir(path='.')\n\nReturn an iterator of os.DirEntry objects corresponding to the"
            " entries in the directory given by path.",
        ),
        ("os", "Using scandir() instead of listdir() can significantly increase the performance of code."),
        ("os", "os.walkdir(top)\n\nDeprecated since version 3.2: Generate the entries of a directory tree."),
    ]
    scored = _made(agent, question, texts)
    assert [a.name for a in rank_apis(scored)] == ["os.scandir"]  # not os.listdir, nor os.walkdir
    answer = answer_from(question, scored, AnswerOptions(), 200)
    assert "os.scandir(path='.'): Return an iterator" in first_sentence(answer), answer
    assert "listdir" not in answer.partition(f" {ALSO_API} ")[2] and "walkdir" not in answer


def test_a_special_method_never_leads(agent: KnowledgeGraphAgent) -> None:
    question = "How do I turn a date into a string with a format?"
    texts = [
        (
            "datetime",
            "date.__format__(format)\n\nSame as date.strftime(). This makes it possible to specify a format"
            " string for a date object in formatted string literals.",
        ),
        (
            "datetime",
            "date.strftime(format)\n\nReturn a string representing the date, controlled by an explicit"
            " format string.",
        ),
    ]
    scored = _made(agent, question, texts)
    assert [a.name for a in rank_apis(scored)] == ["date.strftime"]
    asked = _made(agent, "How do I implement __format__ for a date?", texts)
    assert rank_apis(asked)[0].name == "date.__format__"  # unless the question writes one


def test_an_api_whose_definition_is_nearer_the_question_by_meaning_ranks_first(
    agent: KnowledgeGraphAgent,
) -> None:
    question = "How do I parse a JSON string into a Python object?"
    texts = [
        (
            "json",
            "json.load(fp, *, cls=None)\n\nDeserialize fp (a .read()-supporting text file or binary file"
            " containing a JSON document) to a Python object.\n\njson.loads(s, *, cls=None)\n\nDeserialize s"
            " (a str, bytes or bytearray instance containing a JSON document) to a Python object.",
        )
    ]
    scored = _made(agent, question, texts)
    plain = rank_apis(scored, Closeness({1: 0.5}))  # a pack without definitions: none is near
    assert [a.name for a in plain] == ["json.load", "json.loads"] and plain[0].features["dense"] == 0
    near = Closeness({1: 0.5}, {"json.loads": 0.8, "json.load": 0.6})  # "a str": the string asked for
    assert [a.name for a in rank_apis(scored, near)] == ["json.loads", "json.load"]


def test_unknown_api_weights_are_refused() -> None:
    with pytest.raises(ValueError, match=r"unknown api_weights \['bogus'\]"):
        AnswerOptions(api_weights={"bogus": 1.0})
    with pytest.raises(ValueError, match="defined_top"):
        AnswerOptions(defined_top=-1)
    with pytest.raises(ValueError, match="defined_margin"):
        AnswerOptions(defined_margin=3.0)


def test_an_api_that_shares_no_word_with_the_question_is_listed_never_leads(
    agent: KnowledgeGraphAgent,
) -> None:
    texts = [*WRAP_PASSAGES, ("os", "os.system(command)\n\nExecute the command (a string) in a subshell.")]
    scored = _made(agent, WRAP, texts)
    near = Closeness({1: 0.2, 2: 0.3, 3: 0.3, 4: 0.99})  # the passage of os.system is the closest
    apis = rank_apis(scored, near)
    assert apis[0].name == "os.system" and not apis[0].on_task and apis[1].on_task
    answer = answer_from(WRAP, scored, AnswerOptions(), 600, near)
    assert "textwrap.fill(text, width=70, **kwargs): Wraps the single" in first_sentence(answer), answer
    listed = answer.partition(f" {ALSO_API} ")[2]
    assert "os.system() [4]" in listed and "textwrap.shorten() [2]" in listed
    narrow = answer_from(WRAP, scored, AnswerOptions(also_margin=0.0), 600, near)  # the best only
    assert narrow.partition(f" {ALSO_API} ")[2] == "os.system() [4]."


def test_a_runner_up_is_not_left_out_for_its_page_rank(agent: KnowledgeGraphAgent) -> None:
    # pprint.pformat, on the page ranked last, does the task about as well by its own signals as
    # the lead: only its page's rank puts it behind; "Also:" is another page's way, so it is listed
    texts = [
        WRAP_PASSAGES[2],
        WRAP_PASSAGES[0],
        WRAP_PASSAGES[1],
        (
            "pprint",
            "pprint.pformat(object, width=80)\n\nReturn the formatted representation of object as a"
            " string, its lines wrapped to fit the given width.",
        ),
    ]
    scored = _made(agent, WRAP, texts)
    near = Closeness({1: 0.5, 2: 0.5, 3: 0.5, 4: 0.6})
    options = AnswerOptions(also_margin=0.5)
    apis = {a.name: a for a in rank_apis(scored, near)}
    lead, other = apis["textwrap.fill"], apis["pprint.pformat"]
    assert lead.score - other.score > options.also_margin >= lead.merit - other.merit  # its page only
    answer = answer_from(WRAP, scored, options, 600, near)
    assert "textwrap.fill(text, width=70, **kwargs): Wraps the single" in first_sentence(answer), answer
    assert "pprint.pformat() [4]" in answer.partition(f" {ALSO_API} ")[2], answer


RECOMMENDED = """# Running other programs

The recommended approach to invoking subprocesses is to use the run() function for all use cases
it can handle. Scripts are started as programs of their own, with the interpreter and their file
name as the arguments.
"""


def test_a_recommendation_leads_where_the_passages_define_no_api(tmp_path: Path) -> None:
    # The "Also:" list is cut by the best runner-up's merit; with no API defined there is none,
    # and the answer is the recommendation alone (it raised "max() arg is an empty sequence").
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "programs.md").write_text(RECOMMENDED, encoding="utf-8")
    build_pack("programs", [docs.as_uri()], out=tmp_path / "pack")
    with KnowledgeGraphAgent(tmp_path / "pack", llm=None) as agent:
        answer = agent.query("How do I call a script from my program?").answer
    assert answer.startswith("The recommended approach to invoking subprocesses is to use the run() function")
    assert "Also:" not in answer
