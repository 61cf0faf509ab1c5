"""The Compare view of ``wikigr serve``: run a pack's eval questions through several profiles, side
by side, as a job (jobs.py) whose events fill the page's table as each question is scored.

A comparison is ``wikigr eval PACK --profile P`` for each profile, through the library's runner
(:func:`wikigr.eval.runner.evaluate`), so it writes what the command writes (``eval/results/
<stamp>-<profile>.json``, the manifest's ``eval_scores``) and resumes what an interrupted run of
either left: the command and the page see each other's runs.

Routes: ``GET /api/v1/packs/{pack}/compare`` (what can be compared, and the last run of each
profile with its per-question rows), ``POST /api/v1/packs/{pack}/compare`` (start a comparison: a
job of kind ``compare`` keyed by the pack's name, followed at ``/api/v1/jobs/{job}/events``).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from wikigr.errors import UsageError, WikigrError
from wikigr.eval.questions import load_questions
from wikigr.llm.config import llm_available
from wikigr.pack import pack as layout
from wikigr.pack.kind import pack_kind
from wikigr.pack.pack import open_pack
from wikigr.retrieval.profiles import PROFILES, profile_applies
from wikigr.serve.evals import MAX_RESULTS_FILE_BYTES
from wikigr.serve.http import int_param, read_json
from wikigr.serve.jobs import Job

if TYPE_CHECKING:
    from wikigr.serve.app import Server

API = "/api/v1"
KIND = "compare"  # the jobs' kind; their key is the pack's name
JUDGES = ("none", "offline", "claude")
DEFAULT_KS = (1, 2, 5, 10)  # as `wikigr eval`
MAX_KS = 8
MAX_K = 100
MAX_GENERATE = 200  # questions generated at once from the page
SHOWN_CHARS = 300  # of a question or an answer in a row
FIELDS = {"profiles", "judge", "limit", "ks", "fresh", "generate"}

Handler = Callable[[Request], Awaitable[Response]]


def routes(server: Server, endpoint: Callable[[Handler], Handler]) -> list[Route]:
    compare = Compare(server)
    path = f"{API}/packs/{{pack}}/compare"
    return [
        Route(path, endpoint(compare.state), methods=["GET"]),
        Route(path, endpoint(compare.start), methods=["POST"]),
    ]


def compact(row: dict[str, Any]) -> dict[str, Any]:
    """A question's row of a results file as the page shows it: whether the gold was found (None
    when the question has no gold in the pack), its best rank, its metrics and latency."""
    ok = row.get("gold_status") == "ok"
    ranks = [r for r in (row.get("ranks") or {}).values() if isinstance(r, int)]
    return {
        "id": str(row.get("id", "")),
        "question": str(row.get("question", ""))[:SHOWN_CHARS],
        "type": row.get("type"),
        "gold_status": row.get("gold_status"),
        "found": bool(ranks) if ok else None,
        "rank": min(ranks) if ranks else None,
        "metrics": row.get("metrics") or {},
        "latency_ms": row.get("latency_ms"),
        "answer": str(row.get("answer") or "")[:SHOWN_CHARS],
    }


def last_runs(folder: Path, latest: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The last run of each profile (``EvalRuns.summary``'s ``latest``) with its rows, compacted."""
    runs: dict[str, dict[str, Any]] = {}
    for profile, run in latest.items():
        path = folder / layout.RESULTS_DIR / run["file"]
        rows: list[dict[str, Any]] = []
        try:
            if not path.is_symlink() and path.stat().st_size <= MAX_RESULTS_FILE_BYTES:
                data = json.loads(path.read_bytes())
                found = data.get("questions") if isinstance(data, dict) else None
                rows = [compact(r) for r in found or [] if isinstance(r, dict)]
        except (OSError, ValueError, RecursionError):
            rows = []
        runs[profile] = {**run, "rows": rows}
    return runs


