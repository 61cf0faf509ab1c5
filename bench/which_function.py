"""Questions that ask for an API by what it does: does the offline answer name it?

A user of a documentation pack often knows what they want done, not its name: "Which function
returns the default timeout for new socket objects?". Such a question asks for a name, so the
offline answer is built around answer candidates (wikigr/retrieval/candidates.py); with the
``synthesize`` option ``code_names`` (on by default) the candidates of a question asking for a
name include the code identifiers of the sentences (``socket.getdefaulttimeout()``), not only
capitalised names.

Questions: for definitions on the pack's library pages whose description opens with "Return ..."
(``socket.getdefaulttimeout()`` / "Return the default timeout in seconds (float) for new socket
objects."), "Which function returns the default timeout in seconds (float) for new socket
objects?" — sampled with a fixed seed, one per definition. The question holds the description's
words, so retrieval usually finds the definition; what is measured is whether the answer then
names it. Per question, the default profile, no LLM, in four arms: ``neither`` (the
``synthesize`` option ``code_names`` off and ``page_score``'s ``definition_words`` 0),
``code_names`` (on; ``definition_words`` still 0), ``default`` (both as shipped: within a
page, a chunk showing a definition whose line and first sentence hold two of the question's words
comes first) and ``two_per_page`` (``page_score``'s ``passages_per_page`` 2: two passages of
every page, which the developer questions favour, bench/developer_questions.py):

- ``names_in_lead``: the answer's quoted part (before "Also possible:") names the API: its last
  part called (``getdefaulttimeout(``) or its whole dotted name;
- ``names_in_answer``: the whole short answer does;
- ``defined_first``, ``defined_in_top5``: the first source, one of the first five, shows the
  definition.

``code_names`` has no parameter; ``definition_words`` (2) was chosen on the first half of these
questions (0, 2, 3 and 4 tried: 2 ahead of 3 by one question or tied on each figure, 4 lower) and
on the dev half of bench/answers.py's CoNaLa questions (2 ahead of 3 and 0 on both packs); both
halves are printed.
Writes bench/results/which_function.json with the load average.

    uv run python bench/which_function.py [--packs packs/pydocs,bench/work/pydocs-whole] [--questions 100]
"""

from __future__ import annotations

import argparse
import functools
import random
import re
from pathlib import Path
from typing import Any

from _common import arms_report, header, packs_at, shares, write_results
from answers import names_function

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.page_index import PageIndex, defines
from wikigr.retrieval.profiles import DEFAULT_PROFILE
from wikigr.retrieval.sentences import split_sentences
from wikigr.retrieval.short_answer import asserted

ROOT = Path(__file__).resolve().parent.parent
ARMS: dict[str, dict[str, Any]] = {  # the options of each arm; "default": none changed
    "neither": {"synthesize": {"code_names": False}, "page_score": {"definition_words": 0}},
    "code_names": {"page_score": {"definition_words": 0}},
    "default": {},
    "two_per_page": {"page_score": {"passages_per_page": 2}},
}
_RETURN = re.compile(r"^Return (?:an? |the )?\S.{8,140}?\.$")


def questions(pack: Path, count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` definitions of ``pack``'s library pages described by "Return ...", as questions."""
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None) as agent:
        index = PageIndex.of(agent.context)
        store = agent.context.store
        found: dict[str, dict[str, Any]] = {}
        for page, url in enumerate(index.urls):
            if "/library/" not in url:
                continue
            chunks = [index.chunk_ids[r] for r in range(len(index.chunk_ids)) if index.chunk_page[r] == page]
            for text in store.chunk_texts(chunks).values():
                for line, following, anchor, _known in index.definitions_in(text, page):
                    sentences = split_sentences(following)
                    first = sentences[0] if sentences else ""
                    name = anchor or ""
                    if not name or name in found or not _RETURN.match(first) or "." not in name:
                        continue
                    asks = first.removeprefix("Return ").rstrip(".")
                    found[name] = {
                        "question": f"Which function returns {asks}?",
                        "name": name,
                        "line": line,
                    }
    chosen = sorted(found)
    random.Random(seed).shuffle(chosen)
    return [found[name] for name in chosen[:count]]


def run(pack: Path, asked: list[dict[str, Any]], options: dict[str, Any]) -> list[dict[str, bool]]:
    rows = []
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, options=options) as agent:
        for q in asked:
            result = agent.query(q["question"])
            rows.append(
                {
                    "names_in_lead": names_function(asserted(result.answer), [q["name"]]),
                    "names_in_answer": names_function(result.answer, [q["name"]]),
                    "defined_first": bool(result.sources) and defines(result.sources[0].text, q["name"]),
                    "defined_in_top5": any(defines(s.text, q["name"]) for s in result.sources[:5]),
                }
            )
    return rows


summarize = shares


def main() -> int:
    parser = argparse.ArgumentParser(description="'which function returns ...?': does the answer name it?")
    parser.add_argument("--packs", default="packs/pydocs,bench/work/pydocs-whole")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "which_function.json")
    args = parser.parse_args()
    result: dict[str, Any] = {**header(), "packs": {}}
    for name, pack in packs_at(ROOT, args.packs):
        asked = questions(pack, args.questions)
        result["packs"][name] = arms_report(name, asked, ARMS, functools.partial(run, pack, asked), summarize)
    write_results(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
