"""The short extractive answer (no Claude): sentences of the passages with their citations, short,
a list for enumerations; `--passages` and `--json` still give the whole passages — on real packs
built here, with the real embedder."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from wikigr.agent import KnowledgeGraphAgent
from wikigr.build import BuildOptions, build_pack
from wikigr.cli import run
from wikigr.errors import UsageError
from wikigr.question import (
    DATE,
    NAME,
    NUMBER,
    PERSON,
    PLACE,
    answer_kind,
    asks_code,
    bridge_words,
    comparison,
    slot_words,
)
from wikigr.retrieval.candidates import (
    CANDIDATE_FEATURES,
    DEFAULT_CANDIDATE_WEIGHTS,
    AnswerCandidate,
    Occurrence,
    rank_candidates,
    slot_fit,
    window,
)
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.sentence_scores import (
    DEFAULT_OPEN_WEIGHTS,
    AnswerOptions,
    Asked,
    Scored,
    score_sentences,
)
from wikigr.retrieval.sentences import (
    CODE,
    ITEM,
    LABEL,
    TEXT,
    Unit,
    split_sentences,
    split_units,
    strip_citations,
    table_row,
)
from wikigr.retrieval.short_answer import (
    ALSO,
    answer_candidates,
    answer_from,
    asserted,
    cite,
    clip,
    select,
)
from wikigr.retrieval.spans import codes_in, common_words, fillers, role_fillers, spans
from wikigr.retrieval.stage import QueryState

FILLER = (
    "Sockets have been part of the standard library for a long time. They wrap the operating "
    "system's networking interface and follow the Berkeley sockets API closely. "
)
PAGES = {
    "socket.md": "# socket — Low-level networking interface\n\n"
    "This module provides access to the BSD socket interface. " + FILLER * 3 + "\n\n"
    "## Socket Objects\n\n"
    "socket.setblocking(flag)\n\n"
    "Set blocking or non-blocking mode of the socket: if flag is false, the socket is set to "
    "non-blocking, else to blocking mode.\n\n"
    "socket.settimeout(value)\n\n"
    "Set a timeout on blocking socket operations. The value argument can be a nonnegative floating "
    "point number expressing seconds, or None. If a non-zero value is given, subsequent operations "
    "raise an exception, e.g. TimeoutError, once the period has elapsed.\n\n"
    "```\n>>> s.settimeout(2.5)\n>>> s.gettimeout()\n2.5\n```\n\n"
    "- sock.setblocking(True) is equivalent to sock.settimeout(None)\n"
    "- sock.setblocking(False) is equivalent to sock.settimeout(0.0)\n\n"
    "socket.setdefaulttimeout(timeout)\n\n"
    "Set the default timeout in seconds (float) for new socket objects. " + FILLER * 4 + "\n",
    "csv.md": "# csv — CSV File Reading and Writing\n\n"
    "The csv module implements classes to read and write tabular data in CSV format. Programmers can "
    "also read and write data in dictionary form using the DictReader and DictWriter classes. "
    "Each row read from the file is returned as a dictionary mapping field names to values.\n",
    "gzip.md": "# gzip — Support for gzip files\n\n"
    "This module provides a simple interface to compress and decompress files just like the GNU "
    "programs gzip and gunzip would. The data compression is provided by the zlib module.\n",
    "bz2.md": "# bz2 — Support for bzip2 compression\n\n"
    "This module provides a comprehensive interface for compressing and decompressing data using "
    "the bzip2 compression algorithm.\n",
    "lzma.md": "# lzma — Compression using the LZMA algorithm\n\n"
    "This module provides classes and convenience functions for compressing and decompressing data "
    "using the LZMA compression algorithm.\n",
    "baking.md": "# Baking bread\n\nKnead the dough for ten minutes, let it rise for an hour, and bake "
    "it at 220 degrees until the crust is brown.\n",
}
# A question of two hops: the journal's passage names its publisher; only the publisher's passage
# (which never names the journal) says who its first president was. A look-alike society distracts.
CORPUS = [
    {
        "title": "Journal of Lake Studies",
        "text": "The Journal of Lake Studies is a quarterly peer-reviewed scientific journal covering "
        "limnology. It is published by the Northern Limnology Association.",
    },
    {
        "title": "Northern Limnology Association",
        "text": "The Northern Limnology Association is a learned society founded in 1921 in Tromsø. "
        "Its first president was Ingrid Haldorsen, a chemist from Bergen. The society holds a "
        "congress every two years.",
    },
    {
        "title": "Southern Marine Society",
        "text": "The Southern Marine Society is a learned society of ocean scientists founded in 1930. "
        "Its first president was Paul Verne, an oceanographer. It publishes the Marine Review.",
    },
    {
        "title": "Marine Review",
        "text": "The Marine Review is a monthly journal of oceanography published by the Southern "
        "Marine Society.",
    },
    {
        "title": "Limnology",
        "text": "Limnology is the study of inland aquatic ecosystems, such as lakes, rivers and "
        "wetlands. Lakes are studied for their chemistry, biology and physics.",
    },
]
# The answer is the subject of a passage that its sentences name in lower case ("The Finnish
# markka"): the passage's title makes it a candidate.
CURRENCIES = [
    {
        "title": "Signmark",
        "text": "Signmark is a deaf rapper from Finland. He was the first deaf artist to sign a "
        "recording contract with a major label.",
    },
    {
        "title": "Finnish markka",
        "text": "The Finnish markka was the currency of Finland from 1860 until 2002, when the euro "
        "replaced it.",
    },
    {
        "title": "Euro",
        "text": "The euro is the official currency of most member states of the European Union.",
    },
    {
        "title": "Swedish krona",
        "text": "The krona has been the currency of Sweden since 1873.",
    },
]
# A second hop that only a chain of passages finds (Buyende -> Uganda -> its opposition leader),
# a look-alike that holds more of the question's words ("country"), and a lone digit that counts
# districts.
CHAIN = [
    {"title": "Buyende", "text": "Buyende is a town in the Eastern Region of Uganda, on Lake Kyoga."},
    {
        "title": "Leader of Opposition (Uganda)",
        "text": "The current opposition leader in Uganda is Winnie Kiiza, who succeeded Philip "
        "Wafula Oguttu as the leader of the main opposition party.",
    },
    {
        "title": "Leader of the Opposition (Jamaica)",
        "text": "The current opposition leader in the country of Jamaica is Peter Phillips, who "
        "succeeded Portia Simpson Miller as the leader of the main opposition party.",
    },
    {
        "title": "Nuno Diogo",
        "text": "Nuno Diogo is a Portuguese professional footballer who plays as a central defender "
        "for F.C. Porto, where he joined Pepe and Bruno Alves.",
    },
    {
        "title": "Kansas",
        "text": "Kansas is divided into 4 congressional districts. The state joined the Union after "
        "2 wars with its neighbours had ended.",
    },
]
TIMEOUT = "How do I set a socket timeout?"


@pytest.fixture(scope="module")
def docs_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    docs = tmp_path_factory.mktemp("answerdocs")
    for name, text in PAGES.items():
        (docs / name).write_text(text)
    out = tmp_path_factory.mktemp("answerpacks") / "docs"
    build_pack("docs", [docs.as_uri()], out=out)
    return out


@pytest.fixture(scope="module")
def hops_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("hops") / "corpus.json"
    corpus.write_text(json.dumps(CORPUS))
    out = tmp_path_factory.mktemp("answerpacks") / "hops"
    build_pack("hops", [], out=out, corpus=corpus, options=BuildOptions(graph=True))
    return out


@pytest.fixture(scope="module")
def chain_pack(tmp_path_factory: pytest.TempPathFactory) -> Path:
    corpus = tmp_path_factory.mktemp("chain") / "corpus.json"
    corpus.write_text(json.dumps(CHAIN))
    out = tmp_path_factory.mktemp("answerpacks") / "chain"
    build_pack("chain", [], out=out, corpus=corpus)
    return out


def citations(answer: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", answer)]


def sentences_of(answer: str) -> list[tuple[str, int]]:
    """Each cited sentence of a short answer with its citation."""
    return [(m.group(1).strip(), int(m.group(2))) for m in re.finditer(r"(.+?)\s\[(\d+)\][.!?…]*", answer)]


def also_listed(answer: str) -> list[tuple[str, int]]:
    """The names of a short answer's "Also possible: ..." list, each with its citation ([] without one)."""
    if f" {ALSO} " not in f" {answer}":
        return []
    also = answer.split(ALSO, 1)[1].strip()
    return [(name, int(n)) for name, n in re.findall(r"(.+?) \[(\d+)\](?:, |\.$)", also)]


