"""Questions that name an API: does the answer lead with its definition?

A user of a documentation pack often names what they ask about: "What does str.join do?",
"What does functools.lru_cache do?". page_score's ``defined_names`` puts the chunk that shows the
named API's definition first, cited at its anchor, and the short answer leads with that
definition's sentence (wikigr/retrieval/stages/page_score.py, short_answer.definition_first).

Questions: "What does NAME do?" for link targets of the pack (the names its pages link to, such as
``str.join`` in ``stdtypes.html#str.join``) that are dotted names on a library page and that a
chunk of their page defines (a line showing the name: ``str.join(iterable)``) — sampled with a
fixed seed. NAME is written as users do: a method without its module (``socket.settimeout``
for ``socket.socket.settimeout``), anything else whole. Per question, with ``defined_names`` off
and on, the default profile, no LLM:

- ``page@1``: the first source is on the target's page;
- ``defines@1``: the first source shows the definition;
- ``anchor@1``: the first source is cited at the target's anchor (``...#str.join``);
- ``answer_leads``: the short answer's first sentence shows the definition;
- ``query_ms``: p50 and p95 of the whole query.

And on the CoNaLa questions of bench/docqa.py (../shared/data/docqa; gold: anchors such as
``library/stdtypes.html#str.join``), which seldom name the API they need: ``anchor@1`` and
``anchor@5``, the share whose first source, or one of the first five, is cited at a gold anchor —
a passage that shows several definitions is cited at the one the question's words name
(``defined_names`` too), else at its section; and how many of the first five sources are cited at
an API's entry (``#str.join``, not ``#module-os``), and how many of those at a gold one.

And ``anchors``: every definition line of the pack's library pages, with the anchor the stage
would cite (its link target, or for a dotted name no page links to, the one its siblings in the
chunk give), checked against the ``id`` attributes of the page in Debian's python3.11-doc. And
``definition_scope``: the sentences the short answer quotes with the name of the definition they
go on describing ("os.environ: … This mapping is captured ..."), checked against that page's
``<dd>`` of the name (:func:`definition_scope`).

Nothing is chosen on these questions (the rule has no parameter); both halves are printed. Writes
bench/results/api_names.json with the load average.

    uv run python bench/api_names.py [--packs packs/pydocs,bench/work/pydocs-whole] [--questions 100]
"""

from __future__ import annotations

import argparse
import functools
import json
import random
import re
import statistics
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from _common import arms_report, halves, header, packs_at, write_results

from wikigr.agent import KnowledgeGraphAgent
from wikigr.retrieval.api_names import same_api, shown_name
from wikigr.retrieval.page_index import PageIndex, defines
from wikigr.retrieval.profiles import DEFAULT_PROFILE
from wikigr.retrieval.sentences import split_units

ROOT = Path(__file__).resolve().parent.parent
ARMS = {"off": False, "on": True}


def spelled(fragment: str) -> str:
    """How a user writes the name: a method (``module.Class.method``) as ``Class.method``'s last
    two parts when its class is written in lower case as the module (``socket.socket.settimeout``:
    ``socket.settimeout``), else whole."""
    parts = fragment.split(".")
    if len(parts) == 3 and parts[0] == parts[1]:
        return ".".join(parts[1:])
    return fragment


def questions(pack: Path, count: int, seed: int = 7) -> list[dict[str, Any]]:
    """``count`` link targets of ``pack`` defined on their library page, as questions."""
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None) as agent:
        index = PageIndex.of(agent.context)
        store = agent.context.store
        targets = sorted(
            (page, fragment)
            for found in index.fragments.values()
            for page, fragment in found
            if "." in fragment and "/library/" in index.urls[page] and re.fullmatch(r"[\w.]+", fragment)
        )
        random.Random(seed).shuffle(targets)
        out: list[dict[str, Any]] = []
        for page, fragment in targets:
            rows = [i for i, p in enumerate(index.chunk_page.tolist()) if p == page]
            hits = store.chunk_details({index.chunk_ids[i]: 0.0 for i in rows})
            if not any(defines(hit.text, fragment) for hit in hits):
                continue  # no chunk shows it: nothing for the rule to find
            name = spelled(fragment)
            out.append(
                {
                    "question": f"What does {name} do?",
                    "name": name,
                    "fragment": fragment,
                    "page": index.urls[page],
                }
            )
            if len(out) >= count:
                break
    return out


