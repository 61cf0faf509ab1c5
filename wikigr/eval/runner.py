"""``wikigr eval``: run a pack's questions through one or more profiles and score them.

Results go to ``eval/results/<timestamp>-<profile>.json`` (every question: retrieved sources,
ranks, answer, metrics, latency, tokens; and a summary); the manifest's ``eval_scores`` records the
latest run of each profile, with its date. Progress is appended to
``eval/results/.<profile>.partial.jsonl`` as questions finish, so an interrupted evaluation
resumes where it stopped (same questions and settings). Evaluating never writes the pack's
store: it is opened read-only.
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal
from urllib.parse import unquote

from wikigr import schema
from wikigr.agent import AgentResult, KnowledgeGraphAgent
from wikigr.errors import UsageError
from wikigr.eval import metrics
from wikigr.eval.judges import ClaudeJudge, OfflineJudge, Verdict
from wikigr.eval.questions import Question, load_questions
from wikigr.home import write_atomic
from wikigr.pack import pack as layout
from wikigr.pack.kind import pack_kind
from wikigr.pack.manifest import EvalScores, now_iso
from wikigr.pack.pack import Pack, open_pack
from wikigr.progress import ProgressCallback, ProgressEvent, no_progress
from wikigr.retrieval.profiles import PROFILES, profile_applies

JudgeName = Literal["none", "offline", "claude"]
DEFAULT_KS = (1, 2, 5, 10)
#: Told of each question's row as it is scored (or resumed): the profile, the row (as the results
#: file holds it). ``wikigr serve``'s comparison fills its table with them.
RowCallback = Callable[[str, dict[str, Any]], None]


@dataclass
class EvalOptions:
    profiles: list[str] = field(default_factory=list)  # empty: the pack's default profile
    all_profiles: bool = False  # every profile that applies to the pack's kind (the others are noted)
    ks: tuple[int, ...] = DEFAULT_KS
    judge: JudgeName = "none"
    limit: int | None = None
    questions: Path | None = None  # default: the pack's eval/questions.jsonl
    fresh: bool = False  # ignore an interrupted run's progress
    timeout: float | None = None  # Claude's time budget per answer and per judgement (WIKIGR_TIMEOUT)


@dataclass
class ProfileReport:
    profile: str
    summary: dict[str, Any]
    results_file: Path
    resumed: int


class Evaluation(list[ProfileReport]):
    """The report of each profile evaluated, in order, and ``notes``: what was not evaluated, and
    why (one line each)."""

    def __init__(self, reports: list[ProfileReport], notes: list[str]) -> None:
        super().__init__(reports)
        self.notes = notes


class GoldIndex:
    """Resolves gold sources (URLs, article titles, passage ids) to the pack's article ids."""

    def __init__(self, rows: list[list[Any]]) -> None:
        self.by_url: dict[str, str] = {}
        self.by_title: dict[str, list[str]] = {}
        for article_id, url, title in rows:
            for key in (article_id, url):
                if key:
                    self.by_url.setdefault(self._url_key(key), article_id)
            self.by_title.setdefault(title, []).append(article_id)

    @staticmethod
    def _url_key(url: str) -> str:
        return unquote(url.split("#", 1)[0]).rstrip("/")

    def resolve(self, gold: str) -> list[str]:
        if "://" in gold or gold.startswith("passage:"):
            found = self.by_url.get(self._url_key(gold))
            return [found] if found else []
        if gold in self.by_title:
            return self.by_title[gold]
        passage = self.by_url.get(self._url_key("passage:" + gold))
        return [passage] if passage else []


def _settings_key(questions: list[Question], options: EvalOptions, profile: str, stages: list[str]) -> str:
    payload = json.dumps(
        {
            "questions": [q.to_json() for q in questions],
            "ks": list(options.ks),
            "judge": options.judge,
            "profile": profile,
            "stages": stages,
        },
        sort_keys=True,
    )
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def _load_partial(path: Path, key: str) -> dict[str, dict[str, Any]]:
    if not path.is_file():
        return {}
    done: dict[str, dict[str, Any]] = {}
    lines = schema.json_lines(path.read_text(encoding="utf-8", errors="replace"))
    try:
        header = schema.parse_json(lines[0]) if lines else {}
    except schema.JSONError:
        return {}
    if not isinstance(header, dict) or header.get("settings") != key:
        return {}
    for line in lines[1:]:
        try:
            row = schema.parse_json(line)
        except schema.JSONError:
            break  # a line cut by the interruption: redo that question
        if not isinstance(row, dict) or not isinstance(row.get("id"), str):
            break
        done[row["id"]] = row
    return done