def flat(text: str) -> str:
    return " ".join(text.split())


def candidates_of(agent: KnowledgeGraphAgent, question: str) -> list[AnswerCandidate]:
    """The answer candidates of ``question``, best first, from the agent's retrieval."""
    state = QueryState(question=question, ctx=agent.context, top_k=5)
    *retrieval, synthesize = agent.stages
    run_stages(retrieval, state)
    options = AnswerOptions()
    scored = score_sentences(state, synthesize.passages(state), options)  # type: ignore[attr-defined]
    return answer_candidates(question, scored, options)


# -- sentences ---------------------------------------------------------------------------------


def test_sentences_of_prose_keep_abbreviations_initials_identifiers_and_numbers() -> None:
    text = (
        "The APA's first president was G. Stanley Hall. Use socket.settimeout() first, e.g. "
        "Python 3.11 does. J. R. R. Tolkien wrote it (cf. The Hobbit). It ends here! Does it? "
        'He said "Stop." Then he left… Mr. Smith stayed.'
    )
    assert split_sentences(text) == [
        "The APA's first president was G. Stanley Hall.",
        "Use socket.settimeout() first, e.g. Python 3.11 does.",
        "J. R. R. Tolkien wrote it (cf. The Hobbit).",
        "It ends here!",
        "Does it?",
        'He said "Stop."',
        "Then he left…",
        "Mr. Smith stayed.",
    ]
    assert split_sentences("one line\nwrapped. Next one") == ["one line wrapped.", "Next one"]


def test_units_of_documentation() -> None:
    text = (
        "blocking mode of the socket.\n\nsocket.settimeout(value)\n\nSet a timeout. The value is "
        "in seconds.\n\n```\n>>> s.settimeout(3)\n\n>>> s.gettimeout()\n```\n\n- first item\n  "
        "continued\n- second item\n\nSee also\n\n>>> x = 1\n"
    )
    units = split_units(text)
    assert [(u.kind, u.text) for u in units] == [
        (TEXT, "blocking mode of the socket."),
        (TEXT, "socket.settimeout(value): Set a timeout."),  # the signature names what it describes
        (TEXT, "The value is in seconds."),
        (CODE, "```\n>>> s.settimeout(3)\n\n>>> s.gettimeout()\n```"),
        (ITEM, "first item continued"),
        (ITEM, "second item"),
        (LABEL, "See also"),
        (CODE, ">>> x = 1"),
    ]
    assert units[0].fragment and not units[1].fragment  # the chunk starts mid-sentence
    assert [u.label for u in units[:3]] == ["", "socket.settimeout(value)", ""]  # what it was shown after
    assert [u.index for u in units] == list(range(len(units)))
    assert split_units("") == [] and split_units("\n\n  \n") == []


def test_a_tables_rows_read_as_items() -> None:
    """A table's rows (cells joined by " | ", one row a line) are items that read "first cell:
    the others", without the header and the marks of the table's notes; one line with a bar is
    prose, and list items and code lines holding bars are what they were."""
    text = (
        "The operations have the same priority.\n\n"
        "Operation | Result | Notes\n"
        "x in s | True if an item of s is equal to x, else False | (1)\n"
        "len(s) | length of s |\n"
        "x + y | |\n"  # two empty cells: each bar a separator (three cells, not two)
        "x | y | bitwise or of x and y |\n"
        "s.count(x) | total number of occurrences of x in s | (6)(7)\n\n"
        "Type | Meaning\n'e' | Scientific notation. For a given precision p, it rounds.\n"
        "True | False\n\n"
        "Use a | b for the union of two sets.\n\n"
        "- args (tuple | dict[str, Any]) – Variable data\n- the other item\n\n"
        "    cat x | grep y\n    sort | uniq\n"
    )
    assert [(u.kind, u.text) for u in split_units(text)] == [
        (TEXT, "The operations have the same priority."),
        (ITEM, "x in s: True if an item of s is equal to x, else False"),
        (ITEM, "len(s): length of s"),
        (ITEM, "x + y"),
        (ITEM, "x | y | bitwise or of x and y |"),  # a cell holding a bar: kept as written
        (ITEM, "s.count(x): total number of occurrences of x in s"),
        (ITEM, "'e': Scientific notation."),  # a long row goes on in sentences
        (TEXT, "For a given precision p, it rounds."),
        (ITEM, "True: False"),  # only a table's first row may name its columns
        (TEXT, "Use a | b for the union of two sets."),
        (ITEM, "args (tuple | dict[str, Any]) – Variable data"),
        (ITEM, "the other item"),
        (CODE, "    cat x | grep y\n    sort | uniq"),
    ]
    assert table_row(["| DEBUG", "10", ""]) == "| DEBUG: 10"
    assert table_row(["Alaska", "Dog Mushing", "1972"]) == "Alaska: Dog Mushing; 1972"
    assert table_row(["", "continued", "(2)"]) == "continued"


def test_a_table_cut_by_the_passage_start_and_the_sentence_that_points_at_it() -> None:
    cut = split_units("s[i] = x) |\ns.clear() | removes all items from s | (5)\ns.copy() | a copy | (5)")
    assert [(u.text, u.fragment) for u in cut] == [
        ("s[i] = x)", True),  # fewer cells than the others: the passage's start cut it
        ("s.clear(): removes all items from s", False),
        ("s.copy(): a copy", False),
    ]
    units = split_units(
        "The numeric values of logging levels are given in the following table.\n\n"
        "Level | Numeric value\nDEBUG | 10\nINFO | 20\n\nclass logging.Filter(name='')\n\n"
        "Operation | Result\nx | y\nz | w"
    )
    assert units[0].introduces and units[0].rows == ("DEBUG: 10", "INFO: 20")  # its table's, not the next
    assert units[0].readable and units[0].shown == (
        "The numeric values of logging levels are given in the following table: DEBUG: 10; INFO: 20."
    )
    assert [u.text for u in units[1:]] == ["DEBUG: 10", "INFO: 20", "x: y", "z: w"]
    assert all(not u.label for u in units)  # a signature before a table describes no row


def test_cite_and_clip() -> None:
    assert cite("It sets the timeout.", 2) == "It sets the timeout [2]."
    assert cite('He said "Stop."', 1) == 'He said "Stop [1]."'
    assert cite("no final stop", 3) == "no final stop [3]."
    assert (
        cite("See the FAQ entry How do I create a list?.", 2)
        == "See the FAQ entry How do I create a list? [2]."
    )
    assert cite("Wait... then go...", 2) == "Wait... then go [2]..."
    # the page's footnote marks would read as citations of the answer's sources
    assert (
        cite("True if all cased characters [4] in it are upper.", 1)
        == "True if all cased characters in it are upper [1]."
    )
    assert cite("a[0] and x [1, 2]", 1) == "a[0] and x [1, 2] [1]."
    assert cite("Repeat a list: [0] * 3 is three zeros.", 1) == "Repeat a list: [0] * 3 is three zeros [1]."
    assert cite("Are all characters [4] upper?!", 2) == "Are all characters upper [2]?!"
    assert (
        cite("Without arguments, dir() lists the names:", 4)
        == "Without arguments, dir() lists the names [4]."
    )
    assert clip("one two three four", 2) == "one two …" and clip("one two", 5) == "one two"
    assert cite(clip("one two three four", 2), 1) == "one two … [1]"
    assert strip_citations("Paris [1]. Lyon [2][3].") == "Paris. Lyon."


# -- the short answer --------------------------------------------------------------------------