def first_sentence(answer: str) -> str:
    match = re.match(r"(.+?)\s\[\d+\]", answer, re.S)
    return match.group(1) if match else answer


def run(pack: Path, asked: list[dict[str, Any]], on: bool) -> list[dict[str, Any]]:
    rows = []
    options = {"page_score": {"defined_names": on}}
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, options=options) as agent:
        agent.query("warm up")
        for q in asked:
            start = time.perf_counter()
            result = agent.query(q["question"])
            ms = (time.perf_counter() - start) * 1000
            top = result.sources[0] if result.sources else None
            rows.append(
                {
                    "page@1": bool(top) and top.url.split("#", 1)[0] == q["page"].split("#", 1)[0],
                    "defines@1": bool(top) and defines(top.text, q["fragment"]),
                    "anchor@1": bool(top) and top.url.endswith("#" + q["fragment"]),
                    "answer_leads": same_api(shown_name(first_sentence(result.answer)), q["name"]),
                    "query_ms": ms,
                }
            )
    return rows


PUBLIC = "https://docs.python.org/3.11/"
DOCQA = ROOT.parent / "shared" / "data" / "docqa" / "conala_dev_python311doc.json"


DOCS = Path("/usr/share/doc/python3.11/html")


def library_pages(pack: Path) -> Iterator[tuple[PageIndex, int, Path, list[str]]]:
    """Each library page of ``pack`` that Debian's python3.11-doc has: the pack's page index, the
    page's number in it, its HTML file and the texts of its chunks."""
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None) as agent:
        index = PageIndex.of(agent.context)
        for page, url in enumerate(index.urls):
            local = DOCS / url.removeprefix(PUBLIC).partition("#")[0]
            if "/library/" in url and local.is_file():
                rows = range(len(index.chunk_ids))
                chunks = [index.chunk_ids[r] for r in rows if index.chunk_page[r] == page]
                yield index, page, local, list(agent.context.store.chunk_texts(chunks).values())


def inferred_anchors(pack: Path) -> dict[str, Any]:
    """Every definition line of the pack's library pages (``PageIndex.definitions_in``): how many
    have an anchor, known (a link target) or given by their siblings, and how many of each are an
    ``id`` of the page's HTML (Debian's python3.11-doc: what the citation's link lands on)."""
    counts = {"definitions": 0, "known": 0, "known_in_html": 0, "inferred": 0, "inferred_in_html": 0}
    for index, page, local, texts in library_pages(pack):
        ids = set(re.findall(r'\bid="([^"]+)"', local.read_text(errors="replace")))
        seen: set[str] = set()
        for text in texts:
            for line, _following, anchor, known in index.definitions_in(text, page):
                if line in seen:  # the same line in two overlapping chunks
                    continue
                seen.add(line)
                counts["definitions"] += 1
                if anchor:
                    kind = "known" if known else "inferred"
                    counts[kind] += 1
                    counts[f"{kind}_in_html"] += anchor in ids
    return counts


def _plain(text: str) -> str:
    return re.sub(r"\W+", " ", text).strip().casefold()


def _descriptions(page: Path) -> dict[str, list[str]]:
    """Each ``<dt id>`` of an HTML page with the plain text of its ``<dd>`` (a name defined twice:
    both)."""
    from selectolax.lexbor import LexborHTMLParser

    found: dict[str, list[str]] = {}
    for term in LexborHTMLParser(page.read_text(errors="replace")).css("dt[id]"):
        node = term.next  # past the signatures of an overloaded name (no id), to its first <dd> with text
        while node is not None and not (node.tag == "dd" and node.text(strip=True)):
            if node.tag == "dt" and "id" in node.attributes:
                break
            node = node.next
        if node is not None and node.tag == "dd":
            found.setdefault(term.attributes["id"] or "", []).append(_plain(node.text()))
    return found


