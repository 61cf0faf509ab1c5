"""The jobs of ``wikigr serve`` (wikigr/serve/jobs.py): run in a thread, followed, cancelled, and
one job of a kind and key at a time."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from wikigr.errors import UsageError
from wikigr.serve.http import ApiError
from wikigr.serve.jobs import Job, Jobs


def wait_for(job: Job, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while job.state == "running":
        assert time.monotonic() < deadline, job.summary()
        time.sleep(0.01)


def test_a_job_runs_and_its_events_end_with_its_result() -> None:
    jobs = Jobs()

    def work(job: Job) -> dict[str, Any]:
        for i in range(3):
            job.emit("progress", {"stage": "embed", "done": i + 1, "total": 3})
        return {"pack": "p"}

    job = jobs.start("build", "p", "build p", work)
    wait_for(job)
    assert job.state == "done"
    assert [event for event, _ in job.events] == ["progress"] * 3 + ["done"]
    assert job.events[-1][1] == {"pack": "p"}
    assert jobs.listed()[0]["state"] == "done"


def test_a_cancelled_job_stops_at_its_next_event_and_a_second_of_one_key_is_refused() -> None:
    jobs = Jobs()
    started = threading.Event()

    def work(job: Job) -> None:
        started.set()
        while True:  # until cancelled: emit raises then
            job.emit("progress", {"stage": "fetch", "done": 0, "total": 1})
            time.sleep(0.01)

    job = jobs.start("build", "p", "build p", work)
    assert started.wait(30)
    with pytest.raises(ApiError) as refused:
        jobs.start("build", "p", "build p", work)
    assert refused.value.status == 409
    other = jobs.start("build", "q", "build q", lambda job: None)  # another key runs at once
    job.cancel()
    wait_for(job)
    wait_for(other)
    assert (job.state, job.events[-1][0]) == ("cancelled", "cancelled")
    assert other.state == "done"
    jobs.start("build", "p", "build p", lambda job: None)  # once it ended, the key is free again


def test_a_failed_job_says_why_in_one_line() -> None:
    jobs = Jobs()

    def work(job: Job) -> None:
        raise UsageError("no URL given")

    job = jobs.start("build", "p", "build p", work)
    wait_for(job)
    assert job.state == "failed"
    assert job.events[-1] == ("failed", {"error": "no URL given", "status": 400})
    with pytest.raises(ApiError):
        jobs.get("build-999")