def test_the_short_answer_quotes_cited_sentences_of_its_sources(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        result = agent.query(TIMEOUT)
    assert result.answer_mode == "extractive" and result.trace["answer_mode"] == "extractive"
    answer = result.answer
    assert "settimeout" in answer
    cited = citations(answer)
    assert cited and all(1 <= n <= len(result.sources) for n in cited)
    for sentence, n in sentences_of(asserted(answer)):  # the other APIs ("Also: ...") by name alone
        quoted = sentence.split(": ", 1)[-1] if re.match(r"^[\w.]+\(", sentence) else sentence
        assert flat(quoted).rstrip(".") in flat(result.sources[n - 1].text), (sentence, n)
    for name, n in re.findall(r"([\w.]+)\(?\)? \[(\d+)\]", answer.partition(" Also: ")[2]):
        assert f"{name}(" in result.sources[int(n) - 1].text, (name, n)  # defined in its source
    words = len(strip_citations(asserted(answer)).split())
    passages = sum(len(s.text.split()) for s in result.sources[:5])
    assert words <= 60 and words < passages / 3
    assert "```" not in answer and ">>>" not in answer  # code is left to the passages


def test_the_answer_length_is_an_option(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None, options={"synthesize": {"answer_words": 8}}) as agent:
        short = agent.query(TIMEOUT)
    assert len(strip_citations(short.answer).split()) <= 9  # 8 words and the "…" of a cut
    assert citations(short.answer) == [1] or len(citations(short.answer)) == 1
    with pytest.raises(UsageError, match="answer_words"):
        KnowledgeGraphAgent(docs_pack, llm=None, options={"synthesize": {"answer_words": 0}})
    with pytest.raises(UsageError, match="unknown weights"):
        KnowledgeGraphAgent(docs_pack, llm=None, options={"synthesize": {"weights": {"nope": 1.0}}})


def test_a_long_signature_is_shown_short_before_its_description() -> None:
    signature = (
        "subprocess.run(args, *, stdin=None, input=None, stdout=None, stderr=None, "
        "capture_output=False, shell=False, cwd=None, timeout=None, check=False)"
    )
    units = split_units(f"{signature}\n\nRun the command described by args. Wait for it.")
    assert [(u.kind, u.text, u.label) for u in units] == [
        (TEXT, "subprocess.run(args, *, stdin=None, …): Run the command described by args.", signature),
        (TEXT, "Wait for it.", ""),
    ]
    prose = "This long line of prose has no stop at its end and goes on for many more words than that"
    assert [u.kind for u in split_units(f"{prose}\n\nNext.")] == [TEXT, TEXT]
    returns = (
        "Returns: the path of the file to open, relative to the current working directory of the process"
    )
    assert [u.kind for u in split_units(f"{returns}\n\nNext.")] == [TEXT, TEXT]  # prose, not a signature
    quoted = (
        "read_csv(path, *, sep=',', delimiter=None, header='infer', names=None, index_col=None, "
        "usecols=None, dtype=None, engine=None, skiprows=None)"
    )
    assert split_units(f"{quoted}\n\nRead a file.")[0].text == "read_csv(path, *, sep=',', …): Read a file."


def test_a_sentence_that_only_points_at_its_code_is_not_quoted() -> None:
    text = (
        "d.ctime() is equivalent to:\n\n```\ntime.ctime(time.mktime(d.timetuple()))\n```\n\n"
        "To read lines from a file, loop over the file object:\n\n```\nfor line in f: pass\n```\n\n"
        "Return a string representing the date and time."
    )
    units = split_units(text)
    assert [(u.introduces, u.readable) for u in units if u.kind == TEXT] == [
        (True, False),  # says nothing without its code
        (True, True),  # says what to do
        (False, True),
    ]
    pointing, says, plain = (
        Scored(u, 1, {}, NOTHING_ASKED, score=score)
        for u, score in zip([u for u in units if u.kind == TEXT], (3.0, 1.0, 2.0), strict=True)
    )
    options = AnswerOptions(answer_words=12, follow=0.0, same_source=0.0)
    assert [s.unit.text for s in select([pointing, plain, says], options)] == [plain.unit.text]
    assert select([pointing], options) == [pointing]  # nothing else to say
    scrap, cut = (
        split_units("or socket's handle. Set a timeout.")[0],
        split_units("support iteration using reversed().")[0],
    )
    assert scrap.fragment and not scrap.readable  # the end of a sentence the passage's start cut
    assert cut.fragment and cut.readable  # long enough to say something


def test_a_version_note_is_quoted_only_when_the_question_asks_about_versions() -> None:
    texts = ("Changed in version 3.8: The key can be None.", "Return the smallest item in an iterable.")

    def chosen(question: str) -> list[str]:
        asked = Asked({}, set(), {}, None, {}, question)  # type: ignore[arg-type]
        scored = [Scored(split_units(t)[0], 1, {}, asked, score=2.0 - n) for n, t in enumerate(texts)]
        options = AnswerOptions(answer_words=8, follow=0.0, same_source=0.0)
        return [s.unit.text for s in select(scored, options)]

    assert chosen("What returns the smallest item?") == [texts[1]]
    assert chosen("What changed about the key?") == [texts[0]]
    assert chosen("When could the key be None?") == [texts[0]]  # "when": a version may answer it
    assert chosen("Is it available on Windows?") == [texts[0]]
    labelled = "tempfile.mktemp(suffix='')\n\nDeprecated since version 2.3: Use mkstemp() instead."
    asked = Asked({"mktemp": 1.0}, set(), {}, None, {})  # type: ignore[arg-type]
    definition = Scored(split_units(labelled)[0], 1, {}, asked, score=2.0)
    other = Scored(split_units("Another sentence here.")[0], 1, {}, asked, score=1.0)
    options = AnswerOptions(answer_words=8, follow=0.0, same_source=0.0)
    assert select([definition, other], options) == [definition]  # it defines mktemp


def test_code_of_the_form_asked_in_the_best_sentence_comes_first() -> None:
    # "Which exception is raised when a key is missing from a dict?": the weights, fitted on
    # multi-hop questions, prefer a TypeError away from the question's words; KeyError, an
    # exception's name in the best sentence, answers it.
    best, other = (
        Scored(split_units(text)[0], n, {}, None)  # type: ignore[arg-type]
        for n, text in ((1, "This raises a KeyError exception."), (2, "A TypeError exception is raised."))
    )
    zero = dict.fromkeys(CANDIDATE_FEATURES, 0.0)
    key = AnswerCandidate(
        "keyerror", "KeyError", NAME, [Occurrence(best, 12, 20)], {**zero, "type": 1.0, "order": 1.0}
    )
    type_error = AnswerCandidate(
        "typeerror",
        "TypeError",
        NAME,
        [Occurrence(other, 2, 11)],
        {**zero, "type": 1.0, "sentence": 1.0, "order": 0.5},
    )
    assert [c.text for c in rank_candidates([key, type_error], DEFAULT_CANDIDATE_WEIGHTS)] == [
        "TypeError",
        "KeyError",
    ]
    key.coded = type_error.coded = True
    assert [c.text for c in rank_candidates([key, type_error], DEFAULT_CANDIDATE_WEIGHTS)] == [
        "KeyError",
        "TypeError",
    ]


NOTHING_ASKED = Asked({}, set(), {}, None, {})  # type: ignore[arg-type]  # selection without a question


def quotable(unit: Unit, score: float, source: int = 1) -> Scored:
    """``unit`` scored ``score`` for an answer without a question (its words from its text)."""
    return Scored(unit, source, {}, NOTHING_ASKED, score=score, words=frozenset(unit.text.casefold().split()))


def test_a_sentence_cut_by_its_passages_start_is_marked_as_cut() -> None:
    units = split_units("or the socket's handle. Set a timeout on blocking socket operations.")
    assert [u.fragment for u in units] == [True, False]
    scored = [quotable(u, 2.0 - u.index, source=1 + u.index) for u in units]
    answer = answer_from("How do I set a timeout?", scored, AnswerOptions(), 0)
    assert answer == "… or the socket's handle [1]. Set a timeout on blocking socket operations [2].", answer


def test_a_sentence_that_points_at_a_table_is_quoted_with_its_rows() -> None:
    text = (
        "The numeric values of logging levels are given in the following table. These are of "
        "interest if you define your own levels.\n\nLevel | Numeric value\nERROR | 40\nDEBUG | 10\n\n"
        "The available modes are:\n\nCharacter | Meaning\n'r' | open for reading (default)\n\n"
        "Other values are given in the table of the next section.\n\nx | 1\nz | 2\n\n"
        "In text mode, the encoding is the locale's. The available modes are:"
    )
    units = split_units(text)
    levels, interest, error, debug, modes, read, other, x, z, text_mode, cut = units
    assert [u.text for u in (read, x, z)] == ["'r': open for reading (default)", "x: 1", "z: 2"]
    assert not text_mode.introduces and text_mode.readable
    assert levels.rows == ("ERROR: 40", "DEBUG: 10") and interest.rows == ()  # up to 3 sentences before
    assert modes.introduces and modes.rows == ("'r': open for reading (default)",) and modes.readable
    assert other.rows == ()  # "the table of the next section" is no table ahead
    assert cut.introduces and not cut.readable  # what it introduces is in the next passage
    scored = [quotable(u, s) for u, s in ((error, 3.0), (levels, 2.0), (debug, 1.0))]
    ranked = sorted(scored, key=lambda s: -s.score)
    answer = answer_from("What logging levels are there?", ranked, AnswerOptions(follow=0.0), 0)
    assert answer == (  # the rows once: with the sentence that points at their table, in the first's place
        "The numeric values of logging levels are given in the following table: ERROR: 40; DEBUG: 10 [1]."
    ), answer
    # ... but not when it would not fit: the row chosen first stays, alone
    narrow = AnswerOptions(follow=0.0, answer_words=8)
    assert answer_from("What logging levels are there?", ranked, narrow, 0) == "ERROR: 40 [1]."


def test_a_sentence_past_a_definitions_first_is_quoted_with_its_name() -> None:
    text = (
        "These functions operate on the current process.\n\nos.environ\n\nA mapping object "
        "representing the process environment. This mapping is captured the first time the os module "
        "is imported.\n\nName | Meaning\nHOME | your home directory\n\nNote\n\nCalling putenv() "
        "does not change it.\n\nclassmethod datetime.utcnow()\n\nReturn the current UTC date and "
        "time. This is like now(), but naive. See also:\n\nInstance methods:\n\ndatetime.date()\n\n"
        "Return the date."
    )
    units = split_units(text)
    process, mapping, captured, home, note, putenv, utc, like, see, methods, date = units
    assert (process.owner, mapping.owner, mapping.label) == ("", "", "os.environ")  # the first: its label
    assert captured.owner == putenv.owner == "os.environ" and captured.owner_name == "os.environ"
    assert home.row and home.owner == "" and note.owner == ""  # a row, a box's heading: no sentence of it
    assert (utc.owner, utc.label) == ("", "classmethod datetime.utcnow()")
    assert like.owner == "classmethod datetime.utcnow()" and like.owner_name == "datetime.utcnow()"
    assert see.owner == like.owner  # ":" before a sentence: still of the definition
    assert methods.owner == "" and date.label == "datetime.date()"  # ":" before the next definitions
    scored = {u.text: quotable(u, -n) for n, u in enumerate(units)}  # the first sentences best
    first, second = scored[captured.text], scored[like.text]
    answer = answer_from(
        "How is the environment read?", [first, second], AnswerOptions(follow=0.0, same_source=0.0), 0
    )
    assert answer == (
        "os.environ: … This mapping is captured the first time the os module is imported [1]. "
        "datetime.utcnow(): … This is like now(), but naive [1]."
    ), answer
    # after the definition's own first sentence, its name is not said again
    answer = answer_from(
        "How is the environment read?",
        [scored[mapping.text], first],
        AnswerOptions(follow=0.0, same_source=0.0),
        0,
    )
    assert answer == (
        "os.environ: A mapping object representing the process environment [1]. This mapping is "
        "captured the first time the os module is imported [1]."
    ), answer
    # the name counts in the word budget: with room for one sentence and its name only, one is quoted
    narrow = AnswerOptions(
        follow=0.0, same_source=0.0, answer_words=len(captured.text.split()) + 1 + like.words
    )
    assert answer_from("How is the environment read?", [first, second], narrow, 0).count("[1]") == 1


LONG_AGO = (  # 30 words before the candidate: more than the quote's window
    "Long ago, in the early design of the first public release of this toolkit, after many long talks "
    "between its first authors and its users in many places over many years, "
)


@pytest.mark.parametrize("before", ["", LONG_AGO])
def test_a_factoid_answer_quotes_the_table_its_sentence_points_at(tmp_path: Path, before: str) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "logging.md").write_text(
        f"# logging\n\n## Logging Levels\n\n{before}The Python Logging Facility defines the levels in the "
        "following table. These are of interest if you define your own levels.\n\n"
        "| Level | Numeric value |\n|---|---|\n| CRITICAL | 50 |\n| ERROR | 40 |\n| DEBUG | 10 |\n\n"
        "Loggers have a level of their own; a handler drops records below its level.\n"
    )
    (docs / "baking.md").write_text("# Baking bread\n\nKnead the dough for ten minutes and bake it.\n")
    build_pack("levels", [docs.as_uri()], out=tmp_path / "levels")
    with KnowledgeGraphAgent(tmp_path / "levels", llm=None) as agent:
        answer = agent.query("Which facility defines the logging levels?").answer
    if not before:
        assert answer == (  # its best candidate's sentence, with the rows it points at
            "The Python Logging Facility defines the levels in the following table: CRITICAL: 50; ERROR: 40; "
            "DEBUG: 10 [1]."
        ), answer
    else:  # a sentence too long for the quote: the part around the candidate, as for any other
        assert "Python Logging Facility" in answer and "CRITICAL" not in answer, answer


