"""The offline short answer (wikigr/retrieval/short_answer.py): does it keep the answer that the
retrieved passages hold, in a tenth of their length?

On MuSiQue-100 and HotpotQA-100 (../shared/data/multihop: gold answers and aliases) over the packs
bench/multihop.py builds (bench/work/musique-100, hotpotqa-100), with the default profile and no
LLM, per question:

- ``in_passages``: the gold answer (or an alias), normalised as for exact match, appears in the
  top 5 passages (the sources [1]-[5]);
- ``in_answer``: it appears in the short answer (the answer `wikigr query` prints, without the
  sources); the target is ``in_answer / in_passages`` >= 0.80;
- ``in_lead``: it appears in the answer before its list of other candidates ("Also possible:
  ...", names without their sentences): the quoted sentences alone (``lead_ratio``: over
  ``in_passages``);
- ``ratio_95``: the ratio's 95% interval (Wilson score: the questions whose passages hold the
  gold are the sample; a half of 36 of them cannot tell 0.64 from 0.75);
- ``length``: the short answer's words over the top 5 passages' words (target <= 10%), as the mean
  of the questions' ratios and as the ratio of the sums.

Seven arms, and up to two more: the default short answer; the same without the pack's
definitions (`no_definitions`: a how-to answer as before 2026-11-29's definitions) and also with
the API weights of before them (`no_definitions_weights_before`: named 1, page 0.5); the how-to
answer of before the runners-up by merit (`before_merit`: named 2, the runners-up "Also: ..." within
``also_margin`` of the best by their score, their page's rank counted) and with only the
runners-up by merit, their score without their page's rank (`named_2`: named 2); the same
without its cap of 10% of the passages' length (`no_share_cap`: up to 60 words), which shows what
the cap costs; the open
questions' sentences ranked with the factoid questions' weights and the selection options of
before (`one_weighting`), which shows what their own weights (`open_weights`) bring; when the last
--tune chose an answer shape (candidates quoted and listed, their parts' words) other than the
defaults, that shape (`searched_shape`); and, when `--tune --fit open --dense` wrote
answers_tuning_dense.json, those weights and options (`open_dense`: the sentences of open
questions embedded, at their cost in time).

HotpotQA's yes/no questions are left out (a sentence of a passage never says "yes"). On the Python
docs questions of bench/docqa.py (CoNaLa, gold: a function's anchor such as
library/stdtypes.html#str.join) over bench/work/pydocs-whole and packs/pydocs: the share whose short
answer names the gold function (``join(`` or ``str.join``), whose short answer cites a source on
the gold page, either (``in_answer``), and the share whose top 5 passages name the function or
come from the gold page (``in_passages``); and ``on_topic``: the share of the quoted sentences that
name the function or come from the gold page (a sentence from elsewhere may still help, so this
counts against the answer's filler, roughly).

The weights are chosen on the first half of each set (MuSiQue and HotpotQA 1-50, docs 1-66: `dev`)
with --tune — a listwise model fitted to rank first the sentences that hold the gold (one for the
factoid questions, one for the open ones: the docs questions, "how do I ..."), another (on
MuSiQue and HotpotQA) to rank first the answer candidates that hold it, then a coordinate search of
the options (min_relative, same_source, follow; window_words, next_window_words, max_candidates,
listed, candidate_margin, one_hop, max_sentences; --fit candidates fits only the candidates'
weights, --fit open only the sentence weights of open questions: the docs questions; --dense
embeds every sentence first, so that the fit may weigh ``dense``) for
the share of answers holding the gold (on the docs: naming the function, since
citing the gold page would reward quoting many pages), an answer over 10% of the passages' length
penalised — and reported on the second half (`test`); both halves and all are printed. The report
itself runs the real path: KnowledgeGraphAgent(pack, llm=None).query(question).answer. Writes
bench/results/answers.json (the tuning to answers_tuning.json) with the load average.

--cv (MuSiQue and HotpotQA): what the candidate ranking can reach. Per half, how many questions
whose passages hold the gold have an answer candidate holding it, and how high the shipped weights
rank it; then the candidate model refitted by cross-validation on the dev halves, for a few L2
penalties (:func:`candidate_cv`). Writes bench/results/answers_cv.json.

    uv run python bench/answers.py [--work bench/work] [--datasets musique,hotpotqa,docs,pydocs]
    uv run python bench/answers.py --tune [--fit all|candidates|open] [--dense]
    uv run python bench/answers.py --tune --fit open --dense --out bench/results/answers_tuning_dense.json
    uv run python bench/answers.py --cv [--datasets musique,hotpotqa]
"""

