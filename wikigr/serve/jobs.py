"""Long work started from the page (a build, a comparison of profiles): each a :class:`Job` run in
a thread of its own, whose events are kept so a reader can follow it from the start, at any time,
and which can be cancelled.

The work is a function of the job: it calls :meth:`Job.emit` for each event the page shows and
:meth:`Job.check` often (each progress event does), which raises :class:`Cancelled` once the job is
cancelled, so the work stops where it stands and undoes what it began (a build's staging folder).
Its return value (a JSON object, or None) is the ``done`` event's data.

Routes (``/api/v1/jobs``): the list, one job, its events as Server-Sent Events (replayed from the
first, then followed until the job ends), cancel. Two jobs of one kind and key (a build of one pack
name) do not run at once: the second is refused (409).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import threading
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from wikigr.errors import WikigrError
from wikigr.serve.http import ApiError, internal_error, status_of

KEEP = 50  # finished jobs kept (their events and results), newest first
MAX_EVENTS = 5000  # events kept per job: past this, progress events are dropped (not the last)
POLL_SECONDS = 0.1  # how often a reader of a job's events looks for new ones
STATES = ("running", "done", "failed", "cancelled")


class Cancelled(WikigrError):
    """Raised in a job's work by :meth:`Job.check` once the job is cancelled."""

    def __init__(self) -> None:
        super().__init__("cancelled")


class Job:
    """One piece of long work: its events (``progress``, any the work emits, then one of ``done``,
    ``failed``, ``cancelled``), its state and its result."""

    def __init__(self, job_id: str, kind: str, key: str, title: str) -> None:
        self.id, self.kind, self.key, self.title = job_id, kind, key, title
        self.state = "running"
        self.started = time.time()
        self.ended: float | None = None
        self.result: dict[str, Any] | None = None
        self.error: str | None = None
        self.events: list[tuple[str, dict[str, Any]]] = []
        self._cancel = threading.Event()
        self._lock = threading.Lock()

    @property
    def cancelling(self) -> bool:
        return self._cancel.is_set()

    def cancel(self) -> None:
        self._cancel.set()

    def check(self) -> None:
        """Raise :class:`Cancelled` if the job was cancelled: the work calls it often."""
        if self._cancel.is_set():
            raise Cancelled()

    def emit(self, event: str, data: dict[str, Any]) -> None:
        """An event for the page (then :meth:`check`: every event is a point to stop at)."""
        with self._lock:
            if len(self.events) < MAX_EVENTS or event != "progress":
                self.events.append((event, data))
        self.check()

    def since(self, start: int) -> list[tuple[str, dict[str, Any]]]:
        with self._lock:
            return self.events[start:]

    def finish(
        self,
        state: str,
        result: dict[str, Any] | None = None,
        error: str | None = None,
        status: int | None = None,
    ) -> None:
        """The job's end: its last event, ``state`` with the result, or the error (and its HTTP
        ``status``, as a route would answer it)."""
        with self._lock:
            self.state, self.result, self.error, self.ended = state, result, error, time.time()
            data: dict[str, Any] = dict(result or {}) if state == "done" else {}
            if error is not None:
                data["error"] = error
            if status is not None:
                data["status"] = status
            self.events.append((state, data))

    def summary(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "key": self.key,
            "title": self.title,
            "state": self.state,
            "cancelling": self.cancelling and self.state == "running",
            "started": self.started,
            "ended": self.ended,
            "result": self.result,
            "error": self.error,
        }


class Jobs:
    """The jobs of one server: started, listed, followed and cancelled by id."""

    def __init__(self, redact: Callable[[str], str] = str) -> None:
        self._jobs: dict[str, Job] = {}
        self._ids = itertools.count(1)
        self._lock = threading.Lock()
        self._redact = redact

    def start(self, kind: str, key: str, title: str, work: Callable[[Job], dict[str, Any] | None]) -> Job:
        """Run ``work(job)`` in a thread of its own; refuse (409) while a job of this kind and key
        runs."""
        with self._lock:
            self._refuse_running(kind, key)
            job = Job(f"{kind}-{next(self._ids)}", kind, key, title)
            self._jobs[job.id] = job
            self._forget()
        thread = threading.Thread(target=self._run, args=(job, work), name=job.id, daemon=True)
        thread.start()
        return job

    def refuse_running(self, kind: str, key: str) -> None:
        """409 while a job of this kind and key runs (:meth:`start` checks it again)."""
        with self._lock:
            self._refuse_running(kind, key)

    def _refuse_running(self, kind: str, key: str) -> None:
        for job in self._jobs.values():
            if job.kind == kind and job.key == key and job.state == "running":
                raise ApiError(409, f"a {kind} of '{key}' is running already (job {job.id})")

    def _run(self, job: Job, work: Callable[[Job], dict[str, Any] | None]) -> None:
        try:
            result = work(job)
        except Cancelled:
            job.finish("cancelled")
        except WikigrError as exc:
            if job.cancelling:
                job.finish("cancelled", error=self._redact(exc.message))
            else:
                job.finish("failed", error=self._redact(exc.message), status=status_of(exc))
        except Exception as exc:  # noqa: BLE001 - reported as the job's error of one line
            job.finish("failed", error=self._redact(internal_error(exc)))
        else:
            job.finish("done", result=result)

    def _forget(self) -> None:
        ended = [job for job in self._jobs.values() if job.state != "running"]
        for job in sorted(ended, key=lambda j: j.ended or 0)[: max(0, len(ended) - KEEP)]:
            del self._jobs[job.id]

    def get(self, job_id: str) -> Job:
        with self._lock:
            job = self._jobs.get(job_id)
        if job is None:
            raise ApiError(404, f"no job '{job_id[:40]}'")
        return job

    def running(self) -> list[Job]:
        with self._lock:
            return [job for job in self._jobs.values() if job.state == "running"]

    def listed(self) -> list[dict[str, Any]]:
        with self._lock:
            jobs = list(self._jobs.values())
        return [job.summary() for job in sorted(jobs, key=lambda j: j.started, reverse=True)]

    def cancel_all(self) -> None:
        for job in self.running():
            job.cancel()

    # -- routes ------------------------------------------------------------------------------------

    async def list_route(self, request: Request) -> Response:
        return JSONResponse({"jobs": self.listed()})

    async def job_route(self, request: Request) -> Response:
        return JSONResponse(self.get(request.path_params["job"]).summary())

    async def cancel_route(self, request: Request) -> Response:
        job = self.get(request.path_params["job"])
        job.cancel()
        return JSONResponse(job.summary(), status_code=202)

    async def events_route(self, request: Request) -> Response:
        job = self.get(request.path_params["job"])

        async def events() -> AsyncIterator[str]:
            seen = 0
            while True:
                ended = job.state != "running"  # read before the events: the last one is then in
                new = job.since(seen)
                seen += len(new)
                for event, data in new:
                    yield f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"
                if ended and not job.since(seen):
                    return
                await asyncio.sleep(POLL_SECONDS)

        headers = {"cache-control": "no-store", "x-accel-buffering": "no"}
        return StreamingResponse(events(), media_type="text/event-stream", headers=headers)