def test_which_rows_a_sentence_that_points_at_a_table_brings() -> None:
    def rows(text: str) -> list[tuple[str, ...]]:
        return [u.rows for u in split_units(text) if u.kind == TEXT and u.rows]

    table = "\n\nType | Meaning | Size\n'b' | signed char | 1\n'B' | unsigned char | 1\n\nAfter the table."
    long_row = (  # a row's long cell goes on in sentences: still the same table
        "The types are:\n\nKind | Note\n'd' | Signed integer decimal. It is the default one.\n"
        "'o' | Signed octal value.\n\nAfter."
    )
    assert rows(long_row) == [("'d': Signed integer decimal.", "'o': Signed octal value.")]
    gap = "See the following table. One. Two. Three."
    assert rows(gap + " Four." + table) == []  # four sentences between: too far
    assert rows(gap + table) == [("'b': signed char; 1", "'B': unsigned char; 1")]
    twice = split_units("Levels are in the following table. Their values are:\n\nERROR | 40\nDEBUG | 10")
    assert [u.rows for u in twice[:2]] == [("ERROR: 40", "DEBUG: 10"), ()]  # one table, claimed once
    assert twice[0].rows_cut and twice[0].shown.endswith("DEBUG: 10 …")  # the passage may cut it
    (pointing,) = (u for u in split_units(gap + table) if u.rows)
    assert not pointing.rows_cut and pointing.shown == (  # rows with cells of their own: apart with " · "
        "See the following table: 'b': signed char; 1 · 'B': unsigned char; 1."
    )
    scrap = split_units("the following table:\n\nA | 1\nB | 2")[0]
    assert scrap.fragment and scrap.rows and not scrap.readable  # a scrap, however many rows it brings