from __future__ import annotations

import argparse
import dataclasses
import itertools
import json
import math
import os
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from wikigr import __version__
from wikigr.agent import KnowledgeGraphAgent
from wikigr.eval.metrics import normalize_answer
from wikigr.pack.pack import open_pack
from wikigr.retrieval import sentence_scores as ss
from wikigr.retrieval import short_answer as sa
from wikigr.retrieval.candidates import CANDIDATE_FEATURES
from wikigr.retrieval.pipeline import run_stages
from wikigr.retrieval.profiles import DEFAULT_PROFILE
from wikigr.retrieval.sentences import strip_citations
from wikigr.retrieval.stage import QueryState
from wikigr.retrieval.stages.synthesize import SynthesizeStage

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "data"
DOCQA = SHARED / "docqa" / "conala_dev_python311doc.json"
PUBLIC = "https://docs.python.org/3.11/"
TOP = 5
# The default short answer; the same without its cap of 10% of the passages' length (60 words);
# and with open questions ("how do I ...") ranked as factoid ones, as before they had their own
# weights (with the selection options of then: same_source 2, follow 2). (And dense_arm().)
ARMS: list[tuple[str, dict[str, Any] | None]] = [
    ("default", None),
    ("no_share_cap", {"synthesize": {"max_share": 1.0}}),
    ("one_weighting", {"synthesize": {"open_weights": ss.DEFAULT_WEIGHTS, "same_source": 2, "follow": 2}}),
    # a how-to answer without the pack's definitions (defined_top/defined_passages 0), and also with
    # the API weights of before them (named 1, page 0.5): what each part of that change moved
    ("no_definitions", {"synthesize": {"defined_top": 0, "defined_passages": 0}}),
    (
        "no_definitions_weights_before",
        {"synthesize": {"defined_top": 0, "defined_passages": 0, "api_weights": {"named": 1.0, "page": 0.5}}},
    ),
    # a how-to answer as before the runners-up by merit (named 2; "Also:" by score, the page's rank
    # counted), and with only the runners-up by merit (named 2): what each part of that change moved
    ("before_merit", {"synthesize": {"api_weights": {"named": 2.0}, "also_with_page": True}}),
    ("named_2", {"synthesize": {"api_weights": {"named": 2.0}}}),
]
DENSE_TUNING = ROOT / "bench" / "results" / "answers_tuning_dense.json"  # --tune --fit open --dense


TUNING = ROOT / "bench" / "results" / "answers_tuning.json"  # --tune
SHAPE_KEPT = ("max_candidates", "listed", "window_words", "next_window_words", "candidate_margin", "one_hop")


def searched_arm() -> tuple[str, dict[str, Any]] | None:
    """The arm of the answer's shape as the last ``--tune`` searched it (how many candidates quoted
    and listed, how long their parts), when it differs from the defaults (the defaults are the
    shape the search chose on the fresh bench packs, 2026-11-25: see docs/benchmarks.md)."""
    if not TUNING.is_file():
        return None
    tuned = json.loads(TUNING.read_text())
    defaults = dataclasses.asdict(ss.AnswerOptions())
    changed = {k: tuned[k] for k in SHAPE_KEPT if k in tuned and tuned[k] != defaults[k]}
    return ("searched_shape", {"synthesize": changed}) if changed else None


def dense_arm() -> tuple[str, dict[str, Any]] | None:
    """The arm of the open questions' weights fitted with ``dense`` (their sentences embedded), as
    ``--tune --fit open --dense`` chose them, if that tuning was run."""
    if not DENSE_TUNING.is_file():
        return None
    tuned = json.loads(DENSE_TUNING.read_text())
    kept = ("open_weights", "max_sentences", "same_source", "follow", "min_relative")
    return "open_dense", {"synthesize": {k: tuned[k] for k in kept}}


_CITED = re.compile(r"(.+?)\s\[(\d+)\][.!?…]*")  # a quoted sentence and its citation


def load_multihop(name: str) -> list[dict[str, Any]]:
    if name == "musique":
        data = json.loads((SHARED / "multihop" / "musique_train100" / "musique_train.json").read_text())
        return [
            {"id": q["id"], "question": q["question"], "truths": [q["answer"], *q.get("answer_aliases", [])]}
            for q in data
        ]
    data = json.loads((SHARED / "multihop" / "hotpotqa_train100" / "hotpotqa_train.json").read_text())
    return [{"id": q["_id"], "question": q["question"], "truths": [q["answer"]]} for q in data]