def _percentile(values: list[float], q: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))
    return ordered[index]


def _mean(values: list[float]) -> float | None:
    return round(statistics.mean(values), 4) if values else None


def summarize(rows: list[dict[str, Any]], ks: tuple[int, ...]) -> dict[str, Any]:
    """Overall and per-type metrics. Retrieval metrics count only questions whose gold sources are
    all in the pack; questions without gold, or with gold outside the pack, are counted apart."""

    def block(subset: list[dict[str, Any]]) -> dict[str, Any]:
        scored = [r for r in subset if r["gold_status"] == "ok"]
        answered = [r for r in subset if r["metrics"].get("f1") is not None]
        judged = [r for r in subset if r["metrics"].get("judge_correct") is not None]
        out: dict[str, Any] = {
            "questions": len(subset),
            "retrieval_scored": len(scored),
            "no_gold": sum(1 for r in subset if r["gold_status"] == "none"),
            "gold_not_in_pack": sum(1 for r in subset if r["gold_status"] == "not_in_pack"),
        }
        for k in ks:
            out[f"recall@{k}"] = _mean([r["metrics"][f"recall@{k}"] for r in scored])
            out[f"hit@{k}"] = _mean([r["metrics"][f"hit@{k}"] for r in scored])
        out["mrr"] = _mean([r["metrics"]["mrr"] for r in scored])
        out["exact_match"] = _mean([r["metrics"]["exact_match"] for r in answered])
        out["f1"] = _mean([r["metrics"]["f1"] for r in answered])
        out["judge_accuracy"] = _mean([float(r["metrics"]["judge_correct"]) for r in judged])
        for name in ("grounding", "reasoning", "completeness"):
            values = [r["metrics"][name] for r in subset if name in r["metrics"]]
            if values:
                out[name] = _mean(values)
        latencies = [r["latency_ms"] for r in subset]
        out["latency_p50_ms"] = round(_percentile(latencies, 50), 2)
        out["latency_p95_ms"] = round(_percentile(latencies, 95), 2)
        out["input_tokens"] = sum(r["tokens"]["input"] for r in subset)
        out["output_tokens"] = sum(r["tokens"]["output"] for r in subset)
        return out

    summary = block(rows)
    types = sorted({r["type"] for r in rows if r["type"]})
    summary["by_type"] = {t: block([r for r in rows if r["type"] == t]) for t in types}
    return summary