def definition_scope(pack: Path) -> dict[str, int]:
    """Every sentence of the pack's library pages that the short answer quotes with the name of
    the definition it goes on describing (``Unit.owner_name``: past the definition's first sentence,
    up to the next signature): how many the page's HTML (Debian's python3.11-doc) holds in the
    ``<dd>`` of that name's ``<dt>`` (``inside``), how many it does not (``outside``: a paragraph
    after the definition ended, named all the same), and how many name no ``<dt>`` of the page
    (``unchecked``; a method shown without its class, "close()", is checked against every
    ``<dt>`` of that name: ``io.RawIOBase.close``, ``socket.socket.close``...)."""
    counts = {"sentences": 0, "inside": 0, "outside": 0, "unchecked": 0}
    for _, _, local, texts in library_pages(pack):
        described = _descriptions(local)
        seen: set[str] = set()
        for text in texts:
            for unit in split_units(text):
                if not unit.owner_name or unit.text in seen:  # (overlapping chunks)
                    continue
                seen.add(unit.text)
                counts["sentences"] += 1
                name = unit.owner_name.removesuffix("()")
                entries = described.get(name) or [  # a method shown without its class: "close()"
                    dd for key, dds in described.items() if key.endswith(f".{name}") for dd in dds
                ]
                if not entries:
                    counts["unchecked"] += 1
                else:
                    inside = any(_plain(unit.text)[:60] in dd for dd in entries)
                    counts["inside" if inside else "outside"] += 1
    return counts


def _entry(url: str) -> bool:
    """Whether ``url`` is cited at an API's entry (``#str.join``), not a section (``#module-os``,
    ``#socket-objects``)."""
    fragment = url.partition("#")[2]
    return "." in fragment and not fragment.startswith("module-")


def conala(pack: Path, on: bool) -> list[dict[str, Any]]:
    """Per CoNaLa question: is its first source, or one of its first five, cited at a gold anchor."""
    rows = []
    options = {"page_score": {"defined_names": on}}
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, options=options) as agent:
        for q in json.loads(DOCQA.read_text()):
            if not q["all_gold_in_python_docs"]:
                continue
            gold = {g for g in q["gold_python311_html"] if "#" in g}
            cited = [s.url.removeprefix(PUBLIC) for s in agent.query(q["nl"]).sources[:5]]
            entries = [c for c in cited if _entry(c)]  # cited at an API's entry
            rows.append(
                {
                    "anchor@1": bool(cited) and cited[0] in gold,
                    "anchor@5": bool(gold & set(cited)),
                    "entries": len(entries),
                    "gold_entries": sum(c in gold for c in entries),
                }
            )
    return rows


def shares(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The shares of questions, and the citations at an API's entry (a dotted anchor) among their
    first five sources: how many, and how many of them are a gold anchor."""
    n = len(rows)
    return {
        "questions": n,
        "anchor@1_%": round(100 * sum(r["anchor@1"] for r in rows) / n, 1),
        "anchor@5_%": round(100 * sum(r["anchor@5"] for r in rows) / n, 1),
        "entry_citations": sum(r["entries"] for r in rows),
        "gold_entry_citations": sum(r["gold_entries"] for r in rows),
    }


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    out: dict[str, Any] = {"questions": n}
    for key in ("page@1", "defines@1", "anchor@1", "answer_leads"):
        out[f"{key}_%"] = round(100 * sum(r[key] for r in rows) / n, 1)
    ms = sorted(r["query_ms"] for r in rows)
    out["query_ms_p50"] = round(statistics.median(ms), 1)
    out["query_ms_p95"] = round(ms[int(0.95 * (n - 1))], 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description="questions naming an API: the definition first?")
    parser.add_argument("--packs", default="packs/pydocs,bench/work/pydocs-whole")
    parser.add_argument("--questions", type=int, default=100)
    parser.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "api_names.json")
    args = parser.parse_args()
    result: dict[str, Any] = {**header(), "packs": {}}
    for name, pack in packs_at(ROOT, args.packs):
        asked = questions(pack, args.questions)
        report = arms_report(name, asked, ARMS, functools.partial(run, pack, asked), summarize)
        if DOCS.is_dir():
            report["anchors"] = inferred_anchors(pack)
            print(f"{name:24s} anchors {json.dumps(report['anchors'])}", flush=True)
            report["definition_scope"] = definition_scope(pack)
            print(f"{name:24s} definition_scope {json.dumps(report['definition_scope'])}", flush=True)
        if DOCQA.is_file():
            report["conala"] = {}
            for arm, on in ARMS.items():
                report["conala"][arm] = halves(conala(pack, on), shares)
                print(f"{name:24s} conala {arm:4s} {json.dumps(report['conala'][arm])}", flush=True)
        result["packs"][name] = report
    write_results(result, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