def load_docs() -> list[dict[str, Any]]:
    out = []
    for q in json.loads(DOCQA.read_text()):
        if q["all_gold_in_python_docs"]:
            gold = q["gold_python311_html"]
            out.append(
                {
                    "id": q["question_id"],
                    "question": q["nl"],
                    "pages": {g.split("#", 1)[0] for g in gold},
                    "functions": [g.split("#", 1)[1] for g in gold if "#" in g],
                }
            )
    return out


def contains(text: str, truths: list[str]) -> bool:
    normal = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(t)} " in normal for t in truths if normalize_answer(t))


def names_function(text: str, functions: list[str]) -> bool:
    """Whether ``text`` names one of the functions: its last part called (``join(``) or its
    whole dotted name (``str.join``)."""
    for name in functions:
        last = name.rsplit(".", 1)[-1]
        if re.search(rf"(?<![\w]){re.escape(last)}\s*\(", text) or ("." in name and name in text):
            return True
    return False


def page(url: str) -> str:
    return url.split("#", 1)[0].removeprefix(PUBLIC)


def words(text: str) -> int:
    return len(text.split())


# -- the report: the real path ------------------------------------------------------------------


def report_rows(
    pack: Path, questions: list[dict[str, Any]], kind: str, options: dict[str, Any] | None = None
) -> list[dict[str, Any]]:
    rows = []
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, top_k=TOP, options=options) as agent:
        for q in questions:
            start = time.perf_counter()
            result = agent.query(q["question"])
            ms = (time.perf_counter() - start) * 1000
            synth = sum(s["ms"] for s in result.trace["stages"] if s["stage"] == "synthesize")
            gate = next((s.get("detail") or {} for s in result.trace["stages"] if s["stage"] == "gate"), {})
            answer = strip_citations(result.answer)
            passages = " ".join(s.text for s in result.sources[:TOP])
            row: dict[str, Any] = {
                "answer_words": words(answer),
                "passage_words": words(passages),
                "synthesize_ms": synth,
                "query_ms": ms,
                "absent": gate.get("absent", []),  # the words the answer says the pack never mentions
            }
            if kind == "docs":
                cited = {int(n) for n in re.findall(r"\[(\d+)\]", result.answer)}
                cited_pages = {page(result.sources[n - 1].url) for n in cited if 0 < n <= len(result.sources)}
                row["names_function"] = names_function(answer, q["functions"])
                row["cites_page"] = bool(cited_pages & q["pages"])
                row["in_answer"] = row["names_function"] or row["cites_page"]
                top_pages = {page(s.url) for s in result.sources[:TOP]}
                row["in_passages"] = names_function(passages, q["functions"]) or bool(top_pages & q["pages"])
                quoted = [(m.group(1), int(m.group(2))) for m in _CITED.finditer(result.answer)]
                row["sentences"] = len(quoted)
                row["on_topic"] = sum(
                    names_function(text, q["functions"])
                    or (0 < n <= len(result.sources) and page(result.sources[n - 1].url) in q["pages"])
                    for text, n in quoted
                )
            else:
                row["in_answer"] = contains(answer, q["truths"])
                row["in_lead"] = contains(sa.asserted(answer), q["truths"])
                row["in_passages"] = contains(passages, q["truths"])
            rows.append(row)
    return rows


def wilson(hits: int, n: int, z: float = 1.96) -> list[float] | None:
    """The 95% (Wilson score) interval of the share ``hits / n``: what a half of 36 questions can
    tell (0.639 there is anything from about 0.48 to 0.78)."""
    if not n:
        return None
    share = hits / n
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return [round(centre - half, 3), round(centre + half, 3)]