class Evaluator:
    def __init__(
        self,
        pack: Pack,
        options: EvalOptions,
        on_progress: ProgressCallback | None = None,
        on_row: RowCallback | None = None,
    ) -> None:
        self.pack = pack
        self.options = options
        self.progress = on_progress or no_progress
        self.on_row = on_row
        if any(k < 1 for k in options.ks):
            raise UsageError("every k must be at least 1")
        path = options.questions or pack.path / layout.QUESTIONS_FILE
        questions = load_questions(path)
        if options.limit is not None:
            if options.limit < 1:
                raise UsageError("--limit must be at least 1")
            questions = questions[: options.limit]
        if not questions:
            hint = ""
            if options.questions is None:  # the pack's own file: say what fills it
                hint = ": add some with `wikigr eval import PACK SOURCE --format FORMAT`"
                if pack_kind(pack.manifest.source_kind).passages:  # generate asks about sections
                    hint += " or `wikigr eval generate PACK` (needs ANTHROPIC_API_KEY)"
            raise UsageError(f"no questions in {path}{hint}")
        self.questions = questions

    def run(self) -> Evaluation:
        profiles: list[str] = self.options.profiles or [""]
        notes = []
        if self.options.all_profiles:
            if self.options.profiles:
                raise UsageError("give profiles or all profiles, not both")
            kind = self.pack.manifest.source_kind
            profiles = [p for p in PROFILES if profile_applies(p, kind)]
            skipped = [p for p in PROFILES if p not in profiles]
            if skipped:
                notes.append(
                    f"skipped profiles {', '.join(skipped)}: no stage of them applies to {kind} packs"
                )
        return Evaluation([self._run_profile(p or None) for p in profiles], notes)

    def _judge(self, agent: KnowledgeGraphAgent) -> OfflineJudge | ClaudeJudge | None:
        if self.options.judge == "offline":
            return OfflineJudge(agent.context.embedder)
        if self.options.judge == "claude":
            if agent.llm is None:
                raise UsageError("--judge claude needs Claude: set ANTHROPIC_API_KEY")
            return ClaudeJudge(agent.llm)
        return None

    def _run_profile(self, profile: str | None) -> ProfileReport:
        with KnowledgeGraphAgent(
            self.pack, profile=profile, top_k=max(self.options.ks), timeout=self.options.timeout
        ) as agent:
            articles = "MATCH (a:Article) RETURN a.id, a.url, a.title"
            has_articles = self.pack.manifest.stats.articles > 0  # an OpenML pack has none
            gold_index = GoldIndex(agent.context.store.one_store().rows(articles) if has_articles else [])
            judge = self._judge(agent)
            results_dir = self.pack.path / layout.RESULTS_DIR
            results_dir.mkdir(parents=True, exist_ok=True)
            key = _settings_key(self.questions, self.options, agent.profile, agent.stage_names)
            partial = results_dir / f".{agent.profile}.partial.jsonl"
            done = {} if self.options.fresh else _load_partial(partial, key)
            resumed = len(done)
            # Written anew with what was done: the line an interruption cut is left out, and the
            # next row starts a line of its own.
            lines = [
                json.dumps({"settings": key}),
                *(json.dumps(r, ensure_ascii=False) for r in done.values()),
            ]
            write_atomic(partial, "".join(f"{line}\n" for line in lines).encode("utf-8"))
            rows: list[dict[str, Any]] = []
            total = len(self.questions)
            self.progress(ProgressEvent(f"eval {agent.profile}", 0, total))
            with partial.open("a", encoding="utf-8") as sink:
                for n, question in enumerate(self.questions, 1):
                    row = done.get(question.id)
                    if row is None:
                        row = self._evaluate_one(agent, question, gold_index, judge)
                        sink.write(json.dumps(row, ensure_ascii=False) + "\n")
                        sink.flush()
                    rows.append(row)
                    if self.on_row is not None:
                        self.on_row(agent.profile, row)
                    self.progress(ProgressEvent(f"eval {agent.profile}", n, total, question.id))
            summary = summarize(rows, self.options.ks)
            stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ")
            results_file = results_dir / f"{stamp}-{agent.profile}.json"
            document = {
                "pack": self.pack.name,
                "profile": agent.profile,
                "stages": agent.stage_names,
                "date": now_iso(),
                "judge": self.options.judge,
                "ks": list(self.options.ks),
                "questions_file": str(self.options.questions or layout.QUESTIONS_FILE),
                "summary": summary,
                "questions": rows,
            }
            tmp = results_file.with_suffix(".tmp")
            tmp.write_text(json.dumps(document, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            os.replace(tmp, results_file)
            partial.unlink()
            self._record(agent.profile, summary, results_file)
            return ProfileReport(agent.profile, summary, results_file, resumed)

    def _record(self, profile: str, summary: dict[str, Any], results_file: Path) -> None:
        """The manifest keeps the latest run of each profile (with its date): this run replaces
        only the entry of its own profile."""
        manifest = open_pack(self.pack.path).manifest
        latest = EvalScores(
            date=now_iso(),
            profile=profile,
            questions=summary["questions"],
            results_file=str(results_file.relative_to(self.pack.path)),
            metrics={
                k: v
                for k, v in summary.items()
                if isinstance(v, int | float) and not isinstance(v, bool) and v is not None
            },
        )
        others = [s for s in manifest.eval_scores or [] if s.profile != profile]
        manifest.eval_scores = sorted([*others, latest], key=lambda s: s.profile)
        # eval/results/ and the manifest changed: the checksums an exported or shipped pack lists
        # hold no more (as after `pack update` and `pack graph`)
        manifest.files, manifest.sizes = {}, {}
        manifest.dump(self.pack.path / layout.MANIFEST_FILE)

    def _evaluate_one(
        self,
        agent: KnowledgeGraphAgent,
        question: Question,
        gold_index: GoldIndex,
        judge: OfflineJudge | ClaudeJudge | None,
    ) -> dict[str, Any]:
        start = time.perf_counter()
        result = agent.query(question.question, question_id=question.id)
        latency = (time.perf_counter() - start) * 1000
        ranked = [s.url.split("#", 1)[0] for s in result.sources if s.origin != "multidoc"]
        ranked_ids = [gold_index.by_url.get(GoldIndex._url_key(u), u) for u in ranked]
        gold_ids: list[str] = []
        missing: list[str] = []
        for gold in question.gold_sources:
            found = gold_index.resolve(gold)
            if found:
                gold_ids.extend(found)
            else:
                missing.append(gold)
        row: dict[str, Any] = {
            "id": question.id,
            "question": question.question,
            "type": question.type,
            "gold_sources": question.gold_sources,
            "retrieved": [
                {
                    "title": s.title,
                    "section": s.section,
                    "url": s.url,
                    "score": round(s.score, 4),
                    "origin": s.origin,
                }
                for s in result.sources
            ],
            "answer": result.answer,
            "low_confidence": result.low_confidence,
            "latency_ms": round(latency, 2),
            "tokens": _tokens(result),
        }
        m: dict[str, Any] = {}
        if not question.gold_sources:
            row["gold_status"] = "none"
        elif missing:
            row["gold_status"] = "not_in_pack"
            row["gold_missing"] = missing
        else:
            row["gold_status"] = "ok"
            # A title may name several articles (passages of one page): any of them counts.
            groups = [gold_index.resolve(g) for g in question.gold_sources]
            ranks: dict[str, int] = {}
            order = list(dict.fromkeys(ranked_ids))
            for gold, group in zip(question.gold_sources, groups, strict=True):
                hits = [order.index(a) + 1 for a in group if a in order]
                if hits:
                    ranks[gold] = min(hits)
            for k in self.options.ks:
                m[f"recall@{k}"] = metrics.recall_at(ranks, len(groups), k)
                m[f"hit@{k}"] = metrics.hit_at(ranks, k)
            m["mrr"] = metrics.reciprocal_rank(ranks)
            row["ranks"] = ranks
        truths = [t for t in [question.ground_truth, *question.answer_aliases] if t]
        if truths:
            m["exact_match"] = metrics.exact_match(result.answer, truths)
            m["f1"] = round(metrics.f1_score(result.answer, truths), 4)
        if judge is not None and truths:
            from wikigr.llm import LLMError

            try:
                verdict: Verdict = judge.judge(
                    question.question, result.answer, truths, [s.text for s in result.sources], result.facts
                )
            except LLMError as exc:  # within the judgement's time budget: stop, keep what is done
                raise LLMError(
                    f"the Claude judge failed on question {question.id}: {exc} (the questions judged so "
                    "far are kept: run the same command again to resume)",
                    status=exc.status,
                ) from exc
            m["judge_correct"] = verdict.correct
            m.update(verdict.scores)
            if verdict.rationale:
                row["judge_rationale"] = verdict.rationale
        row["metrics"] = m
        return row


def _tokens(result: AgentResult) -> dict[str, int]:
    usage = result.trace.get("usage") or {}
    return {"input": int(usage.get("input_tokens", 0)), "output": int(usage.get("output_tokens", 0))}


def evaluate(
    pack: str | Path | Pack,
    options: EvalOptions | None = None,
    on_progress: ProgressCallback | None = None,
    on_row: RowCallback | None = None,
) -> Evaluation:
    """Evaluate ``pack`` on its questions (or ``options.questions``) for each profile asked (with
    ``options.all_profiles``: each profile that applies to the pack's kind). ``on_row``: told of each
    question's row as it is scored."""
    opened = pack if isinstance(pack, Pack) else open_pack(pack)
    return Evaluator(opened, options or EvalOptions(), on_progress, on_row).run()