class Compare:
    """The routes of the Compare view."""

    def __init__(self, server: Server) -> None:
        self.server = server

    def _running(self, name: str) -> str | None:
        jobs = [j for j in self.server.jobs.running() if j.kind == KIND and j.key == name]
        return jobs[0].id if jobs else None

    def _state(self, name: str) -> dict[str, Any]:
        folder = self.server.packs.path(name)
        pack = open_pack(folder)
        kind = pack.manifest.source_kind
        questions_file = pack.path / layout.QUESTIONS_FILE
        questions: list[dict[str, str]] = []
        problem = None
        try:
            if questions_file.is_file():
                questions = [
                    {"id": q.id, "question": q.question[:SHOWN_CHARS]} for q in load_questions(questions_file)
                ]
        except WikigrError as exc:
            problem = exc.message
        evals = self.server.evals.summary(name, folder)
        judges = [j for j in JUDGES if j != "claude" or llm_available()]
        return {
            "pack": name,
            "kind": kind,
            "profiles": [p for p in PROFILES if profile_applies(p, kind)],
            "skipped": [p for p in PROFILES if not profile_applies(p, kind)],
            "questions": questions,
            "questions_error": problem,
            "judges": judges,
            "judge": "claude" if llm_available() else "none",
            "ks": list(DEFAULT_KS),
            "generate": llm_available() and pack_kind(kind).passages,
            "last": last_runs(pack.path, evals["latest"]),
            "running": self._running(name),
        }

    async def state(self, request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(self._state, request.path_params["pack"]))

    async def start(self, request: Request) -> Response:
        name = request.path_params["pack"]
        data = await read_json(request)
        plan = await run_in_threadpool(self._plan, name, data)
        title = f"compare {', '.join(plan['profiles'])} on {name}"
        job = self.server.jobs.start(KIND, name, title, lambda job: self._work(job, name, plan))
        return JSONResponse(job.summary(), status_code=202)

    def _plan(self, name: str, data: dict[str, Any]) -> dict[str, Any]:
        """The request checked before the job starts: a bad field is a 400 of one line."""
        unknown = sorted(set(data) - FIELDS)
        if unknown:
            raise UsageError(f"unknown field '{unknown[0][:40]}' ({', '.join(sorted(FIELDS))})")
        folder = self.server.packs.path(name)
        kind = open_pack(folder).manifest.source_kind
        applying = [p for p in PROFILES if profile_applies(p, kind)]
        profiles = data.get("profiles", applying)
        if not isinstance(profiles, list) or not profiles or not all(isinstance(p, str) for p in profiles):
            raise UsageError("profiles must be a non-empty list of profile names")
        for profile in profiles:
            if profile not in PROFILES:
                raise UsageError(f"unknown profile '{profile[:40]}' (profiles: {', '.join(PROFILES)})")
            if profile not in applying:
                raise UsageError(
                    f"profile {profile} does not apply to {kind} packs ({', '.join(applying)} do)"
                )
        judge = data.get("judge", "claude" if llm_available() else "none")
        if judge not in JUDGES:
            raise UsageError(f"judge must be one of {', '.join(JUDGES)}")
        if judge == "claude" and not llm_available():
            raise UsageError("the claude judge needs Claude: set ANTHROPIC_API_KEY")
        ks = data.get("ks", list(DEFAULT_KS))
        if not isinstance(ks, list) or not 0 < len(ks) <= MAX_KS:
            raise UsageError(f"ks must be a list of 1 to {MAX_KS} integers")
        ks = sorted({int_param(k, "each k", 1, MAX_K) for k in ks})
        limit = None if data.get("limit") is None else int_param(data["limit"], "limit", 1, 100_000)
        generate = (
            0 if data.get("generate") is None else int_param(data["generate"], "generate", 1, MAX_GENERATE)
        )
        if generate and not llm_available():
            raise UsageError("generating questions needs Claude: set ANTHROPIC_API_KEY")
        fresh = data.get("fresh", False)
        if not isinstance(fresh, bool):
            raise UsageError("fresh must be true or false")
        questions = folder / layout.QUESTIONS_FILE
        if not generate and not (questions.is_file() and load_questions(questions)):
            hint = "add some with `wikigr eval import` or `wikigr eval generate`, or generate them here"
            raise UsageError(f"pack {name} has no eval questions ({layout.QUESTIONS_FILE}): {hint}")
        profiles = list(dict.fromkeys(profiles))
        return {
            "profiles": profiles,
            "judge": judge,
            "ks": ks,
            "limit": limit,
            "generate": generate,
            "fresh": fresh,
        }

    def _work(self, job: Job, name: str, plan: dict[str, Any]) -> dict[str, Any]:
        """Each profile in turn through the runner (questions generated first, if asked)."""
        folder = self.server.packs.path(name)
        if plan["generate"]:
            from wikigr.eval.generate import generate_questions

            job.emit("generating", {"n": plan["generate"]})
            made = generate_questions(folder, n=plan["generate"])
            job.emit(
                "generated",
                {"added": made["added"], "duplicates": made["duplicates"], "failed": made["failed"]},
            )
        runs = [self._profile(job, folder, profile, plan) for profile in plan["profiles"]]
        return {"pack": name, "runs": runs}

    @staticmethod
    def _profile(job: Job, folder: Path, profile: str, plan: dict[str, Any]) -> dict[str, Any]:
        """One profile through ``wikigr eval``'s runner: an event as each question is scored."""
        from wikigr.eval.runner import EvalOptions, evaluate
        from wikigr.progress import ProgressEvent

        total = len(load_questions(folder / layout.QUESTIONS_FILE))
        if plan["limit"] is not None:
            total = min(total, plan["limit"])
        job.emit("profile", {"profile": profile, "total": total})
        done = 0

        def scored(profile: str, row: dict[str, Any]) -> None:
            nonlocal done
            done += 1
            job.emit("question", {"profile": profile, "n": done, "total": total, "row": compact(row)})

        def progress(event: ProgressEvent) -> None:
            job.check()

        options = EvalOptions(
            profiles=[profile],
            ks=tuple(plan["ks"]),
            judge=plan["judge"],
            limit=plan["limit"],
            fresh=plan["fresh"],
        )
        report = evaluate(folder, options, on_progress=progress, on_row=scored)[0]
        run = {"profile": report.profile, "file": report.results_file.name, "resumed": report.resumed}
        run["summary"] = report.summary
        job.emit("summary", run)
        return run