def summarize(rows: list[dict[str, Any]]) -> dict[str, Any]:
    n = len(rows)
    in_answer = sum(r["in_answer"] for r in rows)
    in_passages = sum(r["in_passages"] for r in rows)
    out: dict[str, Any] = {
        "questions": n,
        "in_passages_%": round(100 * in_passages / n, 1),
        "in_answer_%": round(100 * in_answer / n, 1),
        "ratio": round(in_answer / in_passages, 3) if in_passages else None,
        "ratio_95": wilson(min(in_answer, in_passages), in_passages),
        "length_mean_%": round(
            100 * statistics.mean(r["answer_words"] / max(1, r["passage_words"]) for r in rows), 1
        ),
        "length_total_%": round(
            100 * sum(r["answer_words"] for r in rows) / max(1, sum(r["passage_words"] for r in rows)), 1
        ),
        "answer_words_mean": round(statistics.mean(r["answer_words"] for r in rows), 1),
        "synthesize_ms_p50": round(statistics.median(r["synthesize_ms"] for r in rows), 1),
        "synthesize_ms_p95": round(sorted(r["synthesize_ms"] for r in rows)[int(0.95 * (n - 1))], 1),
        "never_mentions": sum(bool(r["absent"]) for r in rows),  # answers that say what the pack lacks
        "never_mentions_words": sorted({w for r in rows for w in r["absent"]}),
    }
    if "in_lead" in rows[0]:
        in_lead = sum(r["in_lead"] for r in rows)
        out["in_lead_%"] = round(100 * in_lead / n, 1)
        out["lead_ratio"] = round(in_lead / in_passages, 3) if in_passages else None
    if "names_function" in rows[0]:
        out["names_function_%"] = round(100 * sum(r["names_function"] for r in rows) / n, 1)
        out["cites_page_%"] = round(100 * sum(r["cites_page"] for r in rows) / n, 1)
        quoted = sum(r["sentences"] for r in rows)
        out["on_topic_%"] = round(100 * sum(r["on_topic"] for r in rows) / max(1, quoted), 1)
    return out


def halves(rows: list[dict[str, Any]]) -> dict[str, Any]:
    half = len(rows) // 2
    return {"dev": summarize(rows[:half]), "test": summarize(rows[half:]), "all": summarize(rows)}


# -- tuning: sentences scored once, weights searched -------------------------------------------


@dataclasses.dataclass
class Prepared:
    question: str
    features: list[ss.Scored]  # every sentence of the top passages (embedded with --dense: see ranked())
    check: Callable[[str], bool]  # whether a short answer (or a candidate) holds the gold
    passage_words: int
    reported: Callable[[str], bool]  # whether the report counts the answer as holding the gold
    in_passages: bool  # whether the report counts the top passages as holding it


def prepare(pack: Path, questions: list[dict[str, Any]], kind: str, dense: bool = False) -> list[Prepared]:
    """The questions' sentences with their signals, scored once for the search of the weights;
    with ``dense``, every sentence embedded (else ``dense`` stays 0, and so does its weight)."""
    out = []
    options = ss.AnswerOptions()
    with KnowledgeGraphAgent(pack, profile=DEFAULT_PROFILE, llm=None, top_k=TOP) as agent:
        retrieval = [s for s in agent.stages if s.name != "synthesize"]
        synthesize = SynthesizeStage()
        for q in questions:
            state = QueryState(question=q["question"], ctx=agent.context, top_k=TOP)
            run_stages(retrieval, state)
            passages = synthesize.passages(state)
            features = ss.sentence_features(state, passages, options)
            if dense:  # all of them: ranked() keeps those the options would embed
                ss.add_dense(state, features)
            if kind == "docs":  # naming the function: citing the page would reward quoting many pages

                def check(answer: str, q: dict[str, Any] = q) -> bool:
                    return names_function(strip_citations(answer), q["functions"])
            else:

                def check(answer: str, q: dict[str, Any] = q) -> bool:
                    return contains(strip_citations(answer), q["truths"])

            text = " ".join(c.text for c in passages[:TOP])
            if kind == "docs":
                urls = [c.url for c in passages]

                def reported(answer: str, q: dict[str, Any] = q, urls: list[str] = urls) -> bool:
                    cited = {int(n) for n in re.findall(r"\[(\d+)\]", answer)}
                    pages = {page(urls[n - 1]) for n in cited if 0 < n <= len(urls)}
                    return names_function(strip_citations(answer), q["functions"]) or bool(pages & q["pages"])

                top_pages = {page(u) for u in urls[:TOP]}
                held = names_function(text, q["functions"]) or bool(top_pages & q["pages"])
            else:
                reported, held = check, check(text)
            out.append(Prepared(q["question"], features, check, words(text), reported, held))
    return out


def ranked(p: Prepared, options: ss.AnswerOptions) -> list[ss.Scored]:
    """The sentences ranked as the stage ranks them (score_sentences): with the question's weights;
    when they weigh ``dense``, only the ``max_sentences`` best by the other signals (those the stage
    embeds)."""
    weights = options.weights_for(p.question)
    scored = ss.preselect(p.features, weights, options.max_sentences) if weights["dense"] else p.features
    return ss.rank(scored, weights)


def answer_with(p: Prepared, options: ss.AnswerOptions) -> str:
    return sa.answer_from(p.question, ranked(p, options), options, p.passage_words)