def test_open_and_factoid_questions_rank_sentences_with_their_own_weights(docs_pack: Path) -> None:
    factoid = "Which API do the sockets follow closely?"
    options = AnswerOptions()
    assert options.weights_for(TIMEOUT) is options.open_weights  # "How do I ...?"
    assert options.weights_for(factoid) is options.weights
    # a question that asks for code is one on documentation, though a factoid one
    assert options.weights_for("Which function sets the default timeout?") is options.open_weights
    upside_down = {f: -w for f, w in DEFAULT_OPEN_WEIGHTS.items()}
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        before = agent.query(TIMEOUT).answer, agent.query(factoid).answer
    reversed_options = {"synthesize": {"open_weights": upside_down}}
    with KnowledgeGraphAgent(docs_pack, llm=None, options=reversed_options) as agent:
        after = agent.query(TIMEOUT).answer, agent.query(factoid).answer
    assert after[0] != before[0] and after[1] == before[1], (before, after)
    with pytest.raises(UsageError, match="unknown open_weights"):
        KnowledgeGraphAgent(docs_pack, llm=None, options={"synthesize": {"open_weights": {"nope": 1.0}}})


def test_an_enumeration_lists_one_item_per_source_page(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        result = agent.query("List all the compression modules")
    lines = result.answer.splitlines()
    assert len(lines) >= 3 and all(line.startswith("- ") for line in lines)
    titles = [s.title for s in result.sources]
    listed = []
    for line in lines:
        (n,) = citations(line)
        assert line.startswith(f"- {titles[n - 1]}")
        listed.append(titles[n - 1])
    assert len(listed) == len(set(listed)) == len(set(titles))  # one item per page
    assert {"gzip — Support for gzip files", "bz2 — Support for bzip2 compression"} <= set(listed)


def test_an_enumeration_embeds_no_sentence_unless_dense_weighs(docs_pack: Path) -> None:
    # The sentences' embeddings only count with a `dense` weight (0 by default): without one an
    # enumeration embeds nothing but the question, and with one it embeds its best sentences.
    question = "List all the compression modules"
    embedded: dict[str, list[str]] = {}
    dense = {"synthesize": {"open_weights": {"dense": 1.0}}}  # a list's question is an open one
    for name, options in (("default", {}), ("dense", dense)):
        with KnowledgeGraphAgent(docs_pack, llm=None, options=options) as agent:
            embedder = agent.context.embedder
            real = embedder.embed
            texts: list[str] = []

            def spy(batch: list[str], real: Any = real, texts: list[str] = texts) -> Any:
                texts.extend(batch)
                return real(batch)

            embedder.embed = spy  # type: ignore[method-assign]
            try:
                result = agent.query(question)
            finally:
                embedder.embed = real  # type: ignore[method-assign]
            assert result.answer.startswith("- ")
            embedded[name] = [t for t in texts if t != question]
    assert embedded["default"] == []
    assert len(embedded["dense"]) >= 3


def test_the_answer_of_a_two_hop_question_comes_from_the_second_hop(hops_pack: Path) -> None:
    question = "Who was the first president of the association that publishes the Journal of Lake Studies?"
    with KnowledgeGraphAgent(hops_pack, llm=None) as agent:
        result = agent.query(question)
    (lead, n), *_ = sentences_of(result.answer)  # the best candidate's sentence leads
    assert "Ingrid Haldorsen" in lead and "Paul Verne" not in lead
    assert result.sources[n - 1].title == "Northern Limnology Association"


# -- factoid questions: the answer is built around the best candidate -------------------------


def test_what_a_question_asks_for() -> None:
    assert answer_kind("Who was the first president of the society?") == PERSON
    assert answer_kind("When was the society founded?") == DATE
    assert answer_kind("The journal was first published when?") == DATE
    assert answer_kind("In what year did the congress start?") == DATE
    assert answer_kind("How many members does the society have?") == NUMBER
    assert answer_kind("In which city was the society founded?") == PLACE
    assert answer_kind("Which journal does the society publish?") == NAME
    # "who" in a clause about a noun is not what the question asks for; "by whom?" is
    assert answer_kind("What is the native language of the person who founded the society?") == NAME
    assert answer_kind("Ingrid is a chemist who has worked in what city?") == PLACE
    assert answer_kind("The journal is published by a society founded by whom?") == PERSON
    assert answer_kind("Who mothered the person under whom the society grew?") == PERSON
    # nor is "where" in a clause about a noun ("the state where ..."); a time of day is a date's kind
    assert answer_kind("What time does the state where the school is stop selling alcohol?") == DATE
    assert answer_kind("What was his first name, in the film where he goes to the city?") == NAME
    assert answer_kind("Who is the opposition leader in the country where Buyende is located?") == PERSON
    assert answer_kind("Where was the society founded?") == PLACE
    assert answer_kind("What time zone is Tromsø in?") == NAME
    # an amount: an average, a total, a telephone code
    assert answer_kind("What is the usual average snowfall in the city?") == NUMBER
    assert answer_kind("What is the area code for Bergen?") == NUMBER
    # "what is the population", "what was its 2011 population": an amount, however worded
    assert answer_kind("What is the population of the state where the society was founded?") == NUMBER
    assert answer_kind("At the 2011 census, what was the town's population?") == NUMBER
    assert answer_kind("What is the name of the society's journal?") == NAME
    assert answer_kind("What is the population centre of the state?") == NAME  # a place
    assert answer_kind("What was the number one single of the band?") == NAME
    assert answer_kind("How many logging levels are there?") == NUMBER  # not a list
    assert answer_kind("What are the names of the two brothers?") == NAME
    # not factoid questions: a how-to, an instruction (the docs set's questions)
    assert answer_kind(TIMEOUT) is None
    assert answer_kind("sort list `x` by the second item where the key is `k`") is None
    assert answer_kind("find all anchor tags in html `soup` whose url begins with `http`") is None
    # nor is one asking what a thing is or does: it gets sentences, never a list of names
    assert answer_kind("What is the capital of Norway?") == NAME
    for describe in (
        "What does functools.lru_cache do?",
        "What is asyncio?",
        "What are generators?",
        "What are the built-in numeric types?",  # a list: its sentences say what they are
        "What logging levels are there?",
        "What are some ways to read a file?",
        "What is the difference between a list and a tuple?",
        "What is a decorator used for?",
        "Why does the loop hang?",
    ):
        assert answer_kind(describe) is None, describe
    assert comparison("Which band was formed first, The Exies or Circus Diablo?") == (
        "The Exies",
        "Circus Diablo",
    )
    assert comparison("Which plant is larger, the Pterocarya or the Cotula?") == ("Pterocarya", "Cotula")
    assert comparison("Who founded the society?") is None
    assert comparison("Is it true or false?") is None


def test_candidate_spans_and_their_windows() -> None:
    text = (
        "On 26 July 1921, Studio 33 in Columbus, Ohio sold 1,200 copies for $1.18 trillion, "
        "39.2% of the market, twice."
    )
    found = {(span, kind) for span, kind, _, _ in spans(text)}
    assert {("26 July 1921", DATE), ("Studio 33", NAME), ("Columbus, Ohio", NAME)} <= found
    assert {("1,200", NUMBER), ("$1.18 trillion", NUMBER), ("39.2%", NUMBER), ("twice", NUMBER)} <= found
    assert ("July 1921", NAME) not in found  # a name does not run into a date
    # a day without its year is a date, not the name "On August 6"; a capitalised "The" starts a name
    text = "On August 6, 23.2 GWh The Little Boy fell on 9 May."
    found = {(span, kind) for span, kind, _, _ in spans(text)}
    assert {("August 6", DATE), ("9 May", DATE), ("Little Boy", NAME)} <= found
    assert not {"On August 6", "GWh The Little Boy"} & {span for span, _ in found}
    # a name that loses the sentence's first word loses the joining word after it; a quoted title
    # ends before the sentence's full stop
    text = 'Much of Roman Britain was under "North Africa."'
    found = {(span, kind) for span, kind, _, _ in spans(text, common={"much"})}
    assert {("Roman Britain", NAME), ("North Africa", NAME)} <= found, found

    text = (
        'Bars may sell alcohol from 10: 00am to 3 a.m. Nicholas Lofton "Nick" Hexum is a two-time '
        "winner. The album features Sleepy Brown, Phantogram, Killer Mike and more, with Robert Newton "
        "and Edward Chapman. It is based in Detroit, Michigan. Bosnia and Herzegovina is a country."
    )
    found = {(span, kind) for span, kind, _, _ in spans(text)}
    assert {("10: 00am", DATE), ("3 a.m.", DATE), ("two-time", NUMBER)} <= found
    assert {('Nicholas Lofton "Nick" Hexum', NAME), ("Detroit, Michigan", NAME)} <= found  # one name each
    # names of a list are names one by one, not a place ("Sleepy Brown, Phantogram") nor a pair
    listed = ("Sleepy Brown", "Phantogram", "Robert Newton", "Edward Chapman")
    assert {(name, NAME) for name in listed} <= found
    assert not {"Sleepy Brown, Phantogram", "Robert Newton and Edward Chapman", "Detroit, Michigan. It"} & {
        span for span, _ in found
    }
    assert ("Bosnia and Herzegovina", NAME) in found
    for span, _, start, end in spans(text):
        assert text[start:end] == span
    long = (
        "The society, which was founded by a group of chemists and biologists from the west coast, "
        "elected Ingrid Haldorsen as its first president in a meeting held in the autumn of that year."
    )
    start = long.index("Ingrid Haldorsen")
    cut = window(long, start, start + len("Ingrid Haldorsen"), 12)
    assert "Ingrid Haldorsen" in cut and len(cut.replace("…", "").split()) <= 12
    assert cut.startswith("… ") and cut.endswith(" …") and flat(cut.strip("… ")) in flat(long)
    assert window("Ingrid Haldorsen was its president.", 0, 16, 12) == "Ingrid Haldorsen was its president."
    # a clause that is a scrap of the room gives way to the words around the span, as written
    text = (
        "A subclass of OSError, this exception is raised when a timeout occurs on a socket which has "
        "had timeouts enabled via a prior call to settimeout()."
    )
    start = text.index("OSError")
    assert window(text, start, start + 7, 14) == (
        "A subclass of OSError, this exception is raised when a timeout occurs on a …"
    )


def test_a_table_row_run_into_a_sentence_gives_no_name() -> None:
    text = (
        "State Sport Lacrosse State Team Sport Massachusetts Basketball was adopted. "
        "He flew from John F. Kennedy International Airport to play for the Golden State Warriors of "
        'the National Basketball Association, humming "Sgt. Pepper\'s Lonely Hearts Club Band Reprise".'
    )
    found = {span for span, kind, _, _ in spans(text) if kind == NAME}
    assert not any("Lacrosse" in span for span in found), found  # a table's row, no name
    assert {
        "John F. Kennedy International Airport",
        "Golden State Warriors of the National Basketball Association",
        "Sgt. Pepper's Lonely Hearts Club Band Reprise",  # a quoted title
    } <= found, found


def test_lower_case_words_that_fill_the_slot_are_candidates() -> None:
    slot = slot_words("A painter known for his precisionist depictions of what?")
    assert slot == ("of", "depic")
    text = "A painter known for his precisionist depictions of urban landscapes that are full of colour."
    assert fillers(text, slot) == [("urban landscapes", NAME, text.index("urban"), text.index(" that"))]
    assert fillers("His depictions of Rome were famous.", slot) == []  # a name is a candidate anyway
    assert fillers(text, ("", "")) == []


def test_a_lone_digit_is_a_candidate_where_it_counts_what_the_question_counts(chain_pack: Path) -> None:
    with KnowledgeGraphAgent(chain_pack, llm=None) as agent:
        found = [c.text for c in candidates_of(agent, "How many congressional districts does Kansas have?")]
        answer = agent.query("How many congressional districts does Kansas have?").answer
    assert "4" in found and "2" not in found, found  # "after 2 wars": no district
    assert answer.startswith("Kansas is divided into 4 congressional districts"), answer


def test_the_second_hop_of_a_chain_from_the_question_ranks_first(chain_pack: Path) -> None:
    # Buyende's passage names Uganda; the passage on Uganda's opposition leader does not name
    # Buyende, and neither does Jamaica's, which says the same of another country
    question = "Who is the current opposition leader in the country where Buyende is located?"
    with KnowledgeGraphAgent(chain_pack, llm=None) as agent:
        found = candidates_of(agent, question)
    chain = {c.text: c.features["chain"] for c in found}
    assert chain["Winnie Kiiza"] > 0 and chain["Peter Phillips"] == 0, chain
    # the sentence that names the link (Uganda) holds what is asked of it: "current opposition
    # leader", not "country" and "located", which describe the bridge
    rehop = {c.text: c.features["rehop"] for c in found}
    assert rehop["Winnie Kiiza"] == pytest.approx(1.0) and rehop["Peter Phillips"] == 0, rehop
    people = [c.text for c in found if c.text in ("Winnie Kiiza", "Peter Phillips")]
    assert people == ["Winnie Kiiza", "Peter Phillips"], [c.text for c in found]
    unchained = rank_candidates(found, {**DEFAULT_CANDIDATE_WEIGHTS, "chain": 0.0, "rehop": 0.0})
    assert next(c.text for c in unchained if c.text in people) == "Peter Phillips"  # what the link changes


def test_the_words_that_describe_the_bridge_are_not_what_the_question_asks_of_it() -> None:
    question = "Who is the current opposition leader in the country where Buyende is located?"
    assert bridge_words(question) == "country where Buyende is located?"
    assert bridge_words("Who was the first president of Damerjog's country?") == "Damerjog's country"
    assert bridge_words("What is the name of the person who made The Oddventures of Mr. Cool?") == (
        "person who made The Oddventures of Mr. Cool"
    )
    # a clause whose verb comes before its name ends with the name: what follows is asked
    question = "When was the country that produced Fist Power taken by the British?"
    assert bridge_words(question) == "country that produced Fist Power"
    assert (
        bridge_words("When did the country containing Nugegoda leave the Empire?")
        == "country containing Nugegoda"
    )
    # a clause that holds the slot is what is asked; "to which" opens no clause about a noun
    assert bridge_words("The league includes the Adelaide team that was formed in what year?") == ""
    assert bridge_words("Jagdish Mali is father to which Bollywood actress?") == ""
    assert bridge_words("Who was the first president of Somalia?") == ""


def test_a_role_is_the_lower_case_words_after_as() -> None:
    text = (
        "Nuno Diogo is a Portuguese professional footballer who plays as a central defender for F.C. Porto."
    )
    assert [span for span, *_ in role_fillers(text)] == ["central defender"]
    text = "He is best known as the lead vocalist and primary songwriter of the rock band Collective Soul."
    assert [span for span, *_ in role_fillers(text)] == ["lead vocalist"]
    text = "Dale Brown is an American writer known for aviation techno-thriller novels."
    assert [span for span, *_ in role_fillers(text)] == ["aviation techno-thriller novels"]
    assert role_fillers("He joined as President of the club.") == []  # a name is a candidate anyway
    assert answer_kind("What position did the receiver of the Golden Shoe play?") == NAME


def test_a_role_fills_the_slot_of_a_question_asking_for_one(chain_pack: Path) -> None:
    question = "What position does the Portuguese footballer Nuno Diogo play?"
    with KnowledgeGraphAgent(chain_pack, llm=None) as agent:
        found = candidates_of(agent, question)
        answer = agent.query(question).answer
        other = {c.text for c in candidates_of(agent, "Who plays for F.C. Porto?")}
    role = next(c for c in found if c.text == "central defender")
    assert role.features["slot"] == 1.0 and found[0] is role, [(c.text, c.score) for c in found]
    assert "central defender" in asserted(answer), answer
    assert "central defender" not in other  # not a role question: the words after "as" are no candidate


def test_where_the_question_slot_stands() -> None:
    assert slot_words("A racing game developed by what company?") == ("by", "devel")
    assert slot_words("He was an Earl of which location?") == ("of", "earl")
    assert slot_words("Who did the singer write the song for?") == ("for", "song")
    assert slot_words("A chemist who was associated with members of what family?") == ("of", "membe")
    assert slot_words("Who founded the society?") == ("", "found")
    assert slot_words("Who was the first president?") == ("", "")  # "was": no verb to match
    assert slot_words("How many members does it have?") == ("", "")
    slot = slot_words("A racing game developed by what company?")
    text = "Formula One Arcade is a racing game developed by Studio 33 and published by Sony."
    at = text.index("Studio 33")
    assert slot_fit(text, at, at + 9, slot) == 1.0
    at = text.index("Sony")  # the preposition, not the verb
    assert slot_fit(text, at, at + 4, slot) == 0.5
    at = text.index("Formula One Arcade")
    assert slot_fit(text, at, at + 18, slot) == 0.0
    founded = slot_words("Who founded the society?")
    for text, name in (
        ("It was founded by Ingrid Haldorsen.", "Ingrid Haldorsen"),
        ("Ingrid Haldorsen founded it.", "Ingrid Haldorsen"),
    ):
        at = text.index(name)
        assert slot_fit(text, at, at + len(name), founded) == 1.0
    assert slot_fit("Ingrid Haldorsen chaired it.", 0, 16, founded) == 0.0


@pytest.mark.parametrize(
    ("question", "expected"),
    [
        ("When was the Northern Limnology Association founded?", "1921"),
        ("In which city was the Northern Limnology Association founded?", "Tromsø"),
    ],
)
def test_a_factoid_answer_leads_with_the_sentence_of_the_best_candidate(
    hops_pack: Path, question: str, expected: str
) -> None:
    with KnowledgeGraphAgent(hops_pack, llm=None) as agent:
        result = agent.query(question)
    (lead, n), *_ = sentences_of(result.answer)
    assert expected in lead, result.answer
    assert result.sources[n - 1].title == "Northern Limnology Association"
    assert flat(lead.strip("… ")) in flat(result.sources[n - 1].text)
    words = len(strip_citations(result.answer).split())
    assert words <= max(25, round(0.1 * sum(len(s.text.split()) for s in result.sources[:5])))


def test_the_other_candidates_are_listed_by_name_each_cited(hops_pack: Path) -> None:
    question = "Who was the first president of the association that publishes the Journal of Lake Studies?"
    listing = {"synthesize": {"max_candidates": 1, "listed": 4, "candidate_margin": 100.0}}
    with KnowledgeGraphAgent(hops_pack, llm=None, options=listing) as agent:
        result = agent.query(question)
    lead, also = result.answer.split(f" {ALSO} ")
    assert "Ingrid Haldorsen" in lead and len(sentences_of(lead)) == 1, result.answer
    assert also.endswith(".")
    items = also_listed(result.answer)
    assert 1 <= len(items) <= 4 and "".join(f"{n} [{i}]" for n, i in items) == also.replace(", ", "")[:-1]
    for name, n in items:  # each a name its cited passage holds, none quoted already
        assert name in flat(result.sources[n - 1].text) and name not in lead
    passages = sum(len(s.text.split()) for s in result.sources[:5])
    assert len(strip_citations(result.answer).split()) <= max(25, round(0.1 * passages))
    with KnowledgeGraphAgent(hops_pack, llm=None, options={"synthesize": {"listed": 0}}) as agent:
        assert ALSO not in agent.query(question).answer
    with pytest.raises(ValueError, match="listed"):
        AnswerOptions(listed=-1)


def test_an_answer_that_answers_outright_lists_fewer_others(docs_pack: Path) -> None:
    # the definition answers the question: at most listed_when_sure (3) others after it
    question = "Which method sets a timeout on blocking socket operations?"

    def listed(**options: int) -> list[str]:
        with KnowledgeGraphAgent(docs_pack, llm=None, options={"synthesize": options}) as agent:
            assert candidates_of(agent, question)[0].answered
            answer = agent.query(question).answer
        assert answer.startswith("socket.settimeout(value): Set a timeout"), answer
        return [name for name, _ in also_listed(answer)]

    assert 1 <= len(listed()) <= 3
    assert len(listed(listed_when_sure=12)) > 3  # more candidates were there to list
    assert listed(listed_when_sure=0) == []
    with pytest.raises(ValueError, match="listed_when_sure"):
        AnswerOptions(listed_when_sure=-1)


@pytest.mark.parametrize(
    ("question", "lead"),
    [
        # the sentence says "This module" and the question "LZMA": the module as its page names it
        ("Which module compresses data with the LZMA algorithm?", "lzma: This module provides classes"),
        ("Which module reads and writes tabular data in CSV format?", "The csv module implements classes"),
    ],
)
def test_which_module_is_answered_with_the_module_a_page_is_about(
    docs_pack: Path, question: str, lead: str
) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        ranked = candidates_of(agent, question)
        answer = agent.query(question).answer
    assert answer.startswith(lead), answer
    assert ranked[0].coded and ranked[0].text in ("lzma", "csv"), [c.text for c in ranked]
    # only modules have the form asked: no function, class or word of the sentences
    assert {c.text for c in ranked if c.coded} <= {"socket", "csv", "gzip", "bz2", "lzma", "zlib"}


def test_only_candidates_of_the_kind_asked_for_are_listed(hops_pack: Path) -> None:
    question = "When was the Northern Limnology Association founded?"
    listing = {"synthesize": {"max_candidates": 1, "listed": 6, "candidate_margin": 100.0}}
    with KnowledgeGraphAgent(hops_pack, llm=None, options=listing) as agent:
        found = candidates_of(agent, question)
        answer = agent.query(question).answer
    assert any(not c.features["type"] for c in found[1:7])  # names were candidates too...
    items = [name for name, _ in also_listed(answer)]
    assert items and all(re.search(r"\b1\d{3}\b", name) for name in items), answer  # ... dates are listed


def test_a_word_capitalised_only_as_its_sentences_first_is_no_candidate(docs_pack: Path) -> None:
    question = "Which classes read and write data in dictionary form?"
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        found = {c.text for c in candidates_of(agent, question)}
    # "Programmers can also ...", "Each row ...": capitalised as the sentence's first word only
    assert {"DictReader", "DictWriter"} <= found and not found & {"Programmers", "Each", "Sockets", "They"}, (
        found
    )
    # a name that opens its sentence is one where it is capitalised elsewhere too, or a passage's subject
    assert "CSV" in found


def test_a_name_is_never_part_of_a_word_nor_opens_with_a_common_word() -> None:
    found = [span for span, *_ in spans("Similar to assertWarns() but tests a regex.", code=True)]
    assert "Warns" not in found and "assertWarns()" in found, found
    # "Return" is written in lower case elsewhere: a verb that opens the sentence, not a name's first word
    found = [span for span, *_ in spans("Return True if Control-C is pressed.", common={"return"})]
    assert "True" in found and "Return True" not in found, found
    text = "Return True if Control-C is pressed."
    true = [(text[a:b], a) for span, _, a, b in spans(text, common={"return"}) if span == "True"]
    assert true == [("True", 7)]
    # a word the passages capitalise inside a sentence is a name's, wherever else it is lower case
    texts = ["New York is big.", "He moved to New York for a new job.", "Return True if set.", "Or return."]
    common = common_words(texts)
    assert "return" in common and "new" not in common
    assert "New York" in [span for span, *_ in spans(texts[0], common=common)]


def test_a_question_asking_for_code_is_answered_with_code_names_only(docs_pack: Path) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        question = "Which exception is raised once the timeout period has elapsed?"
        ranked = candidates_of(agent, question)
        found = [c.text for c in ranked]
        answer = agent.query("Which function sets the default timeout for new socket objects?").answer
    names = [c for c in found if not re.fullmatch(r"[\d.]+|ten minutes", c)]
    assert names[0] == "TimeoutError", found  # the one name of an exception
    assert {c.text for c in ranked if c.coded} == {"TimeoutError"}  # the form "which exception" asks for
    # no words for "which exception" or "which function": "None", "False", "Berkeley" are no code
    assert not {"None", "True", "False", "Berkeley", "Sockets"} & set(found), found
    listed = answer.split(ALSO, 1)[1]
    assert "socket.settimeout" in listed, answer
    assert not re.search(r"TimeoutError|Berkeley|False|LZMA", listed), answer


def test_what_a_call_raises_is_asked_as_which_exception(docs_pack: Path) -> None:
    question = "What does socket.settimeout() raise once the period has elapsed?"
    assert asks_code(question) and asks_code("What does json.loads raise for invalid JSON?")
    assert not asks_code("What does socket.settimeout() do?")  # a description, no exception
    assert not asks_code("What did the band raise money for?")  # no code: a name may answer it
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        ranked = candidates_of(agent, question)
    assert [c.text for c in ranked if c.coded] == ["TimeoutError"], [c.text for c in ranked]
    assert ranked[0].text == "TimeoutError"


@pytest.mark.parametrize(
    ("question", "function"),
    [
        ("Which function sets the default timeout for new socket objects?", "socket.setdefaulttimeout("),
        ("Which method sets a timeout on blocking socket operations?", "socket.settimeout("),
    ],
)
def test_a_question_asking_for_a_function_is_answered_with_its_name(
    docs_pack: Path, question: str, function: str
) -> None:
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        answer = agent.query(question).answer
    (lead, _), *_ = sentences_of(answer)
    assert lead.startswith(function), answer  # the code identifier is the best candidate
    # without code identifiers among the candidates, the answer quotes another sentence
    with KnowledgeGraphAgent(docs_pack, llm=None, options={"synthesize": {"code_names": False}}) as agent:
        other_answer = agent.query(question).answer
    (other, _), *_ = sentences_of(other_answer)
    assert other != lead, other_answer  # (it may name the definition it describes: "socket.settimeout(): …")
    assert not [name for name, _ in also_listed(other_answer) if "." in name], other_answer  # no code names
    assert "e.g" not in {
        c for c in codes_in("raise an exception, e.g. TimeoutError, in the U.S. and os.path")
    }
    assert codes_in("raise an exception, e.g. TimeoutError, in os.path") == ("os.path",)


def test_a_function_the_question_words_is_named_by_its_definition_line(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    # "sorts" is the question's word and sort() the answer; its definition line shows arguments
    docs = tmp_path_factory.mktemp("sortdocs")
    (docs / "sorting.md").write_text(
        "# Sorting HOW TO\n\nPython lists have a built-in method that modifies the list in place. "
        "There is also a built-in function that builds a new sorted list from an iterable.\n\n"
        "sort(*, key=None, reverse=False)\n\nThis method sorts the list in place, using only < "
        "comparisons between items.\n\nsorted(iterable, /, *, key=None, reverse=False)\n\nReturn a new "
        "sorted list from the items in iterable.\n"
    )
    (docs / "baking.md").write_text(PAGES["baking.md"])
    out = tmp_path_factory.mktemp("answerpacks") / "sorting"
    build_pack("sorting", [docs.as_uri()], out=out)
    with KnowledgeGraphAgent(out, llm=None) as agent:
        answer = agent.query("Which function sorts a list in place?").answer
    assert answer.startswith("sort(*, key=None, reverse=False): This method sorts the list in place"), answer


def test_a_passage_title_is_a_candidate_where_its_sentences_name_it(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    text = "The Finnish markka was the currency of Finland from 1860 until 2002."
    assert ("Finnish markka", NAME) not in {(span, kind) for span, kind, _, _ in spans(text)}
    found = spans(text, "Finnish markka")
    assert ("Finnish markka", NAME, 4, 18) in found
    assert not any(span == "Finnish markka" for span, *_ in spans(text, "Finnish markka coins"))
    corpus = tmp_path_factory.mktemp("titles") / "corpus.json"
    corpus.write_text(json.dumps(CURRENCIES))
    pack = tmp_path_factory.mktemp("answerpacks") / "currencies"
    build_pack("currencies", [], out=pack, corpus=corpus)
    question = "What currency predated the euro in the country Signmark is from?"
    with KnowledgeGraphAgent(pack, llm=None) as agent:
        found = candidates_of(agent, question)
        result = agent.query(question)
    markka = next(c for c in found if c.text == "Finnish markka")
    assert markka.features["subject"] == 1.0
    assert "Finnish markka" in result.answer


def test_a_comparison_quotes_a_sentence_for_each_thing(hops_pack: Path) -> None:
    question = (
        "Which society was founded first, the Northern Limnology Association or the Southern Marine Society?"
    )
    with KnowledgeGraphAgent(hops_pack, llm=None) as agent:
        result = agent.query(question)
    quoted = sentences_of(result.answer)
    assert len(quoted) == 2, result.answer
    titles = {result.sources[n - 1].title for _, n in quoted}
    assert titles == {"Northern Limnology Association", "Southern Marine Society"}
    assert "1921" in result.answer and "1930" in result.answer


class CountingEmbedder:
    """The pack's embedder, counting the texts it is asked to embed."""

    def __init__(self, embedder: object) -> None:
        self.embedder = embedder
        self.texts: list[str] = []

    def __getattr__(self, name: str) -> object:
        return getattr(self.embedder, name)

    def embed(self, texts: list[str]) -> object:
        self.texts += texts
        return self.embedder.embed(texts)  # type: ignore[attr-defined]


@pytest.mark.parametrize("dense", [0.0, 1.0])
def test_the_default_answer_embeds_no_sentence(docs_pack: Path, dense: float) -> None:
    options = {"synthesize": {"open_weights": {"dense": dense}, "max_sentences": 5}}  # "How do I ...?"
    with KnowledgeGraphAgent(docs_pack, llm=None, options=options) as agent:
        state = QueryState(question=TIMEOUT, ctx=agent.context, top_k=5)
        *retrieval, synthesize = agent.stages
        assert synthesize.name == "synthesize"
        run_stages(retrieval, state)
        counting = CountingEmbedder(agent.context.embedder)
        agent.context.loaded_embedder = counting  # type: ignore[assignment]
        run_stages([synthesize], state)
    assert state.answer and "settimeout" in state.answer
    if dense:  # a dense weight set: the best sentences are embedded, in one batch, at most 5
        assert 1 <= len(counting.texts) <= 5
    else:
        assert counting.texts == []


# -- what the CLI prints -----------------------------------------------------------------------


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = run(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.mark.parametrize("extra", [[], ["-k5"]], ids=["fast parser", "typer"])
def test_query_prints_the_short_answer_then_the_sources(
    docs_pack: Path, capsys: pytest.CaptureFixture[str], extra: list[str]
) -> None:
    code, out, err = cli(capsys, "query", str(docs_pack), TIMEOUT, *extra)
    assert code == 0, err
    answer, sources = out.split("\n\nSources\n")
    assert "settimeout" in answer and citations(answer)
    lines = sources.strip().splitlines()
    assert re.fullmatch(
        r"\[1\] socket — Low-level networking interface › Socket Objects  file://\S+", lines[0]
    )
    assert all(re.match(rf"\[{n}\] ", line) for n, line in enumerate(lines, 1))
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        full = agent.query(TIMEOUT).sources[0].text
    assert "Set the default timeout in seconds (float) for new socket objects" in full
    assert flat(full) not in flat(out)  # the whole passage is not printed...
    code, out, err = cli(capsys, "query", str(docs_pack), TIMEOUT, "--passages", *extra)
    assert code == 0, err
    assert full.strip() in out  # ...unless asked for
    assert out.index("[1] socket") < out.index(full.strip()) < out.index("[2] ")


def test_query_json_gives_the_short_answer_and_the_whole_passages(
    docs_pack: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "query", str(docs_pack), TIMEOUT, "--json")
    assert code == 0, err
    data = json.loads(out)
    with KnowledgeGraphAgent(docs_pack, llm=None) as agent:
        result = agent.query(TIMEOUT)
    assert data["answer"] == result.answer and data["answer_mode"] == "extractive"
    assert [s["text"] for s in data["sources"]] == [s.text for s in result.sources]
    assert all(s["text"] for s in data["sources"])
    assert set(data["sources"][0]) == {"title", "section", "url", "score", "text", "pack", "related"}


def test_query_passages_in_a_fresh_process(docs_pack: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "wikigr", "query", str(docs_pack), TIMEOUT, "--passages"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "\nSources\n[1] " in proc.stdout and "This module provides access to the BSD" in proc.stdout