def objective(sets: dict[str, list[Prepared]], options: ss.AnswerOptions) -> tuple[float, dict[str, Any]]:
    """The mean share of answers holding the gold over the sets; lengths over 10% are penalised,
    and so is, ten times as much, a docs set whose reported ratio falls under the target of 0.8
    (the docs' share counts naming the function only, which says nothing of the pages the answer
    cites)."""
    detail = {}
    shares = []
    for name, prepared in sets.items():
        answers = [answer_with(p, options) for p in prepared]
        share = statistics.mean(p.check(a) for p, a in zip(prepared, answers, strict=True))
        length = statistics.mean(
            words(a) / max(1, p.passage_words) for p, a in zip(prepared, answers, strict=True)
        )
        held = sum(p.in_passages for p in prepared)
        ratio = sum(p.reported(a) for p, a in zip(prepared, answers, strict=True)) / max(1, held)
        detail[name] = {
            "in_answer": round(100 * share, 1),
            "length_%": round(100 * length, 1),
            "ratio": round(ratio, 3),
        }
        short_of_target = max(0.0, 0.8 - ratio) if name == "docs" else 0.0
        shares.append(share - max(0.0, length - 0.10) * 5 - 10 * short_of_target)
    return statistics.mean(shares), detail


def listwise(groups: list[tuple[list[list[float]], list[bool]]], l2: float = 0.01, steps: int = 3000) -> Any:
    """The weights of a listwise model: per group (a question), a softmax over its items' signals,
    fitted to put the probability on the items labelled true (gradient descent on standardised
    signals, L2 penalty ``l2``); returned on the signals' scale. Groups without a true item are
    left out."""
    import numpy as np

    rows: list[list[float]] = []
    labels: list[float] = []
    spans: list[tuple[int, int]] = []
    for features, held in groups:
        if any(held):
            spans.append((len(rows), len(rows) + len(held)))
            rows += features
            labels += [float(h) for h in held]
    x, y = np.asarray(rows), np.asarray(labels)
    scale = x.std(axis=0) + 1e-9
    z = (x - x.mean(axis=0)) / scale
    w = np.zeros(x.shape[1])
    for _ in range(steps):
        grad = np.zeros_like(w)
        for a, b in spans:
            logits = z[a:b] @ w
            p = np.exp(logits - logits.max())
            p /= p.sum()
            grad += z[a:b].T @ (p - y[a:b] / y[a:b].sum())
        w -= 0.5 * (grad / len(spans) + l2 * w)
    return w / scale


def fit_weights(sets: dict[str, list[Prepared]], open_questions: bool = False) -> dict[str, float]:
    """The sentence weights: a listwise model ranking first the sentences that hold the gold, over
    the factoid questions (``weights``) or the open ones (``open_weights``: the docs questions)."""
    groups = [
        (
            [[s.features[f] for f in ss.FEATURES] for s in p.features],
            [p.check(s.unit.text) for s in p.features],
        )
        for prepared in sets.values()
        for p in prepared
        if ss.open_question(p.question) == open_questions
    ]
    return {f: round(float(v), 3) for f, v in zip(ss.FEATURES, listwise(groups), strict=True)}


def fit_candidate_weights(sets: dict[str, list[Prepared]], options: ss.AnswerOptions) -> dict[str, float]:
    """The candidate weights: a listwise model ranking first the candidates that hold the gold
    (the sentences ranked with ``options.weights``)."""
    groups = []
    for prepared in sets.values():
        for p in prepared:
            found = sa.answer_candidates(p.question, ranked(p, options), options)
            features = [[c.features[f] for f in CANDIDATE_FEATURES] for c in found]
            groups.append((features, [p.check(c.text) for c in found]))
    weights = listwise(groups)
    return {f: round(float(v), 3) for f, v in zip(CANDIDATE_FEATURES, weights, strict=True)}


CV_L2 = (0.01, 0.03, 0.1, 0.3)  # the candidate model's L2 penalties compared by --cv (0.01: the fit's)
CV_RANKS = (1, 3, 9)  # the gold candidate ranked within: the lead, and the lead with 2 or 8 listed


def _gold_rank(scores: Any, held: list[bool]) -> int | None:
    """The rank (0: first) of the best-scored candidate holding the gold; None if none does."""
    import numpy as np

    ranks = [r for r, i in enumerate(np.argsort(-np.asarray(scores), kind="stable")) if held[i]]
    return ranks[0] if ranks else None


def _within(ranks: list[int | None]) -> dict[str, int]:
    return {"gold_candidate": sum(r is not None for r in ranks)} | {
        f"within_{k}": sum(r is not None and r < k for r in ranks) for k in CV_RANKS
    }


def candidate_cv(
    sets: dict[str, tuple[list[Prepared], list[Prepared]]], folds: int = 10, repeats: int = 3
) -> dict[str, Any]:
    """What the candidate ranking can reach, and how much of its dev figure is fitted to the dev
    questions. Per set and half, over the questions whose top passages hold the gold: how many
    have a candidate holding it, and how many rank it within the first 1, 3, 9 with the shipped
    weights (``shipped``). Then, on the dev halves pooled (as --tune fits them), the candidate
    model refitted by ``folds``-fold cross-validation (``repeats`` shuffles) for each L2 penalty
    of CV_L2: the same counts for the held-out folds (means over the shuffles) and their mean
    listwise loss (``nll``)."""
    import random

    import numpy as np

    options = ss.AnswerOptions()
    groups: dict[tuple[str, str], list[tuple[Any, list[bool]]]] = {}
    shipped: dict[str, Any] = {}
    for name, parts in sets.items():
        for half, prepared in zip(("dev", "test"), parts, strict=True):
            found = [
                (sa.answer_candidates(p.question, ranked(p, options), options), p)
                for p in prepared
                if p.in_passages
            ]
            held = [([p.check(c.text) for c in cs], cs) for cs, p in found]
            groups[name, half] = [
                (
                    np.asarray(
                        [[c.features[f] for f in CANDIDATE_FEATURES] for c in cs]
                        or np.zeros((0, len(CANDIDATE_FEATURES)))
                    ),
                    h,
                )
                for h, cs in held
            ]
            ranks = [_gold_rank([c.score for c in cs], h) for h, cs in held]
            shipped.setdefault(name, {})[half] = {"in_passages": len(found), **_within(ranks)}
    pooled = [(name, g) for (name, half), gs in groups.items() if half == "dev" for g in gs]
    cv: dict[str, Any] = {}
    for l2 in CV_L2:
        counts = {name: dict.fromkeys(_within([]), 0) for name in sets}
        losses = []
        for seed in range(repeats):
            order = list(range(len(pooled)))
            random.Random(seed).shuffle(order)
            for fold in range(folds):
                out = set(order[fold::folds])
                train = [(x.tolist(), h) for n, (_, (x, h)) in enumerate(pooled) if n not in out and len(h)]
                weights = listwise(train, l2=l2)
                for n in out:
                    name, (x, h) = pooled[n]
                    within = _within([_gold_rank(x @ weights if len(h) else [], h)])
                    counts[name] = {k: counts[name][k] + v for k, v in within.items()}
                    if any(h):
                        logits = x @ weights
                        p = np.exp(logits - logits.max())
                        losses.append(-math.log(float((p / p.sum())[np.asarray(h)].sum())))
        cv[str(l2)] = {
            "nll": round(statistics.mean(losses), 4),
            **{name: {k: round(v / repeats, 1) for k, v in c.items()} for name, c in counts.items()},
        }
    return {"shipped": shipped, "cv_dev": cv, "folds": folds, "repeats": repeats}


SELECTION = {  # the sentences' selection: searched together
    "min_relative": [0.0, 0.3, 0.5, 0.7],
    "same_source": [0.0, 0.5, 1.0, 2.0],
    "follow": [0.0, 0.5, 1.0, 2.0, 4.0],
}
SHAPE = {  # the candidates' answer: how many quoted, how many listed, how long the first part
    "max_candidates": [1, 2, 3, 4, 8],
    "listed": [0, 3, 5, 8, 12],
    "window_words": [10, 12, 15, 20, 25],
}
GRID = {  # ... then searched in turn
    "next_window_words": [6, 8, 10, 12, 15, 20],
    "candidate_margin": [0.5, 1.0, 2.0, 3.0, 5.0],
    "one_hop": [0.7, 0.8, 0.9, 1.0, 1.01],  # 1.01: never
    "max_sentences": [8, 12, 16, 24],  # embedded, when the weights weigh dense
}


FITS = {  # what --fit fits before the options are searched
    "all": ("weights", "open_weights", "candidate_weights"),
    "candidates": ("candidate_weights",),
    "open": ("open_weights",),
}


def tune(sets: dict[str, list[Prepared]], fit: str = "all") -> dict[str, Any]:
    """The weights ``fit`` names (the others stay as they are): the sentence weights of
    :func:`fit_weights` for factoid questions and for open ones, the candidate weights of
    :func:`fit_candidate_weights` (on the multi-hop sets: the docs questions are no factoid ones);
    then the best combination of the SELECTION options on the dev half, then that of the SHAPE
    options, then a coordinate search of the GRID options (each in turn takes its best value,
    twice over)."""
    options = ss.AnswerOptions()
    if "weights" in FITS[fit]:
        options = dataclasses.replace(options, weights=fit_weights(sets))
    if "open_weights" in FITS[fit]:
        options = dataclasses.replace(options, open_weights=fit_weights(sets, open_questions=True))
    factoid = {name: prepared for name, prepared in sets.items() if name in ("musique", "hotpotqa")}
    if factoid and "candidate_weights" in FITS[fit]:
        options = dataclasses.replace(options, candidate_weights=fit_candidate_weights(factoid, options))
    best, detail = objective(sets, options)
    steps = [{"options": "fitted weights", "objective": round(best, 4), **detail}]
    print(
        json.dumps(
            {
                "weights": options.weights,
                "open_weights": options.open_weights,
                "candidate_weights": options.candidate_weights,
                **steps[0],
            }
        ),
        flush=True,
    )
    trials = [
        [{name: value} for name, value in zip(grid, values, strict=True)]
        for grid in (SELECTION, SHAPE)
        for values in itertools.product(*grid.values())
    ]
    trials += [[{name: value}] for _ in range(2) for name, values in GRID.items() for value in values]
    for changes in trials:
        trial = options
        for change in changes:
            trial = dataclasses.replace(trial, **change)
        score, trial_detail = objective(sets, trial)
        if score > best + 1e-9:
            best, options, detail = score, trial, trial_detail
            label = ", ".join(f"{k}={v}" for change in changes for k, v in change.items())
            steps.append({"options": label, "objective": round(best, 4), **detail})
            print(json.dumps(steps[-1]), flush=True)
    return {
        "weights": options.weights,
        "open_weights": options.open_weights,
        "candidate_weights": options.candidate_weights,
        "fitted": ", ".join(FITS[fit]),
        **{name: getattr(options, name) for name in [*SELECTION, *SHAPE, *GRID]},
        "objective": round(best, 4),
        "dev": detail,
        "steps": steps,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description="the offline short answer against the top passages")
    parser.add_argument(
        "--work", type=Path, default=ROOT / "bench" / "work", help="where the bench packs are"
    )
    parser.add_argument("--datasets", default="musique,hotpotqa,docs,pydocs")
    parser.add_argument("--tune", action="store_true", help="choose the weights on the dev halves")
    parser.add_argument(
        "--fit",
        choices=sorted(FITS),
        default="all",
        help="--tune: the weights fitted (the others are kept): all, the candidates', the open questions'",
    )
    parser.add_argument(
        "--dense",
        action="store_true",
        help="--tune: embed the sentences, so that the fit may weigh dense (slower answers)",
    )
    parser.add_argument(
        "--cv",
        action="store_true",
        help="the candidate ranking's reach and its cross-validation on the dev halves (answers_cv.json)",
    )
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args()
    if not SHARED.is_dir():
        print(f"Error: {SHARED} not found (the shared data sets)", file=sys.stderr)
        return 1
    packs = {
        "musique": (args.work / "musique-100", "multihop"),
        "hotpotqa": (args.work / "hotpotqa-100", "multihop"),
        "docs": (args.work / "pydocs-whole", "docs"),
        "pydocs": (ROOT / "packs" / "pydocs", "docs"),
    }
    chosen = [d for d in args.datasets.split(",") if d]
    for name in chosen:
        if name not in packs or not (packs[name][0] / "manifest.json").is_file():
            print(f"Error: no pack for {name} at {packs.get(name, ('?',))[0]}", file=sys.stderr)
            return 1
    questions: dict[str, list[dict[str, Any]]] = {}
    for name in chosen:
        pack, kind = packs[name]
        questions[name] = load_docs() if kind == "docs" else load_multihop(name)
        if name == "hotpotqa":  # an extract never says yes or no
            questions[name] = [
                q for q in questions[name] if normalize_answer(q["truths"][0]) not in ("yes", "no")
            ]
    load_before = [round(x, 2) for x in os.getloadavg()]
    if args.cv:
        sets = {}
        for name in [n for n in chosen if packs[n][1] == "multihop"]:
            pack, kind = packs[name]
            prepared = prepare(pack, questions[name], kind)
            ids = [q["id"] for q in load_multihop(name)]
            dev = [ids.index(q["id"]) < 50 for q in questions[name]]
            sets[name] = (
                [p for p, d in zip(prepared, dev, strict=True) if d],
                [p for p, d in zip(prepared, dev, strict=True) if not d],
            )
        report = {"date": time.strftime("%Y-%m-%d"), "load_before": load_before, **candidate_cv(sets)}
        report["load_after"] = [round(x, 2) for x in os.getloadavg()]
        out = args.out or ROOT / "bench" / "results" / "answers_cv.json"
        out.write_text(json.dumps(report, indent=2) + "\n")
        print(json.dumps(report, indent=1))
        return 0
    if args.tune:
        dev = {}
        for name in chosen:
            pack, kind = packs[name]
            qs = questions[name]
            if name == "hotpotqa":
                qs = [q for q in load_multihop(name)[:50] if q in qs]
            else:
                qs = qs[: (50 if kind == "multihop" else len(qs) // 2)]
            dev[name] = prepare(pack, qs, kind, args.dense)
            print(f"prepared {name}: {len(qs)} dev questions", file=sys.stderr)
        tuning = {
            "date": time.strftime("%Y-%m-%d"),
            "load_before": load_before,
            **tune(dev, args.fit),
        }
        tuning["load_after"] = [round(x, 2) for x in os.getloadavg()]
        out = args.out or ROOT / "bench" / "results" / "answers_tuning.json"
        out.write_text(json.dumps(tuning, indent=2) + "\n")
        print(json.dumps({k: v for k, v in tuning.items() if k != "steps"}, indent=2))
        return 0
    arms = ARMS + [arm for arm in (searched_arm(), dense_arm()) if arm]
    results: dict[str, Any] = {
        "wikigr": __version__,
        "date": time.strftime("%Y-%m-%d"),
        "cores": os.cpu_count(),
        "load_before": load_before,
        # the default profile whatever the pack's kg_config.json says: a bench pack built before
        # auto was the default says balanced (the figures before 2026-11-25 were read with it)
        "profile": f"{DEFAULT_PROFILE} (the default), no LLM, top 5 passages",
        "options": dataclasses.asdict(ss.AnswerOptions()),
        "halves": "dev: MuSiQue/HotpotQA questions 1-50 and docs 1-66 (weights chosen there); test: the rest",
        "datasets": {},
    }
    for name in chosen:
        pack, kind = packs[name]
        qs = questions[name]
        built = open_pack(pack).manifest.created_at  # a cached pack's age (the store is not opened)
        results["datasets"][name] = {"pack": str(pack), "pack_built": built, "questions": len(qs)}
        if name == "hotpotqa":
            results["datasets"][name]["yes_no_left_out"] = 100 - len(qs)
        for arm, options in arms:
            rows = report_rows(pack, qs, kind, options)
            if name == "hotpotqa":  # halves by the question's place among the 100
                ids = [q["id"] for q in load_multihop(name)]
                dev = [ids.index(q["id"]) < 50 for q in qs]
                parts = {
                    "dev": summarize([r for r, d in zip(rows, dev, strict=True) if d]),
                    "test": summarize([r for r, d in zip(rows, dev, strict=True) if not d]),
                    "all": summarize(rows),
                }
            elif kind == "multihop":
                parts = {"dev": summarize(rows[:50]), "test": summarize(rows[50:]), "all": summarize(rows)}
            else:
                parts = halves(rows)
            results["datasets"][name][arm] = parts
    results["load_after"] = [round(x, 2) for x in os.getloadavg()]
    out = args.out or ROOT / "bench" / "results" / "answers.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")
    columns = (
        "in_passages_%",
        "in_answer_%",
        "ratio",
        "ratio_95",
        "lead_ratio",
        "length_mean_%",
        "answer_words_mean",
        "synthesize_ms_p50",
    )
    print(f"{'set':<10}{'arm':<16}{'half':<6}" + "".join(f"{c:>19}" for c in columns))
    for name, data in results["datasets"].items():
        for arm, _ in arms:
            for part in ("dev", "test", "all"):
                cells = "".join(f"{data[arm][part].get(c)!s:>19}" for c in columns)
                print(f"{name:<10}{arm:<16}{part:<6}" + cells)
            if "names_function_%" in data[arm]["all"]:
                for part in ("dev", "test", "all"):
                    named, cited = data[arm][part]["names_function_%"], data[arm][part]["cites_page_%"]
                    on_topic = data[arm][part]["on_topic_%"]
                    print(
                        f"{'':<26}{part:<6} names the function {named}%, cites the page {cited}%,"
                        f" quoted sentences on topic {on_topic}%"
                    )
    print(f"load average {results['load_before']} -> {results['load_after']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
